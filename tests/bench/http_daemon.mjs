// build/mcp-sandboxd over HTTP for the bench sections (tests/bench/modern.mjs),
// as stdio_daemon.mjs has it over stdio: started with --http 127.0.0.1:0
// (the port the kernel picks, read from its log), its log kept under the
// section's log directory, and tools called with raw JSON-RPC POSTs on
// either wire over keep-alive connections, so that both wires pay the same
// client:
//   '2025'   the 2025-11-25 wire: one initialize (and
//            notifications/initialized) when started, then its
//            Mcp-Session-Id and MCP-Protocol-Version: 2025-11-25 on every
//            request
//   'modern' the 2026-07-28 wire: params._meta naming the revision and the
//            client's capabilities, the MCP-Protocol-Version, Mcp-Method
//            and (tools/call) Mcp-Name headers, no initialize, no session
// Every POST accepts JSON and SSE, as the SDK clients do (a tools/call is
// answered on SSE: progress may come first).

import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { sleep } from './engine.mjs';
import { sseDatas } from './report.mjs';
import { ENV_URI, waitPoolFull } from './stdio_daemon.mjs';

export const LEGACY = '2025-11-25';
export const MODERN = '2026-07-28';
export const WIRES = ['2025', 'modern'];

const START_WAIT_MS = 30_000;
const CALL_TIMEOUT_MS = 300_000;
const STOP_WAIT_MS = 15_000;
const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** The JSON-RPC messages of an SSE body (the data of each event). */
function sseMessages(text) {
  return sseDatas(text).map((d) => JSON.parse(d));
}

export class HttpDaemon {
  /** As StdioDaemon.start: section names the log file; opt: {bin, engine,
   * logDir, env}; log: progress. */
  static async start(section, name, args, opt, log) {
    const d = new HttpDaemon();
    d.name = name;
    mkdirSync(opt.logDir, { recursive: true });
    d.logStream = createWriteStream(path.join(opt.logDir, `${section}-daemon-${name}.log`));
    const env = { ...(opt.env ?? {}) };
    for (const k of ['PATH', 'HOME', 'LANG']) if (process.env[k] !== undefined) env[k] = process.env[k];
    d.proc = spawn(opt.bin, ['--http', '127.0.0.1:0', '--engine', opt.engine, ...args], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    d.pid = d.proc.pid;
    d.tail = '';
    d.exit = null;
    d.exited = new Promise((resolve) =>
      d.proc.once('exit', (code, signal) => {
        d.exit = { code, signal };
        resolve();
      }),
    );
    d.proc.once('error', (e) => {
      d.exit = { error: e.message };
    });
    d.proc.stderr.on('data', (c) => {
      d.logStream.write(c);
      d.tail = (d.tail + c.toString('utf8')).slice(-8000);
    });
    // Not left behind when this process ends early.
    d.onExit = () => d.proc.kill('SIGTERM');
    process.once('exit', d.onExit);
    d.agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    const deadline = Date.now() + START_WAIT_MS;
    for (;;) {
      const m = /serving MCP over HTTP at http:\/\/127\.0\.0\.1:(\d+)\/mcp\b/.exec(d.tail);
      if (m) {
        d.port = Number(m[1]);
        break;
      }
      if (d.exit || Date.now() > deadline) {
        await d.close();
        throw new Error(`daemon '${name}' did not serve HTTP (${d.exit ? `exit ${JSON.stringify(d.exit)}` : `${START_WAIT_MS} ms`}):\n${d.tail}`);
      }
      await sleep(25);
    }
    await d.initialize();
    log(`daemon '${name}' pid ${d.pid} at http://127.0.0.1:${d.port}/mcp, 2025 session ${d.sid.slice(0, 8)}...: ${args.join(' ')}`);
    return d;
  }

  /** POST body with headers: {status, headers, text}. */
  post(body, headers) {
    return new Promise((resolve, reject) => {
      const payload = Buffer.from(JSON.stringify(body));
      const req = http.request(
        {
          host: '127.0.0.1',
          port: this.port,
          path: '/mcp',
          method: 'POST',
          agent: this.agent,
          timeout: CALL_TIMEOUT_MS,
          headers: {
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream',
            'Content-Length': payload.length,
            ...headers,
          },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${body.method}: no answer in ${CALL_TIMEOUT_MS} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  async initialize() {
    const h = { 'MCP-Protocol-Version': LEGACY };
    const r = await this.post(
      { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'mcp-sandboxd-bench', version: '1.0.0' } } },
      h,
    );
    this.sid = r.headers['mcp-session-id'];
    if (r.status !== 200 || !this.sid) throw new Error(`initialize: HTTP ${r.status}, session '${this.sid}': ${r.text.slice(0, 300)}`);
    const n = await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { ...h, 'Mcp-Session-Id': this.sid });
    if (n.status !== 202) throw new Error(`notifications/initialized: HTTP ${n.status}, expected 202`);
    this.nextId = 1;
  }

  /** One request on wire ('2025' or 'modern'): {ms, result} (ms from the
   * POST to the whole answer read); throws on an error or a wrong answer. */
  async request(wire, method, params = {}) {
    const id = this.nextId++;
    let body;
    let headers;
    if (wire === 'modern') {
      body = { jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...(params._meta ?? {}), ...META } } };
      headers = { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': method };
      if (method === 'tools/call') headers['Mcp-Name'] = params.name;
      if (method === 'resources/read') headers['Mcp-Name'] = params.uri;
    } else {
      body = { jsonrpc: '2.0', id, method, params };
      headers = { 'MCP-Protocol-Version': LEGACY, 'Mcp-Session-Id': this.sid };
    }
    const t0 = performance.now();
    const r = await this.post(body, headers);
    const ms = performance.now() - t0;
    const what = `${method} on the ${wire} wire`;
    if (r.status !== 200) throw new Error(`${what}: HTTP ${r.status}: ${r.text.slice(0, 600)}\n${this.tail.slice(-2000)}`);
    if (wire === 'modern' && r.headers['mcp-session-id']) throw new Error(`${what}: the answer opened a session`);
    const sse = /^text\/event-stream/i.test(r.headers['content-type'] ?? '');
    const msg = (sse ? sseMessages(r.text) : [JSON.parse(r.text)]).find((m) => m?.id === id && ('result' in m || 'error' in m));
    if (!msg?.result) throw new Error(`${what}: ${msg ? JSON.stringify(msg.error) : 'no answer'}: ${r.text.slice(0, 600)}`);
    return { ms, result: msg.result };
  }

  /** A tools/call on wire; as StdioDaemon.call: {ms, sc}. */
  async call(tool, args, wire) {
    const { ms, result } = await this.request(wire, 'tools/call', { name: tool, arguments: args });
    if (result.isError) throw new Error(`${tool} on the ${wire} wire: ${JSON.stringify(result).slice(0, 600)}\n${this.tail.slice(-2000)}`);
    return { ms, sc: result.structuredContent };
  }

  /** As StdioDaemon.poolFull, read on the 2025 session. */
  poolFull(language = 'python') {
    return waitPoolFull(() => this.environment(), language);
  }

  /** Resolves once language's pool has at least n sandboxes ready. */
  poolReady(n, language = 'python') {
    return waitPoolFull(() => this.environment(), language, (p) => p.ready >= n);
  }

  async environment() {
    return (await this.request('2025', 'resources/read', { uri: ENV_URI })).result.contents[0].text;
  }

  /** SIGTERM (the daemon removes its sandboxes), SIGKILL if it hangs. */
  async close() {
    if (!this.proc) return;
    if (!this.exit) {
      this.proc.kill('SIGTERM');
      const t = setTimeout(() => this.proc.kill('SIGKILL'), STOP_WAIT_MS);
      await this.exited;
      clearTimeout(t);
    }
    process.removeListener('exit', this.onExit);
    this.agent.destroy();
    this.logStream.end();
    this.proc = null;
  }
}
