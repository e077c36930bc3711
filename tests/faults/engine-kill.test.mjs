// Fault: the engine process is SIGKILLed while a run is in flight.
//
// A run prints `started` and then loops; the engine (dockerd, or the
// `podman system service` process) gets SIGKILL. The call must end with
// status error, a message about the engine and the output it had; while
// the engine is down a new call fails fast naming the socket; once the
// engine is back (scripts/engine.sh start) the same daemon runs code again
// and removes the interrupted run's container within 10 s.
//
//   node --test tests/faults/engine-kill.test.mjs   (see tests/faults/run.sh)

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';

import { RUN_ID, ENGINE_SOCKET, TEST_TIMEOUT_MS, SdkDaemon, preflight, withDaemon, sleep, tail, ourContainers } from '../integration/lib.mjs';
import {
  ENGINE_KIND, enginePid, signalEngine, startEngine, restoreEngine, enginePing, waitRunning, waitGone, containerState, forceRemove,
  removeOurs, helloWorld, within, scOf,
} from './lib.mjs';

const MARKER = `${RUN_ID}-ek`;
const DOWN_CALL_MAX_MS = 5000;
const CONTAINER_GONE_MS = 10_000;
// The engine stays down at least this long: longer than the daemon's own
// quick retries, so the interrupted container's removal must outlast them.
const MIN_DOWN_MS = 6000;
const LOOP_CODE = "import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.05)";

const st = {};
const SETUP_TRIES = 2;

// The looping run, on demand (not the pool's limit: told apart from the
// waiting pooled containers, which run too, by having no pool label).
// Resolves {started, call} at its first output, {ended} if the call ends
// before it, {timedOut} after 60 s of neither.
async function startLoop() {
  let sawStarted;
  const started = new Promise((r) => (sawStarted = r));
  const call = st.d.call(
    'execute_code',
    { language: 'python', code: LOOP_CODE, timeout_ms: 120_000, memory_mb: 300 },
    { onprogress: (p) => String(p.message ?? '').includes('started') && sawStarted() },
  );
  const r = await within(Promise.race([started.then(() => ({ started: true })), call.then((v) => ({ ended: v }))]), 60_000);
  if (r.error) throw r.error;
  return r.timedOut ? { timedOut: true } : { ...r.value, call };
}

/** The running on-demand container of MARKER that is not in skip. */
async function waitRunningExcept(skip) {
  if (!skip.size) return waitRunning(MARKER, 60_000, { onDemand: true });
  for (const end = Date.now() + 60_000; Date.now() < end; await sleep(100)) {
    const c = (await ourContainers(MARKER)).find((x) => x.state === 'running' && !x.pool && !skip.has(x.id));
    if (c) return c;
  }
  assert.fail(`no new running on-demand container of ${MARKER} within 60 s`);
}

async function onDemandStates() {
  try {
    const all = (await ourContainers(MARKER)).filter((c) => !c.pool);
    return all.length ? all.map((c) => `${c.short} ${c.state}`).join(', ') : 'none';
  } catch (e) {
    return `unknown (${e.message})`;
  }
}

after(async () => {
  await restoreEngine();
  if (st.d) await st.d.close();
  if (st.container) await forceRemove(st.container.id);
  await removeOurs(RUN_ID);
});

test('preflight', async (t) => {
  await preflight(t);
  t.diagnostic(`engine kind ${ENGINE_KIND}, pid ${enginePid()}`);
});

test('engine SIGKILLed mid-run: the call ends with an engine error and its partial output', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  st.d = await SdkDaemon.start('engine-kill', { env: { MCPSBX_TEST_RUN: MARKER } });
  await withDaemon(st.d, async () => {
    await helloWorld((n, a) => st.d.call(n, a), 'warm');
    let call;
    const stuck = new Set(); // on-demand containers of attempts given up
    for (let attempt = 1; ; attempt++) {
      const r = await startLoop();
      call = r.call;
      if (r.started) break;
      if (r.timedOut) {
        // Seen on Podman 4.3 in CI, not yet explained: the run's container
        // runs, yet neither its output nor the call's end comes. Said, and
        // once more on a new container (a second time fails the test).
        const states = await onDemandStates();
        t.diagnostic(`attempt ${attempt}: no output within 60 s and the call has not ended (on-demand containers: ${states})`);
        assert.ok(attempt < SETUP_TRIES, `no \`started\` progress notification within 60 s, and the call has not ended (on-demand containers: ${states})`);
        for (const c of await ourContainers(MARKER)) if (!c.pool) stuck.add(c.id);
        continue;
      }
      const { sc, ctx } = scOf(r.ended);
      // Podman 4.3 now and then never answers a start (its conmon hangs):
      // the daemon gives up after its start timeout and the code never
      // ran. Not what this test is about; once more on a new container.
      const setUpFailed = ['error', 'timeout'].includes(sc.status) && !String(sc.stdout ?? '').length;
      t.diagnostic(`attempt ${attempt}: the call ended before its code printed: ${sc.status}: ${sc.message}`);
      assert.ok(setUpFailed && attempt < SETUP_TRIES, `the looping call ended before \`started\`; ${ctx}`);
    }
    st.container = await waitRunningExcept(stuck);

    const pid = enginePid();
    signalEngine(pid, 'SIGKILL');
    st.killedAt = Date.now();
    for (let i = 0; i < 50 && existsSync(`/proc/${pid}`); i++) await sleep(100);
    t.diagnostic(`killed ${ENGINE_KIND} (pid ${pid}) with container ${st.container.short} running`);

    const r = await within(call, 60_000);
    assert.ok(!r.timedOut, 'the in-flight call did not end within 60 s of the engine dying');
    if (r.error) throw r.error;
    const { sc, text, ctx } = scOf(r.value);
    t.diagnostic(`in-flight call ended ${Date.now() - st.killedAt} ms after the kill: ${sc.status}: ${sc.message}`);
    assert.equal(sc.status, 'error', ctx);
    assert.equal(r.value.isError, true, ctx);
    assert.match(String(sc.message), /engine/i, `the message should mention the engine; ${ctx}`);
    assert.match(text, /engine/i, `the text should mention the engine: ${text}`);
    assert.ok(sc.stdout.includes('started'), `the partial output should be kept; ${ctx}`);
  });
});

test('while the engine is down a call fails fast, naming the socket', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  assert.ok(st.killedAt, 'the engine was not killed (previous step failed)');
  assert.equal(await enginePing(2000), false, 'the engine answers: it should be down');
  await withDaemon(st.d, async () => {
    const t0 = Date.now();
    const r = await within(st.d.call('run_python_code', { code: "print('engine down')" }), 60_000);
    const ms = Date.now() - t0;
    assert.ok(!r.timedOut, 'no answer within 60 s with the engine down');
    if (r.error) throw r.error;
    const { sc, text, ctx } = scOf(r.value);
    t.diagnostic(`failed in ${ms} ms: ${sc.message}`);
    assert.equal(sc.status, 'error', ctx);
    assert.ok(text.includes(ENGINE_SOCKET), `the message should name ${ENGINE_SOCKET}: ${text}`);
    assert.ok(ms < DOWN_CALL_MAX_MS, `took ${ms} ms; should fail fast (< ${DOWN_CALL_MAX_MS} ms)`);
  });
});

test('after scripts/engine.sh start, the same daemon runs code again', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  if (st.killedAt) await sleep(st.killedAt + MIN_DOWN_MS - Date.now());
  const t0 = Date.now();
  startEngine();
  st.upAt = Date.now();
  // Watched from now on, alongside the runs below.
  if (st.container) st.gone = waitGone(st.container.id, CONTAINER_GONE_MS, st.upAt);
  t.diagnostic(`${ENGINE_KIND} back in ${st.upAt - t0} ms`);
  await withDaemon(st.d, async () => {
    assert.equal(st.d.exit, null, 'the daemon should still run');
    // The first runs on a just-restarted engine can be slow.
    const r = await within(helloWorld((n, a) => st.d.call(n, a), 'engine back'), 90_000);
    assert.ok(!r.timedOut, 'no hello-world result within 90 s of the engine coming back');
    if (r.error) throw r.error;
    t.diagnostic(`first run after the restart took ${Date.now() - st.upAt} ms from the engine's return`);
  });
});

test("the interrupted run's container is removed within 10 s of the engine's return", { timeout: TEST_TIMEOUT_MS }, async (t) => {
  assert.ok(st.gone, 'no interrupted container or no restart (previous steps failed)');
  const ms = await st.gone;
  if (ms !== null) t.diagnostic(`container ${st.container.short} removed ${ms} ms after the engine came back`);
  assert.ok(
    ms !== null,
    `container ${st.container.short} still there ${CONTAINER_GONE_MS} ms after the engine came back ` +
      `(state: ${await containerState(st.container.id)})\n--- daemon stderr ---\n${tail(st.d.stderr, 3000)}`,
  );
});

test('the daemon exits 0 at the end of stdin', { timeout: TEST_TIMEOUT_MS }, async () => {
  assert.ok(st.d, 'no daemon');
  const exit = await st.d.close();
  assert.deepEqual(exit, { code: 0, signal: null }, `exit ${JSON.stringify(exit)}\n${tail(st.d.stderr, 3000)}`);
});
