// A small Docker Engine API client over the engine's unix socket, with
// Node's http module only: JSON requests, the hijacked attach stream and
// the /events stream. Everything is bounded: answers are capped, every
// request has a timeout, and the connection pool is small.

import http from 'node:http';

const API = '/v1.41'; // Docker 20.10's; Podman answers it too
const MAX_ANSWER = 8 << 20;
const MAX_EVENT_LINE = 1 << 20;

export class EngineError extends Error {
  constructor(status, message) {
    super(message);
    this.code = status;
  }
}

export class Docker {
  constructor(engine = 'unix:///var/run/docker.sock') {
    if (!engine.startsWith('unix://')) throw new Error(`--engine must be unix:///path, not ${engine}`);
    this.socketPath = engine.slice('unix://'.length);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  }

  // METHOD path (from "/containers/...") with an optional JSON body; the
  // answer's status and its JSON (or text). Rejects on transport errors
  // and on a timeout, never on a status: callers judge those.
  request(method, path, body, timeoutMs = 60000) {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          socketPath: this.socketPath,
          agent: this.agent,
          method,
          path: API + path,
          headers: data
            ? { 'Content-Type': 'application/json', 'Content-Length': data.length }
            : {},
        },
        (res) => {
          const chunks = [];
          let n = 0;
          res.on('data', (c) => {
            n += c.length;
            if (n > MAX_ANSWER) req.destroy(new Error(`engine answer to ${path} is over ${MAX_ANSWER} bytes`));
            else chunks.push(c);
          });
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json = null;
            try {
              json = text ? JSON.parse(text) : null;
            } catch {
              json = null;
            }
            resolve({ status: res.statusCode, json, text });
          });
          res.on('error', reject);
        },
      );
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`engine: ${method} ${path} timed out`)));
      req.on('error', reject);
      req.end(data);
    });
  }

  // request() that wants a 2xx; else an EngineError with the engine's message.
  async ok(method, path, body, timeoutMs) {
    const r = await this.request(method, path, body, timeoutMs);
    if (r.status < 200 || r.status > 299) {
      const msg = (r.json && r.json.message) || r.text.trim() || `status ${r.status}`;
      throw new EngineError(r.status, msg);
    }
    return r.json;
  }

  // The attach stream (Tty false: multiplexed 8-byte frame headers) as a
  // duplex socket; head bytes read with the 101 are put back. An engine
  // refusal (409: not running, 404: gone) rejects with EngineError.
  attach(id, { stdin, stdout, stderr }) {
    const q = `stream=1&stdin=${stdin ? 1 : 0}&stdout=${stdout ? 1 : 0}&stderr=${stderr ? 1 : 0}`;
    return new Promise((resolve, reject) => {
      const req = http.request({
        socketPath: this.socketPath,
        method: 'POST',
        path: `${API}/containers/${encodeURIComponent(id)}/attach?${q}`,
        headers: { Connection: 'Upgrade', Upgrade: 'tcp' },
      });
      req.setTimeout(30000, () => req.destroy(new Error('engine: attach timed out')));
      req.on('upgrade', (res, socket, head) => {
        req.setTimeout(0);
        socket.setTimeout(0);
        if (head && head.length) socket.unshift(head);
        resolve(socket);
      });
      req.on('response', (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.length < 64 && chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let msg = text.trim();
          try {
            msg = JSON.parse(text).message || msg;
          } catch {}
          reject(new EngineError(res.statusCode, msg || `status ${res.statusCode}`));
        });
      });
      req.on('error', reject);
      req.end();
    });
  }

  // Follows /events for containers carrying label (k=v): onEvent gets each
  // event object; onEnd runs once when the stream stops. Returns a stop().
  events(label, onEvent, onEnd) {
    const filters = encodeURIComponent(JSON.stringify({ type: ['container'], label: [label] }));
    let buf = '';
    let ended = false;
    const end = (err) => {
      if (!ended) {
        ended = true;
        onEnd(err);
      }
    };
    const req = http.request(
      { socketPath: this.socketPath, method: 'GET', path: `${API}/events?filters=${filters}` },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          end(new Error(`engine /events: status ${res.statusCode}`));
          return;
        }
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          buf += chunk;
          if (buf.length > MAX_EVENT_LINE && !buf.includes('\n')) {
            req.destroy(new Error('engine event over the size cap'));
            return;
          }
          let nl;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (!line) continue;
            try {
              onEvent(JSON.parse(line));
            } catch {
              /* a line that is not JSON says nothing */
            }
          }
        });
        res.on('end', () => end(null));
        res.on('error', end);
      },
    );
    req.on('error', end);
    req.end();
    return () => {
      ended = true;
      req.destroy();
    };
  }

  close() {
    this.agent.destroy();
  }
}

// Splits the engine's multiplexed stream (8-byte headers: stream type, 3
// zero bytes, big-endian payload length) into (type, payload) calls.
export class Demux {
  constructor(onFrame, maxFrame = 16 << 20) {
    this.onFrame = onFrame;
    this.maxFrame = maxFrame;
    this.buf = Buffer.alloc(0);
  }

  push(chunk) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    while (this.buf.length >= 8) {
      const size = this.buf.readUInt32BE(4);
      if (size > this.maxFrame) throw new Error(`engine stream frame of ${size} bytes`);
      if (this.buf.length < 8 + size) break;
      const type = this.buf[0];
      const payload = this.buf.subarray(8, 8 + size);
      this.buf = this.buf.subarray(8 + size);
      if (size > 0) this.onFrame(type, payload);
    }
  }
}
