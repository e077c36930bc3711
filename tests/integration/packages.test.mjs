// Integration tests for packages on demand on a real engine, through the
// official SDK client over streamable HTTP. pip installs from a PEP 503
// index served on loopback (pypi_index.mjs: wheels and source
// distributions built here), reached as pypi.test (--egress-resolve, with
// loopback allowed explicitly); gem from a gem source served the same way
// (gem_index.mjs: gems built in the ruby image), reached as gems.test; npm installs from the public npm registry,
// whose address comes from npm's own configuration (the only traffic that
// leaves the machine). Each daemon has a package cache of its own in a
// fresh directory.
//
//   node --test tests/integration/packages.test.mjs
//
// Environment: as stdio.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import dns from 'node:dns/promises';
import { execFileSync } from 'node:child_process';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
  CALL_TIMEOUT_MS, TEST_TIMEOUT_MS, withDaemon, HttpDaemon, preflight, checkRun, textOf,
  checkDaemonsAndContainers, sleep,
} from './lib.mjs';
import { startIndex } from './pypi_index.mjs';
import { startGemIndex } from './gem_index.mjs';

let index;
let gems;
let cacheDir;
let langsFile;
let registryAllow = [];
let d;
let c;

async function client(daemon, name) {
  const transport = new StreamableHTTPClientTransport(new URL(daemon.url));
  const cl = new Client({ name, version: '1.0.0' });
  await cl.connect(transport, { timeout: 30_000 });
  return {
    call: (tool, args) => cl.callTool({ name: tool, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS }),
    env: async () => JSON.parse((await cl.readResource({ uri: 'mcp-sandboxd://environment' })).contents[0].text),
    close: async () => {
      await transport.terminateSession().catch(() => {});
      await cl.close().catch(() => {});
    },
  };
}

function daemonArgs(extra = [], dir = cacheDir) {
  return [
    '--languages', 'python,javascript,typescript,ruby',
    '--languages-file', langsFile,
    '--packages-cache-dir', dir,
    '--packages-index', `python=http://pypi.test:${index.port}/simple/`,
    '--packages-index', `ruby=http://gems.test:${gems.port}/`,
    '--egress-resolve', 'pypi.test=127.0.0.1',
    '--egress-resolve', 'gems.test=127.0.0.1',
    '--egress-allow-cidr', '127.0.0.0/8',
    '--packages-ready-installers', '1',
    ...registryAllow,
    ...extra,
  ];
}

/** lang's ready installers, as the environment shows them. */
async function installerOf(cl, lang) {
  return (await cl.env()).pool.installers.find((p) => p.language === lang);
}

const byName = (sc) => Object.fromEntries((sc.packages ?? []).map((p) => [p.name, p]));
const fileFetches = (name) => index.requests.filter((r) => r.path === `/files/${name}`).length;

test('preflight: an index on loopback, the registry\'s address, a daemon with a cache of its own', async (tc) => {
  await preflight(tc);
  index = await startIndex();
  gems = await startGemIndex();
  cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpsbx-pkgcache-'));
  langsFile = path.join(cacheDir, '..', `${path.basename(cacheDir)}.languages.json`);
  fs.writeFileSync(langsFile, JSON.stringify({
    languages: [{ name: 'python', packages: { installer: 'pip', deny: ['mcpsbx-denied*'], preinstall: ['mcpsbx-sdist'] } }],
  }));
  const registryHost = new URL(execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' }).trim()).hostname;
  // As egress.test.mjs: a host that reaches the registry through a mirror
  // under an address the gateway refuses by default allows that address.
  const { address, family } = await dns.lookup(registryHost);
  registryAllow = ['--egress-allow-cidr', `${address}/${family === 6 ? 128 : 32}`];
  d = await HttpDaemon.start('packages', { args: daemonArgs() });
  c = await client(d, 'packages');
});

test('pip: a set with a dependency, a pinned version and a source build is installed, then cached', { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withDaemon(d, async () => {
    const code = 'import mcpsbx_dep, mcpsbx_base, mcpsbx_sdist\nprint(mcpsbx_dep.VALUE)\nprint(mcpsbx_sdist.VALUE)';
    const first = checkRun(await c.call('run_python_code', { code, packages: ['mcpsbx-dep', 'mcpsbx-base<1.1', 'mcpsbx-sdist'] }),
      { status: 'ok', exit_code: 0, stdout: 'dep 2.0.0 on base 1.0.0\nsdist 0.3.0 built\n' });
    const got = byName(first.sc);
    assert.deepEqual(Object.keys(got).sort(), ['mcpsbx-base', 'mcpsbx-dep', 'mcpsbx-sdist']);
    assert.equal(got['mcpsbx-dep'].version, '2.0.0');
    assert.equal(got['mcpsbx-base'].version, '1.0.0');
    assert.equal(got['mcpsbx-sdist'].version, '0.3.0');
    for (const p of first.sc.packages) assert.equal(p.source, 'installed');
    assert.match(first.text, /packages: .*installed/);
    const fetched = index.requests.length;
    assert.ok(fetched > 0, 'the index saw the install');

    // The same set asked another way: from the cache, no installer, no
    // request to the index.
    const again = checkRun(await c.call('run_python_code', { code, packages: ['mcpsbx-sdist', 'mcpsbx-base <1.1', 'mcpsbx-dep'] }),
      { status: 'ok', exit_code: 0, stdout: 'dep 2.0.0 on base 1.0.0\nsdist 0.3.0 built\n' });
    for (const p of again.sc.packages) assert.equal(p.source, 'cached');
    assert.equal(byName(again.sc)['mcpsbx-dep'].version, '2.0.0');
    assert.equal(index.requests.length, fetched, 'a cached set reaches no index');

    // A run without the set does not see it.
    const none = checkRun(await c.call('run_python_code', { code: 'import mcpsbx_dep' }), { status: 'ok', exit_code: 1 });
    assert.match(none.sc.stderr, /No module named 'mcpsbx_dep'/);
    assert.equal(none.sc.packages, undefined);
  }));

test('a language\'s preinstall list is installed at start and served from the cache', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(d, async () => {
    const deadline = Date.now() + 60_000;
    while (!/python's preinstall list is ready \(installed/.test(d.stderr)) {
      assert.ok(Date.now() < deadline, 'the preinstall list was not installed within 60 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    const r = checkRun(await c.call('run_python_code', { code: 'import mcpsbx_sdist; print(mcpsbx_sdist.VALUE)', packages: ['mcpsbx-sdist'] }),
      { status: 'ok', exit_code: 0, stdout: 'sdist 0.3.0 built\n' });
    assert.equal(r.sc.packages[0].source, 'cached');
  }));

test('pip: two calls asking the same new set at once share one install', { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withDaemon(d, async () => {
    const before = fileFetches('mcpsbx_base-1.1.0-py3-none-any.whl');
    const call = () => c.call('run_python_code', { code: 'import mcpsbx_base; print(mcpsbx_base.VALUE)', packages: ['mcpsbx-base==1.1.0'] });
    const [a, b] = await Promise.all([call(), call()]);
    for (const r of [a, b]) checkRun(r, { status: 'ok', exit_code: 0, stdout: 'base 1.1.0\n' });
    assert.equal(fileFetches('mcpsbx_base-1.1.0-py3-none-any.whl') - before, 1, 'one download for both');
    const sources = [a, b].map((r) => r.structuredContent.packages[0].source).sort();
    assert.deepEqual(sources, ['cached', 'installed']);
  }));

test('pip: what cannot be installed is answered clearly and leaves no set', { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withDaemon(d, async () => {
    const sets = () => fs.readdirSync(path.join(cacheDir, 'sets')).length;
    const n = sets();
    const denied = await c.call('run_python_code', { code: 'print(1)', packages: ['mcpsbx-denied-thing'] });
    assert.equal(denied.isError, true);
    assert.match(textOf(denied), /mcpsbx-denied-thing/);
    assert.match(textOf(denied), /mcpsbx-denied\*/);

    const missing = await c.call('run_python_code', { code: 'print(1)', packages: ['mcpsbx-nope'] });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /installing mcpsbx-nope failed/);
    assert.match(textOf(missing), /No matching distribution found for mcpsbx-nope/);

    // A setup.py that reaches for a host outside the index and writes
    // outside its target: refused by the gateway, stopped by the read-only
    // filesystem, and its own report quoted.
    const evil = await c.call('run_python_code', { code: 'print(1)', packages: ['mcpsbx-evil'] });
    assert.equal(evil.isError, true);
    const t = textOf(evil);
    assert.match(t, /installing mcpsbx-evil failed/);
    assert.match(t, /not-the-index\.test refused/);
    assert.match(t, /cannot write \/opt\/mcpsbx-packages\/planted/);
    assert.match(t, /cannot write \/etc\/planted/);
    assert.equal(sets(), n, 'no set left behind');
    // Only the ready installers' spare directories, none of an install's.
    const staged = fs.readdirSync(path.join(cacheDir, 'tmp')).filter((n) => !n.startsWith('spare.'));
    assert.deepEqual(staged, [], 'no staging directory left behind');
    assert.ok(!index.requests.some((r) => r.path.includes('steal')));
  }));

test('npm: packages from the public registry, one without dependencies and one with', { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withDaemon(d, async () => {
    // With a warm pool, a ready installer (set up once the pools are
    // full) runs it and the install adopts the staging directory it waited
    // with; without one (INTEGRATION_POOL_SIZE=0) there is none.
    const pooled = (await c.env()).pool.profiles.find((p) => p.language === 'javascript')?.size > 0;
    let ready;
    for (const end = Date.now() + 60_000; pooled && !(ready?.ready >= 1) && Date.now() < end; await sleep(200)) {
      ready = await installerOf(c, 'javascript');
    }
    if (pooled) assert.equal(ready?.ready, 1, `no ready javascript installer: ${JSON.stringify(ready)}`);
    else assert.equal(await installerOf(c, 'javascript'), undefined, 'a ready installer without a pool');
    const code = "const isNumber = require('is-number'); const chalk = require('chalk');\n" +
      "console.log(isNumber(5), isNumber('x'), typeof chalk.red);";
    const r = checkRun(await c.call('run_js_code', { code, packages: ['is-number@7', 'chalk@4'] }),
      { status: 'ok', exit_code: 0, stdout: 'true false function\n' });
    if (pooled) {
      const used = await installerOf(c, 'javascript');
      assert.equal(used.hits, ready.hits + 1, JSON.stringify(used));
    }
    const got = byName(r.sc);
    assert.match(got['is-number'].version, /^7\./);
    assert.match(got.chalk.version, /^4\./);
    const esm = checkRun(await c.call('run_js_code', {
      code: "import isNumber from 'is-number';\nconsole.log(isNumber(1));", packages: ['is-number@7'],
    }), { status: 'ok', exit_code: 0, stdout: 'true\n' });
    assert.equal(esm.sc.packages[0].source, 'installed');
    // TypeScript shares the image and the installer: the same set, from
    // the cache, and the typecheck reads the types it ships.
    const ts = checkRun(await c.call('execute_code', {
      language: 'typescript', packages: ['chalk@4', 'is-number@7'],
      code: "import chalk from 'chalk';\nconst n: number = chalk.red('x');\nconsole.log(typeof n);",
    }), { status: 'ok', exit_code: 0, stdout: 'string\n' });
    assert.equal(ts.sc.packages[0].source, 'cached');
    assert.match(ts.sc.stderr, /main\.ts\(2,7\): error TS2322: Type 'string' is not assignable to type 'number'/);
  }));

test('a session installs a set and imports it in its next cell', { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withDaemon(d, async () => {
    const s = await c.call('create_session', { language: 'python' });
    assert.notEqual(s.isError, true, textOf(s));
    const id = s.structuredContent.session_id;
    const before = await c.call('run_python_code', { session_id: id, code: 'x = 41\ntry:\n    import mcpsbx_dep\nexcept ImportError:\n    print("not yet")' });
    checkRun(before, { status: 'ok', exit_code: 0, stdout: 'not yet\n' });
    const inst = await c.call('install_packages', { session_id: id, packages: ['mcpsbx-dep', 'mcpsbx-base<1.1'] });
    assert.notEqual(inst.isError, true, textOf(inst));
    assert.equal(byName(inst.structuredContent)['mcpsbx-dep'].version, '2.0.0');
    const after = await c.call('run_python_code', { session_id: id, code: 'import mcpsbx_dep\nprint(mcpsbx_dep.VALUE, x + 1)' });
    checkRun(after, { status: 'ok', exit_code: 0, stdout: 'dep 2.0.0 on base 1.0.0 42\n' });
    await c.call('close_session', { session_id: id });
  }));

// Its daemon's Ruby index is a port nothing listens on.
test('past the cache\'s cap the least recently used set goes, never one a live session added; an unreachable index is answered', { timeout: TEST_TIMEOUT_MS * 3 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpsbx-pkgcache-small-'));
  const ev = await HttpDaemon.start('packages-evict', {
    args: daemonArgs(['--packages-cache-max-bytes', String(16 << 20),
      '--packages-index', 'ruby=http://gone.test:9/', '--egress-resolve', 'gone.test=127.0.0.1'], dir),
  });
  const ec = await client(ev, 'packages-evict');
  const run = async (packages) => {
    const r = checkRun(await ec.call('run_python_code', { code: 'import mcpsbx_big; print(mcpsbx_big.VALUE)', packages }),
      { status: 'ok', exit_code: 0, stdout: 'big 1.0.0\n' });
    return byName(r.sc)['mcpsbx-big'].source;
  };
  // The big sets' evictions (the small preinstall set may go first).
  const evictions = () => [...ev.stderr.matchAll(/package cache: evicted set \w+ \((\d+) bytes\)/g)]
    .filter((m) => Number(m[1]) > 7 << 20).length;
  try {
    await withDaemon(ev, async () => {
      // Each set is over 7 MiB: two fit under 16 MiB, three do not.
      const s = await ec.call('create_session', { language: 'python' });
      assert.notEqual(s.isError, true, textOf(s));
      const id = s.structuredContent.session_id;
      const held = await ec.call('install_packages', { session_id: id, packages: ['mcpsbx-big'] });
      assert.notEqual(held.isError, true, textOf(held));
      assert.equal(await run(['mcpsbx-big', 'mcpsbx-base==1.0.0']), 'installed');
      assert.equal(evictions(), 0);
      // The session's set is the least recently used, but held.
      assert.equal(await run(['mcpsbx-big', 'mcpsbx-base==1.1.0']), 'installed');
      assert.equal(evictions(), 1);
      assert.equal(await run(['mcpsbx-big', 'mcpsbx-base==1.0.0']), 'installed', 'the evicted set installs again');
      assert.equal(evictions(), 2);
      const cell = await ec.call('run_python_code', { session_id: id, code: 'import mcpsbx_big\nprint(mcpsbx_big.VALUE)' });
      checkRun(cell, { status: 'ok', exit_code: 0, stdout: 'big 1.0.0\n' });
      assert.equal(await run(['mcpsbx-big']), 'cached');
      await ec.call('close_session', { session_id: id });
      const setsOnDisk = fs.readdirSync(path.join(dir, 'sets')).length;
      assert.ok(setsOnDisk <= 3, `${setsOnDisk} sets on disk`);

      const gone = await ec.call('execute_code', { language: 'ruby', code: 'puts 1', packages: ['mcpsbx_gdep'] });
      assert.equal(gone.isError, true);
      assert.match(textOf(gone), /installing mcpsbx_gdep failed/);
      assert.match(textOf(gone), /Unable to download data from http:\/\/gone\.test:9\//);
      assert.equal(fs.readdirSync(path.join(dir, 'sets')).length, setsOnDisk, 'no set left behind');
    });
  } finally {
    await ec.close();
    await ev.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('gem: a pinned gem and one that needs it, then cached; a session adds one; a missing gem answered', { timeout: TEST_TIMEOUT_MS * 2 }, () =>
  withDaemon(d, async () => {
    const code = 'require "mcpsbx_gdep"\nputs MCPSBX_GDEP';
    const asked = ['mcpsbx_gdep', 'mcpsbx_gbase:1.0.0'];
    const first = checkRun(await c.call('execute_code', { language: 'ruby', code, packages: asked }),
      { status: 'ok', exit_code: 0, stdout: 'gdep 2.0.0 on gbase 1.0.0\n' });
    const got = byName(first.sc);
    assert.equal(got.mcpsbx_gdep.version, '2.0.0');
    assert.equal(got.mcpsbx_gbase.version, '1.0.0');
    for (const p of first.sc.packages) assert.equal(p.source, 'installed');
    const fetched = gems.requests.length;
    const again = checkRun(await c.call('execute_code', { language: 'ruby', code, packages: ['mcpsbx_gbase:= 1.0.0', 'mcpsbx_gdep'] }),
      { status: 'ok', exit_code: 0, stdout: 'gdep 2.0.0 on gbase 1.0.0\n' });
    for (const p of again.sc.packages) assert.equal(p.source, 'cached');
    assert.equal(gems.requests.length, fetched, 'a cached set reaches no source');

    const s = await c.call('create_session', { language: 'ruby' });
    assert.notEqual(s.isError, true, textOf(s));
    const id = s.structuredContent.session_id;
    const inst = await c.call('install_packages', { session_id: id, packages: ['mcpsbx_gbase:~> 1.1'] });
    assert.notEqual(inst.isError, true, textOf(inst));
    assert.equal(byName(inst.structuredContent).mcpsbx_gbase.version, '1.1.0');
    checkRun(await c.call('execute_code', { language: 'ruby', session_id: id, code: 'require "mcpsbx_gbase"\nputs MCPSBX_GBASE' }),
      { status: 'ok', exit_code: 0, stdout: 'gbase 1.1.0\n' });
    await c.call('close_session', { session_id: id });

    const missing = await c.call('execute_code', { language: 'ruby', code: 'puts 1', packages: ['mcpsbx_nope'] });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /installing mcpsbx_nope failed/);
    assert.match(textOf(missing), /Could not find a valid gem 'mcpsbx_nope'/);
  }));

test('offline, after a restart: what is cached is served, anything else refused', { timeout: TEST_TIMEOUT_MS * 2 }, async () => {
  await c.close();
  await d.stop();
  const off = await HttpDaemon.start('packages-offline', { args: daemonArgs(['--packages-offline']) });
  const oc = await client(off, 'packages-offline');
  try {
    await withDaemon(off, async () => {
      const fetched = index.requests.length;
      const hit = checkRun(await oc.call('run_python_code', { code: 'import mcpsbx_base; print(mcpsbx_base.VALUE)', packages: ['mcpsbx-base==1.1.0'] }),
        { status: 'ok', exit_code: 0, stdout: 'base 1.1.0\n' });
      assert.equal(hit.sc.packages[0].source, 'cached');
      const miss = await oc.call('run_python_code', { code: 'print(1)', packages: ['mcpsbx-base==1.0.0'] });
      assert.equal(miss.isError, true);
      assert.match(textOf(miss), /--packages-offline/);
      assert.equal(index.requests.length, fetched);
    });
  } finally {
    await oc.close();
  }
});

test('stop', async () => {
  await checkDaemonsAndContainers();
  await index.close();
  await gems.close();
  fs.rmSync(cacheDir, { recursive: true, force: true });
  fs.rmSync(langsFile, { force: true });
});
