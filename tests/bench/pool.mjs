// The "warm pool" section of `make bench` (scripts/bench.sh): every way of
// running a hello world measured side by side, in one run, on one engine.
//
//   node tests/bench/pool.mjs --engine unix:///SOCK --out FILE.json [options]
//       measures, writes FILE.json, prints the table on stdout (progress on
//       stderr); exits 1 when something broke (a wrong answer, a daemon that
//       died or left containers behind), never because a figure is low
//   node tests/bench/pool.mjs --print FILE.json     prints the table again
//   node tests/bench/pool.mjs --skip REASON --out FILE.json
//       records and prints that the section was skipped
//   node tests/bench/pool.mjs --sweep --engine URL --run-id ID [--pidfile F]
//       removes what a run left behind (scripts/bench.sh's exit trap)
//
// Options: --bin (daemon, default build/mcp-sandboxd), --runtime NAME (the
// daemon's --runtime and HostConfig.Runtime of the floor/peer/churn
// containers), --samples N (per item, default 30), --seconds S (each
// throughput run, default 10), --runs N (runs between the two RSS/fd
// readings, default 2000), --fresh N (fresh-Pyodide calls, default 3),
// --run-id ID (labels our containers), --pidfile F (daemon pids, one a line,
// for the sweep), --log-dir DIR (daemon logs).
//
// What is measured (p50/p95 of each):
//   1. floor: attach to a started, waiting warm runner + request + record
//      (tests/bench/floor.mjs), python and javascript; and the same with the
//      attach made ahead and held (request + record only)
//   2. mcp-sandboxd over stdio, official SDK client, warm pool (defaults,
//      the pools held at the table's sizes: --pool-max-total 0):
//      hello world in python and js, a pandas program and a program whose
//      plt.show() returns one PNG (next to hello: png_over_plain); before every
//      sample the pool is full again (polling mcp-sandboxd://environment),
//      and the hit/miss counters tell whether the sample was a hit
//   3. the same with --pool-size 0
//   4. peers' container per call (tests/bench/peer.mjs)
//   5. Pyodide through the same SDK client (tests/bench/pyodide-server.mjs),
//      one warm instance, then a fresh one per call
//   6. runs/s at 1, 4, 16 concurrent calls on one daemon (warm pool) next
//      to the engine's create/start/wait/remove churn for as long
//   7. the daemon's VmRSS and open fds before and after --runs runs at
//      concurrency 4
// Ratios and targets are reported, never asserted.

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, createWriteStream, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { Engine, sleep, stats } from './engine.mjs';
import { measureFloor, seccompAsFile, warmCreateBody } from './floor.mjs';
import { churnCreateBody, measureChurn, measurePeer, peerCreateBody } from './peer.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const MANAGED_LABEL = 'io.mcp-sandboxd.managed';
const OWNER_LABEL = 'io.mcp-sandboxd.owner';
const ENV_URI = 'mcp-sandboxd://environment';
const CALL_TIMEOUT_MS = 120_000;
const POOL_WAIT_MS = 60_000;
const CONCURRENCY = [1, 4, 16];
const RSS_CONCURRENCY = 4;

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
  {
    // A chart that comes back: the figure drawn, taken at plt.show() as a
    // PNG, sent as a file frame and returned as image content.
    key: 'python_png',
    label: 'python one PNG',
    tool: 'run_python_code',
    lang: 'python',
    code: 'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()\nprint("png")',
    stdout: 'png\n',
    images: 1,
  },
];

const TARGETS = {
  warm_over_floor_max: 1.5,
  warm_over_pyodide_max: 1,
  pandas_warm_p50_ms_max: 20,
  peer_over_warm_min: 40,
  runs_over_churn_min: 0.9,
  // "Flat": what an allocator's noise allows, not growth per run.
  rss_growth_kib_max: 2048,
  fd_growth_max: 0,
};

const log = (m) => process.stderr.write(`pool: ${m}\n`);
const r2 = (x) => (typeof x === 'number' && Number.isFinite(x) ? Math.round(x * 100) / 100 : null);
const r3 = (x) => (typeof x === 'number' && Number.isFinite(x) ? Math.round(x * 1000) / 1000 : null);

// ---- arguments ---------------------------------------------------------------

const { values: opt } = parseArgs({
  options: {
    engine: { type: 'string' },
    bin: { type: 'string', default: path.join(ROOT, 'build', 'mcp-sandboxd') },
    runtime: { type: 'string', default: '' },
    out: { type: 'string' },
    samples: { type: 'string', default: '30' },
    seconds: { type: 'string', default: '10' },
    runs: { type: 'string', default: '2000' },
    fresh: { type: 'string', default: '3' },
    'run-id': { type: 'string', default: randomBytes(6).toString('hex') },
    pidfile: { type: 'string', default: '' },
    'log-dir': { type: 'string', default: path.join(ROOT, 'build', 'bench', 'logs') },
    print: { type: 'string' },
    skip: { type: 'string' },
    sweep: { type: 'boolean', default: false },
  },
  strict: true,
});

function count(name, min) {
  const v = Number(opt[name]);
  if (!Number.isInteger(v) || v < min) {
    console.error(`pool.mjs: --${name} must be a whole number >= ${min}, got '${opt[name]}'`);
    process.exit(2);
  }
  return v;
}

// ---- the daemon, driven by the official SDK client ---------------------------

/** Only what a daemon needs from our environment: no MCPSANDBOXD_* settings. */
function daemonEnv() {
  const env = {};
  for (const k of ['PATH', 'HOME', 'LANG']) if (process.env[k] !== undefined) env[k] = process.env[k];
  return env;
}

class Daemon {
  static async start(name, args) {
    const d = new Daemon();
    d.name = name;
    d.args = args;
    d.tail = '';
    mkdirSync(opt['log-dir'], { recursive: true });
    d.logFile = path.join(opt['log-dir'], `pool-daemon-${name}.log`);
    d.logStream = createWriteStream(d.logFile);
    d.transport = new StdioClientTransport({ command: opt.bin, args, env: daemonEnv(), stderr: 'pipe' });
    d.transport.stderr.on('data', (c) => {
      d.logStream.write(c);
      d.tail = (d.tail + c.toString('utf8')).slice(-4000);
    });
    d.client = new Client({ name: 'mcp-sandboxd-bench-pool', version: '1.0.0' });
    try {
      await d.client.connect(d.transport, { timeout: 30_000 });
    } catch (e) {
      await d.client.close().catch(() => {}); // ends the process if it started
      d.logStream.end();
      throw new Error(`daemon '${name}' did not start: ${e.message || e}; stderr tail:\n${d.tail}`);
    }
    d.proc = d.transport._process; // as tests/integration/lib.mjs: to see how it exits
    d.pid = d.transport.pid;
    if (opt.pidfile) appendFileSync(opt.pidfile, `${d.pid}\n`);
    d.exit = null;
    d.exited = new Promise((resolve) => {
      if (d.proc.exitCode !== null || d.proc.signalCode !== null) resolve();
      else d.proc.once('exit', () => resolve());
    }).then(() => {
      d.exit = { code: d.proc.exitCode, signal: d.proc.signalCode };
    });
    await d.client.listTools(); // also arms the SDK's output-schema validation
    log(`daemon '${name}' pid ${d.pid}: ${path.relative(ROOT, opt.bin)} ${args.join(' ')}`);
    return d;
  }

  alive() {
    return this.exit === null;
  }

  async call(item) {
    const t0 = performance.now();
    const r = await this.client.callTool({ name: item.tool, arguments: { code: item.code } }, undefined, { timeout: CALL_TIMEOUT_MS });
    const ms = performance.now() - t0;
    const sc = r.structuredContent;
    const images = r.content.filter((c) => c.type === 'image').length;
    if (r.isError || sc?.status !== 'ok' || sc.exit_code !== 0 || sc.stdout !== item.stdout || images !== (item.images ?? 0)) {
      throw new Error(`${item.tool} ${JSON.stringify(item.code)}: unexpected result ${JSON.stringify(sc ?? r).slice(0, 600)}`);
    }
    return { ms, sc, r };
  }

  async environment() {
    const r = await this.client.readResource({ uri: ENV_URI }, { timeout: 30_000 });
    return JSON.parse(r.contents[0].text);
  }

  /** The pool profiles of lang (all memory sizes), or [] without a pool. */
  static profiles(env, lang) {
    return (env?.pool?.profiles || []).filter((p) => p.language === lang);
  }

  /** Polls the environment until every profile of langs is full; returns
   * {env, full}. */
  async waitFull(langs, ms = POOL_WAIT_MS) {
    const deadline = performance.now() + ms;
    for (;;) {
      const env = await this.environment();
      const ps = langs.flatMap((l) => Daemon.profiles(env, l));
      const full = ps.length > 0 && ps.every((p) => p.ready >= p.size);
      if (full || performance.now() > deadline) return { env, full };
      await sleep(20);
    }
  }

  /** Closes stdin and waits for the daemon to exit on its own (it removes
   * its containers first); kills it after 30 s. */
  async close() {
    if (this.closed) return this.exit;
    this.closed = true;
    if (this.exit === null) {
      try {
        this.proc.stdin.end();
      } catch {
        /* gone */
      }
      await Promise.race([this.exited, sleep(30_000)]);
      if (this.exit === null) this.exit = { hung: true };
    }
    await this.client.close().catch(() => {});
    this.logStream.end();
    return this.exit;
  }
}

function procStats(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  return {
    rss_kib: kb('VmRSS'),
    hwm_kib: kb('VmHWM'),
    threads: kb('Threads'),
    fds: readdirSync(`/proc/${pid}/fd`).length,
  };
}

const hitKeys = (o) => Object.keys(o || {}).filter((k) => /pool|warm/i.test(k));

/** What a result says about the pool, if it says anything. */
function resultPoolInfo(r) {
  const out = {};
  for (const k of hitKeys(r.structuredContent)) out[k] = r.structuredContent[k];
  for (const k of hitKeys(r._meta)) out[`_meta.${k}`] = r._meta[k];
  return Object.keys(out).length ? out : null;
}

const sumCounter = (env, lang, k) => Daemon.profiles(env, lang).reduce((a, p) => a + (Number(p[k]) || 0), 0);

/**
 * n samples of item on daemon d after one unrecorded warm-up. With pool,
 * each sample starts once the pool is full again, and the hits/misses
 * counters around it say whether it was a hit.
 */
async function measureItem(d, item, n, pool) {
  if (pool) await d.waitFull([item.lang]);
  await d.call(item);
  const samples = [];
  const daemonMs = [];
  const hit = [];
  const info = [];
  let notFull = 0;
  let before = pool ? await d.waitFull([item.lang]) : null;
  for (let i = 0; i < n; i++) {
    if (pool && !before.full) notFull++;
    const { ms, sc, r } = await d.call(item);
    samples.push(ms);
    if (typeof sc.duration_ms === 'number') daemonMs.push(sc.duration_ms);
    const ri = resultPoolInfo(r);
    if (ri) info.push(ri);
    if (pool) {
      const after = await d.waitFull([item.lang]);
      const dh = sumCounter(after.env, item.lang, 'hits') - sumCounter(before.env, item.lang, 'hits');
      const dm = sumCounter(after.env, item.lang, 'misses') - sumCounter(before.env, item.lang, 'misses');
      hit.push(dh === 1 && dm === 0);
      before = after;
    }
  }
  const doc = {
    tool: item.tool,
    code: item.code,
    stats: stats(samples),
    daemon_duration_ms: stats(daemonMs),
    samples: samples.map(r3),
  };
  if (pool) Object.assign(doc, { hits: hit.filter(Boolean).length, misses: hit.filter((h) => !h).length, pool_not_full_before: notFull, hit_per_sample: hit });
  if (info.length) doc.result_pool_info = info;
  log(`${d.name} ${item.label}: p50 ${doc.stats.p50} ms, p95 ${doc.stats.p95} ms` + (pool ? `, hits ${doc.hits}/${n}` : ''));
  return doc;
}

/**
 * Python hello worlds on d with concurrency calls in flight, until seconds
 * pass (seconds) or total runs were started (total).
 */
async function driveRuns(d, concurrency, { seconds = 0, total = 0, progress = 0 } = {}) {
  const item = ITEMS[0];
  const lat = [];
  const errors = [];
  let started = 0;
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  const more = () => (total ? started < total : performance.now() < deadline);
  const worker = async () => {
    while (more() && errors.length <= 50 && d.alive()) {
      started++;
      try {
        lat.push((await d.call(item)).ms);
        if (progress && lat.length % progress === 0) log(`${d.name}: ${lat.length}/${total} runs`);
      } catch (e) {
        errors.push(String(e.message || e));
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - t0) / 1000;
  return {
    concurrency,
    ...(seconds ? { seconds_planned: seconds } : { runs_planned: total }),
    seconds: r3(elapsed),
    runs: lat.length,
    runs_per_s: r2(lat.length / elapsed),
    latency_ms: stats(lat),
    errors: errors.length,
    error_examples: [...new Set(errors)].slice(0, 3),
  };
}

// ---- Pyodide -----------------------------------------------------------------

async function measurePyodide(fresh, n) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [path.join(HERE, 'pyodide-server.mjs'), ...(fresh ? ['--fresh'] : [])],
    env: daemonEnv(),
    cwd: path.join(ROOT, 'tests'),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr.on('data', (c) => (stderr = (stderr + c).slice(-4000)));
  const client = new Client({ name: 'mcp-sandboxd-bench-pool', version: '1.0.0' });
  const item = ITEMS[0];
  try {
    const t0 = performance.now();
    await client.connect(transport, { timeout: 120_000 });
    const startMs = performance.now() - t0;
    const call = async () => {
      const s = performance.now();
      const r = await client.callTool({ name: 'run_python_code', arguments: { code: item.code } }, undefined, { timeout: CALL_TIMEOUT_MS });
      const ms = performance.now() - s;
      if (r.isError || r.structuredContent?.stdout !== item.stdout) throw new Error(`pyodide: unexpected result ${JSON.stringify(r).slice(0, 400)}`);
      return { ms, sc: r.structuredContent };
    };
    if (!fresh) await call(); // warm-up, as for the daemon
    const samples = [];
    let last = null;
    for (let i = 0; i < n; i++) {
      const c = await call();
      samples.push(c.ms);
      last = c.sc;
    }
    const doc = {
      server: `tests/bench/pyodide-server.mjs${fresh ? ' --fresh' : ''}`,
      pyodide_version: last?.pyodide_version ?? null,
      server_start_ms: r3(startMs),
      load_ms: r3(last?.load_ms),
      network_requests: last?.network_requests ?? null,
      stats: stats(samples),
      samples: samples.map(r3),
    };
    log(`pyodide ${fresh ? 'fresh' : 'warm'}: p50 ${doc.stats.p50} ms, p95 ${doc.stats.p95} ms, network requests ${doc.network_requests}`);
    return doc;
  } catch (e) {
    throw new Error(`${e.message || e}\n--- pyodide-server stderr ---\n${stderr}`);
  } finally {
    await client.close().catch(() => {});
  }
}

// ---- engine facts ------------------------------------------------------------

async function engineFacts(engine) {
  const v = await engine.call('GET', '/version', null, [200]);
  const podman = (v.Components || []).some((c) => c.Name === 'Podman Engine');
  const info = await engine.info();
  return {
    kind: podman ? 'podman' : 'docker',
    version: v.Version,
    api_version: v.ApiVersion,
    runtimes: Object.keys(info.Runtimes || {}),
    default_runtime: info.DefaultRuntime || null,
    cgroup_version: info.CgroupVersion || null,
  };
}

/** Why runtime cannot be used on this engine, or null when a container runs with it. */
async function runtimeProblem(engine, facts, hardened) {
  if (!facts.runtimes.includes(opt.runtime)) {
    return `runtime ${opt.runtime} is not configured in ${facts.kind} (its runtimes: ${facts.runtimes.join(', ') || 'none listed'})`;
  }
  // Listed is not enough: Podman lists its defaults whether installed or
  // not, and its compat API (4.3) ignores HostConfig.Runtime altogether, so
  // the runtime a trivial container really got is checked.
  const body = churnCreateBody(hardened);
  let id = null;
  try {
    id = await engine.create(body);
    let used;
    if (facts.kind === 'podman') {
      const r = await engine.call('GET', `/v${facts.version}/libpod/containers/${id}/json`, null, [200], { raw: true });
      used = r?.OCIRuntime;
    } else {
      used = (await engine.call('GET', `/containers/${id}/json`, null, [200]))?.HostConfig?.Runtime;
    }
    if (used !== opt.runtime) {
      return `${facts.kind} does not use runtime ${opt.runtime} for a container created with HostConfig.Runtime=${opt.runtime} (it got ${used || 'its default'}), so neither would the daemon's`;
    }
    await engine.start(id);
    const w = await engine.call('POST', `/containers/${id}/wait`, null, [200]);
    if (w?.StatusCode !== 0) return `a trivial container under ${opt.runtime} exited ${w?.StatusCode}`;
    return null;
  } catch (e) {
    return `runtime ${opt.runtime} is listed by ${facts.kind} but a container does not start with it: ${String(e.message || e).slice(0, 300)}`;
  } finally {
    if (id) await engine.remove(id).catch(() => {});
  }
}

// ---- leftovers ---------------------------------------------------------------

/** Removes managed containers whose owner label names one of pids; returns how many. */
async function removeOwnedBy(engine, pids) {
  if (!pids.length) return 0;
  const filters = encodeURIComponent(JSON.stringify({ label: [MANAGED_LABEL] }));
  const list = await engine.call('GET', `/containers/json?all=1&filters=${filters}`, null, [200]);
  // owner = <boot id>:<pid namespace>:<pid>:<start time>
  const mine = list.filter((c) => pids.includes(Number(String(c.Labels?.[OWNER_LABEL] || '').split(':')[2])));
  await Promise.all(mine.map((c) => engine.remove(c.Id).catch(() => {})));
  return mine.length;
}

/** Containers a closed daemon left (its owner label), waiting up to ms for
 * its removals to finish. */
async function leftBy(engine, pid, ms = 10_000) {
  const filters = encodeURIComponent(JSON.stringify({ label: [MANAGED_LABEL] }));
  const deadline = performance.now() + ms;
  for (;;) {
    const list = await engine.call('GET', `/containers/json?all=1&filters=${filters}`, null, [200]);
    const left = list.filter((c) => Number(String(c.Labels?.[OWNER_LABEL] || '').split(':')[2]) === pid);
    if (!left.length || performance.now() > deadline) return left.map((c) => c.Id.slice(0, 12));
    await sleep(250);
  }
}

async function sweep() {
  const engine = new Engine(opt.engine.replace(/^unix:\/\//, ''), opt['run-id']);
  let pids = [];
  if (opt.pidfile) {
    try {
      pids = readFileSync(opt.pidfile, 'utf8').split('\n').filter(Boolean).map(Number);
    } catch {
      /* no daemon was started */
    }
  }
  // A daemon still running here was orphaned by a killed driver: end it so
  // it cannot refill its pool behind our back. SIGTERM first: it removes
  // its own containers on the way out.
  const ours = (pid) => {
    try {
      return /mcp-sandboxd/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8')); // empty for a zombie
    } catch {
      return false;
    }
  };
  const signal = (pid, sig) => {
    try {
      process.kill(pid, sig);
    } catch {
      /* gone meanwhile */
    }
  };
  const running = pids.filter(ours);
  for (const pid of running) signal(pid, 'SIGTERM');
  for (let i = 0; i < 100 && running.some(ours); i++) await sleep(100);
  for (const pid of running.filter(ours)) signal(pid, 'SIGKILL');
  let n = 0;
  try {
    n += await removeOwnedBy(engine, pids);
  } catch {
    /* engine gone */
  }
  n += await engine.cleanup();
  if (n) log(`sweep: removed ${n} container(s) left by run ${opt['run-id']}`);
}

// ---- the table ---------------------------------------------------------------

const f1 = (x) => (typeof x === 'number' ? x.toFixed(1) : '-');
const f2 = (x) => (typeof x === 'number' ? x.toFixed(2) : '-');

function ratio(a, b) {
  return typeof a === 'number' && typeof b === 'number' && b > 0 ? r2(a / b) : null;
}

function format(doc) {
  if (doc.result === 'skipped') return [`warm pool: SKIPPED - ${doc.reason}`];
  const e = doc.engine || {};
  const lines = [
    `warm pool (${e.kind} ${e.version}, runtime ${doc.runtime || 'default'}, ${doc.settings.samples} samples per item, nproc ${doc.machine.nproc}, load ${doc.machine.loadavg_before}` +
      (typeof doc.machine.cpu_busy_before === 'number' ? `, CPUs ${Math.round(doc.machine.cpu_busy_before * 100)}% busy at the start):` : '):'),
    `  ${'what'.padEnd(48)} ${'p50 ms'.padStart(9)} ${'p95 ms'.padStart(9)}  notes`,
  ];
  // Other work on the machine skews every figure here (2-core machines above
  // all). The CPU use just before the start tells, not the load average:
  // that still counts the previous sections' work, and ours after.
  const busy = doc.machine.cpu_busy_before;
  if (typeof busy === 'number' && busy > 0.25) {
    lines.splice(1, 0, `  note: the CPUs were ${Math.round(busy * 100)}% busy with other work at the start: figures are noisy`);
  }
  const row = (label, s, note = '') => lines.push(`  ${label.padEnd(48)} ${f1(s?.p50).padStart(9)} ${f1(s?.p95).padStart(9)}  ${note}`.trimEnd());
  const miss = (label, why) => lines.push(`  ${label.padEnd(48)} ${'-'.padStart(9)} ${'-'.padStart(9)}  ${why}`);
  const m = doc.measures;
  for (const [key, label] of [
    ['python', '1 floor python (attach+request+record)'],
    ['javascript', '1 floor javascript (attach+request+record)'],
    ['python_held', '1 floor python, attach held (request+record)'],
    ['javascript_held', '1 floor javascript, attach held'],
  ]) {
    const x = m.floor?.[key];
    if (x?.stats) row(label, x.stats);
    else miss(label, x?.error ? `FAILED: ${x.error.split('\n')[0].slice(0, 80)}` : 'not measured');
  }
  for (const [k, title] of [
    ['warm', '2 mcp-sandboxd warm pool'],
    ['no_pool', '3 mcp-sandboxd --pool-size 0'],
  ]) {
    const sec = m[k];
    if (!sec || sec.skipped) {
      miss(`${title}`, sec?.skipped ? `skipped: ${sec.skipped}` : 'not measured');
      continue;
    }
    for (const it of ITEMS) {
      const x = sec.items?.[it.key];
      if (x?.stats) {
        const notes = [];
        if (typeof x.hits === 'number') notes.push(`hits ${x.hits}/${x.hits + x.misses}`);
        if (x.pool_not_full_before) notes.push(`${x.pool_not_full_before} started with the pool not full`);
        if (x.daemon_duration_ms) notes.push(`daemon duration_ms p50 ${f1(x.daemon_duration_ms.p50)}`);
        row(`${title}: ${it.label}`, x.stats, notes.join(', '));
      } else miss(`${title}: ${it.label}`, x?.error ? `FAILED: ${x.error.split('\n')[0].slice(0, 80)}` : 'not measured');
    }
  }
  for (const lang of ['python', 'javascript']) {
    const x = m.peer?.[lang];
    if (x?.stats) row(`4 peer container per call ${lang}`, x.stats, 'create+archive+start+wait+logs+remove');
    else miss(`4 peer container per call ${lang}`, x?.error ? `FAILED: ${x.error.split('\n')[0].slice(0, 80)}` : 'not measured');
  }
  for (const [k, label] of [
    ['warm', '5 pyodide, one warm instance'],
    ['fresh', '5 pyodide, fresh instance per call'],
  ]) {
    const x = m.pyodide?.[k];
    if (x?.stats) {
      row(`${label} (${x.stats.n} calls)`, x.stats, `pyodide ${x.pyodide_version}, load ${f1(x.load_ms)} ms, network requests ${x.network_requests}`);
    } else miss(label, x?.error ? `FAILED: ${x.error.split('\n')[0].slice(0, 80)}` : 'not measured');
  }
  const tp = m.throughput;
  if (tp?.levels?.length) {
    lines.push(
      `  6 sustained hello worlds, ${doc.settings.seconds} s per level: the daemon (${tp.daemon}) vs the engine's own churn ` +
        '(loops of create/start/wait/remove of `true`)',
    );
    const c = (x, w) => String(x).padStart(w);
    lines.push(`    ${'calls'.padEnd(6)}${c('daemon runs/s', 14)}${c('p50 ms', 9)}${c('p95 ms', 9)}${c('hits', 9)}${c('churn/s', 10)}${c('p50 ms', 9)}${c('p95 ms', 9)}${c('daemon/churn', 14)}`);
    for (const l of tp.levels) {
      const d = l.daemon;
      const ch = l.churn;
      const hits = typeof d?.pool_hits === 'number' ? `${d.pool_hits}/${d.pool_hits + d.pool_misses}` : '-';
      const errs = (d?.errors ? `  daemon errors ${d.errors}` : '') + (ch?.errors ? `  churn errors ${ch.errors}` : '');
      lines.push(
        `    ${String(l.concurrency).padEnd(6)}${c(f1(d?.runs_per_s), 14)}${c(f1(d?.latency_ms?.p50), 9)}${c(f1(d?.latency_ms?.p95), 9)}${c(hits, 9)}` +
          `${c(f1(ch?.runs_per_s), 10)}${c(f1(ch?.latency_ms?.p50), 9)}${c(f1(ch?.latency_ms?.p95), 9)}${c(f2(l.daemon_over_churn), 14)}${errs}`,
      );
    }
  } else miss('6 sustained throughput', tp?.error ? `FAILED: ${tp.error.split('\n')[0].slice(0, 80)}` : tp?.skipped || 'not measured');
  const rs = m.resources;
  if (rs?.before && rs?.after) {
    lines.push(
      `  7 daemon over ${rs.runs.runs} runs (c=${rs.runs.concurrency}): VmRSS ${rs.before.rss_kib} -> ${rs.after.rss_kib} KiB (${rs.rss_growth_kib >= 0 ? '+' : ''}${rs.rss_growth_kib}), ` +
        `fds ${rs.before.fds} -> ${rs.after.fds}, threads ${rs.before.threads} -> ${rs.after.threads}` +
        (rs.runs.errors ? `, ${rs.runs.errors} errors` : ''),
    );
  } else miss('7 daemon RSS/fds', rs?.error ? `FAILED: ${rs.error.split('\n')[0].slice(0, 80)}` : rs?.skipped || 'not measured');
  lines.push('  ratios and targets (reported, not enforced):');
  for (const t of doc.targets) {
    const v = t.value === null ? 'n/a' : String(t.value);
    lines.push(`    ${t.name.padEnd(44)} ${v.padStart(8)}   target ${t.target.padEnd(10)} ${t.met === null ? 'n/a' : t.met ? 'met' : 'NOT met'}`);
  }
  const rt = doc.ratios || {};
  if (rt.warm_over_floor_held_python != null || rt.warm_over_floor_held_javascript != null) {
    lines.push(
      `    (warm/floor with the attach held, p50: python ${rt.warm_over_floor_held_python ?? 'n/a'}, ` +
        `javascript ${rt.warm_over_floor_held_javascript ?? 'n/a'})`,
    );
  }
  if (doc.problems?.length) lines.push(`  problems: ${doc.problems.length} (see "problems" in ${doc.out_name})`);
  return lines;
}

function targets(m) {
  const p50 = (x) => x?.stats?.p50;
  const warmPy = p50(m.warm?.items?.python_hello);
  const warmJs = p50(m.warm?.items?.js_hello);
  const t = [];
  const add = (name, value, target, met) => t.push({ name, value, target, met: value === null ? null : met(value) });
  add('2/1 warm/floor python (p50)', ratio(warmPy, p50(m.floor?.python)), `<= ${TARGETS.warm_over_floor_max}`, (v) => v <= TARGETS.warm_over_floor_max);
  add('2/1 warm/floor javascript (p50)', ratio(warmJs, p50(m.floor?.javascript)), `<= ${TARGETS.warm_over_floor_max}`, (v) => v <= TARGETS.warm_over_floor_max);
  add('2/5 warm python/warm pyodide (p50)', ratio(warmPy, p50(m.pyodide?.warm)), `<= ${TARGETS.warm_over_pyodide_max}`, (v) => v <= TARGETS.warm_over_pyodide_max);
  add('pandas warm p50 ms', r2(p50(m.warm?.items?.pandas)) ?? null, `<= ${TARGETS.pandas_warm_p50_ms_max}`, (v) => v <= TARGETS.pandas_warm_p50_ms_max);
  add('4/2 peer/warm python (p50)', ratio(p50(m.peer?.python), warmPy), `>= ${TARGETS.peer_over_warm_min}`, (v) => v >= TARGETS.peer_over_warm_min);
  add('4/2 peer/warm javascript (p50)', ratio(p50(m.peer?.javascript), warmJs), `>= ${TARGETS.peer_over_warm_min}`, (v) => v >= TARGETS.peer_over_warm_min);
  for (const l of m.throughput?.levels || []) {
    if (l.concurrency === 1) continue;
    add(`6 runs/s over churn at c=${l.concurrency}`, l.daemon_over_churn, `>= ${TARGETS.runs_over_churn_min}`, (v) => v >= TARGETS.runs_over_churn_min);
  }
  const rs = m.resources;
  add('7 VmRSS growth KiB', rs?.after ? rs.rss_growth_kib : null, `<= ${TARGETS.rss_growth_kib_max}`, (v) => v <= TARGETS.rss_growth_kib_max);
  add('7 open fds growth', rs?.after ? rs.fd_growth : null, `<= ${TARGETS.fd_growth_max}`, (v) => v <= TARGETS.fd_growth_max);
  return t;
}

// ---- the run -----------------------------------------------------------------

function baseDoc() {
  return {
    benchmark: 'warm pool: hello world by every approach, side by side on one engine (tests/bench/pool.mjs)',
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    machine: {
      nproc: os.cpus().length,
      kernel: os.release(),
      cpu: os.cpus()[0]?.model ?? null,
      loadavg_before: os.loadavg().map((x) => x.toFixed(2)).join(' '),
    },
    commit: spawnSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim() || 'unknown',
    node_version: process.version,
  };
}

function writeDoc(doc) {
  mkdirSync(path.dirname(opt.out), { recursive: true });
  const { out_name: _omit, ...plain } = doc;
  writeFileSync(opt.out, JSON.stringify(plain, null, 2) + '\n');
}

/** Fraction of all CPUs busy over ms (from /proc/stat), or null. */
async function cpuBusy(ms = 1000) {
  const read = () => {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const idle = f[3] + (f[4] || 0); // idle + iowait
    return { idle, total: f.reduce((a, b) => a + b, 0) };
  };
  try {
    const a = read();
    await sleep(ms);
    const b = read();
    return b.total > a.total ? r2(1 - (b.idle - a.idle) / (b.total - a.total)) : null;
  } catch {
    return null;
  }
}

async function main() {
  const samples = count('samples', 1);
  const seconds = count('seconds', 1);
  const runs = count('runs', 1);
  const freshRuns = count('fresh', 0);
  const engineUrl = opt.engine.startsWith('unix://') ? opt.engine : `unix://${opt.engine}`;
  const engine = new Engine(engineUrl.slice('unix://'.length), opt['run-id']);
  const doc = {
    ...baseDoc(),
    engine_url: engineUrl,
    runtime: opt.runtime || null,
    binary: path.relative(ROOT, opt.bin) || opt.bin,
    settings: { samples, seconds, runs, fresh_runs: freshRuns, concurrency: CONCURRENCY, rss_concurrency: RSS_CONCURRENCY, run_id: opt['run-id'] },
    measures: {},
    problems: [],
    out_name: path.relative(ROOT, opt.out) || opt.out,
  };
  doc.machine.cpu_busy_before = await cpuBusy();
  const m = doc.measures;
  let stopping = false;
  const problem = (what, e) => {
    if (stopping) return String(e?.message || e); // an interrupted run: its failures are ours
    const msg = `${what}: ${String(e?.message || e)}`;
    doc.problems.push(msg);
    log(`FAILED ${msg.split('\n')[0]}`);
    return msg;
  };
  const daemons = [];
  const stopAll = async () => {
    await Promise.all(daemons.map((d) => d.close().catch(() => {})));
    await removeOwnedBy(engine, daemons.map((d) => d.pid)).catch(() => {});
    await engine.cleanup().catch(() => {});
  };
  for (const [sig, code] of [['SIGINT', 130], ['SIGTERM', 143]]) {
    process.on(sig, () => {
      if (stopping) return;
      stopping = true;
      log(`${sig}: removing what this run created`);
      stopAll().finally(() => process.exit(code));
    });
  }

  try {
    doc.engine = await engineFacts(engine);
    const runtimeArgs = opt.runtime ? ['--runtime', opt.runtime] : [];
    const help = spawnSync(opt.bin, ['--help'], { encoding: 'utf8' }).stdout || '';
    const poolSupported = help.includes('--pool-size');
    doc.daemon_has_pool = poolSupported;
    const hardened = {
      python: warmCreateBody(opt.bin, 'python', opt.runtime),
      javascript: warmCreateBody(opt.bin, 'javascript', opt.runtime),
    };
    // Podman takes a seccomp profile only as a path, as the daemon hands it
    // one (src/backend/docker/seccomp_file.c): the same profile, as a file
    // beside the results.
    if (doc.engine.kind === 'podman') {
      for (const [lang, body] of Object.entries(hardened)) seccompAsFile(body, path.resolve(path.dirname(opt.out), `seccomp-${lang}.json`));
    }
    if (opt.runtime) {
      const why = await runtimeProblem(engine, doc.engine, hardened.python);
      if (why) {
        Object.assign(doc, { result: 'skipped', reason: why });
        return doc;
      }
    }
    const engineArgs = ['--engine', engineUrl, ...runtimeArgs];

    // 1. floor
    m.floor = {};
    for (const hold of [false, true]) {
      for (const lang of ['python', 'javascript']) {
        const key = hold ? `${lang}_held` : lang;
        try {
          m.floor[key] = await measureFloor(engine, hardened[lang], lang, samples, { hold });
          log(`floor ${key}: p50 ${m.floor[key].stats.p50} ms, p95 ${m.floor[key].stats.p95} ms`);
        } catch (e) {
          m.floor[key] = { error: problem(`floor ${key}`, e) };
        }
      }
    }

    // 4. peers' container per call (engine only, like the floor)
    m.peer = {};
    for (const lang of ['python', 'javascript']) {
      try {
        m.peer[lang] = await measurePeer(engine, peerCreateBody(hardened[lang], lang), lang, samples);
        log(`peer ${lang}: p50 ${m.peer[lang].stats.p50} ms, p95 ${m.peer[lang].stats.p95} ms`);
      } catch (e) {
        m.peer[lang] = { error: problem(`peer ${lang}`, e) };
      }
    }

    // 3. no pool; then 2, 6, 7 on one warm-pool daemon
    const runSection = async (key, name, args, pool, { load }) => {
      const sec = { args };
      m[key] = sec;
      let d;
      try {
        d = await Daemon.start(name, [...engineArgs, ...args]);
        daemons.push(d);
        sec.pid = d.pid;
        sec.log = path.relative(ROOT, d.logFile);
        const env = pool ? (await d.waitFull(['python', 'javascript'])).env : await d.environment();
        if (env.pool) sec.pool = env.pool;
        if (pool && !Daemon.profiles(env, 'python').length) throw new Error(`the environment resource lists no python pool profile: ${JSON.stringify(env.pool ?? null)}`);
        sec.items = {};
        for (const it of ITEMS) {
          try {
            sec.items[it.key] = await measureItem(d, it, samples, pool);
          } catch (e) {
            sec.items[it.key] = { error: problem(`${name} ${it.label}`, e) };
            if (!d.alive()) throw new Error(`the daemon ${JSON.stringify(d.exit)}; stderr tail:\n${d.tail}`);
          }
        }
        if (load) await measureLoad(d, pool);
        if (pool) sec.pool_after = (await d.environment()).pool;
      } catch (e) {
        sec.error = problem(`daemon '${name}'`, e);
      } finally {
        if (d) {
          const exit = await d.close();
          sec.exit = exit;
          if (exit?.hung || exit?.code !== 0) problem(`daemon '${name}'`, `did not exit cleanly: ${JSON.stringify(exit)}; stderr tail:\n${d.tail}`);
          const left = await leftBy(engine, d.pid).catch(() => []);
          if (left.length) {
            problem(`daemon '${name}'`, `left ${left.length} container(s) behind after exiting: ${left.join(' ')}`);
            await removeOwnedBy(engine, [d.pid]).catch(() => {});
          }
        }
      }
    };

    // 6 and 7 on daemon d.
    const measureLoad = async (d, pool) => {
      const churnBody = churnCreateBody(hardened.python);
      m.throughput = { daemon: pool ? 'warm pool, defaults' : 'no pool (this daemon has none)', levels: [] };
      try {
        for (const c of CONCURRENCY) {
          if (pool) await d.waitFull(['python']);
          const before = pool ? await d.environment() : null;
          const dr = await driveRuns(d, c, { seconds });
          if (pool) {
            const after = await d.environment();
            dr.pool_hits = sumCounter(after, 'python', 'hits') - sumCounter(before, 'python', 'hits');
            dr.pool_misses = sumCounter(after, 'python', 'misses') - sumCounter(before, 'python', 'misses');
          }
          if (dr.errors) problem(`throughput c=${c}`, `${dr.errors} failed calls, e.g. ${dr.error_examples[0]}`);
          // The daemon's refills settle before the engine is measured alone.
          if (pool) await d.waitFull(['python', 'javascript']);
          const ch = await measureChurn(engine, churnBody, c, seconds);
          if (ch.errors) problem(`churn c=${c}`, `${ch.errors} failed loops, e.g. ${ch.error_examples[0]}`);
          const level = { concurrency: c, daemon: dr, churn: ch, daemon_over_churn: ratio(dr.runs_per_s, ch.runs_per_s) };
          m.throughput.levels.push(level);
          log(`c=${c}: daemon ${dr.runs_per_s} runs/s, churn ${ch.runs_per_s}/s`);
          if (!d.alive()) throw new Error(`the daemon ${JSON.stringify(d.exit)}`);
        }
      } catch (e) {
        m.throughput.error = problem('throughput', e);
      }
      m.resources = { pid: d.pid };
      try {
        const settle = async () => {
          if (pool) await d.waitFull(['python', 'javascript']);
          await sleep(1000);
        };
        await settle();
        m.resources.before = procStats(d.pid);
        log(`${runs} runs at c=${RSS_CONCURRENCY} for VmRSS/fds (before: ${JSON.stringify(m.resources.before)})`);
        m.resources.runs = await driveRuns(d, RSS_CONCURRENCY, { total: runs, progress: Math.max(1, Math.round(runs / 8)) });
        if (m.resources.runs.errors) problem('RSS runs', `${m.resources.runs.errors} failed calls, e.g. ${m.resources.runs.error_examples[0]}`);
        if (!d.alive()) throw new Error(`the daemon ${JSON.stringify(d.exit)}`);
        await settle();
        m.resources.after = procStats(d.pid);
        m.resources.rss_growth_kib = m.resources.after.rss_kib - m.resources.before.rss_kib;
        m.resources.fd_growth = m.resources.after.fds - m.resources.before.fds;
        log(`after: ${JSON.stringify(m.resources.after)}`);
      } catch (e) {
        m.resources.error = problem('RSS/fds', e);
      }
    };

    if (poolSupported) {
      await runSection('no_pool', 'no-pool', ['--pool-size', '0'], false, { load: false });
      // The pools at the table's sizes, as before they followed the calls:
      // the fd and RSS readings compare like with like (the steady section,
      // steady.mjs, measures the pools following the calls).
      await runSection('warm', 'warm', ['--pool-max-total', '0'], true, { load: true });
    } else {
      log(`${opt.bin} has no --pool-size: the warm-pool measures are skipped`);
      m.warm = { skipped: `${path.relative(ROOT, opt.bin)} has no --pool-size (a build without the pool)` };
      await runSection('no_pool', 'no-pool', [], false, { load: true });
      m.no_pool.note = 'no --pool-size flag: this daemon has no pool at all';
    }

    // 5. Pyodide
    m.pyodide = {};
    try {
      m.pyodide.warm = await measurePyodide(false, samples);
    } catch (e) {
      m.pyodide.warm = { error: problem('pyodide warm', e) };
    }
    if (freshRuns > 0) {
      try {
        m.pyodide.fresh = await measurePyodide(true, freshRuns);
      } catch (e) {
        m.pyodide.fresh = { error: problem('pyodide fresh', e) };
      }
    }
    for (const k of ['warm', 'fresh']) {
      if (m.pyodide[k]?.network_requests) problem(`pyodide ${k}`, `${m.pyodide[k].network_requests} network request(s) attempted (refused)`);
    }
    doc.result = doc.problems.length ? 'failed' : 'ok';
  } catch (e) {
    problem('pool bench', e);
    doc.result = 'failed';
  } finally {
    await stopAll();
  }
  doc.ratios = {
    png_over_plain_python: ratio(m.warm?.items?.python_png?.stats?.p50, m.warm?.items?.python_hello?.stats?.p50),
    warm_over_floor_python: ratio(m.warm?.items?.python_hello?.stats?.p50, m.floor?.python?.stats?.p50),
    warm_over_floor_javascript: ratio(m.warm?.items?.js_hello?.stats?.p50, m.floor?.javascript?.stats?.p50),
    warm_over_floor_held_python: ratio(m.warm?.items?.python_hello?.stats?.p50, m.floor?.python_held?.stats?.p50),
    warm_over_floor_held_javascript: ratio(m.warm?.items?.js_hello?.stats?.p50, m.floor?.javascript_held?.stats?.p50),
    warm_over_pyodide: ratio(m.warm?.items?.python_hello?.stats?.p50, m.pyodide?.warm?.stats?.p50),
    peer_over_warm_python: ratio(m.peer?.python?.stats?.p50, m.warm?.items?.python_hello?.stats?.p50),
    peer_over_warm_javascript: ratio(m.peer?.javascript?.stats?.p50, m.warm?.items?.js_hello?.stats?.p50),
  };
  doc.targets = targets(m);
  doc.machine.loadavg_after = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  return doc;
}

// ---- entry -------------------------------------------------------------------

if (opt.print) {
  const doc = JSON.parse(readFileSync(opt.print, 'utf8'));
  doc.out_name = opt.print;
  console.log(format(doc).join('\n'));
} else if (opt.sweep) {
  if (!opt.engine) {
    console.error('pool.mjs --sweep needs --engine');
    process.exit(2);
  }
  await sweep();
} else if (opt.skip !== undefined) {
  if (!opt.out) {
    console.error('pool.mjs --skip needs --out');
    process.exit(2);
  }
  const doc = { ...baseDoc(), engine_url: opt.engine || null, runtime: opt.runtime || null, result: 'skipped', reason: opt.skip };
  writeDoc(doc);
  console.log(format(doc).join('\n'));
} else {
  if (!opt.engine || !opt.out) {
    console.error('usage: pool.mjs --engine unix:///SOCK --out FILE.json [options] | --print FILE | --skip REASON --out FILE | --sweep ...');
    process.exit(2);
  }
  const doc = await main();
  writeDoc(doc);
  console.log(format(doc).join('\n'));
  process.exit(doc.result === 'failed' ? 1 : 0);
}
