// Integration tests for mcp-sandboxd over stdio.
//
// Drives the real daemon with the official MCP TypeScript SDK client
// (Client + StdioClientTransport) and, for protocol edge cases the SDK will
// not send, with raw JSON-RPC lines on the daemon's stdin.
//
//   node --test tests/integration/stdio.test.mjs
//
// Environment:
//   MCPSANDBOXD_BIN     daemon binary (default build/mcp-sandboxd)
//   MCPSANDBOXD_ENGINE  engine socket, passed as --engine
//                       (default $DOCKER_HOST, else unix:///var/run/docker.sock)
//
// The engine must be running and have the sandbox images
// (scripts/engine.sh start docker|podman; scripts/images.sh).
//
// Every daemon started here is given MCPSBX_TEST_RUN=<random> (and the same
// value as its containers' mcpsbx.test-run label), so containers this suite created can be told from
// containers of other daemons on the same engine when checking for leftovers.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { release } from 'node:os';

import { LATEST_PROTOCOL_VERSION, McpError } from '@modelcontextprotocol/sdk/types.js';

import {
  RUN_MARKER, RUN_ID, CALL_TIMEOUT_MS, TEST_TIMEOUT_MS, EXIT_WAIT_MS, sleep, exitWait, tail, allDaemons, daemonEnv,
  daemonArgs, withDaemon, SdkDaemon, spawnDaemon, awaitExit, preflight, ourContainers, waitNoContainers, textOf,
  checkRun, checkInvalid, checkDaemonsAndContainers, engineGet, engineFilesContaining, GVISOR, SHORT_TIMEOUT_MS,
  RawDaemon, KUBERNETES, deadBackend,
} from './lib.mjs';

// ---- daemons ---------------------------------------------------------------


// ---- the suite ---------------------------------------------------------------

test('preflight: binary present, engine answers', (tc) => preflight(tc));

describe('over the SDK client', { timeout: 900_000 }, () => {
  /** @type {SdkDaemon} */
  let d;
  before(async () => {
    d = await SdkDaemon.start('main');
  });
  after(async () => {
    await d?.close();
  });
  const t = (name, fn, opts = {}) => test(name, { timeout: TEST_TIMEOUT_MS, ...opts }, () => withDaemon(d, () => fn()));

  t('initialize: server info, capabilities, protocol version', async () => {
    const info = d.client.getServerVersion();
    assert.equal(info.name, 'mcp-sandboxd');
    assert.match(info.version, /^\d+\.\d+\.\d+/);
    const caps = d.client.getServerCapabilities();
    assert.ok(caps.tools, `capabilities.tools missing: ${JSON.stringify(caps)}`);
    assert.ok(caps.logging, `capabilities.logging missing: ${JSON.stringify(caps)}`);
    const instructions = d.client.getInstructions();
    assert.ok(instructions === undefined || typeof instructions === 'string');
    // The SDK asks for its latest version, which the daemon supports.
    assert.equal(d.protocolVersion, LATEST_PROTOCOL_VERSION);
    await d.client.ping();
  });

  t('tools/list: three run tools with description, inputSchema, the run outputSchema; validate_code, list_languages and the session tools their own', async () => {
    const names = d.tools.map((x) => x.name).sort();
    assert.deepEqual(names, ['close_session', 'create_session', 'execute_code', 'install_packages', 'list_languages', 'list_sessions', 'run_js_code', 'run_python_code', 'validate_code']);
    const check = d.tools.find((x) => x.name === 'validate_code');
    assert.deepEqual([...check.inputSchema.required].sort(), ['code', 'language']);
    assert.deepEqual([...check.outputSchema.required].sort(), ['duration_ms', 'error', 'language', 'valid']);
    const listing = d.tools.find((x) => x.name === 'list_languages');
    assert.deepEqual(listing.inputSchema.properties, {});
    assert.deepEqual([...listing.outputSchema.required].sort(), ['features', 'languages', 'limits']);
    // The code sessions' tools: their own inputs and results.
    const sessionTools = { create_session: ['language'], list_sessions: [], close_session: ['session_id'], install_packages: ['packages', 'session_id'] };
    for (const [name, required] of Object.entries(sessionTools)) {
      const tool = d.tools.find((x) => x.name === name);
      assert.deepEqual([...(tool.inputSchema.required ?? [])].sort(), required, name);
      assert.equal(tool.outputSchema?.type, 'object', `${name}: outputSchema missing`);
    }
    for (const tool of d.tools.filter((x) => x !== check && x !== listing && !(x.name in sessionTools))) {
      assert.equal(typeof tool.description, 'string', tool.name);
      assert.ok(tool.description.length > 20, `${tool.name}: description too short`);
      assert.equal(tool.inputSchema.type, 'object', tool.name);
      assert.ok(tool.inputSchema.required.includes('code'), `${tool.name}: code must be required`);
      assert.equal(tool.outputSchema?.type, 'object', `${tool.name}: outputSchema missing`);
      for (const k of ['status', 'exit_code', 'stdout', 'stderr', 'duration_ms', 'truncated', 'language']) {
        assert.ok(tool.outputSchema.properties[k], `${tool.name}: outputSchema lacks ${k}`);
      }
    }
    const exec = d.tools.find((x) => x.name === 'execute_code');
    // The language may be left out for a call in a code session (session_id).
    assert.deepEqual([...exec.inputSchema.required].sort(), ['code']);
    assert.ok(exec.inputSchema.properties.session_id, 'execute_code lacks session_id');
    for (const k of ['language', 'code', 'stdin', 'timeout_ms', 'memory_mb', 'egress']) {
      assert.ok(exec.inputSchema.properties[k], `execute_code lacks ${k}`);
    }
  });

  describe('hello world', () => {
    t('run_python_code', async () => {
      const { text } = checkRun(await d.call('run_python_code', { code: "print('hello world')" }), {
        status: 'ok', exit_code: 0, stdout: 'hello world\n', stderr: '', language: 'python', truncated: false,
      });
      assert.ok(text.includes('hello world'));
    });
    t('run_js_code', async () => {
      const { text } = checkRun(await d.call('run_js_code', { code: "console.log('hello world')" }), {
        status: 'ok', exit_code: 0, stdout: 'hello world\n', stderr: '', language: 'javascript', truncated: false,
      });
      assert.ok(text.includes('hello world'));
    });
    t('execute_code python', async () => {
      const { text } = checkRun(
        await d.call('execute_code', { language: 'python', code: "import sys\nprint('hello', 'world')\nprint('to stderr', file=sys.stderr)" }),
        { status: 'ok', exit_code: 0, stdout: 'hello world\n', stderr: 'to stderr\n', language: 'python' },
      );
      assert.ok(text.includes('hello world') && text.includes('to stderr'));
    });
    t('execute_code javascript', async () => {
      const { text } = checkRun(
        await d.call('execute_code', { language: 'javascript', code: "console.log('hello world'); console.error('to stderr')" }),
        { status: 'ok', exit_code: 0, stdout: 'hello world\n', stderr: 'to stderr\n', language: 'javascript' },
      );
      assert.ok(text.includes('hello world') && text.includes('to stderr'));
    });
    t('javascript: CommonJS require and ES module import both work', async () => {
      checkRun(await d.call('run_js_code', { code: "const os = require('os'); console.log(typeof os.cpus)" }), {
        status: 'ok', exit_code: 0, stdout: 'function\n',
      });
      checkRun(await d.call('run_js_code', { code: "import os from 'node:os';\nconsole.log(typeof os.cpus)" }), {
        status: 'ok', exit_code: 0, stdout: 'function\n',
      });
    });
    t('unicode output survives', async () => {
      checkRun(await d.call('run_python_code', { code: "print('héllo wörld ✓ 🐍')" }), {
        status: 'ok', exit_code: 0, stdout: 'héllo wörld ✓ 🐍\n',
      });
    });
  });

  describe('payloads', () => {
    t('300 KB of output arrives intact', async () => {
      const { sc } = checkRun(await d.call('run_python_code', { code: "import sys\nfor i in range(3000):\n    sys.stdout.write('%099d\\n' % i)" }), {
        status: 'ok', exit_code: 0, truncated: false,
      });
      const lines = sc.stdout.split('\n');
      assert.equal(sc.stdout.length, 300_000);
      assert.equal(lines[2999], '2999'.padStart(99, '0'));
    });
    t('1 MB of code and 1 MB of stdin go in', async () => {
      const code = `x = '${'a'.repeat(1_000_000)}'\nimport sys\nprint(len(x), len(sys.stdin.read()))`;
      checkRun(await d.call('execute_code', { language: 'python', code, stdin: 'b'.repeat(1_000_000) }), {
        status: 'ok', exit_code: 0, stdout: '1000000 1000000\n',
      });
    });
    t('invalid UTF-8 output still makes a valid result', async () => {
      const { sc } = checkRun(
        await d.call('run_python_code', { code: "import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe end\\n')" }),
        { status: 'ok', exit_code: 0 },
      );
      assert.ok(sc.stdout.startsWith('ok ') && sc.stdout.endsWith(' end\n'), JSON.stringify(sc.stdout));
    });
  });

  describe('stdin', () => {
    const input = 'line one\nline two\n';
    t('python reads sys.stdin', async () => {
      checkRun(
        await d.call('execute_code', { language: 'python', code: 'import sys\nsys.stdout.write(sys.stdin.read().upper())', stdin: input }),
        { status: 'ok', exit_code: 0, stdout: 'LINE ONE\nLINE TWO\n' },
      );
    });
    t('javascript reads process.stdin', async () => {
      const code =
        "let d = ''; process.stdin.setEncoding('utf8');\n" +
        "process.stdin.on('data', (c) => { d += c; });\n" +
        "process.stdin.on('end', () => { process.stdout.write(d.toUpperCase()); });";
      checkRun(await d.call('execute_code', { language: 'javascript', code, stdin: input }), {
        status: 'ok', exit_code: 0, stdout: 'LINE ONE\nLINE TWO\n',
      });
    });
    t('javascript reads fs.readFileSync(0)', async () => {
      const code = "const fs = require('fs'); process.stdout.write(fs.readFileSync(0, 'utf8').toUpperCase());";
      checkRun(await d.call('execute_code', { language: 'javascript', code, stdin: input }), {
        status: 'ok', exit_code: 0, stdout: 'LINE ONE\nLINE TWO\n',
      });
    });
    t('no stdin: EOF at once (python, javascript)', async () => {
      checkRun(
        await d.call('execute_code', { language: 'python', code: 'import sys\nprint(repr(sys.stdin.read()))', timeout_ms: 10_000 }),
        { status: 'ok', exit_code: 0, stdout: "''\n" },
      );
      checkRun(
        await d.call('execute_code', { language: 'python', code: 'import sys\nprint(repr(sys.stdin.read()))', stdin: '', timeout_ms: 10_000 }),
        { status: 'ok', exit_code: 0, stdout: "''\n" },
      );
      checkRun(
        await d.call('execute_code', {
          language: 'javascript',
          code: "console.log(JSON.stringify(require('fs').readFileSync(0, 'utf8')))",
          timeout_ms: 10_000,
        }),
        { status: 'ok', exit_code: 0, stdout: '""\n' },
      );
      checkRun(
        await d.call('execute_code', {
          language: 'javascript',
          code: "let n = 0; process.stdin.on('data', (c) => { n += c.length; }); process.stdin.on('end', () => console.log('end', n));",
          timeout_ms: 10_000,
        }),
        { status: 'ok', exit_code: 0, stdout: 'end 0\n' },
      );
    });
  });

  describe('exit codes', () => {
    t('python sys.exit(3)', async () => {
      checkRun(await d.call('run_python_code', { code: "import sys\nprint('bye')\nsys.exit(3)" }), {
        status: 'ok', exit_code: 3, stdout: 'bye\n',
      });
    });
    t('javascript process.exit(4)', async () => {
      checkRun(await d.call('run_js_code', { code: "console.log('bye'); process.exit(4)" }), {
        status: 'ok', exit_code: 4, stdout: 'bye\n',
      });
    });
    t('javascript process.exitCode = 5', async () => {
      checkRun(await d.call('run_js_code', { code: "process.exitCode = 5; setTimeout(() => console.log('later'), 50)" }), {
        status: 'ok', exit_code: 5, stdout: 'later\n',
      });
    });
  });

  describe('exceptions', () => {
    t('python raise ValueError', async () => {
      const { sc } = checkRun(await d.call('run_python_code', { code: "print('before')\nraise ValueError('boom')" }), {
        status: 'ok', exit_code: 1, stdout: 'before\n',
      });
      assert.ok(sc.stderr.includes('Traceback'), sc.stderr);
      assert.ok(sc.stderr.includes('ValueError: boom'), sc.stderr);
      assert.ok(sc.stderr.includes('main.py'), `traceback should name main.py: ${sc.stderr}`);
    });
    t('javascript throw new Error', async () => {
      const { sc } = checkRun(await d.call('run_js_code', { code: "console.log('before'); throw new Error('boom')" }), {
        status: 'ok', exit_code: 1, stdout: 'before\n',
      });
      assert.ok(sc.stderr.includes('Error: boom'), sc.stderr);
    });
    t('javascript unhandled promise rejection', async () => {
      const { sc } = checkRun(await d.call('run_js_code', { code: "Promise.reject(new Error('async boom'))" }), {
        status: 'ok', exit_code: 1,
      });
      assert.ok(sc.stderr.includes('async boom'), sc.stderr);
    });
  });

  describe('timeouts', () => {
    // The limit also counts the sandbox's start; a result comes within
    // twice the limit and the teardown.
    const SHORT = SHORT_TIMEOUT_MS;
    const MAX_TOOK = 2 * SHORT + 7000;
    t(`python time.sleep(60) with timeout_ms ${SHORT}`, async () => {
      const t0 = Date.now();
      const { sc } = checkRun(
        await d.call('execute_code', { language: 'python', code: "import time\nprint('started', flush=True)\ntime.sleep(60)", timeout_ms: SHORT }),
        { status: 'timeout' },
      );
      const took = Date.now() - t0;
      assert.ok(took < MAX_TOOK, `timeout result took ${took} ms`);
      assert.ok(sc.duration_ms >= SHORT - 100, `duration_ms ${sc.duration_ms} is shorter than the timeout`);
      assert.equal(sc.stdout, 'started\n', 'output written before the deadline is kept');
    });
    t(`javascript setInterval with timeout_ms ${SHORT}`, async () => {
      const t0 = Date.now();
      checkRun(
        await d.call('execute_code', { language: 'javascript', code: "console.log('started'); setInterval(() => {}, 1000)", timeout_ms: SHORT }),
        { status: 'timeout', stdout: 'started\n' },
      );
      const took = Date.now() - t0;
      assert.ok(took < MAX_TOOK, `timeout result took ${took} ms`);
    });
    t(`python busy loop with timeout_ms ${SHORT}`, async () => {
      const t0 = Date.now();
      checkRun(await d.call('execute_code', { language: 'python', code: "print('started', flush=True)\nwhile True:\n    pass", timeout_ms: SHORT }), {
        status: 'timeout', stdout: 'started\n',
      });
      assert.ok(Date.now() - t0 < MAX_TOOK);
    });
  });

  describe('out of memory', () => {
    t('python bytearray(400 MiB) with memory_mb 128', async () => {
      checkRun(
        await d.call('execute_code', { language: 'python', code: 'b = bytearray(400*1024*1024)\nprint(len(b))', memory_mb: 128, timeout_ms: 60_000 }),
        { status: 'oom' },
      );
    });
    t('python growing list of 10 MiB chunks with memory_mb 128', async () => {
      const code = "chunks = []\nfor i in range(100):\n    chunks.append(b'x' * (10*1024*1024))\nprint('survived', len(chunks))";
      checkRun(await d.call('execute_code', { language: 'python', code, memory_mb: 128, timeout_ms: 60_000 }), {
        status: 'oom',
      });
    });
  });

  t('pip-free scientific stack: numpy, pandas, matplotlib (Agg, savefig), scipy, sympy', async () => {
    const code = [
      'import numpy as np, pandas as pd, scipy, sympy',
      'import matplotlib',
      "matplotlib.use('Agg')",
      'import matplotlib.pyplot as plt',
      'from scipy import integrate',
      'import os',
      'a = np.arange(10)',
      "df = pd.DataFrame({'a': a, 'b': a * 2})",
      "print('numpy', int(a.sum()))",
      "print('pandas', int(df['b'].sum()))",
      "print('scipy', round(integrate.quad(lambda x: x * x, 0, 3)[0], 6))",
      "x = sympy.symbols('x')",
      "print('sympy', sympy.integrate(x**2, (x, 0, 3)))",
      'fig, ax = plt.subplots()',
      'ax.plot(a, a ** 2)',
      "fig.savefig('/tmp/plot.png')",
      "print('png', os.path.getsize('/tmp/plot.png') > 1000)",
    ].join('\n');
    const { sc } = checkRun(await d.call('execute_code', { language: 'python', code, timeout_ms: 80_000 }), {
      status: 'ok', exit_code: 0,
    });
    assert.equal(sc.stdout, 'numpy 45\npandas 90\nscipy 9.0\nsympy 9\npng True\n');
  });

  t("matplotlib's font cache is the image's, ready before the first import", async () => {
    const code = [
      'import os',
      "d = os.environ['MPLCONFIGDIR']",
      "print(sorted(n.startswith('fontlist-') for n in os.listdir(d)))",
      'import matplotlib.font_manager',
      "print(matplotlib.get_cachedir() == d)",
    ].join('\n');
    const { sc } = checkRun(await d.call('run_python_code', { code }), { status: 'ok', exit_code: 0 });
    assert.equal(sc.stdout, '[True]\nTrue\n');
  });

  describe('argument validation', () => {
    t('missing code', async () => {
      checkInvalid(await d.call('run_python_code', {}), 'code');
      checkInvalid(await d.call('execute_code', { language: 'python' }), 'code');
    });
    t('wrong language', async () => {
      checkInvalid(await d.call('execute_code', { language: 'ruby', code: 'puts 1' }), 'language');
      checkInvalid(await d.call('execute_code', { code: 'print(1)' }), 'language');
    });
    t('unknown argument', async () => {
      checkInvalid(await d.call('run_python_code', { code: 'print(1)', bogus: 1 }), 'bogus');
    });
    t('wrong types', async () => {
      checkInvalid(await d.call('run_python_code', { code: 42 }), 'code');
      checkInvalid(await d.call('execute_code', { language: 'python', code: 'print(1)', timeout_ms: 'soon' }), 'timeout_ms');
    });
    t('timeout_ms 1e9 is clamped, the run still succeeds', async () => {
      checkRun(await d.call('execute_code', { language: 'python', code: "print('clamped')", timeout_ms: 1e9 }), {
        status: 'ok', exit_code: 0, stdout: 'clamped\n',
      });
    });
    t('memory_mb 5 is refused', async () => {
      checkInvalid(await d.call('execute_code', { language: 'python', code: 'print(1)', memory_mb: 5 }), 'memory_mb');
    });
    t('unknown tool is JSON-RPC error -32602', async () => {
      await assert.rejects(d.call('no_such_tool', { code: 'x' }), (e) => {
        assert.ok(e instanceof McpError, `expected McpError, got ${e}`);
        assert.equal(e.code, -32602);
        return true;
      });
    });
  });

  t('concurrency: 4 parallel calls on one client get their own output', async () => {
    const calls = [0, 1, 2, 3].map((i) =>
      i % 2 === 0
        ? d.call('run_python_code', { code: `import time\ntime.sleep(0.5)\nprint('py-${i}-' + str(${i} * 111))` })
        : d.call('run_js_code', { code: `setTimeout(() => console.log('js-${i}-' + ${i} * 111), 500)` }),
    );
    const results = await Promise.all(calls);
    results.forEach((r, i) => {
      const want = `${i % 2 === 0 ? 'py' : 'js'}-${i}-${i * 111}\n`;
      checkRun(r, { status: 'ok', exit_code: 0, stdout: want, language: i % 2 === 0 ? 'python' : 'javascript' });
    });
  });

  t('hardening: non-root, no capabilities, no_new_privs, read-only root, no network', async () => {
    const code = [
      'import ctypes, errno, json, os, socket',
      'r = {}',
      "r['uid'] = os.getuid()",
      "st = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines() if ':' in l)",
      "r['CapEff'] = st['CapEff'].strip()",
      "r['CapPrm'] = st['CapPrm'].strip()",
      // PR_GET_NO_NEW_PRIVS: gVisor's /proc/self/status has no NoNewPrivs line.
      "r['NoNewPrivs'] = str(ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))",
      "r['root_opts'] = [l.split()[3] for l in open('/proc/mounts') if l.split()[1] == '/'][-1]",
      'try:',
      "    open('/usr/mcpsbx-probe', 'w').close()",
      "    r['usr_write'] = 'ok'",
      'except OSError as e:',
      "    r['usr_write'] = errno.errorcode.get(e.errno, str(e.errno))",
      'try:',
      "    s = socket.create_connection(('127.0.0.1', 9), timeout=2)",
      '    s.close()',
      "    r['connect'] = 'ok'",
      'except OSError as e:',
      "    r['connect'] = type(e).__name__",
      "r['ifaces'] = sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:])",
      "open('/tmp/probe', 'w').write('x')",
      "r['tmp_write'] = 'ok'",
      'print(json.dumps(r))',
    ].join('\n');
    const { sc } = checkRun(await d.call('run_python_code', { code }), { status: 'ok', exit_code: 0 });
    const r = JSON.parse(sc.stdout);
    assert.notEqual(r.uid, 0, 'code must not run as root');
    assert.match(r.CapEff, /^0+$/, `CapEff ${r.CapEff}`);
    assert.match(r.CapPrm, /^0+$/, `CapPrm ${r.CapPrm}`);
    assert.equal(r.NoNewPrivs, '1');
    assert.ok(r.root_opts.split(',').includes('ro'), `root mounted ${r.root_opts}`);
    // gVisor checks the permission before the read-only mount.
    assert.ok(r.usr_write === 'EROFS' || (GVISOR && r.usr_write === 'EACCES'), `writing /usr: ${r.usr_write} (want EROFS: read-only root filesystem)`);
    assert.notEqual(r.connect, 'ok', 'a TCP connect must fail');
    assert.deepEqual(r.ifaces, ['lo'], `only the loopback interface may exist: ${r.ifaces}`);
    assert.equal(r.tmp_write, 'ok', '/tmp must be writable');
  });

  t('each run gets a fresh container (no state carried over)', async () => {
    checkRun(await d.call('run_python_code', { code: "open('/tmp/carry', 'w').write('x'); print('wrote')" }), {
      status: 'ok', exit_code: 0, stdout: 'wrote\n',
    });
    checkRun(await d.call('run_python_code', { code: "import os; print(os.path.exists('/tmp/carry'))" }), {
      status: 'ok', exit_code: 0, stdout: 'False\n',
    });
  });
});

describe('daemon options', { timeout: 600_000 }, () => {
  test('--max-output-bytes 65536: a flood stops with output_limit', { timeout: TEST_TIMEOUT_MS }, async () => {
    const d = await SdkDaemon.start('output-limit', { args: ['--max-output-bytes', '65536'] });
    try {
      await withDaemon(d, async () => {
        const t0 = Date.now();
        const { sc } = checkRun(await d.call('execute_code', { language: 'python', code: "while True:\n    print('x' * 1000)", timeout_ms: 60_000 }), {
          status: 'output_limit', truncated: true,
        });
        assert.ok(sc.stdout.length > 0, 'some output is kept');
        assert.ok(Buffer.byteLength(sc.stdout) <= 65536, `stdout is ${Buffer.byteLength(sc.stdout)} bytes`);
        assert.ok(Date.now() - t0 < 30_000, 'the flood must be stopped, not waited out');
        // JavaScript too, and the daemon keeps serving.
        const js = checkRun(
          await d.call('execute_code', { language: 'javascript', code: "for (;;) console.log('y'.repeat(1000))", timeout_ms: 60_000 }),
          { status: 'output_limit', truncated: true },
        ).sc;
        assert.ok(js.stdout.length > 0 && Buffer.byteLength(js.stdout) <= 65536);
        checkRun(await d.call('run_python_code', { code: "print('still here')" }), { status: 'ok', stdout: 'still here\n' });
      });
    } finally {
      await d.close();
    }
  });

  test('--python-runtime runsc on Podman: refused, never run under Podman\'s own runtime', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    const version = await engineGet('/version');
    if (!JSON.stringify(version).toLowerCase().includes('podman')) {
      t.skip('not Podman');
      return;
    }
    // Podman's compatible API takes HostConfig.Runtime and ignores it.
    const d = await SdkDaemon.start('runtime-on-podman', { args: ['--python-runtime', 'runsc'] });
    try {
      await withDaemon(d, async () => {
        const { sc } = checkRun(await d.call('run_python_code', { code: 'print(1)' }), { status: 'error' });
        assert.match(sc.message, /runtime 'runsc' asked for, but Podman's Docker-compatible API .* ignores a container's runtime/);
        checkRun(await d.call('run_js_code', { code: 'console.log(1)' }), { status: 'ok', exit_code: 0, stdout: '1\n' });
      });
    } finally {
      await d.close();
    }
  });

  test('--python-runtime runsc --js-runtime runc: each language\'s sandboxes run under their own runtime', { timeout: TEST_TIMEOUT_MS }, async (t) => {
    const version = await engineGet('/version');
    const info = await engineGet('/v1.41/info');
    if (JSON.stringify(version).toLowerCase().includes('podman') || !info.Runtimes?.runsc) {
      // The project's scripts register runsc with dockerd only.
      t.skip('not a Docker engine with a runsc runtime');
      return;
    }
    const d = await SdkDaemon.start('per-language-runtime', { args: ['--python-runtime', 'runsc', '--js-runtime', 'runc'] });
    try {
      await withDaemon(d, async () => {
        // gVisor's kernel calls itself 4.4.0; runc shows the host's.
        const py = checkRun(await d.call('run_python_code', { code: 'import platform\nprint(platform.release())' }), { status: 'ok', exit_code: 0 });
        const js = checkRun(await d.call('run_js_code', { code: "console.log(require('os').release())" }), { status: 'ok', exit_code: 0 });
        assert.equal(py.sc.stdout, '4.4.0\n');
        assert.equal(js.sc.stdout, `${release()}\n`);
        const env = JSON.parse((await d.client.readResource({ uri: 'mcp-sandboxd://environment' })).contents[0].text);
        assert.deepEqual(env.languages.map((l) => [l.language, l.runtime]), [['python', 'runsc'], ['javascript', 'runc']]);
      });
    } finally {
      await d.close();
    }
  });

  test('--allow-network python through the kubernetes backend: refused at start, saying why', { skip: !KUBERNETES, timeout: TEST_TIMEOUT_MS }, async () => {
    // Not pushed to allDaemons: this one is meant to fail.
    const d = { name: 'allow-network-kubernetes', stderr: '', exit: null };
    spawnDaemon(d, daemonArgs(['--allow-network', 'python']), daemonEnv(), 'ignore');
    await awaitExit(d);
    assert.equal(d.exit.code, 1, tail(d.stderr));
    assert.match(d.stderr, /--allow-network names python: the kubernetes backend gives sandboxes no network/);
  });

  test('--allow-network python: python sandboxes get the engine\'s network, javascript ones and callers still none', { skip: KUBERNETES, timeout: TEST_TIMEOUT_MS }, async () => {
    // On demand, so each run's container is the new one (pooled ones get the same spec).
    const d = await SdkDaemon.start('allow-network', { args: ['--allow-network', 'python', '--pool-size', '0'] });
    try {
      await withDaemon(d, async () => {
        // While each run sleeps, its container's configuration says what it got.
        const modes = {};
        for (const [tool, code] of [
          ['run_python_code', "import time\nprint(sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:]))\ntime.sleep(3)"],
          ['run_js_code', "console.log(Object.keys(require('os').networkInterfaces()).sort()); setTimeout(() => {}, 3000)"],
        ]) {
          const before = new Set((await ourContainers()).map((c) => c.id));
          const run = d.call(tool, { code });
          let mine = [];
          for (const end = Date.now() + 10_000; mine.length === 0 && Date.now() < end; await sleep(100)) {
            mine = (await ourContainers()).filter((c) => c.state === 'running' && !before.has(c.id));
          }
          assert.ok(mine.length > 0, `no container for ${tool}`);
          const info = await engineGet(`/v1.41/containers/${mine[0].id}/json`);
          const { sc } = checkRun(await run, { status: 'ok', exit_code: 0 });
          modes[tool] = { mode: info.HostConfig?.NetworkMode, out: sc.stdout };
        }
        assert.equal(modes.run_python_code.mode, 'bridge', JSON.stringify(modes));
        assert.equal(modes.run_js_code.mode, 'none', JSON.stringify(modes));
        assert.equal(modes.run_js_code.out, "[ 'lo' ]\n", JSON.stringify(modes));
        const env = JSON.parse((await d.client.readResource({ uri: 'mcp-sandboxd://environment' })).contents[0].text);
        assert.deepEqual(env.network, { python: 'bridge', javascript: 'none' });
        const all = (await d.client.listTools()).tools;
        const tools = all.filter((t) => ['run_python_code', 'run_js_code', 'execute_code'].includes(t.name));
        assert.equal(tools.length, 3);
        assert.ok(tools.every((t) => t.annotations?.openWorldHint === true), JSON.stringify(tools.map((t) => t.annotations)));
        assert.ok(tools.every((t) => /a call cannot change that/.test(t.description)), tools[0].description);
        // A syntax check runs nothing: closed to the world whatever the operator allows.
        assert.equal(all.find((t) => t.name === 'validate_code').annotations.openWorldHint, false);
        assert.equal(all.find((t) => t.name === 'list_languages').annotations.openWorldHint, false);
        for (const name of ['create_session', 'list_sessions', 'close_session']) assert.equal(all.find((t) => t.name === name).annotations.openWorldHint, false, name);
        // No argument turns it on.
        checkInvalid(await d.call('execute_code', { language: 'javascript', code: '1', network: true }), 'network');
      });
    } finally {
      await d.close();
    }
  });

  test('--pass-through-env: the program gets the value; the engine, the logs and the output never hold it', { timeout: TEST_TIMEOUT_MS }, async () => {
    // 27 bytes: its base64 form has no padding.
    const secret = `s3cr3t-${randomBytes(10).toString('hex')}`;
    const mark = '[REDACTED:MCPSBX_TEST_SECRET]';
    const d = await SdkDaemon.start('pass-through-env', {
      args: ['--log-level', 'debug'],
      env: { MCPSBX_TEST_SECRET: secret, MCPSBX_TEST_OTHER: 'nope' },
      passThrough: ['MCPSBX_TEST_SECRET'],
    });
    try {
      await withDaemon(d, async () => {
        const py = [
          'import os, base64, subprocess, sys',
          "v = os.environ.get('MCPSBX_TEST_SECRET')",
          `print(v == ${JSON.stringify(secret)}, os.environ.get('MCPSBX_TEST_OTHER'))`,
          `print(subprocess.run(['sh', '-c', 'test "$MCPSBX_TEST_SECRET" = ${secret} && echo child-ok'], capture_output=True, text=True).stdout, end='')`,
          'print(v)',
          'print(base64.b64encode(v.encode()).decode())',
          'print(v.encode().hex(), file=sys.stderr)',
        ].join('\n');
        checkRun(await d.call('run_python_code', { code: py }), {
          status: 'ok', exit_code: 0, stdout: `True None\nchild-ok\n${mark}\n${mark}\n`, stderr: `${mark}\n`,
        });
        checkRun(
          await d.call('run_js_code', { code: `console.log(process.env.MCPSBX_TEST_SECRET === ${JSON.stringify(secret)}, process.env.MCPSBX_TEST_OTHER);\nconsole.log(process.env.MCPSBX_TEST_SECRET)` }),
          { status: 'ok', exit_code: 0, stdout: `true undefined\n${mark}\n` },
        );
        // While a run holds its container, neither its configuration nor
        // anything in the engine's state directories holds the value.
        const running = d.call('run_python_code', { code: 'import time\ntime.sleep(4)' });
        // Waiting pooled sandboxes are running too, and so is an earlier
        // run's sandbox until its removal: one may be gone between the
        // listing and its inspection, so list again until one is inspected.
        let inspected = 0;
        for (const end = Date.now() + 10_000; inspected === 0 && Date.now() < end; await sleep(100)) {
          const live = (await ourContainers()).filter((c) => c.state === 'running');
          for (const c of live) {
            let info;
            try {
              info = await engineGet(`/v1.41/containers/${c.id}/json`);
            } catch (e) {
              // Docker: 404; Podman: 500 "no such container".
              if (/HTTP 404|no such container/i.test(e.message)) continue;
              throw e;
            }
            inspected++;
            assert.ok(!JSON.stringify(info).includes(secret), `container ${c.short} shows the secret: ${JSON.stringify(info.Config?.Env)}`);
          }
        }
        assert.ok(inspected > 0, 'no running container of this suite could be inspected');
        assert.deepEqual(await engineFilesContaining(secret), [], 'engine state holds the secret during a run');
        checkRun(await running, { status: 'ok', exit_code: 0 });
        assert.deepEqual(await engineFilesContaining(secret), [], 'engine state holds the secret after the runs');
      });
    } finally {
      await d.close();
    }
    assert.ok(d.stderr.length > 0, 'debug logging produced nothing');
    assert.ok(!d.stderr.includes(secret), `the secret value appears in the daemon's stderr:\n${tail(d.stderr)}`);
  });

  test('engine unreachable: still initializes and lists tools; calls fail fast naming the socket', { timeout: TEST_TIMEOUT_MS }, async () => {
    // Through the kubernetes backend: an API server address nothing listens on.
    const { args, sock } = KUBERNETES ? deadBackend() : { args: ['--engine', 'unix:///tmp/nonexistent.sock'], sock: '/tmp/nonexistent.sock' };
    assert.ok(KUBERNETES || !existsSync(sock), `${sock} exists; this test needs it absent`);
    const d = await SdkDaemon.start('unreachable', { args });
    try {
      await withDaemon(d, async () => {
        assert.equal(d.tools.length, 9);
        // Facts without versions, not a failure; no probe blocks the answer.
        const facts = await d.call('list_languages', {});
        assert.equal(facts.isError, false, JSON.stringify(facts));
        for (const l of facts.structuredContent.languages) {
          assert.equal(l.version, null, JSON.stringify(l));
          assert.ok(l.probing === true || l.version_error.includes(sock), JSON.stringify(l));
        }
        for (const [name, args] of [
          ['run_python_code', { code: 'print(1)' }],
          ['execute_code', { language: 'javascript', code: 'console.log(1)' }],
          ['validate_code', { language: 'python', code: 'x = 1' }],
        ]) {
          const t0 = Date.now();
          const r = await d.call(name, args);
          const took = Date.now() - t0;
          assert.equal(r.isError, true, JSON.stringify(r));
          // Fails at once, not at the call's time limit (a hang guard).
          assert.ok(took < 15_000, `${name} took ${took} ms to fail`);
          const text = textOf(r);
          assert.ok(text.includes(sock), `text should name ${sock}: ${text}`);
          if (r.structuredContent) {
            assert.equal(r.structuredContent.status, 'error');
            assert.ok((r.structuredContent.message || '').includes(sock), JSON.stringify(r.structuredContent));
          }
        }
      });
    } finally {
      await d.close();
    }
  });
});

describe('raw JSON-RPC on stdio', { timeout: 600_000 }, () => {
  const rt = (name, fn, { args = [] } = {}) =>
    test(name, { timeout: TEST_TIMEOUT_MS }, async () => {
      const d = new RawDaemon(name, args);
      try {
        await withDaemon(d, () => fn(d));
      } finally {
        await d.close();
      }
    });

  rt('2024-11-05 is echoed; tools have no outputSchema/title; results no structuredContent', async (d) => {
    const init = await d.initialize('2024-11-05');
    assert.equal(init.result?.protocolVersion, '2024-11-05', JSON.stringify(init));
    assert.equal(init.result.serverInfo.name, 'mcp-sandboxd');
    assert.ok(init.result.capabilities.tools);
    assert.ok(init.result.capabilities.logging);
    const list = await d.request('tools/list', {}, 2);
    assert.equal(list.result.tools.length, 9);
    for (const tool of list.result.tools) {
      assert.equal(tool.outputSchema, undefined, `${tool.name} has outputSchema in 2024-11-05`);
      assert.equal(tool.title, undefined, `${tool.name} has title in 2024-11-05`);
      assert.ok(tool.inputSchema && tool.description);
    }
    const call = await d.request('tools/call', { name: 'run_python_code', arguments: { code: "print('old client')" } }, 3);
    assert.equal(call.result.structuredContent, undefined, JSON.stringify(call.result));
    assert.equal(call.result.isError, false);
    assert.ok(textOf(call.result).includes('old client'));
    const bad = await d.request('tools/call', { name: 'run_python_code', arguments: { code: 'import sys; sys.exit(2)' } }, 4);
    assert.equal(bad.result.isError, true);
    assert.equal(bad.result.structuredContent, undefined);
  });

  test('every known version is echoed; an unknown one gets 2025-11-25', { timeout: TEST_TIMEOUT_MS }, async () => {
    for (const v of ['2025-03-26', '2025-06-18', '2025-11-25', '1999-01-01']) {
      const d = new RawDaemon(`version-${v}`);
      try {
        await withDaemon(d, async () => {
          const init = await d.initialize(v, 1);
          assert.equal(init.result?.protocolVersion, v === '1999-01-01' ? '2025-11-25' : v, JSON.stringify(init));
          const list = await d.request('tools/list', {}, 2);
          const hasOutput = list.result.tools.every((x) => x.outputSchema);
          assert.equal(hasOutput, v !== '2025-03-26', `outputSchema presence for ${v}`);
        });
      } finally {
        await d.close();
      }
    }
  });

  rt('ping before initialize works; tools/list before initialize is an error', async (d) => {
    const ping = await d.request('ping', undefined, 1);
    assert.deepEqual(ping.result, {}, JSON.stringify(ping));
    const list = await d.request('tools/list', {}, 2);
    assert.equal(list.result, undefined, JSON.stringify(list));
    assert.equal(typeof list.error?.code, 'number', JSON.stringify(list));
    assert.equal(typeof list.error.message, 'string');
    const call = await d.request('tools/call', { name: 'run_python_code', arguments: { code: 'print(1)' } }, 3);
    assert.equal(call.result, undefined, JSON.stringify(call));
    assert.ok(call.error, JSON.stringify(call));
  });

  rt('malformed JSON → -32700 with id null; the session continues', async (d) => {
    d.sendLine('{"jsonrpc": "2.0", "id": 1, "method": "ping"');
    const r = await d.recv();
    assert.equal(r.jsonrpc, '2.0');
    assert.equal(r.id, null, JSON.stringify(r));
    assert.equal(r.error?.code, -32700, JSON.stringify(r));
    d.sendLine('not json at all');
    assert.equal((await d.recv()).error?.code, -32700);
    assert.deepEqual((await d.request('ping', undefined, 2)).result, {});
  });

  rt('request without method → -32600', async (d) => {
    d.send({ jsonrpc: '2.0', id: 1 });
    const r = await d.recv();
    assert.equal(r.error?.code, -32600, JSON.stringify(r));
    assert.ok(r.id === 1 || r.id === null, JSON.stringify(r));
    d.send({ jsonrpc: '1.0', id: 2, method: 'ping' });
    assert.equal((await d.recv()).error?.code, -32600);
    assert.deepEqual((await d.request('ping', undefined, 3)).result, {});
  });

  rt('unknown method → -32601', async (d) => {
    await d.initialize('2025-11-25');
    const r = await d.request('no/such/method', {}, 7);
    assert.equal(r.error?.code, -32601, JSON.stringify(r));
  });

  rt('a notification gets no reply', async (d) => {
    await d.initialize('2025-11-25');
    d.send({ jsonrpc: '2.0', method: 'notifications/something_unknown', params: {} });
    d.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await d.expectSilence(300);
    const r = await d.request('ping', undefined, 42);
    assert.deepEqual(r.result, {});
  });

  rt('a batch on a 2025-03-26 session returns an array', async (d) => {
    await d.initialize('2025-03-26');
    d.sendLine(
      JSON.stringify([
        { jsonrpc: '2.0', id: 10, method: 'ping' },
        { jsonrpc: '2.0', method: 'notifications/something' },
        { jsonrpc: '2.0', id: 11, method: 'tools/list' },
        { jsonrpc: '2.0', id: 12, method: 'tools/call', params: { name: 'run_python_code', arguments: { code: "print('in batch')" } } },
      ]),
    );
    const r = await d.recv(CALL_TIMEOUT_MS);
    assert.ok(Array.isArray(r), `expected an array: ${JSON.stringify(r).slice(0, 300)}`);
    assert.deepEqual(r.map((x) => x.id).sort(), [10, 11, 12]);
    const byId = Object.fromEntries(r.map((x) => [x.id, x]));
    assert.deepEqual(byId[10].result, {});
    assert.equal(byId[11].result.tools.length, 9);
    assert.ok(textOf(byId[12].result).includes('in batch'));
    assert.equal(byId[12].result.isError, false);
  });

  rt('a batch on a 2025-11-25 session → -32600', async (d) => {
    await d.initialize('2025-11-25');
    d.sendLine(JSON.stringify([{ jsonrpc: '2.0', id: 10, method: 'ping' }]));
    const r = await d.recv();
    assert.ok(!Array.isArray(r), JSON.stringify(r));
    assert.equal(r.error?.code, -32600, JSON.stringify(r));
    assert.deepEqual((await d.request('ping', undefined, 11)).result, {});
  });

  rt(
    'an over-long line with --max-message-bytes 4096 → error; the session continues',
    async (d) => {
      await d.initialize('2025-11-25');
      const big = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'run_python_code', arguments: { code: '#' + 'x'.repeat(20_000) } } });
      d.sendLine(big);
      const r = await d.recv();
      assert.ok(r.error, `expected an error: ${JSON.stringify(r).slice(0, 300)}`);
      assert.equal(typeof r.error.code, 'number');
      const ping = await d.request('ping', undefined, 6);
      assert.deepEqual(ping.result, {});
      const ok = await d.request('tools/call', { name: 'run_python_code', arguments: { code: "print('after')" } }, 7);
      assert.ok(textOf(ok.result).includes('after'));
    },
    // --max-message-bytes must be at least --max-code-bytes (default 4 MiB).
    { args: ['--max-message-bytes', '4096', '--max-code-bytes', '1024'] },
  );
});

test('closing stdin during a run: the daemon exits and removes the container', { timeout: TEST_TIMEOUT_MS }, async () => {
  const marker = `${RUN_ID}-kill`;
  const d = new RawDaemon('kill-client', [], { [RUN_MARKER]: marker });
  try {
    await withDaemon(d, async () => {
      await d.initialize('2025-11-25');
      d.send({
        jsonrpc: '2.0', id: 2, method: 'tools/call',
        params: { name: 'execute_code', arguments: { language: 'python', code: "import time\nprint('started', flush=True)\ntime.sleep(120)", timeout_ms: 200_000 } },
      });
      // Wait until the run's container exists and is running.
      const deadline = Date.now() + 30_000;
      let running = [];
      while (Date.now() < deadline) {
        running = (await ourContainers(marker)).filter((c) => c.state === 'running');
        if (running.length) break;
        await sleep(200);
      }
      assert.ok(running.length > 0, 'no running container of this daemon seen');
      await sleep(1000);
      assert.deepEqual(d.lines, [], 'the run must still be in flight when stdin closes');
      const t0 = Date.now();
      d.proc.stdin.end();
      await Promise.race([d.exited, exitWait(EXIT_WAIT_MS)]);
      assert.ok(d.exit, `daemon still running ${EXIT_WAIT_MS} ms after stdin closed`);
      assert.equal(d.exit.code, 0, `daemon exit: ${JSON.stringify(d.exit)}`);
      const exitMs = Date.now() - t0;
      const left = await waitNoContainers(marker, 5000);
      assert.deepEqual(left, [], `containers left after the daemon exited (${exitMs} ms): ${JSON.stringify(left)}`);
      // An abandoned request may get its reply or none; nothing else on stdout.
      for (const line of d.lines) {
        const m = JSON.parse(line);
        assert.equal(m.id, 2, `unexpected message: ${line}`);
      }
    });
  } finally {
    await d.close();
  }
});

test('every daemon exited cleanly and no container is left', { timeout: 120_000 }, async () => {
  await checkDaemonsAndContainers();
});
