// What the engine does without a pool, for the warm-pool benchmark
// (tests/bench/pool.mjs):
//
//   - the container-per-call approach of peer MCP servers, timed end to end:
//     create a plain container (cmd python3 /tmp/main.py or node
//     /tmp/main.js), copy the program in with PUT /archive (a tar built in
//     memory), start, wait, read the logs, remove;
//   - the engine's own churn: N parallel loops of create/start/wait/remove of
//     a trivial container (`true`) for a fixed time, the ceiling for any
//     one-container-per-run server's sustained throughput.
//
//   node tests/bench/peer.mjs SOCKET python|javascript|churn [N] [RUNTIME]
//       (standalone, for a quick look)

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

import { BENCH_LABEL, Engine, demuxAll, stats, tarOneFile } from './engine.mjs';
import { HELLO } from './floor.mjs';

const FILE = { python: 'main.py', javascript: 'main.js' };
const INTERP = { python: 'python3', javascript: 'node' };

/**
 * A peer's container: the same image and limits as the daemon's, but what
 * their approach allows: a writable root (PUT /archive is refused with
 * ReadonlyRootfs and does not see tmpfs mounts) and the engine's default log
 * driver (GET /logs needs one). hardened: the daemon's create body.
 */
export function peerCreateBody(hardened, lang) {
  const hc = hardened.HostConfig;
  return {
    Image: hardened.Image,
    Cmd: [INTERP[lang], `/tmp/${FILE[lang]}`],
    Entrypoint: [],
    User: hardened.User,
    WorkingDir: '/tmp',
    Env: hardened.Env,
    Labels: { [BENCH_LABEL]: 'pending' },
    NetworkDisabled: true,
    HostConfig: {
      NetworkMode: 'none',
      CapDrop: hc.CapDrop,
      SecurityOpt: hc.SecurityOpt,
      Memory: hc.Memory,
      MemorySwap: hc.MemorySwap,
      NanoCpus: hc.NanoCpus,
      PidsLimit: hc.PidsLimit,
      Ulimits: hc.Ulimits, // the engine's defaults fail on hosts with a low hard nofile
      ...(hc.Runtime ? { Runtime: hc.Runtime } : {}),
    },
  };
}

/** One peer-style run, timed from create to remove. */
export async function peerRun(engine, body, lang) {
  const t0 = performance.now();
  const id = await engine.create({ ...body, Labels: { [BENCH_LABEL]: engine.runId } });
  let out;
  try {
    await engine.call('PUT', `/containers/${id}/archive?path=/tmp`, tarOneFile(FILE[lang], HELLO[lang] + '\n'), [200], {
      headers: { 'Content-Type': 'application/x-tar' },
    });
    await engine.start(id);
    const w = await engine.call('POST', `/containers/${id}/wait`, null, [200]);
    const logs = await engine.request('GET', `/containers/${id}/logs?stdout=1&stderr=1`);
    if (logs.status !== 200) throw new Error(`logs: HTTP ${logs.status}`);
    out = { exit: w?.StatusCode, ...demuxAll(logs.body) };
  } finally {
    await engine.remove(id);
  }
  const ms = performance.now() - t0;
  if (out.exit !== 0 || out.stdout !== 'hello\n') {
    throw new Error(`peer ${lang} run: exit ${out.exit}, stdout ${JSON.stringify(out.stdout)}, stderr ${JSON.stringify(out.stderr.slice(0, 300))}`);
  }
  return ms;
}

/** n sequential peer runs after one unrecorded warm-up. */
export async function measurePeer(engine, body, lang, n, { log = () => {} } = {}) {
  await peerRun(engine, body, lang);
  const samples = [];
  for (let i = 0; i < n; i++) samples.push(await peerRun(engine, body, lang));
  log(`peer ${lang}: ${n} runs`);
  return { stats: stats(samples), samples: samples.map((x) => Math.round(x * 1000) / 1000) };
}

/** The trivial container of the churn: the daemon's hardened body, cmd `true`. */
export function churnCreateBody(hardened) {
  return {
    ...hardened,
    Cmd: ['true'],
    Entrypoint: [],
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    OpenStdin: false,
    StdinOnce: false,
    Labels: { [BENCH_LABEL]: 'pending' },
  };
}

/**
 * concurrency loops of create/start/wait/remove for seconds; a loop starts
 * no new iteration past the deadline. runs/s counts iterations over the time
 * until the last loop finished.
 */
export async function measureChurn(engine, body, concurrency, seconds) {
  const lat = [];
  const errors = [];
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  const loop = async () => {
    while (performance.now() < deadline) {
      const s = performance.now();
      let id = null;
      try {
        id = await engine.create({ ...body, Labels: { [BENCH_LABEL]: engine.runId } });
        await engine.start(id);
        await engine.call('POST', `/containers/${id}/wait`, null, [200]);
        await engine.remove(id);
        id = null;
        lat.push(performance.now() - s);
      } catch (e) {
        errors.push(String(e.message || e));
        if (id) await engine.remove(id).catch(() => {});
        if (errors.length > 50) break;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsed = (performance.now() - t0) / 1000;
  return {
    concurrency,
    seconds_planned: seconds,
    seconds: Math.round(elapsed * 1000) / 1000,
    runs: lat.length,
    runs_per_s: Math.round((lat.length / elapsed) * 100) / 100,
    latency_ms: stats(lat),
    errors: errors.length,
    error_examples: [...new Set(errors)].slice(0, 3),
  };
}

// Standalone use.
if (import.meta.url === `file://${process.argv[1]}`) {
  const [sock, what = 'python', n = '5', runtime] = process.argv.slice(2);
  if (!sock) {
    console.error('usage: peer.mjs SOCKET python|javascript|churn [N] [RUNTIME]');
    process.exit(2);
  }
  const bin = process.env.MCPSANDBOXD_BIN || new URL('../../build/mcp-sandboxd', import.meta.url).pathname;
  const lang = what === 'churn' ? 'python' : what;
  const args = ['--dry-run-create', lang, ...(runtime ? ['--runtime', runtime] : [])];
  const hardened = JSON.parse(spawnSync(bin, args, { encoding: 'utf8' }).stdout);
  const engine = new Engine(sock.replace(/^unix:\/\//, ''), `peer-${randomBytes(4).toString('hex')}`);
  try {
    if (what === 'churn') console.log(JSON.stringify(await measureChurn(engine, churnCreateBody(hardened), Number(n), 5)));
    else console.log(JSON.stringify((await measurePeer(engine, peerCreateBody(hardened, lang), lang, Number(n))).stats));
  } finally {
    await engine.cleanup();
  }
}
