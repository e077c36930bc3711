// Load test for mcp-sandboxd: many HTTP clients and sessions at once, then a
// burst of concurrent calls over stdio, against the daemon on one engine.
//
//   node tests/load/load.mjs            (tests/load/run.sh is the driver)
//
// Phase "http": one daemon with --http 127.0.0.1:0 (the kernel picks a free
// loopback port, read back from the daemon's "serving MCP over HTTP at" log
// line) and its default --max-concurrent (8). LOAD_CLIENTS streamable-HTTP
// clients, each LOAD_ITERATIONS operations drawn at random (tools/list, ping,
// resources/read, tools/call with a JSON answer, tools/call with a progress
// token and an SSE answer, a cancelled call, a standalone GET /mcp stream, a
// DELETE mid-way), plus LOAD_LEGACY_CLIENTS legacy /sse + /messages clients,
// all at once. Afterwards: no container of the run is left, and SIGTERM
// makes the daemon exit 0.
// Phase "stdio": one daemon driven by the SDK client, LOAD_STDIO_CALLS
// tools/call and as many tools/list sent at once; then end of stdin must make
// it exit 0.
// Throughout, the daemons' VmRSS is sampled from /proc/<pid>/status.
//
// Each check prints "ok N - name" or "not ok N - name" (details indented
// after it); the figures (requests per kind, latencies, RSS) go to stdout
// too. The last line is "load checks: N passed, M failed"; the exit status
// is 1 when any check failed.
//
// Environment (besides lib.mjs's MCPSANDBOXD_BIN and MCPSANDBOXD_ENGINE):
//   LOAD_PHASES          phases to run, comma-separated (default http,stdio)
//   LOAD_CLIENTS         streamable HTTP clients (default 24)
//   LOAD_ITERATIONS      operations per streamable client (default 10)
//   LOAD_LEGACY_CLIENTS  legacy SSE clients, 2 sessions each (default 6)
//   LOAD_STDIO_CALLS     concurrent stdio tools/call, and tools/list (default 60)
//   LOAD_HTTP_DEADLINE_S no new HTTP operation after this (default 45)
//   LOAD_DEADLINE_S      the whole run gives up after this (default 110)
//   LOAD_RSS_LIMIT_MIB   bound on each daemon's VmRSS (default 256)
//   LOAD_SEED            seed of the operation mix (default random; printed)

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import {
  ROOT, BIN, ENGINE, ENGINE_SOCKET, RUN_MARKER, RUN_ID, sleep,
  SdkDaemon, awaitExit, preflight, ourContainers, checkRun,
  HttpDaemon, SseParser, POOL_SIZE,
} from '../integration/lib.mjs';

const int = (name, dflt) => {
  const v = process.env[name];
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : dflt;
};

const PHASES = (process.env.LOAD_PHASES || 'http,stdio').split(',').map((s) => s.trim()).filter(Boolean);
const CLIENTS = int('LOAD_CLIENTS', 24);
const ITERATIONS = int('LOAD_ITERATIONS', 10);
const LEGACY_CLIENTS = int('LOAD_LEGACY_CLIENTS', 6);
const LEGACY_ROUNDS = 2;
const STDIO_CALLS = int('LOAD_STDIO_CALLS', 60);
const HTTP_DEADLINE_MS = int('LOAD_HTTP_DEADLINE_S', 45) * 1000;
const DEADLINE_MS = int('LOAD_DEADLINE_S', 110) * 1000;
const RSS_LIMIT_KIB = int('LOAD_RSS_LIMIT_MIB', 256) * 1024;
const SEED = int('LOAD_SEED', randomBytes(4).readUInt32BE(0));

const PV = '2025-11-25';
const TOOLS = ['close_session', 'create_session', 'execute_code', 'install_packages', 'list_languages', 'list_sessions', 'run_js_code', 'run_python_code', 'validate_code'];
const ENV_URI = 'mcp-sandboxd://environment';
// Calls wait in the daemon's queue behind up to 8 runs, so allow for that.
const CALL_TIMEOUT_MS = 90_000;
const QUICK_TIMEOUT_MS = 15_000;
const LEFTOVER_WAIT_MS = 10_000;
// The daemons' --pool-size: the default unless INTEGRATION_POOL_SIZE says.
const POOL_PER_LANGUAGE = POOL_SIZE !== undefined && POOL_SIZE !== '' ? Number(POOL_SIZE) : 2;
// A cancelled call sleeps this long unless the cancellation works.
const CANCEL_SLEEP_S = 20;
const CANCEL_CODE = `import time\nprint('x', flush=True)\ntime.sleep(${CANCEL_SLEEP_S})`;
// How long a cancelled call may wait for its first output (it may be queued).
const CANCEL_WAIT_MS = 15_000;
const CANCEL_END_MS = 10_000;
const EXAMPLES = 5;
const T0 = Date.now();

// ---- bookkeeping -------------------------------------------------------------

/** mulberry32. Each client draws from its own generator seeded from
 * LOAD_SEED, so a run's mix does not depend on timing and can be replayed. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const clientRng = (no) => rng((SEED + Math.imul(no, 0x9e3779b1)) >>> 0);

const sent = new Map(); // kind -> requests sent
const lat = new Map(); // kind -> [ms]
function countSent(kind) {
  sent.set(kind, (sent.get(kind) || 0) + 1);
}
function addLatency(kind, ms) {
  if (!lat.has(kind)) lat.set(kind, []);
  lat.get(kind).push(ms);
}

/** Problems by category: {n, examples}. A check passes when its categories are empty. */
const problems = new Map();
function problem(cat, detail) {
  if (!problems.has(cat)) problems.set(cat, { n: 0, examples: [] });
  const p = problems.get(cat);
  p.n++;
  if (p.examples.length < EXAMPLES) p.examples.push(String(detail).slice(0, 700));
}
const tally = new Map(); // counters that checks look at
function bump(k, n = 1) {
  tally.set(k, (tally.get(k) || 0) + n);
}
const get = (k) => tally.get(k) || 0;

let checkNo = 0;
let passed = 0;
let failed = 0;
function report(name, ok, details = []) {
  checkNo++;
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'ok' : 'not ok'} ${checkNo} - ${name}`);
  for (const d of [].concat(details).filter(Boolean)) {
    for (const line of String(d).split('\n')) console.log(`    ${line}`);
  }
}
/** A check over problem categories; `need` is [counter, what] that must be
 * > 0; `fail` fails it whatever the categories say. */
function checkCats(name, cats, { need = [], info = [], fail = false } = {}) {
  const details = [...info];
  let ok = !fail;
  for (const cat of cats) {
    const p = problems.get(cat);
    if (!p) continue;
    ok = false;
    details.push(`${cat}: ${p.n} time(s), e.g.:`, ...p.examples.map((e) => `  - ${e}`));
  }
  for (const [k, what] of need) {
    if (get(k) === 0) {
      ok = false;
      details.push(`no ${what} was answered (counter ${k} is 0)`);
    }
  }
  report(name, ok, details);
}

function quantile(sorted, q) {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}
const mib = (kib) => `${(kib / 1024).toFixed(1)} MiB`;

// ---- daemon watching -----------------------------------------------------------

/** Samples VmRSS (KiB) of pid every 200 ms. */
class RssSampler {
  constructor(pid) {
    this.pid = pid;
    this.peak = 0;
    this.last = 0;
    this.samples = 0;
    this.timer = setInterval(() => this.sample(), 200);
    this.sample();
  }

  sample() {
    try {
      const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${this.pid}/status`, 'utf8'));
      if (!m) return;
      const kib = Number(m[1]);
      this.samples++;
      this.last = kib;
      if (kib > this.peak) this.peak = kib;
    } catch {
      /* gone */
    }
  }

  stop() {
    this.sample();
    clearInterval(this.timer);
  }
}

/** Daemons started here, killed by the watchdog if it fires. */
const started = [];

/** Records an exit that nobody asked for in d.died. */
function watchDeath(d) {
  started.push(d);
  d.died = null;
  d.exited.then(() => {
    if (!d.stopping) d.died = { ...d.exit, afterMs: Date.now() - T0 };
  });
}
// A sanitizer build (LOAD_BIN=build/asan/...) reports here; such a report fails the exit check.
const SANITIZER = /AddressSanitizer|LeakSanitizer|ThreadSanitizer|runtime error:/;
function sanitizerReport(d) {
  const m = SANITIZER.exec(d.stderr);
  if (!m) return '';
  const from = d.stderr.lastIndexOf('\n', m.index) + 1;
  return `sanitizer report:\n${d.stderr.slice(from, from + 4000)}`;
}
const exitText = (e) => (e ? (e.signal ? `killed by ${e.signal}` : `exit code ${e.code}`) : 'running');

function stderrTail(d, lines = 25) {
  const ls = d.stderr.split('\n');
  return `--- daemon '${d.name}' stderr, last ${lines} lines ---\n${ls.slice(-lines - 1).join('\n')}`;
}

/** Force-removes container id: a failed run must not leave sleeping
 * sandboxes behind (lib.mjs only reads from the engine). */
function engineDelete(id) {
  return new Promise((resolve) => {
    const req = http.request(
      { socketPath: ENGINE_SOCKET, path: `/v1.41/containers/${id}?force=1`, method: 'DELETE', headers: { Host: 'engine' }, timeout: 10_000 },
      (res) => {
        res.resume();
        res.on('end', resolve);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve());
    req.end();
  });
}

/** After a daemon died: removes what it left, including containers whose
 * create was still under way in the engine when it died (they appear late). */
async function removeLeftovers(marker, { prefix = false, ms = 8000 } = {}) {
  let removed = 0;
  let quiet = 0;
  const deadline = Date.now() + ms;
  while (quiet < 2 && Date.now() < deadline) {
    const left = await ourContainers(marker, { prefix }).catch(() => []);
    for (const c of left) await engineDelete(c.id);
    removed += left.length;
    quiet = left.length ? 0 : quiet + 1;
    await sleep(1000);
  }
  return removed;
}

/** While the daemon lives its warm pool waits: only running pooled
 * containers, at most POOL_PER_LANGUAGE per language, may be there. After it
 * exited (final), nothing may. */
async function leftoverCheck(name, marker, { final = false } = {}) {
  const unexpected = (all) => {
    if (final) return all;
    const pooled = (lang) => all.filter((c) => c.pool === lang && c.state === 'running');
    const over = ['python', 'javascript'].some((lang) => pooled(lang).length > POOL_PER_LANGUAGE);
    return over ? all : all.filter((c) => !(c.pool && c.state === 'running'));
  };
  let left;
  try {
    const deadline = Date.now() + LEFTOVER_WAIT_MS;
    for (;;) {
      left = unexpected(await ourContainers(marker));
      if (left.length === 0 || Date.now() > deadline) break;
      await sleep(200);
    }
  } catch (e) {
    report(name, false, `engine query failed: ${e.message}`);
    return;
  }
  report(name, left.length === 0, left.length ? [`${left.length} left: ${JSON.stringify(left.slice(0, EXAMPLES))}`] : []);
  for (const c of left) await engineDelete(c.id);
}

// ---- raw HTTP --------------------------------------------------------------------


/**
 * One HTTP request to 127.0.0.1:port. Returns {done, abort}: done resolves
 * at the end of the body, or when abort() is called on an event stream
 * (answer.aborted), with {status, headers, ct, body, events, messages, ms};
 * it rejects on a connection error or after timeoutMs. onEvent(ev, msg, ans)
 * sees each SSE event as it arrives.
 */
function request(port, { method = 'POST', path: p = '/mcp', headers = {}, body, agent = false, timeoutMs = QUICK_TIMEOUT_MS, onEvent } = {}) {
  const h = { ...headers };
  let payload;
  if (body !== undefined) {
    payload = JSON.stringify(body);
    h['Content-Type'] = 'application/json';
    h['Content-Length'] = Buffer.byteLength(payload);
  }
  let req;
  let settle;
  let ans;
  const t0 = performance.now();
  const done = new Promise((resolve, reject) => {
    let finished = false;
    settle = (err, aborted = false) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      if (err) {
        reject(err);
        return;
      }
      if (ans) {
        ans.ms = performance.now() - t0;
        ans.aborted = aborted;
        if (!ans.sse && /json/i.test(ans.ct) && ans.body) {
          try {
            const j = JSON.parse(ans.body);
            ans.messages = Array.isArray(j) ? j : [j];
          } catch (e) {
            ans.parseError = e.message;
          }
        }
      }
      resolve(ans);
    };
    const timer = setTimeout(() => {
      settle(new Error(`${method} ${p}: no complete answer within ${timeoutMs} ms`));
      req.destroy();
    }, timeoutMs);
    req = http.request({ host: '127.0.0.1', port, path: p, method, headers: h, agent }, (res) => {
      const ct = res.headers['content-type'] || '';
      ans = { status: res.statusCode, headers: res.headers, ct, sse: /^text\/event-stream/i.test(ct), body: '', events: [], messages: [] };
      const parser = ans.sse ? new SseParser() : null;
      res.setEncoding('utf8');
      res.on('data', (c) => {
        if (!parser) {
          ans.body += c;
          return;
        }
        for (const ev of parser.push(c)) {
          ans.events.push(ev);
          let msg;
          if (ev.data) {
            try {
              msg = JSON.parse(ev.data);
              ans.messages.push(msg);
            } catch {
              ans.badEvents = (ans.badEvents || 0) + 1;
            }
          }
          if (onEvent) onEvent(ev, msg, ans);
        }
      });
      res.on('end', () => settle(null));
      res.on('error', (e) => settle(e));
      res.on('aborted', () => settle(new Error(`${method} ${p}: the server dropped the connection mid-answer`)));
    });
    req.on('error', (e) => settle(e));
    if (payload !== undefined) req.write(payload);
    req.end();
  });
  const abort = () => {
    if (ans) settle(null, true);
    req.destroy();
  };
  return { done, abort };
}

// ---- JSON-RPC checks ---------------------------------------------------------------

/** Problems with msg as the response to request id, or null. */
function malformed(msg, id) {
  if (!msg || typeof msg !== 'object' || Array.isArray(msg)) return `not an object: ${JSON.stringify(msg)}`;
  if (msg.jsonrpc !== '2.0') return `jsonrpc is ${JSON.stringify(msg.jsonrpc)}`;
  if (msg.id !== id) return `id ${JSON.stringify(msg.id)} answers request ${JSON.stringify(id)}`;
  const hasResult = 'result' in msg;
  const hasError = 'error' in msg;
  if (hasResult === hasError) return `must have exactly one of result/error: ${JSON.stringify(msg).slice(0, 300)}`;
  if (hasError) {
    const e = msg.error;
    if (!e || !Number.isInteger(e.code) || typeof e.message !== 'string') return `bad error object: ${JSON.stringify(e)}`;
  } else if (!msg.result || typeof msg.result !== 'object') {
    return `result is not an object: ${JSON.stringify(msg.result)}`;
  }
  return null;
}

/** A busy refusal (what the daemon answers today past --max-concurrent). */
function isBusy(result) {
  if (!result || typeof result !== 'object') return false;
  const texts = (Array.isArray(result.content) ? result.content : []).map((c) => c?.text || '').join(' ');
  return /\bbusy\b/i.test(`${texts} ${result.structuredContent?.message || ''}`);
}

/** A tool-call variant printing tag: [tool, arguments, language]. */
function helloCall(tag, random) {
  switch (Math.floor(random() * 4)) {
    case 0:
      return ['run_js_code', { code: `console.log('${tag}')` }, 'javascript'];
    case 1:
      return ['execute_code', { language: 'python', code: `print('${tag}')` }, 'python'];
    case 2:
      return ['execute_code', { language: 'javascript', code: `console.log('${tag}')` }, 'javascript'];
    default:
      return ['run_python_code', { code: `print('${tag}')` }, 'python'];
  }
}

/** Checks a tools/call result of helloCall(tag); counts busy ones apart. */
function checkHello(where, result, tag, language) {
  bump(`${where}.hello`);
  if (isBusy(result)) {
    bump(`${where}.busy`);
    bump(`${where}.hello.busy`);
    problem(`${where}: busy`, JSON.stringify(result).slice(0, 400));
    return;
  }
  try {
    checkRun(result, { status: 'ok', exit_code: 0, stdout: `${tag}\n`, language });
    bump(`${where}.hello.ok`);
  } catch (e) {
    problem(`${where}: tool result`, e.message);
  }
}

function checkToolsList(where, result) {
  const names = (result?.tools || []).map((t) => t?.name).sort();
  if (JSON.stringify(names) === JSON.stringify(TOOLS)) bump(`${where}.tools.ok`);
  else problem(`${where}: tools/list`, `tools ${JSON.stringify(names)}, want ${JSON.stringify(TOOLS)}`);
}

// ---- phase http: streamable clients ------------------------------------------------

// Weights. Runs are what costs (a container each, ~2-5 a second on two
// cores), so they are about a third of the mix.
const OPS = [
  ['tools/list', 16],
  ['ping', 14],
  ['resources/read', 10],
  ['call', 14],
  ['call-sse', 10],
  ['cancel', 5],
  ['get-stream', 5],
  ['delete-midway', 5],
  ['burst', 8],
];
// A burst: this many quick requests of one session at once, each on its own
// connection (clients pipeline; the daemon answers them on parallel threads).
const BURST = 8;
const OP_WEIGHT = OPS.reduce((a, [, w]) => a + w, 0);
function randomOp(random) {
  let r = random() * OP_WEIGHT;
  for (const [op, w] of OPS) {
    if ((r -= w) < 0) return op;
  }
  return OPS[0][0];
}

/** One streamable-HTTP client: sessions, requests, checks as it goes. */
class Client {
  constructor(d, no) {
    this.d = d;
    this.no = no;
    this.sid = null;
    this.version = null;
    this.seq = 0;
    // Half the clients reuse connections, half open one per request.
    this.agent = no % 2 === 0 ? new http.Agent({ keepAlive: true, maxSockets: 4 }) : false;
    this.streamOpened = false;
    this.deletedMidway = false;
    this.random = clientRng(no);
  }

  nextId() {
    // Numbers for some clients, strings for others: ids must come back as sent.
    this.seq++;
    return this.no % 3 === 0 ? `c${this.no}-${this.seq}` : this.no * 100000 + this.seq;
  }

  headers(accept = 'application/json, text/event-stream', sid = this.sid) {
    const h = { Accept: accept };
    if (sid) h['Mcp-Session-Id'] = sid;
    if (this.version) h['MCP-Protocol-Version'] = this.version;
    return h;
  }

  /** Wraps one HTTP exchange: counts it, times it, turns errors into problems. */
  async exchange(kind, opts, { expectStatus = 200, agent = this.agent } = {}) {
    countSent(kind);
    let ans;
    try {
      ans = await request(this.d.port, { agent, ...opts }).done;
    } catch (e) {
      problem('http: connection errors/timeouts', `${kind}: ${e.message}`);
      return null;
    }
    addLatency(kind, ans.ms);
    if (ans.status !== expectStatus) {
      problem('http: unexpected HTTP status', `${kind}: HTTP ${ans.status} (want ${expectStatus}) ${ans.body.slice(0, 300)}`);
      return null;
    }
    return ans;
  }

  /** A request whose answer is JSON or an SSE stream; returns the reply message. */
  async rpc(kind, method, params, { accept, timeoutMs = QUICK_TIMEOUT_MS, onEvent, sid, agent = this.agent } = {}) {
    const id = this.nextId();
    const body = { jsonrpc: '2.0', id, method };
    if (params !== undefined) body.params = params;
    const ans = await this.exchange(kind, { headers: this.headers(accept, sid), body, timeoutMs, onEvent }, { agent });
    if (!ans) return null;
    return this.replyOf(kind, ans, id);
  }

  /** The one response to id in ans; everything else must be a notification. */
  replyOf(kind, ans, id) {
    if (!ans.sse && !/^application\/json/i.test(ans.ct)) {
      problem('http: malformed JSON-RPC', `${kind}: content-type ${JSON.stringify(ans.ct)}`);
      return null;
    }
    if (ans.parseError || ans.badEvents) {
      problem('http: malformed JSON-RPC', `${kind}: unparsable answer (${ans.parseError || `${ans.badEvents} bad event(s)`}): ${ans.body.slice(0, 300)}`);
    }
    const replies = [];
    for (const m of ans.messages) {
      if (m && typeof m === 'object' && 'id' in m && !('method' in m)) replies.push(m);
      else if (!m || typeof m.method !== 'string' || 'id' in m) {
        problem('http: malformed JSON-RPC', `${kind}: neither a response nor a notification: ${JSON.stringify(m).slice(0, 300)}`);
      }
    }
    if (replies.length !== 1) {
      problem('http: malformed JSON-RPC', `${kind}: ${replies.length} responses for request ${JSON.stringify(id)}: ${JSON.stringify(ans.messages).slice(0, 400)}`);
      if (replies.length === 0) return null;
    }
    const bad = malformed(replies[0], id);
    if (bad) {
      problem('http: malformed JSON-RPC', `${kind}: ${bad}`);
      return null;
    }
    if (replies[0].error) {
      problem('http: JSON-RPC errors', `${kind}: ${JSON.stringify(replies[0].error).slice(0, 300)}`);
      return null;
    }
    return replies[0].result;
  }

  async initialize() {
    this.sid = null;
    this.version = null;
    const id = this.nextId();
    const body = { jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: PV, capabilities: {}, clientInfo: { name: 'mcp-sandboxd-load', version: '0' } } };
    const ans = await this.exchange('initialize', { headers: this.headers(), body });
    if (!ans) return false;
    const result = this.replyOf('initialize', ans, id);
    const sid = ans.headers['mcp-session-id'];
    if (!result || !sid) {
      if (result) problem('http: sessions', `initialize: no Mcp-Session-Id header`);
      return false;
    }
    if (result.serverInfo?.name !== 'mcp-sandboxd' || typeof result.protocolVersion !== 'string') {
      problem('http: malformed JSON-RPC', `initialize: result ${JSON.stringify(result).slice(0, 300)}`);
    }
    this.sid = sid;
    this.version = result.protocolVersion;
    bump('http.sessions');
    this.streamOpened = false;
    const n = await this.exchange('notification', { headers: this.headers(), body: { jsonrpc: '2.0', method: 'notifications/initialized' } }, { expectStatus: 202 });
    return Boolean(n);
  }

  /** DELETE the session; then a request on it must get 404. */
  async endSession() {
    const sid = this.sid;
    const del = await this.exchange('delete', { method: 'DELETE', headers: this.headers() }, { expectStatus: 204 });
    this.sid = null;
    if (!del) return;
    bump('http.deleted');
    const after = await this.exchange('ping-after-delete', {
      headers: this.headers(undefined, sid),
      body: { jsonrpc: '2.0', id: this.nextId(), method: 'ping' },
    }, { expectStatus: 404 });
    if (after) bump('http.deleted.404');
  }

  async op(kind, reuse = true) {
    const agent = reuse ? this.agent : false;
    switch (kind) {
      case 'tools/list': {
        const r = await this.rpc(kind, 'tools/list', undefined, { agent });
        if (r) checkToolsList('http', r);
        return;
      }
      case 'ping': {
        const r = await this.rpc(kind, 'ping', undefined, { agent });
        if (r) {
          if (Object.keys(r).length === 0) bump('http.ping.ok');
          else problem('http: ping', `ping result ${JSON.stringify(r)}`);
        }
        return;
      }
      case 'resources/read': {
        const r = await this.rpc(kind, 'resources/read', { uri: ENV_URI }, { agent });
        if (!r) return;
        try {
          assert.equal(r.contents?.[0]?.uri, ENV_URI);
          JSON.parse(r.contents[0].text);
          bump('http.resource.ok');
        } catch (e) {
          problem('http: resources/read', `${e.message}: ${JSON.stringify(r).slice(0, 300)}`);
        }
        return;
      }
      case 'call': {
        // Accept without text/event-stream: the answer is plain JSON.
        const tag = `load-${this.no}-${this.seq}-${randomBytes(3).toString('hex')}`;
        const [tool, args, language] = helloCall(tag, this.random);
        const r = await this.rpc(kind, 'tools/call', { name: tool, arguments: args }, { accept: 'application/json', timeoutMs: CALL_TIMEOUT_MS });
        if (r) checkHello('http', r, tag, language);
        return;
      }
      case 'call-sse':
        return this.callSse();
      case 'cancel':
        return this.cancel();
      case 'get-stream':
        if (this.streamOpened) return this.op('ping'); // one standalone stream per session
        this.streamOpened = true;
        return this.getStream();
      case 'burst': {
        const kinds = Array.from({ length: BURST }, (_, i) => ['tools/list', 'ping', 'resources/read'][i % 3]);
        await Promise.all(kinds.map((k) => this.op(k, false)));
        return;
      }
      case 'delete-midway':
        if (this.deletedMidway) return this.op('tools/list');
        this.deletedMidway = true;
        await this.endSession();
        await this.initialize();
        return;
      default:
        throw new Error(`unknown op ${kind}`);
    }
  }

  /** tools/call with a progress token: an SSE answer with progress for that token. */
  async callSse() {
    const tag = `sse-${this.no}-${this.seq}-${randomBytes(3).toString('hex')}`;
    const token = this.no % 2 ? `tok-${tag}` : this.no * 100000 + this.seq + 50000;
    const [tool, args, language] = helloCall(tag, this.random);
    const progress = [];
    const onEvent = (ev, msg) => {
      if (msg?.method === 'notifications/progress') progress.push(msg.params);
    };
    const r = await this.rpc('call-sse', 'tools/call', { name: tool, arguments: args, _meta: { progressToken: token } }, { timeoutMs: CALL_TIMEOUT_MS, onEvent });
    if (!r) return;
    checkHello('http', r, tag, language);
    if (isBusy(r)) return;
    bump('http.sse.calls');
    let last = 0;
    for (const p of progress) {
      if (p?.progressToken !== token || typeof p.progress !== 'number' || p.progress <= last) {
        problem('http: progress notifications', `progress for token ${JSON.stringify(token)} out of order or for another token: ${JSON.stringify(progress).slice(0, 400)}`);
        return;
      }
      last = p.progress;
    }
    // Live output may come in more than one piece (the redaction of secrets
    // holds back a tail that could begin one): the pieces, joined, carry it.
    if (progress.map((p) => String(p.message || '')).join('').includes(tag)) bump('http.sse.progress');
    else problem('http: progress notifications', `no progress notification carried the output ${tag}: ${JSON.stringify(progress).slice(0, 300)}`);
  }

  /** Starts a long call, cancels it: the stream must end with no response. */
  async cancel() {
    const id = this.nextId();
    const token = `cancel-${this.no}-${this.seq}`;
    let started;
    const startedP = new Promise((r) => (started = r));
    const body = {
      jsonrpc: '2.0', id, method: 'tools/call',
      params: { name: 'execute_code', arguments: { language: 'python', code: CANCEL_CODE }, _meta: { progressToken: token } },
    };
    countSent('cancel');
    const t0 = performance.now();
    const stream = request(this.d.port, {
      headers: this.headers(),
      body,
      timeoutMs: CANCEL_WAIT_MS + CANCEL_END_MS + 5000,
      onEvent: (ev, msg) => {
        if (msg?.method === 'notifications/progress' && String(msg.params?.message || '').includes('x')) started(true);
        if (msg && msg.id === id) started(false);
      },
    });
    let streamErr = null;
    const ended = stream.done.then(
      (a) => {
        started(false);
        return a;
      },
      (e) => {
        started(false);
        streamErr = e;
        return null;
      },
    );
    const running = await Promise.race([startedP, sleep(CANCEL_WAIT_MS).then(() => 'waited')]);
    if (running === true) bump('http.cancel.started');
    const tc = performance.now();
    const c = await this.exchange('notification', {
      headers: this.headers(),
      body: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'load test' } },
    }, { expectStatus: 202 });
    const ans = await Promise.race([ended, sleep(CANCEL_END_MS).then(() => 'open')]);
    if (ans === 'open') {
      stream.abort();
      problem('http: cancellation', `request ${JSON.stringify(id)}: the stream was still open ${CANCEL_END_MS} ms after notifications/cancelled`);
      return;
    }
    if (streamErr) {
      problem('http: connection errors/timeouts', `cancel: ${streamErr.message}`);
      return;
    }
    if (!c) return;
    addLatency('cancel→end', performance.now() - tc);
    addLatency('cancel', performance.now() - t0);
    if (ans.status !== 200 || !ans.sse) {
      problem('http: cancellation', `tools/call to cancel: HTTP ${ans.status} ${ans.ct} ${ans.body.slice(0, 200)}`);
      return;
    }
    const replies = ans.messages.filter((m) => m && m.id === id);
    if (replies.length === 0) {
      bump('http.cancel.ok');
      return;
    }
    const res = replies[0].result;
    if (isBusy(res)) {
      bump('http.busy');
      problem('http: busy', JSON.stringify(res).slice(0, 400));
    } else if (running === true) {
      problem('http: cancellation', `a response was sent for cancelled request ${JSON.stringify(id)}: ${JSON.stringify(replies[0]).slice(0, 300)}`);
    } else {
      // Answered before the cancellation went out: not what was asked for.
      problem('http: cancellation', `request ${JSON.stringify(id)} finished before it could be cancelled: ${JSON.stringify(replies[0]).slice(0, 300)}`);
    }
  }

  /** Opens the session's standalone GET /mcp stream, reads its priming event, closes it. */
  async getStream() {
    countSent('get-stream');
    let primed;
    const primedP = new Promise((r) => (primed = r));
    const s = request(this.d.port, { method: 'GET', headers: this.headers('text/event-stream'), timeoutMs: QUICK_TIMEOUT_MS, onEvent: () => primed(true) });
    s.done.then(() => primed(false), () => primed(false));
    const got = await Promise.race([primedP, sleep(5000).then(() => false)]);
    s.abort();
    let ans;
    try {
      ans = await s.done;
    } catch (e) {
      problem('http: connection errors/timeouts', `get-stream: ${e.message}`);
      return;
    }
    addLatency('get-stream', ans.ms);
    if (ans.status !== 200 || !ans.sse) problem('http: standalone GET stream', `HTTP ${ans.status} ${ans.ct} ${ans.body.slice(0, 200)}`);
    else if (!got) problem('http: standalone GET stream', 'no event (priming) within 5 s');
    else bump('http.stream.ok');
  }

  async run(deadline, isDead) {
    await sleep(this.random() * 500);
    // Every kind of operation comes up somewhere, whatever the seed.
    const plan = Array.from({ length: ITERATIONS }, () => randomOp(this.random));
    if (ITERATIONS > 0) plan[Math.floor(this.random() * ITERATIONS)] = OPS[this.no % OPS.length][0];
    try {
      if (!(await this.initialize())) return;
      for (const kind of plan) {
        if (isDead() || Date.now() > deadline) break;
        if (!this.sid && !(await this.initialize())) return;
        await this.op(kind);
      }
      if (this.sid && !isDead()) await this.endSession();
    } finally {
      if (this.agent) this.agent.destroy();
    }
  }
}

// ---- phase http: legacy SSE clients --------------------------------------------------

/** A legacy 2024-11-05 client: GET /sse, endpoint event, POST /messages, replies as events. */
async function legacySession(d, no, round, random) {
  const where = 'http: legacy SSE';
  const waiting = new Map(); // id -> resolve
  const seen = [];
  let endpoint;
  const endpointP = new Promise((resolve) => (endpoint = resolve));
  countSent('legacy-sse');
  const t0 = performance.now();
  const sse = request(d.port, {
    method: 'GET',
    path: '/sse',
    headers: { Accept: 'text/event-stream' },
    timeoutMs: CALL_TIMEOUT_MS + 20_000,
    onEvent: (ev, msg) => {
      if (ev.event === 'endpoint') {
        endpoint(ev.data);
        return;
      }
      if (msg === undefined) return;
      seen.push(msg);
      if (ev.event !== 'message') problem(where, `a JSON-RPC message came as event ${JSON.stringify(ev.event)}`);
      if (msg && 'id' in msg && !('method' in msg) && waiting.has(msg.id)) {
        waiting.get(msg.id)(msg);
        waiting.delete(msg.id);
      }
    },
  });
  let sseErr = null;
  sse.done.then(() => endpoint(null), (e) => {
    sseErr = e;
    endpoint(null);
    for (const r of waiting.values()) r(null);
  });
  try {
    const ep = await Promise.race([endpointP, sleep(QUICK_TIMEOUT_MS).then(() => null)]);
    if (!ep || !/^\/messages\?sessionId=[^&\s]+$/.test(ep)) {
      problem(where, `no endpoint event (got ${JSON.stringify(ep)}${sseErr ? `; ${sseErr.message}` : ''})`);
      return;
    }
    bump('http.sessions');
    const post = async (kind, body) => {
      countSent(`legacy ${kind}`);
      try {
        const a = await request(d.port, { path: ep, headers: { Accept: 'application/json, text/event-stream' }, body }).done;
        if (a.status !== 202) problem(where, `POST ${kind}: HTTP ${a.status} ${a.body.slice(0, 200)}`);
        return a.status === 202;
      } catch (e) {
        problem('http: connection errors/timeouts', `legacy POST ${kind}: ${e.message}`);
        return false;
      }
    };
    const call = async (kind, method, params, timeoutMs = QUICK_TIMEOUT_MS) => {
      const id = `legacy-${no}-${round}-${kind}`;
      const reply = new Promise((resolve) => waiting.set(id, resolve));
      const t = performance.now();
      const body = { jsonrpc: '2.0', id, method };
      if (params !== undefined) body.params = params;
      if (!(await post(kind, body))) return null;
      const msg = await Promise.race([reply, sleep(timeoutMs).then(() => 'late')]);
      if (msg === 'late' || msg === null) {
        problem(where, `no reply to ${kind} on the SSE stream within ${timeoutMs} ms${sseErr ? ` (${sseErr.message})` : ''}`);
        return null;
      }
      addLatency(`legacy ${kind}`, performance.now() - t);
      const bad = malformed(msg, id);
      if (bad) {
        problem('http: malformed JSON-RPC', `legacy ${kind}: ${bad}`);
        return null;
      }
      if (msg.error) {
        problem('http: JSON-RPC errors', `legacy ${kind}: ${JSON.stringify(msg.error)}`);
        return null;
      }
      return msg.result;
    };
    // Like the SDK's SSEClientTransport: the legacy transport, a current
    // protocol version (so results carry structuredContent).
    const init = await call('initialize', 'initialize', { protocolVersion: PV, capabilities: {}, clientInfo: { name: 'mcp-sandboxd-load-legacy', version: '0' } });
    if (!init) return;
    if (!(await post('notification', { jsonrpc: '2.0', method: 'notifications/initialized' }))) return;
    const tag = `legacy-${no}-${round}-${randomBytes(3).toString('hex')}`;
    const [tool, args, language] = helloCall(tag, random);
    const [list, ping, res] = await Promise.all([
      call('tools/list', 'tools/list'),
      call('ping', 'ping'),
      call('tools/call', 'tools/call', { name: tool, arguments: args }, CALL_TIMEOUT_MS),
    ]);
    if (list) checkToolsList('http', list);
    if (ping && Object.keys(ping).length) problem('http: ping', `legacy ping result ${JSON.stringify(ping)}`);
    if (res) checkHello('http', res, tag, language);
    if (list && ping && res) bump('http.legacy.ok');
    for (const m of seen) {
      if (!m || typeof m !== 'object' || (typeof m.method !== 'string' && !('id' in m))) {
        problem('http: malformed JSON-RPC', `legacy: neither a response nor a notification: ${JSON.stringify(m).slice(0, 300)}`);
      }
    }
  } finally {
    sse.abort(); // closing the connection ends the legacy session
    addLatency('legacy session', performance.now() - t0);
  }
}

async function legacyClient(d, no, deadline, isDead) {
  const random = clientRng(1000 + no);
  await sleep(random() * 2000);
  for (let round = 0; round < LEGACY_ROUNDS; round++) {
    if (isDead() || Date.now() > deadline) return;
    await legacySession(d, no, round, random);
  }
}

// ---- phase http ----------------------------------------------------------------------

async function startHttpDaemon(marker) {
  const d = await HttpDaemon.start('http', { marker });
  d.stopping = false;
  watchDeath(d);
  return d;
}

async function phaseHttp() {
  const marker = `${RUN_ID}-http`;
  console.log(`# phase http: ${CLIENTS} streamable clients x ${ITERATIONS} operations, ${LEGACY_CLIENTS} legacy SSE clients x ${LEGACY_ROUNDS} sessions`);
  let d;
  try {
    d = await startHttpDaemon(marker);
  } catch (e) {
    report('http: daemon starts and serves on 127.0.0.1', false, e.message);
    return;
  }
  report('http: daemon starts and serves on 127.0.0.1', true, `port ${d.port}, pid ${d.proc.pid}`);
  const rss = new RssSampler(d.proc.pid);
  const t0 = Date.now();
  const deadline = t0 + HTTP_DEADLINE_MS;
  const isDead = () => d.exit !== null;
  const clients = Array.from({ length: CLIENTS }, (_, i) => new Client(d, i + 1));
  await Promise.all([
    ...clients.map((c) => c.run(deadline, isDead).catch((e) => problem('http: client crashed', e.stack || e.message))),
    ...Array.from({ length: LEGACY_CLIENTS }, (_, i) => legacyClient(d, i + 1, deadline, isDead).catch((e) => problem('http: client crashed', e.stack || e.message))),
  ]);
  const loadS = (Date.now() - t0) / 1000;
  console.log(`# phase http: load finished after ${loadS.toFixed(1)} s${Date.now() > deadline ? ' (deadline reached)' : ''}`);

  report('http: the daemon stayed up under load', !d.died, d.died ? [
    `daemon died (${exitText(d.died)}) ${((d.died.afterMs - (t0 - T0)) / 1000).toFixed(1)} s into the load`,
    sanitizerReport(d) || stderrTail(d),
  ] : []);
  checkCats('http: no connection error or timeout', ['http: connection errors/timeouts', 'http: client crashed']);
  checkCats('http: every HTTP status as expected (200 answers, 202 notifications, 204 DELETE, 404 after DELETE)', ['http: unexpected HTTP status', 'http: sessions']);
  checkCats('http: every answer is well-formed JSON-RPC for its own request, no JSON-RPC error', ['http: malformed JSON-RPC', 'http: JSON-RPC errors']);
  checkCats('http: tools/list lists run_python_code, run_js_code, execute_code', ['http: tools/list'], { need: [['http.tools.ok', 'tools/list']] });
  checkCats('http: ping answers {} and resources/read returns the environment', ['http: ping', 'http: resources/read'], { need: [['http.ping.ok', 'ping'], ['http.resource.ok', 'resources/read']] });
  checkCats('http: every answered hello-world call has status ok and its output', ['http: tool result'], {
    need: [['http.hello.ok', 'hello-world tools/call']],
    fail: get('http.hello.ok') !== get('http.hello'),
    info: [`${get('http.hello.ok')} of ${get('http.hello')} ok (${get('http.hello.busy')} busy)`],
  });
  checkCats(`http: no call was refused as busy (calls past --max-concurrent wait)`, ['http: busy'], { info: [`busy results: ${get('http.busy')}`] });
  checkCats('http: SSE answers carry progress notifications for their token', ['http: progress notifications'], { need: [['http.sse.progress', 'tools/call with a progress token']] });
  checkCats('http: a cancelled call gets no response; its stream ends', ['http: cancellation'], {
    need: [['http.cancel.ok', 'cancelled call']],
    info: [`cancelled ${get('http.cancel.ok')}, of which ${get('http.cancel.started')} after their first output`],
  });
  checkCats('http: standalone GET /mcp streams open (200, event stream, priming event)', ['http: standalone GET stream'], { need: [['http.stream.ok', 'standalone GET']] });
  checkCats('http: DELETE ends a session (then 404)', [], { need: [['http.deleted.404', 'DELETE + request on the deleted session']] });
  checkCats('http: legacy /sse clients: endpoint event, replies as message events', ['http: legacy SSE'], { need: [['http.legacy.ok', 'legacy session']] });

  if (!d.died) await leftoverCheck(`http: no container of the run left within ${LEFTOVER_WAIT_MS / 1000} s`, marker);
  else {
    const n = await removeLeftovers(marker);
    report(`http: no container of the run left within ${LEFTOVER_WAIT_MS / 1000} s`, false, `the daemon died; ${n} container(s) of it removed here`);
  }

  rss.stop();
  const rssInfo = `VmRSS peak ${mib(rss.peak)}, final ${mib(rss.last)} (${rss.samples} samples; bound ${mib(RSS_LIMIT_KIB)})`;
  report('http: the daemon\'s memory stays bounded', rss.samples > 0 && rss.peak <= RSS_LIMIT_KIB, rssInfo);

  d.stopping = true;
  const alreadyDead = d.exit !== null;
  if (!alreadyDead) {
    d.proc.kill('SIGTERM');
    await awaitExit(d);
  }
  const clean = !alreadyDead && d.exit && !d.exit.hung && d.exit.code === 0 && !sanitizerReport(d) && !d.stdout;
  report('http: SIGTERM → exit 0 within 20 s, nothing on stdout, no sanitizer report', clean, clean ? [] : [
    alreadyDead ? `the daemon had already died (${exitText(d.exit)})` : `exit ${JSON.stringify(d.exit)}`,
    d.stdout ? `wrote to stdout: ${JSON.stringify(d.stdout.slice(0, 200))}` : '',
    sanitizerReport(d),
  ]);
  if (!alreadyDead) await leftoverCheck('http: after SIGTERM no container of the run is left', marker, { final: true });
  return { rss, sessions: get('http.sessions'), loadS };
}

// ---- phase stdio ---------------------------------------------------------------------

async function phaseStdio() {
  const marker = `${RUN_ID}-stdio`;
  console.log(`# phase stdio: ${STDIO_CALLS} tools/call + ${STDIO_CALLS} tools/list at once over one stdio connection`);
  let d;
  try {
    // 60 runs through 8 slots on 2 cores can take longer than the default
    // 30 s a queued call may wait (its own timeout): give them 80 s.
    d = await SdkDaemon.start('stdio', { args: ['--timeout-ms', '80000'], env: { [RUN_MARKER]: marker }, clientName: 'mcp-sandboxd-load' });
  } catch (e) {
    report('stdio: the daemon starts; initialize and tools/list answer', false, e.message);
    return;
  }
  report('stdio: the daemon starts; initialize and tools/list answer', true, `pid ${d.proc.pid}`);
  watchDeath(d);
  const rss = new RssSampler(d.proc.pid);
  const random = clientRng(2000);
  const t0 = performance.now();
  const calls = Array.from({ length: STDIO_CALLS }, (_, i) => {
    const tag = `stdio-${i}-${randomBytes(3).toString('hex')}`;
    const [tool, args, language] = helloCall(tag, random);
    countSent('stdio tools/call');
    const s = performance.now();
    return d.call(tool, args, { timeout: CALL_TIMEOUT_MS }).then((r) => {
      addLatency('stdio tools/call', performance.now() - s);
      checkHello('stdio', r, tag, language);
    });
  });
  const lists = Array.from({ length: STDIO_CALLS }, () => {
    countSent('stdio tools/list');
    const s = performance.now();
    return d.client.listTools(undefined, { timeout: CALL_TIMEOUT_MS }).then((r) => {
      addLatency('stdio tools/list', performance.now() - s);
      checkToolsList('stdio', r);
    });
  });
  const settled = await Promise.allSettled([...calls, ...lists]);
  const wallS = (performance.now() - t0) / 1000;
  settled.forEach((s, i) => {
    if (s.status === 'rejected') problem(i < STDIO_CALLS ? 'stdio: tool result' : 'stdio: tools/list', `request failed: ${s.reason?.message || s.reason}`);
  });
  console.log(`# phase stdio: all answered or failed after ${wallS.toFixed(1)} s`);

  report('stdio: the daemon stayed up under load', !d.died, d.died ? [`daemon died (${exitText(d.died)})`, sanitizerReport(d) || stderrTail(d)] : []);
  checkCats(`stdio: ${STDIO_CALLS} concurrent calls return status ok with their output`, ['stdio: tool result'], {
    fail: get('stdio.hello.ok') !== STDIO_CALLS,
    info: [`${get('stdio.hello.ok')} of ${STDIO_CALLS} ok (${get('stdio.hello.busy')} busy)`],
  });
  checkCats('stdio: no call was refused as busy (calls past --max-concurrent wait)', ['stdio: busy'], { info: [`busy results: ${get('stdio.busy')}`] });
  checkCats(`stdio: ${STDIO_CALLS} concurrent tools/list list the 3 tools`, ['stdio: tools/list'], {
    fail: get('stdio.tools.ok') !== STDIO_CALLS,
    info: [`${get('stdio.tools.ok')} of ${STDIO_CALLS} right`],
  });
  if (!d.died) await leftoverCheck(`stdio: no container of the run left within ${LEFTOVER_WAIT_MS / 1000} s`, marker);
  else {
    const n = await removeLeftovers(marker);
    report(`stdio: no container of the run left within ${LEFTOVER_WAIT_MS / 1000} s`, false, `the daemon died; ${n} container(s) of it removed here`);
  }
  rss.stop();
  report('stdio: the daemon\'s memory stays bounded', rss.samples > 0 && rss.peak <= RSS_LIMIT_KIB,
    `VmRSS peak ${mib(rss.peak)}, final ${mib(rss.last)} (${rss.samples} samples; bound ${mib(RSS_LIMIT_KIB)})`);
  d.stopping = true;
  const alreadyDead = d.exit !== null;
  const exit = await d.close();
  const clean = !alreadyDead && exit && !exit.hung && exit.code === 0 && !sanitizerReport(d);
  report('stdio: end of stdin → exit 0 within 20 s, no sanitizer report', clean, clean ? [] : [
    alreadyDead ? `the daemon had already died (${exitText(d.exit)})` : `exit ${JSON.stringify(exit)}`,
    sanitizerReport(d),
  ]);
  if (!alreadyDead) await leftoverCheck('stdio: after end of stdin no container of the run is left', marker, { final: true });
  return { rss, wallS };
}

// ---- main --------------------------------------------------------------------------------

function printFigures(httpRes, stdioRes) {
  console.log('# figures');
  const kinds = [...new Set([...sent.keys(), ...lat.keys()])];
  console.log(`#   requests sent: ${kinds.filter((k) => sent.has(k)).map((k) => `${k} ${sent.get(k)}`).join(', ')}`);
  console.log(`#   total sent: ${[...sent.values()].reduce((a, b) => a + b, 0)}`);
  for (const k of kinds) {
    const xs = (lat.get(k) || []).slice().sort((a, b) => a - b);
    if (!xs.length) continue;
    console.log(`#   latency ${k}: n ${xs.length}, p50 ${quantile(xs, 0.5).toFixed(1)} ms, p95 ${quantile(xs, 0.95).toFixed(1)} ms, max ${xs[xs.length - 1].toFixed(1)} ms`);
  }
  if (httpRes) {
    console.log(`#   http daemon: ${httpRes.sessions} sessions over ${httpRes.loadS.toFixed(1)} s; VmRSS peak ${mib(httpRes.rss.peak)}, final ${mib(httpRes.rss.last)}`);
  }
  if (stdioRes) {
    console.log(`#   stdio daemon: burst answered in ${stdioRes.wallS.toFixed(1)} s; VmRSS peak ${mib(stdioRes.rss.peak)}, final ${mib(stdioRes.rss.last)}`);
  }
}

function finish() {
  console.log(`load checks: ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

// Stops by itself even if something hangs; run.sh's timeout is the backstop.
// SIGTERM first so a daemon still able to removes its containers.
setTimeout(async () => {
  const live = started.filter((d) => d.exit === null);
  for (const d of live) d.proc.kill('SIGTERM');
  await sleep(3000);
  for (const d of live) if (d.exit === null) d.proc.kill('SIGKILL');
  const n = await removeLeftovers(RUN_ID, { prefix: true, ms: 4000 });
  report(`the load test finished within ${DEADLINE_MS / 1000} s`, false,
    `gave up; ${live.length} daemon(s) still running were stopped, ${n} container(s) removed`);
  finish();
}, DEADLINE_MS).unref();

const shown = BIN.startsWith(ROOT + path.sep) ? path.relative(ROOT, BIN) : BIN;
console.log(`# load: daemon ${shown}, engine ${ENGINE}, seed ${SEED} (LOAD_SEED=${SEED} replays the mix), run ${RUN_ID}`);
try {
  await preflight({ diagnostic: (s) => console.log(`# ${s}`) });
  report('preflight: the binary exists and the engine answers', true);
} catch (e) {
  report('preflight: the binary exists and the engine answers', false, e.message);
  finish();
}
let httpRes;
let stdioRes;
if (PHASES.includes('http')) httpRes = await phaseHttp();
if (PHASES.includes('stdio')) stdioRes = await phaseStdio();
printFigures(httpRes, stdioRes);
finish();
