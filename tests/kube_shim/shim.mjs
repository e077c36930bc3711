#!/usr/bin/env node
// kube-shim: a Kubernetes API server, for tests, that runs each Pod as a
// container on the local Docker engine. It serves what the daemon's
// Kubernetes backend asks (src/backend/kubernetes/kube_*.c): pod create,
// get, delete, list and watch, and the attach subresource over a
// WebSocket, HTTPS on 127.0.0.1 with a bearer token.
//
//   node tests/kube_shim/shim.mjs --dir DIR [--engine unix:///var/run/docker.sock]
//        [--namespace mcp-sandboxd] [--seccomp-dir DIR] [--cleanup-only [--run ID]]
//
// At start it writes DIR/ca.pem (a throwaway CA), DIR/token and
// DIR/kubeconfig (server, certificate-authority, token, namespace), then
// prints "kube-shim: ready https://127.0.0.1:PORT" on stdout; logs go to
// stderr. SIGTERM, SIGINT or EOF on stdin removes every container it made
// and exits 0 (so give it a pipe, not /dev/null). Its containers carry the
// label io.kube-shim.run=RUN; --cleanup-only removes those of every run
// (or of --run ID) and exits.
//
// Where the behaviour comes from: the Kubernetes API reference (Pod,
// PodList, Status, WatchEvent, DeleteOptions, ListMeta: limit/continue/
// resourceVersion/remainingItemCount), apimachinery (api/errors messages,
// validation/field causes, labels and fields selector grammar,
// resource.Quantity, wsstream's channel framing and v5 close signal),
// the apiserver (util/proxy StreamTranslatorHandler and websocket.go for
// v5 attach, the registry's pod AttachLocation checks, RuntimeClass
// admission, the watch cache's 410 Expired and "Too large resource
// version"), the kubelet (GetAttach's "container X not found in pod
// NAME_NS", remotecommand ServeAttach's Success at the end of an attach,
// container state reasons, activeDeadlineSeconds -> DeadlineExceeded,
// runAsNonRoot checks) and client-go's tools/remotecommand (the v5/v4
// client side), as kubectl attach uses them. No code is copied.
//
// How the API maps to the engine (pod.mjs, store.mjs):
//   metadata.name       container kshim-RUN-NS-NAME; labels and annotations
//                       also stored as engine labels (io.kube-shim.label/K,
//                       io.kube-shim.annotation/K); uid, creationTimestamp,
//                       one global resourceVersion counter
//   command / args      Entrypoint / Cmd, with Kubernetes' $(VAR) expansion
//   env, workingDir     Env (value only), WorkingDir
//   stdin, stdinOnce    OpenStdin + AttachStdin, StdinOnce; tty must be false
//   runAsUser/Group     User "uid:gid" (the image's USER where not given);
//   runAsNonRoot        checked as the kubelet does (CreateContainerConfigError)
//   readOnlyRootFS      ReadonlyRootfs
//   capabilities        CapDrop / CapAdd
//   allowPrivilegeEscalation false   SecurityOpt no-new-privileges
//   seccompProfile      RuntimeDefault: the engine's default; Unconfined:
//                       seccomp=unconfined; Localhost: the file under
//                       --seccomp-dir (422 without it)
//   limits.memory       Memory = MemorySwap; limits.cpu NanoCpus (10m at
//                       least, the kubelet's smallest quota);
//                       requests.cpu CpuShares (2 without)
//   emptyDir Memory     a tmpfs of sizeLimit (else the memory limit) at the
//                       mount, exec, mode 1777 (nosuid,nodev as well when
//                       allowPrivilegeEscalation is false); at /dev/shm it
//                       is ShmSize (the engine's /dev/shm, noexec, where a
//                       kubelet's emptyDir would be exec); a disk emptyDir
//                       is an anonymous volume
//   shareProcessNamespace true  Init (an init as PID 1)
//   hostNetwork/PID/IPC false   NetworkMode none (the deny-all
//                       NetworkPolicies: no pod has a network, so there is
//                       no podIP), IpcMode private
//   runtimeClassName    HostConfig.Runtime when the engine has a runtime of
//                       that name, else 403 "pod rejected: RuntimeClass"
//   activeDeadlineSeconds  a timer from startTime: kill, phase Failed,
//                       reason DeadlineExceeded
//   restartPolicy Never RestartPolicy no
// Status comes from the container's inspect: created -> Pending/waiting
// ContainerCreating; running -> Running, ready; exited -> Succeeded or
// Failed with terminated{exitCode, reason OOMKilled|Completed|Error}; a
// failed start -> terminated StartError (exit 128); an image the engine
// lacks -> Pending, waiting ErrImagePull then ImagePullBackOff (looked up
// again every 5 s, never pulled). The shim learns of changes from the
// engine's /events stream (filtered to its run's label), with a 1 s
// inspect poll of live pods as a fallback and a fresh inspect on GET.
//
// Refused (422 Invalid naming the field, or 400/403 where the API server
// refuses so): restartPolicy other than Never, more than one container,
// init/ephemeral containers, tty, imagePullPolicy Always (and its default
// for :latest or untagged images: kube-shim never pulls), env valueFrom
// and envFrom, probes, lifecycle, non-emptyDir volumes, subPath, a disk
// emptyDir with sizeLimit, a volume mounted twice, privileged, procMount,
// fsGroup, seLinuxOptions, AppArmor Localhost, host namespaces,
// nodeSelector/affinity/priority, a serviceAccountName other than default
// (403), automountServiceAccountToken not false (there is no token to
// mount), resources other than cpu/memory/ephemeral-storage, dryRun,
// metadata.ownerReferences/finalizers, PUT/PATCH (405), SPDY and the
// base64/v1-v3 stream protocols (400), and any field on no list.
// Accepted and not enforced, as they do not change what runs:
// limits/requests ephemeral-storage (the root is read-only in the
// daemon's pods; a kubelet would only evict), enableServiceLinks (the
// namespace has no services), dnsPolicy/dnsConfig/subdomain (no
// network), tolerations (no taints), imagePullSecrets (no pulls), ports,
// terminationMessagePath/Policy (no termination message is read), memory
// requests (scheduling only), uid/creationTimestamp/managedFields in a
// create body and status (the API server overwrites them).
// Attach: the error channel says Success when an attach runs to its end,
// whatever the exit code (the kubelet's ServeAttach; only exec reports
// NonZeroExitCode): the exit code is the Pod's status. With stdin but
// not stdinOnce, the engine ends the attach's output when stdin closes.
// Other differences: a continue token serves the current state rather
// than a snapshot; spec defaulting covers restartPolicy,
// terminationGracePeriodSeconds, dnsPolicy, schedulerName,
// serviceAccountName, imagePullPolicy, terminationMessage*, requests.
// Bounds: 1 MiB request bodies (413), 256 watches (429), 64 attaches,
// 1 MiB WebSocket messages, watchers 16 MiB behind are cut off.

import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { Attacher, rawReply } from './attach.mjs';
import { PodsApi } from './api.mjs';
import { Docker } from './docker.mjs';
import { Store } from './store.mjs';
import { makeCerts } from './tls.mjs';
import * as S from './status.mjs';

const MAX_BODY = 1 << 20;
const NODE = 'kube-shim';
const log = (msg) => process.stderr.write(`kube-shim: ${msg}\n`);

function parseArgs(argv) {
  const o = { engine: 'unix:///var/run/docker.sock', namespace: 'mcp-sandboxd' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--dir') o.dir = val();
    else if (a === '--engine') o.engine = val();
    else if (a === '--namespace') o.namespace = val();
    else if (a === '--seccomp-dir') o.seccompDir = path.resolve(val());
    else if (a === '--run') o.run = val();
    else if (a === '--cleanup-only') o.cleanupOnly = true;
    else throw new Error(`unknown argument ${a}`);
  }
  return o;
}

const json = (res, code, obj) => {
  res.writeHead(code, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' });
  res.end(JSON.stringify(obj) + '\n');
};

// The request body, MAX_BODY at most (else 413).
function readBody(req) {
  return new Promise((resolve, reject) => {
    if (Number(req.headers['content-length'] || 0) > MAX_BODY) return reject(new S.ApiError(S.tooLarge(MAX_BODY)));
    const chunks = [];
    let n = 0;
    req.on('data', (c) => {
      n += c.length;
      if (n > MAX_BODY) {
        req.pause();
        reject(new S.ApiError(S.tooLarge(MAX_BODY)));
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

// "/api/v1/namespaces/NS/pods[/NAME[/SUB]]" or "/api/v1/pods".
function route(pathname) {
  let m = /^\/api\/v1\/namespaces\/([^/]+)\/pods(?:\/([^/]+)(?:\/([^/]+))?)?\/?$/.exec(pathname);
  if (m) return { ns: decodeURIComponent(m[1]), name: m[2] && decodeURIComponent(m[2]), sub: m[3] };
  if (/^\/api\/v1\/pods\/?$/.test(pathname)) return { ns: null };
  m = /^\/api\/v1\/namespaces\/([^/]+)\/?$/.exec(pathname);
  if (m) return { namespace: decodeURIComponent(m[1]) };
  return null;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const docker = new Docker(o.engine);
  const run = o.run || crypto.randomBytes(3).toString('hex');
  const store = new Store({ docker, run, node: NODE, log });
  if (o.cleanupOnly) {
    const n = o.run ? await store.removeAll(false) : await store.removeAll(true);
    log(`removed ${n} container(s)`);
    docker.close();
    return;
  }
  if (!o.dir) throw new Error('--dir DIR is required');
  fs.mkdirSync(o.dir, { recursive: true, mode: 0o700 });
  const dir = path.resolve(o.dir);
  const info = await docker.ok('GET', '/info');
  const opts = { namespace: o.namespace, node: NODE, runtimes: new Set(Object.keys(info.Runtimes || {})), seccompDir: o.seccompDir };
  const tls = makeCerts(dir);
  const token = crypto.randomBytes(32).toString('hex');
  const want = Buffer.from(`Bearer ${token}`);
  const authOk = (req) => {
    const got = Buffer.from(String(req.headers.authorization || ''));
    return got.length === want.length && crypto.timingSafeEqual(got, want);
  };
  const api = new PodsApi({ store, opts });
  const attacher = new Attacher({ store, docker, log });

  const handle = async (req, res) => {
    const url = new URL(req.url, 'https://127.0.0.1');
    const q = url.searchParams;
    const r = route(url.pathname);
    const m = req.method;
    if (['/healthz', '/livez', '/readyz'].includes(url.pathname) && m === 'GET') {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      return res.end('ok');
    }
    if (url.pathname === '/version' && m === 'GET')
      return json(res, 200, { major: '1', minor: '31', gitVersion: 'v1.31.0-kube-shim', platform: 'linux/amd64' });
    if (url.pathname === '/api' && m === 'GET') return json(res, 200, { kind: 'APIVersions', versions: ['v1'] });
    if (!r) return json(res, 404, S.noRoute());
    if (r.namespace !== undefined) {
      if (m !== 'GET') return json(res, 405, S.methodNotAllowed());
      if (r.namespace !== opts.namespace) return json(res, 404, S.notFound(r.namespace, 'namespaces'));
      return json(res, 200, { kind: 'Namespace', apiVersion: 'v1', metadata: { name: r.namespace }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } });
    }
    if (r.sub === 'attach') return json(res, 400, S.badRequest('Upgrade request required'));
    if (r.sub && r.sub !== 'status') return json(res, 404, S.noRoute());
    if (!r.name) {
      if (m === 'POST' && r.ns !== null) {
        const type = String(req.headers['content-type'] || '').split(';')[0].trim();
        if (type !== 'application/json') throw new S.ApiError(S.unsupportedMedia(type));
        const raw = await readBody(req);
        let body;
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch (e) {
          throw new S.ApiError(S.badRequest(`Pod in version "v1" cannot be handled as a Pod: ${e.message}`));
        }
        return json(res, 201, api.create(r.ns, body));
      }
      if (m !== 'GET') return json(res, 405, S.methodNotAllowed());
      const list = await api.collection(req, res, r.ns, q);
      if (list) json(res, 200, list);
      return;
    }
    if (m === 'GET') return json(res, 200, await api.get(r.ns, r.name));
    if (m === 'DELETE' && !r.sub) return json(res, 200, await api.delete(r.ns, r.name, await readBody(req), q));
    return json(res, 405, S.methodNotAllowed());
  };

  const server = https.createServer(
    { key: tls.key, cert: tls.cert, minVersion: 'TLSv1.2', ALPNProtocols: ['http/1.1'] },
    (req, res) => {
      if (!authOk(req)) return json(res, 401, S.unauthorized());
      handle(req, res).catch((e) => {
        const st = e instanceof S.ApiError ? e.status : S.internal(e.message);
        if (!(e instanceof S.ApiError)) log(`${req.method} ${req.url}: ${e.stack}`);
        if (res.headersSent) return res.destroy();
        res.setHeader('Connection', 'close');
        json(res, st.code, st);
      });
    },
  );
  server.maxConnections = 512;
  server.headersTimeout = 30000;
  server.on('upgrade', (req, socket, head) => {
    socket.on('error', () => {});
    if (!authOk(req)) return rawReply(socket, 401, S.unauthorized());
    const url = new URL(req.url, 'https://127.0.0.1');
    const r = route(url.pathname);
    if (!r || r.sub !== 'attach' || !r.name) return rawReply(socket, 400, S.badRequest('kube-shim upgrades pods/attach only'));
    attacher.handle(req, socket, head, r.ns, r.name, url.searchParams).catch((e) => {
      log(`attach: ${e.stack}`);
      if (!socket.destroyed) rawReply(socket, 500, S.internal(e.message));
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = server.address().port;
  const serverUrl = `https://127.0.0.1:${port}`;
  fs.writeFileSync(path.join(dir, 'token'), token + '\n', { mode: 0o600 });
  const kubeconfig = [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: kube-shim',
    '  cluster:',
    `    server: ${serverUrl}`,
    `    certificate-authority: ${JSON.stringify(tls.caPath)}`,
    'users:',
    '- name: kube-shim',
    '  user:',
    `    token: ${JSON.stringify(token)}`,
    'contexts:',
    '- name: kube-shim',
    '  context:',
    '    cluster: kube-shim',
    '    user: kube-shim',
    `    namespace: ${JSON.stringify(o.namespace)}`,
    'current-context: kube-shim',
    '',
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'kubeconfig'), kubeconfig, { mode: 0o600 });

  // Container changes: the engine's events, plus a slow poll of live pods.
  let stopEvents = null;
  let closing = false;
  const follow = () => {
    stopEvents = docker.events(`io.kube-shim.run=${run}`, (ev) => store.onEngineEvent(ev), (err) => {
      if (closing) return;
      log(`engine events ended${err ? `: ${err.message}` : ''}; following again`);
      setTimeout(follow, 1000).unref();
    });
  };
  follow();
  const poll = setInterval(() => {
    for (const p of store.pods.values())
      if (p.cid && !['Succeeded', 'Failed'].includes(p.status.phase)) store.refresh(p).catch(() => {});
  }, 1000);

  const shutdown = async (why) => {
    if (closing) return;
    closing = true;
    log(`stopping (${why})`);
    clearInterval(poll);
    if (stopEvents) stopEvents();
    attacher.close();
    server.close();
    server.closeAllConnections();
    for (const p of store.pods.values()) {
      p.gone = true;
      clearTimeout(p.deadlineTimer);
    }
    const n = await store.removeAll(false).catch((e) => (log(`cleanup: ${e.message}`), 0));
    log(`removed ${n} container(s)`);
    docker.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.stdin.on('end', () => shutdown('stdin closed'));
  process.stdin.on('error', () => shutdown('stdin error'));
  process.stdin.resume();
  log(`run ${run}, namespace ${o.namespace}, engine ${o.engine}, dir ${dir}`);
  process.stdout.write(`kube-shim: ready ${serverUrl}\n`);
}

main().catch((e) => {
  log(e.message);
  process.exit(1);
});
