// Soak: many hello-world runs through one stdio daemon, about 4 at a time.
// Every run must return its output with status ok; the daemon's RSS and
// open fd count, sampled at runs 200, half way and the last, must stay flat; no
// container may be left. Prints the elapsed time and runs per second.
//
//   node --test tests/faults/soak.test.mjs   (see tests/faults/run.sh)
//
// Environment:
//   FAULTS_SOAK_RUNS         number of runs (default 1000)
//   FAULTS_SOAK_CONCURRENCY  runs in flight (default 4)

import { test, after } from 'node:test';
import assert from 'node:assert/strict';

import { RUN_ID, SdkDaemon, preflight, withDaemon, tail, waitNoContainers } from '../integration/lib.mjs';
import { ENGINE_KIND, procStats, fmtStats, removeOurs, scOf } from './lib.mjs';

const RUNS = Number(process.env.FAULTS_SOAK_RUNS || 1000);
const CONCURRENCY = Number(process.env.FAULTS_SOAK_CONCURRENCY || 4);
const MARKER = `${RUN_ID}-soak`;
const RSS_SLACK_KIB = 16 * 1024;
const FD_SLACK = 8;
// Where to sample: run 200 is the reference (warm allocator and caches).
const SAMPLES = [...new Set([Math.min(200, RUNS), Math.max(Math.min(200, RUNS), Math.floor(RUNS / 2)), RUNS])];
// A broken engine would fail every run quickly; stop early then.
const MAX_FAILURES = 20;
// At least 0.5 s per run (Podman on a loaded 2-core machine does ~4/s).
const SOAK_TIMEOUT_MS = 120_000 + RUNS * 500;

let d;

after(async () => {
  if (d) await d.close();
  await removeOurs(RUN_ID);
});

test('preflight', async (t) => {
  await preflight(t);
  t.diagnostic(`engine kind ${ENGINE_KIND}; ${RUNS} runs, ${CONCURRENCY} at a time`);
});

test(`soak: ${RUNS} hello-world runs, RSS and fds flat, no container left`, { timeout: SOAK_TIMEOUT_MS }, async (t) => {
  assert.ok(RUNS >= 1 && CONCURRENCY >= 1, 'FAULTS_SOAK_RUNS and FAULTS_SOAK_CONCURRENCY must be >= 1');
  d = await SdkDaemon.start('soak', { env: { MCPSBX_TEST_RUN: MARKER } });
  await withDaemon(d, async () => {
    const pid = d.proc.pid;
    const samples = new Map();
    const failures = [];
    let next = 0;
    let completed = 0;
    const t0 = Date.now();

    const worker = async () => {
      while (next < RUNS && failures.length < MAX_FAILURES) {
        const i = next++;
        const want = `hello ${i}\n`;
        try {
          const r = await d.call('run_python_code', { code: `print('hello ${i}')` });
          const { sc, ctx } = scOf(r);
          if (sc.status !== 'ok' || sc.exit_code !== 0 || sc.stdout !== want) failures.push(`run ${i}: ${ctx}`);
        } catch (e) {
          failures.push(`run ${i}: ${e.message}`);
        }
        completed++;
        if (SAMPLES.includes(completed)) {
          const s = procStats(pid);
          samples.set(completed, s);
          t.diagnostic(`@${completed}: ${fmtStats(s)} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const secs = (Date.now() - t0) / 1000;
    t.diagnostic(`${completed} runs in ${secs.toFixed(1)} s: ${(completed / secs).toFixed(2)} runs/s on ${ENGINE_KIND}`);

    assert.deepEqual(failures.slice(0, 5), [], `${failures.length} of ${completed} runs failed${failures.length >= MAX_FAILURES ? ' (stopped early)' : ''}`);
    assert.equal(completed, RUNS);
    const ref = samples.get(SAMPLES[0]);
    const last = samples.get(RUNS);
    assert.ok(last.rssKiB <= ref.rssKiB + RSS_SLACK_KIB, `RSS grew: ${fmtStats(ref)} at run ${SAMPLES[0]}, ${fmtStats(last)} at run ${RUNS} (+16 MiB allowed)`);
    assert.ok(last.fds <= ref.fds + FD_SLACK, `fds grew: ${ref.fds} at run ${SAMPLES[0]}, ${last.fds} at run ${RUNS} (+${FD_SLACK} allowed)`);

    // The warm pool waits while the daemon lives; its exit removes it too.
    const exit = await d.close();
    assert.deepEqual(exit, { code: 0, signal: null }, `exit ${JSON.stringify(exit)}\n${tail(d.stderr, 3000)}`);
    const left = await waitNoContainers(MARKER, 15_000);
    assert.deepEqual(left, [], `containers left after the soak: ${JSON.stringify(left.slice(0, 10))}`);
  });
});
