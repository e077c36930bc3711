// The raw floor of a warm-container execution: what a pool could at best
// achieve on this engine, with no MCP and no daemon in the way.
//
//   node tests/bench/floor.mjs SOCKET python|javascript [N] [RUNTIME|""] [held]
//       (standalone, for a quick look; tests/bench/pool.mjs imports it)
//
// Per sample, untimed: create a container with the daemon's own hardened
// create body (build/mcp-sandboxd --dry-run-create) in warm-runner mode
// (one more argument: no modules), start it, and wait for the runner's ready
// mark. Timed: a fresh connection to the engine socket, the attach upgrade,
// the framed request, and reading the demultiplexed stream until the
// completion record appears on stdout. Untimed again: remove it.
// "held": the attach is made before start and kept, so only the request
// and the answer are timed (what a pool that attaches ahead pays).
//
// Readiness is watched through a separate stdout-only attach made before
// start and closed once the mark came: closing an attach that has no stdin
// leaves the container's stdin open (StdinOnce only concerns the client that
// attached stdin), so the timed attach finds the runner blocked on stdin.

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { BENCH_LABEL, Demux, Engine, GO, READY, RECORD_PREFIX, frameRequest, newNonce, sleep, stats } from './engine.mjs';

export const HELLO = { python: 'print("hello")', javascript: 'console.log("hello")' };

/**
 * The daemon's create body for lang (python|javascript), made a warm runner
 * with no modules, labelled for the benchmark instead of as a daemon's own
 * container (so no daemon's reaper touches it). runtime: --runtime to pass.
 */
export function warmCreateBody(bin, lang, runtime) {
  const args = ['--dry-run-create', lang];
  if (runtime) args.push('--runtime', runtime);
  const r = spawnSync(bin, args, { encoding: 'utf8', env: { PATH: process.env.PATH } });
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')}: exit ${r.status}: ${r.stderr.trim().slice(0, 300)}`);
  const body = JSON.parse(r.stdout);
  // Cmd is [interp, ..., -c|-e, <runner source>, (modules)]: keep up to the
  // source, then the empty module list that makes it a warm runner.
  const i = body.Cmd.findIndex((a) => a === '-c' || a === '-e');
  if (i < 0 || i + 1 >= body.Cmd.length) throw new Error(`unexpected Cmd in the create body: ${JSON.stringify(body.Cmd.slice(0, 4))}`);
  body.Cmd = [...body.Cmd.slice(0, i + 2), ''];
  body.Labels = { [BENCH_LABEL]: 'pending' };
  return body;
}

/** Reads the demultiplexed stream of an attach until until(stdout) is true;
 * leaves the socket paused so nothing that follows is lost. */
function readUntil(socket, rest, until, timeoutMs, what) {
  return new Promise((resolve, reject) => {
    const out = [];
    const err = [];
    let stdout = Buffer.alloc(0);
    let done = false;
    const finish = (e) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.pause();
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('error', finish);
      if (e) reject(e);
      else resolve({ stdout, stderr: Buffer.concat(err) });
    };
    const demux = new Demux((s, p) => {
      if (s === 1) {
        out.push(p);
        stdout = Buffer.concat(out);
        if (until(stdout)) finish();
      } else if (s === 2) err.push(p);
    });
    const onData = (c) => demux.push(c);
    const onEnd = () =>
      finish(
        new Error(
          `${what}: stream ended first; stdout ${JSON.stringify(stdout.toString('latin1').slice(0, 200))}, ` +
            `stderr ${JSON.stringify(Buffer.concat(err).toString('utf8').slice(0, 300))}`,
        ),
      );
    const timer = setTimeout(() => finish(new Error(`${what}: nothing after ${timeoutMs} ms`)), timeoutMs);
    socket.on('data', onData);
    socket.on('end', onEnd);
    socket.on('error', finish);
    if (rest.length) demux.push(rest);
    socket.resume();
  });
}

/**
 * body's inline seccomp profile written to file and named by its path, as
 * Podman takes one (the daemon does the same: src/backend/docker/seccomp_file.c).
 */
export function seccompAsFile(body, file) {
  body.HostConfig.SecurityOpt = (body.HostConfig.SecurityOpt || []).map((o) => {
    if (!o.startsWith('seccomp={')) return o;
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, o.slice('seccomp='.length), { mode: 0o644 });
    return `seccomp=${file}`;
  });
  return body;
}

/**
 * Create, start and wait for the ready mark (untimed). Returns {id}, plus
 * {socket} with hold: then the attach made before start (stdin included)
 * stays open for the run, as a pool that attaches ahead would keep it.
 */
export async function prepareWarm(engine, body, { hold = false, timeoutMs = 60_000 } = {}) {
  const id = await engine.create({ ...body, Labels: { ...body.Labels, [BENCH_LABEL]: engine.runId } });
  // Attached before start so the mark cannot be missed (no logs are kept).
  const { socket, rest } = await engine.attach(id, hold ? {} : { stdin: false, stdout: true, stderr: false });
  try {
    await engine.start(id);
    await readUntil(socket, rest, (b) => b.includes(READY), timeoutMs, `ready mark of ${id.slice(0, 12)}`);
  } catch (e) {
    socket.destroy();
    throw e;
  }
  if (hold) return { id, socket };
  socket.destroy();
  return { id };
}

/** The timed part: attach (unless prepared with hold), write the request,
 * read until the record. */
export async function timedRun(engine, prepared, code, expectStdout) {
  const { id } = prepared;
  const nonce = newNonce();
  const marker = Buffer.concat([RECORD_PREFIX, Buffer.from(nonce + ':')]);
  const t0 = performance.now();
  const { socket, rest } = prepared.socket ? { socket: prepared.socket, rest: Buffer.alloc(0) } : await engine.attach(id);
  try {
    socket.write(frameRequest(nonce, code));
    const r = await readUntil(
      socket,
      rest,
      (b) => {
        const i = b.indexOf(marker);
        return i >= 0 && b.indexOf(0x0a, i) >= 0;
      },
      30_000,
      `run in ${id.slice(0, 12)}`,
    );
    const ms = performance.now() - t0;
    // Before the program's output: the ready mark (with hold the stream
    // began at start), then the go mark (runners that have one).
    let text = r.stdout.subarray(0, r.stdout.indexOf(marker));
    for (const mark of [READY, GO]) if (text.subarray(0, mark.length).equals(mark)) text = text.subarray(mark.length);
    text = text.toString('utf8');
    if (text !== expectStdout) throw new Error(`run in ${id.slice(0, 12)}: stdout ${JSON.stringify(text)}, expected ${JSON.stringify(expectStdout)}`);
    return ms;
  } finally {
    socket.destroy();
  }
}

/**
 * n samples of the floor for lang, one container at a time: a container's
 * exit and removal cost the engine (and this 2-core kind of machine) enough
 * CPU to slow a run that overlaps them, so each sample starts once the
 * previous container is gone. hold: see prepareWarm; code and stdout: another
 * program than the hello world (its imports then count). Returns {stats, samples}.
 */
export async function measureFloor(engine, body, lang, n, { hold = false, settleMs = 100, log = () => {}, code = HELLO[lang], stdout = 'hello\n' } = {}) {
  const samples = [];
  for (let i = 0; i < n; i++) {
    let prepared = null;
    try {
      prepared = await prepareWarm(engine, body, { hold });
      await sleep(settleMs); // the engine's start bookkeeping settles
      samples.push(await timedRun(engine, prepared, code, stdout));
    } finally {
      if (prepared) await engine.remove(prepared.id).catch(() => {});
    }
  }
  log(`floor ${lang}${hold ? ' (attach held)' : ''}: ${n} samples`);
  return { stats: stats(samples), samples: samples.map((x) => Math.round(x * 1000) / 1000) };
}

// Standalone use.
if (import.meta.url === `file://${process.argv[1]}`) {
  const [sock, lang = 'python', n = '10', runtime, held] = process.argv.slice(2);
  if (!sock) {
    console.error('usage: floor.mjs SOCKET python|javascript [N] [RUNTIME|""] [held]');
    process.exit(2);
  }
  const bin = process.env.MCPSANDBOXD_BIN || new URL('../../build/mcp-sandboxd', import.meta.url).pathname;
  const engine = new Engine(sock.replace(/^unix:\/\//, ''), `floor-${randomBytes(4).toString('hex')}`);
  try {
    const r = await measureFloor(engine, warmCreateBody(bin, lang, runtime), lang, Number(n), {
      hold: held === 'held',
      log: (m) => console.error(m),
    });
    console.log(JSON.stringify(r.stats));
  } finally {
    await engine.cleanup();
  }
}
