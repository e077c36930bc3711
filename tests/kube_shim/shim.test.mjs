// kube-shim against the local Docker engine, through plain HTTPS (Node's
// https with the shim's CA) and a `ws` client, the way the daemon's
// Kubernetes backend talks to an API server: create, the name taken,
// watch to Running, attach (v5: stdin, its close signal, stdout, stderr,
// the error channel), the pod's end via GET, list by label in pages,
// delete and the DELETED event, 401, refusals, an OOM kill, an attach to
// a pod that is not running, and no container left behind.
//
//   node --test tests/kube_shim/shim.test.mjs    (needs Docker and the
//   mcp-sandboxd-python:latest image; never pulls)

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';

const IMAGE = 'mcp-sandboxd-python:latest';
const NS = 'mcp-sandboxd';
const SHIM = new URL('./shim.mjs', import.meta.url).pathname;
const PODS = `/api/v1/namespaces/${NS}/pods`;

let shim, dir, base, token, ca, run;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-shim-test-'));
  shim = spawn(process.execPath, [SHIM, '--dir', dir], { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  shim.stderr.on('data', (c) => {
    err += c;
    const m = /run ([0-9a-f]+),/.exec(err);
    if (m) run = m[1];
  });
  base = await new Promise((resolve, reject) => {
    let out = '';
    shim.stdout.on('data', (c) => {
      out += c;
      const m = /kube-shim: ready (https:\/\/127\.0\.0\.1:\d+)\n/.exec(out);
      if (m) resolve(m[1]);
    });
    shim.on('exit', (code) => reject(new Error(`shim exited ${code}: ${err}`)));
    setTimeout(() => reject(new Error(`shim not ready: ${err}`)), 20000);
  });
  token = fs.readFileSync(path.join(dir, 'token'), 'utf8').trim();
  ca = fs.readFileSync(path.join(dir, 'ca.pem'));
});

after(async () => {
  if (shim && shim.exitCode === null) {
    const gone = new Promise((r) => shim.once('exit', r));
    shim.stdin.end(); // EOF on stdin: the shim cleans up and exits
    await gone;
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

// One HTTPS request; the answer's status, headers and body (JSON when it is).
function api(method, p, body, { auth = `Bearer ${token}`, type = 'application/json' } = {}) {
  const data = body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const headers = { Accept: 'application/json' };
    if (auth) headers.Authorization = auth;
    if (data) Object.assign(headers, { 'Content-Type': type, 'Content-Length': data.length });
    const req = https.request(new URL(p, base), { method, ca, headers, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json = null;
        try {
          json = JSON.parse(text);
        } catch {}
        resolve({ status: res.statusCode, headers: res.headers, json, text });
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

// A watch: its events as they come, and waitFor(predicate).
function watch(query) {
  const events = [];
  const waiters = [];
  let ended = false;
  const req = https.request(new URL(`${PODS}?${query}`, base), {
    ca,
    agent: false,
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
  });
  const ready = new Promise((resolve, reject) => {
    req.on('response', (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        buf += c;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          events.push(JSON.parse(buf.slice(0, nl)));
          buf = buf.slice(nl + 1);
          waiters.forEach((w) => w());
        }
      });
      res.on('end', () => {
        ended = true;
        waiters.forEach((w) => w());
      });
      resolve(res);
    });
    req.on('error', reject);
  });
  req.end();
  const waitFor = (pred, ms = 30000) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const e = events.find(pred);
        if (e) resolve(e);
        else if (ended) reject(new Error(`watch ended without the event: ${JSON.stringify(events.map((x) => x.type))}`));
        return Boolean(e) || ended;
      };
      if (check()) return;
      const t = setTimeout(() => reject(new Error(`no such watch event in ${ms} ms: ${JSON.stringify(events.map((e) => [e.type, e.object.status && e.object.status.phase]))}`)), ms);
      waiters.push(() => check() && clearTimeout(t));
    });
  return { events, ready, waitFor, close: () => req.destroy(), isEnded: () => ended };
}

// The Pod pod_spec.c makes (src/backend/kubernetes/pod_spec.c), for cmd.
function pod(name, cmd, { memory = '268435456', runtime, restartPolicy = 'Never', instance = 'shimtest' } = {}) {
  const q = { memory, cpu: '500m', 'ephemeral-storage': '67108864' };
  const sc = { runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, seccompProfile: { type: 'RuntimeDefault' } };
  const spec = {
    restartPolicy,
    activeDeadlineSeconds: 600,
    terminationGracePeriodSeconds: 0,
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    hostNetwork: false,
    hostPID: false,
    hostIPC: false,
    shareProcessNamespace: true,
    securityContext: sc,
    containers: [
      {
        name: 'sandbox',
        image: IMAGE,
        imagePullPolicy: 'IfNotPresent',
        command: cmd,
        workingDir: '/work',
        env: [{ name: 'HOME', value: '/work' }],
        stdin: true,
        stdinOnce: true,
        tty: false,
        resources: { limits: { ...q }, requests: { ...q } },
        securityContext: {
          ...sc,
          allowPrivilegeEscalation: false,
          privileged: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        },
        volumeMounts: [
          { name: 'work', mountPath: '/work' },
          { name: 'shm', mountPath: '/dev/shm' },
        ],
      },
    ],
    volumes: [
      { name: 'work', emptyDir: { medium: 'Memory', sizeLimit: '67108864' } },
      { name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: '67108864' } },
    ],
  };
  if (runtime) spec.runtimeClassName = runtime;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: NS,
      labels: { 'mcp-sandboxd.io/managed': '1', 'mcp-sandboxd.io/sandbox': '1', 'mcp-sandboxd.io/instance': instance },
      annotations: { 'mcp-sandboxd.io/uid': '65534', 'mcp-sandboxd.io/expires': '1900000000' },
    },
    spec,
  };
}

// Attaches (offering v5 then v4, as kube_ws.c does); resolves with the
// socket, its chosen protocol and every message as [channel, payload].
function attach(name) {
  const ws = new WebSocket(
    `${base.replace('https', 'wss')}${PODS}/${name}/attach?container=sandbox&stdin=true&stdout=true&stderr=true&tty=false`,
    ['v5.channel.k8s.io', 'v4.channel.k8s.io'],
    { ca, headers: { Authorization: `Bearer ${token}` }, perMessageDeflate: false },
  );
  const msgs = [];
  const closed = new Promise((resolve) => ws.on('close', (code) => resolve(code)));
  ws.on('message', (data) => msgs.push([data[0], data.subarray(1)]));
  const open = new Promise((resolve, reject) => {
    ws.on('open', resolve);
    ws.on('error', reject);
    ws.on('unexpected-response', (req, res) => reject(new Error(`attach answered ${res.statusCode}`)));
  });
  return { ws, msgs, open, closed };
}

// A GET on the Docker engine's API (its unix socket), for what the shim left.
const engine = (p) =>
  new Promise((resolve, reject) => {
    http
      .get({ socketPath: '/var/run/docker.sock', path: `/v1.41${p}` }, (res) => {
        let t = '';
        res.on('data', (c) => (t += c));
        res.on('end', () => resolve(JSON.parse(t)));
      })
      .on('error', reject);
  });

const text = (msgs, ch) => Buffer.concat(msgs.filter((m) => m[0] === ch).map((m) => m[1])).toString('utf8');

async function until(fn, ms = 20000) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('every request needs the bearer token', async () => {
  for (const auth of [null, 'Bearer wrong', `Basic ${token}`]) {
    const r = await api('GET', PODS, undefined, { auth });
    assert.equal(r.status, 401);
    assert.deepEqual(r.json, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 });
  }
  const kc = fs.readFileSync(path.join(dir, 'kubeconfig'), 'utf8');
  assert.match(kc, new RegExp(`server: ${base.replace(/\./g, '\\.')}\n`));
  assert.match(kc, /certificate-authority: "\/.*ca\.pem"/);
});

test('a pod runs, is attached to, ends with its exit code, is listed and deleted', async () => {
  const created = await api('POST', PODS, pod('p1', ['sh', '-c', 'head -n1; echo out; echo err >&2; exit 3']));
  assert.equal(created.status, 201, created.text);
  const o = created.json;
  assert.equal(o.kind, 'Pod');
  assert.equal(o.status.phase, 'Pending');
  assert.match(o.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.match(o.metadata.uid, /^[0-9a-f-]{36}$/);
  assert.match(o.metadata.resourceVersion, /^\d+$/);
  assert.deepEqual(o.metadata.labels['mcp-sandboxd.io/instance'], 'shimtest');

  const again = await api('POST', PODS, pod('p1', ['true']));
  assert.equal(again.status, 409);
  assert.deepEqual(again.json, {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'pods "p1" already exists',
    reason: 'AlreadyExists', details: { name: 'p1', kind: 'pods' }, code: 409,
  });

  // kube_pod_wait's watch: from the version read, by name.
  const w = watch(`watch=1&fieldSelector=metadata.name%3Dp1&resourceVersion=${o.metadata.resourceVersion}&timeoutSeconds=60`);
  const res = await w.ready;
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['transfer-encoding'], 'chunked');
  const running = await w.waitFor((e) => e.type === 'MODIFIED' && e.object.status.phase === 'Running');
  const cs = running.object.status.containerStatuses[0];
  assert.equal(cs.name, 'sandbox');
  assert.equal(cs.ready, true);
  assert.match(cs.state.running.startedAt, /Z$/);
  assert.ok(Number(running.object.metadata.resourceVersion) > Number(o.metadata.resourceVersion));

  const a = attach('p1');
  await a.open;
  assert.equal(a.ws.protocol, 'v5.channel.k8s.io');
  a.ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('a line\n')]));
  a.ws.send(Buffer.from([255, 0]));
  const code = await a.closed;
  assert.equal(code, 1000);
  assert.deepEqual([a.msgs[0][0], a.msgs[0][1].length], [1, 0], 'an empty stdout message opens the stream');
  assert.equal(text(a.msgs, 1), 'a line\nout\n'); // head -n1 echoes the line it read
  assert.equal(text(a.msgs, 2), 'err\n');
  // An attach reports no exit code: the kubelet's ServeAttach ends every
  // attach that ran to its end with Success (exec alone reports
  // NonZeroExitCode); the exit code is the Pod's status.
  const errs = a.msgs.filter((m) => m[0] === 3 && m[1].length);
  assert.equal(errs.length, 1);
  assert.deepEqual(JSON.parse(errs[0][1]), { metadata: {}, status: 'Success' });

  const failed = await until(async () => {
    const r = await api('GET', `${PODS}/p1`);
    return r.json.status.phase === 'Failed' && r.json;
  });
  const t = failed.status.containerStatuses[0].state.terminated;
  assert.equal(t.exitCode, 3);
  assert.equal(t.reason, 'Error');
  await w.waitFor((e) => e.type === 'MODIFIED' && e.object.status.phase === 'Failed');

  // Two pods, listed by label one page at a time (kube_pod_list's query).
  assert.equal((await api('POST', PODS, pod('p2', ['sleep', '300']))).status, 201);
  const sel = encodeURIComponent('mcp-sandboxd.io/managed=1,mcp-sandboxd.io/instance=shimtest');
  const page1 = await api('GET', `${PODS}?labelSelector=${sel}&limit=1`);
  assert.equal(page1.status, 200);
  assert.equal(page1.json.kind, 'PodList');
  assert.deepEqual(page1.json.items.map((i) => i.metadata.name), ['p1']);
  assert.equal(page1.json.items[0].kind, undefined, 'list items carry no kind');
  assert.ok(page1.json.metadata.continue);
  const page2 = await api('GET', `${PODS}?labelSelector=${sel}&limit=1&continue=${encodeURIComponent(page1.json.metadata.continue)}`);
  assert.deepEqual(page2.json.items.map((i) => i.metadata.name), ['p2']);
  assert.equal(page2.json.metadata.continue, undefined);
  assert.equal(page2.json.metadata.resourceVersion, page1.json.metadata.resourceVersion);
  const none = await api('GET', `${PODS}?labelSelector=${encodeURIComponent('mcp-sandboxd.io/instance=other')}&limit=500`);
  assert.deepEqual(none.json.items, []);

  // Deletion as kube_pod_delete sends it.
  const delBody = { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0, propagationPolicy: 'Background' };
  for (const name of ['p1', 'p2']) {
    const d = await api('DELETE', `${PODS}/${name}`, delBody);
    assert.equal(d.status, 200, d.text);
    assert.equal(d.json.kind, 'Pod');
    assert.equal(d.json.metadata.name, name);
    assert.ok(d.json.metadata.deletionTimestamp);
  }
  await w.waitFor((e) => e.type === 'DELETED' && e.object.metadata.name === 'p1');
  w.close();
  const gone = await api('GET', `${PODS}/p1`);
  assert.equal(gone.status, 404);
  assert.deepEqual(gone.json, {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'pods "p1" not found',
    reason: 'NotFound', details: { name: 'p1', kind: 'pods' }, code: 404,
  });
  assert.equal((await api('DELETE', `${PODS}/p1`, delBody)).status, 404);
});

test('a pod over its memory limit is OOMKilled', async () => {
  const r = await api('POST', PODS, pod('oom', ['python3', '-c', "b = b'x' * (200 << 20); print(len(b))"], { memory: '32Mi' }));
  assert.equal(r.status, 201, r.text);
  const ended = await until(async () => {
    const g = await api('GET', `${PODS}/oom`);
    return g.json.status.phase === 'Failed' && g.json;
  }, 60000);
  assert.equal(ended.status.containerStatuses[0].state.terminated.reason, 'OOMKilled');
  assert.equal(ended.status.containerStatuses[0].state.terminated.exitCode, 137);
  assert.equal((await api('DELETE', `${PODS}/oom`, { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0 })).status, 200);
});

test('attaching to a pod that is not running gets the error channel', async () => {
  assert.equal((await api('POST', PODS, pod('done', ['true']))).status, 201);
  await until(async () => (await api('GET', `${PODS}/done`)).json.status.phase === 'Succeeded');
  const a = attach('done');
  await a.open;
  await a.closed;
  const st = JSON.parse(a.msgs.find((m) => m[0] === 3 && m[1].length)[1]);
  assert.equal(st.status, 'Failure');
  assert.equal(st.reason, 'InternalError');
  assert.equal(st.code, 500);
  assert.match(st.message, /container sandbox not found in pod done_mcp-sandboxd/);
  const missing = attach('nope');
  await assert.rejects(missing.open, /attach answered 404/);
  assert.equal((await api('DELETE', `${PODS}/done`, { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0 })).status, 200);
});

test('what the shim cannot honour is refused, not ignored', async () => {
  const rc = await api('POST', PODS, pod('rc', ['true'], { runtime: 'no-such-runtime' }));
  assert.equal(rc.status, 403);
  assert.equal(rc.json.message, 'pods "rc" is forbidden: pod rejected: RuntimeClass "no-such-runtime" not found');
  const always = await api('POST', PODS, pod('always', ['true'], { restartPolicy: 'Always' }));
  assert.equal(always.status, 422);
  assert.equal(always.json.reason, 'Invalid');
  assert.equal(always.json.details.causes[0].field, 'spec.restartPolicy');
  const bad = pod('bad', ['true']);
  bad.spec.containers[0].livenessProbe = { exec: { command: ['true'] } };
  const r = await api('POST', PODS, bad);
  assert.equal(r.status, 422);
  assert.match(r.json.message, /^Pod "bad" is invalid: spec\.containers\[0\]\.livenessProbe: Forbidden/);
  assert.equal((await api('POST', PODS, '{not json')).status, 400);
  assert.equal((await api('POST', PODS, pod('x', ['true']), { type: 'text/plain' })).status, 415);
  assert.equal((await api('POST', PODS, 'x'.repeat((1 << 20) + 10))).status, 413);
  assert.equal((await api('PUT', `${PODS}/x`, pod('x', ['true']))).status, 405);
  assert.equal((await api('GET', '/api/v1/nothing')).status, 404);
  assert.equal((await api('GET', `${PODS}?labelSelector=${encodeURIComponent('a b c')}`)).status, 400);
});

test('no container is left once the shim stops', async () => {
  assert.equal((await api('POST', PODS, pod('left', ['sleep', '300']))).status, 201);
  await until(async () => (await api('GET', `${PODS}/left`)).json.status.phase === 'Running');
  const ps = async () => (await engine(`/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ label: [`io.kube-shim.run=${run}`] }))}`)).length;
  assert.equal(await ps(), 1);
  const gone = new Promise((r) => shim.once('exit', r));
  shim.kill('SIGTERM');
  assert.equal(await gone, 0);
  assert.equal(await ps(), 0);
});
