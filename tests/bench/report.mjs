// JSON side of scripts/bench.sh: checks tools/list answers, writes the result
// files and prints the human summary.
//
//   node tests/bench/report.mjs check FILE
//       FILE holds an HTTP response body to a tools/list with id 1 (JSON, or
//       an SSE stream carrying it). Exits 0 and prints "3 tools (...)" when it
//       is a well-formed JSON-RPC result listing exactly run_python_code,
//       run_js_code and execute_code, each with an object inputSchema;
//       otherwise prints why on stdout and exits 1.
//   node tests/bench/report.mjs http|survival|latency OUT.json KEY=VALUE...
//       Builds that result file from the values (VALUE: a number, true,
//       false, @FILE for a JSON file's content, @@FILE for a text file's
//       content, else a string; versions, commit and kernel always stay
//       strings), writes it to OUT.json and prints a summary
//       on stdout. Never judges figures: the goal is reported, not enforced.
//
// Imported (tests/bench/modern.mjs), it runs nothing: parseFacts (those
// KEY=VALUE arguments), meta, wrkSettings, wrkLine and wrkErrors, f1 and f2
// are its exports.

import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const EXPECTED_TOOLS = ['run_python_code', 'run_js_code', 'execute_code', 'validate_code', 'list_languages'];
const GOAL_RATIO = 5;
// The event-driven front end against libmicrohttpd doing nothing at all.
const BARE_GOAL = 0.7;
const STRING_KEYS = new Set(['commit', 'kernel', 'cpu', 'loadavg', 'wrk_version', 'sdk_version', 'sdk2_version', 'node_version']);

function readJson(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

function readText(file) {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

export function parseFacts(args) {
  const o = {};
  for (const a of args) {
    const eq = a.indexOf('=');
    if (eq < 1) throw new Error(`expected KEY=VALUE, got '${a}'`);
    const k = a.slice(0, eq);
    const v = a.slice(eq + 1);
    if (STRING_KEYS.has(k)) o[k] = v;
    else if (v.startsWith('@@')) o[k] = readText(v.slice(2));
    else if (v.startsWith('@')) o[k] = readJson(v.slice(1));
    else if (v === 'true' || v === 'false') o[k] = v === 'true';
    else if (v !== '' && /^-?\d+(\.\d+)?$/.test(v)) o[k] = Number(v);
    else o[k] = v;
  }
  return o;
}

// checkToolsList(body) -> null when good, else the reason.
/** The data of each event of an SSE body that holds a JSON object. */
export function sseDatas(text) {
  return text
    .split(/\r?\n\r?\n/)
    .map((ev) =>
      ev
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n'),
    )
    .filter((d) => d.startsWith('{'));
}

function checkToolsList(body) {
  let text = body.trim();
  if (!text) return 'empty body';
  if (!text.startsWith('{')) {
    // An SSE answer: the message is the data of the event that has an id 1.
    const datas = sseDatas(text);
    text = datas.find((d) => /"id"\s*:\s*1\b/.test(d)) || datas[0] || '';
    if (!text) return `not JSON and no SSE data: ${body.slice(0, 200)}`;
  }
  let msg;
  try {
    msg = JSON.parse(text);
  } catch (e) {
    return `malformed JSON (${e.message}): ${text.slice(0, 200)}`;
  }
  if (msg?.jsonrpc !== '2.0') return `jsonrpc is not "2.0": ${text.slice(0, 200)}`;
  if (msg.id !== 1) return `id is ${JSON.stringify(msg.id)}, expected 1`;
  if (msg.error) return `JSON-RPC error ${JSON.stringify(msg.error).slice(0, 300)}`;
  const tools = msg.result?.tools;
  if (!Array.isArray(tools)) return `result.tools is not an array: ${text.slice(0, 200)}`;
  const names = tools.map((t) => t?.name);
  const missing = EXPECTED_TOOLS.filter((n) => !names.includes(n));
  if (missing.length) return `tool(s) missing: ${missing.join(', ')} (got ${names.join(', ') || 'none'})`;
  if (tools.length !== EXPECTED_TOOLS.length) return `${tools.length} tools, expected ${EXPECTED_TOOLS.length}: ${names.join(', ')}`;
  const bad = tools.filter((t) => t.inputSchema?.type !== 'object').map((t) => t.name);
  if (bad.length) return `inputSchema not an object schema: ${bad.join(', ')}`;
  return null;
}

export const f1 = (x) => (typeof x === 'number' ? x.toFixed(1) : '?');
export const f2 = (x) => (typeof x === 'number' ? x.toFixed(2) : '?');

export function wrkErrors(w) {
  if (!w) return 'no figures';
  const e = w.errors;
  const socket = e.connect + e.read + e.write + e.timeout;
  return `non-2xx ${e.non_2xx_3xx}, socket errors ${socket}` + (socket ? ` (connect ${e.connect}, read ${e.read}, write ${e.write}, timeout ${e.timeout})` : '');
}

export function wrkLine(label, w) {
  if (!w) return `  ${label}  no figures (wrk did not finish)`;
  return (
    `  ${label}  ${f1(w.requests_per_s).padStart(9)} req/s   latency p50 ${f2(w.latency_ms.p50)} ms, ` +
    `p99 ${f2(w.latency_ms.p99)} ms   ${wrkErrors(w)}`
  );
}

export function wrkSettings(o, connections, seconds) {
  return {
    command: `wrk -t${o.threads} -c${connections} -d${seconds}s -s tests/bench/tools-list.lua`,
    threads: o.threads,
    connections,
    duration_s: seconds,
    warmup_s: o.warmup_s,
    version: o.wrk_version,
  };
}

export function meta(o) {
  return {
    date: o.date,
    machine: { nproc: o.nproc, kernel: o.kernel, cpu: o.cpu, loadavg_before: o.loadavg },
    commit: o.commit,
  };
}

const REQUEST = {
  method: 'POST',
  path: '/mcp',
  body: '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}',
  headers: {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2025-11-25',
    'Mcp-Session-Id': '<session of an initialize done with curl>',
  },
};

function buildHttp(o) {
  const ours = o.ours_wrk;
  const sdk = o.sdk_wrk;
  // A ratio is only meaningful when both servers stayed up and answered
  // correctly: a dead daemon's run counts refused connections, not answers.
  let why = null;
  if (!ours || !sdk) why = 'a run has no figures';
  else if (o.ours_daemon !== 'alive' || o.ours_answer !== 'ok') why = 'mcp-sandboxd did not survive the run';
  else if (o.sdk_answer !== 'ok') why = 'the SDK server did not answer correctly after its run';
  else if (!(sdk.requests_per_s > 0)) why = 'the SDK server answered nothing';
  const ratio = why ? null : ours.requests_per_s / sdk.requests_per_s;
  // The physical limit: libmicrohttpd alone answering the same bytes, the
  // best of three runs, alternating with three of ours.
  const best = (...runs) => runs.reduce((a, b) => ((b?.requests_per_s ?? 0) > (a?.requests_per_s ?? 0) ? b : a), null);
  const bare = best(o.bare_wrk, o.bare_wrk2, o.bare_wrk3);
  const oursBest = best(ours, o.ours_wrk2, o.ours_wrk3);
  const share = oursBest && bare?.requests_per_s > 0 && o.ours_answer === 'ok' && o.bare_answer === 'ok'
    ? oursBest.requests_per_s / bare.requests_per_s : null;
  const doc = {
    benchmark: 'tools/list over streamable HTTP: mcp-sandboxd vs the official TypeScript SDK server',
    ...meta(o),
    wrk: wrkSettings(o, o.connections, o.seconds),
    request: REQUEST,
    ours: {
      server: 'mcp-sandboxd --http --pool-size 0 (one session, initialized with curl)',
      binary: o.bin,
      requests_per_s: ours?.requests_per_s ?? null,
      requests: ours?.requests ?? null,
      latency_ms: ours?.latency_ms ?? null,
      errors: ours?.errors ?? null,
      response_bytes: o.ours_response_bytes,
      daemon_restarted_after_warmup: o.ours_restarted,
      daemon_after_run: o.ours_daemon,
      answer_after_run: o.ours_answer,
    },
    sdk: {
      server:
        `@modelcontextprotocol/sdk ${o.sdk_version} McpServer + StreamableHTTPServerTransport, stateless ` +
        '(sessionIdGenerator: undefined, enableJsonResponse: true, new server+transport per request), ' +
        `createMcpExpressApp (express), node ${o.node_version}, one process`,
      script: 'tests/bench/sdk-server.mjs',
      requests_per_s: sdk?.requests_per_s ?? null,
      requests: sdk?.requests ?? null,
      latency_ms: sdk?.latency_ms ?? null,
      errors: sdk?.errors ?? null,
      response_bytes: o.sdk_response_bytes,
      answer_after_run: o.sdk_answer,
    },
    bare_mhd: {
      server: 'libmicrohttpd alone (epoll, a polling thread per core) answering the same tools/list bytes to every request, no work at all',
      script: 'tests/bench/bare-mhd.c',
      runs_requests_per_s: [o.bare_wrk, o.bare_wrk2, o.bare_wrk3].map((w) => w?.requests_per_s ?? null),
      ours_runs_requests_per_s: [ours, o.ours_wrk2, o.ours_wrk3].map((w) => w?.requests_per_s ?? null),
      requests_per_s: bare?.requests_per_s ?? null,
      requests: bare?.requests ?? null,
      latency_ms: bare?.latency_ms ?? null,
      errors: bare?.errors ?? null,
      answer: o.bare_answer,
    },
    ratio_ours_over_sdk: ratio === null ? null : Number(ratio.toFixed(2)),
    ...(why ? { ratio_not_computed: why } : {}),
    goal: { ratio_at_least: GOAL_RATIO, met: ratio === null ? null : ratio >= GOAL_RATIO },
    share_of_bare_mhd: share === null ? null : Number(share.toFixed(3)),
    bare_goal: { share_at_least: BARE_GOAL, met: share === null ? null : share >= BARE_GOAL },
  };
  const lines = [
    `tools/list over streamable HTTP (wrk -t${o.threads} -c${o.connections} -d${o.seconds}s, nproc ${o.nproc}, load ${o.loadavg}):`,
    wrkLine('mcp-sandboxd', ours) +
      `; daemon ${o.ours_daemon}, answer ${o.ours_answer}` +
      (o.ours_restarted ? ' (restarted after dying in the warm-up run)' : ''),
    wrkLine('official SDK', sdk) + `; answer ${o.sdk_answer}`,
    ratio === null
      ? `  ratio ours/SDK: n/a (${why})`
      : `  ratio ours/SDK: ${f2(ratio)} (goal >= ${GOAL_RATIO}: ${ratio >= GOAL_RATIO ? 'met' : 'not met'})`,
    wrkLine('bare libmicrohttpd', bare) + `; answer ${o.bare_answer}`,
    `  runs alternating, req/s: mcp-sandboxd ${[ours, o.ours_wrk2, o.ours_wrk3].map((w) => f1(w?.requests_per_s ?? 0)).join(', ')}; ` +
      `bare ${[o.bare_wrk, o.bare_wrk2, o.bare_wrk3].map((w) => f1(w?.requests_per_s ?? 0)).join(', ')}`,
    share === null
      ? '  share of bare libmicrohttpd: n/a'
      : `  share of bare libmicrohttpd (best run of each): ${(share * 100).toFixed(1)}% (goal >= ${BARE_GOAL * 100}%: ${share >= BARE_GOAL ? 'met' : 'not met'})`,
  ];
  return { doc, lines };
}

function buildSurvival(o) {
  const w = o.wrk;
  const doc = {
    benchmark: 'survival: sustained concurrent tools/list at mcp-sandboxd',
    ...meta(o),
    wrk: wrkSettings(o, o.connections, o.seconds),
    request: REQUEST,
    binary: o.bin,
    daemon_restarted_before: o.restarted,
    requests_per_s: w?.requests_per_s ?? null,
    requests: w?.requests ?? null,
    latency_ms: w?.latency_ms ?? null,
    errors: w?.errors ?? null,
    daemon_after_run: o.daemon,
    answer_after_run: o.answer,
    result: o.result,
  };
  const lines = [
    `survival (wrk -t${o.threads} -c${o.connections} -d${o.seconds}s): ${String(o.result).toUpperCase()}` +
      ` - ${w ? f1(w.requests_per_s) : '?'} req/s, ${wrkErrors(w)}; daemon ${o.daemon}, answer ${o.answer}` +
      (o.restarted ? ' (daemon restarted after dying in the throughput run)' : ''),
  ];
  return { doc, lines };
}

function buildLatency(o) {
  const doc = {
    benchmark: 'hello-world latency: sequential run_python_code calls through the official SDK stdio client',
    ...meta(o),
    script: 'tests/integration/latency.mjs',
    binary: o.bin,
    engine: o.engine,
    engine_kind: o.engine_kind || null,
    calls: o.calls,
    result: o.result,
  };
  if (o.result === 'skipped') {
    doc.reason = o.reason;
    return { doc, lines: [`hello-world latency: SKIPPED - ${o.reason}`] };
  }
  const out = o.output || '';
  const num = (re) => {
    const m = out.match(re);
    return m ? m.slice(1).map(Number) : null;
  };
  const rt = num(/client round trip: min ([\d.]+) \/ median ([\d.]+) \/ p95 ([\d.]+) \/ max ([\d.]+) ms/);
  const init = num(/initialize ([\d.]+) ms, first call ([\d.]+) ms/);
  const dms = num(/duration_ms: median ([\d.]+) \/ p95 ([\d.]+) ms/);
  if (rt) doc.client_round_trip_ms = { min: rt[0], median: rt[1], p95: rt[2], max: rt[3] };
  if (init) Object.assign(doc, { initialize_ms: init[0], first_call_ms: init[1] });
  if (dms) doc.daemon_duration_ms = { median: dms[0], p95: dms[1] };
  doc.output = out.trim().split('\n').slice(-40);
  if (o.result === 'ok' && !rt) doc.result = 'failed'; // ran but printed no figures
  const kind = o.engine_kind ? `${o.engine_kind}, ` : '';
  const lines =
    doc.result === 'ok'
      ? [
          `hello-world latency (${kind}${o.engine}, ${o.calls} run_python_code calls): ` +
            `median ${f1(rt[1])} ms, p95 ${f1(rt[2])} ms (min ${f1(rt[0])}, max ${f1(rt[3])})` +
            (dms ? `; daemon-reported median ${f1(dms[0])} ms` : ''),
        ]
      : [`hello-world latency (${kind}${o.engine}): FAILED - see ${o.out_name} ("output")`];
  return { doc, lines };
}

function main() {
  const [cmd, ...rest] = process.argv.slice(2);
  if (cmd === 'check') {
    const why = checkToolsList(readText(rest[0]));
    if (why) {
      console.log(why);
      process.exit(1);
    }
    console.log(`${EXPECTED_TOOLS.length} tools (${EXPECTED_TOOLS.join(', ')})`);
  } else if (cmd === 'http' || cmd === 'survival' || cmd === 'latency') {
    const out = rest[0];
    const o = parseFacts(rest.slice(1));
    o.out_name = out;
    const build = { http: buildHttp, survival: buildSurvival, latency: buildLatency }[cmd];
    const { doc, lines } = build(o);
    writeFileSync(out, JSON.stringify(doc, null, 2) + '\n');
    console.log(lines.join('\n'));
  } else {
    console.error('usage: report.mjs check FILE | report.mjs http|survival|latency OUT.json KEY=VALUE...');
    process.exit(2);
  }
}

// A command when run, a module when imported (tests/bench/modern.mjs).
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
