// The "kubernetes" section of `make bench` (scripts/bench.sh): a warm run
// through the kubernetes backend, against the Kubernetes API shim
// (tests/kube_shim, each Pod a Docker container), next to the same run on
// the docker backend, same engine, same run.
//
//   node tests/bench/kube.mjs --engine unix:///SOCK --out FILE.json [--calls N]
//       measures, writes FILE.json, prints the table on stdout (progress on
//       stderr); exits 1 when something broke, never because a figure is low
//   node tests/bench/kube.mjs --skip REASON --out FILE.json
//
// Each backend: a daemon with --languages python and its default pool,
// --calls python hello calls (default 30), each once the pool is full and
// quiet (as the pool section measures), then as many under steady load,
// one every STEADY_MS whatever the pool's state (as the steady section's
// 300 ms stretch), and one call with the pool empty (--pool-size 0: a
// sandbox made for it). The shim adds an HTTPS hop, a
// watch and a WebSocket per sandbox to what the engine does: the ratio is
// what the Kubernetes API's way of running a sandbox costs here, not what
// a cluster's would (its API server, scheduler and kubelet are elsewhere).

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Engine, sleep, stats } from './engine.mjs';
import { StdioDaemon, countOption, sectionBegin } from './stdio_daemon.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const HELLO = { code: 'print("hello")', stdout: 'hello\n' };
const SHIM_READY_MS = 30_000;
const STEADY_MS = 300;

const log = (m) => process.stderr.write(`kubernetes: ${m}\n`);
const r2 = (x) => (typeof x === 'number' && Number.isFinite(x) ? Math.round(x * 100) / 100 : null);

const { values: opt } = parseArgs({
  options: {
    engine: { type: 'string' },
    bin: { type: 'string', default: path.join(ROOT, 'build', 'mcp-sandboxd') },
    out: { type: 'string' },
    calls: { type: 'string', default: '30' },
    'log-dir': { type: 'string', default: path.join(ROOT, 'build', 'bench', 'logs') },
    skip: { type: 'string' },
  },
  strict: true,
});

/** The shim on the engine, ready: {proc, kubeconfig, dir}. */
async function startShim() {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcpsbx-bench-kube-'));
  const proc = spawn(process.execPath, [path.join(ROOT, 'tests', 'kube_shim', 'shim.mjs'), '--dir', dir, '--engine', opt.engine], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let tail = '';
  proc.stderr.on('data', (c) => (tail = (tail + c).slice(-2000)));
  const ready = await new Promise((resolve) => {
    let out = '';
    const timer = setTimeout(() => resolve(false), SHIM_READY_MS);
    proc.stdout.on('data', (c) => {
      out += c;
      if (out.includes('kube-shim: ready ')) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    proc.on('exit', () => resolve(false));
  });
  if (!ready) throw new Error(`the Kubernetes API shim did not start:\n${tail}`);
  return { proc, kubeconfig: path.join(dir, 'kubeconfig'), dir };
}

async function stopShim(s) {
  if (!s) return;
  const gone = new Promise((r) => s.proc.on('exit', r));
  s.proc.stdin.end(); // it removes what it made, then exits
  await Promise.race([gone, sleep(30_000)]);
  rmSync(s.dir, { recursive: true, force: true });
}

async function hello(d) {
  const { ms, sc } = await d.call('run_python_code', { code: HELLO.code });
  if (sc?.status !== 'ok' || sc.stdout !== HELLO.stdout) throw new Error(`hello: ${JSON.stringify(sc).slice(0, 300)}`);
  return ms;
}

/** Warm p50s idle and under steady load, and one on-demand call, for a
 * daemon started with args. */
async function measure(name, args, n) {
  const dopt = { bin: opt.bin, engine: opt.engine, logDir: opt['log-dir'] };
  const warm = [];
  const steady = [];
  let d = await StdioDaemon.start('kubernetes', name, ['--languages', 'python', ...args], dopt, log);
  try {
    for (let i = 0; i < n; i++) {
      await d.poolFull('python');
      await sleep(200); // the last refill's engine work settles too
      warm.push(await hello(d));
    }
    for (let i = 0; i < n; i++) {
      const t0 = Date.now();
      steady.push(await hello(d));
      await sleep(Math.max(0, STEADY_MS - (Date.now() - t0)));
    }
  } finally {
    await d.close();
  }
  d = await StdioDaemon.start('kubernetes', `${name}-cold`, ['--languages', 'python', '--pool-size', '0', ...args], dopt, log);
  let cold;
  try {
    await hello(d); // the first run pays the image's first use
    cold = await hello(d);
  } finally {
    await d.close();
  }
  const doc = { warm: stats(warm), steady_300ms: stats(steady), on_demand_ms: r2(cold) };
  log(`${name}: warm p50 ${doc.warm.p50} / p95 ${doc.warm.p95} ms, every ${STEADY_MS} ms p50 ${doc.steady_300ms.p50} / p95 ${doc.steady_300ms.p95} ms, on demand ${doc.on_demand_ms} ms`);
  return doc;
}

async function main() {
  if (!sectionBegin(opt, 'kube.mjs', 'kubernetes backend')) return;
  const n = countOption(opt, 'calls', 1, 'kube.mjs');
  const res = { engine: opt.engine, problems: [] };
  let shim;
  try {
    const eng = new Engine(opt.engine.replace(/^unix:\/\//, ''), 'kube-version');
    const v = await eng.call('GET', '/version', null, [200]).finally(() => eng.cleanup());
    if ((v.Components || []).some((c) => c.Name === 'Podman Engine')) {
      res.skipped = 'the Kubernetes API shim runs its Pods on Docker only';
      writeFileSync(opt.out, `${JSON.stringify(res, null, 2)}\n`);
      console.log(`kubernetes backend: SKIPPED - ${res.skipped}`);
      return;
    }
    res.docker = await measure('docker', [], n);
    shim = await startShim();
    res.kubernetes = await measure('kubernetes', ['--backend', 'kubernetes', '--kubeconfig', shim.kubeconfig], n);
    res.warm_p50_over_docker = r2(res.kubernetes.warm.p50 / res.docker.warm.p50);
    res.steady_p50_over_docker = r2(res.kubernetes.steady_300ms.p50 / res.docker.steady_300ms.p50);
    res.on_demand_over_docker = r2(res.kubernetes.on_demand_ms / res.docker.on_demand_ms);
  } catch (e) {
    res.problems.push(String(e.stack || e));
  } finally {
    await stopShim(shim);
  }
  writeFileSync(opt.out, `${JSON.stringify(res, null, 2)}\n`);
  const p = (s) => (s ? `p50 ${s.p50} / p95 ${s.p95} ms` : '?');
  console.log(
    `kubernetes backend (the API shim on ${opt.engine}): python hello warm ${p(res.kubernetes?.warm)}, ` +
      `every ${STEADY_MS} ms ${p(res.kubernetes?.steady_300ms)}, on demand ${res.kubernetes?.on_demand_ms} ms; ` +
      `docker backend warm ${p(res.docker?.warm)}, every ${STEADY_MS} ms ${p(res.docker?.steady_300ms)}, on demand ${res.docker?.on_demand_ms} ms; ` +
      `warm ${res.warm_p50_over_docker}x, every ${STEADY_MS} ms ${res.steady_p50_over_docker}x, on demand ${res.on_demand_over_docker}x docker's`,
  );
  if (res.problems.length) {
    for (const m of res.problems) log(`problem: ${m}`);
    process.exit(1);
  }
}

await main();
