// The "packages" section of `make bench` (scripts/bench.sh): packages on
// demand measured beside the installers run directly on the host, in one
// run, on one engine. pip installs from the loopback index the integration
// tests serve (tests/integration/pypi_index.mjs, reached as pypi.test);
// npm from the registry npm is configured with here.
//
//   node tests/bench/packages.mjs --engine unix:///SOCK --out FILE.json [options]
//       measures, writes FILE.json, prints the table on stdout (progress on
//       stderr); exits 1 when something broke, never because a figure is low
//   node tests/bench/packages.mjs --skip REASON --out FILE.json
//
// Options: --bin, --samples N (warm calls per side, default 30), --load N
// (JavaScript runs made all along during item 3, default 2), --log-dir.
//
// What is measured, over stdio with the official SDK, each daemon with a
// package cache of its own in a fresh directory:
//   1. first installs (the result's packages ms: waiting for, and running,
//      the install sandbox) of one small package and of one with
//      dependencies, pip and npm, next to the same `pip install --target` /
//      `npm install --prefix` run on the host into an empty folder with an
//      empty cache; target ratio <= 1.5
//   2. a warm print(1) asking for a cached set next to the same without
//      packages (pool full before each call); target ratio p50 <= 1.2
//   3. item 2 again while --load other runs keep the daemon and the engine
//      busy (steady load: JavaScript runs, so Python's pool is still the
//      one measured); same target
// Ratios and targets are reported, never asserted.

import { execFile } from 'node:child_process';
import dns from 'node:dns/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';

import { stats } from './engine.mjs';
import { ENV_URI, StdioDaemon, countOption, sectionBegin } from './stdio_daemon.mjs';
import { startIndex } from '../integration/pypi_index.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const TARGETS = { first_install_over_host_max: 1.5, cached_over_plain_run_max: 1.2 };
const run = promisify(execFile);

const log = (m) => process.stderr.write(`packages: ${m}\n`);
const r2 = (x) => (typeof x === 'number' && Number.isFinite(x) ? Math.round(x * 100) / 100 : null);

const { values: opt } = parseArgs({
  options: {
    engine: { type: 'string' },
    bin: { type: 'string', default: path.join(ROOT, 'build', 'mcp-sandboxd') },
    out: { type: 'string' },
    samples: { type: 'string', default: '30' },
    load: { type: 'string', default: '2' },
    'log-dir': { type: 'string', default: path.join(ROOT, 'build', 'bench', 'logs') },
    skip: { type: 'string' },
  },
  strict: true,
});

/** What one command takes on the host, in ms; null when it fails. */
async function hostMs(cmd, args) {
  const t0 = performance.now();
  try {
    await run(cmd, args, { maxBuffer: 1 << 24 });
  } catch (e) {
    log(`host ${cmd} failed: ${String(e.stderr || e).slice(-300)}`);
    return null;
  }
  return performance.now() - t0;
}

async function hostPip(index, req) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mcpsbx-bench-pip-'));
  try {
    return await hostMs('python3', ['-m', 'pip', 'install', '--no-input', '--disable-pip-version-check', '--no-cache-dir',
      '--target', dir, '--index-url', `http://127.0.0.1:${index.port}/simple/`, '--', req]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function hostNpm(req) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mcpsbx-bench-npm-'));
  try {
    return await hostMs('npm', ['install', '--prefix', dir, '--no-audit', '--no-fund', '--omit=dev',
      `--cache=${path.join(dir, '.cache')}`, '--', req]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function installed(d, tool, args) {
  const { sc } = await d.call(tool, args);
  const p = sc.packages?.[0];
  if (!p || p.source !== 'installed') throw new Error(`${JSON.stringify(args.packages)} was not installed: ${JSON.stringify(sc.packages)}`);
  return p.ms;
}

/** lang's ready installers as the environment shows them. */
async function installerOf(d, lang) {
  const env = JSON.parse((await d.client.readResource({ uri: ENV_URI })).contents[0].text);
  return env.pool.installers.find((p) => p.language === lang);
}

/** Waits (bounded) until lang has a ready installer; its figures. */
async function readyInstaller(d, lang) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const p = await installerOf(d, lang);
    if (p?.ready >= 1 || Date.now() > deadline) return p;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function firstInstalls(d, index) {
  const items = [
    ['pip, one small wheel', 'run_python_code', { code: 'import mcpsbx_base', packages: ['mcpsbx-base==1.0.0'] }, () => hostPip(index, 'mcpsbx-base==1.0.0')],
    ['pip, with a dependency', 'run_python_code', { code: 'import mcpsbx_dep', packages: ['mcpsbx-dep'] }, () => hostPip(index, 'mcpsbx-dep')],
    ['npm, no dependencies', 'run_js_code', { code: "require('is-number')", packages: ['is-number@7'] }, () => hostNpm('is-number@7')],
    ['npm, with dependencies', 'run_js_code', { code: "require('chalk')", packages: ['chalk@4'] }, () => hostNpm('chalk@4')],
  ];
  const out = [];
  for (const [what, tool, args, host] of items) {
    log(`1: first install, ${what}`);
    // The daemon's steady state: a ready installer waits (set up once the
    // warm pools are full); whether this install took it is recorded.
    const lang = tool === 'run_python_code' ? 'python' : 'javascript';
    const before = await readyInstaller(d, lang);
    const ours = await installed(d, tool, args);
    const after = await installerOf(d, lang);
    const theirs = await host();
    out.push({
      what, packages: args.packages, daemon_ms: r2(ours), host_ms: r2(theirs), ratio: theirs ? r2(ours / theirs) : null,
      installer: after && before && after.hits > before.hits ? 'ready' : 'on demand',
    });
  }
  return out;
}

async function cachedRuns(d, n) {
  const a = [];
  const b = [];
  for (let i = 0; i < n; i++) {
    await d.poolFull();
    a.push((await d.call('run_python_code', { code: 'print(1)' })).ms);
    await d.poolFull();
    b.push((await d.call('run_python_code', { code: 'print(1)', packages: ['mcpsbx-base==1.0.0'] })).ms);
  }
  return { plain: stats(a), cached: stats(b) };
}

async function cachedRunsUnderLoad(d, n, load) {
  let stop = false;
  const loops = [];
  for (let i = 0; i < load; i++) {
    loops.push((async () => {
      while (!stop) await d.call('run_js_code', { code: 'console.log(1)' });
    })());
  }
  try {
    return await cachedRuns(d, n);
  } finally {
    stop = true;
    await Promise.all(loops);
  }
}

function table(res) {
  const p = (s) => (s ? `p50 ${s.p50} / p95 ${s.p95} ms` : 'n/a');
  const lines = [];
  for (const f of res.first ?? []) {
    lines.push(`  1 first install, ${f.what}: daemon ${f.daemon_ms} ms (${f.installer} installer), host ${f.host_ms ?? 'n/a'} ms; ratio ${f.ratio ?? 'n/a'} (target <= ${TARGETS.first_install_over_host_max})`);
  }
  if (res.runs) {
    lines.push(`  2 warm print(1): with a cached set ${p(res.runs.cached)}, without ${p(res.runs.plain)}; ratio p50 ${res.ratio_run} (target <= ${TARGETS.cached_over_plain_run_max})`);
  }
  if (res.load) {
    lines.push(`  3 the same while ${res.load.runs} runs load the daemon: with a cached set ${p(res.load.cached)}, without ${p(res.load.plain)}; ratio p50 ${res.ratio_load} (target <= ${TARGETS.cached_over_plain_run_max})`);
  }
  return `packages on demand (${res.engine}):\n${lines.join('\n')}`;
}

async function measure(res, index) {
  const n = countOption(opt, 'samples', 1, 'packages.mjs');
  const cache = mkdtempSync(path.join(os.tmpdir(), 'mcpsbx-bench-pkgcache-'));
  const registry = new URL((await run('npm', ['config', 'get', 'registry'])).stdout.trim()).hostname;
  const { address, family } = await dns.lookup(registry);
  const d = await StdioDaemon.start('packages', 'packages', [
    '--languages', 'python,javascript', '--pool-size', '2',
    '--packages-cache-dir', cache,
    '--packages-index', `python=http://pypi.test:${index.port}/simple/`,
    '--egress-resolve', 'pypi.test=127.0.0.1', '--egress-allow-cidr', '127.0.0.0/8',
    '--egress-allow-cidr', `${address}/${family === 6 ? 128 : 32}`,
  ], { bin: opt.bin, engine: opt.engine, logDir: opt['log-dir'] }, log);
  try {
    res.first = await firstInstalls(d, index);
    log(`2: warm print(1) with a cached set and without, ${n} samples each`);
    res.runs = await cachedRuns(d, n);
    res.ratio_run = r2(res.runs.cached.p50 / res.runs.plain.p50);
    const load = countOption(opt, 'load', 0, 'packages.mjs');
    log(`3: the same while ${load} runs load the daemon`);
    res.load = { runs: load, ...(await cachedRunsUnderLoad(d, n, load)) };
    res.ratio_load = r2(res.load.cached.p50 / res.load.plain.p50);
  } finally {
    await d.close();
    rmSync(cache, { recursive: true, force: true });
  }
}

async function main() {
  if (!sectionBegin(opt, 'packages.mjs', 'packages on demand')) return;
  const res = { engine: opt.engine, targets: TARGETS, problems: [] };
  const index = await startIndex();
  try {
    await measure(res, index);
  } catch (e) {
    res.problems.push(String(e.stack || e));
  } finally {
    await index.close();
  }
  writeFileSync(opt.out, `${JSON.stringify(res, null, 2)}\n`);
  console.log(table(res));
  if (res.problems.length) {
    for (const p of res.problems) log(`problem: ${p}`);
    process.exit(1);
  }
}

await main();
