// The daemon's image (containers/daemon) run the way deploy/kubernetes'
// Deployment runs it, against the Kubernetes API shim: the Deployment's
// user, read-only root, dropped capabilities, no privilege escalation,
// memory and CPU limits, its /tmp emptyDir and token Secret, its args,
// and the in-cluster configuration (the service account's token, CA and
// namespace under /var/run/secrets/kubernetes.io/serviceaccount,
// KUBERNETES_SERVICE_HOST and _PORT) that a Pod gets. It must answer
// /healthz, run Python through a sandbox Pod, and on SIGTERM exit 0 having
// deleted its Pods.
//
//   node tests/deploy/daemon_image.mjs --shim-dir DIR [--image mcp-sandboxd:latest]
//
// DIR is a running shim's --dir (its token, ca.pem and "ready" URL, the
// latter passed as --server). The container runs on the host's network
// (the shim listens on 127.0.0.1), so the daemon serves on a free port of
// 127.0.0.1 instead of the Deployment's 0.0.0.0:8080. Prints one line and
// exits 1 on the first problem.

import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { parse } from 'yaml';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const START_WAIT_MS = 30_000;
const STOP_WAIT_S = 20;

const { values: opt } = parseArgs({
  options: {
    'shim-dir': { type: 'string' },
    server: { type: 'string' },
    image: { type: 'string', default: 'mcp-sandboxd:latest' },
  },
  strict: true,
});
if (!opt['shim-dir'] || !opt.server) {
  console.error('usage: daemon_image.mjs --shim-dir DIR --server https://127.0.0.1:PORT [--image NAME]');
  process.exit(2);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const docker = (...args) => execFileSync('docker', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** The Deployment's daemon container and Pod security context. */
function deployment() {
  const doc = parse(readFileSync(path.join(ROOT, 'deploy', 'kubernetes', 'deployment.yaml'), 'utf8'));
  const pod = doc.spec.template.spec;
  const ctr = pod.containers.find((c) => c.name === 'daemon');
  if (!ctr) throw new Error('deployment.yaml has no container named daemon');
  return { pod, ctr };
}

/** docker run flags for what the Deployment states, and the files the
 * kubelet would mount (owned as fsGroup makes them readable). */
function runFlags({ pod, ctr }, work, port) {
  const psc = pod.securityContext ?? {};
  const sc = ctr.securityContext ?? {};
  const uid = sc.runAsUser ?? psc.runAsUser;
  const gid = sc.runAsGroup ?? psc.runAsGroup;
  if (!uid || !(sc.runAsNonRoot ?? psc.runAsNonRoot)) throw new Error('the Deployment does not run as a non-root user');
  const flags = ['--user', `${uid}:${gid}`, '--network', 'host'];
  if (sc.readOnlyRootFilesystem) flags.push('--read-only');
  if (sc.allowPrivilegeEscalation === false) flags.push('--security-opt', 'no-new-privileges');
  for (const cap of sc.capabilities?.drop ?? []) flags.push('--cap-drop', cap);
  const lim = ctr.resources?.limits ?? {};
  if (lim.memory) flags.push('--memory', String(lim.memory).replace(/Mi$/, 'm').replace(/Gi$/, 'g'));
  if (lim.cpu) flags.push('--cpus', String(lim.cpu));
  // Volume files are root's; with fsGroup the kubelet gives them that
  // group and adds group read (pkg/volume/volume_linux.go).
  const fsGroup = psc.fsGroup;
  const own = (file, mode) => {
    chownSync(file, 0, fsGroup ?? 0);
    chmodSync(file, fsGroup === undefined ? mode : mode | 0o440);
  };
  // The service account as the kubelet projects it (mode 0644).
  const sa = path.join(work, 'sa');
  execFileSync('mkdir', ['-p', sa]);
  copyFileSync(path.join(opt['shim-dir'], 'token'), path.join(sa, 'token'));
  copyFileSync(path.join(opt['shim-dir'], 'ca.pem'), path.join(sa, 'ca.crt'));
  writeFileSync(path.join(sa, 'namespace'), 'mcp-sandboxd');
  for (const f of ['token', 'ca.crt', 'namespace']) own(path.join(sa, f), 0o644);
  const url = new URL(opt.server);
  flags.push('-v', `${sa}:${SA_DIR}:ro`, '-e', `KUBERNETES_SERVICE_HOST=${url.hostname}`, '-e', `KUBERNETES_SERVICE_PORT=${url.port}`);
  const token = 'image-check-' + Math.random().toString(16).slice(2).padEnd(20, '0');
  for (const m of ctr.volumeMounts ?? []) {
    const vol = pod.volumes.find((v) => v.name === m.name);
    if (vol?.emptyDir) {
      flags.push('--tmpfs', `${m.mountPath}:size=${String(vol.emptyDir.sizeLimit ?? '16Mi').replace(/Mi$/, 'm')},mode=1777`);
    } else if (vol?.secret) {
      const dir = path.join(work, m.name);
      execFileSync('mkdir', ['-p', dir]);
      writeFileSync(path.join(dir, 'token'), token);
      own(path.join(dir, 'token'), vol.secret.defaultMode ?? 0o644);
      flags.push('-v', `${dir}:${m.mountPath}:ro`);
    } else {
      throw new Error(`volume ${m.name}: only emptyDir and secret volumes are run here`);
    }
  }
  chmodSync(work, 0o755);
  const env = [];
  for (const e of ctr.env ?? []) {
    if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env.push([e.name, 'mcp-sandboxd-7c9f-image-check']);
    else if (e.value !== undefined) env.push([e.name, e.value]);
  }
  for (const [k, v] of env) flags.push('-e', `${k}=${v}`);
  // The Deployment's args, with $(VAR) as the kubelet expands it and this
  // host's loopback port.
  const args = (ctr.args ?? []).map((a) =>
    a.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, n) => env.find(([k]) => k === n)?.[1] ?? m)
      .replace(/^--http=.*$/, `--http=127.0.0.1:${port}`));
  return { flags, args, token };
}

async function healthy(name, port, token) {
  const end = Date.now() + START_WAIT_MS;
  let last = '';
  while (Date.now() < end) {
    if (docker('inspect', '--format', '{{.State.Running}}', name).trim() !== 'true') throw new Error('the daemon exited at start');
    try {
      const r = await fetch(`http://127.0.0.1:${port}/healthz`, { headers: { Authorization: `Bearer ${token}` } });
      last = `${r.status} ${await r.text()}`;
      if (r.status === 200) return last;
    } catch (e) {
      last = String(e.cause?.code ?? e.message);
    }
    await sleep(250);
  }
  throw new Error(`no healthy /healthz within ${START_WAIT_MS} ms (last: ${last})`);
}

/** The sandbox Pods the shim holds, asked with its own token and CA. */
function pods() {
  const dir = opt['shim-dir'];
  const token = readFileSync(path.join(dir, 'token'), 'utf8').trim();
  return new Promise((resolve, reject) => {
    const req = https.get(`${opt.server}/api/v1/namespaces/mcp-sandboxd/pods`, { ca: readFileSync(path.join(dir, 'ca.pem')), headers: { Authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        try {
          resolve(JSON.parse(body).items ?? []);
        } catch (e) {
          reject(new Error(`the shim's Pod list: ${res.statusCode} ${body.slice(0, 300)}`));
        }
      });
    });
    req.on('error', reject);
  });
}

async function main() {
  const work = mkdtempSync(path.join(tmpdir(), 'mcpsbx-image-'));
  const name = `mcpsbx-image-check-${process.pid}`;
  const cleanup = () => {
    spawnSync('docker', ['rm', '-f', name]);
    rmSync(work, { recursive: true, force: true });
  };
  // A timeout's SIGTERM leaves nothing behind either.
  process.once('SIGTERM', () => {
    cleanup();
    process.exit(1);
  });
  let started = false;
  try {
    const port = await freePort();
    const { flags, args, token } = runFlags(deployment(), work, port);
    started = true;
    docker('run', '-d', '--name', name, ...flags, opt.image, ...args, '--log-level', 'debug');
    const health = await healthy(name, port, token);
    const t = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    const client = new Client({ name: 'daemon-image-check', version: '1.0.0' });
    await client.connect(t);
    const r = await client.callTool({ name: 'run_python_code', arguments: { code: 'import os, socket\nprint(socket.gethostname(), os.getuid() != 0)' } });
    await client.close();
    const out = r.structuredContent?.stdout ?? '';
    if (r.isError || !/^sbx-[0-9a-f]{16} True\n$/.test(out)) throw new Error(`the run through a sandbox Pod: ${JSON.stringify(r)}`);
    if ((await pods()).length === 0) throw new Error('no warm Pod while the daemon runs');
    spawnSync('docker', ['stop', '-t', String(STOP_WAIT_S), name]);
    const code = docker('inspect', '--format', '{{.State.ExitCode}}', name).trim();
    const log = spawnSync('docker', ['logs', name], { encoding: 'utf8' });
    if (code !== '0' || !/exited cleanly/.test(log.stderr)) throw new Error(`after SIGTERM: exit ${code}\n${log.stderr.slice(-3000)}`);
    const left = await pods();
    if (left.length) throw new Error(`Pods left after the daemon stopped: ${left.map((p) => p.metadata.name).join(' ')}`);
    console.log(`daemon image: ${opt.image} as the Deployment runs it (${flags.filter((f) => f.startsWith('--') && f !== '--network').join(' ')}): /healthz ${health}; python ran in ${out.split(' ')[0]}; exit 0 on SIGTERM, no Pod left`);
  } catch (e) {
    if (started) process.stderr.write(spawnSync('docker', ['logs', name], { encoding: 'utf8' }).stderr?.slice(-4000) ?? '');
    console.error(`daemon image: ${e.message}`);
    process.exitCode = 1;
  } finally {
    cleanup();
  }
}

await main();
