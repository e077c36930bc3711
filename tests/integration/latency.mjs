// Latency of hello-world runs as an MCP client sees them.
//
//   node tests/integration/latency.mjs [N]
//
// Starts the daemon (MCPSANDBOXD_BIN, default build/mcp-sandboxd) on the
// engine MCPSANDBOXD_ENGINE (default $DOCKER_HOST, else
// unix:///var/run/docker.sock) with the official SDK client, does one warm-up
// call, then N (default 20) sequential run_python_code calls of
// print('hello world'), and prints min/median/p95/max of the round trip
// (callTool sent -> result parsed). Prints figures only; asserts nothing about
// time. Exits non-zero only when a call does not succeed.

import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { ROOT, BIN, ENGINE, hostEnv } from './lib.mjs';

const N = Number(process.argv[2] || 20);

function quantile(sorted, q) {
  // Nearest rank.
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

const transport = new StdioClientTransport({ command: BIN, args: ['--engine', ENGINE], env: hostEnv(), stderr: 'pipe' });
let stderr = '';
transport.stderr.on('data', (c) => (stderr += c));
const client = new Client({ name: 'mcp-sandboxd-latency', version: '1.0.0' });

let failed = false;
try {
  const t0 = performance.now();
  await client.connect(transport, { timeout: 30_000 });
  const connectMs = performance.now() - t0;
  await client.listTools();

  const call = async () => {
    const s = performance.now();
    const r = await client.callTool({ name: 'run_python_code', arguments: { code: "print('hello world')" } }, undefined, { timeout: 120_000 });
    const ms = performance.now() - s;
    if (r.isError || r.structuredContent?.stdout !== 'hello world\n') {
      throw new Error(`unexpected result: ${JSON.stringify(r).slice(0, 500)}`);
    }
    return { ms, daemonMs: r.structuredContent.duration_ms };
  };

  const first = await call(); // warm-up: may include pool fill / image load
  const rounds = [];
  for (let i = 0; i < N; i++) rounds.push(await call());
  const ms = rounds.map((r) => r.ms).sort((a, b) => a - b);
  const dms = rounds.map((r) => r.daemonMs).sort((a, b) => a - b);
  const f = (x) => x.toFixed(1);
  const shown = BIN.startsWith(ROOT + path.sep) ? path.relative(ROOT, BIN) : BIN;
  console.log(`latency (${shown}, ${ENGINE}): initialize ${f(connectMs)} ms, first call ${f(first.ms)} ms`);
  console.log(
    `latency: ${N} sequential run_python_code hello-world calls, client round trip: ` +
      `min ${f(ms[0])} / median ${f(quantile(ms, 0.5))} / p95 ${f(quantile(ms, 0.95))} / max ${f(ms[ms.length - 1])} ms`,
  );
  console.log(`latency: daemon-reported duration_ms: median ${f(quantile(dms, 0.5))} / p95 ${f(quantile(dms, 0.95))} ms`);
} catch (e) {
  failed = true;
  console.error(`latency: FAILED: ${e?.message || e}`);
  console.error(`--- daemon stderr (tail) ---\n${stderr.slice(-4000)}`);
} finally {
  await client.close().catch(() => {});
}
process.exit(failed ? 1 : 0);
