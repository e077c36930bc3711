// Hostile HTTP clients against the streamable HTTP transport: idle and
// trickling connections by the thousand, oversized headers, bad chunking,
// oversized bodies, guessed and replayed session ids. The daemon must keep
// serving a well-behaved client throughout, answer with clear status codes,
// and keep its threads and memory bounded: connections cost no thread, and
// a request head or body must arrive by an absolute deadline however its
// bytes trickle.
//
// No engine is needed (the daemon points at a socket that does not exist):
// only the HTTP layer is under test. Loopback only; bounded in count and time.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync } from 'node:fs';

import { HttpDaemon, withDaemon, sleep, TEST_TIMEOUT_MS } from '../integration/lib.mjs';

const HEAD_TIMEOUT_MS = 4000; // --http-head-timeout-ms, below
let d;

before(async () => {
  d = await HttpDaemon.start('http-abuse', {
    args: ['--engine', 'unix:///nonexistent/mcpsbx-abuse.sock', '--pool-size', '0', '--max-code-bytes', '32768', '--max-message-bytes', '65536', '--max-connections', '2048',
      '--http-head-timeout-ms', String(HEAD_TIMEOUT_MS), '--http-body-timeout-ms', String(HEAD_TIMEOUT_MS)],
  });
});

after(async () => {
  if (d) await d.stop();
});

function procStatus(key) {
  const m = new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(readFileSync(`/proc/${d.proc.pid}/status`, 'utf8'));
  return Number(m[1]);
}

const INIT = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'abuse', version: '1' } },
});

/** A well-behaved client: initialize answers 200 within 2 s. */
async function served() {
  const r = await fetch(d.url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: INIT,
    signal: AbortSignal.timeout(2000),
  });
  assert.equal(r.status, 200);
  const sid = r.headers.get('mcp-session-id');
  await r.arrayBuffer();
  return sid;
}

/** Sends raw bytes on a fresh connection; resolves to what came back when
 * the server closed it (or after ms). */
function raw(bytes, ms = 5000) {
  return new Promise((resolve) => {
    const s = net.connect(d.port, '127.0.0.1');
    let got = '';
    const timer = setTimeout(() => { s.destroy(); resolve({ got, closed: false }); }, ms);
    s.on('data', (c) => (got += c.toString('latin1')));
    s.on('error', () => {});
    s.on('close', () => { clearTimeout(timer); resolve({ got, closed: true }); });
    s.write(bytes);
  });
}

const status = (got) => Number(/^HTTP\/1\.[01] (\d{3})/.exec(got)?.[1] ?? 0);

test('1,500 idle connections: no thread each, a client is still served at once, the idle ones are closed at the head deadline', { timeout: TEST_TIMEOUT_MS }, async () => {
  await withDaemon(d, async () => {
    const threads0 = procStatus('Threads');
    const socks = [];
    let closedByServer = 0;
    for (let i = 0; i < 1500; i++) {
      const s = net.connect({ port: d.port, host: '127.0.0.1', localAddress: `127.0.0.${2 + (i % 4)}` });
      s.on('error', () => {});
      s.on('end', () => closedByServer++);
      socks.push(s);
    }
    await sleep(1500);
    const t0 = Date.now();
    await served();
    assert.ok(Date.now() - t0 < 2000);
    const threadsHeld = procStatus('Threads');
    assert.ok(threadsHeld <= threads0 + 2, `threads ${threadsHeld} (were ${threads0})`);
    await sleep(HEAD_TIMEOUT_MS + 2000);
    assert.ok(closedByServer >= 1490, `the server closed ${closedByServer} of 1500 idle connections`);
    for (const s of socks) s.destroy();
    await sleep(500);
    assert.ok(procStatus('Threads') <= threads0 + 2, `threads ${procStatus('Threads')} (were ${threads0})`);
    await served();
  });
});

test('slowloris: 50 clients trickling header bytes, or a body, are cut at the deadline while others are served', { timeout: TEST_TIMEOUT_MS }, async () => {
  await withDaemon(d, async () => {
    const header = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nContent-Type: application/json\r\nX-Slow: ${'a'.repeat(200)}\r\n`;
    const ends = [];
    const socks = [];
    for (let i = 0; i < 50; i++) {
      const s = net.connect(d.port, '127.0.0.1');
      s.on('error', () => {});
      let k = 0;
      const timer = setInterval(() => { if (k < header.length) s.write(header[k++]); }, 500);
      ends.push(new Promise((resolve) => s.on('close', () => { clearInterval(timer); resolve(Date.now()); })));
      socks.push(s);
    }
    // A complete head, then a body trickled a byte at a time.
    const head = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: 1000\r\n\r\n`;
    for (let i = 0; i < 10; i++) {
      const s = net.connect(d.port, '127.0.0.1');
      s.on('error', () => {});
      s.write(head);
      const timer = setInterval(() => s.write(' '), 500);
      ends.push(new Promise((resolve) => s.on('close', () => { clearInterval(timer); resolve(Date.now()); })));
      socks.push(s);
    }
    const t0 = Date.now();
    for (let i = 0; i < 5; i++) {
      await served();
      await sleep(500);
    }
    // Each byte would renew an idle timer; the deadlines do not move.
    const closed = await Promise.race([Promise.all(ends), sleep(HEAD_TIMEOUT_MS + 5000).then(() => null)]);
    for (const s of socks) s.destroy();
    assert.ok(closed, 'every trickling client was cut off');
    assert.ok(Math.max(...closed) - t0 < HEAD_TIMEOUT_MS + 2000, `the last was cut after ${Math.max(...closed) - t0} ms`);
    await served();
  });
});

test('an oversized header block → 431 (or 413/400) and the connection closes; bad chunking → 400', { timeout: TEST_TIMEOUT_MS }, async () => {
  await withDaemon(d, async () => {
    const big = await raw(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(200_000)}\r\n\r\n`);
    assert.ok([431, 413, 400].includes(status(big.got)) || (big.closed && big.got === ''), JSON.stringify(big.got.slice(0, 100)));
    const chunk = await raw(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`);
    assert.equal(status(chunk.got), 400, JSON.stringify(chunk.got.slice(0, 100)));
    await served();
  });
});

test('a body past --max-message-bytes → 413; a truncated body ends with the connection, nothing stuck', { timeout: TEST_TIMEOUT_MS }, async () => {
  await withDaemon(d, async () => {
    const body = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"${'c'.repeat(100_000)}"}}`;
    const r = await fetch(d.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body,
      signal: AbortSignal.timeout(5000),
    });
    assert.equal(r.status, 413);
    await r.arrayBuffer();
    const cut = await raw(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"jsonrpc"`, 1500);
    assert.equal(cut.got, '', 'no answer to a body that never arrived');
    await served();
  });
});

test('guessed, malformed and replayed session ids → 404 or 400, never another client\'s session', { timeout: TEST_TIMEOUT_MS }, async () => {
  await withDaemon(d, async () => {
    const post = (sid, body) => fetch(d.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' },
      body,
      signal: AbortSignal.timeout(5000),
    });
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' });
    const sid = await served();
    assert.match(sid, /^[0-9a-z-]{1,63}\.[0-9a-f]{32}$/, 'session ids are long random values, after the daemon\'s name');
    for (const guess of ['0', '00000000000000000000000000000000', sid.slice(0, -1) + (sid.endsWith('0') ? '1' : '0'), 'x'.repeat(5000), '../../etc/passwd']) {
      const r = await post(guess, ping);
      assert.ok([400, 404].includes(r.status), `${guess.slice(0, 40)}: ${r.status}`);
      await r.arrayBuffer();
    }
    const del = await fetch(d.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18' } });
    assert.ok([200, 204].includes(del.status));
    const replay = await post(sid, ping);
    assert.equal(replay.status, 404);
    await replay.arrayBuffer();
  });
});

test('afterwards: memory bounded, the daemon exits 0 on SIGTERM', { timeout: TEST_TIMEOUT_MS }, async () => {
  const rssKiB = procStatus('VmRSS');
  assert.ok(rssKiB < 200 * 1024, `VmRSS ${rssKiB} KiB`);
  const exit = await d.stop();
  assert.equal(exit.code, 0, JSON.stringify(exit));
});
