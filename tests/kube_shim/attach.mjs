// The Pod attach subresource over a WebSocket, bridged to the engine's
// attach (multiplexed frames, Tty false). What the bytes are, and from
// where:
//   - the API server's checks before any upgrade (AttachLocation): 404
//     for no pod, 400 "container X is not valid for pod Y", 400 "you must
//     specify at least one of stdin, stdout, stderr", 400 "pod X does not
//     have a host assigned";
//   - a client offering v5.channel.k8s.io is served as the API server's
//     StreamTranslatorHandler serves it (apiserver util/proxy): the
//     upgrade is accepted first, one empty message goes on the lowest
//     writable channel (stdout, else stderr, else error), and the end is a
//     Status on channel 3 then a close frame: Success when the attach ran
//     to its end (the kubelet's ServeAttach reports no exit code for an
//     attach, only exec does), InternalError when the kubelet could not
//     attach (its GetAttach: "container sandbox not found in pod
//     NAME_NS" when the container is not running);
//   - a client offering only v4.channel.k8s.io reaches the kubelet
//     through the upgrade-aware proxy: the same channels, but a container
//     that is not running is the kubelet's plain-text HTTP 500;
//   - channels (wsstream): each binary message is the channel byte then
//     the payload; 0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize
//     (ignored: no terminal); v5's close signal {255, ch} closes stdin on
//     {255, 0} (the engine's stdin is half-closed; with stdinOnce the
//     container then reads EOF), a malformed one ends the connection.
// Other protocols (SPDY, base64.channel.k8s.io, channel.k8s.io v1-v3) are
// refused with 400 naming the ones served.

import { STATUS_CODES } from 'node:http';
import { WebSocketServer } from 'ws';
import { Demux } from './docker.mjs';
import { badRequest, channelStatus, internal, notFound, SUCCESS, tooManyRequests } from './status.mjs';

const V5 = 'v5.channel.k8s.io';
const V4 = 'v4.channel.k8s.io';
const PIECE = 32 * 1024; // a kubelet copies output in 32 KiB reads
const MAX_MSG = (1 << 20) + 1; // one channel byte and 1 MiB
const HIGH = 256; // messages in flight before the engine's stream is paused
const MAX_ATTACHES = 64;

export function rawReply(socket, code, body, type = 'application/json') {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${code} ${STATUS_CODES[code]}\r\nContent-Type: ${type}\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
}

const bool = (v) => ['1', 't', 'T', 'true', 'TRUE', 'True'].includes(v);

export class Attacher {
  constructor({ store, docker, log }) {
    this.store = store;
    this.docker = docker;
    this.log = log;
    this.active = 0;
    this.wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MSG, perMessageDeflate: false, clientTracking: true });
  }

  // An upgrade request for .../pods/NAME/attach (authenticated already).
  async handle(req, socket, head, ns, name, query) {
    const fail = (st) => rawReply(socket, st.code, st);
    const p = this.store.get(ns, name);
    if (!p) return fail(notFound(name));
    const container = query.get('container') || p.plan.container;
    if (container !== p.plan.container) return fail(badRequest(`container ${container} is not valid for pod ${name}`));
    const want = { stdin: bool(query.get('stdin')), stdout: bool(query.get('stdout')), stderr: bool(query.get('stderr')) };
    if (!want.stdin && !want.stdout && !want.stderr) return fail(badRequest('you must specify at least one of stdin, stdout, stderr'));
    if (!p.spec.nodeName) return fail(badRequest(`pod ${name} does not have a host assigned`));
    const offered = String(req.headers['sec-websocket-protocol'] || '').split(',').map((s) => s.trim());
    const proto = offered.includes(V5) ? V5 : offered.includes(V4) ? V4 : null;
    const key = String(req.headers['sec-websocket-key'] || '');
    if (String(req.headers.upgrade || '').toLowerCase() !== 'websocket' || !proto || req.method !== 'GET' ||
        req.headers['sec-websocket-version'] !== '13' || !/^[+/0-9A-Za-z]{22}==$/.test(key))
      return fail(badRequest(`kube-shim serves attach as a WebSocket GET offering ${V5} or ${V4} only`));
    if (this.active >= MAX_ATTACHES) return fail(tooManyRequests());
    const missing = `container ${container} not found in pod ${name}_${ns}`;
    await this.store.refresh(p);
    let engine = null;
    if (p.cid && p.status.phase === 'Running') engine = await this.docker.attach(p.cid, want).catch(() => null);
    if (!engine && proto === V4) return rawReply(socket, 500, missing, 'text/plain; charset=utf-8');
    let upgraded = false;
    socket.once('close', () => !upgraded && engine && engine.destroy());
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      upgraded = true;
      if (!engine) {
        ws.send(Buffer.from([want.stdout ? 1 : want.stderr ? 2 : 3]));
        ws.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify(channelStatus(internal(`unable to upgrade connection: ${missing}`))))]));
        ws.close(1000);
        return;
      }
      this.bridge(ws, engine, proto, want);
    });
  }

  bridge(ws, engine, proto, want) {
    this.active++;
    let inflight = 0;
    let stdinOpen = want.stdin;
    let over = false;
    const send = (ch, payload) => {
      if (ws.readyState !== ws.OPEN) return;
      const m = Buffer.allocUnsafe(payload.length + 1);
      m[0] = ch;
      payload.copy(m, 1);
      inflight++;
      ws.send(m, { binary: true }, () => {
        inflight--;
        if (inflight < HIGH / 2 && engine.isPaused()) engine.resume();
      });
      if (inflight >= HIGH) engine.pause();
    };
    const end = (status) => {
      if (over) return;
      over = true;
      this.active--;
      if (ws.readyState === ws.OPEN) {
        send(3, Buffer.from(JSON.stringify(status)));
        ws.close(1000);
      }
      engine.destroy();
    };
    ws.send(Buffer.from([want.stdout ? 1 : want.stderr ? 2 : 3]));
    const demux = new Demux((type, payload) => {
      if ((type === 1 && want.stdout) || (type === 2 && want.stderr))
        for (let off = 0; off < payload.length; off += PIECE) send(type, payload.subarray(off, off + PIECE));
    });
    engine.on('data', (chunk) => {
      try {
        demux.push(chunk);
      } catch (e) {
        end(channelStatus(internal(`error attaching to container: ${e.message}`)));
      }
    });
    // The engine ends the stream when the container's output ends: the
    // attach ran to its end, whatever the exit code.
    engine.on('end', () => end(SUCCESS));
    engine.on('error', (e) => end(channelStatus(internal(`error attaching to container: ${e.message}`))));
    engine.on('close', () => end(SUCCESS));
    ws.on('message', (data) => {
      if (!data.length || over) return;
      const ch = data[0];
      if (proto === V5 && ch === 255) {
        if (data.length !== 2 || data[1] > 4) {
          over = true;
          this.active--;
          ws.close(1000);
          engine.destroy();
        } else if (data[1] === 0 && stdinOpen) {
          stdinOpen = false;
          engine.end(); // half-close: the engine closes the container's stdin (stdinOnce)
        }
        return;
      }
      if (ch !== 0 || !stdinOpen || data.length === 1) return;
      if (!engine.write(data.subarray(1))) {
        ws.pause();
        engine.once('drain', () => ws.resume());
      }
    });
    ws.on('close', () => {
      if (!over) {
        over = true;
        this.active--;
      }
      engine.destroy(); // with stdinOnce the engine closes the container's stdin
    });
    ws.on('error', () => engine.destroy());
  }

  close() {
    for (const ws of this.wss.clients) ws.terminate();
    this.wss.close();
  }
}
