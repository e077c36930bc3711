// Helpers shared by the integration suites (stdio.test.mjs, http.test.mjs)
// and latency.mjs: configuration, daemon bookkeeping, engine queries, result
// checks and the final "every daemon exited cleanly" check.
//
// Environment:
//   MCPSANDBOXD_BIN     daemon binary (default build/mcp-sandboxd)
//   MCPSANDBOXD_ENGINE  engine socket, passed as --engine
//                       (default $DOCKER_HOST, else unix:///var/run/docker.sock)
//   INTEGRATION_KUBECONFIG  a kubeconfig: every daemon runs with --backend
//                       kubernetes --kubeconfig FILE instead of --engine
//                       (run.sh's kubernetes pass: the Kubernetes API shim,
//                       tests/kube_shim, runs each Pod as a container of
//                       MCPSANDBOXD_ENGINE, where the suite still looks for
//                       them; the shim keeps a Pod's labels and annotations
//                       as engine labels: KUBE_MARKS)
//
// Every daemon a suite starts is given MCPSBX_TEST_RUN=<RUN_ID>[-suffix]
// (through --pass-through-env, for the programs) and the same value as the
// label mcpsbx.test-run on its containers (MCPSANDBOXD_LABEL), so the
// containers that suite created can be told from containers of other
// daemons on the same engine. RUN_ID is drawn
// once per process; node --test runs each test file in a process of its own.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = path.resolve(ROOT, process.env.MCPSANDBOXD_BIN || 'build/mcp-sandboxd');
export const ENGINE = process.env.MCPSANDBOXD_ENGINE || process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';
export const ENGINE_SOCKET = ENGINE.replace(/^unix:\/\//, '');
export const MANAGED_LABEL = 'io.mcp-sandboxd.managed';
export const RUN_MARKER = 'MCPSBX_TEST_RUN';
/** The engine label (--label) that carries a daemon's RUN_MARKER value to
 * its containers: the marker's value itself reaches only the program. */
export const RUN_LABEL = 'mcpsbx.test-run';
export const RUN_ID = randomBytes(8).toString('hex');

export const KUBECONFIG = process.env.INTEGRATION_KUBECONFIG ?? '';
export const KUBERNETES = KUBECONFIG !== '';
/** The engine labels the suite reads, and the Pod label or annotation
 * the kubernetes backend puts the same mark in (src/backend/kubernetes/
 * pod_spec.h), as the shim copies it to its container; a label passed
 * with MCPSANDBOXD_LABEL keeps its name. */
const KUBE_MARKS = {
  'io.mcp-sandboxd.managed': 'io.kube-shim.label/mcp-sandboxd.io/managed',
  'io.mcp-sandboxd.instance': 'io.kube-shim.label/mcp-sandboxd.io/instance',
  'io.mcp-sandboxd.pool': 'io.kube-shim.annotation/mcp-sandboxd.io/pool',
};
const engineMark = (key) => (KUBERNETES ? KUBE_MARKS[key] ?? `io.kube-shim.label/${key}` : key);

/** Arguments that point a daemon at a backend nothing answers for (with
 * KUBERNETES: a copy of the kubeconfig naming a closed port of 127.0.0.1),
 * and the address its errors name. */
export function deadBackend() {
  const dead = 'https://127.0.0.1:1';
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcpsbx-kube-')), 'kubeconfig');
  writeFileSync(file, readFileSync(KUBECONFIG, 'utf8').replace(/^(\s*server:\s*).*$/m, `$1${dead}`));
  return { args: ['--kubeconfig', file], sock: dead };
}

/** A sandbox's mark (MANAGED_LABEL, RUN_LABEL, ...) as its container shows it. */
export function labelOf(info, key) {
  return info?.Config?.Labels?.[engineMark(key)];
}
export const SUITE_START_S = Math.floor(Date.now() / 1000) - 2;

// Generous: the first run on a cold engine, sanitizer builds and the
// scientific imports can take a while. Time is asserted only where the
// behaviour under test is about time (timeouts, unreachable engine).
export const CALL_TIMEOUT_MS = 90_000;
export const TEST_TIMEOUT_MS = 120_000;
export const EXIT_WAIT_MS = 20_000;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// For races against a process exit: does not keep the event loop alive.
export const exitWait = (ms) => new Promise((r) => setTimeout(r, ms).unref());

export function tail(s, n = 6000) {
  return s.length > n ? '...' + s.slice(-n) : s;
}

// ---- daemons ---------------------------------------------------------------

/** Every daemon process this file started (any kind), checked at the end by
 * checkDaemonsAndContainers. Each has name, stderr, exit and close(). */
export const allDaemons = [];

/** The caller's PATH etc. (what a daemon needs to run), nothing else. */
export function hostEnv() {
  const env = {};
  for (const k of ['PATH', 'HOME', 'LANG', 'ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS']) {
    if (process.env[k] !== undefined) env[k] = process.env[k];
  }
  return env;
}

/** Environment for a daemon: hostEnv(), no MCPSANDBOXD_* from the caller
 * (those would configure it behind our back), plus the run marker. */
export function daemonEnv(extra = {}, marker = RUN_ID) {
  const env = { ...hostEnv(), [RUN_MARKER]: marker, ...extra };
  env.MCPSANDBOXD_LABEL = `${RUN_LABEL}=${env[RUN_MARKER]}`;
  return env;
}

/** INTEGRATION_POOL_SIZE: --pool-size for every daemon (run.sh's asan pass
 * sets 0, so the whole suite also runs with every sandbox made on demand). */
export const POOL_SIZE = process.env.INTEGRATION_POOL_SIZE;

/** INTEGRATION_RUNTIME: --runtime for every daemon (run.sh's runsc pass
 * sets runsc, so the suite also runs under gVisor). */
export const RUNTIME = process.env.INTEGRATION_RUNTIME ?? '';
export const GVISOR = RUNTIME === 'runsc';

/** A timeout_ms short enough for a test, long enough for the sandbox to
 * start within it (the limit counts the start: gVisor boots its kernel in
 * about a second, longer while others start). */
export const SHORT_TIMEOUT_MS = GVISOR ? 5000 : 1500;

export function daemonArgs(args = [], passThrough = []) {
  // Debug logs make a failure's stderr tail useful; a test's args come last and win.
  const pool = POOL_SIZE !== undefined && POOL_SIZE !== '' ? ['--pool-size', POOL_SIZE] : [];
  const runtime = RUNTIME ? ['--runtime', RUNTIME] : [];
  // Python and JavaScript unless a test names its languages: the other six
  // keep warm sandboxes too, which most tests have no use for
  // (polyglot.test.mjs runs them all).
  const langs = args.some((a) => a === '--languages' || a.startsWith('--languages=')) ? [] : ['--languages', 'python,javascript'];
  // No ready installers unless a test asks (packages.test.mjs): tests count
  // and inspect the containers their runs make.
  const installers = ['--packages-ready-installers', '0'];
  // Pools at their minimums, as the tests count them, unless a test lets
  // them follow the calls (pool.test.mjs).
  const fixed = ['--pool-max-total', '0'];
  const backend = KUBERNETES ? ['--backend', 'kubernetes', '--kubeconfig', KUBECONFIG] : ['--engine', ENGINE];
  return [...backend, '--log-level', 'debug', '--pass-through-env', [RUN_MARKER, ...passThrough].join(','), ...pool, ...runtime, ...langs, ...installers, ...fixed, ...args];
}

/** Appends the daemons' stderr to a failing assertion. */
export function annotate(e, ...daemons) {
  if (e && typeof e === 'object' && !e.__annotated) {
    const extra = daemons
      .filter(Boolean)
      .map((d) => `\n--- daemon '${d.name}' stderr (tail) ---\n${tail(d.stderr) || '(empty)'}`)
      .join('');
    try {
      e.message += extra;
      // Reporters print the stack, which was captured with the old message.
      if (typeof e.stack === 'string') e.stack += extra;
      e.__annotated = true;
    } catch {
      /* frozen */
    }
  }
  return e;
}

export async function withDaemon(daemons, fn) {
  try {
    return await fn();
  } catch (e) {
    throw annotate(e, ...[].concat(daemons));
  }
}

/** A daemon driven by the SDK client. */
export class SdkDaemon {
  constructor(name) {
    this.name = name;
    this.stderr = '';
    this.exit = null; // {code, signal} once it ended
    this.closed = false;
    allDaemons.push(this);
  }

  static async start(name, { args = [], env = {}, passThrough = [], listTools = true, clientName = 'mcp-sandboxd-integration' } = {}) {
    const d = new SdkDaemon(name);
    d.transport = new StdioClientTransport({
      command: BIN,
      args: daemonArgs(args, passThrough),
      env: daemonEnv(env),
      stderr: 'pipe',
    });
    d.transport.stderr.on('data', (c) => {
      d.stderr += c.toString('utf8');
    });
    // Client.connect hands the negotiated version to transports that want it.
    d.transport.setProtocolVersion = (v) => {
      d.protocolVersion = v;
    };
    d.client = new Client({ name: clientName, version: '1.0.0' });
    try {
      await d.client.connect(d.transport, { timeout: 30_000 });
      d.proc = d.transport._process; // to see how it exits
      d.exited = new Promise((resolve) => {
        if (d.proc.exitCode !== null || d.proc.signalCode !== null) {
          resolve();
          return;
        }
        d.proc.once('exit', () => resolve());
      }).then(() => {
        d.exit = { code: d.proc.exitCode, signal: d.proc.signalCode };
      });
      if (listTools) d.tools = (await d.client.listTools()).tools; // also arms output validation
    } catch (e) {
      throw annotate(e, d);
    }
    return d;
  }

  call(name, args, opts = {}) {
    return this.client.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS, ...opts });
  }

  /** Closes stdin and waits for the daemon to exit on its own. */
  async close() {
    if (this.closed) return this.exit;
    this.closed = true;
    if (this.proc && this.exit === null) {
      try {
        this.proc.stdin.end();
      } catch {
        /* already gone */
      }
      await Promise.race([this.exited, exitWait(EXIT_WAIT_MS)]);
      if (this.exit === null) this.exit = { code: null, signal: null, hung: true };
    }
    await this.client.close().catch(() => {}); // kills it if it hung
    if (this.proc) await Promise.race([this.exited, exitWait(5000)]);
    return this.exit;
  }
}

/**
 * Starts BIN for daemon d with args and env: d.proc, and d.exited, which
 * resolves once it has exited, with d.exit = {code, signal} ({error} when it
 * could not be spawned). Its stderr collects in d.stderr.
 */
export function spawnDaemon(d, args, env, stdin = 'pipe') {
  d.proc = spawn(BIN, args, { env, stdio: [stdin, 'pipe', 'pipe'] });
  d.exited = new Promise((resolve) => {
    d.proc.once('exit', (code, signal) => {
      d.exit = { code, signal };
      resolve();
    });
    d.proc.once('error', (e) => {
      // spawn failed: there will be no 'exit'
      if (d.proc.pid === undefined) {
        d.exit = { code: null, signal: null, error: String(e) };
        d.stderr += `spawn ${BIN} failed: ${e}\n`;
        resolve();
      }
    });
  });
  d.proc.stderr.on('data', (c) => (d.stderr += c.toString('utf8')));
}

/** Waits for a spawnDaemon daemon that was asked to end (stdin closed,
 * SIGTERM); SIGKILL if it has not exited within EXIT_WAIT_MS (d.exit.hung). */
export async function awaitExit(d) {
  await Promise.race([d.exited, exitWait(EXIT_WAIT_MS)]);
  if (d.exit === null) {
    d.proc.kill('SIGKILL');
    await Promise.race([d.exited, exitWait(5000)]);
    d.exit = { ...d.exit, hung: true };
  }
}

// ---- engine ----------------------------------------------------------------

/** GET (or method) p on the engine socket: {status, body}. */
export function engineRequest(p, method = 'GET') {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { socketPath: ENGINE_SOCKET, path: p, method, headers: { Host: 'engine' }, timeout: 10_000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${p}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** GET p on the engine socket: the parsed JSON of a 200 answer. A 500 is
 * asked again a few times: Podman 4.3 fails a container list with "no such
 * process" when a container's process exits while it is being listed. */
export async function engineGet(p) {
  let r;
  for (let attempt = 0; attempt < 5; attempt++) {
    if (attempt) await sleep(100 * attempt);
    r = await engineRequest(p);
    if (r.status !== 500) break;
  }
  if (r.status !== 200) throw new Error(`GET ${p} on ${ENGINE_SOCKET}: HTTP ${r.status}: ${r.body.slice(0, 300)}`);
  return JSON.parse(r.body);
}

/** Where the engine keeps container configurations and runtime state (its
 * /info DockerRootDir and, by engine kind, the run directories). */
export async function engineStateDirs() {
  const info = await engineGet('/v1.41/info');
  const root = info.DockerRootDir || '/var/lib/docker';
  // Podman's /info does not name it; /version does.
  const podman = JSON.stringify(await engineGet('/version')).toLowerCase().includes('podman');
  const dirs = podman
    ? [`${root}/overlay-containers`, `${root}/libpod`, '/run/containers/storage', '/run/libpod']
    : [`${root}/containers`, '/run/docker'];
  return dirs.filter((d) => existsSync(d));
}

/** Files under the engine's state directories that contain needle (fixed
 * string, binary files too). */
export async function engineFilesContaining(needle) {
  const dirs = await engineStateDirs();
  if (dirs.length === 0) throw new Error('no engine state directory found');
  return new Promise((resolve, reject) => {
    const p = spawn('grep', ['-rlsaF', '--', needle, ...dirs], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (c) => (out += c.toString('utf8')));
    p.on('error', reject);
    // grep: 0 found, 1 none found, 2 unreadable files (e.g. sockets): still an answer.
    p.on('close', () => resolve(out.split('\n').filter(Boolean)));
  });
}

export async function listManaged() {
  const filters = encodeURIComponent(JSON.stringify({ label: [engineMark(MANAGED_LABEL)] }));
  return engineGet(`/v1.41/containers/json?all=1&filters=${filters}`);
}

/** Managed containers that were there before the suite (preflight). */
let baseline = new Set();

/** A suite's first test: the binary is there and the engine answers (both
 * named in a diagnostic); the managed containers there now become the
 * baseline, which ourContainers skips. */
export async function preflight(tc) {
  assert.ok(existsSync(BIN), `daemon binary ${BIN} not found (run make, or set MCPSANDBOXD_BIN)`);
  const v = await engineGet('/version');
  let name = v.Platform?.Name || v.Components?.[0]?.Name || 'engine';
  if (name === 'Engine') name = 'Docker Engine';
  tc.diagnostic(`engine: ${name} ${v.Version} (API ${v.ApiVersion}) at ${ENGINE_SOCKET}; daemon ${BIN}`);
  baseline = new Set((await listManaged()).map((c) => c.Id));
}

/** Managed containers (not in the baseline) labelled RUN_LABEL=marker, or
 * RUN_LABEL=marker-... with prefix=true. */
export async function ourContainers(marker = RUN_ID, { prefix = false } = {}) {
  const mine = [];
  for (const c of await listManaged()) {
    if (baseline.has(c.Id) || c.Created < SUITE_START_S) continue;
    let info;
    try {
      info = await engineGet(`/v1.41/containers/${c.Id}/json`);
    } catch {
      continue; // removed meanwhile
    }
    const got = labelOf(info, RUN_LABEL);
    if (typeof got === 'string' && (got === marker || (prefix && got.startsWith(`${marker}-`)))) {
      // The name the daemon knows it by: the container's id, or its Pod's name.
      const sandbox = KUBERNETES ? info.Config.Labels['io.kube-shim.name'] : c.Id;
      mine.push({
        id: c.Id, sandbox, short: sandbox.slice(0, 12), state: c.State, status: c.Status, image: c.Image,
        instance: labelOf(info, 'io.mcp-sandboxd.instance'), created: info?.Created,
        pool: labelOf(info, 'io.mcp-sandboxd.pool'),
      });
    }
  }
  return mine;
}

/** Waits up to ms for ours to be gone; returns what is left. */
export async function waitNoContainers(marker, ms = 5000, opts) {
  const deadline = Date.now() + ms;
  for (;;) {
    const left = await ourContainers(marker, opts);
    if (left.length === 0 || Date.now() > deadline) return left;
    await sleep(200);
  }
}

// ---- HTTP --------------------------------------------------------------------

const HTTP_START_WAIT_MS = 20_000;

/** A daemon serving HTTP on an ephemeral port of 127.0.0.1. */
/** A daemon driven with raw JSON-RPC lines. */
export class RawDaemon {
  constructor(name, args = [], env = {}) {
    this.name = name;
    this.stderr = '';
    this.lines = [];
    this.waiters = [];
    this.partial = '';
    this.exit = null;
    this.closed = false;
    spawnDaemon(this, daemonArgs(args), daemonEnv(env));
    allDaemons.push(this);
    this.proc.stdin.on('error', () => {});
    this.proc.stdout.on('data', (c) => {
      this.partial += c.toString('utf8');
      let i;
      while ((i = this.partial.indexOf('\n')) >= 0) {
        const line = this.partial.slice(0, i);
        this.partial = this.partial.slice(i + 1);
        this.lines.push(line);
      }
      this.wake();
    });
    this.proc.stdout.on('end', () => this.wake());
  }

  wake() {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  sendLine(s) {
    this.proc.stdin.write(s + '\n');
  }

  send(obj) {
    this.sendLine(JSON.stringify(obj));
  }

  /** Next message on stdout; every line must be one JSON value. */
  async recv(timeoutMs = 10_000) {
    const deadline = Date.now() + timeoutMs;
    while (this.lines.length === 0) {
      if (this.exit) throw new Error(`daemon exited (${JSON.stringify(this.exit)}) while a reply was awaited`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no message from the daemon within ${timeoutMs} ms`);
      await new Promise((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    const line = this.lines.shift();
    try {
      return JSON.parse(line);
    } catch {
      throw new Error(`daemon wrote a line that is not JSON on stdout: ${JSON.stringify(line.slice(0, 300))}`);
    }
  }

  /** Asserts nothing arrives within ms. */
  async expectSilence(ms) {
    await sleep(ms);
    assert.equal(this.lines.length, 0, `unexpected message(s): ${this.lines.join('\n')}`);
  }

  async request(method, params, id) {
    const msg = { jsonrpc: '2.0', id, method };
    if (params !== undefined) msg.params = params;
    this.send(msg);
    const reply = await this.recv(CALL_TIMEOUT_MS);
    assert.equal(reply.id, id, `reply to ${method} has id ${JSON.stringify(reply.id)}, wanted ${id}`);
    return reply;
  }

  async initialize(protocolVersion, id = 'init') {
    const r = await this.request(
      'initialize',
      { protocolVersion, capabilities: {}, clientInfo: { name: 'raw-test', version: '0' } },
      id,
    );
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return r;
  }

  async close() {
    if (this.closed) return this.exit;
    this.closed = true;
    if (this.exit === null) {
      this.proc.stdin.end();
      await awaitExit(this);
    }
    return this.exit;
  }
}

export class HttpDaemon {
  constructor(name, marker) {
    this.name = name;
    this.marker = marker;
    this.stderr = '';
    this.stdout = '';
    this.exit = null;
    this.stopped = false;
    allDaemons.push(this);
  }

  static async start(name, { args = [], env = {}, marker = RUN_ID } = {}) {
    const d = new HttpDaemon(name, marker);
    spawnDaemon(d, ['--http', '127.0.0.1:0', ...daemonArgs(args)], daemonEnv(env, marker), 'ignore');
    d.proc.stdout.on('data', (c) => (d.stdout += c.toString('utf8')));
    const deadline = Date.now() + HTTP_START_WAIT_MS;
    for (;;) {
      const m = /serving MCP over HTTP at (http:\/\/[^\s/]+)\/mcp\b/.exec(d.stderr);
      if (m) {
        d.base = m[1];
        d.url = `${d.base}/mcp`;
        d.port = Number(new URL(d.base).port);
        d.hostport = `127.0.0.1:${d.port}`;
        return d;
      }
      if (d.exit) throw annotate(new Error(`daemon '${name}' exited before serving: ${JSON.stringify(d.exit)}`), d);
      if (Date.now() > deadline) {
        throw annotate(new Error(`daemon '${name}' logged no "serving MCP over HTTP at" line within ${HTTP_START_WAIT_MS} ms`), d);
      }
      await sleep(25);
    }
  }

  /** SIGTERM, then waits for the exit (SIGKILL if it hangs). */
  async stop() {
    if (this.stopped) return this.exit;
    this.stopped = true;
    if (this.proc && this.exit === null) {
      this.proc.kill('SIGTERM');
      await awaitExit(this);
    }
    return this.exit;
  }

  close() {
    return this.stop();
  }
}

/** Incremental text/event-stream parser: push text, get complete events
 * ({id?, event?, data?, retry?}). */
export class SseParser {
  constructor() {
    this.partial = '';
    this.cur = null;
  }

  push(text) {
    const out = [];
    this.partial += text;
    const lines = this.partial.split('\n');
    this.partial = lines.pop();
    for (let line of lines) {
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (this.cur) out.push(this.cur);
        this.cur = null;
        continue;
      }
      if (line.startsWith(':')) continue;
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      let value = i < 0 ? '' : line.slice(i + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      this.cur ??= {};
      if (field === 'data') this.cur.data = this.cur.data === undefined ? value : `${this.cur.data}\n${value}`;
      else if (field === 'retry') this.cur.retry = /^\d+$/.test(value) ? Number(value) : value;
      else if (field === 'id' || field === 'event') this.cur[field] = value;
    }
    return out;
  }
}

// ---- result checks ---------------------------------------------------------

const STATUSES = ['ok', 'error', 'timeout', 'oom', 'output_limit', 'cancelled', 'busy', 'compile_error'];

export function textOf(result) {
  assert.ok(Array.isArray(result.content), 'result.content must be an array');
  const texts = result.content.filter((c) => c.type === 'text');
  assert.ok(texts.length >= 1, `result needs a text content block: ${JSON.stringify(result.content)}`);
  return texts.map((c) => c.text).join('\n');
}

/** Checks the result contract and returns {sc, text}. */
export function checkRun(result, want) {
  const sc = result.structuredContent;
  assert.ok(sc && typeof sc === 'object', `no structuredContent in ${JSON.stringify(result).slice(0, 500)}`);
  const ctx = `structuredContent: ${JSON.stringify(sc).slice(0, 1500)}`;
  assert.ok(STATUSES.includes(sc.status), `bad status; ${ctx}`);
  assert.ok(sc.exit_code === null || Number.isInteger(sc.exit_code), `bad exit_code; ${ctx}`);
  assert.equal(typeof sc.stdout, 'string', ctx);
  assert.equal(typeof sc.stderr, 'string', ctx);
  assert.equal(typeof sc.duration_ms, 'number', ctx);
  assert.ok(sc.duration_ms >= 0, ctx);
  assert.equal(typeof sc.truncated, 'boolean', ctx);
  const text = textOf(result);
  if (want.status !== undefined) assert.equal(sc.status, want.status, ctx);
  if (want.exit_code !== undefined) assert.equal(sc.exit_code, want.exit_code, ctx);
  if (want.language !== undefined) assert.equal(sc.language, want.language, ctx);
  if (want.stdout !== undefined) assert.equal(sc.stdout, want.stdout, ctx);
  if (want.stderr !== undefined) assert.equal(sc.stderr, want.stderr, ctx);
  if (want.truncated !== undefined) assert.equal(sc.truncated, want.truncated, ctx);
  const shouldError = sc.status !== 'ok' || sc.exit_code !== 0;
  assert.equal(result.isError === true, shouldError, `isError must be ${shouldError}; ${ctx}`);
  // The text block carries the same information.
  if (sc.stdout.trim()) assert.ok(text.includes(sc.stdout.trim().slice(0, 2000)), `text lacks stdout: ${text.slice(0, 500)}`);
  if (sc.stderr.trim()) assert.ok(text.includes(sc.stderr.trim().slice(0, 2000)), `text lacks stderr: ${text.slice(0, 500)}`);
  if (sc.status !== 'ok') assert.ok(text.includes(sc.status), `text does not name status ${sc.status}: ${text.slice(-500)}`);
  if (sc.exit_code !== null && sc.exit_code !== 0) {
    assert.match(text, new RegExp(`\\b${sc.exit_code}\\b`), `text does not give exit code ${sc.exit_code}: ${text.slice(-500)}`);
  }
  return { sc, text };
}

/** An invalid-arguments result: isError, a message, no structuredContent. */
export function checkInvalid(result, ...mustMention) {
  assert.equal(result.isError, true, `expected isError: ${JSON.stringify(result)}`);
  assert.equal(result.structuredContent, undefined, `invalid arguments must not produce structuredContent: ${JSON.stringify(result)}`);
  const text = textOf(result);
  for (const m of mustMention) assert.ok(text.includes(m), `message ${JSON.stringify(text)} should mention ${JSON.stringify(m)}`);
  return text;
}

// ---- the end of a suite ----------------------------------------------------

/**
 * Closes every daemon in allDaemons and asserts each exited 0 on its own with
 * no sanitizer report (and, for an HTTP daemon, nothing on stdout), then that
 * no container with RUN_MARKER=RUN_ID (or RUN_ID-... with prefix) is left.
 */
export async function checkDaemonsAndContainers({ prefix = false } = {}) {
  await Promise.all(allDaemons.map((d) => d.close()));
  const problems = [];
  for (const d of allDaemons) {
    if (!d.exit || d.exit.hung || d.exit.code !== 0) {
      problems.push(`${d.name}: exit ${JSON.stringify(d.exit)}\n${tail(d.stderr, 3000)}`);
    } else if (/AddressSanitizer|LeakSanitizer|runtime error:|ThreadSanitizer/.test(d.stderr)) {
      problems.push(`${d.name}: sanitizer report\n${tail(d.stderr, 6000)}`);
    } else if (d.stdout) {
      problems.push(`${d.name}: wrote to stdout in HTTP mode: ${JSON.stringify(d.stdout.slice(0, 300))}`);
    }
  }
  assert.deepEqual(problems, [], problems.join('\n\n'));
  const left = await waitNoContainers(RUN_ID, 5000, { prefix });
  assert.deepEqual(left, [], `containers left behind: ${JSON.stringify(left)}\n${daemonLinesAbout(left)}`);
}

/** What the daemons logged about these containers, and their warnings. */
function daemonLinesAbout(containers) {
  const out = [];
  for (const d of allDaemons) {
    const lines = d.stderr
      .split('\n')
      .filter((l) => / (warn|error):/.test(l) || containers.some((c) => l.includes(c.short)));
    if (lines.length) out.push(`--- daemon '${d.name}' ---\n${lines.slice(-40).join('\n')}`);
  }
  return out.join('\n');
}
