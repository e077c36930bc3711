// Integration tests for list_languages (src/tools/languages.c) on a real
// engine through the official SDK client, which also checks the
// structuredContent against the tool's own outputSchema: the versions are
// read from the images (Debian bookworm's python3 and nodejs), it answers
// while every run slot is taken (it takes none), and an old-protocol client
// (2025-03-26, raw JSON-RPC: the SDK always asks for the latest) gets the
// same JSON as text content.
//
//   node --test tests/integration/languages.test.mjs
//
// Environment: as stdio.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  TEST_TIMEOUT_MS, CALL_TIMEOUT_MS, SdkDaemon, withDaemon, preflight, checkInvalid, checkRun, textOf, sleep,
  allDaemons, daemonArgs, daemonEnv, spawnDaemon, awaitExit, checkDaemonsAndContainers,
} from './lib.mjs';

// "3.11.2", "v18.20.4": what the interpreters report, not a fixed string.
const PYTHON_VERSION = /^3\.\d+\.\d+$/;
const NODE_VERSION = /^v\d+\.\d+\.\d+$/;
const PACKAGE_VERSION = /^[0-9A-Za-z][0-9A-Za-z.+~_-]*$/;

/** list_languages' answer once both versions are read (the probe runs at start). */
async function languagesOf(d) {
  for (let i = 0; ; i++) {
    const r = await d.call('list_languages', {});
    assert.equal(r.isError, false, JSON.stringify(r));
    const sc = r.structuredContent;
    if (sc.languages.every((l) => l.version !== null) || i >= 10) return r;
    await sleep(1000);
  }
}

function checkFacts(sc, { pool }) {
  const ctx = JSON.stringify(sc);
  assert.deepEqual(sc.languages.map((l) => l.language), ['python', 'javascript'], ctx);
  const [py, js] = sc.languages;
  assert.match(py.version, PYTHON_VERSION, ctx);
  assert.match(js.version, NODE_VERSION, ctx);
  assert.deepEqual(py.tools, ['run_python_code', 'execute_code', 'validate_code', 'create_session', 'install_packages'], ctx);
  assert.deepEqual(js.tools, ['run_js_code', 'execute_code', 'validate_code', 'create_session', 'install_packages'], ctx);
  // The table's python row: its figures come back, and its matplotlib
  // settings are its sandboxes' alone.
  assert.equal(py.plots, true, ctx);
  assert.equal(js.plots, false, ctx);
  assert.deepEqual(py.environment, ['PYTHONDONTWRITEBYTECODE=1', 'MPLBACKEND=Agg', 'MPLCONFIGDIR=/tmp/.mpl'], ctx);
  assert.deepEqual(js.environment, [], ctx);
  // The Python image's scientific stack (containers/python/Dockerfile).
  for (const name of ['numpy', 'pandas', 'matplotlib', 'scipy', 'sympy', 'requests']) {
    assert.match(py.packages[name] ?? '', PACKAGE_VERSION, `${name}: ${ctx}`);
  }
  for (const v of Object.values(js.packages)) assert.match(v, PACKAGE_VERSION, ctx);
  for (const l of sc.languages) {
    assert.equal(l.network, 'none', ctx);
    // No egress allow-list unless the operator sets one (--egress).
    assert.deepEqual(l.egress, [], ctx);
    assert.equal(l.pool_size, pool, ctx);
    assert.equal(l.probing, undefined, ctx);
    assert.equal(l.version_error, undefined, ctx);
    assert.ok(['socket', 'attach'].includes(l.sandbox_io), ctx);
  }
  assert.equal(typeof sc.limits.timeout_ms, 'number', ctx);
  assert.equal(typeof sc.limits.max_memory_mb, 'number', ctx);
  for (const f of ['stdin', 'variables', 'validate_code', 'live_output', 'cancellation']) {
    assert.ok(sc.features.includes(f), `${f}: ${ctx}`);
  }
  assert.equal(sc.features.includes('warm_pool'), pool > 0, ctx);
}

test('preflight: binary present, engine answers', (tc) => preflight(tc));

for (const pool of [1, 0]) {
  test(`list_languages: versions read from the images, the same as the environment resource (pool size ${pool})`, { timeout: TEST_TIMEOUT_MS }, async () => {
    const d = await SdkDaemon.start(`languages-pool${pool}`, { args: ['--pool-size', String(pool)] });
    await withDaemon(d, async () => {
      const def = d.tools.find((t) => t.name === 'list_languages');
      assert.ok(def, 'list_languages is listed');
      assert.equal(def.annotations.readOnlyHint, true);
      assert.equal(def.annotations.idempotentHint, true);
      assert.equal(def.annotations.openWorldHint, false);
      assert.deepEqual(def.inputSchema.properties, {});
      const r = await languagesOf(d);
      checkFacts(r.structuredContent, { pool });
      // The text content is the same JSON.
      assert.deepEqual(JSON.parse(textOf(r)), r.structuredContent);
      // The environment resource carries the same versions and packages.
      const env = JSON.parse((await d.client.readResource({ uri: 'mcp-sandboxd://environment' })).contents[0].text);
      for (const [i, l] of r.structuredContent.languages.entries()) {
        assert.equal(env.languages[i].version, l.version);
        assert.deepEqual(env.languages[i].packages, l.packages);
      }
      assert.deepEqual(env.limits, r.structuredContent.limits);
      // A program sees the version reported.
      const run = checkRun(await d.call('run_python_code', { code: "import platform; print(platform.python_version())" }), { status: 'ok', exit_code: 0 });
      assert.equal(run.sc.stdout.trim(), r.structuredContent.languages[0].version);
      const js = checkRun(await d.call('run_js_code', { code: 'console.log(process.version)' }), { status: 'ok', exit_code: 0 });
      assert.equal(js.sc.stdout.trim(), r.structuredContent.languages[1].version);
      checkInvalid(await d.call('list_languages', { language: 'python' }), 'language');
      await d.close();
      assert.equal(d.exit.code, 0);
    });
  });
}

test('list_languages takes no run slot: it answers at once while the only slot is busy', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await SdkDaemon.start('languages-busy', { args: ['--max-concurrent', '1', '--max-queued', '1', '--pool-size', '1'] });
  await withDaemon(d, async () => {
    await languagesOf(d); // the probe is done
    const long = d.call('run_python_code', { code: 'import time\nprint("start", flush=True)\ntime.sleep(6)\nprint("end")' });
    let runEnded = false;
    long.then(() => (runEnded = true), () => (runEnded = true));
    await sleep(1500); // the run holds the slot
    const r = await d.call('list_languages', {});
    assert.equal(r.isError, false, JSON.stringify(r));
    // Answered while the run still held the only slot, not after it.
    assert.equal(runEnded, false, 'list_languages was answered only once the run had ended');
    assert.match(r.structuredContent.languages[0].version, PYTHON_VERSION);
    const first = await long;
    const { sc } = checkRun(first, { status: 'ok', exit_code: 0 });
    assert.equal(sc.stdout, 'start\nend\n');
    await d.close();
    assert.equal(d.exit.code, 0);
  });
});

/** A daemon spoken to in raw JSON-RPC lines, for a version the SDK will not ask for. */
function rawDaemon(name, args) {
  const d = { name, stderr: '', lines: [], partial: '', exit: null, closed: false };
  spawnDaemon(d, daemonArgs(args), daemonEnv());
  allDaemons.push(d);
  d.proc.stdin.on('error', () => {});
  d.proc.stdout.on('data', (c) => {
    d.partial += c.toString('utf8');
    let i;
    while ((i = d.partial.indexOf('\n')) >= 0) {
      d.lines.push(d.partial.slice(0, i));
      d.partial = d.partial.slice(i + 1);
    }
  });
  d.request = async (method, params, id) => {
    d.proc.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    for (const end = Date.now() + CALL_TIMEOUT_MS; Date.now() < end; await sleep(20)) {
      const at = d.lines.findIndex((l) => JSON.parse(l).id === id);
      if (at >= 0) return JSON.parse(d.lines.splice(at, 1)[0]);
      if (d.exit) break;
    }
    throw new Error(`no reply to ${method} (${id})`);
  };
  d.close = async () => {
    d.closed = true;
    d.proc.stdin.end();
    await awaitExit(d);
  };
  return d;
}

test('an old-protocol client (2025-03-26) gets the same facts as text content', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = rawDaemon('languages-2025-03-26', ['--pool-size', '1']);
  await withDaemon(d, async () => {
    const init = await d.request('initialize', { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'old', version: '0' } }, 1);
    assert.equal(init.result?.protocolVersion, '2025-03-26', JSON.stringify(init));
    d.proc.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
    const list = await d.request('tools/list', {}, 2);
    const def = list.result.tools.find((t) => t.name === 'list_languages');
    assert.ok(def, JSON.stringify(list));
    assert.equal(def.outputSchema, undefined);
    let r;
    for (let i = 0; i < 10; i++) {
      r = (await d.request('tools/call', { name: 'list_languages', arguments: {} }, 10 + i)).result;
      if (JSON.parse(r.content[0].text).languages.every((l) => l.version !== null)) break;
      await sleep(1000);
    }
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.equal(r.structuredContent, undefined, JSON.stringify(r));
    assert.equal(r.content[0].type, 'text');
    checkFacts(JSON.parse(r.content[0].text), { pool: 1 });
    await d.close();
    assert.equal(d.exit.code, 0);
  });
});

test('every daemon exited cleanly and no container is left', async () => {
  await checkDaemonsAndContainers();
});
