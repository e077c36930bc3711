// What the bench sections that drive a daemon share (tests/bench/sessions.mjs,
// egress.mjs, packages.mjs, modern.mjs): build/mcp-sandboxd over stdio
// through the official SDK client, its log kept under the section's log
// directory, waiting for its warm pool (over HTTP too: http_daemon.mjs),
// what /proc says of it, and their count options.

import { createWriteStream, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { sleep } from './engine.mjs';

export const ENV_URI = 'mcp-sandboxd://environment';
const CALL_TIMEOUT_MS = 300_000;
const POOL_WAIT_MS = 60_000;

export class StdioDaemon {
  /** section names the log file; opt: {bin, engine, logDir, env}; log: progress. */
  static async start(section, name, args, opt, log) {
    const d = new StdioDaemon();
    mkdirSync(opt.logDir, { recursive: true });
    const logStream = createWriteStream(path.join(opt.logDir, `${section}-daemon-${name}.log`));
    const env = { ...(opt.env ?? {}) };
    for (const k of ['PATH', 'HOME', 'LANG']) if (process.env[k] !== undefined) env[k] = process.env[k];
    d.transport = new StdioClientTransport({
      command: opt.bin,
      args: ['--engine', opt.engine, ...args],
      env,
      stderr: 'pipe',
    });
    d.tail = '';
    d.transport.stderr.on('data', (c) => {
      logStream.write(c);
      d.tail = (d.tail + c.toString('utf8')).slice(-4000);
    });
    d.logStream = logStream;
    d.client = new Client({ name: `mcp-sandboxd-bench-${section}`, version: '1.0.0' });
    await d.client.connect(d.transport, { timeout: 30_000 });
    d.pid = d.transport.pid;
    await d.client.listTools(); // arms the SDK's output-schema validation
    log(`daemon '${name}' pid ${d.pid}: ${args.join(' ')}`);
    return d;
  }

  async call(tool, args) {
    const t0 = performance.now();
    const r = await this.client.callTool({ name: tool, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS });
    const ms = performance.now() - t0;
    if (r.isError) throw new Error(`${tool}: ${JSON.stringify(r).slice(0, 600)}\n${this.tail}`);
    return { ms, sc: r.structuredContent };
  }

  poolFull(language = 'python') {
    return waitPoolFull(async () => (await this.client.readResource({ uri: ENV_URI })).contents[0].text, language);
  }

  async close() {
    await this.client.close().catch(() => {});
    this.logStream.end();
  }
}

const FULL = (p) => p.ready === p.size && p.starting === 0;

/** Resolves once language's warm pool is full (every sandbox ready, none
 * starting), or once enough(profile) says so, polling readEnvironment(),
 * which resolves with the text of the daemon's ENV_URI resource; throws
 * after POOL_WAIT_MS. */
export async function waitPoolFull(readEnvironment, language = 'python', enough = FULL) {
  const deadline = Date.now() + POOL_WAIT_MS;
  while (Date.now() < deadline) {
    const p = JSON.parse(await readEnvironment()).pool.profiles.find((x) => x.language === language);
    if (p && enough(p)) return;
    await sleep(50);
  }
  throw new Error(`the ${language} pool did not ${enough === FULL ? 'fill' : 'get ready'} within ${POOL_WAIT_MS} ms`);
}

/** The daemon process's VmRSS, threads and open descriptors. */
export function procStats(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  return { rss_kib: kb('VmRSS'), threads: kb('Threads'), fds: readdirSync(`/proc/${pid}/fd`).length };
}

/** opt[name] as a whole number >= min, or exit 2 naming prog's option. */
export function countOption(opt, name, min, prog) {
  const v = Number(opt[name]);
  if (!Number.isInteger(v) || v < min) {
    console.error(`${prog}: --${name} must be a whole number >= ${min}, got '${opt[name]}'`);
    process.exit(2);
  }
  return v;
}

/** A section's start: --out required; with --skip, the reason written to
 * --out and printed as "TITLE: SKIPPED - why" (returns false: nothing to
 * measure); else --engine required. Exits 2 on a missing option. */
export function sectionBegin(opt, prog, title) {
  for (const name of ['out', ...(opt.skip ? [] : ['engine'])]) {
    if (!opt[name]) {
      console.error(`${prog}: --${name}${name === 'out' ? ' FILE.json' : ''} is required`);
      process.exit(2);
    }
  }
  if (!opt.skip) return true;
  writeFileSync(opt.out, `${JSON.stringify({ skipped: opt.skip }, null, 2)}\n`);
  console.log(`${title}: SKIPPED - ${opt.skip}`);
  return false;
}
