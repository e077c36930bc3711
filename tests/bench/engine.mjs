// A minimal Docker Engine API client for the warm-pool benchmark
// (tests/bench/pool.mjs): JSON requests over the engine's unix socket, the
// raw attach upgrade, the stdout/stderr demultiplexer, a tiny ustar writer,
// and the bookkeeping that removes every container the benchmark created.
// Works against Docker and Podman's compat API alike (both speak /v1.41).

import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';

export const API = '/v1.41';
/** Every container the benchmark creates carries BENCH_LABEL=<run id>. */
export const BENCH_LABEL = 'io.mcp-sandboxd.bench';

export const RECORD_PREFIX = Buffer.from('\u0000\u001emcpsbx-done:', 'latin1');
export const READY = Buffer.from('\u0000\u001emcpsbx-ready\n', 'latin1');
// A warm runner's first stdout once it has the whole request (runner.h).
export const GO = Buffer.from('\u0000\u001emcpsbx-go\n', 'latin1');

export class Engine {
  constructor(socketPath, runId) {
    this.socketPath = socketPath;
    this.runId = runId;
    // Keep-alive, as engine SDKs do: a peer server reuses its connection.
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    this.created = new Set();
  }

  /** method path [body] -> {status, body: Buffer}; path without /v1.41
   * (unless raw: then exactly as given, e.g. Podman's /v4.0.0/libpod/...). */
  request(method, path, body, { headers = {}, timeoutMs = 60_000, raw = false } = {}) {
    return new Promise((resolve, reject) => {
      let payload = null;
      const h = { Host: 'engine', ...headers };
      if (body !== undefined && body !== null) {
        payload = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
        if (!h['Content-Type']) h['Content-Type'] = 'application/json';
        h['Content-Length'] = payload.length;
      }
      const req = http.request(
        { socketPath: this.socketPath, agent: this.agent, method, path: raw ? path : API + path, headers: h, timeout: timeoutMs },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Like request, but the status must be one of ok; returns parsed JSON (or null). */
  async call(method, path, body, ok = [200, 201, 204], opts) {
    const r = await this.request(method, path, body, opts);
    if (!ok.includes(r.status)) {
      throw new Error(`${method} ${path}: HTTP ${r.status}: ${r.body.toString('utf8').slice(0, 300).trim()}`);
    }
    const text = r.body.toString('utf8');
    if (!text.trim()) return null;
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }

  /** Creates a container labelled for this run; returns its id. */
  async create(body) {
    const b = { ...body, Labels: { ...(body.Labels || {}), [BENCH_LABEL]: this.runId } };
    const r = await this.call('POST', '/containers/create', b, [201]);
    this.created.add(r.Id);
    return r.Id;
  }

  start(id) {
    return this.call('POST', `/containers/${id}/start`, null, [204, 304]);
  }

  async remove(id) {
    await this.call('DELETE', `/containers/${id}?force=1`, null, [200, 204, 404]);
    this.created.delete(id);
  }

  /** Removes what this run created: the ids it remembers, and anything the
   * engine lists with this run's label (a create whose answer was lost). */
  async cleanup() {
    const ids = new Set(this.created);
    try {
      const filters = encodeURIComponent(JSON.stringify({ label: [`${BENCH_LABEL}=${this.runId}`] }));
      for (const c of await this.call('GET', `/containers/json?all=1&filters=${filters}`, null, [200], { timeoutMs: 15_000 })) ids.add(c.Id);
    } catch {
      /* engine gone: the ids we know are all we can try */
    }
    await Promise.all([...ids].map((id) => this.remove(id).catch(() => {})));
    this.agent.destroy();
    return ids.size;
  }

  /**
   * Attach with the HTTP upgrade, raw on a fresh connection (what a minimal
   * client does). Resolves {socket, rest} once the engine answered 101 (or
   * 200: some engines do not switch protocols but hijack all the same);
   * rest holds stream bytes that came with the answer. The socket is
   * paused: resume it once listening.
   */
  attach(id, { stdin = true, stdout = true, stderr = true, timeoutMs = 30_000 } = {}) {
    const q = `stream=1&stdin=${+stdin}&stdout=${+stdout}&stderr=${+stderr}`;
    return new Promise((resolve, reject) => {
      const socket = net.connect(this.socketPath);
      let head = Buffer.alloc(0);
      const timer = setTimeout(() => fail(new Error(`attach ${id.slice(0, 12)}: no answer in ${timeoutMs} ms`)), timeoutMs);
      const fail = (e) => {
        clearTimeout(timer);
        socket.destroy();
        reject(e);
      };
      const onData = (c) => {
        head = Buffer.concat([head, c]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) {
          if (head.length > 16384) fail(new Error('attach: answer headers too long'));
          return;
        }
        socket.off('data', onData);
        socket.off('error', fail);
        clearTimeout(timer);
        // Paused until the caller listens: a flowing socket with no 'data'
        // listener drops what arrives (e.g. output while start is answered).
        socket.pause();
        const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head.toString('latin1', 0, end))?.[1]);
        if (status !== 101 && status !== 200) {
          socket.destroy();
          reject(new Error(`attach ${id.slice(0, 12)}: ${head.toString('utf8', 0, Math.min(head.length, 400))}`));
          return;
        }
        resolve({ socket, rest: head.subarray(end + 4) });
      };
      socket.on('data', onData);
      socket.on('error', fail);
      socket.write(
        `POST ${API}/containers/${id}/attach?${q} HTTP/1.1\r\nHost: engine\r\n` +
          'Connection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 0\r\n\r\n',
      );
    });
  }

  /** GET /info, parsed (Runtimes, DefaultRuntime, ...). */
  async info() {
    return this.call('GET', '/info', null, [200]);
  }
}

/**
 * Incremental demultiplexer of the attach/logs stream (Tty false): 8-byte
 * headers [stream, 0, 0, 0, size (4, big-endian)] then payload; frames
 * split across reads arbitrarily. push(buf) calls onFrame(stream, payload).
 */
export class Demux {
  constructor(onFrame) {
    this.onFrame = onFrame;
    this.buf = Buffer.alloc(0);
  }

  push(chunk) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    while (this.buf.length >= 8) {
      const size = this.buf.readUInt32BE(4);
      if (this.buf.length < 8 + size) break;
      this.onFrame(this.buf[0], this.buf.subarray(8, 8 + size));
      this.buf = this.buf.subarray(8 + size);
    }
  }
}

/** Demultiplexes a whole logs body into {stdout, stderr} strings. */
export function demuxAll(body) {
  const out = { 1: [], 2: [] };
  new Demux((s, p) => (out[s] || (out[s] = [])).push(p)).push(body);
  return { stdout: Buffer.concat(out[1]).toString('utf8'), stderr: Buffer.concat(out[2]).toString('utf8') };
}

export function newNonce() {
  return randomBytes(16).toString('hex');
}

/** The framed runner request: "mcpsbx/1 <len>\n" + JSON. */
export function frameRequest(nonce, code, stdin = '') {
  const body = Buffer.from(JSON.stringify({ nonce, code, stdin }));
  return Buffer.concat([Buffer.from(`mcpsbx/1 ${body.length}\n`), body]);
}

/**
 * A one-file ustar archive, in memory (what PUT /archive takes): a 512-byte
 * header, the content padded to 512, two zero blocks.
 */
export function tarOneFile(name, content, mode = 0o644) {
  const data = Buffer.isBuffer(content) ? content : Buffer.from(content);
  const h = Buffer.alloc(512);
  const put = (s, off, len) => h.write(s, off, len, 'latin1');
  const octal = (n, len) => n.toString(8).padStart(len - 1, '0') + '\0';
  put(name, 0, 100);
  put(octal(mode, 8), 100, 8);
  put(octal(0, 8), 108, 8); // uid
  put(octal(0, 8), 116, 8); // gid
  put(octal(data.length, 12), 124, 12);
  put(octal(Math.floor(Date.now() / 1000), 12), 136, 12);
  put('        ', 148, 8); // checksum field counts as spaces while summing
  put('0', 156, 1); // regular file
  put('ustar\u000000', 257, 8);
  let sum = 0;
  for (const b of h) sum += b;
  put(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8);
  const pad = Buffer.alloc((512 - (data.length % 512)) % 512);
  return Buffer.concat([h, data, pad, Buffer.alloc(1024)]);
}

export function quantile(sorted, q) {
  // Nearest rank, as tests/integration/latency.mjs.
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

/** {n, min, p50, p95, max, mean} in ms (3 decimals), or null for no samples. */
export function stats(values) {
  if (!values.length) return null;
  const s = [...values].sort((a, b) => a - b);
  const r = (x) => Math.round(x * 1000) / 1000;
  return {
    n: s.length,
    min: r(s[0]),
    p50: r(quantile(s, 0.5)),
    p95: r(quantile(s, 0.95)),
    max: r(s[s.length - 1]),
    mean: r(s.reduce((a, b) => a + b, 0) / s.length),
  };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
