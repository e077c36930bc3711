// Fault: clients that go away at random points, over HTTP and stdio.
//
// HTTP: one daemon; bounded rounds of tools/call POSTs with a progress
// token answered as an SSE stream and dropped after a random delay, request
// bodies cut in half, half-sent headers, and GET /mcp and legacy GET /sse
// streams dropped at random points (the legacy ones with a run in flight).
// stdio: daemons whose client sends initialize and calls, then closes stdin
// or destroys its pipes at a random point.
// Afterwards the HTTP daemon still answers, no container of the test is
// left, its open fds and RSS are back near their starting values, and it
// exits 0 on SIGTERM; every stdio daemon exited on its own.
//
//   node --test tests/faults/disconnect.test.mjs   (see tests/faults/run.sh)
//
// Environment:
//   FAULTS_DISCONNECT_ROUNDS  HTTP rounds (default 40)
//   FAULTS_STDIO_ROUNDS       stdio daemons (default 8)
//   FAULTS_SEED               seed of the random delays (default: random;
//                             printed, so a failure can be replayed)

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';

import {
  RUN_ID, TEST_TIMEOUT_MS, EXIT_WAIT_MS, daemonArgs, daemonEnv, spawnDaemon, preflight, withDaemon, sleep, exitWait, tail, waitNoContainers,
} from '../integration/lib.mjs';
import { HttpDaemon, procStats, fmtStats, removeOurs } from './lib.mjs';

// No pool: the checks count this suite's containers and the daemon's fds
// while it lives (pool.test.mjs covers pooled runs, the soak runs with one).
const NO_POOL = ['--pool-size', '0'];

const ROUNDS = Number(process.env.FAULTS_DISCONNECT_ROUNDS || 40);
const STDIO_ROUNDS = Number(process.env.FAULTS_STDIO_ROUNDS || 8);
const SEED = Number(process.env.FAULTS_SEED || Math.floor(Math.random() * 2 ** 31));
const HTTP_MARKER = `${RUN_ID}-http`;
const PV = '2025-11-25';
const RSS_SLACK_KIB = 16 * 1024;
const FD_SLACK = 4;
const LEFTOVER_WAIT_MS = 15_000;
// Prints for about 1.5 s, one line per write.
const TICK_CODE = "import sys, time\nfor i in range(15):\n    sys.stdout.write('tick %d\\n' % i)\n    sys.stdout.flush()\n    time.sleep(0.1)";

// mulberry32: small, seedable, good enough for delays.
let seed = SEED >>> 0;
function rand() {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const randInt = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

const st = { stdio: [] };

after(async () => {
  if (st.d) await st.d.stop();
  for (const d of st.stdio) if (d.exit === null) d.proc.kill('SIGKILL');
  await removeOurs(RUN_ID);
});

// ---- raw HTTP ------------------------------------------------------------------

/**
 * One HTTP request that may be dropped: resolves (never rejects) with
 * {status, headers, body, aborted, error}. abortAfterMs drops the connection
 * that long after the request was sent; half sends only the first half of
 * the body and never ends the request (then abortAfterMs applies).
 */
function rawRequest(port, { method = 'POST', path = '/mcp', headers = {}, body, abortAfterMs, half = false, timeoutMs = 30_000 } = {}) {
  return new Promise((resolve) => {
    const h = { ...headers };
    let payload;
    if (body !== undefined) {
      payload = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
      h['Content-Type'] ??= 'application/json';
      h['Content-Length'] = payload.length;
    }
    const out = { status: null, headers: {}, body: '', aborted: false, error: null };
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(abortTimer);
      clearTimeout(timeoutTimer);
      resolve(out);
    };
    const req = http.request({ host: '127.0.0.1', port, path, method, headers: h, agent: false }, (res) => {
      out.status = res.statusCode;
      out.headers = res.headers;
      res.setEncoding('utf8');
      res.on('data', (c) => (out.body += c));
      res.on('end', finish);
      res.on('error', finish);
      res.on('close', finish);
    });
    req.on('error', (e) => {
      out.error = e.message;
      finish();
    });
    req.on('close', () => setImmediate(finish));
    let abortTimer;
    if (abortAfterMs !== undefined) {
      abortTimer = setTimeout(() => {
        out.aborted = true;
        req.destroy();
        finish();
      }, abortAfterMs);
    }
    const timeoutTimer = setTimeout(() => {
      out.error = `no end within ${timeoutMs} ms`;
      req.destroy();
      finish();
    }, timeoutMs);
    if (payload !== undefined) req.write(half ? payload.subarray(0, Math.floor(payload.length / 2)) : payload);
    if (!half) req.end();
  });
}

/** A streamable HTTP session: its id, after initialize + initialized. */
async function openSession(d) {
  const r = await rawRequest(d.port, {
    headers: { Accept: 'application/json, text/event-stream' },
    body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PV, capabilities: {}, clientInfo: { name: 'faults', version: '0' } } },
  });
  assert.equal(r.status, 200, `initialize: HTTP ${r.status} ${r.error || ''} ${r.body.slice(0, 300)}`);
  const sid = r.headers['mcp-session-id'];
  assert.ok(sid, `initialize: no Mcp-Session-Id: ${JSON.stringify(r.headers)}`);
  const n = await rawRequest(d.port, {
    headers: { Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': PV },
    body: { jsonrpc: '2.0', method: 'notifications/initialized' },
  });
  assert.equal(n.status, 202, `notifications/initialized: HTTP ${n.status} ${n.body.slice(0, 300)}`);
  return sid;
}

function sessionHeaders(sid) {
  return { Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': PV };
}

/** A JSON-RPC request on a session; the parsed reply (JSON or SSE answer). */
async function rpc(d, sid, id, method, params) {
  const r = await rawRequest(d.port, { headers: sessionHeaders(sid), body: { jsonrpc: '2.0', id, method, params }, timeoutMs: 90_000 });
  assert.equal(r.status, 200, `${method}: HTTP ${r.status} ${r.error || ''} ${r.body.slice(0, 300)}`);
  const ct = r.headers['content-type'] || '';
  const texts = /event-stream/.test(ct) ? r.body.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()) : [r.body];
  for (const t of texts) {
    try {
      const m = JSON.parse(t);
      if (m.id === id) return m;
    } catch {
      /* priming events */
    }
  }
  assert.fail(`${method}: no reply with id ${id} in ${r.body.slice(0, 500)}`);
}

function toolsCall(id, token) {
  return {
    jsonrpc: '2.0', id, method: 'tools/call',
    params: { name: 'execute_code', arguments: { language: 'python', code: TICK_CODE }, _meta: { progressToken: token } },
  };
}

/** Half-sent request line and headers on a raw socket, then dropped. */
function halfHeaders(port, delayMs) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Le`);
      setTimeout(() => {
        s.destroy();
        resolve();
      }, delayMs);
    });
    s.on('error', () => resolve());
  });
}

// ---- the rounds -------------------------------------------------------------------

const KINDS = ['call', 'call', 'call', 'half-body', 'half-headers', 'get-mcp', 'legacy-sse'];

async function httpRound(d, sid, i) {
  const kind = KINDS[randInt(0, KINDS.length - 1)];
  const delay = randInt(0, 1500);
  switch (kind) {
    case 'call': {
      const r = await rawRequest(d.port, { headers: { ...sessionHeaders(sid), Accept: 'text/event-stream, application/json' }, body: toolsCall(1000 + i, `p${i}`), abortAfterMs: delay });
      return `${kind}@${delay}ms:${r.status ?? r.error}`;
    }
    case 'half-body': {
      const body = rand() < 0.5 ? toolsCall(1000 + i, `p${i}`) : { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PV, capabilities: {}, clientInfo: { name: 'x', version: '0' } } };
      const short = randInt(0, 300);
      const r = await rawRequest(d.port, { headers: sessionHeaders(sid), body, half: true, abortAfterMs: short });
      return `${kind}@${short}ms:${r.status ?? 'dropped'}`;
    }
    case 'half-headers':
      await halfHeaders(d.port, randInt(0, 300));
      return kind;
    case 'get-mcp': {
      const r = await rawRequest(d.port, { method: 'GET', headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': PV }, abortAfterMs: delay });
      return `${kind}@${delay}ms:${r.status ?? r.error}`;
    }
    case 'legacy-sse':
      return `${kind}@${delay}ms:${await legacyRound(d, i, delay)}`;
  }
  return kind;
}

/** GET /sse, then initialize and a call through /messages; the stream is
 * dropped delayMs after it opened, wherever that is. */
function legacyRound(d, i, delayMs) {
  return new Promise((resolve) => {
    let stage = 'connect';
    let posted = false;
    const req = http.request({ host: '127.0.0.1', port: d.port, path: '/sse', method: 'GET', headers: { Accept: 'text/event-stream' }, agent: false }, (res) => {
      stage = `HTTP ${res.statusCode}`;
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', async (c) => {
        buf += c;
        const m = /event: endpoint\r?\ndata: (\S+)/.exec(buf);
        if (!m || posted) return;
        posted = true;
        const post = (body) => rawRequest(d.port, { path: m[1], body, timeoutMs: 10_000 });
        stage = 'endpoint';
        await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'legacy', version: '0' } } });
        stage = 'initialize';
        for (let k = 0; k < 40 && !/"id":1,/.test(buf) && !/"id":1\}/.test(buf); k++) await sleep(25);
        await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
        const r = await post(toolsCall(2000 + i, `l${i}`));
        stage = `call posted (${r.status})`;
      });
      res.on('error', () => {});
    });
    req.on('error', () => {});
    req.end();
    setTimeout(() => {
      req.destroy();
      resolve(stage);
    }, delayMs);
  });
}

/** A stdio daemon whose client goes away at a random point. */
async function stdioRound(i) {
  const d = { name: `stdio-${i}`, stderr: '', exit: null };
  st.stdio.push(d);
  spawnDaemon(d, daemonArgs(NO_POOL), daemonEnv({}, `${RUN_ID}-stdio-${i}`));
  d.proc.stdout.on('data', () => {});
  d.proc.stdin.on('error', () => {});
  d.proc.stdout.on('error', () => {});
  const send = (m) => d.proc.stdin.write(`${typeof m === 'string' ? m : JSON.stringify(m)}\n`);
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PV, capabilities: {}, clientInfo: { name: 'faults-stdio', version: '0' } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  for (let k = 0; k < randInt(1, 3); k++) send(toolsCall(10 + k, `s${k}`));
  const delay = randInt(0, 1500);
  await Promise.race([sleep(delay), d.exited]);
  const modes = ['close-stdin', 'destroy-stdin-stdout', 'destroy-all', 'half-line'];
  const mode = modes[randInt(0, modes.length - 1)];
  switch (mode) {
    case 'close-stdin':
      d.proc.stdin.end();
      break;
    case 'destroy-stdin-stdout':
      d.proc.stdin.destroy();
      d.proc.stdout.destroy();
      break;
    case 'destroy-all':
      d.proc.stdin.destroy();
      d.proc.stdout.destroy();
      d.proc.stderr.destroy();
      break;
    case 'half-line':
      d.proc.stdin.end('{"jsonrpc":"2.0","id":99,"method":"tools/ca');
      break;
  }
  d.mode = `${mode}@${delay}ms`;
  await Promise.race([d.exited, exitWait(EXIT_WAIT_MS)]);
  return d;
}

// ---- the tests ----------------------------------------------------------------------

test('preflight', async (t) => {
  await preflight(t);
  t.diagnostic(`seed ${SEED} (FAULTS_SEED), ${ROUNDS} HTTP rounds, ${STDIO_ROUNDS} stdio rounds`);
});

test('HTTP clients dropping connections at random points', { timeout: TEST_TIMEOUT_MS * 3 }, async (t) => {
  st.d = await HttpDaemon.start('http-disconnect', { marker: HTTP_MARKER, args: NO_POOL });
  await withDaemon(st.d, async () => {
    // Warm up (a session, a run, the session ended) before the baseline.
    const sid0 = await openSession(st.d);
    const warm = await rpc(st.d, sid0, 2, 'tools/call', { name: 'run_python_code', arguments: { code: "print('warm')" } });
    assert.equal(warm.result?.structuredContent?.status, 'ok', JSON.stringify(warm).slice(0, 500));
    await rawRequest(st.d.port, { method: 'DELETE', headers: sessionHeaders(sid0) });
    await sleep(500);
    st.base = procStats(st.d.proc.pid);
    t.diagnostic(`baseline: ${fmtStats(st.base)}`);

    const sessions = [];
    const log = [];
    let sid;
    for (let i = 0; i < ROUNDS; i++) {
      if (i % 8 === 0) sessions.push((sid = await openSession(st.d)));
      log.push(await httpRound(st.d, sid, i));
      assert.equal(st.d.exit, null, `the daemon died in round ${i}: ${JSON.stringify(st.d.exit)}; rounds: ${log.join(' ')}`);
    }
    t.diagnostic(`rounds: ${log.join(' ')}`);
    st.peak = procStats(st.d.proc.pid);
    t.diagnostic(`after the rounds: ${fmtStats(st.peak)}`);
    // The aborted calls' runs go on to the end; ending the sessions cancels
    // what is left.
    for (const s of sessions) await rawRequest(st.d.port, { method: 'DELETE', headers: sessionHeaders(s) });
  });
});

test('stdio clients going away at random points', { timeout: TEST_TIMEOUT_MS * 3 }, async (t) => {
  const bad = [];
  for (let i = 0; i < STDIO_ROUNDS; i++) {
    const d = await stdioRound(i);
    t.diagnostic(`${d.name}: ${d.mode} -> exit ${JSON.stringify(d.exit)}`);
    if (d.exit === null) {
      bad.push(`${d.name} (${d.mode}) did not exit within ${EXIT_WAIT_MS} ms\n${tail(d.stderr, 2000)}`);
      d.proc.kill('SIGKILL');
    } else if (d.exit.signal || d.exit.code !== 0) {
      bad.push(`${d.name} (${d.mode}) exit ${JSON.stringify(d.exit)}\n${tail(d.stderr, 2000)}`);
    }
  }
  assert.deepEqual(bad, [], bad.join('\n\n'));
});

test('afterwards: the HTTP daemon answers, no container is left, fds and RSS are back, SIGTERM exits 0', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  assert.ok(st.d, 'no HTTP daemon');
  await withDaemon(st.d, async () => {
    assert.equal(st.d.exit, null, `the HTTP daemon is gone: ${JSON.stringify(st.d.exit)}`);
    const sid = await openSession(st.d);
    const p0 = Date.now();
    const ping = await rpc(st.d, sid, 2, 'ping', {});
    assert.deepEqual(ping.result, {}, JSON.stringify(ping));
    const list = await rpc(st.d, sid, 3, 'tools/list', {});
    assert.equal(list.result?.tools?.length, 9, JSON.stringify(list).slice(0, 300));
    t.diagnostic(`ping + tools/list in ${Date.now() - p0} ms`);
    await rawRequest(st.d.port, { method: 'DELETE', headers: sessionHeaders(sid) });

    const left = await waitNoContainers(RUN_ID, LEFTOVER_WAIT_MS, { prefix: true });
    assert.deepEqual(left, [], `containers left ${LEFTOVER_WAIT_MS} ms after the rounds: ${JSON.stringify(left)}`);

    // Connections and threads wind down asynchronously: give them a moment.
    let now = procStats(st.d.proc.pid);
    for (let k = 0; k < 40 && now.fds > st.base.fds + FD_SLACK; k++) {
      await sleep(250);
      now = procStats(st.d.proc.pid);
    }
    t.diagnostic(`start ${fmtStats(st.base)}; after the rounds ${st.peak ? fmtStats(st.peak) : '?'}; end ${fmtStats(now)}`);
    assert.ok(now.fds <= st.base.fds + FD_SLACK, `open fds ${now.fds}, started with ${st.base.fds} (+${FD_SLACK} allowed)`);
    assert.ok(now.rssKiB <= st.base.rssKiB + RSS_SLACK_KIB, `RSS ${fmtStats(now)}, started with ${fmtStats(st.base)} (+16 MiB allowed)`);

    const exit = await st.d.stop();
    assert.deepEqual(exit, { code: 0, signal: null }, `SIGTERM: exit ${JSON.stringify(exit)}`);
  });
});
