// The official MCP Inspector's schema portability lint over the daemon's
// tools/list (`--strict`): every tool's inputSchema and outputSchema must
// draw no error and no warning, e.g. no `type` arrays, which clients that
// map schemas onto a single-type dialect (Gemini's OpenAPI subset) reject.
//
//   node --test tests/integration/inspector.test.mjs
//
// Runs `npx --no-install @modelcontextprotocol/inspector --cli` (pinned in
// tests/package.json) from tests/, with the daemon over stdio. A control run
// against a stand-in server that serves a type array proves this Inspector
// still reports one, so a clean result is not a lint that never ran.
//
// Environment: MCPSANDBOXD_BIN, MCPSANDBOXD_ENGINE (see lib.mjs). tools/list
// needs no engine, so this takes a second or two per pass.

import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { ROOT, BIN, daemonArgs, tail } from './lib.mjs';

const TOOLS = ['run_python_code', 'run_js_code', 'execute_code', 'validate_code', 'list_languages', 'create_session', 'list_sessions', 'close_session', 'install_packages'];
const RUN_TIMEOUT_MS = 60_000;
const SANITIZER_RE = /AddressSanitizer|LeakSanitizer|runtime error:|ThreadSanitizer/;

/** Runs the Inspector CLI's tools/list --strict against the stdio server
 * `command args`; resolves to {code, signal, stdout, stderr}. */
function inspect(command, args) {
  // A scratch HOME: the Inspector keeps a catalog and client config there.
  const home = mkdtempSync(path.join(tmpdir(), 'mcpsbx-inspector-'));
  // The Inspector hands its stdio server a minimal environment; the
  // sanitizer settings of the asan pass go through -e.
  const serverEnv = [];
  for (const k of ['ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS']) {
    if (process.env[k] !== undefined) serverEnv.push('-e', `${k}=${process.env[k]}`);
  }
  const argv = ['--no-install', '@modelcontextprotocol/inspector', '--cli', ...serverEnv,
    '--method', 'tools/list', '--strict', '--', command, ...args];
  return new Promise((resolve, reject) => {
    const p = spawn('npx', argv, {
      cwd: path.join(ROOT, 'tests'),
      env: { PATH: process.env.PATH, HOME: home, LANG: process.env.LANG ?? 'C.UTF-8' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c) => (stdout += c.toString('utf8')));
    p.stderr.on('data', (c) => (stderr += c.toString('utf8')));
    const timer = setTimeout(() => p.kill('SIGKILL'), RUN_TIMEOUT_MS);
    p.once('error', (e) => {
      clearTimeout(timer);
      rmSync(home, { recursive: true, force: true });
      reject(e);
    });
    p.once('close', (code, signal) => {
      clearTimeout(timer);
      rmSync(home, { recursive: true, force: true });
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** The Inspector's findings: [{severity, tool}] from its --strict report. */
function findings(stderr) {
  return [...stderr.matchAll(/^(Error|Warning): tool "([^"]*)"$/gm)].map((m) => ({ severity: m[1], tool: m[2] }));
}

// Answers initialize and tools/list with one tool whose outputSchema has a
// type array; any other request gets "method not found".
const STAND_IN = `
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\\n');
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === 'initialize') {
    send({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
      serverInfo: { name: 'stand-in', version: '1.0.0' } } });
  } else if (m.method === 'tools/list') {
    send({ id: m.id, result: { tools: [{ name: 'nullable', inputSchema: { type: 'object' },
      outputSchema: { type: 'object', properties: { n: { type: ['integer', 'null'] } } } }] } });
  } else {
    send({ id: m.id, error: { code: -32601, message: 'Method not found' } });
  }
});
`;

describe('MCP Inspector --strict', { timeout: 2 * RUN_TIMEOUT_MS + 10_000 }, () => {
  let run;
  let context;

  before(async () => {
    assert.ok(existsSync(BIN), `daemon binary ${BIN} not found (run make, or set MCPSANDBOXD_BIN)`);
    run = await inspect(BIN, daemonArgs());
    context = `exit ${run.code} (signal ${run.signal})\n--- stderr ---\n${tail(run.stderr)}\n--- stdout ---\n${tail(run.stdout, 2000)}`;
  });

  test('the Inspector still reports a type array (control)', async () => {
    const control = await inspect(process.execPath, ['-e', STAND_IN]);
    const ctx = `exit ${control.code}\n${tail(control.stderr)}`;
    assert.deepEqual(findings(control.stderr), [{ severity: 'Warning', tool: 'nullable' }], ctx);
    assert.match(control.stderr, /0 errors, 1 warning across 1 tool\./, ctx);
  });

  test('tools/list --strict exits 0 and lists every tool', () => {
    assert.equal(run.code, 0, context);
    const listed = JSON.parse(run.stdout).tools.map((t) => t.name);
    assert.deepEqual(listed, TOOLS, context);
    assert.doesNotMatch(run.stderr, SANITIZER_RE, context);
  });

  test('no finding at all (no "Schema portability" summary either)', () => {
    assert.deepEqual(findings(run.stderr), [], context);
    assert.doesNotMatch(run.stderr, /Schema portability|\d+ errors?, \d+ warnings? across/, context);
  });

  for (const name of TOOLS) {
    test(`${name}: zero errors and zero warnings`, () => {
      const mine = findings(run.stderr).filter((f) => f.tool === name);
      assert.deepEqual(mine, [], context);
    });
  }
});
