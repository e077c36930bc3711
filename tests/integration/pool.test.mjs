// Integration tests for the warm pool (src/sandbox/pool/pool.c) on a real engine,
// through the official SDK client over stdio (and HTTP for /healthz).
//
//   node --test tests/integration/pool.test.mjs
//
// Environment: as stdio.test.mjs. Each test starts its own daemon with the
// --pool-size it needs (run.sh's pool-less pass does not change that) and its
// own MCPSBX_TEST_RUN marker, so the containers of that daemon can be told
// apart; the pool's state is read from the environment resource.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';

import {
  RUN_ID, RUN_MARKER, CALL_TIMEOUT_MS, TEST_TIMEOUT_MS, sleep,
  SdkDaemon, HttpDaemon, withDaemon, preflight, ourContainers, waitNoContainers, engineRequest, allDaemons, exitWait,
  checkRun, checkDaemonsAndContainers, engineGet, KUBERNETES,
} from './lib.mjs';

const ENV_URI = 'mcp-sandboxd://environment';
const POOL_WAIT_MS = 90_000;

async function startPooled(name, size, args = []) {
  const marker = `${RUN_ID}-pool-${name}`;
  const d = await SdkDaemon.start(`pool-${name}`, { args: ['--pool-size', String(size), ...args], env: { [RUN_MARKER]: marker } });
  d.marker = marker;
  return d;
}

async function poolOf(d, language = 'python') {
  const r = await d.client.readResource({ uri: ENV_URI });
  const env = JSON.parse(r.contents[0].text);
  return env.pool.profiles.find((p) => p.language === language);
}

/** Waits until pred(profile) holds; returns the profile. */
async function waitPool(d, pred, language = 'python', ms = POOL_WAIT_MS) {
  const deadline = Date.now() + ms;
  let p;
  while (Date.now() < deadline) {
    p = await poolOf(d, language);
    if (p && pred(p)) return p;
    await sleep(50);
  }
  assert.fail(`${language} pool never got there: ${JSON.stringify(p)}`);
}

const full = (p) => p.ready === p.size && p.starting === 0;

async function py(d, code, extra = {}) {
  return checkRun(await d.call('execute_code', { language: 'python', code, ...extra }), { status: 'ok', exit_code: 0 }).sc;
}

/** The container's hostname: its short id on Docker and Podman. */
const HOSTNAME = 'import socket; print(socket.gethostname())';

/** The waiting pooled containers of d for language (state running). */
async function waiting(d, language = 'python') {
  return (await ourContainers(d.marker)).filter((c) => c.pool === language && c.state === 'running');
}

async function waitGone(id, ms, t0 = Date.now()) {
  while (Date.now() - t0 < ms) {
    const r = await engineRequest(`/v1.41/containers/${id}/json`);
    if (r.status === 404) return Date.now() - t0;
    await sleep(25);
  }
  return null;
}

test('preflight: binary present, engine answers', (tc) => preflight(tc));

test('each run gets a fresh pooled container: files and ids never carry over', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await startPooled('fresh', 2);
  await withDaemon(d, async () => {
    await waitPool(d, full);
    const a = await py(d, `open('/tmp/left-behind', 'w').write('x')\n${HOSTNAME}`);
    await waitPool(d, full);
    const b = await py(d, `import os; print(os.path.exists('/tmp/left-behind'))\n${HOSTNAME}`);
    const [aHost] = a.stdout.trim().split('\n');
    const [bSeen, bHost] = b.stdout.trim().split('\n');
    assert.equal(bSeen, 'False', 'a file written by one run was visible to the next');
    assert.notEqual(aHost, bHost, 'two runs shared a container');
    const p = await poolOf(d);
    assert.equal(p.hits, 2, JSON.stringify(p));
    assert.equal(p.misses, 0, JSON.stringify(p));
  });
  await d.close();
});

// What a program can see of its process, except sys.modules and timing.
const PROBE_PY = `
import json, os, sys, warnings
seen = {
    "argv": sys.argv, "cwd": os.getcwd(), "files": sorted(os.listdir(".")),
    "env": sorted(os.environ), "path0": sys.path[0], "name": __name__,
    "stdin": sys.stdin.read(), "file": __file__,
}
import pandas as pd, numpy as np, matplotlib.pyplot as plt
seen["sum"] = int(pd.DataFrame({"a": [1, 2, 3]}).a.sum() + np.int64(0))
warnings.warn("shown every time")
print(json.dumps(seen, sort_keys=True))
`;
const PROBE_JS = `
const fs = require('fs');
console.log(JSON.stringify({ argv: process.argv.slice(1), cwd: process.cwd(), files: fs.readdirSync('.').sort(),
  env: Object.keys(process.env).sort(), execArgv: process.execArgv, stdin: fs.readFileSync(0, 'utf8'), main: require.main === module }));
`;

test('preloaded modules are there; otherwise a warm sandbox looks like a cold one', { timeout: TEST_TIMEOUT_MS }, async () => {
  const warm = await startPooled('warm', 1);
  const cold = await startPooled('cold', 0);
  await withDaemon([warm, cold], async () => {
    await waitPool(warm, full);
    await waitPool(warm, full, 'javascript');
    const preloaded = "import sys; print(all(m in sys.modules for m in ('numpy', 'pandas', 'matplotlib')))";
    assert.equal((await py(warm, preloaded)).stdout, 'True\n');
    assert.equal((await py(cold, preloaded)).stdout, 'False\n');

    await waitPool(warm, full);
    const w = await py(warm, PROBE_PY, { stdin: 'in\n' });
    const c = await py(cold, PROBE_PY, { stdin: 'in\n' });
    assert.equal(w.stdout, c.stdout);
    assert.match(w.stderr, /UserWarning: shown every time/);
    assert.equal(w.stderr, c.stderr);
    assert.deepEqual(JSON.parse(w.stdout).sum, 6);

    const wj = checkRun(await warm.call('execute_code', { language: 'javascript', code: PROBE_JS, stdin: 'in\n' }), { status: 'ok' }).sc;
    const cj = checkRun(await cold.call('execute_code', { language: 'javascript', code: PROBE_JS, stdin: 'in\n' }), { status: 'ok' }).sc;
    assert.equal(wj.stdout, cj.stdout);
    assert.equal(wj.stderr, cj.stderr);
    assert.ok((await poolOf(warm, 'javascript')).hits >= 1);
  });
  await warm.close();
  await cold.close();
});

test('a pooled container killed from outside is replaced and never handed out', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await startPooled('killed', 1);
  await withDaemon(d, async () => {
    await waitPool(d, full);
    const [victim, ...more] = await waiting(d);
    assert.ok(victim && more.length === 0, 'expected exactly one waiting python container');
    const k = await engineRequest(`/v1.41/containers/${victim.id}/kill`, 'POST');
    assert.equal(k.status, 204, k.body);
    const p = await waitPool(d, (q) => q.replaced >= 1 && full(q));
    assert.equal(p.hits, 0);
    const r = await py(d, HOSTNAME);
    assert.ok(!victim.sandbox.startsWith(r.stdout.trim()), `the killed container ${victim.short} ran a program`);
    assert.notEqual(await waitGone(victim.id, 10_000), null, `killed container ${victim.short} was not removed`);
  });
  await d.close();
});

test('a call asking for other memory than the pool gets a container with its own limit', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await startPooled('memory', 1);
  // cgroup v2, else v1, else (gVisor, which shows no cgroup files) the
  // memory its kernel reports, which is the container's limit.
  const MEM = [
    'import os',
    'for f in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):',
    '    if os.path.exists(f):',
    '        print(open(f).read().strip())',
    '        break',
    'else:',
    '    print(int(open("/proc/meminfo").readline().split()[1]) * 1024)',
  ].join('\n');
  await withDaemon(d, async () => {
    await waitPool(d, full);
    assert.equal((await py(d, MEM, { memory_mb: 1024 })).stdout, `${1024 * 1024 * 1024}\n`);
    assert.equal((await py(d, MEM, { memory_mb: 128 })).stdout, `${128 * 1024 * 1024}\n`);
    let p = await poolOf(d);
    assert.equal(p.hits, 0, 'a run with other limits took a pooled container');
    assert.equal(p.misses, 0);
    assert.equal((await py(d, MEM)).stdout, `${512 * 1024 * 1024}\n`);
    p = await poolOf(d);
    assert.equal(p.hits, 1);
  });
  await d.close();
});

test('the pool refills after a burst; every run of the burst succeeds', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await startPooled('burst', 2);
  await withDaemon(d, async () => {
    await waitPool(d, full);
    const runs = await Promise.all(Array.from({ length: 6 }, (_, i) => py(d, `print(${i})`)));
    runs.forEach((r, i) => assert.equal(r.stdout, `${i}\n`));
    const p = await waitPool(d, full);
    assert.equal(p.hits + p.misses, 6, JSON.stringify(p));
    assert.ok(p.hits >= 2, JSON.stringify(p));
  });
  await d.close();
});

/**
 * A running container's CPU weight, read from its cgroup on this host:
 * {v2, value, idle} (cgroup v1 cpu.shares, or v2 cpu.weight; idle: its
 * cpu.idle flag, null where the kernel has none).
 */
async function cpuWeight(id) {
  const pid = (await engineGet(`/v1.41/containers/${id}/json`)).State.Pid;
  assert.ok(pid > 0, `container ${id.slice(0, 12)} has no process`);
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
  const v1 = lines.find((l) => /^\d+:([^:]*,)?cpu(,[^:]*)?:/.test(l));
  if (v1) {
    const path = v1.split(':')[2];
    const file = [`/sys/fs/cgroup/cpu${path}/cpu.shares`, `/sys/fs/cgroup/cpu,cpuacct${path}/cpu.shares`].find((f) => existsSync(f));
    assert.ok(file, `no cpu.shares for ${v1}`);
    return { v2: false, value: Number(readFileSync(file, 'utf8')), idle: idleFlag(file.replace(/cpu\.shares$/, 'cpu.idle')) };
  }
  const dir = `/sys/fs/cgroup${lines.find((l) => l.startsWith('0::')).slice(3)}`;
  return { v2: true, value: Number(readFileSync(`${dir}/cpu.weight`, 'utf8')), idle: idleFlag(`${dir}/cpu.idle`) };
}

function idleFlag(file) {
  return existsSync(file) ? Number(readFileSync(file, 'utf8')) : null;
}

// Docker's CPU weight, changed in place; a Pod's CPU share is its request, fixed.
test('a pooled container waits at the low CPU weight and runs at the normal one', { skip: KUBERNETES && 'no CPU weights through the kubernetes backend', timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await startPooled('weight', 1);
  await withDaemon(d, async () => {
    await waitPool(d, full);
    const [ctr] = await waiting(d);
    assert.ok(ctr, 'no waiting python container');
    // The least weight, and idle where the kernel can (an idle group
    // reads as the idle weight: 3 in v1's shares, 1 in v2's weight).
    const low = await cpuWeight(ctr.id);
    if (low.idle === null) assert.equal(low.value, low.v2 ? 1 : 2, `waiting: ${JSON.stringify(low)}`);
    else assert.ok(low.idle === 1 && low.value <= 3, `waiting: ${JSON.stringify(low)}`);
    const running = d.call('execute_code', { language: 'python', code: `${HOSTNAME}\nimport time\ntime.sleep(4)` });
    await waitPool(d, (p) => p.hits === 1);
    // Raised within the take, just after the hit is counted.
    let normal = await cpuWeight(ctr.id);
    for (const t0 = Date.now(); normal.value === low.value && Date.now() - t0 < 2000; await sleep(20)) normal = await cpuWeight(ctr.id);
    const sc = checkRun(await running, { status: 'ok', exit_code: 0 }).sc;
    assert.ok(ctr.sandbox.startsWith(sc.stdout.trim()), `the run was not in ${ctr.short}: ${sc.stdout}`);
    assert.equal(normal.value, normal.v2 ? 100 : 1024, `running: ${JSON.stringify(normal)}`);
    assert.ok(normal.idle !== 1, `running: ${JSON.stringify(normal)}`);
    const env = JSON.parse((await d.client.readResource({ uri: ENV_URI })).contents[0].text);
    assert.equal(env.pool.cpu_weights.on, true, JSON.stringify(env.pool.cpu_weights));
  });
  await d.close();
});

test('the pool follows the calls: it grows from its minimum and falls back once idle', { timeout: TEST_TIMEOUT_MS }, async () => {
  // python between 0 and 2, back at 0 after 3 s without a call (its extra
  // sandboxes go after a twelfth of that).
  const d = await startPooled('demand', 0, ['--pool-min', 'python=0', '--pool-max', 'python=2', '--pool-idle-ms', '3000', '--pool-max-total', '16']);
  await withDaemon(d, async () => {
    let p = await poolOf(d);
    assert.deepEqual([p.min, p.max, p.size, p.ready], [0, 2, 0, 0], JSON.stringify(p));
    assert.match(p.size_why, /idle/);
    const listed = (await d.call('list_languages', {})).structuredContent.languages.find((l) => l.language === 'python');
    // Its version probe is a run too: the target may be 1 already.
    assert.deepEqual([listed.pool.min, listed.pool.max], [0, 2], JSON.stringify(listed.pool));
    assert.ok(listed.pool.target <= 2 && /idle|calls\/s/.test(listed.pool.why), JSON.stringify(listed.pool));
    await py(d, 'print(1)');
    p = await waitPool(d, (q) => q.ready >= 1);
    assert.ok(p.size >= 1 && p.size <= 2, JSON.stringify(p));
    assert.match(p.size_why, /calls\/s x \d+ ms refill/);
    assert.ok(p.misses >= 1, JSON.stringify(p));
    const [ctr] = await waiting(d);
    assert.ok(ctr, 'no waiting python container');
    p = await waitPool(d, (q) => q.ready === 0 && q.starting === 0 && q.size === 0, 'python', 20_000);
    assert.ok(p.trimmed >= 1, JSON.stringify(p));
    assert.ok(await waitGone(ctr.id, 10_000) !== null, `trimmed container ${ctr.short} still there`);
  });
  await d.close();
});

test('cancelling a pooled run removes its container, long before its program would end', { timeout: TEST_TIMEOUT_MS }, async (tc) => {
  const d = await startPooled('cancel', 1);
  await withDaemon(d, async () => {
    await waitPool(d, full);
    const [ctr] = await waiting(d);
    assert.ok(ctr, 'no waiting python container');
    const ac = new AbortController();
    const pending = d.call('execute_code', { language: 'python', code: 'import time\ntime.sleep(120)', timeout_ms: 200_000 }, { signal: ac.signal });
    pending.catch(() => {});
    await waitPool(d, (p) => p.hits === 1);
    await sleep(300);
    const t0 = Date.now();
    ac.abort(new Error('the test cancels'));
    await assert.rejects(pending);
    // A hang guard far below the 120 s its program would run; how soon is
    // a figure, reported, not asserted.
    const took = await waitGone(ctr.id, 30_000, t0);
    tc.diagnostic(`pooled container ${ctr.short} gone ${took} ms after the cancellation`);
    assert.ok(took !== null, `container ${ctr.short} still exists 30 s after the cancellation`);
  });
  await d.close();
});

test('stdin EOF and SIGTERM remove every pooled container', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await startPooled('eof', 2);
  await withDaemon(d, async () => {
    await waitPool(d, full);
    await waitPool(d, full, 'javascript');
    assert.equal((await ourContainers(d.marker)).length, 4);
  });
  const exit = await d.close();
  // After the exit too: its stderr says which removal did not happen.
  await withDaemon(d, async () => {
    assert.equal(exit.code, 0, JSON.stringify(exit));
    assert.deepEqual(await waitNoContainers(d.marker, 5000), []);
  });

  const marker = `${RUN_ID}-pool-term`;
  const h = await HttpDaemon.start('pool-term', { marker, args: ['--pool-size', '2'] });
  await withDaemon(h, async () => {
    // /healthz answers while the pool fills.
    const r = await fetch(`${h.base}/healthz`, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
    assert.equal(r.status, 200);
    const deadline = Date.now() + POOL_WAIT_MS;
    while ((await ourContainers(marker)).filter((c) => c.state === 'running').length < 4 && Date.now() < deadline) await sleep(100);
  });
  const hexit = await h.stop();
  await withDaemon(h, async () => {
    assert.equal(hexit.code, 0, JSON.stringify(hexit));
    assert.deepEqual(await waitNoContainers(marker, 5000), []);
  });
});

test('a SIGKILLed daemon\'s pooled containers are removed by the next daemon', { timeout: TEST_TIMEOUT_MS }, async (tc) => {
  const d = await startPooled('sigkill', 2);
  await withDaemon(d, async () => {
    await waitPool(d, full);
    await waitPool(d, full, 'javascript');
  });
  assert.equal((await ourContainers(d.marker)).length, 4);
  d.proc.kill('SIGKILL');
  await Promise.race([d.exited, exitWait(10_000)]);
  await d.client.close().catch(() => {});
  allDaemons.splice(allDaemons.indexOf(d), 1); // it did not exit cleanly, on purpose
  const t0 = Date.now();
  const next = await startPooled('after-sigkill', 0);
  await withDaemon(next, async () => {
    assert.deepEqual(await waitNoContainers(d.marker, 10_000), [], 'the orphaned pool is still there');
    tc.diagnostic(`orphaned pool removed within ${Date.now() - t0} ms of the next daemon's start`);
  });
  await next.close();
});

test('every daemon exited cleanly and no container is left', { timeout: 120_000 }, async () => {
  await checkDaemonsAndContainers({ prefix: true });
});
