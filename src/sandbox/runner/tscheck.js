// mcp-sandboxd's warm TypeScript checker. A pooled TypeScript sandbox
// starts it (through the generic runner) before any code arrives:
//
//   node -e <this file> -- <tsc's options, as in the language's typecheck>
//
// Loading the compiler, then parsing and binding the standard library and
// @types/node, is nearly all of a cold `tsc` run (about a second); here it
// happens while the sandbox waits. Then it reads one line on stdin, the
// path of the file to check, prints tsc's --pretty false diagnostics on
// stdout, then the end mark, and exits like tsc: 0 when there is no error,
// 2 when there are. Any other end (no line, a bad option, a missing
// module, a crash, no end mark) is its own failure, after which the runner
// checks with the cold command (runner.pl, warm_check).
'use strict';

const CHECKED = '\0\x1emcpsbx-checked\n';

let ts;
try {
  ts = require('typescript');
} catch {
  process.exit(4);
}

const cli = ts.parseCommandLine(process.argv.slice(1).filter((a) => a !== '--'));
if (cli.errors.length > 0 || cli.fileNames.length > 0) process.exit(3);
const options = { ...cli.options, noEmit: true };

// Every file the compiler reads is parsed once and kept: the library's
// declarations come back already bound to the next program. The checked
// file is read fresh.
const WARM_NAME = '/nonexistent/mcpsbx-warm.ts';
// Touches what most programs do (a module import, generics, a type error
// and its message) so that compiling those paths is not the first run's.
const WARM_CODE = [
  "import * as fs from 'fs';",
  "const n: number = 'x';",
  "export const s: string = [1, 2].map((x) => x * n).join(',') + String(fs.existsSync('/'));",
  "async function f(): Promise<Map<string, number[]>> { return new Map(); }",
  'f().then((m) => console.log(m.size, process.argv.length));',
  '',
].join('\n');
const base = ts.createCompilerHost(options);
const kept = new Map();
let target = null;
const host = {
  ...base,
  getSourceFile(name, version, onError, fresh) {
    if (name === WARM_NAME) return ts.createSourceFile(name, WARM_CODE, version);
    if (name === target) return base.getSourceFile(name, version, onError, fresh);
    let sf = kept.get(name);
    if (!sf) {
      sf = base.getSourceFile(name, version, onError, fresh);
      if (sf) kept.set(name, sf);
    }
    return sf;
  },
  fileExists: (name) => name === WARM_NAME || base.fileExists(name),
};
// The warm-up: a small program, checked and its errors formatted, so the
// standard library is parsed and bound and the checker's globals are built
// once.
let old = ts.createProgram([WARM_NAME], options, host);
ts.formatDiagnostics(ts.getPreEmitDiagnostics(old), {
  getCanonicalFileName: (f) => f,
  getCurrentDirectory: () => '/',
  getNewLine: () => '\n',
});

let line = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  line += chunk;
  const nl = line.indexOf('\n');
  if (nl < 0) {
    if (line.length > 4096) process.exit(3);
    return;
  }
  process.stdin.pause();
  check(line.slice(0, nl));
});
process.stdin.on('end', () => process.exit(3));

function check(file) {
  if (file === '' || file.includes('\0')) process.exit(3);
  target = ts.sys.resolvePath(file);
  const program = ts.createProgram([target], options, host, old);
  old = null;
  const diagnostics = ts.sortAndDeduplicateDiagnostics(ts.getPreEmitDiagnostics(program));
  const text = ts.formatDiagnostics(diagnostics, {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => process.cwd(),
    getNewLine: () => '\n',
  });
  const failed = diagnostics.some((d) => d.category === ts.DiagnosticCategory.Error);
  // Written synchronously: the exit must not cut a pipe write short.
  const fs = require('fs');
  const all = Buffer.from(`${text}${CHECKED}`);
  for (let off = 0; off < all.length; ) off += fs.writeSync(1, all, off);
  process.exit(failed ? 2 : 0);
}
