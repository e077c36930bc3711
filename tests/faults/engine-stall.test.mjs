// Fault: the engine process is stopped (SIGSTOP): its socket accepts
// connections but nothing answers.
//
// A call with timeout_ms 3000 must end within its deadline plus a margin
// with status error or timeout and a clear message, while ping and
// tools/list keep answering promptly; after SIGCONT runs work again and no
// container of the test is left.
//
//   node --test tests/faults/engine-stall.test.mjs   (see tests/faults/run.sh)

import { test, after } from 'node:test';
import assert from 'node:assert/strict';

import { RUN_ID, TEST_TIMEOUT_MS, SdkDaemon, preflight, withDaemon, sleep, tail, waitNoContainers } from '../integration/lib.mjs';
import {
  ENGINE_KIND, enginePid, engineListeners, signalEngine, stopEngine, restoreEngine, enginePing, removeOurs, helloWorld, within, scOf,
} from './lib.mjs';

const MARKER = `${RUN_ID}-stall`;
const CALL_TIMEOUT_MS = 3000;
const CALL_MAX_MS = CALL_TIMEOUT_MS + 5000;
// Ping and tools/list never touch the engine; generous for a loaded machine.
const PROMPT_MS = 1500;
// A create the daemon gave up on may still be carried out once the engine
// continues; the daemon's sweep (every 5 s) removes such a container of its
// own that no run holds.
const LEFTOVER_WAIT_MS = 20_000;

const st = {};

after(async () => {
  await restoreEngine();
  if (st.d) await st.d.close();
  await removeOurs(RUN_ID);
});

test('preflight', async (t) => {
  await preflight(t);
  t.diagnostic(`engine kind ${ENGINE_KIND}, pid ${enginePid()}`);
});

test('engine stopped: a call with timeout_ms 3000 ends in time; ping and tools/list stay prompt', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  // No pool: the checks below count this daemon's containers while it lives
  // (pool.test.mjs covers pooled runs, the soak runs with the pool).
  st.d = await SdkDaemon.start('engine-stall', { args: ['--pool-size', '0'], env: { MCPSBX_TEST_RUN: MARKER } });
  await withDaemon(st.d, async () => {
    await helloWorld((n, a) => st.d.call(n, a), 'warm');
    st.pid = enginePid();
    const running = await stopEngine(st.pid);
    st.stoppedAt = Date.now();
    try {
      assert.deepEqual(running, [], `threads of the engine (pid ${st.pid}) still running 5 s after SIGSTOP`);
      if (await enginePing(1000)) {
        assert.fail(`the engine still answers /_ping after SIGSTOP to pid ${st.pid}; listening on its socket:\n${engineListeners()}`);
      }
      const t0 = Date.now();
      let done = false;
      const call = st.d.call('execute_code', { language: 'python', code: "print('stalled')", timeout_ms: CALL_TIMEOUT_MS }).finally(() => {
        done = true;
      });
      // Meanwhile: the daemon itself must stay responsive.
      const slow = [];
      let probes = 0;
      let maxMs = 0;
      while (!done && Date.now() - t0 < CALL_MAX_MS + 2000) {
        for (const [what, fn] of [['ping', () => st.d.client.ping()], ['tools/list', () => st.d.client.listTools()]]) {
          const p0 = Date.now();
          const r = await within(fn(), 10_000);
          const ms = Date.now() - p0;
          probes++;
          maxMs = Math.max(maxMs, ms);
          if (r.timedOut || r.error || ms > PROMPT_MS) slow.push(`${what}: ${r.timedOut ? 'no answer in 10 s' : r.error ? r.error.message : `${ms} ms`}`);
        }
        await sleep(250);
      }
      const r = await within(call, 60_000);
      const ms = Date.now() - t0;
      t.diagnostic(`${probes} ping/tools/list probes while stalled, slowest ${maxMs} ms`);
      assert.ok(!r.timedOut, 'the call did not end within 60 s of a stalled engine');
      if (r.error) throw r.error;
      const { sc, text, ctx } = scOf(r.value);
      t.diagnostic(`call ended after ${ms} ms: ${sc.status}: ${sc.message}`);
      assert.deepEqual(slow, [], `the daemon was slow to answer while the engine was stalled (> ${PROMPT_MS} ms)`);
      assert.ok(['error', 'timeout'].includes(sc.status), ctx);
      assert.match(text, /engine|time/i, `the message should say what happened: ${text}`);
      assert.ok(ms <= CALL_MAX_MS, `the call took ${ms} ms; timeout_ms ${CALL_TIMEOUT_MS} + ${CALL_MAX_MS - CALL_TIMEOUT_MS} ms margin allowed`);
    } finally {
      signalEngine(st.pid, 'SIGCONT');
    }
  });
});

test('after SIGCONT, runs work again', { timeout: TEST_TIMEOUT_MS }, async () => {
  assert.ok(st.d, 'no daemon');
  await restoreEngine();
  await withDaemon(st.d, async () => {
    assert.ok(await enginePing(10_000), 'the engine does not answer after SIGCONT');
    const r = await within(helloWorld((n, a) => st.d.call(n, a), 'engine continued'), 90_000);
    assert.ok(!r.timedOut, 'no hello-world result within 90 s of SIGCONT');
    if (r.error) throw r.error;
  });
});

test('no container of the test is left after a short while, and the daemon exits 0', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  assert.ok(st.d, 'no daemon');
  const t0 = Date.now();
  const left = await waitNoContainers(MARKER, LEFTOVER_WAIT_MS);
  t.diagnostic(`${left.length ? 'containers still there' : 'no container left'} after ${Date.now() - t0} ms`);
  const exit = await st.d.close();
  const problems = [];
  if (left.length) problems.push(`containers left ${LEFTOVER_WAIT_MS} ms after the engine continued: ${JSON.stringify(left)}`);
  if (exit?.code !== 0 || exit?.signal) problems.push(`daemon exit ${JSON.stringify(exit)}`);
  assert.deepEqual(problems, [], `${problems.join('\n')}\n${tail(st.d.stderr, 3000)}`);
});
