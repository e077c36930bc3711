// The "sessions" section of `make bench` (scripts/bench.sh): code sessions
// measured beside one-shot runs, in one run, on one engine.
//
//   node tests/bench/sessions.mjs --engine unix:///SOCK --out FILE.json [options]
//       measures, writes FILE.json, prints the table on stdout (progress on
//       stderr); exits 1 when something broke (a wrong answer, a daemon that
//       died), never because a figure is low
//   node tests/bench/sessions.mjs --skip REASON --out FILE.json
//       records and prints that the section was skipped
//
// Options: --bin (daemon, default build/mcp-sandboxd), --samples N (per
// item, default 30), --calls N (session calls between the two RSS/fd
// readings, default 1000), --csv-mb N (the data file, default 200),
// --log-dir DIR (daemon logs).
//
// What is measured (p50/p95 of each), over stdio with the official SDK:
//   1. create_session with the pool full (each session closed after), and
//      the first call of a fresh session
//   2. print(1) in a live session next to the same one-shot warm call (the
//      pool full before each): the ratio, target <= 1.2
//   3. data loaded once: one call writes a --csv-mb CSV and runs
//      df = pd.read_csv(...); later calls ask df.describe(). The one-shot
//      way re-reads the file in every call: its in-program read+describe
//      time (generation excluded) plus the one-shot warm p50 of item 2.
//      Its own daemon (--tmpfs-mb, --max-memory-mb raised; the session has
//      3072 MB)
//   4. the daemon's VmRSS and open fds before and after --calls session
//      calls (4 sessions, one call at a time each)
// Ratios and targets are reported, never asserted.

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { stats } from './engine.mjs';
import { StdioDaemon, countOption, procStats, sectionBegin } from './stdio_daemon.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const RSS_SESSIONS = 4;
const DF_SESSION_MB = 3072;
const DF_SAMPLES = 5;
const TARGETS = { session_over_oneshot_max: 1.2 };

const log = (m) => process.stderr.write(`sessions: ${m}\n`);
const r2 = (x) => (typeof x === 'number' && Number.isFinite(x) ? Math.round(x * 100) / 100 : null);

const { values: opt } = parseArgs({
  options: {
    engine: { type: 'string' },
    bin: { type: 'string', default: path.join(ROOT, 'build', 'mcp-sandboxd') },
    out: { type: 'string' },
    samples: { type: 'string', default: '30' },
    calls: { type: 'string', default: '1000' },
    'csv-mb': { type: 'string', default: '200' },
    'log-dir': { type: 'string', default: path.join(ROOT, 'build', 'bench', 'logs') },
    skip: { type: 'string' },
  },
  strict: true,
});

const count = (name, min) => countOption(opt, name, min, 'sessions.mjs');

const Daemon = {
  start: (name, args) =>
    StdioDaemon.start('sessions', name, args, { bin: opt.bin, engine: opt.engine, logDir: opt['log-dir'] }, log),
};

function expect(sc, stdout, what) {
  if (sc?.status !== 'ok' || sc.stdout !== stdout) throw new Error(`${what}: ${JSON.stringify(sc).slice(0, 600)}`);
}

// ---- 1 and 2: create, print(1) in a session vs one-shot --------------------------

async function createAndCalls(d, n) {
  const create = [];
  const first = [];
  for (let i = 0; i < n; i++) {
    await d.poolFull();
    const c = await d.call('create_session', { language: 'python' });
    create.push(c.ms);
    const f = await d.call('run_python_code', { session_id: c.sc.session_id, code: 'print(1)' });
    expect(f.sc, '1\n', 'first call');
    first.push(f.ms);
    await d.call('close_session', { session_id: c.sc.session_id });
  }
  const { sc } = await d.call('create_session', { language: 'python' });
  const id = sc.session_id;
  const persistence = sc.persistence;
  await d.call('run_python_code', { session_id: id, code: 'print(1)' }); // warm-up
  const session = [];
  const oneshot = [];
  for (let i = 0; i < n; i++) {
    const s = await d.call('run_python_code', { session_id: id, code: 'print(1)' });
    expect(s.sc, '1\n', 'session print(1)');
    session.push(s.ms);
    await d.poolFull();
    const o = await d.call('run_python_code', { code: 'print(1)' });
    expect(o.sc, '1\n', 'one-shot print(1)');
    oneshot.push(o.ms);
  }
  await d.call('close_session', { session_id: id });
  return { persistence, create: stats(create), first_call: stats(first), session: stats(session), oneshot: stats(oneshot) };
}

// ---- 3: data loaded once vs re-read ------------------------------------------------

// Writes a CSV of about mb MiB fast: one block of random rows, repeated.
const MAKE_CSV = (mb) =>
  [
    'import numpy as np',
    'rows = np.random.default_rng(1).random((20000, 4))',
    "block = 'a,b,c,d\\n' + '\\n'.join(','.join('%.6f' % v for v in r) for r in rows) + '\\n'",
    'body = block.split("\\n", 1)[1]',
    `with open('data.csv', 'w') as f:`,
    '    f.write(block)',
    `    for _ in range(max(1, ${mb} * 1048576 // len(body))):`,
    '        f.write(body)',
  ].join('\n');

async function dataOnce(mb) {
  const d = await Daemon.start('df', ['--pool-size', '0', '--tmpfs-mb', String(mb * 2 + 128), '--max-memory-mb', '4096', '--max-timeout-ms', '600000']);
  try {
    const { sc } = await d.call('create_session', { language: 'python', memory_mb: DF_SESSION_MB, timeout_ms: 600_000 });
    const id = sc.session_id;
    const load = await d.call('execute_code', { session_id: id, code: `${MAKE_CSV(mb)}\nimport pandas as pd\ndf = pd.read_csv('data.csv')\nprint(len(df) > 0)` });
    expect(load.sc, 'True\n', 'load');
    const ask = [];
    for (let i = 0; i < DF_SAMPLES; i++) {
      const a = await d.call('execute_code', { session_id: id, code: 'print(df.describe().shape)' });
      expect(a.sc, '(8, 4)\n', 'describe');
      ask.push(a.ms);
    }
    // The one-shot way, timed inside the program so the file's generation
    // is left out: what every question would pay on top of a run's start.
    const reread = [];
    for (let i = 0; i < DF_SAMPLES; i++) {
      const code = `${MAKE_CSV(mb)}\nimport time, pandas as pd\nt0 = time.perf_counter()\ndf = pd.read_csv('data.csv')\nshape = df.describe().shape\nprint('%.1f' % ((time.perf_counter() - t0) * 1000))`;
      const r = await d.call('execute_code', { language: 'python', code, memory_mb: DF_SESSION_MB, timeout_ms: 600_000 });
      reread.push(Number(r.sc.stdout));
    }
    await d.call('close_session', { session_id: id });
    return { csv_mb: mb, load_ms: r2(load.ms), session_describe: stats(ask), oneshot_read_describe_in_program: stats(reread) };
  } finally {
    await d.close();
  }
}

// ---- 4: RSS and fds over many session calls -------------------------------------------

async function rssOver(d, calls) {
  const ids = [];
  for (let i = 0; i < RSS_SESSIONS; i++) ids.push((await d.call('create_session', { language: 'python' })).sc.session_id);
  for (const id of ids) await d.call('run_python_code', { session_id: id, code: 'print(1)' });
  const before = procStats(d.pid);
  let next = 0;
  await Promise.all(
    ids.map(async (id) => {
      while (next < calls) {
        next++;
        expect((await d.call('run_python_code', { session_id: id, code: 'print(1)' })).sc, '1\n', 'rss call');
      }
    }),
  );
  const after = procStats(d.pid);
  for (const id of ids) await d.call('close_session', { session_id: id });
  return { calls, sessions: RSS_SESSIONS, before, after, rss_growth_kib: after.rss_kib - before.rss_kib };
}

// ---- the table -------------------------------------------------------------------------

function table(res) {
  const lines = [];
  const p = (s) => (s ? `p50 ${s.p50} / p95 ${s.p95} ms` : 'n/a');
  const m = res.main;
  if (m) {
    lines.push(`  1 create_session (pool full): ${p(m.create)}; first call ${p(m.first_call)} (${m.persistence})`);
    lines.push(`  2 print(1): session ${p(m.session)}, one-shot warm ${p(m.oneshot)}; session/one-shot p50 ${res.ratio_session_over_oneshot} (target <= ${TARGETS.session_over_oneshot_max})`);
  }
  const df = res.df;
  if (df && !df.error) {
    lines.push(
      `  3 ${df.csv_mb} MiB CSV: loaded once in ${df.load_ms} ms; df.describe() in the session ${p(df.session_describe)}; ` +
        `one-shot re-read + describe in-program ${p(df.oneshot_read_describe_in_program)} (+ the one-shot start): ${res.ratio_oneshot_over_session}x`,
    );
  } else if (df?.error) lines.push(`  3 data once: FAILED: ${df.error.split('\n')[0].slice(0, 100)}`);
  const rs = res.rss;
  if (rs && !rs.error) {
    lines.push(`  4 daemon over ${rs.calls} session calls (${rs.sessions} sessions): VmRSS ${rs.before.rss_kib} -> ${rs.after.rss_kib} KiB, fds ${rs.before.fds} -> ${rs.after.fds}`);
  }
  return `code sessions (python, ${res.engine}):\n${lines.join('\n')}`;
}

// ---- main ----------------------------------------------------------------------------------

async function main() {
  if (!sectionBegin(opt, 'sessions.mjs', 'code sessions')) return;
  const n = count('samples', 1);
  const calls = count('calls', 1);
  const mb = count('csv-mb', 1);
  const res = { engine: opt.engine, targets: TARGETS, problems: [] };
  const d = await Daemon.start('main', ['--languages', 'python', '--pool-size', '2']);
  try {
    log(`1-2: create_session and print(1), ${n} samples each`);
    res.main = await createAndCalls(d, n);
    res.ratio_session_over_oneshot = r2(res.main.session.p50 / res.main.oneshot.p50);
    log(`4: ${calls} session calls`);
    res.rss = await rssOver(d, calls);
  } catch (e) {
    res.problems.push(String(e.stack || e));
  } finally {
    await d.close();
  }
  try {
    log(`3: a ${mb} MiB CSV loaded once vs re-read`);
    res.df = await dataOnce(mb);
    const oneshot = res.df.oneshot_read_describe_in_program.p50 + (res.main?.oneshot?.p50 ?? 0);
    res.ratio_oneshot_over_session = r2(oneshot / res.df.session_describe.p50);
  } catch (e) {
    res.df = { error: String(e.stack || e) };
    res.problems.push(res.df.error);
  }
  writeFileSync(opt.out, `${JSON.stringify(res, null, 2)}\n`);
  console.log(table(res));
  if (res.problems.length) {
    for (const p of res.problems) log(`problem: ${p}`);
    process.exit(1);
  }
}

await main();
