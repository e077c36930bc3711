// Helpers for the fault tests (tests/faults/*.test.mjs), on top of the
// integration helpers in ../integration/lib.mjs: which engine this pass
// drives and how to signal, kill and restart it; engine requests that do
// not hang while it is down; a daemon serving HTTP; /proc figures.
//
// Environment (besides MCPSANDBOXD_BIN / MCPSANDBOXD_ENGINE, see
// ../integration/lib.mjs):
//   FAULTS_ENGINE  docker | podman: which engine MCPSANDBOXD_ENGINE is, for
//                  scripts/engine.sh pid/start (default: guessed from the
//                  socket path)
//
// Every test that signals the engine does so through withEngineRestored(),
// which SIGCONTs and, if need be, restarts it whatever happens; a process
// exit hook does the same for a test that is cut short.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import {
  ROOT, ENGINE_SOCKET, RUN_ID, sleep, ourContainers,
} from '../integration/lib.mjs';

export const ENGINE_KIND = process.env.FAULTS_ENGINE || (/podman/.test(ENGINE_SOCKET) ? 'podman' : 'docker');
const ENGINE_SH = path.join(ROOT, 'scripts', 'engine.sh');

// ---- the engine process ------------------------------------------------------

function engineSh(args, timeoutMs) {
  const r = spawnSync(ENGINE_SH, args, { encoding: 'utf8', timeout: timeoutMs });
  return { ok: r.status === 0, stdout: (r.stdout || '').trim(), stderr: (r.stderr || '').trim(), status: r.status, error: r.error };
}

/** The engine's pid (dockerd, or the `podman system service` process). */
export function enginePid() {
  const r = engineSh(['pid', ENGINE_KIND], 10_000);
  assert.ok(r.ok && /^\d+$/.test(r.stdout), `scripts/engine.sh pid ${ENGINE_KIND} failed: ${r.stderr || r.error}`);
  return Number(r.stdout);
}

/** What listens on the engine socket (ss -xlpn), for failure messages. */
export function engineListeners() {
  const r = spawnSync('ss', ['-xlpnH'], { encoding: 'utf8', timeout: 5000 });
  const sock = ENGINE_SOCKET.replace(/^unix:\/\//, '');
  const alt = sock.startsWith('/var/run/') ? sock.slice(4) : `/var${sock}`;
  const lines = (r.stdout || '').split('\n').filter((l) => l.includes(` ${sock} `) || l.includes(` ${alt} `));
  return lines.length ? lines.map((l) => l.replace(/\s+/g, ' ').trim()).join('\n') : `nothing listed (${r.error?.message || 'ss found no listener'})`;
}

/** Pids this process stopped and has not continued yet. */
const stopped = new Set();

export function signalEngine(pid, sig) {
  process.kill(pid, sig);
  if (sig === 'SIGSTOP') stopped.add(pid);
  if (sig === 'SIGCONT') stopped.delete(pid);
}

/** Threads of pid not yet in the stopped state ('T'), as "tid:state". */
function threadsRunning(pid) {
  let tids;
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const running = [];
  for (const tid of tids) {
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended
    }
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state !== 'T' && state !== 't') running.push(`${tid}:${state}`);
  }
  return running;
}

/**
 * SIGSTOP pid and wait until every thread of it has stopped: kill() only
 * queues the signal, and a thread busy on the other core (or in a syscall)
 * may still answer a request before it stops. Returns the threads still
 * running after ms (empty when the whole process stopped).
 */
export async function stopEngine(pid, ms = 5000) {
  signalEngine(pid, 'SIGSTOP');
  const t0 = Date.now();
  let running = threadsRunning(pid);
  while (running.length && Date.now() - t0 < ms) {
    await sleep(20);
    running = threadsRunning(pid);
  }
  return running;
}

/** scripts/engine.sh start: returns once the engine answers /_ping. */
export function startEngine() {
  const r = engineSh(['start', ENGINE_KIND], 120_000);
  assert.ok(r.ok, `scripts/engine.sh start ${ENGINE_KIND} failed (exit ${r.status}): ${r.stderr || r.error}`);
}

/** True when the engine answers GET /_ping within ms. */
export async function enginePing(ms = 3000) {
  try {
    const r = await engineCall('GET', '/_ping', { timeoutMs: ms });
    return r.status === 200;
  } catch {
    return false;
  }
}

/** Whatever happened: continue a stopped engine, restart a dead one. */
export async function restoreEngine() {
  for (const pid of [...stopped]) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      /* gone */
    }
    stopped.delete(pid);
  }
  if (await enginePing(5000)) return;
  startEngine();
}

/** Runs fn; then the engine runs and answers, whatever fn did. */
export async function withEngineRestored(fn) {
  try {
    return await fn();
  } finally {
    await restoreEngine();
  }
}

// A test cut short by its timeout never reaches its finally: never leave a
// stopped engine behind (run.sh restarts a killed one after the pass).
process.on('exit', () => {
  for (const pid of stopped) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      /* gone */
    }
  }
});

// ---- engine requests -----------------------------------------------------------

/** One request on the engine socket with a hard timeout: {status, body}. */
export function engineCall(method, p, { timeoutMs = 10_000 } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: ENGINE_SOCKET, path: p, method, headers: { Host: 'engine' }, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${p}: timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** Force-removes a container (cleanup after a test; errors ignored). */
export async function forceRemove(id) {
  try {
    await engineCall('DELETE', `/v1.41/containers/${id}?force=1`, { timeoutMs: 30_000 });
  } catch {
    /* best effort */
  }
}

/** Removes every container of marker (prefix match) the daemons left. */
export async function removeOurs(marker = RUN_ID) {
  let left = [];
  try {
    left = await ourContainers(marker, { prefix: true });
  } catch {
    return;
  }
  for (const c of left) await forceRemove(c.id);
}

/** Waits for a running container of marker; returns it. */
export async function waitRunning(marker, ms = 60_000, { onDemand = false } = {}) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const running = (await ourContainers(marker)).filter((c) => c.state === 'running' && !(onDemand && c.pool));
    if (running.length) return running[0];
    await sleep(100);
  }
  assert.fail(`no running container with marker ${marker} within ${ms} ms`);
}

/** (waitRunning: onDemand skips pooled containers, which run while they
 * wait.) Polls until the engine no longer knows container id; returns the ms from
 * t0 until then, or null if it is still there ms after t0. */
export async function waitGone(id, ms, t0 = Date.now()) {
  while (Date.now() - t0 < ms) {
    try {
      const r = await engineCall('GET', `/v1.41/containers/${id}/json`, { timeoutMs: 5000 });
      if (r.status === 404) return Date.now() - t0;
    } catch {
      /* engine busy: ask again */
    }
    await sleep(100);
  }
  return null;
}

/** State of container id ('removed' once the engine does not know it). */
export async function containerState(id) {
  try {
    const r = await engineCall('GET', `/v1.41/containers/${id}/json`, { timeoutMs: 5000 });
    if (r.status === 404) return 'removed';
    return JSON.parse(r.body)?.State?.Status ?? `HTTP ${r.status}`;
  } catch (e) {
    return `unknown (${e.message})`;
  }
}

// ---- /proc -----------------------------------------------------------------------

/** {rssKiB, fds} of a live process. */
export function procStats(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  return { rssKiB: m ? Number(m[1]) : NaN, fds: readdirSync(`/proc/${pid}/fd`).length };
}

export function fmtStats(s) {
  return `RSS ${(s.rssKiB / 1024).toFixed(1)} MiB, ${s.fds} fds`;
}

// ---- results ---------------------------------------------------------------------

/** The structuredContent of a tool result (asserted present) and its text. */
export function scOf(result) {
  const sc = result?.structuredContent;
  assert.ok(sc && typeof sc === 'object', `no structuredContent in ${JSON.stringify(result).slice(0, 800)}`);
  const text = (result.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  return { sc, text, ctx: `structuredContent: ${JSON.stringify(sc).slice(0, 1500)}` };
}

/** A hello-world run through call(name, args) gives status ok and its output. */
export async function helloWorld(call, tag = 'hello') {
  const r = await call('run_python_code', { code: `print('${tag}')` });
  const { sc, ctx } = scOf(r);
  assert.equal(sc.status, 'ok', ctx);
  assert.equal(sc.exit_code, 0, ctx);
  assert.equal(sc.stdout, `${tag}\n`, ctx);
  return sc;
}

/** Resolves with what p gave, or {timedOut: true} after ms; never rejects
 * (a rejection comes back as {error}). */
export async function within(p, ms) {
  let timer;
  const t = new Promise((r) => {
    timer = setTimeout(() => r({ timedOut: true }), ms);
  });
  try {
    return await Promise.race([p.then((value) => ({ value }), (error) => ({ error })), t]);
  } finally {
    clearTimeout(timer);
  }
}

// ---- a daemon serving HTTP -------------------------------------------------------

export { HttpDaemon } from '../integration/lib.mjs';
