// The WASM approach of some peer servers, as a baseline for the warm-pool
// benchmark (tests/bench/pool.mjs): a stdio MCP server built with the
// official SDK (McpServer + StdioServerTransport) whose run_python_code tool
// runs the code in Pyodide (npm `pyodide`, loaded from the package's own
// directory).
//
//   node tests/bench/pyodide-server.mjs [--fresh]
//
// Default: one Pyodide, loaded before the server starts answering, kept warm
// and reused by every call (no isolation between calls: a program sees what
// the previous ones left). --fresh: a new Pyodide per call.
//
// Nothing may come from the network: fetch and node's http/https clients are
// replaced before Pyodide loads by functions that refuse and count. Every result
// says how many such attempts there were so far (structuredContent.network_requests),
// and the Pyodide version and load time; stderr logs them too.

import http from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';
import path from 'node:path';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as z from 'zod/v4';

const FRESH = process.argv.includes('--fresh');

let networkRequests = 0;
const refused = [];
function refuse(what) {
  networkRequests++;
  refused.push(String(what).slice(0, 200));
  process.stderr.write(`pyodide-server: refused a network request: ${what}\n`);
}
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = typeof input === 'string' ? input : input?.url ?? String(input);
  // Local files are not network (Pyodide reads its files with fs in node).
  if (/^file:/i.test(url)) return realFetch(input, init);
  refuse(`fetch ${url}`);
  throw new TypeError(`network access refused by pyodide-server: ${url}`);
};
for (const [name, mod] of [['http', http], ['https', https]]) {
  for (const fn of ['request', 'get']) {
    mod[fn] = (...args) => {
      refuse(`${name}.${fn} ${typeof args[0] === 'string' ? args[0] : JSON.stringify(args[0]?.host ?? args[0]?.hostname ?? '')}`);
      throw new Error(`network access refused by pyodide-server (${name}.${fn})`);
    };
  }
}

const require = createRequire(import.meta.url);
const pkgDir = path.dirname(require.resolve('pyodide/package.json'));
const version = require('pyodide/package.json').version;
const { loadPyodide } = await import('pyodide');

let out = '';
let err = '';
async function newPyodide() {
  const t = performance.now();
  // indexURL: the package's own files (wasm, stdlib zip, lock file).
  const py = await loadPyodide({
    indexURL: pkgDir + path.sep,
    stdout: (s) => (out += s + '\n'),
    stderr: (s) => (err += s + '\n'),
  });
  return { py, ms: performance.now() - t };
}

let warm = null;
let lastLoadMs = null;
if (!FRESH) {
  warm = await newPyodide();
  lastLoadMs = warm.ms;
  process.stderr.write(`pyodide-server: pyodide ${version} loaded from ${pkgDir} in ${warm.ms.toFixed(0)} ms\n`);
}

const server = new McpServer({ name: 'pyodide-baseline', version: '1.0.0' });
server.registerTool(
  'run_python_code',
  {
    title: 'Run Python code',
    description: `Run Python code in Pyodide ${version} (${FRESH ? 'a fresh interpreter per call' : 'one interpreter reused by every call'}).`,
    inputSchema: { code: z.string().describe('Python source to run.') },
  },
  async ({ code }) => {
    const t0 = performance.now();
    let inst = warm;
    if (FRESH) {
      inst = await newPyodide();
      lastLoadMs = inst.ms;
    }
    out = '';
    err = '';
    const status = 'ok';
    let exitCode = 0;
    try {
      await inst.py.runPythonAsync(code);
    } catch (e) {
      exitCode = 1;
      err += String(e?.message ?? e);
    }
    const sc = {
      status,
      exit_code: exitCode,
      stdout: out,
      stderr: err,
      duration_ms: performance.now() - t0,
      language: 'python',
      pyodide_version: version,
      load_ms: lastLoadMs,
      network_requests: networkRequests,
      ...(refused.length ? { refused: refused.slice(0, 5) } : {}),
    };
    return { content: [{ type: 'text', text: out + (err ? `--- stderr ---\n${err}` : '') }], structuredContent: sc, isError: exitCode !== 0 };
  },
);

await server.connect(new StdioServerTransport());
