// Integration tests for mcp-sandboxd over HTTP (and live output over stdio).
//
// Starts real daemons with `--http 127.0.0.1:0` (one, with a token, on
// 0.0.0.0:0: without one the daemon refuses it) and drives them with the
// official MCP TypeScript SDK clients (StreamableHTTPClientTransport for
// /mcp, SSEClientTransport for the legacy 2024-11-05 /sse + /messages
// transport) and, for the HTTP rules the SDK will not break on purpose, with
// raw HTTP requests (node:http, so Host can be set; fetch for the resumption
// test).
//
//   node --test tests/integration/http.test.mjs
//
// Environment (as for stdio.test.mjs):
//   MCPSANDBOXD_BIN     daemon binary (default build/mcp-sandboxd)
//   MCPSANDBOXD_ENGINE  engine socket, passed as --engine
//                       (default $DOCKER_HOST, else unix:///var/run/docker.sock)
//
// Every daemon started here gets MCPSBX_TEST_RUN=<random>[-suffix] (and the
// same value as its containers' mcpsbx.test-run label), so the containers
// this file created can be found (and
// the last test checks none is left) without touching other daemons' ones.
// A daemon's port is read from its log line "serving MCP over HTTP at
// http://127.0.0.1:PORT/mcp"; daemons are stopped with SIGTERM and must exit 0.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import {
  RUN_LABEL, RUN_ID, CALL_TIMEOUT_MS, TEST_TIMEOUT_MS, sleep, withDaemon, SdkDaemon, engineRequest, preflight,
  ourContainers, textOf, checkDaemonsAndContainers, HttpDaemon, SseParser, BIN, daemonArgs, daemonEnv,
  KUBERNETES, deadBackend,
} from './lib.mjs';

const PV = '2025-11-25'; // the version raw sessions ask for
const EVIL = 'evil.example.com';

// ---- SDK clients -------------------------------------------------------------

/** An SDK client connected to d over streamable HTTP ('streamable') or the
 * legacy HTTP+SSE transport ('sse'). */
async function sdkClient(d, { kind = 'streamable', headers, name = 'mcp-sandboxd-http-test' } = {}) {
  const opts = headers ? { requestInit: { headers } } : undefined;
  const transport =
    kind === 'sse' ? new SSEClientTransport(new URL(`${d.base}/sse`), opts) : new StreamableHTTPClientTransport(new URL(d.url), opts);
  const client = new Client({ name, version: '1.0.0' });
  const c = { client, transport, kind, errors: [] };
  client.onerror = (e) => c.errors.push(e);
  await client.connect(transport, { timeout: 30_000 });
  c.call = (tool, args, o = {}) => client.callTool({ name: tool, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS, ...o });
  c.close = async () => {
    if (kind === 'streamable') await transport.terminateSession().catch(() => {});
    await client.close().catch(() => {});
  };
  return c;
}

// ---- raw HTTP ----------------------------------------------------------------


function jsonOf(ev) {
  if (!ev.data) return undefined;
  try {
    return JSON.parse(ev.data);
  } catch {
    return undefined;
  }
}

/** What an HTTP answer looked like, for assertion messages. */
function show(r) {
  const h = Object.entries(r.headers || {})
    .filter(([k]) => /^(content-type|mcp-|www-authenticate|allow|location)/i.test(k))
    .map(([k, v]) => `${k}: ${v}`)
    .join('; ');
  return `HTTP ${r.status} [${h}] ${JSON.stringify((r.body || '').slice(0, 600))}`;
}

/**
 * One raw HTTP request to daemon d (node:http, a fresh connection, any
 * header including Host). Resolves at the end of the body, or as soon as
 * stopWhen(answer) is true for an event stream (the connection is then
 * dropped). The answer: {status, headers, body, events, messages}.
 */
function httpRaw(d, { method = 'POST', path: p = '/mcp', headers = {}, body, timeoutMs = 15_000, stopWhen } = {}) {
  return new Promise((resolve, reject) => {
    const h = { ...headers };
    let payload;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['Content-Type'] = 'application/json';
      h['Content-Length'] = Buffer.byteLength(payload);
    }
    let done = false;
    const req = http.request({ host: '127.0.0.1', port: d.port, path: p, method, headers: h, agent: false }, (res) => {
      const out = { status: res.statusCode, headers: res.headers, body: '', events: [], messages: [] };
      const ct = res.headers['content-type'] || '';
      const parser = /^text\/event-stream/i.test(ct) ? new SseParser() : null;
      const finish = () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (!parser && /json/i.test(ct) && out.body) {
          try {
            const j = JSON.parse(out.body);
            out.messages = Array.isArray(j) ? j : [j];
          } catch {
            /* left to the caller */
          }
        }
        resolve(out);
      };
      res.setEncoding('utf8');
      res.on('data', (c) => {
        out.body += c;
        if (!parser) return;
        for (const ev of parser.push(c)) {
          out.events.push(ev);
          const m = jsonOf(ev);
          if (m !== undefined) out.messages.push(m);
        }
        if (stopWhen && stopWhen(out)) {
          finish();
          req.destroy();
        }
      });
      res.on('end', finish);
      res.on('error', (e) => {
        if (!done) {
          done = true;
          clearTimeout(timer);
          reject(e);
        }
      });
    });
    const timer = setTimeout(() => {
      if (!done) {
        done = true;
        req.destroy();
        reject(new Error(`${method} ${p}: no complete answer within ${timeoutMs} ms`));
      }
    }, timeoutMs);
    req.on('error', (e) => {
      if (!done) {
        done = true;
        clearTimeout(timer);
        reject(e);
      }
    });
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** A session driven with raw HTTP requests. */
class RawSession {
  constructor(d, headers = {}) {
    this.d = d;
    this.extra = headers;
    this.sid = null;
    this.version = null;
    this.nextId = 1;
  }

  headers(over = {}) {
    const h = { Accept: 'application/json, text/event-stream', ...this.extra };
    if (this.sid) h['Mcp-Session-Id'] = this.sid;
    if (this.version) h['MCP-Protocol-Version'] = this.version;
    for (const [k, v] of Object.entries(over)) {
      for (const old of Object.keys(h)) if (old.toLowerCase() === k.toLowerCase()) delete h[old];
      if (v !== undefined) h[k] = v;
    }
    return h;
  }

  post(msg, { headers, timeoutMs } = {}) {
    const stopWhen =
      msg.id !== undefined ? (o) => o.messages.some((m) => m && m.id === msg.id && ('result' in m || 'error' in m)) : undefined;
    return httpRaw(this.d, { method: 'POST', headers: this.headers(headers), body: msg, timeoutMs, stopWhen });
  }

  /** POSTs a request; r.reply is the JSON-RPC response (JSON or SSE answer). */
  async request(method, params, opts) {
    const id = this.nextId++;
    const msg = { jsonrpc: '2.0', id, method };
    if (params !== undefined) msg.params = params;
    const r = await this.post(msg, opts);
    r.reply = r.messages.find((m) => m && m.id === id);
    return r;
  }

  async initialize(version = PV) {
    const r = await this.request('initialize', {
      protocolVersion: version,
      capabilities: {},
      clientInfo: { name: 'raw-http-test', version: '0' },
    });
    assert.equal(r.status, 200, `initialize: ${show(r)}`);
    assert.ok(r.reply?.result, `initialize: no result: ${show(r)}`);
    this.sid = r.headers['mcp-session-id'];
    assert.ok(this.sid, `initialize: no Mcp-Session-Id header: ${show(r)}`);
    this.version = r.reply.result.protocolVersion;
    const n = await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.equal(n.status, 202, `notifications/initialized: ${show(n)}`);
    return r;
  }

  delete() {
    return httpRaw(this.d, { method: 'DELETE', headers: this.headers() });
  }
}

function initializeBody(id = 1) {
  return { jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: PV, capabilities: {}, clientInfo: { name: 'raw', version: '0' } } };
}

// ---- engine ----------------------------------------------------------------

/** Waits for a running container of marker; returns it. The daemon must run
 * with NO_POOL: a waiting pooled container runs too (pool.test.mjs covers
 * cancelling a pooled run). */
const NO_POOL = ['--pool-size', '0'];

async function waitRunning(marker, ms = 30_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const running = (await ourContainers(marker)).filter((c) => c.state === 'running');
    if (running.length) return running[0];
    await sleep(100);
  }
  assert.fail(`no running container labelled ${RUN_LABEL}=${marker} within ${ms} ms`);
}

/** Polls the container until the engine no longer knows it; returns the ms
 * from t0 until then (null if it is still there ms after t0). */
// How long a cancelled run's container may take to go before a test calls
// it stuck: a hang guard far below the 120 s its program would run, not a
// speed target (the engine's own removal takes from a few ms to seconds).
const GONE_GUARD_MS = 30_000;

async function waitGone(id, ms, t0 = Date.now()) {
  while (Date.now() - t0 < ms) {
    const r = await engineRequest(`/v1.41/containers/${id}/json`);
    if (r.status === 404) return Date.now() - t0;
    await sleep(25);
  }
  return null;
}

// ---- result checks -----------------------------------------------------------

/** A successful run printing `stdout`. */
function checkOk(result, stdout, language) {
  const sc = result.structuredContent;
  assert.ok(sc && typeof sc === 'object', `no structuredContent in ${JSON.stringify(result).slice(0, 500)}`);
  const ctx = `structuredContent: ${JSON.stringify(sc).slice(0, 1500)}`;
  assert.equal(sc.status, 'ok', ctx);
  assert.equal(sc.exit_code, 0, ctx);
  assert.equal(sc.stdout, stdout, ctx);
  if (language) assert.equal(sc.language, language, ctx);
  assert.notEqual(result.isError, true, ctx);
  if (stdout.trim()) assert.ok(textOf(result).includes(stdout.trim()), `text lacks stdout: ${textOf(result).slice(0, 500)}`);
  return sc;
}

/** The common part of the SDK tests: tools/list and one run per language. */
async function basicRoundTrip(c) {
  const info = c.client.getServerVersion();
  assert.equal(info?.name, 'mcp-sandboxd');
  const caps = c.client.getServerCapabilities();
  assert.ok(caps?.tools, `capabilities.tools missing: ${JSON.stringify(caps)}`);
  assert.ok(caps?.logging, `capabilities.logging missing: ${JSON.stringify(caps)}`);
  const { tools } = await c.client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ['close_session', 'create_session', 'execute_code', 'install_packages', 'list_languages', 'list_sessions', 'run_js_code', 'run_python_code', 'validate_code']);
  for (const t of tools) assert.equal(t.inputSchema.type, 'object', t.name);
  const tag = randomBytes(4).toString('hex');
  checkOk(await c.call('run_python_code', { code: `print('py ${tag}')` }), `py ${tag}\n`, 'python');
  checkOk(await c.call('run_js_code', { code: `console.log('js ${tag}')` }), `js ${tag}\n`, 'javascript');
  checkOk(await c.call('execute_code', { language: 'python', code: 'import sys\nprint(sys.stdin.read().upper())', stdin: tag }), `${tag.toUpperCase()}\n`);
  await c.client.ping();
}

// ---- live output ---------------------------------------------------------------

// Prints a line every 200 ms for 2 s, then one line on stderr. Each line is
// one write: print() writes the text and the newline separately (python -u),
// and the daemon may flush its coalescing buffer between the two. The final
// sleep lets the stderr chunk go out before the result: the SDK client runs
// notification handlers in a microtask but handles a response at once, so a
// progress notification read in the same chunk as the response is dropped
// ("unknown token") even though the daemon sent it first.
const LIVE_LINES = 10;
const LIVE_CODE = [
  'import sys, time',
  `for i in range(${LIVE_LINES}):`,
  "    sys.stdout.write('live line %d\\n' % i)",
  '    sys.stdout.flush()',
  '    time.sleep(0.2)',
  "sys.stderr.write('live stderr\\n')",
  'sys.stderr.flush()',
  'time.sleep(0.4)',
].join('\n');
const LIVE_STDOUT = Array.from({ length: LIVE_LINES }, (_, i) => `live line ${i}\n`).join('');

/**
 * Checks chunks of live output ({t, text, stream}, t in ms since the call
 * started) against LIVE_CODE's output and its result at tResult.
 */
function checkLive(chunks, tResult, what) {
  const ctx = `${what} (result at ${tResult} ms): ${JSON.stringify(chunks.map((c) => [c.t, c.stream, c.text]))}`;
  const out = chunks.filter((c) => c.stream === 'stdout');
  const err = chunks.filter((c) => c.stream === 'stderr');
  assert.ok(out.length >= 5, `want >= 5 stdout chunks; ${ctx}`);
  for (const c of out) assert.match(c.text, /^(live line \d+\n)+$/, `each chunk must be whole lines of the program's output; ${ctx}`);
  assert.equal(out.map((c) => c.text).join(''), LIVE_STDOUT, `the stdout chunks must add up to the output, in order; ${ctx}`);
  assert.equal(err.map((c) => c.text).join(''), 'live stderr\n', `stderr chunk; ${ctx}`);
  for (const c of chunks) assert.ok(c.t <= tResult, `a chunk arrived after the result; ${ctx}`);
  assert.ok(out[0].t <= tResult - 1000, `the first chunk must arrive well (>= 1 s) before the result; ${ctx}`);
  assert.ok(out[4].t - out[0].t >= 500, `chunks must arrive as the lines are printed, not in one burst; ${ctx}`);
}

/** Runs LIVE_CODE with a progress token; returns {chunks, tResult, events}. */
async function runWithProgress(call) {
  const events = [];
  const t0 = Date.now();
  const result = await call({ onprogress: (p) => events.push({ t: Date.now() - t0, ...p }) });
  const tResult = Date.now() - t0;
  const sc = checkOk(result, LIVE_STDOUT, 'python');
  assert.equal(sc.stderr, 'live stderr\n');
  for (let i = 1; i < events.length; i++) {
    assert.ok(events[i].progress > events[i - 1].progress, `progress must increase: ${JSON.stringify(events)}`);
  }
  const chunks = events.map((e) => ({ t: e.t, text: e.message, stream: e._meta?.['dev.mcp-sandboxd/stream'] }));
  checkLive(chunks, tResult, 'progress notifications');
  return { chunks, tResult, events };
}

/** Runs LIVE_CODE with logging at `info` set; returns the log notifications. */
async function runWithLogging(c) {
  const logs = [];
  let t0 = Date.now();
  c.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push({ t: Date.now() - t0, ...n.params }));
  await c.client.setLoggingLevel('info');
  t0 = Date.now();
  const result = await c.call('run_python_code', { code: LIVE_CODE });
  const tResult = Date.now() - t0;
  checkOk(result, LIVE_STDOUT, 'python');
  const ctx = JSON.stringify(logs);
  for (const l of logs) {
    assert.ok(['stdout', 'stderr'].includes(l.logger), `logger must be stdout or stderr: ${ctx}`);
    assert.equal(l.level, l.logger === 'stdout' ? 'info' : 'warning', `level: ${ctx}`);
    assert.equal(typeof l.data, 'string', ctx);
  }
  checkLive(logs.map((l) => ({ t: l.t, text: l.data, stream: l.logger })), tResult, 'log notifications');
  // Above the level of both streams: nothing more is sent.
  await c.client.setLoggingLevel('error');
  const before = logs.length;
  checkOk(await c.call('run_python_code', { code: "import sys\nprint('quiet')\nprint('quiet', file=sys.stderr)" }), 'quiet\n');
  await sleep(200);
  assert.equal(logs.length, before, `no log notification expected at level error: ${JSON.stringify(logs.slice(before))}`);
}

// ---- the suite -----------------------------------------------------------------

test('preflight: binary present, engine answers', (tc) => preflight(tc));

describe('over the SDK clients', { timeout: 600_000 }, () => {
  /** @type {HttpDaemon} */
  let d;
  before(async () => {
    d = await HttpDaemon.start('main', { args: ['--max-concurrent', '24'] });
  });
  const t = (name, fn, opts = {}) => test(name, { timeout: TEST_TIMEOUT_MS, ...opts }, (tc) => withDaemon(d, () => fn(tc)));

  t('streamable HTTP: initialize, tools/list, Python and JavaScript', async () => {
    const c = await sdkClient(d);
    try {
      assert.match(c.transport.sessionId || '', /^[\x21-\x7e]{8,}$/, `session id ${JSON.stringify(c.transport.sessionId)}`);
      assert.equal(c.transport.protocolVersion, LATEST_PROTOCOL_VERSION);
      await basicRoundTrip(c);
    } finally {
      await c.close();
    }
  });

  t('streamable HTTP: resources, prompts, completion', async () => {
    const c = await sdkClient(d);
    try {
      const { resources } = await c.client.listResources();
      assert.ok(resources.some((r) => r.uri === 'mcp-sandboxd://environment'), JSON.stringify(resources));
      const read = await c.client.readResource({ uri: 'mcp-sandboxd://environment' });
      assert.equal(read.contents?.[0]?.uri, 'mcp-sandboxd://environment', JSON.stringify(read));
      assert.deepEqual((await c.client.listPrompts()).prompts, []);
      const comp = await c.client.complete({ ref: { type: 'ref/prompt', name: 'nope' }, argument: { name: 'a', value: 'b' } });
      assert.deepEqual(comp.completion.values, []);
      assert.deepEqual(await c.client.subscribeResource({ uri: 'test://anything' }), {});
      assert.deepEqual(await c.client.unsubscribeResource({ uri: 'test://anything' }), {});
    } finally {
      await c.close();
    }
  });

  t('legacy HTTP+SSE (GET /sse, POST /messages): initialize, tools/list, Python and JavaScript', async () => {
    const c = await sdkClient(d, { kind: 'sse' });
    try {
      await basicRoundTrip(c);
    } finally {
      await c.close();
    }
  });

  t('streamable HTTP: live output as progress notifications, before the result', async () => {
    const c = await sdkClient(d);
    try {
      await runWithProgress((o) => c.call('run_python_code', { code: LIVE_CODE }, o));
      await sleep(300);
      const late = c.errors.filter((e) => /progress|unknown/i.test(String(e)));
      assert.deepEqual(late.map(String), [], 'no progress notification may follow the result');
    } finally {
      await c.close();
    }
  });

  t('legacy HTTP+SSE: live output as progress notifications, before the result', async () => {
    const c = await sdkClient(d, { kind: 'sse' });
    try {
      await runWithProgress((o) => c.call('run_python_code', { code: LIVE_CODE }, o));
    } finally {
      await c.close();
    }
  });

  t('streamable HTTP: live output as log notifications after logging/setLevel', async () => {
    const c = await sdkClient(d);
    try {
      await runWithLogging(c);
    } finally {
      await c.close();
    }
  });

  t('20 concurrent clients (own sessions) each get exactly their own output', async (tc) => {
    const N = 20;
    const t0 = Date.now();
    const clients = await Promise.all(Array.from({ length: N }, (_, i) => sdkClient(d, { name: `concurrent-${i}` })));
    try {
      const sids = new Set(clients.map((c) => c.transport.sessionId));
      assert.equal(sids.size, N, 'every client must get its own session');
      const tokens = clients.map((_, i) => `token-${i}-${randomBytes(6).toString('hex')}`);
      const results = await Promise.all(
        clients.map((c, i) =>
          c.call('execute_code', {
            language: i % 2 ? 'javascript' : 'python',
            code: i % 2 ? `console.log(${JSON.stringify(tokens[i])})` : `print(${JSON.stringify(tokens[i])})`,
            memory_mb: 128,
            timeout_ms: 60_000,
          }),
        ),
      );
      results.forEach((r, i) => checkOk(r, `${tokens[i]}\n`, i % 2 ? 'javascript' : 'python'));
      tc.diagnostic(`${N} concurrent runs took ${Date.now() - t0} ms`);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  after(async () => {
    await d?.stop();
  });
});

test('stdio: live output as progress notifications, before the result', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await SdkDaemon.start('stdio-progress', { listTools: false, clientName: 'mcp-sandboxd-http-test' });
  try {
    await withDaemon(d, () =>
      runWithProgress((o) => d.client.callTool({ name: 'run_python_code', arguments: { code: LIVE_CODE } }, undefined, { timeout: CALL_TIMEOUT_MS, ...o })),
    );
  } finally {
    await d.close();
  }
});

describe('cancellation', { timeout: 300_000 }, () => {
  const LONG = { language: 'python', code: "import time\nprint('started', flush=True)\ntime.sleep(120)", timeout_ms: 200_000 };

  test('notifications/cancelled (AbortSignal) removes the container, long before its program would end; the daemon keeps serving', { timeout: TEST_TIMEOUT_MS }, async (tc) => {
    const marker = `${RUN_ID}-cancel`;
    const d = await HttpDaemon.start('cancel', { marker, args: NO_POOL });
    await withDaemon(d, async () => {
      const c = await sdkClient(d);
      try {
        const ac = new AbortController();
        const pending = c.call('execute_code', LONG, { signal: ac.signal });
        pending.catch(() => {});
        const ctr = await waitRunning(marker);
        await sleep(300);
        const t0 = Date.now();
        ac.abort(new Error('the test cancels'));
        await assert.rejects(pending);
        // Gone long before its program would end (120 s): how soon is a
        // figure, reported, not asserted.
        const took = await waitGone(ctr.id, GONE_GUARD_MS, t0);
        tc.diagnostic(`container ${ctr.short} gone ${took} ms after the cancellation`);
        assert.ok(took !== null, `container ${ctr.short} still exists ${GONE_GUARD_MS} ms after notifications/cancelled`);
        assert.deepEqual(await ourContainers(marker), []);
        // The same session and a new one still work; no response came for the cancelled call.
        checkOk(await c.call('run_python_code', { code: "print('after cancel')" }), 'after cancel\n');
        const c2 = await sdkClient(d);
        try {
          checkOk(await c2.call('run_js_code', { code: "console.log('new session')" }), 'new session\n');
        } finally {
          await c2.close();
        }
        await sleep(200);
        const stray = c.errors.filter((e) => /unknown message ID/i.test(String(e)));
        assert.deepEqual(stray.map(String), [], 'a response was sent for the cancelled request');
      } finally {
        await c.close();
      }
    });
  });

  test('DELETE of the session cancels its run, removes the container; the session is then 404', { timeout: TEST_TIMEOUT_MS }, async (tc) => {
    const marker = `${RUN_ID}-delete`;
    const d = await HttpDaemon.start('delete', { marker, args: NO_POOL });
    await withDaemon(d, async () => {
      const c = await sdkClient(d);
      const sid = c.transport.sessionId;
      try {
        const pending = c.call('execute_code', LONG);
        pending.catch(() => {});
        const ctr = await waitRunning(marker);
        await sleep(300);
        const t0 = Date.now();
        await c.transport.terminateSession();
        const answered = Date.now() - t0;
        const took = await waitGone(ctr.id, GONE_GUARD_MS, t0);
        tc.diagnostic(`DELETE answered in ${answered} ms; container ${ctr.short} gone ${took} ms after the DELETE was sent`);
        assert.ok(took !== null, `container ${ctr.short} still exists ${GONE_GUARD_MS} ms after DELETE of its session`);
        const s = new RawSession(d);
        s.sid = sid;
        s.version = PV;
        const r = await s.request('ping');
        assert.equal(r.status, 404, `a request on the deleted session: ${show(r)}`);
      } finally {
        await c.client.close().catch(() => {});
      }
      const c2 = await sdkClient(d);
      try {
        checkOk(await c2.call('run_python_code', { code: "print('still serving')" }), 'still serving\n');
      } finally {
        await c2.close();
      }
    });
  });

  test('raw: after notifications/cancelled the POST stream ends with no response', { timeout: TEST_TIMEOUT_MS }, async (tc) => {
    const marker = `${RUN_ID}-rawcancel`;
    const d = await HttpDaemon.start('raw-cancel', { marker, args: NO_POOL });
    await withDaemon(d, async () => {
      const s = new RawSession(d);
      await s.initialize();
      const id = 'long-1';
      const stream = s.post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'execute_code', arguments: LONG } }, { timeoutMs: 20_000 });
      stream.catch(() => {});
      const ctr = await waitRunning(marker);
      const t0 = Date.now();
      const n = await s.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'test' } });
      assert.equal(n.status, 202, `notifications/cancelled: ${show(n)}`);
      const r = await stream;
      const ended = Date.now() - t0;
      assert.equal(r.status, 200, show(r));
      assert.deepEqual(
        r.messages.filter((m) => m && m.id === id),
        [],
        `a cancelled request must get no response: ${JSON.stringify(r.events)}`,
      );
      // The stream ended within its 20 s wait (its program would run 120 s).
      const took = await waitGone(ctr.id, GONE_GUARD_MS, t0);
      tc.diagnostic(`POST stream ended ${ended} ms after the cancellation; container gone after ${took} ms`);
      assert.ok(took !== null, `container ${ctr.short} still exists ${GONE_GUARD_MS} ms after the cancellation`);
      assert.deepEqual((await s.request('ping')).reply?.result, {});
      await s.delete();
    });
  });

  test('--max-concurrent 1: a second run at once waits for the slot, then runs; another session\'s call goes before a session\'s backlog', { timeout: TEST_TIMEOUT_MS }, async () => {
    const marker = `${RUN_ID}-queue`;
    const d = await HttpDaemon.start('queue', { marker, args: [...NO_POOL, '--max-concurrent', '1', '--max-session-queued', '3'] });
    await withDaemon(d, async () => {
      const c = await sdkClient(d);
      try {
        const first = c.call('execute_code', { language: 'python', code: "import time\ntime.sleep(2)\nprint('first')", timeout_ms: 30_000 });
        await waitRunning(marker);
        const t0 = Date.now();
        const second = await c.call('run_python_code', { code: "print('second')" });
        checkOk(second, 'second\n');
        checkOk(await first, 'first\n');
        assert.ok(Date.now() - t0 >= 500, 'the second run did not wait for the first');
      } finally {
        await c.close();
      }

      // Fair turns: session a has a run going (its first output says so)
      // and three calls waiting; session b's one call then takes the next
      // slot. In one FIFO it would come after all of a's.
      const a = await sdkClient(d, { name: 'backlog' });
      const b = await sdkClient(d, { name: 'single' });
      try {
        const done = []; // tags of the calls that ran, in the order they answered
        const run = (cl, tag, code, opts) =>
          cl.call('execute_code', { language: 'python', code, timeout_ms: 60_000 }, opts).then((r) => {
            if (r.structuredContent?.status !== 'busy') done.push(tag);
            return r;
          });
        let started;
        const going = new Promise((resolve) => (started = resolve));
        const a0 = run(a, 'a0', "print('a0', flush=True)\nimport time\ntime.sleep(3)", { onprogress: () => started() });
        await going;
        const backlog = [1, 2, 3, 4].map((i) => run(a, `a${i}`, `import time\ntime.sleep(0.5)\nprint('a${i}')`));
        // Past --max-session-queued 3 the last of the four to arrive gets
        // busy at once: by then the other three wait.
        const over = await Promise.any(backlog.map((p) => p.then((r) => (r.structuredContent?.status === 'busy' ? r : Promise.reject(new Error('ran'))))));
        assert.equal(over.isError, true);
        assert.match(over.structuredContent.message, /--max-session-queued/, JSON.stringify(over.structuredContent));
        const single = await run(b, 'b', "print('b')");
        checkOk(single, 'b\n');
        const results = await Promise.all([a0, ...backlog]);
        checkOk(results[0], 'a0\n');
        assert.equal(results.filter((r) => r.structuredContent?.status === 'busy').length, 1, JSON.stringify(results.map((r) => r.structuredContent)));
        assert.equal(results.filter((r) => r.structuredContent?.status === 'ok').length, 4, JSON.stringify(results.map((r) => r.structuredContent)));
        assert.deepEqual(done.slice(0, 2), ['a0', 'b'], `answers in the order ${done.join(', ')}`);
        assert.equal(done.length, 5, done.join(', '));
      } finally {
        await a.close();
        await b.close();
      }
    });
  });

  test('--max-concurrent 1 --max-queued 0: a second run at once gets a busy isError result', { timeout: TEST_TIMEOUT_MS }, async () => {
    const marker = `${RUN_ID}-busy`;
    const d = await HttpDaemon.start('busy', { marker, args: [...NO_POOL, '--max-concurrent', '1', '--max-queued', '0'] });
    await withDaemon(d, async () => {
      const c = await sdkClient(d);
      try {
        const first = c.call('execute_code', { language: 'python', code: "import time\ntime.sleep(2)\nprint('first')", timeout_ms: 30_000 });
        await waitRunning(marker);
        const second = await c.call('run_python_code', { code: "print('second')" });
        assert.equal(second.isError, true, JSON.stringify(second));
        assert.equal(second.structuredContent?.status, 'busy', JSON.stringify(second));
        assert.match(textOf(second), /busy/i, JSON.stringify(second));
        checkOk(await first, 'first\n');
        checkOk(await c.call('run_python_code', { code: "print('third')" }), 'third\n');
      } finally {
        await c.close();
      }
    });
  });
});

test('resumption: a dropped POST event stream is resumed with GET + Last-Event-ID', { timeout: TEST_TIMEOUT_MS }, async (tc) => {
  const d = await HttpDaemon.start('resume', { marker: `${RUN_ID}-resume` });
  await withDaemon(d, async () => {
    const s = new RawSession(d);
    await s.initialize();
    const token = `resumed-${randomBytes(4).toString('hex')}`;
    const id = 77;
    const ac = new AbortController();
    const t0 = Date.now();
    const res = await fetch(d.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': s.sid,
        'MCP-Protocol-Version': s.version,
      },
      body: JSON.stringify({
        jsonrpc: '2.0', id, method: 'tools/call',
        params: { name: 'run_python_code', arguments: { code: `import time\ntime.sleep(1.5)\nprint('${token}')` } },
      }),
      signal: ac.signal,
    });
    assert.equal(res.status, 200, `tools/call POST: HTTP ${res.status}`);
    assert.match(res.headers.get('content-type') || '', /^text\/event-stream/, 'a tools/call with Accept: ..., text/event-stream gets an event stream');
    const dec = new TextDecoder();
    const parser = new SseParser();
    const reader = res.body.getReader();
    const seen = [];
    let priming;
    while (!priming) {
      const { value, done } = await Promise.race([
        reader.read(),
        sleep(10_000).then(() => assert.fail(`no event with an id within 10 s: ${JSON.stringify(seen)}`)),
      ]);
      if (done) break;
      for (const ev of parser.push(dec.decode(value, { stream: true }))) {
        seen.push(ev);
        if (ev.id !== undefined && !priming) priming = ev;
      }
    }
    const primedMs = Date.now() - t0;
    ac.abort();
    assert.ok(priming, `the POST stream ended without an event id: ${JSON.stringify(seen)}`);
    assert.ok(!seen.some((ev) => jsonOf(ev)?.id === id), `the response came before the drop: ${JSON.stringify(seen)}`);
    assert.ok(!priming.data, `the priming event must have empty data: ${JSON.stringify(priming)}`);
    assert.match(priming.id, /^.+-\d+$/, `event ids look like <stream>-<seq>: ${JSON.stringify(priming)}`);
    assert.equal(typeof priming.retry, 'number', `the priming event carries retry: ${JSON.stringify(priming)}`);
    tc.diagnostic(`priming event ${JSON.stringify(priming)} after ${primedMs} ms; connection dropped`);

    await sleep(200);
    const res2 = await fetch(d.url, {
      method: 'GET',
      headers: {
        Accept: 'text/event-stream',
        'Mcp-Session-Id': s.sid,
        'MCP-Protocol-Version': s.version,
        'Last-Event-ID': priming.id,
      },
      signal: AbortSignal.timeout(30_000),
    });
    if (res2.status !== 200) assert.fail(`GET with Last-Event-ID: HTTP ${res2.status} ${await res2.text().catch(() => '')}`);
    assert.match(res2.headers.get('content-type') || '', /^text\/event-stream/);
    const reader2 = res2.body.getReader();
    const parser2 = new SseParser();
    const replay = [];
    let reply;
    while (!reply) {
      const { value, done } = await reader2.read();
      if (done) break;
      for (const ev of parser2.push(dec.decode(value, { stream: true }))) {
        replay.push(ev);
        const m = jsonOf(ev);
        if (m?.id === id) reply = m;
      }
    }
    await reader2.cancel().catch(() => {});
    assert.ok(reply, `no response to request ${id} on the resumed stream: ${JSON.stringify(replay)}`);
    assert.ok(reply.result, JSON.stringify(reply));
    checkOk(reply.result, `${token}\n`, 'python');
    const stream = priming.id.replace(/-\d+$/, '');
    const seq = Number(priming.id.slice(stream.length + 1));
    for (const ev of replay.filter((e) => e.id !== undefined)) {
      assert.ok(ev.id.startsWith(`${stream}-`), `a replayed event of another stream: ${JSON.stringify(ev)}`);
      assert.ok(Number(ev.id.slice(stream.length + 1)) > seq, `replayed an event at or before Last-Event-ID: ${JSON.stringify(ev)}`);
    }
    tc.diagnostic(`resumed: ${replay.length} event(s), response after ${Date.now() - t0} ms`);
  });
});

describe('HTTP rules (raw requests)', { timeout: 300_000 }, () => {
  /** @type {HttpDaemon} */
  let d;
  before(async () => {
    d = await HttpDaemon.start('rules', { marker: `${RUN_ID}-rules` });
  });
  after(async () => {
    await d?.stop();
  });
  const t = (name, fn) => test(name, { timeout: TEST_TIMEOUT_MS }, (tc) => withDaemon(d, () => fn(tc)));
  const post = (headers, body = initializeBody()) =>
    httpRaw(d, { headers: { Accept: 'application/json, text/event-stream', ...headers }, body });

  t('Origin http://evil.example.com → 403; the daemon\'s own origins are accepted', async () => {
    let r = await post({ Origin: `http://${EVIL}` });
    assert.equal(r.status, 403, `POST /mcp with a foreign Origin: ${show(r)}`);
    r = await httpRaw(d, { method: 'GET', path: '/sse', headers: { Accept: 'text/event-stream', Origin: `http://${EVIL}` }, stopWhen: () => true });
    assert.equal(r.status, 403, `GET /sse with a foreign Origin: ${show(r)}`);
    for (const origin of [`http://127.0.0.1:${d.port}`, `http://localhost:${d.port}`]) {
      r = await post({ Origin: origin });
      assert.equal(r.status, 200, `Origin ${origin}: ${show(r)}`);
    }
  });

  t('Host evil.example.com → 403; Host localhost:PORT is accepted', async () => {
    let r = await post({ Host: EVIL });
    assert.equal(r.status, 403, `POST /mcp with Host ${EVIL}: ${show(r)}`);
    r = await post({ Host: `${EVIL}:${d.port}`, Origin: `http://${EVIL}:${d.port}` });
    assert.equal(r.status, 403, `DNS rebinding (Host and Origin ${EVIL}:${d.port}): ${show(r)}`);
    r = await post({ Host: `localhost:${d.port}` });
    assert.equal(r.status, 200, `Host localhost:${d.port}: ${show(r)}`);
  });

  t('MCP-Protocol-Version: 1999-01-01 → 400; a supported older version is accepted', async () => {
    const s = new RawSession(d);
    await s.initialize();
    let r = await s.request('ping', undefined, { headers: { 'MCP-Protocol-Version': '1999-01-01' } });
    assert.equal(r.status, 400, `ping with MCP-Protocol-Version 1999-01-01: ${show(r)}`);
    r = await s.request('ping', undefined, { headers: { 'MCP-Protocol-Version': '2025-03-26' } });
    assert.equal(r.status, 200, `ping with MCP-Protocol-Version 2025-03-26: ${show(r)}`);
    r = await s.request('ping');
    assert.equal(r.status, 200, show(r));
    assert.deepEqual(r.reply?.result, {}, show(r));
    await s.delete();
  });

  t('no Mcp-Session-Id on a non-initialize request → 400; an unknown one → 404', async () => {
    const s = new RawSession(d);
    await s.initialize();
    let r = await s.request('tools/list', undefined, { headers: { 'Mcp-Session-Id': undefined } });
    assert.equal(r.status, 400, `tools/list without Mcp-Session-Id: ${show(r)}`);
    r = await s.request('tools/list', undefined, { headers: { 'Mcp-Session-Id': `no-such-session-${randomBytes(8).toString('hex')}` } });
    assert.equal(r.status, 404, `tools/list with an unknown session: ${show(r)}`);
    r = await s.request('tools/list');
    assert.equal(r.status, 200, show(r));
    assert.equal(r.reply?.result?.tools?.length, 9, show(r));
    const del = await s.delete();
    assert.ok(del.status >= 200 && del.status < 300, `DELETE: ${show(del)}`);
    r = await s.request('ping');
    assert.equal(r.status, 404, `ping on the deleted session: ${show(r)}`);
  });

  t('tools/call with a progress token: priming event, progress events, the response last, then the stream ends', async () => {
    const s = new RawSession(d);
    await s.initialize();
    const id = 9;
    const r = await httpRaw(d, {
      headers: s.headers(),
      body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'run_python_code', arguments: { code: LIVE_CODE }, _meta: { progressToken: 'tok-9' } } },
      timeoutMs: 60_000, // no stopWhen: the daemon must end the stream after the response
    });
    const ctx = JSON.stringify(r.events);
    assert.equal(r.status, 200, show(r));
    assert.match(r.headers['content-type'] || '', /^text\/event-stream/, show(r));
    assert.ok(r.events.length >= 3, ctx);
    const [priming, ...rest] = r.events;
    assert.ok(priming.id !== undefined && !priming.data, `the first event must be the priming event: ${ctx}`);
    const last = jsonOf(rest[rest.length - 1]);
    assert.equal(last?.id, id, `the response must be the last event: ${ctx}`);
    checkOk(last.result, LIVE_STDOUT, 'python');
    const notes = rest.slice(0, -1).map(jsonOf);
    assert.ok(notes.length >= 5, ctx);
    for (const n of notes) {
      assert.equal(n?.method, 'notifications/progress', ctx);
      assert.equal(n.params.progressToken, 'tok-9', ctx);
    }
    const chunks = notes.map((n) => ({ t: 0, text: n.params.message, stream: n.params._meta?.['dev.mcp-sandboxd/stream'] }));
    assert.equal(chunks.filter((c) => c.stream === 'stdout').map((c) => c.text).join(''), LIVE_STDOUT, ctx);
    assert.equal(chunks.filter((c) => c.stream === 'stderr').map((c) => c.text).join(''), 'live stderr\n', ctx);
    const stream = priming.id.replace(/-\d+$/, '');
    let seq = -1;
    for (const ev of r.events) {
      assert.ok(ev.id?.startsWith(`${stream}-`), `every event carries an id of the same stream: ${ctx}`);
      const n = Number(ev.id.slice(stream.length + 1));
      assert.ok(n > seq, `event ids must increase: ${ctx}`);
      seq = n;
    }
    await s.delete();
  });

  t('a POSTed notification → 202 with no body', async () => {
    const s = new RawSession(d);
    await s.initialize();
    const r = await s.post({ jsonrpc: '2.0', method: 'notifications/something_unknown', params: {} });
    assert.equal(r.status, 202, show(r));
    assert.equal(r.body, '', show(r));
    await s.delete();
  });

  t('GET /healthz → 200 {"status":"ok"} with the engine reachable, and nothing more without a token', async (tc) => {
    const r = await httpRaw(d, { method: 'GET', path: '/healthz' });
    assert.equal(r.status, 200, show(r));
    assert.match(r.headers['content-type'] || '', /application\/json/, show(r));
    tc.diagnostic(`/healthz: ${r.body.trim()}`);
    assert.deepEqual(JSON.parse(r.body), { status: 'ok' }, show(r));
  });
});

describe('daemon options', { timeout: 300_000 }, () => {
  test('bearer token (--auth-token-file): missing/wrong → 401 + WWW-Authenticate; right → works with the SDK', { timeout: TEST_TIMEOUT_MS }, async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'mcpsbx-token-'));
    const token = randomBytes(24).toString('hex');
    const file = path.join(dir, 'token');
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    const d = await HttpDaemon.start('token-file', { marker: `${RUN_ID}-token`, args: ['--auth-token-file', file] });
    try {
      await withDaemon(d, async () => {
        assert.ok(!d.stderr.includes(token), 'the token must not be logged');
        for (const [what, auth] of [['no Authorization', undefined], ['a wrong token', `Bearer ${token}x`], ['a non-Bearer scheme', `Basic ${token}`]]) {
          const headers = { Accept: 'application/json, text/event-stream' };
          if (auth) headers.Authorization = auth;
          const r = await httpRaw(d, { headers, body: initializeBody() });
          assert.equal(r.status, 401, `${what}: ${show(r)}`);
          assert.match(r.headers['www-authenticate'] || '', /^Bearer\b/i, `${what}: WWW-Authenticate: ${show(r)}`);
        }
        const sse = await httpRaw(d, { method: 'GET', path: '/sse', headers: { Accept: 'text/event-stream' }, stopWhen: () => true });
        assert.equal(sse.status, 401, `GET /sse without a token: ${show(sse)}`);
        const c = await sdkClient(d, { headers: { Authorization: `Bearer ${token}` } });
        try {
          checkOk(await c.call('run_python_code', { code: "print('authorized')" }), 'authorized\n');
        } finally {
          await c.close();
        }
        const legacy = await sdkClient(d, { kind: 'sse', headers: { Authorization: `Bearer ${token}` } });
        try {
          checkOk(await legacy.call('run_js_code', { code: "console.log('authorized')" }), 'authorized\n');
        } finally {
          await legacy.close();
        }
        assert.ok(!d.stderr.includes(token), 'the token must not be logged');
      });
    } finally {
      await d.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('off loopback a token is required: 0.0.0.0 or :: without one → exit 2 saying why; with MCPSANDBOXD_AUTH_TOKEN it serves', { timeout: TEST_TIMEOUT_MS }, async () => {
    for (const listen of ['0.0.0.0:0', '[::]:0']) {
      const r = spawnSync(BIN, daemonArgs(['--http', listen]), { env: daemonEnv(), encoding: 'utf8', timeout: 20_000 });
      const host = listen.replace(/^\[?(.*?)\]?:0$/, '$1');
      assert.equal(r.status, 2, `--http ${listen} without a token: status ${r.status}, signal ${r.signal}, stderr ${r.stderr}`);
      assert.ok(r.stderr.includes(`${host} is not a loopback address`), `--http ${listen}: ${r.stderr}`);
      assert.match(r.stderr, /needs a bearer token.*--auth-token-file/, `--http ${listen}: ${r.stderr}`);
    }
    const token = randomBytes(16).toString('hex');
    const d = await HttpDaemon.start('token-env', { marker: `${RUN_ID}-token`, env: { MCPSANDBOXD_AUTH_TOKEN: token }, args: ['--http', '0.0.0.0:0'] });
    try {
      await withDaemon(d, async () => {
        assert.match(d.base, /^http:\/\/0\.0\.0\.0:/, 'listens on every interface');
        assert.ok(!d.stderr.includes('serving without authentication'), 'no warning with a token');
        let r = await httpRaw(d, { headers: { Accept: 'application/json, text/event-stream' }, body: initializeBody() });
        assert.equal(r.status, 401, show(r));
        assert.match(r.headers['www-authenticate'] || '', /^Bearer\b/i, show(r));
        const s = new RawSession(d, { Authorization: `Bearer ${token}` });
        await s.initialize();
        r = await s.request('ping');
        assert.deepEqual(r.reply?.result, {}, show(r));
        await s.delete();
      });
    } finally {
      await d.stop();
    }
  });

  test('--allowed-origins / --allowed-hosts admit the named ones only', { timeout: TEST_TIMEOUT_MS }, async () => {
    const d = await HttpDaemon.start('allow-lists', {
      marker: `${RUN_ID}-allow`,
      args: ['--allowed-origins', 'https://app.example.com', '--allowed-hosts', 'mcp.example.com'],
    });
    try {
      await withDaemon(d, async () => {
        const post = (headers) => httpRaw(d, { headers: { Accept: 'application/json, text/event-stream', ...headers }, body: initializeBody() });
        let r = await post({ Origin: 'https://app.example.com' });
        assert.equal(r.status, 200, `allowed Origin: ${show(r)}`);
        r = await post({ Origin: 'https://other.example.com' });
        assert.equal(r.status, 403, `other Origin: ${show(r)}`);
        r = await post({ Host: 'mcp.example.com' });
        assert.equal(r.status, 200, `allowed Host: ${show(r)}`);
        r = await post({ Host: EVIL });
        assert.equal(r.status, 403, `other Host: ${show(r)}`);
      });
    } finally {
      await d.stop();
    }
  });

  test('--max-sessions 2: a third initialize → 503; a DELETE frees a slot', { timeout: TEST_TIMEOUT_MS }, async () => {
    const d = await HttpDaemon.start('max-sessions', { marker: `${RUN_ID}-sessions`, args: ['--max-sessions', '2'] });
    try {
      await withDaemon(d, async () => {
        // Loopback without a token serves, and says so (just after the
        // "serving" line the start waited for).
        for (const t0 = Date.now(); !/warn: serving without authentication/.test(d.stderr) && Date.now() - t0 < 5000;) await sleep(20);
        assert.match(d.stderr, /warn: serving without authentication/);
        const a = new RawSession(d);
        const b = new RawSession(d);
        await a.initialize();
        await b.initialize();
        const c = new RawSession(d);
        const r = await c.request('initialize', { protocolVersion: PV, capabilities: {}, clientInfo: { name: 'third', version: '0' } });
        assert.equal(r.status, 503, `third initialize with --max-sessions 2: ${show(r)}`);
        const del = await a.delete();
        assert.ok(del.status >= 200 && del.status < 300, `DELETE: ${show(del)}`);
        await c.initialize();
        assert.deepEqual((await b.request('ping')).reply?.result, {});
      });
    } finally {
      await d.stop();
    }
  });

  test('--session-idle-ms 2000: an unused session is gone (404) after ~3 s', { timeout: TEST_TIMEOUT_MS }, async (tc) => {
    const d = await HttpDaemon.start('idle', { marker: `${RUN_ID}-idle`, args: ['--session-idle-ms', '2000'] });
    try {
      await withDaemon(d, async () => {
        const s = new RawSession(d);
        await s.initialize();
        await sleep(1000);
        let r = await s.request('ping');
        assert.equal(r.status, 200, `ping 1 s after initialize: ${show(r)}`);
        const t0 = Date.now();
        await sleep(3000);
        r = await s.request('ping');
        tc.diagnostic(`ping ${Date.now() - t0} ms after the last use: HTTP ${r.status}`);
        assert.equal(r.status, 404, `ping 3 s after the last use with --session-idle-ms 2000: ${show(r)}`);
      });
    } finally {
      await d.stop();
    }
  });

  test('GET /healthz with the engine unreachable → 503 {"status":"unavailable"}; the reason only with the token', { timeout: TEST_TIMEOUT_MS }, async (tc) => {
    const { args, sock } = KUBERNETES ? deadBackend() : { args: ['--engine', 'unix:///tmp/nonexistent-mcpsbx-http.sock'], sock: '/tmp/nonexistent-mcpsbx-http.sock' };
    assert.ok(KUBERNETES || !existsSync(sock));
    const token = randomBytes(16).toString('hex');
    const d = await HttpDaemon.start('healthz-down', { marker: `${RUN_ID}-down`, args, env: { MCPSANDBOXD_AUTH_TOKEN: token } });
    try {
      await withDaemon(d, async () => {
        let r = await httpRaw(d, { method: 'GET', path: '/healthz' });
        tc.diagnostic(`/healthz: ${r.status} ${r.body.trim()}`);
        assert.equal(r.status, 503, show(r));
        assert.match(r.headers['content-type'] || '', /application\/json/, show(r));
        assert.deepEqual(JSON.parse(r.body), { status: 'unavailable' }, show(r));
        r = await httpRaw(d, { method: 'GET', path: '/healthz', headers: { Authorization: `Bearer ${token}` } });
        assert.equal(r.status, 503, show(r));
        const body = JSON.parse(r.body);
        assert.equal(body.engine, 'unreachable', show(r));
        assert.ok(String(body.error || '').includes(sock), `the error should name the socket: ${show(r)}`);
      });
    } finally {
      await d.stop();
    }
  });
});

test('every daemon exited cleanly and no container is left', { timeout: 120_000 }, async () => {
  await checkDaemonsAndContainers({ prefix: true });
});
