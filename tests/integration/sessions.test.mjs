// Integration tests for code sessions (create_session, list_sessions,
// close_session and session_id on the run tools) on a real engine, through
// the official SDK client over streamable HTTP: two MCP sessions of one
// daemon stand for two owners.
//
//   node --test tests/integration/sessions.test.mjs
//
// Environment: as stdio.test.mjs. One daemon for the whole file, with a
// short idle timeout and a per-owner cap of 2, so expiry and the cap are
// reached within the suite.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
  CALL_TIMEOUT_MS, TEST_TIMEOUT_MS, SHORT_TIMEOUT_MS, sleep, withDaemon, HttpDaemon, preflight,
  ourContainers, textOf, checkRun, checkDaemonsAndContainers,
} from './lib.mjs';

const IDLE_MS = 3000;
// The watcher looks at least once a second; the container's removal
// follows. A hang guard, not a speed target.
const GONE_GUARD_MS = 30_000;
const NO_SUCH = 'no such session';

let d;

async function client(name) {
  const transport = new StreamableHTTPClientTransport(new URL(d.url));
  const c = { client: new Client({ name, version: '1.0.0' }), transport };
  await c.client.connect(transport, { timeout: 30_000 });
  c.call = (tool, args, o = {}) => c.client.callTool({ name: tool, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS, ...o });
  c.close = async () => {
    await transport.terminateSession().catch(() => {});
    await c.client.close().catch(() => {});
  };
  return c;
}

/** create_session's result, checked against the contract. */
async function create(c, args) {
  const r = await c.call('create_session', args);
  const sc = r.structuredContent;
  const ctx = JSON.stringify(r).slice(0, 800);
  assert.notEqual(r.isError, true, ctx);
  assert.match(sc.session_id, /^[0-9a-z-]{1,63}\.[0-9a-f]{32}$/, ctx);
  assert.equal(sc.idle_timeout_ms, IDLE_MS, ctx);
  assert.ok(Date.parse(sc.expires_at) > Date.now(), ctx);
  assert.match(sc.expires_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/, ctx);
  return sc;
}

/** A run in a session that printed stdout. */
async function ok(c, tool, args, stdout) {
  const { sc } = checkRun(await c.call(tool, args), { status: 'ok', exit_code: 0 });
  if (stdout !== undefined) assert.equal(sc.stdout, stdout, JSON.stringify(sc));
  assert.equal(sc.session_id, args.session_id, JSON.stringify(sc));
  return sc;
}

/** A refused call: isError and its message. */
function refused(r, ...mention) {
  assert.equal(r.isError, true, JSON.stringify(r).slice(0, 800));
  const text = textOf(r);
  for (const m of mention) assert.ok(text.includes(m), `${JSON.stringify(text)} should mention ${JSON.stringify(m)}`);
  return text;
}

/** The sandbox whose hostname is host is there (so waitGone means something). */
async function present(host) {
  assert.ok((await ourContainers()).some((c) => c.sandbox.startsWith(host)), `no container of ours is ${host}`);
}

/** host: what the sandbox's hostname said, its container id's start or
 * its Pod's name. */
async function waitGone(host) {
  const t0 = Date.now();
  while (Date.now() - t0 < GONE_GUARD_MS) {
    if (!(await ourContainers()).some((c) => c.sandbox.startsWith(host))) return;
    await sleep(50);
  }
  assert.fail(`container ${host} still there ${GONE_GUARD_MS} ms after its session ended`);
}

const HOST_PY = 'import socket; print(socket.gethostname())';

test('preflight: binary present, engine answers; the daemon starts', async (tc) => {
  await preflight(tc);
  d = await HttpDaemon.start('sessions', {
    args: ['--languages', 'python,javascript,bash,c', '--code-session-idle-ms', String(IDLE_MS), '--max-code-sessions-per-owner', '2'],
  });
});

test('code sessions: state lasts, calls keep order, owners are apart, close and DELETE remove the container', { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withDaemon(d, async () => {
    const a = await client('sessions-a');
    const b = await client('sessions-b');
    const names = (await a.client.listTools()).tools.map((t) => t.name);
    for (const n of ['create_session', 'list_sessions', 'close_session']) assert.ok(names.includes(n), `${n} not listed: ${names}`);

    const py = await create(a, { language: 'python', name: 'analysis' });
    assert.equal(py.language, 'python');
    assert.equal(py.name, 'analysis');
    const sid = py.session_id;
    const host = (await ok(a, 'run_python_code', { session_id: sid, code: `${HOST_PY}\nopen('state.txt', 'w').write('kept')\nx = 41` })).stdout.trim();
    await ok(a, 'execute_code', { session_id: sid, code: "print(open('state.txt').read())" }, 'kept\n');
    // The image has IPython: variables last, and the last value is shown.
    assert.equal(py.persistence, 'interpreter');
    await ok(a, 'run_python_code', { session_id: sid, code: 'x + 1' }, '42\n');
    await ok(a, 'run_python_code', { session_id: sid, code: "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': [4, 5, 6]})\ndf.shape" }, '(3, 2)\n');
    // display() and a figure, as in a one-shot run.
    const drawn = await a.call('run_python_code', {
      session_id: sid,
      code: "import matplotlib.pyplot as plt\nfrom IPython.display import display\ndisplay({'k': x})\nplt.figure(figsize=(2, 2), dpi=50); plt.plot([1, 2]); plt.show()",
    });
    const drawnSc = checkRun(drawn, { status: 'ok', exit_code: 0, stdout: "{'k': 41}\n" }).sc;
    assert.deepEqual((drawnSc.files ?? []).map((f) => [f.path, f.kind]), [['plot-1.png', 'plot']], JSON.stringify(drawnSc.files));
    assert.equal(drawn.content.filter((c) => c.type === 'image' && c.mimeType === 'image/png').length, 1);

    // A second call sent while the first runs waits for it. (Two POSTs
    // sent at once may arrive in either order: the second goes once the
    // first's output shows it running.)
    let running;
    const isRunning = new Promise((resolve) => (running = resolve));
    const first = a.call(
      'run_python_code',
      { session_id: sid, code: "print('running', flush=True)\nimport time\ntime.sleep(1)\nopen('order', 'a').write('1')" },
      { onprogress: () => running() },
    );
    await isRunning;
    const second = a.call('run_python_code', { session_id: sid, code: "open('order', 'a').write('2')\nprint(open('order').read())" });
    checkRun(await first, { status: 'ok', exit_code: 0 });
    assert.equal(checkRun(await second, { status: 'ok', exit_code: 0 }).sc.stdout, '12\n');

    // A timeout interrupts the call and keeps the session.
    const slow = await a.call('execute_code', { session_id: sid, code: 'import time\ntime.sleep(120)', timeout_ms: SHORT_TIMEOUT_MS });
    assert.equal(checkRun(slow, { status: 'timeout' }).sc.session_lost, undefined, JSON.stringify(slow.structuredContent));
    await ok(a, 'run_python_code', { session_id: sid, code: "print(open('state.txt').read(), x)" }, 'kept 41\n');

    // Another owner, an ended session and a made-up id read alike.
    const theirs = refused(await b.call('run_python_code', { session_id: sid, code: 'print(1)' }), NO_SUCH);
    const madeUp = refused(await a.call('run_python_code', { session_id: 'f'.repeat(32), code: 'print(1)' }), NO_SUCH);
    assert.equal(theirs, madeUp);
    refused(await b.call('close_session', { session_id: sid }), NO_SUCH);
    assert.deepEqual((await b.call('list_sessions', {})).structuredContent.sessions, []);

    // The session's own language, or none.
    refused(await a.call('run_js_code', { session_id: sid, code: '1' }), 'python');
    refused(await a.call('execute_code', { session_id: sid, language: 'javascript', code: '1' }), 'python');
    refused(await a.call('execute_code', { code: 'print(1)' }), 'language');

    // The per-owner cap, then close.
    const sh = await create(a, { language: 'bash' });
    assert.equal(sh.persistence, 'shell');
    await ok(a, 'execute_code', { session_id: sh.session_id, code: 'echo hi > f; mkdir -p d; cd d; N=5; f() { echo "fn $N"; }' }, '');
    await ok(a, 'execute_code', { session_id: sh.session_id, code: 'cat ../f; basename "$PWD"; f' }, 'hi\nd\nfn 5\n');
    refused(await a.call('create_session', { language: 'bash' }), 'max-code-sessions-per-owner');
    const listed = (await a.call('list_sessions', {})).structuredContent.sessions;
    assert.deepEqual(listed.map((s) => s.session_id).sort(), [sid, sh.session_id].sort(), JSON.stringify(listed));
    const mine = listed.find((s) => s.session_id === sid);
    assert.equal(mine.busy, false);
    for (const k of ['language', 'name', 'created_at', 'last_used_at', 'idle_timeout_ms', 'expires_at']) assert.ok(k in mine, `${k} missing: ${JSON.stringify(mine)}`);
    assert.deepEqual((await a.call('close_session', { session_id: sh.session_id })).structuredContent, { closed: true });
    refused(await a.call('execute_code', { session_id: sh.session_id, code: 'cat f' }), NO_SUCH);

    // JavaScript keeps its bindings (Node's own REPL); the last value is shown.
    const js = await create(b, { language: 'javascript' });
    assert.equal(js.persistence, 'interpreter');
    await ok(b, 'run_js_code', { session_id: js.session_id, code: 'let z = 41;\nclass K { get v() { return z + 1; } }' }, '');
    await ok(b, 'run_js_code', { session_id: js.session_id, code: 'new K().v' }, '42\n');

    // Ending the MCP session (DELETE) ends its code sessions.
    await present(host);
    await a.close();
    await waitGone(host);
    await b.close();
  }),
);

test('a call that ignores the interrupt, or runs out of memory, ends its session with session_lost', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(d, async () => {
    const c = await client('sessions-lost');
    const deaf = await create(c, { language: 'python' });
    const r = await c.call('execute_code', {
      session_id: deaf.session_id,
      code: 'import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)',
      timeout_ms: SHORT_TIMEOUT_MS,
    });
    const lost = checkRun(r, { status: 'timeout' }).sc;
    assert.equal(lost.session_lost, true, JSON.stringify(lost));
    refused(await c.call('run_python_code', { session_id: deaf.session_id, code: 'print(1)' }), NO_SUCH);

    const small = await create(c, { language: 'python', memory_mb: 256 });
    const oom = checkRun(await c.call('execute_code', { session_id: small.session_id, code: 'b = bytearray(1 << 30)' }), { status: 'oom' }).sc;
    assert.equal(oom.session_lost, true, JSON.stringify(oom));
    assert.deepEqual((await c.call('list_sessions', {})).structuredContent.sessions, []);
    await c.close();
  }),
);

test('a cancelled call and an interrupted bash loop keep their state; a C session keeps its files', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(d, async () => {
    const c = await client('sessions-keep');
    const py = await create(c, { language: 'python' });
    await ok(c, 'run_python_code', { session_id: py.session_id, code: 'kept = 7' }, '');
    // Cancelled once it shows it runs: no answer comes, the state stays.
    const abort = new AbortController();
    let running;
    const isRunning = new Promise((resolve) => (running = resolve));
    const cancelled = c
      .call('run_python_code', { session_id: py.session_id, code: "print('running', flush=True)\nimport time\ntime.sleep(120)" }, { signal: abort.signal, onprogress: () => running() })
      .then(
        () => 'answered',
        () => 'aborted',
      );
    await isRunning;
    abort.abort();
    assert.equal(await cancelled, 'aborted');
    await ok(c, 'run_python_code', { session_id: py.session_id, code: 'print(kept)' }, '7\n');
    assert.equal((await c.call('close_session', { session_id: py.session_id })).structuredContent.closed, true);

    // A create_session cancelled while its sandbox starts (not a pooled
    // one: its memory differs) leaves no session and no container.
    const abortCreate = new AbortController();
    const creating = c.call('create_session', { language: 'python', memory_mb: 192 }, { signal: abortCreate.signal }).then(
      (r) => r.structuredContent?.session_id,
      () => null,
    );
    await sleep(30);
    abortCreate.abort();
    const madeAnyway = await creating;
    if (madeAnyway) await c.call('close_session', { session_id: madeAnyway }); // it answered first
    let left = null;
    for (const t0 = Date.now(); Date.now() - t0 < GONE_GUARD_MS; await sleep(50)) {
      left = (await c.call('list_sessions', {})).structuredContent.sessions;
      if (left.length === 0) break;
    }
    assert.deepEqual(left, [], 'a cancelled create_session left a session');

    const sh = await create(c, { language: 'bash' });
    await ok(c, 'execute_code', { session_id: sh.session_id, code: 'N=7' }, '');
    const loop = checkRun(await c.call('execute_code', { session_id: sh.session_id, code: 'while :; do :; done', timeout_ms: SHORT_TIMEOUT_MS }), { status: 'timeout' }).sc;
    assert.equal(loop.session_lost, undefined, JSON.stringify(loop));
    await ok(c, 'execute_code', { session_id: sh.session_id, code: 'echo $N' }, '7\n');
    assert.equal((await c.call('close_session', { session_id: sh.session_id })).structuredContent.closed, true);

    const cs = await create(c, { language: 'c' });
    assert.equal(cs.persistence, 'process');
    const prog = (body) => `#include <stdio.h>\nint main(void) {\n${body}\nreturn 0;\n}\n`;
    await ok(c, 'execute_code', { session_id: cs.session_id, code: prog('FILE *f = fopen("n", "a"); fputs("x", f); fclose(f); puts("wrote");') }, 'wrote\n');
    await ok(c, 'execute_code', { session_id: cs.session_id, code: prog('FILE *f = fopen("n", "a"); fputs("x", f); fclose(f); puts("wrote");') }, 'wrote\n');
    await ok(c, 'execute_code', { session_id: cs.session_id, code: prog('char b[8] = {0}; FILE *f = fopen("n", "r"); fread(b, 1, 7, f); puts(b);') }, 'xx\n');
    await c.close();
  }),
);

test('an idle code session expires and its container goes', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(d, async () => {
    const c = await client('sessions-idle');
    const s = await create(c, { language: 'python', timeout_ms: 20_000 });
    const host = (await ok(c, 'run_python_code', { session_id: s.session_id, code: HOST_PY })).stdout.trim();
    await present(host);
    await sleep(IDLE_MS + 2000);
    assert.deepEqual((await c.call('list_sessions', {})).structuredContent.sessions, []);
    refused(await c.call('run_python_code', { session_id: s.session_id, code: 'print(1)' }), NO_SUCH);
    await waitGone(host);
    await c.close();
  }),
);

test('every daemon exited cleanly and no container is left', { timeout: TEST_TIMEOUT_MS }, () => checkDaemonsAndContainers());
