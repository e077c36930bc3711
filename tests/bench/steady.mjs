// The "steady" section of `make bench` (scripts/bench.sh): the warm pool
// under the load an agent fleet puts on it, beside the idle figures, in one
// run, on one engine. The pool section (pool.mjs) fills the pool before
// every sample; here calls come on a clock and refills run beside them.
//
//   node tests/bench/steady.mjs --engine unix:///SOCK --out FILE.json [options]
//       measures, writes FILE.json, prints the table on stdout (progress on
//       stderr); exits 1 when something broke, never because a figure is low
//   node tests/bench/steady.mjs --skip REASON --out FILE.json
//
// Options: --bin, --calls N (recorded calls per series, default 30, after
// --warmup N unrecorded ones at the same pace, default 10), --rounds N
// (python hello's three series in N rounds, default 4), --seconds S (each
// runs/s series, default 10), --log-dir.
//
// What is measured, the daemon with its defaults (the eight languages, the
// pools following the calls) over stdio with the official SDK client:
//   1. idle: python hello, javascript hello and a pandas program, the pool
//      full and quiet before each call
//   2. steady: the same three, one call every 300 ms and every 1 s (a call
//      that takes longer than the pace is followed at once), with the pool's
//      hits and misses and its target at the end of the series, and the CPU
//      the engine's processes and the daemon used per call meanwhile
//   3. the raw floor (attach to a waiting runner, tests/bench/floor.mjs) of
//      python hello, and of the pandas program in a runner with no preload
//      (the floor plus the import)
//   4. one warm Pyodide in a stdio server (tests/bench/pyodide-server.mjs),
//      python hello at the same paces
// Python hello idle, every 300 ms and on Pyodide every 300 ms (the figures
// the first two targets compare) are measured in rounds of the three,
// --warmup calls before each 300 ms stretch.
//   5. refill capacity: ready sandboxes per second the daemon makes for
//      python (with its preloads) and javascript, a fixed pool of 8 filling
//      from empty
//   6. runs/s of python hello at 1, 4 and 16 callers, next to python's
//      refill capacity
// Ratios and targets are reported, never asserted.

import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { Engine, sleep, stats } from './engine.mjs';
import { measureFloor, seccompAsFile, warmCreateBody } from './floor.mjs';
import { ENV_URI, StdioDaemon, countOption, sectionBegin } from './stdio_daemon.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const PACES = [300, 1000];
const CALLERS = [1, 4, 16];
const CAPACITY_POOL = 8;
const TARGETS = {
  hello_steady_over_idle_max: 1.2,
  hello_steady_over_pyodide_max: 1,
  hello_p95_over_p50_max: 3,
  pandas_p50_ms_at_1s_max: 20,
  pandas_at_300ms_over_floor_import_max: 2,
  runs_over_capacity_min: 0.9,
};

const ITEMS = [
  { key: 'python_hello', label: 'python hello', tool: 'run_python_code', lang: 'python', code: 'print("hello")', stdout: 'hello\n' },
  { key: 'js_hello', label: 'javascript hello', tool: 'run_js_code', lang: 'javascript', code: 'console.log("hello")', stdout: 'hello\n' },
  {
    key: 'pandas',
    label: 'python pandas',
    tool: 'run_python_code',
    lang: 'python',
    code: 'import pandas as pd; print(pd.DataFrame({"a": [1, 2, 3]}).a.sum())',
    stdout: '6\n',
  },
];

const log = (m) => process.stderr.write(`steady: ${m}\n`);
const r2 = (x) => (typeof x === 'number' && Number.isFinite(x) ? Math.round(x * 100) / 100 : null);

const { values: opt } = parseArgs({
  options: {
    engine: { type: 'string' },
    bin: { type: 'string', default: path.join(ROOT, 'build', 'mcp-sandboxd') },
    out: { type: 'string' },
    calls: { type: 'string', default: '30' },
    warmup: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '4' },
    'log-dir': { type: 'string', default: path.join(ROOT, 'build', 'bench', 'logs') },
    skip: { type: 'string' },
  },
  strict: true,
});

// ---- the daemon --------------------------------------------------------------

async function environment(d) {
  return JSON.parse((await d.client.readResource({ uri: ENV_URI })).contents[0].text);
}

const profile = (env, lang) => env.pool.profiles.find((p) => p.language === lang) ?? {};

/** One call of item; throws on a wrong answer. Returns its ms. */
async function call(d, item) {
  const { ms, sc } = await d.call(item.tool, { code: item.code });
  if (sc?.status !== 'ok' || sc.exit_code !== 0 || sc.stdout !== item.stdout) {
    throw new Error(`${item.tool} ${JSON.stringify(item.code)}: ${JSON.stringify(sc).slice(0, 400)}`);
  }
  return ms;
}

/** Waits until lang's pool is full and nothing starts (60 s at most). */
async function settle(d, lang) {
  for (const end = Date.now() + 60_000; Date.now() < end; await sleep(50)) {
    const p = profile(await environment(d), lang);
    if (p.ready >= p.size && p.starting === 0) return;
  }
  throw new Error(`the ${lang} pool did not fill within 60 s`);
}

async function idleCalls(d, item, n) {
  const ms = [];
  for (let i = 0; i < n; i++) {
    await settle(d, item.lang);
    await sleep(200); // the last refill's engine work settles too
    ms.push(await call(d, item));
  }
  return ms;
}

const idleSeries = async (d, item, n) => stats(await idleCalls(d, item, n));

/** fn() every paceMs on a clock (at once when one ran late): warmup
 * unrecorded, then n recorded. */
async function paced(fn, paceMs, warmup, n) {
  const ms = [];
  let next = performance.now();
  for (let i = 0; i < warmup + n; i++) {
    const wait = next - performance.now();
    if (wait > 0) await sleep(wait);
    next = Math.max(next + paceMs, performance.now());
    const t = await fn();
    if (i >= warmup) ms.push(t);
  }
  return ms;
}

/**
 * CPU seconds so far of the engine's processes (dockerd, containerd and its
 * shims, runc, conmon, podman; the reaped children of each count in its
 * cutime/cstime) and of the daemon: where a refill's work runs outside the
 * sandbox's cgroup, which its CPU weight does not cover.
 */
const ENGINE_COMM = /^(dockerd|containerd|containerd-shim.*|runc|crun|conmon|podman)$/;
function cpuSeconds(daemonPid) {
  const tick = 100; // USER_HZ on Linux
  let engine = 0;
  let daemon = 0;
  for (const pid of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cpu = (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / tick;
    if (Number(pid) === daemonPid) daemon = cpu;
    else if (ENGINE_COMM.test(comm)) engine += cpu;
  }
  return { engine, daemon };
}

/** One stretch of calls of item every paceMs, with what the pool and the
 * engine did meanwhile. */
async function steadyBlock(d, item, paceMs, warmup, n) {
  const before = profile(await environment(d), item.lang);
  const cpu0 = cpuSeconds(d.pid);
  const t0 = performance.now();
  const ms = await paced(() => call(d, item), paceMs, warmup, n);
  const wall = (performance.now() - t0) / 1000;
  const cpu1 = cpuSeconds(d.pid);
  const after = profile(await environment(d), item.lang);
  return {
    ms,
    calls: warmup + n,
    wall,
    engine: cpu1.engine - cpu0.engine,
    daemon: cpu1.daemon - cpu0.daemon,
    hits: after.hits - before.hits,
    misses: after.misses - before.misses,
    without_preload: after.without_preload - before.without_preload,
    target_after: after.size,
    target_why: after.size_why,
  };
}

/** The blocks of one item and pace as one series. */
function steadyDoc(item, paceMs, blocks) {
  const sum = (k) => blocks.reduce((a, b) => a + b[k], 0);
  const calls = sum('calls');
  const last = blocks[blocks.length - 1];
  const doc = {
    pace_ms: paceMs,
    blocks: blocks.length,
    stats: stats(blocks.flatMap((b) => b.ms)),
    hits: sum('hits'),
    misses: sum('misses'),
    without_preload: sum('without_preload'),
    target_after: last.target_after,
    target_why: last.target_why,
    // Per call, and as a share of one core over the series.
    engine_cpu_ms_per_call: r2((sum('engine') * 1000) / calls),
    engine_cpu_share: r2(sum('engine') / sum('wall')),
    daemon_cpu_ms_per_call: r2((sum('daemon') * 1000) / calls),
  };
  doc.miss_rate = r2(doc.misses / (doc.hits + doc.misses));
  log(`${item.label} every ${paceMs} ms: p50 ${doc.stats.p50}, p95 ${doc.stats.p95} ms; hits ${doc.hits}, misses ${doc.misses}; target ${doc.target_after} (${doc.target_why}); engine CPU ${doc.engine_cpu_ms_per_call} ms/call (${doc.engine_cpu_share} of a core), daemon ${doc.daemon_cpu_ms_per_call} ms/call`);
  return doc;
}

// ---- Pyodide ------------------------------------------------------------------

class Pyodide {
  async start() {
    this.transport = new StdioClientTransport({
      command: process.execPath,
      args: [path.join(HERE, 'pyodide-server.mjs')],
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
      cwd: path.join(ROOT, 'tests'),
      stderr: 'pipe',
    });
    this.tail = '';
    this.transport.stderr.on('data', (c) => (this.tail = (this.tail + c).slice(-2000)));
    this.client = new Client({ name: 'mcp-sandboxd-bench-steady', version: '1.0.0' });
    await this.wrap(() => this.client.connect(this.transport, { timeout: 120_000 }));
    return this;
  }

  async wrap(fn) {
    try {
      return await fn();
    } catch (e) {
      throw new Error(`pyodide: ${e.message || e}\n--- pyodide-server stderr ---\n${this.tail}`);
    }
  }

  /** One python hello; its ms. */
  one() {
    const item = ITEMS[0];
    return this.wrap(async () => {
      const t0 = performance.now();
      const r = await this.client.callTool({ name: 'run_python_code', arguments: { code: item.code } }, undefined, { timeout: 60_000 });
      if (r.isError || r.structuredContent?.stdout !== item.stdout) throw new Error(JSON.stringify(r).slice(0, 300));
      return performance.now() - t0;
    });
  }

  async close() {
    await this.client?.close().catch(() => {});
  }
}

// ---- capacity and runs/s ---------------------------------------------------------

/** Ready sandboxes per second lang's pool makes from empty (the first
 * ready one starts the clock). */
async function capacity(lang) {
  const d = await StdioDaemon.start('steady', `capacity-${lang}`, ['--languages', lang, '--pool-size', String(CAPACITY_POOL), '--packages-ready-installers', '0'], daemonOpt(), log);
  try {
    let first = null;
    for (const end = Date.now() + 180_000; Date.now() < end; await sleep(25)) {
      const p = profile(await environment(d), lang);
      const now = performance.now();
      if (first === null && p.ready >= 1) first = { t: now, ready: p.ready };
      if (p.ready >= CAPACITY_POOL) {
        const per_s = r2((p.ready - first.ready) / ((now - first.t) / 1000));
        log(`capacity ${lang}: ${per_s} ready sandboxes/s`);
        return { per_s, pool: CAPACITY_POOL, seconds: r2((now - first.t) / 1000) };
      }
    }
    throw new Error(`the ${lang} pool of ${CAPACITY_POOL} did not fill within 180 s`);
  } finally {
    await d.close();
  }
}

async function runsPerSecond(d, callers, seconds) {
  const ms = [];
  const end = performance.now() + seconds * 1000;
  const t0 = performance.now();
  const worker = async () => {
    while (performance.now() < end) ms.push(await call(d, ITEMS[0]));
  };
  await Promise.all(Array.from({ length: callers }, worker));
  const runs_per_s = r2(ms.length / ((performance.now() - t0) / 1000));
  const after = profile(await environment(d), 'python');
  log(`${callers} callers: ${runs_per_s} runs/s, p50 ${stats(ms).p50} ms; python target ${after.size}`);
  return { callers, runs: ms.length, runs_per_s, latency_ms: stats(ms), target_after: after.size };
}

const daemonOpt = () => ({ bin: opt.bin, engine: opt.engine, logDir: opt['log-dir'] });

// ---- the report -------------------------------------------------------------------

function table(res) {
  const lines = [];
  const p = (s) => (s ? `p50 ${s.p50} / p95 ${s.p95} ms` : '?');
  lines.push(`  floor: python hello ${p(res.floor?.hello)}, pandas without preload ${p(res.floor?.pandas)}`);
  for (const item of ITEMS) {
    const r = res.items?.[item.key];
    if (!r) continue;
    const at = PACES.map((pace) => {
      const st = r.steady[pace];
      return `every ${pace} ms ${p(st.stats)} (misses ${st.misses}/${st.hits + st.misses}, engine CPU ${st.engine_cpu_ms_per_call} ms/call)`;
    });
    lines.push(`  ${item.label}: idle ${p(r.idle)}; ${at.join('; ')}`);
  }
  if (res.pyodide) lines.push(`  warm Pyodide, python hello: ${PACES.map((pace) => `every ${pace} ms ${p(res.pyodide[pace])}`).join('; ')}`);
  if (res.capacity) lines.push(`  refill capacity: python ${res.capacity.python?.per_s}/s, javascript ${res.capacity.javascript?.per_s}/s`);
  if (res.runs) lines.push(`  runs/s, python hello: ${res.runs.map((r) => `${r.callers} callers ${r.runs_per_s}`).join(', ')}`);
  const rt = res.ratios ?? {};
  const t = TARGETS;
  lines.push(`  ratios: hello@300 over idle ${rt.hello_steady_over_idle} (<= ${t.hello_steady_over_idle_max}), over Pyodide ${rt.hello_steady_over_pyodide} (<= ${t.hello_steady_over_pyodide_max}), p95/p50 ${rt.hello_p95_over_p50} (<= ${t.hello_p95_over_p50_max}); pandas@1s p50 ${rt.pandas_p50_ms_at_1s} ms (<= ${t.pandas_p50_ms_at_1s_max}), pandas@300 over floor+import ${rt.pandas_at_300ms_over_floor_import} (<= ${t.pandas_at_300ms_over_floor_import_max}); runs/s over capacity at 4 ${rt.runs4_over_capacity}, at 16 ${rt.runs16_over_capacity} (>= ${t.runs_over_capacity_min})`);
  return `warm pool under steady load (${res.engine}):\n${lines.join('\n')}`;
}

function ratios(res) {
  const py = res.items.python_hello;
  const pandas = res.items.pandas;
  const cap = res.capacity.python.per_s;
  const at = (callers) => res.runs.find((r) => r.callers === callers)?.runs_per_s;
  res.ratios = {
    hello_steady_over_idle: r2(py.steady[300].stats.p50 / py.idle.p50),
    hello_steady_over_pyodide: r2(py.steady[300].stats.p50 / res.pyodide[300].p50),
    hello_p95_over_p50: r2(py.steady[300].stats.p95 / py.steady[300].stats.p50),
    pandas_p50_ms_at_1s: r2(pandas.steady[1000].stats.p50),
    pandas_at_300ms_over_floor_import: r2(pandas.steady[300].stats.p50 / res.floor.pandas.p50),
    runs4_over_capacity: r2(at(4) / cap),
    runs16_over_capacity: r2(at(16) / cap),
  };
}

/**
 * Python hello idle, every 300 ms and on the warm Pyodide every 300 ms,
 * the targets' three figures, in rounds of the three, so that the machine
 * drifting over minutes (the host's other load, its clocks) weighs on all
 * three alike. Each round: the daemon every 300 ms (after its own warm-up,
 * which brings the pool's rate up), then idle (which waits for the pool to
 * fill and settle), then Pyodide with the pool quiet.
 */
async function helloRounds(d, py, res, rounds, warmup, n) {
  const item = ITEMS[0];
  const per = Math.ceil(n / rounds);
  const blocks = [];
  const idle = [];
  res.pyodideMs = [];
  for (let r = 0; r < rounds; r++) {
    log(`1, 2, 4: python hello round ${r + 1} of ${rounds}: ${per} calls every 300 ms, ${per} idle, ${per} on Pyodide`);
    blocks.push(await steadyBlock(d, item, 300, warmup, per));
    idle.push(...(await idleCalls(d, item, per)));
    res.pyodideMs.push(...(await paced(() => py.one(), 300, warmup, per)));
  }
  res.items[item.key] = { idle: stats(idle), steady: { 300: steadyDoc(item, 300, blocks) } };
}

async function measure(res) {
  const n = countOption(opt, 'calls', 1, 'steady.mjs');
  const warmup = countOption(opt, 'warmup', 0, 'steady.mjs');
  const seconds = countOption(opt, 'seconds', 1, 'steady.mjs');
  const rounds = countOption(opt, 'rounds', 1, 'steady.mjs');
  const engine = new Engine(opt.engine.replace(/^unix:\/\//, ''), `steady-${randomBytes(4).toString('hex')}`);
  try {
    log(`3: the floor, ${n} samples each`);
    const v = await engine.call('GET', '/version', null, [200]);
    const body = warmCreateBody(opt.bin, 'python', '');
    if ((v.Components || []).some((c) => c.Name === 'Podman Engine')) seccompAsFile(body, path.resolve(path.dirname(opt.out), 'seccomp-steady.json'));
    res.floor = {
      hello: (await measureFloor(engine, body, 'python', n)).stats,
      pandas: (await measureFloor(engine, body, 'python', n, { code: ITEMS[2].code, stdout: ITEMS[2].stdout })).stats,
    };
  } finally {
    await engine.cleanup();
  }
  const d = await StdioDaemon.start('steady', 'default', [], daemonOpt(), log);
  log('4: a warm Pyodide beside it');
  const py = await new Pyodide().start();
  let closed = false;
  try {
    res.items = {};
    await helloRounds(d, py, res, rounds, warmup, n);
    for (const item of ITEMS.slice(1)) {
      log(`1: ${item.label} idle, ${n} calls`);
      res.items[item.key] = { idle: await idleSeries(d, item, n), steady: {} };
    }
    for (const pace of PACES) {
      for (const item of ITEMS) {
        if (res.items[item.key].steady[pace]) continue;
        res.items[item.key].steady[pace] = steadyDoc(item, pace, [await steadyBlock(d, item, pace, warmup, n)]);
      }
    }
    log(`6: runs/s at ${CALLERS.join(', ')} callers, ${seconds} s each`);
    res.runs = [];
    for (const c of CALLERS) res.runs.push(await runsPerSecond(d, c, seconds));
    const env = await environment(d);
    res.cpu_weights = env.pool.cpu_weights;
    // The daemon gone, the machine quiet, as the 300 ms series had it.
    await d.close();
    closed = true;
    res.pyodide = { 300: stats(res.pyodideMs), 1000: stats(await paced(() => py.one(), 1000, warmup, n)) };
    delete res.pyodideMs;
    log(`pyodide warm: p50 ${res.pyodide[300].p50} ms every 300 ms, ${res.pyodide[1000].p50} ms every 1 s`);
  } finally {
    if (!closed) await d.close();
    await py.close();
  }
  log('5: refill capacity');
  res.capacity = { python: await capacity('python'), javascript: await capacity('javascript') };
  ratios(res);
}

async function main() {
  if (!sectionBegin(opt, 'steady.mjs', 'warm pool under steady load')) return;
  const res = { engine: opt.engine, targets: TARGETS, problems: [] };
  try {
    await measure(res);
  } catch (e) {
    res.problems.push(String(e.stack || e));
  }
  writeFileSync(opt.out, `${JSON.stringify(res, null, 2)}\n`);
  console.log(table(res));
  if (res.problems.length) {
    for (const p of res.problems) log(`problem: ${p}`);
    process.exit(1);
  }
}

await main();
