// Integration tests for the sandboxes' streams (src/sandbox/run/launch.c,
// src/backend/docker/sandbox_io.c, src/backend/docker/channel.c) on a real engine: by default a unix socket of the
// daemon's bound read-only into each sandbox (gVisor: the engine's attach
// stream), --sandbox-io attach, and an image whose sandbox cannot connect.
//
//   node --test tests/integration/sandbox-io.test.mjs
//
// Environment: as stdio.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, chmodSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import {
  RUN_ID, RUN_MARKER, TEST_TIMEOUT_MS, GVISOR, ENGINE, SdkDaemon, withDaemon, preflight, checkRun,
  waitNoContainers, checkDaemonsAndContainers, sleep,
} from './lib.mjs';

const ENV_URI = 'mcp-sandboxd://environment';
const exec = promisify(execFile);

async function ioOf(d) {
  const r = await d.client.readResource({ uri: ENV_URI });
  return Object.fromEntries(JSON.parse(r.contents[0].text).languages.map((l) => [l.language, l.sandbox_io]));
}

async function run(d, language, code) {
  return checkRun(await d.call('execute_code', { language, code }), { status: 'ok', exit_code: 0 }).sc;
}

/** A fresh --sandbox-io-dir, so what it holds is this test's alone. */
function ioDir() {
  const dir = mkdtempSync('/tmp/mcpsbx-io-test.');
  chmodSync(dir, 0o711);
  return dir;
}

// What a program sees of its streams and of the socket's directory.
const PY_PROBE = `
import os, stat, socket
kind = lambda fd: 'socket' if stat.S_ISSOCK(os.fstat(fd).st_mode) else 'pipe' if stat.S_ISFIFO(os.fstat(fd).st_mode) else 'other'
print(kind(1), kind(2))
d = '/run/mcpsbx-io'
if os.path.isdir(d):
    try:
        os.listdir(d); print('listed')
    except PermissionError:
        print('unlistable')
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(d + '/io.sock'); print('connected')
    except OSError as e:
        print('connect', e.errno == 2 and 'ENOENT' or e.errno)
    try:
        open(d + '/x', 'w'); print('wrote')
    except OSError as e:
        print('write refused')
    ro = [l.split()[3].split(',')[0] for l in open('/proc/mounts') if l.split()[1] == d]
    print('mount', ro)
else:
    print('no dir')
`;

test('preflight: binary present, engine answers', (tc) => preflight(tc));

test('the default: streams over the daemon\'s socket, an empty read-only directory left behind; nothing stays in --sandbox-io-dir', { timeout: TEST_TIMEOUT_MS }, async () => {
  const dir = ioDir();
  const d = await SdkDaemon.start('io-socket', { args: ['--pool-size', '1', '--sandbox-io-dir', dir] });
  await withDaemon(d, async () => {
    const io = await ioOf(d);
    const want = GVISOR ? 'attach' : 'socket';
    assert.deepEqual(io, { python: want, javascript: want });
    for (let i = 0; i < 3; i++) {
      const sc = await run(d, 'python', PY_PROBE);
      if (GVISOR) {
        assert.equal(sc.stdout, 'pipe pipe\nno dir\n');
      } else {
        assert.equal(sc.stdout, "socket socket\nunlistable\nconnect ENOENT\nwrite refused\nmount ['ro']\n");
      }
    }
    const js = await run(d, 'javascript', "const fs = require('fs'); console.log(fs.fstatSync(1).isSocket(), fs.existsSync('/run/mcpsbx-io/io.sock')); console.error('e')");
    assert.equal(js.stdout, `${!GVISOR} false\n`);
    assert.equal(js.stderr, 'e\n');
    // stdin, both streams and a big output, in order.
    const big = await d.call('execute_code', {
      language: 'python',
      code: "import sys\ndata = sys.stdin.read()\nsys.stdout.write(data * 20000)\nprint('err', file=sys.stderr)",
      stdin: 'abcdefghij',
    });
    const { sc } = checkRun(big, { status: 'ok', exit_code: 0, stderr: 'err\n' });
    assert.equal(sc.stdout, 'abcdefghij'.repeat(20000));
    // Only sandboxes being set up have a directory; none is set up now but
    // the pool's refills, which connect within seconds. The daemon's CA
    // (the installs' trust bundle: its two public files) stays until exit.
    const caDir = (e) => readdirSync(path.join(dir, e)).sort().join() === 'egress-ca-bundle.pem,egress-ca.pem';
    let left = [];
    for (let i = 0; i < 100; i++) {
      left = readdirSync(dir).filter((e) => !caDir(e));
      if (left.length === 0) break;
      await sleep(100);
    }
    assert.deepEqual(left, []);
    await d.close();
    assert.equal(d.exit.code, 0);
    assert.deepEqual(readdirSync(dir), []);
  });
  rmSync(dir, { recursive: true });
});

test('--sandbox-io attach: the engine\'s attach stream, pooled and on demand', { timeout: TEST_TIMEOUT_MS }, async () => {
  for (const pool of ['1', '0']) {
    const d = await SdkDaemon.start(`io-attach-${pool}`, { args: ['--pool-size', pool, '--sandbox-io', 'attach'] });
    await withDaemon(d, async () => {
      assert.deepEqual(await ioOf(d), { python: 'attach', javascript: 'attach' });
      const sc = await run(d, 'python', PY_PROBE);
      assert.equal(sc.stdout, 'pipe pipe\nno dir\n');
      await d.close();
      assert.equal(d.exit.code, 0);
    });
  }
});

test('an image whose sandbox cannot connect (no perl): the run goes on attached, and so does the image', { timeout: TEST_TIMEOUT_MS, skip: GVISOR && 'gVisor sandboxes always attach' }, async () => {
  const image = `mcpsbx-test-noperl-${RUN_ID}`;
  const dockerfile = 'FROM mcp-sandboxd-python:latest\nUSER 0\nRUN rm -f /usr/bin/perl /usr/bin/perl5*\nUSER 10001:10001\n';
  const build = exec('docker', ['build', '-q', '-t', image, '-'], { env: { ...process.env, DOCKER_HOST: ENGINE, DOCKER_BUILDKIT: '0' } });
  build.child.stdin.end(dockerfile);
  await build;
  const marker = `${RUN_ID}-noperl`;
  const d = await SdkDaemon.start('io-noperl', { args: ['--pool-size', '0', '--python-image', image], env: { [RUN_MARKER]: marker } });
  try {
    await withDaemon(d, async () => {
      assert.deepEqual(await ioOf(d), { python: 'socket', javascript: 'socket' });
      for (let i = 0; i < 2; i++) {
        const sc = await run(d, 'python', 'import os, stat; print(stat.S_ISFIFO(os.fstat(1).st_mode))');
        assert.equal(sc.stdout, 'True\n');
      }
      assert.deepEqual(await ioOf(d), { python: 'attach', javascript: 'socket' });
      assert.match(d.stderr, /could not connect to its socket \(.*exited with status \d+/);
      assert.equal((d.stderr.match(/could not connect to its socket/g) || []).length, 1, 'said once');
      await d.close();
      assert.equal(d.exit.code, 0);
      await waitNoContainers(marker);
    });
  } finally {
    await exec('docker', ['rmi', '-f', image], { env: { ...process.env, DOCKER_HOST: ENGINE } }).catch(() => {});
  }
});

test('every daemon exited cleanly and no container is left', async () => {
  await checkDaemonsAndContainers();
});
