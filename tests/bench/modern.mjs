// The "modern" section of `make bench` (scripts/bench.sh): the MCP
// 2026-07-28 wire (stateless: params._meta names the revision on every
// request, no initialize, no Mcp-Session-Id) beside the 2025-11-25 wire
// (initialize, then Mcp-Session-Id on every request), in one run.
//
//   node tests/bench/modern.mjs --engine unix:///SOCK --out FILE.json [options] [KEY=VALUE...]
//       measures, writes FILE.json, prints the table on stdout (progress on
//       stderr); exits 1 when something broke, never because a figure is low
//   node tests/bench/modern.mjs --skip REASON --out FILE.json [KEY=VALUE...]
//       the warm runs are skipped (the reason recorded); the throughput
//       figures are still reported
//
// Options: --bin, --samples N (warm calls per wire and item, default 20),
// --load N (loops of warm runs loading the daemon in item 3, default 3),
// --log-dir DIR.
//
// What is measured:
//   1. tools/list throughput over HTTP: scripts/bench.sh runs wrk
//      (tests/bench/tools-list.lua, BENCH_WIRE=2025|modern) at one
//      mcp-sandboxd --http --pool-size 0 --max-code-sessions 0, two runs
//      of each wire alternating (2025, modern, modern, 2025), then at the
//      official SDK v2 server (tests/bench/sdk2-server.mjs) on the modern
//      wire and on its stateless 2025 fallback; it hands the figures over
//      as KEY=VALUE arguments (as to tests/bench/report.mjs; VALUE @FILE: a
//      JSON file's content): daemon_<wire>_<round>=@wrk.json,
//      sdk2_<wire>=@wrk.json, daemon_bytes_<wire>, sdk2_bytes_<wire>,
//      daemon_answer, sdk2_answer (ok, else what was wrong), daemon_state,
//      proc_before / proc_after (@ the throughput daemon's VmRSS, threads,
//      fds around the runs), loadavg, connections, seconds, sdk2_version,
//      node_version and bench.sh's common facts. Ratios: the best run of
//      each wire, modern/2025; ours modern over SDK v2 modern.
//   2. a warm run (run_python_code print(1), the pool full before each
//      call) over HTTP, p50/p95 on each wire, the wires alternating, at
//      mcp-sandboxd --http --languages python,javascript --pool-size 2; and
//      the time outside the run (the client's round trip less the run's
//      duration_ms)
//   3. the same while --load loops of warm javascript runs (console.log(1),
//      the wires alternating) load the same daemon all along, each loop
//      bounded in calls and the item in time: a loop's run waits for a
//      sandbox ready in javascript's pool, a measured one for one in
//      python's (not for a full pool), so the engine starts sandboxes of
//      both all along too
// Ratios (modern over 2025) are reported, never asserted.

import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { sleep, stats } from './engine.mjs';
import { HttpDaemon, WIRES } from './http_daemon.mjs';
import { f1, f2, meta, parseFacts, wrkLine, wrkSettings } from './report.mjs';
import { countOption, procStats } from './stdio_daemon.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
// Item 3's bounds: a background loop's calls (times --samples), the item's time.
const LOAD_CALLS_PER_SAMPLE = 4;
const LOAD_MAX_MS = 120_000;
// The background loops run this long before the first measured call.
const LOAD_SETTLE_MS = 1000;
// What a background loop runs, from its own pool (python's is the measured calls').
const LOAD_LANGUAGE = 'javascript';
const LOAD_RUN = ['run_js_code', 'console.log(1)'];

const log = (m) => process.stderr.write(`modern: ${m}\n`);
const r2 = (x) => (typeof x === 'number' && Number.isFinite(x) ? Math.round(x * 100) / 100 : null);
const ratio = (a, b) => (a > 0 && b > 0 ? r2(a / b) : null);

const { values: opt, positionals } = parseArgs({
  options: {
    engine: { type: 'string' },
    bin: { type: 'string', default: path.join(ROOT, 'build', 'mcp-sandboxd') },
    out: { type: 'string' },
    samples: { type: 'string', default: '20' },
    load: { type: 'string', default: '3' },
    'log-dir': { type: 'string', default: path.join(ROOT, 'build', 'bench', 'logs') },
    skip: { type: 'string' },
  },
  allowPositionals: true,
  strict: true,
});

const count = (name, min) => countOption(opt, name, min, 'modern.mjs');

// ---- 1. throughput (measured by bench.sh) -------------------------------------------

function throughput(o) {
  const runs = (wire) =>
    Object.keys(o)
      .filter((k) => new RegExp(`^daemon_${wire}_\\d+$`).test(k))
      .sort()
      .map((k) => o[k]);
  const best = (ws) => ws.reduce((a, b) => ((b?.requests_per_s ?? 0) > (a?.requests_per_s ?? 0) ? b : a), null);
  const daemon = {};
  for (const wire of WIRES) {
    const ws = runs(wire);
    daemon[wire] = {
      runs_requests_per_s: ws.map((w) => w?.requests_per_s ?? null),
      best: best(ws),
      response_bytes: o[`daemon_bytes_${wire}`] ?? null,
    };
  }
  const dOk = o.daemon_state === 'alive' && o.daemon_answer === 'ok';
  const sOk = o.sdk2_answer === 'ok';
  const rps = (w) => w?.requests_per_s;
  const doc = {
    benchmark: 'tools/list over streamable HTTP: the 2026-07-28 wire next to the 2025-11-25 wire on one mcp-sandboxd, the official SDK v2 server as the anchor',
    ...meta(o),
    wrk: { ...wrkSettings(o, o.connections, o.seconds), command: `BENCH_WIRE=2025|modern wrk -t${o.threads} -c${o.connections} -d${o.seconds}s -s tests/bench/tools-list.lua` },
    requests: {
      2025: 'POST /mcp {"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}; MCP-Protocol-Version: 2025-11-25, Mcp-Session-Id of an initialize done with curl',
      modern:
        'POST /mcp {"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}; ' +
        'MCP-Protocol-Version: 2026-07-28, Mcp-Method: tools/list, no session',
    },
    daemon: {
      server: 'mcp-sandboxd --http --pool-size 0 --max-code-sessions 0 (one daemon for both wires; runs alternating 2025, modern, modern, 2025)',
      binary: o.bin,
      ...daemon,
      daemon_after_runs: o.daemon_state ?? null,
      answer_after_runs: o.daemon_answer ?? null,
      proc_before: o.proc_before ?? null,
      proc_after: o.proc_after ?? null,
    },
    sdk2: {
      server:
        `@modelcontextprotocol/server ${o.sdk2_version ?? '?'} createMcpHandler (stateless, a fresh McpServer per request; ` +
        `2025 requests through its legacy: 'stateless' fallback), @hono/node-server on node:http, node ${o.node_version ?? '?'}, one process`,
      script: 'tests/bench/sdk2-server.mjs',
      ...Object.fromEntries(WIRES.map((w) => [w, { wrk: o[`sdk2_${w}`] ?? null, response_bytes: o[`sdk2_bytes_${w}`] ?? null }])),
      answer_after_runs: o.sdk2_answer ?? null,
    },
    ratio_modern_over_2025: dOk ? ratio(rps(daemon.modern.best), rps(daemon['2025'].best)) : null,
    ratio_modern_over_sdk2_modern: dOk && sOk ? ratio(rps(daemon.modern.best), rps(o.sdk2_modern)) : null,
    ratio_2025_over_sdk2_2025: dOk && sOk ? ratio(rps(daemon['2025'].best), rps(o.sdk2_2025)) : null,
  };
  const runsText = (wire) => daemon[wire].runs_requests_per_s.map((x) => f1(x ?? 0)).join(', ');
  const lines = [
    `  1 tools/list (wrk -t${o.threads} -c${o.connections} -d${o.seconds}s, load ${o.loadavg}), the best run of each wire:`,
    wrkLine('mcp-sandboxd, 2025 wire  ', daemon['2025'].best),
    wrkLine('mcp-sandboxd, modern wire', daemon.modern.best) + `; daemon ${o.daemon_state ?? '?'}, answer ${o.daemon_answer ?? '?'}`,
    `    runs alternating, req/s: 2025 ${runsText('2025')}; modern ${runsText('modern')}`,
    wrkLine('SDK v2, modern wire      ', o.sdk2_modern),
    wrkLine('SDK v2, 2025 wire        ', o.sdk2_2025) + `; answer ${o.sdk2_answer ?? '?'}`,
    `    ratio modern/2025: ${doc.ratio_modern_over_2025 ?? 'n/a'}; ours/SDK v2 on the modern wire: ${doc.ratio_modern_over_sdk2_modern ?? 'n/a'}` +
      ` (on the 2025 wire: ${doc.ratio_2025_over_sdk2_2025 ?? 'n/a'})`,
  ];
  if (o.proc_before && o.proc_after) {
    const [a, b] = [o.proc_before, o.proc_after];
    lines.push(`    daemon over the runs: VmRSS ${a.rss_kib} -> ${b.rss_kib} KiB, threads ${a.threads} -> ${b.threads}, fds ${a.fds} -> ${b.fds}`);
  }
  return { doc, lines };
}

// ---- 2, 3. warm runs ----------------------------------------------------------------------

async function warmRun(d, wire, [tool, code] = ['run_python_code', 'print(1)']) {
  const r = await d.call(tool, { code }, wire);
  if (r.sc?.status !== 'ok' || r.sc.stdout.trim() !== '1') throw new Error(`${code} on the ${wire} wire: ${JSON.stringify(r.sc).slice(0, 600)}`);
  return r;
}

/** n warm runs per wire, alternating (which wire goes first too), each
 * once ready() resolves; stops early when until() says so. */
async function series(d, n, { ready, until = () => false }) {
  const ms = { 2025: [], modern: [] };
  const outside = { 2025: [], modern: [] };
  for (let i = 0; i < n && !until(); i++) {
    for (const wire of i % 2 ? ['modern', '2025'] : ['2025', 'modern']) {
      await ready();
      const r = await warmRun(d, wire);
      ms[wire].push(r.ms);
      if (typeof r.sc.duration_ms === 'number') outside[wire].push(r.ms - r.sc.duration_ms);
    }
  }
  const res = {};
  for (const wire of WIRES) res[wire] = stats(ms[wire]);
  res.outside_run = Object.fromEntries(WIRES.map((w) => [w, stats(outside[w])]));
  res.ratio_p50 = ratio(res.modern?.p50, res['2025']?.p50);
  res.ratio_p95 = ratio(res.modern?.p95, res['2025']?.p95);
  return res;
}

async function underLoad(d, n, loops) {
  const maxCalls = LOAD_CALLS_PER_SAMPLE * n;
  const deadline = Date.now() + LOAD_MAX_MS;
  let stop = false;
  let failed = null;
  let calls = 0;
  let ended = 0;
  const bg = [];
  for (let k = 0; k < loops; k++) {
    bg.push(
      (async () => {
        for (let j = 0; !stop && j < maxCalls && Date.now() < deadline; j++) {
          await d.poolReady(1, LOAD_LANGUAGE); // warm: paced by the pool's refill
          if (stop) break;
          await warmRun(d, WIRES[(k + j) % 2], LOAD_RUN);
          calls++;
        }
        if (!stop) ended++;
      })().catch((e) => {
        failed ??= e;
        stop = true;
      }),
    );
  }
  let res;
  try {
    await sleep(LOAD_SETTLE_MS);
    res = await series(d, n, { ready: () => d.poolReady(1), until: () => stop || Date.now() >= deadline });
  } finally {
    stop = true;
    await Promise.all(bg);
  }
  if (failed) throw failed;
  return { loops, run: `${LOAD_RUN[0]} ${LOAD_RUN[1]}`, max_calls_per_loop: maxCalls, max_ms: LOAD_MAX_MS, background_calls: calls, loops_ended_before_the_series: ended, ...res };
}

async function warmRuns(res) {
  const n = count('samples', 1);
  const loops = count('load', 0);
  const args = ['--languages', 'python,javascript', '--pool-size', '2'];
  res.daemon = `mcp-sandboxd --http 127.0.0.1:0 ${args.join(' ')}`;
  res.call = 'run_python_code {"code":"print(1)"}, raw JSON-RPC over keep-alive node:http, Accept: application/json, text/event-stream';
  res.samples = n;
  const d = await HttpDaemon.start('modern', 'warm', args, { bin: opt.bin, engine: opt.engine, logDir: opt['log-dir'] }, log);
  try {
    // One unrecorded call on each wire: first-use costs are not a wire's.
    await d.poolFull();
    for (const wire of WIRES) await warmRun(d, wire);
    // Both pools full: nothing starts while the idle calls run.
    await Promise.all([d.poolFull('python'), d.poolFull('javascript')]);
    res.proc_before = procStats(d.pid);
    log(`2: warm print(1), ${n} samples per wire, the pool full before each`);
    res.idle = await series(d, n, { ready: () => d.poolFull() });
    if (loops > 0) {
      log(`3: the same while ${loops} loops of ${LOAD_RUN.join(' ')} load the daemon`);
      res.load = await underLoad(d, n, loops);
    }
    res.proc_after = procStats(d.pid);
  } finally {
    await d.close();
  }
}

function latencyLines(res) {
  const p = (s) => (s ? `p50 ${f2(s.p50)} / p95 ${f2(s.p95)} ms` : 'n/a');
  const item = (s) =>
    `2025 ${p(s['2025'])}, modern ${p(s.modern)}; ratio p50 ${s.ratio_p50 ?? 'n/a'}, p95 ${s.ratio_p95 ?? 'n/a'}` +
    `\n      outside the run (round trip less duration_ms) p50: 2025 ${f2(s.outside_run['2025']?.p50)}, modern ${f2(s.outside_run.modern?.p50)} ms`;
  if (res.skipped) return [`  2-3 warm runs: SKIPPED - ${res.skipped}`];
  const lines = [];
  if (res.idle) lines.push(`  2 warm print(1) over HTTP, idle (${res.idle['2025']?.n ?? 0} per wire, pool full before each): ${item(res.idle)}`);
  if (res.load) {
    lines.push(
      `  3 the same while ${res.load.loops} loops of ${res.load.run} load the daemon (${res.load.modern?.n ?? 0} per wire, ` +
        `${res.load.background_calls} background runs): ${item(res.load)}`,
    );
  }
  if (res.proc_before && res.proc_after) {
    const [a, b] = [res.proc_before, res.proc_after];
    lines.push(`    daemon over the runs: VmRSS ${a.rss_kib} -> ${b.rss_kib} KiB, threads ${a.threads} -> ${b.threads}, fds ${a.fds} -> ${b.fds}`);
  }
  return lines;
}

async function main() {
  if (!opt.out || (!opt.skip && !opt.engine)) {
    console.error(`modern.mjs: --out FILE.json${opt.skip ? '' : ' and --engine'} required`);
    process.exit(2);
  }
  let facts;
  try {
    facts = parseFacts(positionals);
  } catch (e) {
    console.error(`modern.mjs: ${e.message}`);
    process.exit(2);
  }
  const problems = [];
  const tp = throughput(facts);
  const warm = { engine: opt.engine ?? null };
  if (opt.skip) {
    warm.skipped = opt.skip;
  } else {
    try {
      await warmRuns(warm);
    } catch (e) {
      problems.push(String(e.stack || e));
    }
  }
  const doc = { throughput: tp.doc, warm_runs: warm, problems };
  writeFileSync(opt.out, `${JSON.stringify(doc, null, 2)}\n`);
  console.log([`modern wire (2026-07-28) next to the 2025-11-25 wire, over HTTP (warm runs: ${opt.engine ?? 'no engine'}):`, ...tp.lines, ...latencyLines(warm)].join('\n'));
  if (problems.length) {
    for (const p of problems) log(`problem: ${p}`);
    process.exit(1);
  }
}

await main();
