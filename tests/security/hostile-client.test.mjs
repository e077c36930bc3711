// Hostile clients against a daemon with a real engine: trickling
// connections by the thousand (past --max-connections) while a real SDK
// client keeps calling, batch and value-count bombs, bare /sse floods and a
// foreign loopback origin. The legitimate client's every answer must
// arrive, the daemon's threads stay few and its peak memory stays under the
// bound README.md ("Memory") states for these options.
//
// Loopback only (127.0.0.0/8: the trickling clients come from 127.0.0.2
// to .9, so the per-address limit does not shut them out at once); bounded
// in count and time.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync } from 'node:fs';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { HttpDaemon, withDaemon, sleep, CALL_TIMEOUT_MS, TEST_TIMEOUT_MS, checkDaemonsAndContainers } from '../integration/lib.mjs';

// The daemon's options, and what README.md's memory bound ("Memory") makes
// of them: every term of its table, with these options.
const KIB = 1024;
const MIB = 1024 * KIB;
const OPTS = {
  maxConnections: 1024,
  perAddress: 300,
  headMs: 3000,
  maxMessage: 512 * KIB,
  inflightBodies: 8 * MIB,
  batchItems: 64,
  sessions: 16,
  sessionRequests: 4,
  concurrent: 2,
  queued: 4,
  output: 64 * KIB,
  filesOut: 4,
  filesOutBytes: MIB,
  plots: 2,
  inlineImage: 256 * KIB, // the default
  inlineText: 64 * KIB, // the default
  runStore: 4 * MIB,
};
function memoryBound(threads) {
  const o = OPTS;
  const answer = 12 * o.output + 6 * Math.min(o.filesOutBytes, (o.filesOut + o.plots) * Math.max(o.inlineImage, o.inlineText)) + MIB;
  const session = o.sessionRequests * (answer + 4 * MIB) + 20 * MIB;
  return 12 * MIB + o.maxConnections * 40 * KIB + 2 * o.inflightBodies + threads * (4 * o.maxMessage + MIB) +
    o.concurrent * (2 * o.output + 64 * KIB + 2 * o.filesOutBytes) + o.queued * o.maxMessage + o.sessions * session + o.runStore;
}

let d;

before(async () => {
  d = await HttpDaemon.start('hostile-client', {
    args: [
      '--pool-size', '0', '--max-connections', String(OPTS.maxConnections),
      '--max-connections-per-address', String(OPTS.perAddress),
      '--http-head-timeout-ms', String(OPTS.headMs), '--max-message-bytes', String(OPTS.maxMessage), '--max-code-bytes', String(OPTS.maxMessage / 4),
      '--max-inflight-body-bytes', String(OPTS.inflightBodies), '--max-batch-items', String(OPTS.batchItems),
      '--max-sessions', String(OPTS.sessions), '--max-session-requests', String(OPTS.sessionRequests),
      '--max-concurrent', String(OPTS.concurrent), '--max-queued', String(OPTS.queued),
      '--max-output-bytes', String(OPTS.output), '--max-files-out', String(OPTS.filesOut),
      '--max-files-out-bytes', String(OPTS.filesOutBytes), '--max-plots', String(OPTS.plots),
      '--run-store-max-bytes', String(OPTS.runStore),
      '--log-level', 'debug',
    ],
  });
});

after(async () => {
  if (d) await d.stop();
});

function procStatus(key) {
  const m = new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(readFileSync(`/proc/${d.proc.pid}/status`, 'utf8'));
  return Number(m[1]);
}

function pollingThreads() {
  const m = /(\d+) polling thread/.exec(d.stderr);
  return m ? Number(m[1]) : 16;
}

async function sdkClient(name) {
  const client = new Client({ name, version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(d.url));
  await client.connect(transport, { timeout: 30_000 });
  return { client, close: async () => { await transport.terminateSession().catch(() => {}); await client.close().catch(() => {}); } };
}

const HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
const init = (version) => JSON.stringify({
  jsonrpc: '2.0', id: 0, method: 'initialize',
  params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'hostile', version: '1' } },
});

async function session(version) {
  const r = await fetch(d.url, { method: 'POST', headers: HEADERS, body: init(version), signal: AbortSignal.timeout(5000) });
  assert.equal(r.status, 200);
  await r.arrayBuffer();
  const sid = r.headers.get('mcp-session-id');
  const post = async (body) => {
    const a = await fetch(d.url, { method: 'POST', headers: { ...HEADERS, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': version }, body, signal: AbortSignal.timeout(30_000) });
    return { status: a.status, text: await a.text() };
  };
  await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  return { sid, post };
}

test('2,000 connections trickling their heads, past --max-connections: an SDK client keeps getting every answer, threads stay few, the tricklers are cut at the head deadline', { timeout: TEST_TIMEOUT_MS }, async () => {
  await withDaemon(d, async () => {
    const threads0 = procStatus('Threads');
    const legit = await sdkClient('legit');
    const socks = [];
    let cut = 0;
    const head = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nContent-Type: application/json\r\nX-Slow: ${'a'.repeat(64)}`;
    const trickle = setInterval(() => {
      for (const s of socks) if (!s.destroyed && s.k < head.length) s.write(head[s.k++]);
    }, 1000);
    const stop = Date.now() + 6000;
    const answers = [];
    try {
      for (let i = 0; i < 2000; i++) {
        const s = net.connect({ port: d.port, host: '127.0.0.1', localAddress: `127.0.0.${2 + (i % 8)}` });
        s.k = 0;
        s.on('error', () => {});
        s.on('close', () => cut++);
        socks.push(s);
        if (i % 250 === 249) answers.push((await legit.client.listTools()).tools.length);
      }
      const threadsHeld = procStatus('Threads');
      // The legitimate client goes on through the flood: tools/list and a run.
      while (Date.now() < stop) {
        answers.push((await legit.client.listTools()).tools.length);
        const r = await legit.client.callTool({ name: 'run_python_code', arguments: { code: 'print(6*7)' } }, undefined, { timeout: CALL_TIMEOUT_MS });
        assert.equal(r.structuredContent?.stdout, '42\n', JSON.stringify(r).slice(0, 300));
      }
      assert.ok(answers.length >= 10 && answers.every((n) => n === answers[0] && n > 0), JSON.stringify(answers));
      assert.ok(threadsHeld <= threads0 + 2, `threads ${threadsHeld} with 2,000 connections (were ${threads0})`);
      // Near the limit the oldest were closed to make room; the rest at
      // their head deadline, however they trickle.
      await sleep(OPTS.headMs + 1500);
      assert.ok(cut >= 1990, `the daemon closed ${cut} of 2,000 trickling connections`);
      assert.match(d.stderr, /closed the oldest without a request head/);
    } finally {
      clearInterval(trickle);
      for (const s of socks) s.destroy();
      await legit.close();
    }
  });
});

test('batch bomb: a batch past --max-batch-items is refused whole; answers of one batch stay under --max-message-bytes', { timeout: TEST_TIMEOUT_MS }, async () => {
  await withDaemon(d, async () => {
    const s = await session('2025-03-26');
    const item = (i) => ({ jsonrpc: '2.0', id: i, method: 'tools/list' });
    // Too many values to parse (refused unparsed), then too many items.
    let r = await s.post(JSON.stringify(Array.from({ length: 5000 }, (_, i) => item(i))));
    assert.equal(r.status, 413, r.text.slice(0, 200));
    assert.match(JSON.parse(r.text).error.message, /too many JSON values/);
    r = await s.post(JSON.stringify(Array.from({ length: 200 }, (_, i) => item(i))));
    assert.equal(r.status, 200);
    assert.match(JSON.parse(r.text).error.message, /max-batch-items/);
    r = await s.post(JSON.stringify(Array.from({ length: OPTS.batchItems }, (_, i) => item(i))));
    assert.equal(r.status, 200);
    assert.ok(r.text.length < OPTS.maxMessage + OPTS.batchItems * 512, `batch answer ${r.text.length} bytes`);
    const answers = JSON.parse(r.text);
    assert.equal(answers.length, OPTS.batchItems);
    assert.ok(answers.some((a) => a.result?.tools) && answers.some((a) => /on its own/.test(a.error?.message ?? '')), r.text.slice(0, 300));
    // Many of them at once: memory stays bounded, the daemon answers.
    await Promise.all(Array.from({ length: 8 }, () => s.post(JSON.stringify(Array.from({ length: OPTS.batchItems }, (_, i) => item(i))))));
    assert.ok(procStatus('VmHWM') * KIB <= memoryBound(pollingThreads()), `peak RSS ${procStatus('VmHWM')} KiB over the bound ${memoryBound(pollingThreads()) >> 10} KiB`);
  });
});

test('value-count bomb: many small JSON values are refused before they are parsed, with or without a session', { timeout: TEST_TIMEOUT_MS }, async () => {
  await withDaemon(d, async () => {
    const hwm0 = procStatus('VmHWM');
    const bomb = `[${Array(150_000).fill('{}').join(',')}]`; // 450 KB
    // No session: only a small initialize may come; refused unread.
    let r = await fetch(d.url, { method: 'POST', headers: HEADERS, body: bomb, signal: AbortSignal.timeout(10_000) });
    assert.equal(r.status, 413);
    assert.match((await r.json()).error.message, /must be an initialize/);
    const s = await session('2025-06-18');
    for (let i = 0; i < 4; i++) {
      r = await s.post(bomb);
      assert.equal(r.status, 413, r.text.slice(0, 200));
      assert.match(JSON.parse(r.text).error.message, /too many JSON values/);
    }
    const grew = (procStatus('VmHWM') - hwm0) * KIB;
    assert.ok(grew < 4 * OPTS.maxMessage + 8 * MIB, `peak RSS grew ${grew >> 10} KiB`);
    assert.ok(procStatus('VmHWM') * KIB <= memoryBound(pollingThreads()));
  });
});

test('bare GET /sse flood: never-initialized legacy sessions take no session slot and go after their grace', { timeout: TEST_TIMEOUT_MS }, async () => {
  await withDaemon(d, async () => {
    const socks = [];
    let closed = 0;
    for (let i = 0; i < 100; i++) {
      const s = net.connect({ port: d.port, host: '127.0.0.1', localAddress: '127.0.0.20' });
      s.on('error', () => {});
      // The stream ends (its last chunk), or the connection with it.
      let got = '';
      let done = false;
      const end = () => { if (!done) { done = true; closed++; } };
      s.on('data', (c) => { got += c.toString('latin1'); if (got.includes('\r\n0\r\n\r\n')) end(); });
      s.on('close', end);
      s.write(`GET /sse HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nAccept: text/event-stream\r\n\r\n`);
      socks.push(s);
    }
    await sleep(500);
    // --max-sessions is 64: these 100 took none of them.
    for (let i = 0; i < 3; i++) await session('2025-06-18');
    await sleep(OPTS.headMs + 2000); // the grace is the head timeout (src/transport/http_sessions.h)
    assert.ok(closed >= 100, `${closed} of 100 bare /sse connections closed after the grace`);
    for (const s of socks) s.destroy();
  });
});

test('a foreign loopback origin (a local web page on another port) is refused and gets no CORS grant', { timeout: TEST_TIMEOUT_MS }, async () => {
  await withDaemon(d, async () => {
    for (const origin of ['http://localhost:3000', 'http://127.0.0.1:1', `https://localhost:${d.port}`]) {
      const r = await fetch(d.url, { method: 'POST', headers: { ...HEADERS, Origin: origin }, body: init('2025-06-18'), signal: AbortSignal.timeout(5000) });
      assert.equal(r.status, 403, origin);
      assert.equal(r.headers.get('access-control-allow-origin'), null, origin);
      assert.equal(r.headers.get('mcp-session-id'), null, origin);
      await r.arrayBuffer();
    }
    const own = `http://127.0.0.1:${d.port}`;
    const r = await fetch(d.url, { method: 'POST', headers: { ...HEADERS, Origin: own }, body: init('2025-06-18'), signal: AbortSignal.timeout(5000) });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('access-control-allow-origin'), own);
    await r.arrayBuffer();
  });
});

test('afterwards: the daemon exits 0 on SIGTERM and leaves no container', { timeout: TEST_TIMEOUT_MS }, async () => {
  const exit = await d.stop();
  assert.equal(exit.code, 0, JSON.stringify(exit));
  await checkDaemonsAndContainers();
});
