// Integration tests for the MCP 2026-07-28 wire ("modern", stateless) that
// the daemon serves beside the 2025-11-25 one (src/mcp/modern.c,
// src/mcp/envelope.c, src/transport/http_mcp.c): a request whose
// params._meta names io.modelcontextprotocol/protocolVersion is answered
// on its own, with no initialize and no Mcp-Session-Id.
//
//   node --test tests/integration/modern.test.mjs
//
// Environment: as stdio.test.mjs (MCPSANDBOXD_BIN, MCPSANDBOXD_ENGINE).
//
// Raw requests (fetch over HTTP, JSON-RPC lines over stdio) check the
// envelope's errors with their codes and HTTP statuses, server/discover,
// the cache hints, log notifications only with a logLevel, and that a
// legacy initialize still works on the same daemon. The official SDK v2
// client (@modelcontextprotocol/client), pinned to 2026-07-28 over HTTP
// and over stdio, runs code with progress, reads a returned file, keeps a
// code session across requests and cancels a run (whose container must
// then go); in mode 'auto' over stdio it must connect at once, as modern.
// The official tasks client (@modelcontextprotocol/ext-tasks) drives
// task-backed runs to their result and cancels them (their containers must
// go): on 2025-11-25 with the v1 SDK client (through a custom port) and
// the v2 one, on 2026-07-28 with the v2 client pinned, over HTTP and stdio
// (its rawDispatch sends on the client's own transport). A task's run may
// ask a timeout_ms up to --task-max-timeout-ms, past --max-timeout-ms.
//
// One HTTP daemon (with its pool) and one raw stdio daemon serve most
// tests. The SDK's stdio transport probes on a sibling process it kills
// within a second, so the SDK's stdio daemons have --pool-size 0: a killed
// sibling has no warm sandbox to leave behind.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  DispatchError, TaskCancelledError, createTaskSessionFromClient, resultFromTaskOutcome, taskViewFromExecutionEvent, withTasks,
} from '@modelcontextprotocol/ext-tasks/client';
import { McpError, ResultSchema } from '@modelcontextprotocol/sdk/types.js';

import {
  BIN, RUN_ID, CALL_TIMEOUT_MS, TEST_TIMEOUT_MS, SHORT_TIMEOUT_MS, sleep, allDaemons, annotate, daemonArgs, daemonEnv, withDaemon,
  awaitExit, preflight, ourContainers, HttpDaemon, RawDaemon, SdkDaemon, SseParser, checkRun, checkDaemonsAndContainers,
} from './lib.mjs';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const KEY = {
  version: 'io.modelcontextprotocol/protocolVersion',
  caps: 'io.modelcontextprotocol/clientCapabilities',
  info: 'io.modelcontextprotocol/clientInfo',
  level: 'io.modelcontextprotocol/logLevel',
};
const ERR = { invalidParams: -32602, methodNotFound: -32601, headerMismatch: -32020, unsupportedVersion: -32022 };
const N_TOOLS = 9; // with the default test languages, python and javascript
// The shared HTTP daemon's --daemon-id, and a handle's form (base/handle.h).
const DAEMON_ID = 'modern-a';
const HANDLE = /^[0-9a-z-]{1,63}\.[0-9a-f]{32}$/;
const OURS = new RegExp(`^${DAEMON_ID}\\.[0-9a-f]{32}$`);
// A cancelled run's container goes within this; the run itself would sleep 60 s.
const GONE_GUARD_MS = 30_000;

/** A modern envelope, extra keys winning. */
const envelope = (extra = {}) => ({
  [KEY.version]: MODERN,
  [KEY.caps]: {},
  [KEY.info]: { name: 'modern-raw-test', version: '0' },
  ...extra,
});

/** A modern request: params with the envelope in _meta. */
const modernMsg = (id, method, params = {}, meta = {}) => ({
  jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...envelope(), ...(params._meta ?? {}), ...meta } },
});

const b64 = (s) => Buffer.from(s, 'utf8').toString('base64');
/** x as JSON for a message, at most n characters. */
const j = (x, n = 500) => String(JSON.stringify(x)).slice(0, n);

let hd; // the shared HTTP daemon
let sd; // the shared raw stdio daemon
let v2s; // the shared stdio daemon of the SDK v2 client pinned to 2026-07-28

// ---- raw HTTP ----------------------------------------------------------------

/** What an HTTP answer looked like, for assertion messages. */
function show(r) {
  const h = [...r.headers].filter(([k]) => /^(content-type|mcp-)/i.test(k)).map(([k, v]) => `${k}: ${v}`).join('; ');
  return `HTTP ${r.status} [${h}] ${JSON.stringify(r.text.slice(0, 800))}`;
}

/**
 * POSTs body to the HTTP daemon's /mcp (or url): {status, headers, text,
 * messages, reply} (reply: the response with body's id). A header given
 * undefined is left out.
 */
async function post(body, headers = {}, url = hd.url) {
  const h = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  for (const [k, v] of Object.entries(headers)) {
    for (const old of Object.keys(h)) if (old.toLowerCase() === k.toLowerCase()) delete h[old];
    if (v !== undefined) h[k] = v;
  }
  const res = await fetch(url, {
    method: 'POST', headers: h, body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
  });
  const text = await res.text();
  const r = { status: res.status, headers: res.headers, text, messages: [] };
  const ct = res.headers.get('content-type') || '';
  if (/^text\/event-stream/i.test(ct)) {
    r.messages = new SseParser().push(`${text}\n\n`).filter((ev) => ev.data).map((ev) => JSON.parse(ev.data));
  } else if (/json/i.test(ct) && text) {
    r.messages = [JSON.parse(text)];
  }
  r.reply = r.messages.find((m) => m && m.id === body.id && ('result' in m || 'error' in m));
  return r;
}

/** The headers a modern request carries for msg. */
function modernHeaders(msg) {
  const h = { 'MCP-Protocol-Version': msg.params._meta[KEY.version], 'Mcp-Method': msg.method };
  if (msg.method === 'tools/call' || msg.method === 'prompts/get') h['Mcp-Name'] = msg.params.name;
  if (msg.method === 'resources/read') h['Mcp-Name'] = msg.params.uri;
  if (['tasks/get', 'tasks/update', 'tasks/cancel'].includes(msg.method)) h['Mcp-Name'] = msg.params.taskId;
  return h;
}

/** POSTs a modern request with its headers (headers override them). */
function postModern(id, method, params, { meta, headers, url } = {}) {
  const msg = modernMsg(id, method, params, meta);
  return post(msg, { ...modernHeaders(msg), ...headers }, url);
}

/** A modern HTTP answer that succeeded: its result. */
function okHttp(r) {
  const ctx = show(r);
  assert.equal(r.status, 200, ctx);
  assert.ok(r.reply && r.reply.result, `no result: ${ctx}`);
  assert.equal(r.reply.result.resultType, 'complete', ctx);
  assert.equal(r.headers.get('mcp-session-id'), null, `a modern answer must not open a session: ${ctx}`);
  return r.reply.result;
}

/** A modern HTTP refusal: its status, code and the request's id. */
function refusedHttp(r, id, code, status) {
  const ctx = show(r);
  assert.equal(r.status, status, ctx);
  assert.equal(r.messages.length, 1, ctx);
  const m = r.messages[0];
  assert.equal(m.id, id, `the error must echo id ${JSON.stringify(id)}: ${ctx}`);
  assert.equal(m.error?.code, code, ctx);
  assert.equal(typeof m.error.message, 'string', ctx);
  assert.equal(r.headers.get('mcp-session-id'), null, ctx);
  return m.error;
}

/** The cache hints of a cacheable modern result. */
function cacheable(result, ctx = j(result, 500)) {
  assert.equal(result.resultType, 'complete', ctx);
  assert.ok(Number.isInteger(result.ttlMs) && result.ttlMs >= 0, `ttlMs: ${ctx}`);
  assert.ok(['public', 'private'].includes(result.cacheScope), `cacheScope: ${ctx}`);
}

function checkDiscover(res) {
  const ctx = j(res, 1500);
  assert.equal(res.resultType, 'complete', ctx);
  assert.deepEqual(res.supportedVersions, [MODERN], ctx);
  assert.ok(res.capabilities && typeof res.capabilities === 'object' && res.capabilities.tools, ctx);
  assert.equal(typeof res.instructions, 'string', ctx);
  assert.ok(res.instructions.length > 0, ctx);
  assert.ok(Number.isInteger(res.ttlMs) && res.ttlMs > 0, ctx);
  assert.equal(res.cacheScope, 'public', ctx);
  const info = res._meta?.['io.modelcontextprotocol/serverInfo'];
  assert.equal(info?.name, 'mcp-sandboxd', ctx);
  assert.match(info.version, /^\d+\.\d+\.\d+/, ctx);
}

// ---- SDK v2 ------------------------------------------------------------------

const PIN = { pin: MODERN };

/** A daemon driven by the SDK v2 client over stdio. */
class V2StdioDaemon {
  constructor(name) {
    this.name = name;
    this.stderr = '';
    this.exit = null;
    this.closed = false;
    allDaemons.push(this);
  }

  static async start(name, mode) {
    const d = new V2StdioDaemon(name);
    d.transport = new StdioClientTransport({
      command: BIN, args: daemonArgs(['--pool-size', '0']), env: daemonEnv(), stderr: 'pipe',
    });
    d.transport.stderr.on('data', (c) => (d.stderr += c.toString('utf8')));
    d.client = new Client({ name: 'mcp-sandboxd-modern-test', version: '1.0.0' }, { versionNegotiation: { mode } });
    const t0 = Date.now();
    try {
      await d.client.connect(d.transport, { timeout: 30_000 });
    } catch (e) {
      await d.client.close().catch(() => {});
      d.exit = { code: null, signal: null, connectFailed: String(e) };
      throw annotate(e, d);
    }
    d.connectMs = Date.now() - t0;
    d.proc = d.transport._process;
    d.exited = new Promise((resolve) => {
      if (d.proc.exitCode !== null || d.proc.signalCode !== null) resolve();
      else d.proc.once('exit', () => resolve());
    }).then(() => {
      d.exit = { code: d.proc.exitCode, signal: d.proc.signalCode };
    });
    return d;
  }

  /** Closes stdin and waits for the daemon to exit on its own. */
  async close() {
    if (this.closed) return this.exit;
    this.closed = true;
    if (this.proc && this.exit === null) {
      this.proc.stdin.end();
      await awaitExit(this);
    }
    await this.client.close().catch(() => {});
    return this.exit;
  }
}

/** An SDK v2 client pinned to 2026-07-28 on the shared HTTP daemon. */
async function v2Http() {
  const client = new Client({ name: 'mcp-sandboxd-modern-test', version: '1.0.0' }, { versionNegotiation: { mode: PIN } });
  await client.connect(new StreamableHTTPClientTransport(new URL(hd.url)), { timeout: 30_000 });
  return client;
}

const call = (client, name, args, opts = {}) => client.callTool({ name, arguments: args }, { timeout: CALL_TIMEOUT_MS, ...opts });

/** A call's outcome, {answered} or {error}, as a promise that never rejects. */
const settle = (p) => p.then((r) => ({ answered: r }), (e) => ({ error: e }));

// ---- the official tasks client (@modelcontextprotocol/ext-tasks) -------------

const TASKS_EXT = 'io.modelcontextprotocol/tasks';
/** A modern request's _meta declaring the tasks extension. */
const TASKS_META = { [KEY.caps]: { extensions: { [TASKS_EXT]: {} } } };
const OUTPUT_META = 'dev.mcp-sandboxd/output';

/** p, or a failure naming what did not happen within ms. */
async function within(ms, p, what) {
  let timer;
  const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * ext-tasks' connected port over a v1 SDK Client (2025-11-25): the
 * library's createTaskSessionFromClient adapts only the SDK v2 Client (it
 * calls getProtocolEra and hands request() a Standard Schema), so the v1
 * client goes through the documented custom-port path, withTasks(port).
 * Returns {port, dispose}.
 */
function v1Port(client, endpointId) {
  const notified = new Set();
  const before = client.fallbackNotificationHandler;
  const onNotification = async (n) => {
    await before?.(n);
    for (const l of [...notified]) l(n);
  };
  client.fallbackNotificationHandler = onNotification;
  const port = {
    endpointId,
    taskCapabilities: { generation: 'v1', capabilities: client.getServerCapabilities()?.tasks ?? {} },
    async dispatch(request, { signal, context } = {}) {
      try {
        const result = await client.request(request, ResultSchema, { signal, timeout: context?.requestTimeoutMs ?? CALL_TIMEOUT_MS });
        return { kind: 'result', result };
      } catch (e) {
        if (e instanceof McpError) {
          // McpError prefixes its message with "MCP error <code>: ".
          const message = e.message.replace(/^MCP error -?\d+: /, '');
          return { kind: 'error', error: { code: e.code, message, ...(e.data === undefined ? {} : { data: e.data }) } };
        }
        throw new DispatchError(`${request.method}: ${e}`, false, { cause: e });
      }
    },
    onServerRequest: () => () => {}, // a run never asks its client anything
    onNotification(l) {
      notified.add(l);
      return () => notified.delete(l);
    },
    onInvalidated: () => () => {},
    invalidated: false,
  };
  const dispose = () => {
    if (client.fallbackNotificationHandler === onNotification) client.fallbackNotificationHandler = before;
  };
  return { port, dispose };
}

/**
 * ext-tasks' rawDispatch for an SDK v2 client on the 2026-07-28 wire (the
 * SDK's own request() refuses a resultType "task"): sends the framed
 * request on the client's own transport under an id of its own (a string;
 * the SDK's counter issues numbers) and takes the answer with that id
 * before the SDK sees it. The transport derives the MCP-Protocol-Version,
 * Mcp-Method and Mcp-Name headers from the body. restore() unhooks it.
 */
function rawDispatcher(client) {
  const transport = client.transport;
  const inner = transport.onmessage;
  const pending = new Map();
  let n = 0;
  transport.onmessage = (msg, extra) => {
    const answer = msg && typeof msg === 'object' && !('method' in msg) ? pending.get(msg.id) : undefined;
    if (answer) answer(msg);
    else inner?.call(transport, msg, extra);
  };
  const dispatch = async (request, { signal, context } = {}) => {
    signal?.throwIfAborted();
    const id = `ext-tasks-${++n}`;
    const ms = context?.requestTimeoutMs ?? CALL_TIMEOUT_MS;
    let timer;
    let onAbort;
    const answered = new Promise((resolve, reject) => {
      pending.set(id, resolve);
      timer = setTimeout(() => reject(new DispatchError(`no answer to ${request.method} within ${ms} ms`)), ms);
      onAbort = () => reject(signal.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    answered.catch(() => {}); // rejections are taken below, after the send
    try {
      await transport.send({ jsonrpc: '2.0', id, ...request });
      const msg = await answered;
      return msg.error ? { kind: 'error', error: msg.error } : { kind: 'result', result: msg.result };
    } finally {
      pending.delete(id);
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  };
  dispatch.restore = () => {
    transport.onmessage = inner;
  };
  return dispatch;
}

/** What session.capabilities says for each tasks generation. */
const SEMANTIC = {
  v1: { inventory: 'server-list', execution: true, cancellation: true, inputResponses: false, requestedRetention: true },
  v2: { inventory: 'known-handles', execution: true, cancellation: true, inputResponses: true, requestedRetention: false },
};

/** Through the library: a task-backed run settles completed with its result. */
async function libraryTaskCompletes(session) {
  const code = 'import time\nprint("start", flush=True)\ntime.sleep(1)\nprint(6 * 7)';
  const ex = await session.callTool('run_python_code', { code }, { task: { preference: 'require' }, requestTimeoutMs: CALL_TIMEOUT_MS });
  assert.equal(ex.kind, 'task', 'the run was not task-backed');
  assert.match(ex.handle.taskId, HANDLE);
  const events = [];
  const { outcome, lastTask } = await within(60_000, ex.settle({ onEvent: (e) => events.push(e) }), 'the task settling');
  assert.equal(outcome.status, 'completed', j(outcome, 1500));
  checkRun(resultFromTaskOutcome(outcome), { status: 'ok', exit_code: 0, stdout: 'start\n42\n' });
  assert.equal(lastTask?.status, 'completed', j(lastTask));
  assert.equal(lastTask.taskId, ex.handle.taskId, j(lastTask));
  assert.ok(events.some((e) => e.type === 'outcome'), j(events.map((e) => e.type)));
  return ex.handle.taskId;
}

/**
 * Through the library: a long task-backed run shows its hostname in the
 * live output of a polled task, is cancelled by cancel(ex), settles
 * cancelled, and its container goes. Returns the task's id.
 */
async function libraryTaskCancelled(session, cancel) {
  const code = 'import socket, time\nprint(socket.gethostname(), flush=True)\ntime.sleep(60)';
  const ex = await session.callTool('run_python_code', { code }, { task: { preference: 'require' }, requestTimeoutMs: CALL_TIMEOUT_MS });
  assert.equal(ex.kind, 'task', 'the run was not task-backed');
  let seen;
  const hostSeen = new Promise((resolve) => (seen = resolve));
  let last;
  const settled = ex.settle({
    onEvent: (e) => {
      last = taskViewFromExecutionEvent(e) ?? last;
      const m = /^(\S+)\n/.exec(last?.raw?._meta?.[OUTPUT_META] ?? '');
      if (m) seen(m[1]);
    },
  });
  const host = await within(30_000, Promise.race([
    hostSeen,
    settled.then((s) => assert.fail(`the task settled before it was cancelled: ${j(s.outcome, 1500)}`)),
  ]), `the hostname in a polled task's live output (last: ${j(last)})`);
  const mine = (cs) => cs.filter((c) => c.sandbox.startsWith(host));
  assert.equal(mine(await ourContainers(RUN_ID)).length, 1, `no container of ours is ${host}`);
  await cancel(ex);
  const { outcome } = await within(30_000, settled, 'settling after the cancel');
  assert.equal(outcome.status, 'cancelled', j(outcome, 1500));
  assert.throws(() => resultFromTaskOutcome(outcome), TaskCancelledError);
  let left;
  for (const start = Date.now(); (left = mine(await ourContainers(RUN_ID))).length > 0 && Date.now() - start < GONE_GUARD_MS;) await sleep(200);
  assert.deepEqual(left, [], `the cancelled task's container ${host} is still there ${GONE_GUARD_MS} ms on`);
  // The server's word, through the library's controller: cancelled.
  const snap = await session.task(ex.handle.taskId).snapshot();
  assert.equal(snap.status, 'cancelled', j(snap.raw));
  return ex.handle.taskId;
}

// ---- the suite -----------------------------------------------------------------

test('preflight: binary present, engine answers; the shared daemons start', async (tc) => {
  await preflight(tc);
  hd = await HttpDaemon.start('modern-http', { args: ['--daemon-id', DAEMON_ID] });
  sd = new RawDaemon('modern-stdio-raw', ['--pool-size', '0']);
  v2s = await V2StdioDaemon.start('modern-stdio-v2', PIN);
});

test('HTTP, raw: discover, cache hints, no session, Mcp-Name forms', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(hd, async () => {
    const disc = await postModern('d-1', 'server/discover');
    checkDiscover(okHttp(disc));

    const tools = okHttp(await postModern(2, 'tools/list'));
    cacheable(tools);
    assert.equal(tools.tools.length, N_TOOLS, tools.tools.map((t) => t.name).join(', '));
    for (const m of ['resources/list', 'resources/templates/list', 'prompts/list']) {
      cacheable(okHttp(await postModern(`${m}-1`, m)), m);
    }

    // Mcp-Name: plain, with spaces around it, base64-encoded.
    for (const name of ['list_sessions', '  list_sessions  ', `=?base64?${b64('list_sessions')}?=`]) {
      const r = await postModern(`n-${name}`, 'tools/call', { name: 'list_sessions', arguments: {} }, { headers: { 'Mcp-Name': name } });
      const res = okHttp(r);
      assert.notEqual(res.isError, true, show(r));
    }
    const listed = okHttp(await postModern('rl', 'resources/list')).resources;
    assert.ok(listed.length > 0, 'no resource listed');
    const uri = listed[0].uri;
    const read = okHttp(await postModern('rr', 'resources/read', { uri }, { headers: { 'Mcp-Name': `=?base64?${b64(uri)}?=` } }));
    cacheable(read);
    assert.equal(read.contents[0].uri, uri, j(read, 500));
  }),
);

test('HTTP, raw: the envelope, header, version and method errors, with status and id', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(hd, async () => {
    // The envelope's form: -32602.
    let msg = modernMsg('no-caps', 'tools/list');
    delete msg.params._meta[KEY.caps];
    refusedHttp(await post(msg, modernHeaders(msg)), 'no-caps', ERR.invalidParams, 400);
    msg = modernMsg(11, 'tools/list', {}, { [KEY.caps]: 'all' });
    refusedHttp(await post(msg, modernHeaders(msg)), 11, ERR.invalidParams, 400);
    msg = modernMsg(12, 'tools/list', {}, { [KEY.version]: '' });
    refusedHttp(await post(msg, { ...modernHeaders(msg), 'MCP-Protocol-Version': MODERN }), 12, ERR.invalidParams, 400);
    // The modern header with a body that is not modern.
    const bare = { jsonrpc: '2.0', id: 13, method: 'tools/list' };
    refusedHttp(await post(bare, { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'tools/list' }), 13, ERR.invalidParams, 400);
    const plainMeta = { jsonrpc: '2.0', id: 14, method: 'tools/list', params: { _meta: {} } };
    refusedHttp(await post(plainMeta, { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'tools/list' }), 14, ERR.invalidParams, 400);

    // Headers against the body: -32020.
    const h = (id, over, method = 'tools/list', params = {}) => postModern(id, method, params, { headers: over });
    refusedHttp(await h(20, { 'MCP-Protocol-Version': undefined }), 20, ERR.headerMismatch, 400);
    refusedHttp(await h(21, { 'MCP-Protocol-Version': LEGACY }), 21, ERR.headerMismatch, 400);
    refusedHttp(await h(22, { 'Mcp-Method': undefined }), 22, ERR.headerMismatch, 400);
    refusedHttp(await h(23, { 'Mcp-Method': 'prompts/list' }), 23, ERR.headerMismatch, 400);
    const callParams = { name: 'list_sessions', arguments: {} };
    refusedHttp(await h(24, { 'Mcp-Name': undefined }, 'tools/call', callParams), 24, ERR.headerMismatch, 400);
    refusedHttp(await h(25, { 'Mcp-Name': 'run_python_code' }, 'tools/call', callParams), 25, ERR.headerMismatch, 400);
    refusedHttp(await h(26, { 'Mcp-Name': `=?base64?${b64('list_session')}?=` }, 'tools/call', callParams), 26, ERR.headerMismatch, 400);
    refusedHttp(await h(27, { 'Mcp-Name': 'mcp-sandboxd://other' }, 'resources/read', { uri: 'mcp-sandboxd://environment' }), 27, ERR.headerMismatch, 400);

    // The version: -32022, naming what is supported.
    const v = await postModern('v999', 'tools/list', {}, { meta: { [KEY.version]: 'v999.0.0' } });
    const ve = refusedHttp(v, 'v999', ERR.unsupportedVersion, 400);
    assert.deepEqual(ve.data, { supported: [MODERN], requested: 'v999.0.0' }, show(v));

    // Methods this wire does not have: -32601, 404.
    const gone = [
      ['initialize', { protocolVersion: MODERN, capabilities: {}, clientInfo: { name: 'x', version: '0' } }],
      ['ping', {}],
      ['logging/setLevel', { level: 'info' }],
      ['resources/subscribe', { uri: 'mcp-sandboxd://environment' }],
      ['no/such/method', {}],
    ];
    for (const [i, [method, params]] of gone.entries()) {
      refusedHttp(await postModern(`m-${i}`, method, params), `m-${i}`, ERR.methodNotFound, 404);
    }

    // A resource that is not there: -32602 naming its uri.
    const missing = 'mcp-sandboxd://runs/00000000000000000000000000000000/files/outputs/none.txt';
    const nf = await postModern(30, 'resources/read', { uri: missing });
    assert.equal(nf.reply?.error?.code, ERR.invalidParams, show(nf));
    assert.equal(nf.reply.error.data?.uri, missing, show(nf));
    assert.equal(nf.headers.get('mcp-session-id'), null, show(nf));
  }),
);

test('HTTP, raw: every handle names its daemon; another daemon\'s handle is refused naming that daemon', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(hd, async () => {
    const TASKS = 'io.modelcontextprotocol/tasks';
    const withTasks = { [KEY.caps]: { extensions: { [TASKS]: {} } } };
    const hex = randomBytes(16).toString('hex');
    const theirs = `beta-7.${hex}`;
    const names = (text, ctx) => {
      assert.match(text, /"beta-7"/, ctx);
      assert.match(text, new RegExp(`"${DAEMON_ID}"`), ctx);
    };
    // Ours: a run's file URI and a 2025 session id.
    const code = 'open("outputs/h.txt", "w").write("h")';
    const ran = okHttp(await postModern('h1', 'tools/call', { name: 'run_python_code', arguments: { code } }));
    const uri = ran.structuredContent?.files?.[0]?.uri ?? '';
    assert.match(uri.split('/')[3] ?? '', OURS, j(ran, 800));
    const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'h', version: '0' } } });
    const sid = init.headers.get('mcp-session-id') ?? '';
    assert.match(sid, OURS, show(init));
    await (await fetch(hd.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': LEGACY } })).arrayBuffer();

    // Theirs: each refusal names the daemon that holds it.
    for (const [tool, args] of [['run_python_code', { session_id: theirs, code: 'print(1)' }], ['close_session', { session_id: theirs }]]) {
      const r = okHttp(await postModern(`h-${tool}`, 'tools/call', { name: tool, arguments: args }));
      assert.equal(r.isError, true, j(r));
      names(r.content[0].text, j(r));
    }
    const other = uri.replace(/runs\/[^/]+/, `runs/${theirs}`);
    const rr = await postModern('h-read', 'resources/read', { uri: other });
    assert.equal(rr.reply?.error?.code, ERR.invalidParams, show(rr));
    assert.equal(rr.reply.error.data?.uri, other, show(rr));
    names(rr.reply.error.message, show(rr));
    const tg = await postModern('h-task', 'tasks/get', { taskId: theirs }, { meta: withTasks });
    assert.equal(tg.reply?.error?.code, ERR.invalidParams, show(tg));
    names(tg.reply.error.message, show(tg));
    const gone = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'Mcp-Session-Id': theirs, 'MCP-Protocol-Version': LEGACY });
    assert.equal(gone.status, 404, show(gone));
    names(JSON.parse(gone.text).error?.message ?? '', show(gone));
    // Ours in form but never made: the usual words, no daemon named.
    const none = okHttp(await postModern('h-none', 'tools/call', { name: 'close_session', arguments: { session_id: `${DAEMON_ID}.${hex}` } }));
    assert.equal(none.isError, true, j(none));
    assert.equal(none.content[0].text, 'no such session', j(none));
  }),
);

test('HTTP, raw: a legacy initialize still opens a 2025 session on the same daemon', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(hd, async () => {
    const init = await post(
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'legacy', version: '0' } } },
    );
    const sid = init.headers.get('mcp-session-id');
    assert.equal(init.status, 200, show(init));
    assert.ok(sid, `no Mcp-Session-Id: ${show(init)}`);
    assert.equal(init.reply?.result?.protocolVersion, LEGACY, show(init));
    const sh = { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': LEGACY };
    const note = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, sh);
    assert.equal(note.status, 202, show(note));
    const list = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, sh);
    assert.equal(list.status, 200, show(list));
    assert.equal(list.reply?.result?.tools?.length, N_TOOLS, show(list));
    assert.equal(list.reply.result.resultType, undefined, `a 2025 result has no resultType: ${show(list)}`);
    const del = await fetch(hd.url, { method: 'DELETE', headers: sh });
    await del.arrayBuffer();
    assert.ok(del.status === 200 || del.status === 204, `DELETE: HTTP ${del.status}`);
  }),
);

test('HTTP, raw: a run streams progress, and log messages only for a logLevel', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(hd, async () => {
    const code = "print('hello', flush=True)";
    const args = { name: 'run_python_code', arguments: { code } };
    for (const level of ['info', undefined]) {
      const meta = { progressToken: `pt-${level}` };
      if (level) meta[KEY.level] = level;
      const r = await postModern(`run-${level}`, 'tools/call', args, { meta });
      const res = okHttp(r);
      checkRun(res, { status: 'ok', exit_code: 0, stdout: 'hello\n' });
      const progress = r.messages.filter((m) => m.method === 'notifications/progress');
      assert.ok(progress.length >= 1, `no progress: ${show(r)}`);
      assert.ok(progress.every((m) => m.params.progressToken === meta.progressToken), show(r));
      const logs = r.messages.filter((m) => m.method === 'notifications/message');
      if (level) assert.ok(logs.length >= 1, `logLevel ${level} but no notifications/message: ${show(r)}`);
      else assert.deepEqual(logs, [], `no logLevel but notifications/message: ${show(r)}`);
    }
  }),
);

test('HTTP, raw: trace context reaches the program and the daemon\'s log lines; a malformed one neither', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(hd, async () => {
    const traceparent = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
    const code = "import os; print(os.environ.get('TRACEPARENT'), os.environ.get('TRACESTATE'))";
    const args = { name: 'run_python_code', arguments: { code } };
    let r = await postModern('trace', 'tools/call', args, { meta: { traceparent, tracestate: 'vendor=a1' } });
    checkRun(okHttp(r), { status: 'ok', stdout: `${traceparent} vendor=a1\n` });
    assert.match(hd.stderr, new RegExp(`trace=${traceparent}\\b`), 'no daemon log line carries the trace');
    // Upper-case hex is not the W3C form: dropped, never passed on.
    const bad = traceparent.toUpperCase().replace(/^00/, '00');
    r = await postModern('trace-bad', 'tools/call', args, { meta: { traceparent: bad, tracestate: 'vendor=a1' } });
    checkRun(okHttp(r), { status: 'ok', stdout: 'None None\n' });
    assert.ok(!hd.stderr.includes(bad), 'a malformed traceparent reached the log');
  }),
);

test('HTTP, raw: tasks: a run outlives its request, is polled with its output, fetched whole, or cancelled with its container', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(hd, async () => {
    const TASKS = 'io.modelcontextprotocol/tasks';
    const withTasks = { [KEY.caps]: { extensions: { [TASKS]: {} } } };
    const disc = okHttp(await postModern('td', 'server/discover', {}));
    assert.deepEqual(disc.capabilities.extensions?.[TASKS], {}, j(disc));
    let gets = 0;
    const get = async (taskId, meta = withTasks, id = `get-${++gets}`) => postModern(id, 'tasks/get', { taskId }, { meta });

    // Started: the POST answers at once with the handle.
    const code = 'import socket, time\nprint(socket.gethostname(), flush=True)\ntime.sleep(1.5)\nprint("done")';
    const args = { name: 'run_python_code', arguments: { code } };
    let r = await postModern('t1', 'tools/call', args, { meta: withTasks });
    assert.equal(r.status, 200, show(r));
    const created = r.reply?.result;
    assert.equal(created?.resultType, 'task', show(r));
    assert.equal(created.status, 'working', show(r));
    assert.match(created.taskId, OURS);
    assert.ok(Number.isInteger(created.pollIntervalMs) && Number.isInteger(created.ttlMs), show(r));
    // Polled: working with its output so far, then completed with the result inline.
    let t;
    let sawOutput = false;
    const t0 = Date.now();
    for (;;) {
      t = okHttp(await get(created.taskId));
      if (t.status === 'working' && t._meta?.['dev.mcp-sandboxd/output']) sawOutput = true;
      if (t.status !== 'working' || Date.now() - t0 > 30_000) break;
      await sleep(200);
    }
    assert.equal(t.status, 'completed', j(t));
    assert.ok(sawOutput, 'no live output while the task worked');
    checkRun(t.result, { status: 'ok', exit_code: 0 });
    assert.match(t.result.structuredContent.stdout, /done\n$/);
    // Without the extension declared, tasks are refused; a stranger id is unknown.
    const e = refusedHttp(await get(created.taskId, {}, 'no-ext'), 'no-ext', -32021, 400);
    assert.deepEqual(e.data, { requiredCapabilities: { extensions: { [TASKS]: {} } } });
    const unknown = await get('0'.repeat(32));
    assert.equal(unknown.reply?.error?.code, ERR.invalidParams, show(unknown));
    // A run without the extension is a plain call.
    r = await postModern('plain', 'tools/call', { name: 'run_python_code', arguments: { code: 'print(1)' } });
    checkRun(okHttp(r), { status: 'ok', stdout: '1\n' });

    // Cancelled: acknowledged, cancelled, and its container goes.
    r = await postModern('t2', 'tools/call', { name: 'run_python_code', arguments: { code: 'import socket, time\nprint(socket.gethostname(), flush=True)\ntime.sleep(60)' } }, { meta: withTasks });
    const long = r.reply?.result;
    assert.equal(long?.resultType, 'task', show(r));
    let host = '';
    for (const start = Date.now(); !host && Date.now() - start < 30_000; await sleep(200)) {
      t = okHttp(await get(long.taskId));
      host = (/^(\S+)\n/.exec(t._meta?.['dev.mcp-sandboxd/output'] ?? '') ?? [])[1] ?? '';
    }
    assert.ok(host, `the long task never showed its hostname: ${j(t)}`);
    const mine = (cs) => cs.filter((c) => c.sandbox.startsWith(host));
    assert.equal(mine(await ourContainers(RUN_ID)).length, 1, `no container of ours is ${host}`);
    const ack = okHttp(await postModern('c2', 'tasks/cancel', { taskId: long.taskId }, { meta: withTasks }));
    assert.deepEqual(Object.keys(ack), ['resultType'], j(ack));
    assert.equal(okHttp(await get(long.taskId)).status, 'cancelled');
    let left;
    for (const start = Date.now(); (left = mine(await ourContainers(RUN_ID))).length > 0 && Date.now() - start < GONE_GUARD_MS;) await sleep(200);
    assert.deepEqual(left, [], `the cancelled task's container ${host} is still there`);
    // Cancelling again is acknowledged; the task stays cancelled.
    okHttp(await postModern('c3', 'tasks/cancel', { taskId: long.taskId }, { meta: withTasks }));
    assert.equal(okHttp(await get(long.taskId)).status, 'cancelled');
  }),
);

test('HTTP, raw: a task\'s run may ask a timeout_ms past --max-timeout-ms, up to --task-max-timeout-ms and no further', { timeout: TEST_TIMEOUT_MS }, async () => {
  const max = SHORT_TIMEOUT_MS; // --max-timeout-ms (and --timeout-ms, which may not exceed it)
  const taskMax = 4 * max; // --task-max-timeout-ms
  const d = await HttpDaemon.start('modern-task-timeout', {
    args: ['--pool-size', '0', '--timeout-ms', String(max), '--max-timeout-ms', String(max), '--task-max-timeout-ms', String(taskMax)],
  });
  await withDaemon(d, async () => {
    const opts = (meta) => ({ meta, url: d.url });
    const sleeper = (s, timeoutMs) => ({
      name: 'execute_code', arguments: { language: 'python', code: `import time\ntime.sleep(${s})\nprint("slept")`, timeout_ms: timeoutMs },
    });
    const short = sleeper((max + 1000) / 1000, taskMax); // outlives --max-timeout-ms, not --task-max-timeout-ms
    const long = sleeper(taskMax / 1000 + 4, 3_600_000); // outlives --task-max-timeout-ms
    const started = async (id, args) => {
      const r = await postModern(id, 'tools/call', args, opts(TASKS_META));
      assert.equal(r.reply?.result?.resultType, 'task', show(r));
      return r.reply.result.taskId;
    };
    const ended = async (taskId) => {
      let t;
      for (const start = Date.now(); Date.now() - start < 60_000; await sleep(200)) {
        t = okHttp(await postModern(`get-${taskId}`, 'tasks/get', { taskId }, opts(TASKS_META)));
        if (t.status !== 'working') break;
      }
      assert.equal(t.status, 'completed', j(t));
      return t.result;
    };
    // All three at once: a plain call, clamped to --max-timeout-ms; a task
    // asking --task-max-timeout-ms, kept; a task asking 1 h, clamped to it.
    const [plain, kept, capped] = await Promise.all([
      postModern('plain', 'tools/call', short, opts()).then(okHttp),
      started('kept', short).then(ended),
      started('capped', long).then(ended),
    ]);
    // A timeout's message names the effective limit.
    const stopped = (result, ms) => {
      const { sc } = checkRun(result, { status: 'timeout' });
      assert.match(sc.message ?? '', new RegExp(`\\bafter ${ms} ms\\b`), j(sc));
    };
    stopped(plain, max);
    checkRun(kept, { status: 'ok', exit_code: 0, stdout: 'slept\n' });
    stopped(capped, taskMax);
  });
  await d.stop();
});

test('stdio, raw: 2025-11-25 tasks: params.task, execution.taskSupport, tasks/get, a waiting tasks/result, tasks/list, tasks/cancel', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = new RawDaemon('modern-stdio-tasks-2025', ['--pool-size', '0']);
  await withDaemon(d, async () => {
    const init = await d.initialize(LEGACY);
    assert.deepEqual(init.result.capabilities.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } }, j(init));
    const tools = (await d.request('tools/list', undefined, 'tl')).result.tools;
    const exec = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
    assert.equal(exec.run_python_code, 'optional', j(exec));
    assert.equal(exec.list_languages, undefined, j(exec));
    const call = async (id, code, task = {}) =>
      (await d.request('tools/call', { name: 'run_python_code', arguments: { code }, ...(task ? { task } : {}) }, id)).result;
    // A task: the handle, then tasks/result waits for the run and gives its result.
    const made = await call('t1', 'import time; time.sleep(1); print(7)', { ttl: 60000 });
    assert.equal(made.task?.status, 'working', j(made));
    assert.ok(Number.isInteger(made.task.ttl) && Number.isInteger(made.task.pollInterval), j(made));
    const got = await d.request('tasks/get', { taskId: made.task.taskId }, 'g1');
    assert.equal(got.result.taskId, made.task.taskId, j(got));
    assert.equal(got.result.result, undefined, 'a 2025 task inlines no result');
    const res = await d.request('tasks/result', { taskId: made.task.taskId }, 'r1');
    checkRun(res.result, { status: 'ok', stdout: '7\n' });
    assert.equal(res.result._meta?.['io.modelcontextprotocol/related-task']?.taskId, made.task.taskId, j(res));
    const list = await d.request('tasks/list', undefined, 'l1');
    assert.deepEqual(list.result.tasks.map((t) => [t.taskId, t.status]), [[made.task.taskId, 'completed']], j(list));
    // An ended task cannot be cancelled; a working one can, and its waiting tasks/result then fails.
    assert.equal((await d.request('tasks/cancel', { taskId: made.task.taskId }, 'c1')).error?.code, ERR.invalidParams);
    const long = await call('t2', 'import time; time.sleep(60)');
    d.send({ jsonrpc: '2.0', id: 'r2', method: 'tasks/result', params: { taskId: long.task.taskId } });
    await sleep(300);
    d.send({ jsonrpc: '2.0', id: 'c2', method: 'tasks/cancel', params: { taskId: long.task.taskId } });
    const replies = [await d.recv(CALL_TIMEOUT_MS), await d.recv(CALL_TIMEOUT_MS)];
    const byId = Object.fromEntries(replies.map((m) => [m.id, m]));
    assert.equal(byId.c2?.result?.status, 'cancelled', j(replies));
    assert.ok(byId.r2?.error, `a cancelled task's tasks/result must fail: ${j(replies)}`);
    // Without params.task, a plain call.
    checkRun(await call('plain', 'print(1)', null), { status: 'ok', stdout: '1\n' });
    assert.equal((await d.request('tasks/update', { taskId: long.task.taskId }, 'u')).error?.code, ERR.methodNotFound);
  });
  await d.close();
});

test('stdio, raw: discover at once, the envelope, version and method errors, then a legacy session', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(sd, async () => {
    // The first message, no initialize before it.
    sd.send(modernMsg('disc', 'server/discover'));
    const disc = await sd.recv(10_000);
    assert.equal(disc.id, 'disc', JSON.stringify(disc));
    checkDiscover(disc.result);

    const tools = await sd.request('tools/list', modernMsg(0, 'tools/list').params, 'tl');
    cacheable(tools.result);
    assert.equal(tools.result.tools.length, N_TOOLS);

    const err = async (msg, code) => {
      const r = await sd.request(msg.method, msg.params, msg.id);
      assert.equal(r.error?.code, code, JSON.stringify(r));
      return r.error;
    };
    const noCaps = modernMsg('no-caps', 'tools/list');
    delete noCaps.params._meta[KEY.caps];
    await err(noCaps, ERR.invalidParams);
    await err(modernMsg(3, 'tools/list', {}, { [KEY.caps]: [] }), ERR.invalidParams);
    const ve = await err(modernMsg(4, 'tools/list', {}, { [KEY.version]: 'v999.0.0' }), ERR.unsupportedVersion);
    assert.deepEqual(ve.data, { supported: [MODERN], requested: 'v999.0.0' });
    await err(modernMsg(5, 'initialize', { protocolVersion: MODERN, capabilities: {}, clientInfo: { name: 'x', version: '0' } }), ERR.methodNotFound);
    await err(modernMsg(6, 'ping'), ERR.methodNotFound);
    await err(modernMsg(7, 'logging/setLevel', { level: 'debug' }), ERR.methodNotFound);
    await err(modernMsg(8, 'resources/subscribe', { uri: 'mcp-sandboxd://environment' }), ERR.methodNotFound);
    await err(modernMsg(9, 'no/such/method'), ERR.methodNotFound);
    const missing = 'mcp-sandboxd://runs/00000000000000000000000000000000/files/none';
    const nf = await err(modernMsg(10, 'resources/read', { uri: missing }), ERR.invalidParams);
    assert.equal(nf.data?.uri, missing, JSON.stringify(nf));

    // A legacy session on the same process, and the modern wire beside it.
    const init = await sd.initialize(LEGACY);
    assert.equal(init.result?.protocolVersion, LEGACY, JSON.stringify(init));
    const legacyTools = await sd.request('tools/list', undefined, 'legacy-tl');
    assert.equal(legacyTools.result?.tools?.length, N_TOOLS, j(legacyTools, 500));
    assert.equal(legacyTools.result.resultType, undefined, 'a 2025 result has no resultType');
    const again = await sd.request('tools/list', modernMsg(0, 'tools/list').params, 'modern-again');
    cacheable(again.result);
  }),
);

/** The SDK v2 tests, for one transport: open() gives a connected client
 * (a fresh one each call over HTTP), daemon() the daemon to blame. */
function sdkTests(kind, open, daemon) {
  test(`SDK v2 pinned to ${MODERN} over ${kind}: modern era, tools, a run with progress, its file read back`, { timeout: TEST_TIMEOUT_MS }, async () =>
    withDaemon(daemon(), async () => {
      const client = await open();
      assert.equal(client.getProtocolEra(), 'modern');
      assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
      assert.equal(client.getServerVersion()?.name, 'mcp-sandboxd');
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.equal(names.length, N_TOOLS, names.join(', '));
      for (const n of ['run_python_code', 'execute_code', 'create_session', 'close_session']) assert.ok(names.includes(n), names.join(', '));

      const progress = [];
      const code = "import time\nfor i in range(3): print(i, flush=True); time.sleep(0.3)\nopen('outputs/result.txt', 'w').write('made by a modern call')";
      const r = await call(client, 'run_python_code', { code }, { onprogress: (p) => progress.push(p) });
      const { sc } = checkRun(r, { status: 'ok', exit_code: 0, stdout: '0\n1\n2\n' });
      assert.ok(progress.length >= 2, `progress: ${JSON.stringify(progress)}`);
      for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress, JSON.stringify(progress));
      assert.match(progress.map((p) => p.message ?? '').join(''), /0\s*1\s*2/, JSON.stringify(progress));

      const file = (sc.files ?? []).find((f) => f.path === 'outputs/result.txt');
      assert.ok(file, JSON.stringify(sc.files));
      assert.match(file.uri, /^mcp-sandboxd:\/\/runs\/[0-9a-z-]+\.[0-9a-f]{32}\/files\/outputs\/result\.txt$/);
      // A later request (over HTTP, another client) reads it.
      const reader = kind === 'HTTP' ? await open() : client;
      const back = await reader.readResource({ uri: file.uri });
      assert.equal(back.contents[0].text, 'made by a modern call', j(back, 500));
      if (reader !== client) await reader.close();
      if (kind === 'HTTP') await client.close();
    }),
  );

  test(`SDK v2 pinned over ${kind}: a code session across requests; an aborted run's container goes`, { timeout: TEST_TIMEOUT_MS }, async () =>
    withDaemon(daemon(), async () => {
      const a = await open();
      const created = await call(a, 'create_session', { language: 'python' });
      assert.notEqual(created.isError, true, j(created, 800));
      const sid = created.structuredContent.session_id;
      assert.match(sid, HANDLE, JSON.stringify(created.structuredContent));
      checkRun(await call(a, 'run_python_code', { session_id: sid, code: 'x = 41' }), { status: 'ok', exit_code: 0 });
      const b = kind === 'HTTP' ? await open() : a; // over HTTP each request stands alone anyway
      checkRun(await call(b, 'run_python_code', { session_id: sid, code: 'print(x + 1)' }), { status: 'ok', exit_code: 0, stdout: '42\n' });
      assert.deepEqual((await call(b, 'close_session', { session_id: sid })).structuredContent, { closed: true });
      const after = await call(a, 'run_python_code', { session_id: sid, code: 'print(x)' });
      assert.equal(after.isError, true, `a closed session still ran: ${j(after, 500)}`);

      // A long run, aborted once its output shows which container runs it.
      const abort = new AbortController();
      let out = '';
      let seen;
      const hostSeen = new Promise((resolve) => (seen = resolve));
      const running = settle(
        call(a, 'run_python_code', { code: 'import socket, time\nprint(socket.gethostname(), flush=True)\ntime.sleep(60)' }, {
          signal: abort.signal,
          onprogress: (p) => {
            out += p.message ?? '';
            const m = /^(\S+)\n/.exec(out);
            if (m) seen(m[1]);
          },
        }),
      );
      const host = await Promise.race([hostSeen, running.then((x) => assert.fail(`the run ended before it was aborted: ${j(x)}`))]);
      const mine = (cs) => cs.filter((c) => c.sandbox.startsWith(host));
      assert.equal(mine(await ourContainers(RUN_ID)).length, 1, `no container of ours is ${host}`);
      abort.abort();
      const settled = await running;
      assert.ok(settled.error, `an aborted call answered: ${j(settled.answered)}`);
      const t0 = Date.now();
      let left;
      while ((left = mine(await ourContainers(RUN_ID))).length > 0 && Date.now() - t0 < GONE_GUARD_MS) await sleep(200);
      assert.deepEqual(left, [], `the aborted run's container ${host} is still there ${GONE_GUARD_MS} ms on`);

      if (b !== a) await b.close();
      if (kind === 'HTTP') await a.close();
    }),
  );
}

sdkTests('HTTP', v2Http, () => hd);
sdkTests('stdio', async () => v2s.client, () => v2s);

test("SDK v2 in mode 'auto' over stdio connects at once, as modern", { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await V2StdioDaemon.start('modern-stdio-auto', 'auto');
  await withDaemon(d, async () => {
    // A probe that went unanswered would have waited out its 60 s timeout.
    assert.ok(d.connectMs < 10_000, `connect took ${d.connectMs} ms`);
    assert.equal(d.client.getProtocolEra(), 'modern');
    assert.equal(d.client.getNegotiatedProtocolVersion(), MODERN);
    await d.close();
  });
});

test('ext-tasks, 2025-11-25, v1 SDK client over stdio: a task settles; one cancelled loses its container; tasks/list', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await SdkDaemon.start('modern-ext-tasks-v1', { args: ['--pool-size', '0'], listTools: false });
  await withDaemon(d, async () => {
    const { port, dispose } = v1Port(d.client, 'mcp-sandboxd-v1-stdio');
    const session = withTasks(port);
    try {
      assert.deepEqual(session.capabilities, SEMANTIC.v1, j(d.client.getServerCapabilities()));
      const done = await libraryTaskCompletes(session);
      const cancelled = await libraryTaskCancelled(session, (ex) => ex.cancel());
      const page = await session.listTasks();
      const statuses = Object.fromEntries(page.tasks.map((t) => [t.taskId, t.status]));
      assert.deepEqual(statuses, { [done]: 'completed', [cancelled]: 'cancelled' }, j(page.tasks));
    } finally {
      await session.close();
      dispose();
    }
    await d.close();
  });
});

test('ext-tasks, 2025-11-25, SDK v2 client (legacy) over HTTP: createTaskSessionFromClient, a task settles', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(hd, async () => {
    const client = new Client({ name: 'mcp-sandboxd-modern-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(hd.url)), { timeout: 30_000 });
    const session = createTaskSessionFromClient(client, { endpointId: 'mcp-sandboxd-legacy-http' });
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), LEGACY);
      assert.deepEqual(session.capabilities, SEMANTIC.v1);
      await libraryTaskCompletes(session);
    } finally {
      await session.close();
      await client.close();
    }
  }),
);

/** ext-tasks on the 2026-07-28 wire for one transport (see sdkTests). */
function extTasksModernTest(kind, open, daemon) {
  test(`ext-tasks, ${MODERN}, SDK v2 client pinned over ${kind}, rawDispatch: a task settles; one cancelled loses its container`, { timeout: TEST_TIMEOUT_MS }, () =>
    withDaemon(daemon(), async () => {
      const client = await open();
      const rawDispatch = rawDispatcher(client);
      const session = createTaskSessionFromClient(client, {
        endpointId: `mcp-sandboxd-modern-${kind}`,
        rawDispatch,
        v2RequestFraming: { protocolVersion: MODERN, clientInfo: { name: 'mcp-sandboxd-modern-test', version: '1.0.0' }, clientCapabilities: {} },
      });
      try {
        assert.deepEqual(session.capabilities, SEMANTIC.v2, j(client.getServerCapabilities()));
        await libraryTaskCompletes(session);
        await libraryTaskCancelled(session, (ex) => session.cancelTask(ex.handle.taskId));
      } finally {
        await session.close();
        rawDispatch.restore();
        if (kind === 'HTTP') await client.close();
      }
    }),
  );
}

extTasksModernTest('HTTP', v2Http, () => hd);
extTasksModernTest('stdio', async () => v2s.client, () => v2s);

test('every daemon exited cleanly and no container is left', { timeout: TEST_TIMEOUT_MS }, () => checkDaemonsAndContainers());
