// Fault: the daemon is SIGKILLed while a run is in flight.
//
// A stdio daemon runs `while True: pass`; once its container runs, the
// daemon gets SIGKILL, so nothing of it can clean up. A new daemon on the
// same engine must remove the orphan (its owner is provably dead) within
// 10 s of starting, and serve runs.
//
//   node --test tests/faults/daemon-kill.test.mjs   (see tests/faults/run.sh)

import { test, after } from 'node:test';
import assert from 'node:assert/strict';

import { RUN_ID, TEST_TIMEOUT_MS, SdkDaemon, preflight, withDaemon, exitWait, tail, sleep, ourContainers } from '../integration/lib.mjs';
import { ENGINE_KIND, waitRunning, waitGone, containerState, forceRemove, removeOurs, helloWorld, within } from './lib.mjs';

const ORPHAN_GONE_MS = 10_000;
const VICTIM = `${RUN_ID}-victim`;
const SUCCESSOR = `${RUN_ID}-successor`;

const st = {}; // shared between the steps below

after(async () => {
  if (st.successor) await st.successor.close();
  if (st.victim?.proc && st.victim.exit === null) st.victim.proc.kill('SIGKILL');
  // The orphan busy-loops on a CPU until someone removes it.
  if (st.orphan) await forceRemove(st.orphan.id);
  await removeOurs(RUN_ID);
});

test('preflight', async (t) => {
  await preflight(t);
  t.diagnostic(`engine kind ${ENGINE_KIND}`);
});

test('daemon SIGKILLed while its container runs', { timeout: TEST_TIMEOUT_MS }, async () => {
  st.victim = await SdkDaemon.start('victim', { env: { MCPSBX_TEST_RUN: VICTIM } });
  await withDaemon(st.victim, async () => {
    // Not awaited: the daemon dies under it.
    st.victim.call('run_python_code', { code: 'while True: pass' }).catch(() => {});
    await waitRunning(VICTIM);
    // The loop's container is not told apart by its labels (it came from
    // the pool): let the call reach it first.
    await sleep(1000);
    st.victim.proc.kill('SIGKILL');
    await Promise.race([st.victim.exited, exitWait(10_000)]);
    assert.equal(st.victim.exit?.signal, 'SIGKILL', `victim exit: ${JSON.stringify(st.victim.exit)}`);
    // Waiting pooled sandboxes end with their daemon (their runner reads
    // end of input); the one running the loop goes on: the orphan.
    let running = [];
    for (let i = 0; i < 100; i++) {
      running = (await ourContainers(VICTIM)).filter((c) => c.state === 'running');
      if (running.length <= 1) break;
      await sleep(100);
    }
    assert.equal(running.length, 1, `the orphan should still run after its daemon died, alone: ${JSON.stringify(running)}`);
    st.orphan = running[0];
  });
});

test('a new daemon removes the orphaned container within 10 s of its start', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  assert.ok(st.orphan, 'no orphan (previous step failed)');
  const t0 = Date.now();
  st.successor = await SdkDaemon.start('successor', { env: { MCPSBX_TEST_RUN: SUCCESSOR } });
  const ms = await waitGone(st.orphan.id, ORPHAN_GONE_MS, t0);
  if (ms !== null) t.diagnostic(`orphan ${st.orphan.short} removed ${ms} ms after the new daemon started`);
  assert.ok(
    ms !== null,
    `orphan ${st.orphan.short} (instance ${st.orphan.instance}) still there ${ORPHAN_GONE_MS} ms after a new daemon started ` +
      `(state: ${await containerState(st.orphan.id)})\n--- new daemon stderr ---\n${tail(st.successor.stderr, 3000)}`,
  );
});

test('the new daemon serves a hello-world run and exits 0', { timeout: TEST_TIMEOUT_MS }, async () => {
  st.successor ??= await SdkDaemon.start('successor', { env: { MCPSBX_TEST_RUN: SUCCESSOR } });
  await withDaemon(st.successor, async () => {
    const r = await within(helloWorld((n, a) => st.successor.call(n, a), 'hello after a crash'), 60_000);
    assert.ok(!r.timedOut, 'hello-world run did not finish within 60 s');
    if (r.error) throw r.error;
    const exit = await st.successor.close();
    assert.deepEqual(exit, { code: 0, signal: null }, 'the new daemon should exit 0 at the end of stdin');
  });
});
