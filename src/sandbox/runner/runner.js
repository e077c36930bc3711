// mcp-sandboxd in-container runner for Node.js (protocol: src/sandbox/runner/runner.h).
// Started as `node -e <this file>`; waits on stdin for one framed request,
// runs the code in this process as the main module (CommonJS, or an ES
// module when the code needs it), and writes the completion record on
// stderr and stdout when the process exits. Started as
// `node -e <this file> <modules>` it is a warm runner: it loads the
// comma-separated built-in modules first, says it is ready, then waits.
// A request with "session": {"begin": true} makes it a session runner
// (runner.h, "interpreter" mode): it answers with a record, then evaluates
// each cell request's code in one REPL of Node's own (`repl`) in this
// process, as if typed at its prompt, until its stdin ends. A small copier
// process reads the requests; an interrupt frame for the running cell
// becomes a SIGINT that the REPL turns into an exception in the cell's
// code, or ends the cell's top-level await.
// A request's "packages" (runner.h) are linked into node_modules/ of the
// working directory for its run (a cell's until it ends); a session cell's
// "add_packages" for the rest of the session.
// Node >= 18, built-ins only.
// Everything is inside one function so the program sees none of it.
(function (require) {
  'use strict';
  const fs = require('fs');
  const path = require('path');
  const Module = require('module');
  const util = require('util');
  const vm = require('vm');

  const PREFIX = Buffer.from('\u0000\u001emcpsbx-done:', 'latin1');
  const READY = Buffer.from('\u0000\u001emcpsbx-ready\n', 'latin1');
  const GO = Buffer.from('\u0000\u001emcpsbx-go\n', 'latin1');
  const MAX_REQUEST = 64 << 20;
  const RUNNER_EXIT = 76; // EX_PROTOCOL: the runner itself failed
  const MAX_CONTROL = 64; // in a session: "mcpsbx/1 interrupt <nonce>" too
  const CJS_PARAMS = ['exports', 'require', 'module', '__filename', '__dirname'];
  const ACK_MS = 50; // a session runner's longest wait to take an interrupt itself (requestCopier)
  // SyntaxError messages only ES module syntax explains (see needsESM).
  const ESM_ONLY = [
    'Cannot use import statement outside a module',
    "Unexpected token 'export'",
    "Cannot use 'import.meta' outside a module",
  ];

  // Bound now: the program may replace any of these.
  const proc = process;
  const origEmit = process.emit;
  const origReallyExit = process.reallyExit;
  const writeSync = fs.writeSync;
  const readSync = fs.readSync;
  const stringify = JSON.stringify;

  let nonce = null;
  let outputsSpec = null; // the request's outputs, once the program may run
  let outputsCwd = null;
  let spareFds = []; // kept back for returning the files (see below)
  let recorded = false;
  let fatal = null; // {err, origin} once an exception is known to be fatal
  let inCells = false; // a session runner running cells: failures are a cell's
  // Package sets (runner.h, "packages"): where they are. The host tests
  // move the root with MCPSBX_PACKAGES_ROOT (they cannot make /opt/...); it
  // is read here, before any request's env is applied, so no caller can.
  const PACKAGES_ROOT = (proc.env.MCPSBX_PACKAGES_ROOT || '/opt/mcpsbx-packages').replace(/\/+$/, '');
  const MAX_PACKAGE_SETS = 8; // RUNNER_MAX_PACKAGE_SETS: per request, and per session
  const MAX_PACKAGE_PATH = 256; // RUNNER_MAX_PACKAGE_PATH, with the real root

  const sleepCell = new Int32Array(new SharedArrayBuffer(4));
  // The program must not see the runner: no source in process._eval, no
  // -e/-p in execArgv (a child it forks would run the runner), argv only
  // the node binary.
  function forgetEval() {
    delete proc._eval;
    const execArgv = [];
    for (let i = 0; i < proc.execArgv.length; i++) {
      const a = proc.execArgv[i];
      if (a === '-e' || a === '--eval' || a === '-p' || a === '--print') i++;
      else if (!a.startsWith('--eval=') && !a.startsWith('--print=')) execArgv.push(a);
    }
    proc.execArgv = execArgv;
    proc.argv.length = 1;
  }

  function sleep(ms) {
    Atomics.wait(sleepCell, 0, 0, ms);
  }

  // stdio may be non-blocking (libuv sets O_NONBLOCK on pipes it opens):
  // retry EAGAIN with a short sleep instead of failing.
  function writeAll(fd, buf) {
    let off = 0;
    while (off < buf.length) {
      try {
        off += writeSync(fd, buf, off, buf.length - off);
      } catch (e) {
        if (e.code === 'EAGAIN' || e.code === 'EWOULDBLOCK') sleep(1);
        else if (e.code !== 'EINTR') throw e;
      }
    }
  }

  function readSome(buf, off, len) {
    for (;;) {
      try {
        return readSync(0, buf, off, len, null);
      } catch (e) {
        if (e.code === 'EAGAIN' || e.code === 'EWOULDBLOCK') sleep(1);
        else if (e.code === 'EOF') return 0;
        else if (e.code !== 'EINTR') throw e;
      }
    }
  }

  function writeRecord(code, memoryError, runnerError, check) {
    if (recorded) return;
    recorded = true;
    if (nonce === null) return;
    const rec = { exit_code: code, memory_error: memoryError };
    if (runnerError !== undefined) rec.runner_error = runnerError;
    if (check !== undefined) rec.check = check;
    if (outputsSpec !== null && runnerError === undefined && check === undefined) {
      for (const fd of spareFds) {
        try {
          fs.closeSync(fd);
        } catch (e) {
          // the program closed it
        }
      }
      try {
        rec.files = sendOutputs(outputsSpec);
      } catch (e) {
        rec.exit_code = RUNNER_EXIT;
        rec.runner_error = 'cannot return the output files: ' + String(e && e.message ? e.message : e).slice(0, 300);
      }
    }
    emitRecord(rec);
  }

  function emitRecord(rec) {
    const line = Buffer.concat([PREFIX, Buffer.from(nonce + ':' + stringify(rec) + '\n')]);
    // stderr first, then stdout: the engine copies the two streams
    // independently, so the daemon needs an end mark on each.
    for (const fd of [2, 1]) {
      try {
        writeAll(fd, line);
      } catch (e) {
        // That stream is gone; the daemon falls back to EOF for it.
      }
    }
  }

  // ---- package sets (runner.h, "packages") --------------------------------
  // The request's list under key, checked as runner_packages.h does, or a
  // string: why it is refused.
  function packageSets(v, key) {
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v) || v.length > MAX_PACKAGE_SETS)
      return 'request ' + key + ' must be a list of at most ' + MAX_PACKAGE_SETS + ' package sets';
    const out = [];
    for (const d of v) {
      const ok =
        typeof d === 'string' &&
        d.length <= MAX_PACKAGE_PATH &&
        d.startsWith(PACKAGES_ROOT + '/') &&
        d
          .slice(PACKAGES_ROOT.length + 1)
          .split('/')
          .every((c) => /^[A-Za-z0-9._-]+$/.test(c) && c !== '.' && c !== '..');
      if (!ok) {
        const shown = typeof d === 'string' ? stringify(d.slice(0, 300)) : typeof d;
        return 'request ' + key + ': ' + shown + ' is not a package set directory under ' + PACKAGES_ROOT +
          "/ (no empty, '.' or '..' parts)";
      }
      let isDir = false;
      try {
        isDir = fs.statSync(d).isDirectory();
      } catch (e) {
        // not there
      }
      if (!isDir) return 'request ' + key + ': the package set ' + d + ' is not there';
      if (!out.includes(d)) out.push(d);
    }
    return out;
  }

  // Links every package at the top of each set's node_modules/ (each
  // @scope/name) into dir/node_modules/, a real directory, so bare names
  // resolve from the program's files whether required or imported (ES
  // modules have no search path to add to), and a package's own requires
  // from its real place in its set. An entry already there is kept: the
  // caller's, or an earlier set's. Returns the links made. Throws.
  function linkPackages(dir, sets) {
    const made = [];
    const list = (d) => {
      try {
        return fs.readdirSync(d).sort();
      } catch (e) {
        if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return [];
        throw e;
      }
    };
    const ensureDir = (d) => {
      try {
        fs.mkdirSync(d, 0o755);
      } catch (e) {
        if (e.code !== 'EEXIST') throw e;
      }
      if (!fs.lstatSync(d).isDirectory()) throw new Error(path.relative(dir, d) + ' is not a directory');
    };
    const link = (target, at) => {
      try {
        fs.symlinkSync(target, at);
        made.push(at);
      } catch (e) {
        if (e.code !== 'EEXIST') throw e;
      }
    };
    const nm = path.join(dir, 'node_modules');
    for (const set of sets) {
      const src = path.join(set, 'node_modules');
      for (const name of list(src)) {
        if (name.startsWith('.')) continue; // .bin, .package-lock.json
        ensureDir(nm);
        if (!name.startsWith('@')) {
          link(path.join(src, name), path.join(nm, name));
          continue;
        }
        ensureDir(path.join(nm, name));
        for (const sub of list(path.join(src, name)))
          if (!sub.startsWith('.')) link(path.join(src, name, sub), path.join(nm, name, sub));
      }
    }
    return made;
  }

  function unlinkPackages(links) {
    for (const at of links) {
      try {
        fs.unlinkSync(at);
      } catch (e) {
        // the program took it away already
      }
    }
  }

  // One of linkPackages' links: not the program's file to return.
  function isPackageLink(rel) {
    try {
      return fs.readlinkSync(rel).startsWith(PACKAGES_ROOT + '/');
    } catch (e) {
      return false;
    }
  }

  // ---- files in and out (src/sandbox/runner/runner.h) ------------------------
  // The daemon checked every path (sandbox/output/workpath.h); this is the same
  // rule again, and O_EXCL|O_NOFOLLOW: nothing existing is replaced and no
  // link is followed.
  function writeInputs(files) {
    const C = fs.constants;
    for (const f of files) {
      if (f === null || typeof f !== 'object') return runnerFail('request files: an entry is not an object');
      const p = f.path;
      if (
        typeof p !== 'string' ||
        typeof f.content !== 'string' ||
        (f.encoding !== 'utf-8' && f.encoding !== 'base64') ||
        p === '' ||
        p.startsWith('/') ||
        p.includes('\0') ||
        p.split('/').some((c) => c === '' || c === '.' || c === '..')
      )
        return runnerFail('request files: bad entry ' + stringify(typeof p === 'string' ? p.slice(0, 200) : null));
      try {
        const data = Buffer.from(f.content, f.encoding === 'base64' ? 'base64' : 'utf8');
        const parent = path.dirname(p);
        if (parent !== '.') fs.mkdirSync(parent, { recursive: true, mode: 0o755 });
        writeFile(p, data, 0o644);
      } catch (e) {
        return runnerFail('cannot write the file ' + stringify(p.slice(0, 200)) + ': ' + e.message);
      }
    }
    return true;
  }

  function writeNewFile(p, data, mode) {
    const C = fs.constants;
    const fd = fs.openSync(p, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, mode);
    try {
      writeAll(fd, data);
    } finally {
      fs.closeSync(fd);
    }
  }

  // A new file; in a session's cell, where an earlier cell may have left
  // one of that name, written beside it and renamed over it (rename
  // replaces a symlink itself, never its target).
  function writeFile(p, data, mode) {
    if (!inCells) return writeNewFile(p, data, mode);
    const tmp = path.join(path.dirname(p), '.mcpsbx-new-' + proc.pid);
    fs.rmSync(tmp, { force: true });
    writeNewFile(tmp, data, mode);
    try {
      fs.renameSync(tmp, p);
    } catch (e) {
      fs.rmSync(tmp, { force: true });
      throw e;
    }
  }

  const FRAME_RAW = 3000; // bytes per D frame: a whole frame stays under PIPE_BUF
  const WALK_LIMIT = 20000; // directory entries looked at, at most
  const LEFT_REPORT = 20; // left-out files named, at most

  // One write of at most 4096 bytes: a pipe (and a unix socket) takes it
  // whole, so a process still writing to stdout cannot split it.
  function frame(kind, payload) {
    writeAll(1, Buffer.concat([PREFIX, Buffer.from(nonce + ':' + kind, 'latin1'), payload, Buffer.from('\n')]));
  }

  // A glob segment (*, ?, [...]) as a RegExp over one name.
  function segmentRegExp(seg) {
    let re = '';
    for (let i = 0; i < seg.length; i++) {
      const c = seg[i];
      if (c === '*') re += '[^/]*';
      else if (c === '?') re += '[^/]';
      else if (c === '[') {
        const end = seg.indexOf(']', i + 2);
        if (end < 0) {
          re += '\\[';
          continue;
        }
        let body = seg.slice(i + 1, end);
        const neg = body[0] === '!' || body[0] === '^';
        if (neg) body = body.slice(1);
        re += '[' + (neg ? '^' : '') + body.replace(/[\\\]^]/g, '\\$&') + ']';
        i = end;
      } else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
    try {
      return new RegExp('^' + re + '$', 's');
    } catch (e) {
      return { test: (name) => name === seg };
    }
  }

  // Returns the record's files object. The walk never follows a symlink:
  // it lists with lstat and descends only into real directories.
  function sendOutputs(spec) {
    const C = fs.constants;
    const counts = { sent: 0, left_out: 0 };
    try {
      proc.chdir(outputsCwd); // the program may have left it
    } catch (e) {
      counts.cwd_gone = true;
      return counts;
    }
    const maxFiles = spec.max_files | 0;
    const maxFile = Number(spec.max_file_bytes) || 0;
    let totalLeft = Number(spec.max_total_bytes) || 0;
    const lefts = [];
    const leaveOut = (p, reason, size, cap) => {
      counts.left_out++;
      if (lefts.length < WALK_LIMIT) lefts.push({ cap: cap === true, p, reason, size });
    };
    const send = (p, data) => {
      frame('F', Buffer.from(stringify({ path: p, size: data.length, kind: 'file' })));
      for (let i = 0; i < data.length; i += FRAME_RAW)
        frame('D', Buffer.from(data.subarray(i, i + FRAME_RAW).toString('base64'), 'latin1'));
      frame('E', Buffer.from(require('crypto').createHash('sha256').update(data).digest('hex'), 'latin1'));
      counts.sent++;
      totalLeft -= data.length;
    };
    let utf8 = null; // made when a name is first checked: it costs milliseconds
    let seen = 0;
    let stopped = false;
    const found = [];
    // [{name, bad, dir}] sorted by name; bad: the name is not UTF-8.
    const entries = (d) => {
      if (stopped) return [];
      let list;
      try {
        list = fs.readdirSync(d === '' ? '.' : d, { withFileTypes: true, encoding: 'buffer' });
      } catch (e) {
        return [];
      }
      const out = [];
      for (const e of list) {
        if (++seen > WALK_LIMIT) {
          stopped = true;
          break;
        }
        let name;
        let bad = false;
        try {
          if (utf8 === null) utf8 = new TextDecoder('utf-8', { fatal: true });
          name = utf8.decode(e.name);
        } catch (err) {
          name = e.name.toString('utf8');
          bad = true;
        }
        out.push({ name, bad, dir: e.isDirectory() });
      }
      return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    };
    const join = (d, n) => (d === '' ? n : d + '/' + n);
    const walkAll = (d) => {
      for (const e of entries(d)) {
        const rel = join(d, e.name);
        if (e.dir && !e.bad) walkAll(rel);
        else found.push({ rel, bad: e.bad });
      }
    };
    const walkGlob = (d, parts) => {
      const head = parts[0];
      const rest = parts.slice(1);
      if (head === '**') {
        // Zero or more directories, hidden ones only when named; a pattern
        // ending in ** takes every file below.
        walkGlob(d, rest.length ? rest : ['*']);
        for (const e of entries(d)) if (e.dir && !e.bad && !e.name.startsWith('.')) walkGlob(join(d, e.name), parts);
        return;
      }
      const re = segmentRegExp(head);
      for (const e of entries(d)) {
        if (e.bad || (e.name.startsWith('.') && !head.startsWith('.')) || !re.test(e.name)) continue;
        const rel = join(d, e.name);
        if (rest.length) {
          if (e.dir) walkGlob(rel, rest);
        } else if (e.dir) walkAll(rel);
        else found.push({ rel, bad: false });
      }
    };
    let outDir = null;
    try {
      outDir = fs.lstatSync('outputs');
    } catch (e) {
      // no outputs/: only the patterns
    }
    if (outDir !== null && outDir.isDirectory()) walkAll('outputs');
    for (const pattern of Array.isArray(spec.paths) ? spec.paths : [])
      if (typeof pattern === 'string') walkGlob('', pattern.split('/').filter((c) => c !== ''));

    const done = new Set();
    let nFiles = 0;
    for (const { rel, bad } of found) {
      if (done.has(rel)) continue;
      done.add(rel);
      if (bad) {
        leaveOut(rel, 'the name is not UTF-8');
        continue;
      }
      if (/[\u0000-\u001f\u007f]/.test(rel) || Buffer.byteLength(rel) > 1024) {
        leaveOut(rel, 'the name is not allowed');
        continue;
      }
      let st;
      try {
        st = fs.lstatSync(rel);
      } catch (e) {
        continue;
      }
      if (st.isSymbolicLink()) {
        if (!isPackageLink(rel)) leaveOut(rel, 'a symbolic link (never followed)');
        continue;
      }
      if (!st.isFile()) {
        leaveOut(rel, 'not a regular file');
        continue;
      }
      if (st.nlink > 1) {
        leaveOut(rel, 'a hard-linked file', st.size);
        continue;
      }
      if (nFiles >= maxFiles) {
        leaveOut(rel, 'over the file count limit', st.size, true);
        continue;
      }
      if (st.size > maxFile) {
        leaveOut(rel, 'over the per-file size limit', st.size, true);
        continue;
      }
      if (st.size > totalLeft) {
        leaveOut(rel, 'over the total size limit', st.size, true);
        continue;
      }
      let fd;
      try {
        fd = fs.openSync(rel, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
      } catch (e) {
        leaveOut(rel, 'cannot be opened: ' + e.code);
        continue;
      }
      let data = null;
      try {
        const st2 = fs.fstatSync(fd);
        // The same file the walk saw, and inside the working directory (no
        // directory on the way was swapped for a link).
        const real = fs.readlinkSync('/proc/self/fd/' + fd);
        if (st2.ino !== st.ino || st2.dev !== st.dev || real !== path.join(outputsCwd, rel)) {
          leaveOut(rel, 'changed while being read');
        } else {
          const chunks = [];
          let size = 0;
          const chunk = Buffer.alloc(1 << 20);
          while (size <= maxFile) {
            const n = readSync(fd, chunk, 0, Math.min(chunk.length, maxFile + 1 - size), null);
            if (n === 0) break;
            chunks.push(Buffer.from(chunk.subarray(0, n)));
            size += n;
          }
          data = Buffer.concat(chunks);
        }
      } catch (e) {
        leaveOut(rel, 'cannot be read: ' + e.code);
      } finally {
        fs.closeSync(fd);
      }
      if (data === null) continue;
      if (data.length > maxFile || data.length > totalLeft) {
        leaveOut(rel, 'grew past the size limit while being read', data.length, true);
        continue;
      }
      send(rel, data);
      nFiles++;
    }
    // Named: what was refused for what it is before what the caps turned
    // away (stable: in walk order within each).
    const named = lefts.filter((l) => !l.cap).concat(lefts.filter((l) => l.cap)).slice(0, LEFT_REPORT);
    for (const l of named) {
      const rec = { path: l.p.slice(0, 256), reason: l.reason };
      if (l.size !== undefined) rec.size = l.size;
      frame('L', Buffer.from(stringify(rec)));
    }
    if (stopped) counts.walk_stopped = WALK_LIMIT;
    return counts;
  }

  function runnerFail(msg) {
    if (inCells) throw new CellFail(msg);
    if (nonce === null) {
      try {
        writeAll(2, Buffer.from('mcpsbx runner: ' + msg + '\n'));
      } catch (e) {
        // ignore
      }
    }
    writeRecord(RUNNER_EXIT, false, msg);
    origReallyExit.call(proc, RUNNER_EXIT);
  }

  // The exit status the process is about to have, as Node computes it.
  function exitCodeOr(dflt) {
    const c = proc.exitCode;
    if (c === undefined || c === null) return dflt;
    return (Number(c) | 0) & 0xff;
  }

  // ---- Node's fatal-exception report, reproduced ----------------------
  // Node emits 'exit' *before* it prints an uncaught exception, so a record
  // written from 'exit' would precede the error text. Where the report can
  // be reproduced exactly, the runner prints it, writes the record and
  // exits; otherwise (the source excerpt Node would show is out of reach)
  // it writes no record and lets Node report natively.

  function findSymbol(obj, description) {
    for (const s of Object.getOwnPropertySymbols(obj)) {
      if (s.description === description) return s;
    }
    return undefined;
  }

  // First stack frame with a source position (what V8 uses to place the
  // message): {loc, line, col} with col 0-based, or null.
  function firstFrame(stack) {
    for (const l of stack.split('\n')) {
      const m = /^\s+at (.*)$/.exec(l);
      if (m === null) continue;
      let loc = m[1];
      if (loc.endsWith(')')) {
        const i = loc.lastIndexOf(' (');
        if (i >= 0) loc = loc.slice(i + 2, -1);
      }
      const p = /^(.*):(\d+):(\d+)$/.exec(loc);
      if (p === null) continue; // builtins: "<anonymous>", "native", "index 0"
      return { loc: p[1], line: Number(p[2]), col: Number(p[3]) - 1 };
    }
    return null;
  }

  function sourceLine(loc, line) {
    let file;
    if (loc.startsWith('file://')) {
      try {
        file = require('url').fileURLToPath(loc);
      } catch (e) {
        return null;
      }
    } else if (path.isAbsolute(loc)) {
      file = loc;
    } else {
      return null; // node:internal/..., eval, ...
    }
    let text;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      return null;
    }
    const lines = text.split(/\r\n|[\n\r\u2028\u2029]/);
    return line >= 1 && line <= lines.length ? lines[line - 1] : null;
  }

  // node_errors.cc GetErrorSource: the underline is built over the UTF-8
  // bytes of the line using V8's (UTF-16) columns.
  function errorSource(loc, line, src, start, end) {
    let s = loc + ':' + line + '\n' + src + '\n';
    const b = Buffer.from(src, 'utf8');
    if (start > end || start < 0 || end > b.length) return s;
    let u = '';
    for (let i = 0; i < start && b[i] !== 0 && u.length < 1020; i++) u += b[i] === 9 ? '\t' : ' ';
    for (let i = start; i < end && b[i] !== 0 && u.length < 1020; i++) u += '^';
    return s + u + '\n';
  }

  function renderFatal(err, origin) {
    if (!util.types.isNativeError(err)) return null;
    const stack = err.stack;
    if (typeof stack !== 'string') return null;
    let arrow = '';
    // Errors that left user code through a vm boundary (the main module's
    // top level runs under this -e script) already carry the arrow.
    const decorated = /^[^\n]*:\d+\n[^\n]*\n(?:[\t ]*\^+\n)?\n/.test(stack);
    const enhance = findSymbol(err, 'kEnhanceStackBeforeInspector');
    if (!decorated) {
      // An unhandled 'error' event is thrown inside node:events; engine
      // SyntaxErrors (JSON.parse, eval) carry a position of their own.
      if (enhance !== undefined || err.name === 'SyntaxError') return null;
      const f = firstFrame(stack);
      if (f === null) return null;
      const src = sourceLine(f.loc, f.line);
      if (src === null) return null;
      let start = f.col;
      if (origin !== 'unhandledRejection') {
        // A synchronous throw is placed at the throw statement, not where
        // the error was created; only `throw new X(...)` on one line, or an
        // error the engine raised where it stands, can be placed exactly.
        const before = src.slice(0, f.col);
        const t = /\bthrow\s+$/.exec(before);
        if (t !== null) start = t.index;
        else if (/^new\b/.test(src.slice(f.col))) return null;
      }
      arrow = errorSource(f.loc, f.line, src, start, start + 1) + '\n';
    }
    if (enhance !== undefined && typeof err[enhance] === 'function') {
      try {
        err.stack = err[enhance]();
      } catch (e) {
        // as Node: keep the stack as it is
      }
    }
    let trace;
    try {
      const tty = require('tty');
      const colors =
        (tty.isatty(2) && proc.stderr.hasColors && proc.stderr.hasColors()) ||
        util.inspect.defaultOptions.colors;
      trace = util.inspect(err, {
        colors: Boolean(colors),
        customInspect: false,
        depth: Math.max(util.inspect.defaultOptions.depth, 5),
      });
    } catch (e) {
      trace = String(err.stack);
    }
    return arrow + trace + '\n\nNode.js ' + proc.version + '\n';
  }

  function isMemoryError(err) {
    return (
      util.types.isNativeError(err) &&
      err.name === 'RangeError' &&
      /allocation failed/i.test(String(err.message))
    );
  }

  function onExit() {
    if (fatal === null) {
      writeRecord(exitCodeOr(0), false);
      return;
    }
    let text = null;
    try {
      text = renderFatal(fatal.err, fatal.origin);
    } catch (e) {
      text = null;
    }
    if (text === null) return;
    const code = exitCodeOr(1);
    try {
      writeAll(2, Buffer.from(text));
    } catch (e) {
      // stderr is gone; the record still matters
    }
    writeRecord(code, isMemoryError(fatal.err));
    origReallyExit.call(proc, code);
  }

  // ---- egress --------------------------------------------------------------
  // With egress the sandbox's one way out is the daemon's gateway, an HTTP
  // proxy on loopback (HTTPS_PROXY). Node's http and https modules and its
  // fetch ignore the proxy variables by themselves, so the global agents
  // become ones that open each connection as a CONNECT tunnel through the
  // proxy (TLS runs inside it, end to end), and fetch one over them.
  // Loopback stays direct (NO_PROXY). A refusal is an error that quotes the
  // gateway's one-line reason.
  function routeThroughProxy() {
    const m = /^http:\/\/127\.0\.0\.1:(\d+)\/?$/.exec(proc.env.HTTPS_PROXY || '');
    if (!m) return;
    const proxyPort = Number(m[1]);
    const http = require('http');
    const https = require('https');
    const net = require('net');
    const tls = require('tls');
    const HEAD_MAX = 16384;
    const REASON_MAX = 1024;
    const direct = (h) => ['localhost', '127.0.0.1', '::1', '[::1]'].includes(String(h).toLowerCase());

    function tunnel(host, port, cb) {
      const target = net.isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
      const sock = net.connect(proxyPort, '127.0.0.1');
      let got = Buffer.alloc(0);
      let status = 0;
      let done = false;
      const finish = (err) => {
        if (done) return;
        done = true;
        sock.removeListener('data', onData);
        if (err) {
          sock.destroy();
          cb(err);
          return;
        }
        cb(null, sock);
      };
      const refused = () => {
        const text = got.toString('utf8', 0, REASON_MAX).trim();
        finish(new Error(`egress gateway refused ${target}: ${status} ${text}`));
      };
      function onData(chunk) {
        got = Buffer.concat([got, chunk]);
        if (status) {
          if (got.length >= REASON_MAX) refused();
          return;
        }
        const end = got.indexOf('\r\n\r\n');
        if (end < 0) {
          if (got.length > HEAD_MAX) finish(new Error('egress gateway: its answer is too long'));
          return;
        }
        const line = /^HTTP\/1\.[01] (\d{3})/.exec(got.toString('latin1', 0, end));
        status = line ? Number(line[1]) : 502;
        const rest = got.subarray(end + 4);
        if (status === 200) {
          if (rest.length) sock.unshift(rest);
          finish(null);
          return;
        }
        got = rest;
        if (got.length >= REASON_MAX) refused();
      }
      sock.on('data', onData);
      sock.once('connect', () =>
        sock.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`));
      sock.once('end', () => (status ? refused() : finish(new Error('egress gateway closed'))));
      sock.once('error', (e) => finish(new Error(`egress gateway: ${e.message}`)));
    }

    function agentClass(Base, secure) {
      return class extends Base {
        createConnection(options, cb) {
          const host = options.host || 'localhost';
          if (direct(host)) return super.createConnection(options, cb);
          tunnel(host, options.port || (secure ? 443 : 80), (err, sock) => {
            if (err) return cb(err);
            if (!secure) return cb(null, sock);
            return cb(null, tls.connect({ ...options, socket: sock }));
          });
          return undefined;
        }
      };
    }
    http.globalAgent = new (agentClass(http.Agent, false))();
    https.globalAgent = new (agentClass(https.Agent, true))();

    const origFetch = globalThis.fetch;
    if (typeof origFetch !== 'function') return;
    const REDIRECTS = [301, 302, 303, 307, 308];
    const send = (url, method, headers, body, signal) =>
      new Promise((resolve, reject) => {
        const h = {};
        headers.forEach((v, k) => {
          h[k] = v;
        });
        if (body) h['content-length'] = String(body.length);
        const mod = url.protocol === 'https:' ? https : http;
        const r = mod.request(url, { method, headers: h, signal }, resolve);
        r.on('error', (e) => reject(new TypeError('fetch failed', { cause: e })));
        r.end(body || undefined);
      });
    const toResponse = (res, url, method, redirected) => {
      const headers = new Headers();
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2)
        headers.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
      const empty = method === 'HEAD' || [204, 205, 304].includes(res.statusCode);
      if (empty) res.resume();
      const body = empty ? null : require('stream').Readable.toWeb(res);
      const r = new Response(body, { status: res.statusCode, statusText: res.statusMessage, headers });
      Object.defineProperty(r, 'url', { value: url.href });
      Object.defineProperty(r, 'redirected', { value: redirected });
      return r;
    };
    globalThis.fetch = async function fetch(input, init) {
      const req = new Request(input, init);
      let url = new URL(req.url);
      if ((url.protocol !== 'http:' && url.protocol !== 'https:') || direct(url.hostname))
        return origFetch(input, init);
      let method = req.method;
      let body = req.body ? Buffer.from(await req.arrayBuffer()) : null;
      for (let hops = 0; ; hops++) {
        const res = await send(url, method, req.headers, body, req.signal);
        const to = res.headers.location;
        if (!REDIRECTS.includes(res.statusCode) || !to || req.redirect === 'manual')
          return toResponse(res, url, method, hops > 0);
        res.resume();
        if (req.redirect === 'error') throw new TypeError('fetch failed: a redirect');
        if (hops >= 20) throw new TypeError('fetch failed: too many redirects');
        url = new URL(to, url);
        if (res.statusCode === 303 || (res.statusCode <= 302 && method === 'POST')) {
          method = 'GET';
          body = null;
        }
      }
    };
  }
  routeThroughProxy();

  // Load now, while waiting, what the program's first stdio use needs
  // (stdout/stderr pipes are net.Sockets; stdin, a file, is a ReadStream).
  // Only modules: creating the streams would make fd 1/2 non-blocking early.
  require('net');
  void fs.ReadStream;

  // Warm runner: built-ins (nothing the program could not load the same
  // way), and an absolute path, which only the daemon's own installer
  // passes (a language table's module name never starts with '/'); one
  // that is unknown or fails to load is skipped.
  const warm = proc.argv.length > 1;
  if (warm) {
    const isBuiltin =
      Module.isBuiltin || ((n) => Module.builtinModules.includes(n.replace(/^node:/, '')));
    for (const name of String(proc.argv[1]).split(',')) {
      if (name === '' || !(isBuiltin(name) || path.isAbsolute(name))) continue;
      try {
        require(name);
      } catch (e) {
        // the program's own require reports it
      }
    }
    // Paid while waiting rather than by the run: the first CommonJS
    // compile, file write and socket object, loading a file as a module
    // from this directory (path resolution, the package scope) and the
    // first console.log's formatting each cost a millisecond or more.
    // Nothing is left behind: no file, no handle, no module in the cache,
    // and stdout/stderr untouched (a console on a sink of its own).
    try {
      vm.compileFunction('', CJS_PARAMS);
      // In a directory of its own with a package.json, so the package
      // scope lookup stops there and caches nothing about the working
      // directory's (a program may write one before it imports).
      const dir = path.join(proc.cwd(), '.mcpsbx-warm');
      const scratch = path.join(dir, 'warm.js');
      fs.mkdirSync(dir);
      try {
        fs.writeFileSync(path.join(dir, 'package.json'), '{}');
        fs.writeFileSync(scratch, '');
        Module._load(scratch, null, false);
        // What returning the files does at every run's end.
        fs.readdirSync(dir, { withFileTypes: true, encoding: 'buffer' });
        fs.lstatSync(dir);
        fs.closeSync(fs.openSync('/dev/null', 'r'));
      } finally {
        delete Module._cache[scratch];
        for (const k of Object.keys(Module._pathCache || {}))
          if (k.startsWith(scratch)) delete Module._pathCache[k];
        fs.rmSync(dir, { recursive: true, force: true });
      }
      void new (require('net').Socket)();
      const sink = new (require('stream').Writable)({
        write(chunk, encoding, cb) {
          cb();
        },
      });
      new (require('console').Console)(sink, sink).log('%s %d', 'x', 1, { a: [1] });
    } catch (e) {
      // only a warm-up
    }
    writeAll(1, READY);
  }

  // ---- session mode ------------------------------------------------------
  // The request's "session" member: 'begin', 'cell', '' when absent, or
  // {error} when it is neither.
  function sessionKind(s) {
    if (s === undefined) return '';
    if (s === null || typeof s !== 'object' || Array.isArray(s))
      return { error: 'request session must be an object' };
    if (s.begin === true) return 'begin';
    if (s.cell === true) return 'cell';
    return { error: 'request session is neither begin nor cell' };
  }

  // The program of the process that owns the request descriptor (its
  // stdin): it copies what comes to its stdout, a pipe only the session
  // runner reads, and ends at the end of its stdin. A process, not a
  // Worker: Node joins its threads at exit, and one blocked reading would
  // never let the runner exit; a process is killed. Blocking reads keep the
  // descriptor's mode (it may share its file description with stdout); a
  // cell may leave it non-blocking, and then naps that grow while idle
  // stand in for a poll.
  // It also follows the frames, because the runner cannot while a cell's
  // synchronous code runs: an interrupt naming the nonce of the last
  // request (the running cell's, or one that just ended: the daemon sends
  // the next request only after a record) that the runner has not
  // acknowledged within ackMs (one byte per interrupt frame appended to
  // the file on fd 3) becomes a SIGINT to the runner, which the REPL's
  // watchdog turns into an exception in that code. A runner that is free
  // acknowledges at once and acts on the frame itself: a SIGINT just after
  // the watchdog stops would end the runner (see sessionMain). The nonce
  // is read from the body's start, where the daemon puts it (runner.c); a
  // request that does not start so cannot be interrupted that way.
  // maxControl: the longest header.
  function requestCopier(maxControl, ackMs) {
    const fs = require('fs');
    const runner = process.ppid;
    const cell = new Int32Array(new SharedArrayBuffer(4));
    const buf = Buffer.alloc(1 << 16);
    let nap = 1;
    let header = '';
    let skip = 0; // body bytes still to pass over
    let head = ''; // the body's first bytes, while under 64
    let current = null; // the last request's nonce
    let lost = false; // a frame it could not follow: no more interrupts
    let interrupts = 0; // interrupt frames copied
    const acked = () => {
      try {
        return fs.fstatSync(3).size >= interrupts;
      } catch (e) {
        return true; // no way to know: never a signal
      }
    };
    const follow = (b) => {
      for (let i = 0; i < b.length && !lost; ) {
        if (skip > 0) {
          const n = Math.min(skip, b.length - i);
          if (head.length < 64) {
            head += b.subarray(i, i + Math.min(n, 64 - head.length)).toString('latin1');
            const m = /^\{\s*"nonce"\s*:\s*"([0-9a-f]{32})"/.exec(head);
            if (m !== null) current = m[1];
          }
          skip -= n;
          i += n;
          continue;
        }
        const nl = b.indexOf(0x0a, i);
        header += b.subarray(i, nl < 0 ? b.length : nl).toString('latin1');
        if (header.length > maxControl) lost = true;
        if (nl < 0) return;
        i = nl + 1;
        const im = /^mcpsbx\/1 interrupt ([0-9a-f]{32})$/.exec(header);
        const hm = /^mcpsbx\/1 ([0-9]{1,10})$/.exec(header);
        header = '';
        if (im !== null) {
          interrupts++;
          for (let waited = 0; waited < ackMs && !acked(); waited += 2) Atomics.wait(cell, 0, 0, 2);
          if (im[1] === current && !acked() && process.ppid === runner) {
            try {
              process.kill(runner, 'SIGINT');
            } catch (e) {
              // the runner is gone
            }
          }
        } else if (hm !== null) {
          current = null;
          head = '';
          skip = Number(hm[1]);
        } else lost = true;
      }
    };
    const retry = (e) => {
      if (e.code === 'EAGAIN' || e.code === 'EWOULDBLOCK') {
        Atomics.wait(cell, 0, 0, nap);
        nap = Math.min(nap * 2, 50);
      } else if (e.code !== 'EINTR') throw e;
    };
    for (;;) {
      let n;
      try {
        n = fs.readSync(0, buf, 0, buf.length, null);
      } catch (e) {
        if (e.code === 'EOF') break;
        retry(e);
        continue;
      }
      nap = 1;
      if (n === 0) break;
      for (let off = 0; off < n; ) {
        try {
          off += fs.writeSync(1, buf, off, n - off);
        } catch (e) {
          retry(e);
        }
      }
      follow(buf.subarray(0, n));
    }
    // The session is over: a runner held by a cell's synchronous code
    // cannot see that, so it is ended after a while.
    fs.closeSync(1);
    for (let waited = 0; waited < 1000 && process.ppid === runner; waited += 10) Atomics.wait(cell, 0, 0, 10);
    if (process.ppid === runner) process.kill(runner, 'SIGKILL');
  }

  // Splits the copied stream into frames: onFrame gets {kind: 'request',
  // body}, {kind: 'interrupt', nonce}, then {kind: 'eof'} or {kind: 'bad',
  // why} (and nothing after those).
  function frameParser(onFrame) {
    // What came and is not a frame yet: chunks joined only when a header
    // is looked for or a body is complete (a body may be 64 MiB).
    let parts = [];
    let have = 0;
    let want = -1; // the body length being waited for, or -1: a header
    let over = false;
    const joined = () => {
      const all = parts.length === 1 ? parts[0] : Buffer.concat(parts, have);
      parts = [all];
      return all;
    };
    const keep = (rest) => {
      parts = rest.length > 0 ? [rest] : [];
      have = rest.length;
    };
    const fail = (why) => {
      over = true;
      onFrame({ kind: 'bad', why });
    };
    return {
      data(chunk) {
        if (over) return;
        parts.push(chunk);
        have += chunk.length;
        while (!over && (have > 0 || want === 0)) {
          if (want >= 0) {
            if (have < want) return;
            const all = joined();
            keep(all.subarray(want));
            const body = all.subarray(0, want);
            want = -1;
            onFrame({ kind: 'request', body });
            continue;
          }
          const all = joined();
          const nl = all.subarray(0, MAX_CONTROL + 1).indexOf(0x0a);
          if (nl < 0) {
            if (have > MAX_CONTROL) fail('request header too long');
            return;
          }
          const header = all.subarray(0, nl).toString('latin1');
          keep(all.subarray(nl + 1));
          const im = /^mcpsbx\/1 interrupt ([0-9a-f]{32})$/.exec(header);
          const hm = /^mcpsbx\/1 ([0-9]{1,10})$/.exec(header);
          if (im !== null) onFrame({ kind: 'interrupt', nonce: im[1] });
          else if (hm === null) fail('bad request header');
          else if (Number(hm[1]) > MAX_REQUEST) fail('request too large');
          else want = Number(hm[1]);
        }
      },
      end(why) {
        if (over) return;
        over = true;
        if (why !== undefined) onFrame({ kind: 'bad', why });
        else if (want >= 0) onFrame({ kind: 'bad', why: 'end of input inside the request' });
        else if (have > 0) onFrame({ kind: 'bad', why: 'end of input before the request header' });
        else onFrame({ kind: 'eof' });
      },
    };
  }

  // A failure of the runner inside a session's cell: that cell's record.
  class CellFail extends Error {}

  // The begin request (env already set): one REPL (Node's own `repl`) in
  // this process, said in the begin record as "interpreter"; each cell's
  // code is evaluated in it as a line typed at its prompt, so top-level
  // let/const/class/function and await persist, until the request
  // descriptor ends. Only the copier reads that descriptor.
  function sessionMain() {
    const spawn = require('child_process').spawn;
    const repl = require('repl');
    const stream = require('stream');
    const root = proc.cwd();
    // The copier's acknowledgements: an unlinked file of its own.
    let ackFd;
    try {
      const ackPath = path.join(root, '.mcpsbx-ack-' + proc.pid);
      fs.rmSync(ackPath, { force: true });
      ackFd = fs.openSync(ackPath, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600);
      fs.unlinkSync(ackPath);
    } catch (e) {
      return runnerFail('cannot begin the session: ' + e.message);
    }
    const copier = spawn(
      proc.execPath,
      ['-e', '(' + requestCopier.toString() + ')(' + MAX_CONTROL + ', ' + ACK_MS + ')'],
      { stdio: ['inherit', 'pipe', 'ignore', ackFd], env: {} },
    );
    let cell = null; // the running cell: {nonce, interrupted, ended, outputs, links}
    const sessionSets = []; // added for the rest of the session ("add_packages")
    let evals = 0;
    const given = new Set(); // names of variables set by earlier cells
    // Exits, as the session ends, without anything left reading.
    const exit = (code) => {
      try {
        copier.kill('SIGKILL');
      } catch (e) {
        // gone already
      }
      return origReallyExit.call(proc, code);
    };
    // The runner's failure: in the record of the cell of nonce, or, with
    // none, on stderr.
    const fail = (msg) => {
      if (nonce === null) {
        try {
          writeAll(2, Buffer.from('mcpsbx runner: ' + msg + '\n'));
        } catch (e) {
          // stderr is gone
        }
      } else emitRecord({ exit_code: RUNNER_EXIT, memory_error: false, runner_error: msg });
      return exit(RUNNER_EXIT);
    };

    // The program's stdout and stderr write at once, blocking while the
    // daemon is behind (see the one-shot path), and keep no state of their
    // own: an interrupt that stops the code inside a stream's bookkeeping
    // would leave the stream waiting forever for its write to end.
    for (const [s, fd] of [
      [proc.stdout, 1],
      [proc.stderr, 2],
    ]) {
      s.write = function write(chunk, encoding, cb) {
        if (typeof encoding === 'function') {
          cb = encoding;
          encoding = undefined;
        }
        let err = null;
        try {
          if (typeof chunk === 'string') writeAll(fd, Buffer.from(chunk, encoding || 'utf8'));
          else writeAll(fd, Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        } catch (e) {
          err = e;
        }
        if (typeof cb === 'function') proc.nextTick(cb, err);
        return err === null;
      };
    }
    // What the REPL prints (errors, as "Uncaught ...") goes to stderr,
    // without the stack frames of the REPL's and this runner's own code.
    const internal = /^\s+at (?:.* \()?(?:node:(?:vm|repl|domain):|\[eval[^\]]*\])/;
    const errOut = new stream.Writable({
      write(chunk, encoding, cb) {
        const text = String(chunk)
          .split('\n')
          .filter((l) => !internal.test(l))
          .join('\n');
        try {
          writeAll(2, Buffer.from(text));
        } catch (e) {
          // stderr is gone
        }
        cb();
      },
    });
    // Looks like the REPL's own globals, not `node -e`'s.
    for (const g of ['exports', '__filename', '__dirname']) delete globalThis[g];
    forgetEval();
    const r = repl.start({
      input: new stream.PassThrough(),
      output: errOut,
      terminal: false,
      useGlobal: true,
      prompt: '',
      ignoreUndefined: true,
      breakEvalOnSigint: true,
    });
    // The REPL ends a line that threw (it printed the error) by showing
    // its prompt: here that ends the cell, a turn later, so that what an
    // interrupted await prints comes first.
    r.displayPrompt = function displayPrompt() {
      const c = cell;
      if (c !== null && !c.ending) {
        c.ending = true;
        setImmediate(() => endCell(c, 1));
      }
    };
    // An interrupt of synchronous code ends in an error of this code.
    if (r._domain && typeof r._domain.prependListener === 'function') {
      r._domain.prependListener('error', (e) => {
        if (cell !== null && e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED') cell.interrupted = true;
      });
    }
    // A SIGINT outside a cell's synchronous code (the watchdog's time) must
    // not end the runner: the copier sends one when the runner did not
    // take an interrupt frame in time, which may also be a cell's timer
    // callback holding the event loop. The listener is off while the REPL
    // evaluates: Node's vm takes the SIGINT listeners away around
    // breakOnSigint code, and that stops libuv's handler over the
    // watchdog's, so a SIGINT then would end the process; and after the
    // evaluation the watchdog leaves its own exiting handler behind, which
    // adding the listener again replaces (a SIGINT in between still ends
    // the runner: hence the copier's wait for an acknowledgement).
    const onSigint = () => {};
    proc.on('SIGINT', onSigint);
    // process.exit() in a cell ends the session: the cell's record, then
    // the end of the stream.
    proc.reallyExit = function reallyExit(code) {
      const c = cell;
      if (c !== null && !c.ended) {
        c.ended = true;
        nonce = c.nonce;
        emitRecord({
          exit_code: (Number(code) | 0) & 0xff,
          memory_error: false,
          session: { ended: 'the program exited' },
        });
      }
      return exit(Number(code) | 0);
    };

    emitRecord({ exit_code: 0, memory_error: false, session: { mode: 'interpreter' } });
    nonce = null;
    inCells = true;
    const queue = [];

    const endCell = (c, code, extra) => {
      if (c.ended) return;
      c.ended = true;
      nonce = c.nonce;
      const rec = { exit_code: c.interrupted ? 130 : code, memory_error: false };
      Object.assign(rec, extra);
      if (c.outputs !== null && code !== RUNNER_EXIT) {
        const here = proc.cwd();
        try {
          outputsCwd = root;
          rec.files = sendOutputs(c.outputs);
        } catch (e) {
          rec.exit_code = RUNNER_EXIT;
          rec.runner_error = 'cannot return the output files: ' + String(e && e.message ? e.message : e).slice(0, 300);
        }
        try {
          proc.chdir(here);
        } catch (e) {
          // gone: the cell stays where sending the files left it
        }
      }
      if (c.interrupted) rec.session = { interrupted: true };
      unlinkPackages(c.links);
      emitRecord(rec);
      nonce = null;
      cell = null;
      pump();
    };

    const runCell = (body) => {
      let req;
      try {
        req = JSON.parse(body.toString('utf8'));
      } catch (e) {
        return fail('request is not JSON: ' + e.message);
      }
      if (req === null || typeof req !== 'object' || Array.isArray(req)) return fail('request is not a JSON object');
      if (typeof req.nonce !== 'string' || !/^[0-9a-f]{32}$/.test(req.nonce))
        return fail('request has no valid nonce');
      const c = { nonce: req.nonce, interrupted: false, ended: false, ending: false, outputs: null, links: [] };
      cell = c;
      let code;
      try {
        code = prepareCell(req, c, root, given, sessionSets);
      } catch (e) {
        if (!(e instanceof CellFail)) throw e;
        return endCell(c, RUNNER_EXIT, { runner_error: e.message });
      }
      req = null;
      if (typeof code === 'object') return endCell(c, 0, { check: code.check });
      evals++;
      proc.removeListener('SIGINT', onSigint);
      try {
        r.eval(code, r.context, 'REPL' + evals, (err, value) => {
          if (c.ended || c.ending) return;
          if (err) {
            // Input the REPL would wait for more of (a Recoverable).
            const e = err.err !== undefined ? err.err : err;
            errOut.write('Uncaught ' + util.inspect(e) + '\n');
            c.ending = true;
            return setImmediate(() => endCell(c, 1));
          }
          if (value !== undefined) {
            try {
              writeAll(1, Buffer.from(r.writer(value) + '\n'));
            } catch (e) {
              // stdout is gone
            }
          }
          endCell(c, 0);
        });
      } finally {
        proc.on('SIGINT', onSigint);
      }
    };

    const pump = () => {
      while (cell === null && queue.length > 0) {
        const m = queue.shift();
        if (m.kind === 'eof') return exit(0);
        if (m.kind === 'bad') return fail(m.why);
        if (m.kind === 'request') return runCell(m.body);
        // an interrupt with no cell running: nothing to stop
      }
    };

    const onFrame = (m) => {
      const c = cell;
      if (m.kind === 'interrupt') {
        try {
          writeAll(ackFd, Buffer.from('a'));
        } catch (e) {
          // the copier signals after its wait
        }
      }
      if (c === null) {
        queue.push(m);
        return pump();
      }
      if (m.kind === 'interrupt') {
        // The cell awaits (its synchronous code is over, or this would not
        // run): the REPL's SIGINT ends its wait. Another nonce is a late
        // interrupt of an earlier cell: ignored.
        if (m.nonce === c.nonce && !c.interrupted && !c.ending) {
          c.interrupted = true;
          r.emit('SIGINT');
        }
      } else if (m.kind === 'eof') {
        exit(0);
      } else if (m.kind === 'request' && !queue.some((q) => q.kind === 'request')) {
        queue.push(m);
      } else {
        // A bad frame, or more than one request while a cell runs: the
        // session ends.
        nonce = c.nonce;
        fail(m.kind === 'bad' ? m.why : 'more than one request came while a cell ran');
      }
    };
    const parser = frameParser(onFrame);
    copier.on('error', (e) => fail('cannot read the requests: ' + String(e && e.message ? e.message : e).slice(0, 300)));
    copier.stdout.on('data', (b) => parser.data(b));
    // Its end, not its exit: at the end of the requests it waits for the
    // runner to end.
    copier.stdout.on('end', () => parser.end());
    copier.on('exit', (code, signal) => {
      if (code !== 0) parser.end('cannot read the requests: the reader ended with ' + (signal || code));
    });
  }

  // A cell's request made ready to run in the session's REPL: env, files
  // (from the session's directory, whatever the cell's cwd), outputs/, the
  // stdin file as fd 0 and process.stdin, the variables as globals. Returns
  // the code, or {check} for a check-only cell; throws CellFail.
  // An unlinked regular file of the stdin bytes in dir as fd 0: the program
  // reads exactly them, then EOF, through any API (process.stdin,
  // fs.readFileSync(0), /dev/stdin, child processes). closeSync(0) makes 0
  // the lowest free fd. Returns the fd the file got. Throws.
  function stdinAsFd0(dir, stdin) {
    const stdinPath = path.join(dir, '.mcpsbx-stdin');
    fs.rmSync(stdinPath, { force: true }); // an earlier cell's, never followed
    fs.writeFileSync(stdinPath, stdin, { mode: 0o600 });
    try {
      fs.closeSync(0);
    } catch (e) {
      // already closed: openSync below still gets 0
    }
    const fd = fs.openSync(stdinPath, 'r');
    fs.unlinkSync(stdinPath);
    return fd;
  }

  // process.stdin as a stream of fd, made when first asked for.
  function serveStdin(fd, autoClose) {
    let stream = null;
    Object.defineProperty(proc, 'stdin', {
      configurable: true,
      enumerable: true,
      get() {
        if (stream === null) stream = fs.createReadStream('', { fd, autoClose });
        return stream;
      },
    });
  }

  function prepareCell(req, c, root, given, sessionSets) {
    const kind = sessionKind(req.session);
    if (kind !== 'cell') throw new CellFail(kind.error || 'a session request that is not a cell');
    const code = req.code;
    const stdin = req.stdin === undefined || req.stdin === null ? '' : req.stdin;
    const env = req.env === undefined || req.env === null ? {} : req.env;
    const variables = req.variables === undefined || req.variables === null ? {} : req.variables;
    const files = req.files === undefined || req.files === null ? [] : req.files;
    const outputs = req.outputs === undefined || req.outputs === null ? null : req.outputs;
    if (!Array.isArray(files) || (outputs !== null && (typeof outputs !== 'object' || Array.isArray(outputs))))
      runnerFail('request files must be a list and outputs an object');
    if (typeof code !== 'string' || typeof stdin !== 'string') runnerFail('request code/stdin must be strings');
    if (typeof env !== 'object' || Array.isArray(env)) runnerFail('request env must be an object');
    if (typeof variables !== 'object' || Array.isArray(variables)) runnerFail('request variables must be an object');
    for (const k of Object.keys(env)) {
      const v = env[k];
      if (typeof v !== 'string' || k === '' || k.includes('=') || k.includes('\0') || v.includes('\0'))
        runnerFail('request env: bad variable ' + stringify(k.slice(0, 64)));
    }
    const names = Object.keys(variables);
    for (const name of names) {
      let bad = !/^[A-Za-z_$][A-Za-z0-9_$]{0,127}$/.test(name) || name.startsWith('__');
      bad = bad || ['require', 'module', 'exports', '__filename', '__dirname'].includes(name);
      bad = bad || (name in globalThis && !given.has(name)) || name in Object.prototype;
      if (!bad) {
        try {
          vm.compileFunction('"use strict"; let ' + name + ';');
        } catch (e) {
          bad = true;
        }
      }
      if (bad) runnerFail('variable ' + stringify(name.slice(0, 128)) + ' is not allowed');
    }
    if (req.check === true) {
      const check = syntaxCheck(code, root, '.mcpsbx-check.mjs');
      if (typeof check === 'string') runnerFail(check);
      return { check };
    }
    const sets = packageSets(req.packages, 'packages');
    const adds = packageSets(req.add_packages, 'add_packages');
    if (typeof sets === 'string') runnerFail(sets);
    if (typeof adds === 'string') runnerFail(adds);
    const newAdds = adds.filter((d) => !sessionSets.includes(d));
    if (sessionSets.length + newAdds.length > MAX_PACKAGE_SETS)
      runnerFail('a session takes at most ' + MAX_PACKAGE_SETS + ' package sets');
    for (const k of Object.keys(env)) proc.env[k] = env[k];
    const here = proc.cwd();
    try {
      proc.chdir(root);
    } catch (e) {
      runnerFail('cannot enter the working directory: ' + e.message);
    }
    try {
      if (writeInputs(files) !== true) runnerFail('request files');
      try {
        if (outputs !== null) {
          try {
            fs.mkdirSync('outputs', 0o755);
          } catch (e) {
            if (e.code !== 'EEXIST') throw e;
          }
        }
        // The session's sets for good, the cell's until it ends (endCell).
        linkPackages(root, newAdds);
        sessionSets.push(...newAdds);
        c.links = linkPackages(root, sets);
        // As in a one-shot run, and a process.stdin of its own per cell
        // (the last one is at its end).
        serveStdin(stdinAsFd0(root, stdin), false);
      } catch (e) {
        runnerFail('cannot prepare the working directory: ' + e.message);
      }
    } finally {
      try {
        proc.chdir(here);
      } catch (e) {
        // gone: the cell starts in the session's directory
      }
    }
    // Writable globals: a later cell may be given the same name again.
    for (const name of names) {
      Object.defineProperty(globalThis, name, {
        value: variables[name],
        writable: true,
        configurable: true,
        enumerable: true,
      });
      given.add(name);
    }
    c.outputs = outputs;
    return code;
  }

  // ---- read the request: "mcpsbx/1 <len>\n" + <len> bytes of JSON -----
  let req;
  try {
    // One byte at a time for the header, so nothing past the frame is read.
    const one = Buffer.alloc(1);
    let header = '';
    for (;;) {
      if (readSome(one, 0, 1) === 0) return runnerFail('end of input before the request header');
      if (one[0] === 0x0a) break;
      header += String.fromCharCode(one[0]);
      if (header.length > 32) return runnerFail('request header too long');
    }
    const hm = /^mcpsbx\/1 ([0-9]{1,10})$/.exec(header);
    if (hm === null) return runnerFail('bad request header');
    const len = Number(hm[1]);
    if (len > MAX_REQUEST) return runnerFail('request too large');
    const body = Buffer.alloc(len);
    for (let off = 0; off < len; ) {
      const n = readSome(body, off, len - off);
      if (n === 0) return runnerFail('end of input inside the request');
      off += n;
    }
    // The code reached this runner: from here on a failure is the run's.
    if (warm) writeAll(1, GO);
    try {
      req = JSON.parse(body.toString('utf8'));
    } catch (e) {
      return runnerFail('request is not JSON: ' + e.message);
    }
  } catch (e) {
    return runnerFail('cannot read the request: ' + e.message);
  }
  if (req === null || typeof req !== 'object' || Array.isArray(req))
    return runnerFail('request is not a JSON object');
  if (typeof req.nonce !== 'string' || !/^[0-9a-f]{32}$/.test(req.nonce))
    return runnerFail('request has no valid nonce');
  nonce = req.nonce;
  const session = sessionKind(req.session);
  if (session.error !== undefined) return runnerFail(session.error);
  if (session === 'cell') return runnerFail('a session cell without a session');
  const code = req.code;
  const stdin = req.stdin === undefined || req.stdin === null ? '' : req.stdin;
  const env = req.env === undefined || req.env === null ? {} : req.env;
  const variables = req.variables === undefined || req.variables === null ? {} : req.variables;
  const check = req.check === true;
  const files = req.files === undefined || req.files === null ? [] : req.files;
  const outputs = req.outputs === undefined || req.outputs === null ? null : req.outputs;
  const packages = session === '' ? packageSets(req.packages, 'packages') : [];
  const addsOutside = session === '' && req.add_packages !== undefined && req.add_packages !== null;
  req = null;
  if (typeof packages === 'string') return runnerFail(packages);
  if (addsOutside) return runnerFail('request add_packages outside a session cell');
  if (!Array.isArray(files) || (outputs !== null && (typeof outputs !== 'object' || Array.isArray(outputs))))
    return runnerFail('request files must be a list and outputs an object');
  if (typeof code !== 'string' || typeof stdin !== 'string')
    return runnerFail('request code/stdin must be strings');
  if (typeof env !== 'object' || Array.isArray(env)) return runnerFail('request env must be an object');
  if (typeof variables !== 'object' || Array.isArray(variables))
    return runnerFail('request variables must be an object');
  for (const k of Object.keys(env)) {
    const v = env[k];
    if (typeof v !== 'string' || k === '' || k.includes('=') || k.includes('\0') || v.includes('\0'))
      return runnerFail('request env: bad variable ' + JSON.stringify(k.slice(0, 64)));
    // Here, not in the container's configuration: the engine keeps that
    // on disk. process.env also reaches child processes.
    process.env[k] = v;
  }
  if (session === 'begin') return sessionMain();

  // ---- CommonJS or ES module ------------------------------------------
  // Like Node 22's module detection: only a SyntaxError that ESM syntax
  // would explain switches to ESM; any other error is left for the CJS
  // loader to report as usual.
  function needsESM(src, filename) {
    try {
      vm.compileFunction(src, CJS_PARAMS, { filename });
      return false;
    } catch (e) {
      if (!(e instanceof SyntaxError)) return false;
      const m = e.message;
      if (ESM_ONLY.includes(m)) return true;
      if (
        m !== 'await is only valid in async functions and the top level bodies of modules' &&
        m !== 'Unexpected reserved word' &&
        !/^Identifier '(module|exports|require|__filename|__dirname)' has already been declared$/.test(m)
      )
        return false;
      // Top-level await / CJS-only name clashes: ESM if it parses as an
      // async function body (where both are legal), or fails there only on
      // ESM syntax.
      try {
        const body = src.startsWith('#!') ? '//' + src.slice(2) : src;
        new vm.Script('(async function () {' + body + '\n})', { filename });
        return true;
      } catch (e2) {
        return ESM_ONLY.includes(e2.message);
      }
    }
  }

  // ---- check only: parse, as running it would, and say what failed -----
  // Node prints a syntax error as "<file>:<line>", the source line, a
  // caret line under the place, a blank line, then "SyntaxError: ...".
  // Anything else means the check could not be made: a runner failure,
  // never an answer about the code.
  function syntaxResult(stack) {
    const lines = String(stack).split('\n');
    const at = /:(\d+)$/.exec(lines[0] || '');
    const caret = (lines[2] || '').indexOf('^');
    const blank = lines.indexOf('', 1);
    const msg = lines.slice(blank >= 0 ? blank + 1 : 0).find((l) => l.startsWith('SyntaxError: '));
    if (msg === undefined) return null;
    return {
      ok: false,
      message: msg.slice(0, 500),
      line: at ? Number(at[1]) : null,
      column: at && caret >= 0 ? caret + 1 : null,
    };
  }
  // The check's result, or a string: why it could not be made. esmName:
  // the file node --check reads.
  function syntaxCheck(src, cwd, esmName) {
    let result = { ok: true };
    try {
      if (needsESM(src, path.join(cwd, 'main.js'))) {
        // ES module syntax: only node --check parses it without running it
        // (a second Node, with none of the run's environment).
        const file = path.join(cwd, esmName);
        fs.writeFileSync(file, src);
        const r = require('child_process').spawnSync(proc.execPath, ['--check', file], {
          encoding: 'utf8',
          env: {},
          stdio: ['ignore', 'ignore', 'pipe'],
          maxBuffer: 2 * Buffer.byteLength(src) + (1 << 20), // it may echo the source line
        });
        fs.unlinkSync(file);
        if (r.error) throw r.error;
        if (r.status !== 0) {
          result = r.status === 1 ? syntaxResult(r.stderr) : null;
          if (result === null) return 'node --check failed: ' + (r.signal || r.status) + ': ' + String(r.stderr).slice(0, 300);
        }
      } else {
        // A #! line is the loader's to strip; "//" keeps the columns.
        const body = src.startsWith('#!') ? '//' + src.slice(2) : src;
        try {
          vm.compileFunction(body, CJS_PARAMS, { filename: path.join(cwd, 'main.js') });
        } catch (e) {
          if (!(e instanceof SyntaxError)) throw e;
          result = syntaxResult(e.stack) || { ok: false, message: ('SyntaxError: ' + e.message).slice(0, 500), line: null, column: null };
        }
      }
    } catch (e) {
      return 'cannot check the code: ' + String(e && e.message ? e.message : e).slice(0, 300);
    }
    return result;
  }
  function checkSyntax(src) {
    const result = syntaxCheck(src, proc.cwd(), 'main.mjs');
    if (typeof result === 'string') return runnerFail(result);
    writeRecord(0, false, undefined, result);
    origReallyExit.call(proc, 0);
  }
  if (check) return checkSyntax(code);

  let mainPath;
  if (writeInputs(files) !== true) return;
  try {
    const cwd = proc.cwd();
    if (outputs !== null) {
      try {
        fs.mkdirSync('outputs', 0o755);
      } catch (e) {
        if (e.code !== 'EEXIST') throw e;
      }
      outputsCwd = cwd;
    }
    linkPackages(cwd, packages);
    const esm = needsESM(code, path.join(cwd, 'main.js'));
    mainPath = path.join(cwd, esm ? 'main.mjs' : 'main.js');
    fs.writeFileSync(mainPath, code);
    const fd = stdinAsFd0(cwd, stdin);
    // fd 0 could not be taken over: serve process.stdin from the file.
    if (fd !== 0) serveStdin(fd, true);
  } catch (e) {
    return runnerFail('cannot prepare the working directory: ' + e.message);
  }

  // ---- make this process look like `node main.js` ---------------------
  // `node -e` exposes require/module/exports/__filename/__dirname and every
  // built-in module (fs, path, ...: lazy getters whose setter is Node's
  // `setReal`) as globals, and keeps the runner in process._eval and
  // execArgv (which child_process.fork would replay).
  for (const g of ['require', 'module', 'exports', '__filename', '__dirname']) delete globalThis[g];
  for (const g of Object.getOwnPropertyNames(globalThis)) {
    const d = Object.getOwnPropertyDescriptor(globalThis, g);
    if (d.configurable && d.set !== undefined && d.set.name === 'setReal') delete globalThis[g];
  }
  forgetEval();
  proc.argv.push(mainPath);

  // ---- variables: global constants ------------------------------------
  // The daemon checked the names (src/tools/variables.h); this is the same
  // rule against the live interpreter, now that globalThis is main.js's.
  // A top-level `const` of a script lives in the realm's global scope,
  // which CommonJS and ES modules both see: an assignment throws as for
  // any constant, and the program may still declare its own.
  const CJS_NAMES = ['require', 'module', 'exports', '__filename', '__dirname'];
  const names = Object.keys(variables);
  for (const name of names) {
    let bad = !/^[A-Za-z_$][A-Za-z0-9_$]{0,127}$/.test(name) || name.startsWith('__');
    bad = bad || CJS_NAMES.includes(name) || name in globalThis || name in Object.prototype;
    if (!bad) {
      try {
        // name is a plain identifier here: this only asks whether it is reserved.
        vm.compileFunction('"use strict"; let ' + name + ';');
      } catch (e) {
        bad = true;
      }
    }
    if (bad) return runnerFail('variable ' + JSON.stringify(name.slice(0, 128)) + ' is not allowed');
  }
  if (names.length > 0) {
    // The values go through a global keyed by a fresh symbol for the
    // moment the declarations run (JSON as source would lose "__proto__").
    const hold = Symbol('mcpsbx.variables');
    globalThis[hold] = variables;
    const key = 'mcpsbx_variables_' + nonce;
    Object.defineProperty(globalThis, key, { value: hold, configurable: true });
    try {
      vm.runInThisContext(
        names.map((n) => 'const ' + n + ' = globalThis[globalThis.' + key + '][' + JSON.stringify(n) + '];').join('\n'),
        { filename: 'mcpsbx-variables' },
      );
    } catch (e) {
      return runnerFail('cannot bind the variables: ' + e.message);
    } finally {
      delete globalThis[hold];
      delete globalThis[key];
    }
  }

  // The record goes out after every 'exit' listener (ours must run last,
  // and listeners registered later would run after a plain listener), and
  // from reallyExit for process.exit() called inside an 'exit' listener.
  proc.emit = function emit(ev) {
    if (ev === 'uncaughtException' && !recorded) {
      const handled = origEmit.apply(this, arguments);
      if (!handled) fatal = { err: arguments[1], origin: arguments[2] };
      return handled;
    }
    if (ev === 'exit' && !recorded && proc._exiting === true) {
      // An exception from a listener propagates: Node reports it natively.
      const r = origEmit.apply(this, arguments);
      onExit();
      return r;
    }
    return origEmit.apply(this, arguments);
  };
  proc.reallyExit = function reallyExit(code) {
    writeRecord(((Number(code) | 0) & 0xff), false);
    return origReallyExit.apply(this, arguments);
  };

  // Not inside try/catch: an error thrown by the main module's top level
  // must reach Node's own handling (which decorates it with the source
  // line) exactly as under `node main.js`.
  // Two descriptors kept back for returning the files (a directory being
  // listed, a file being read): a program that used up every descriptor
  // still gets its files back. Opened close-on-exec, as Node opens all.
  if (outputs !== null) {
    try {
      spareFds = [fs.openSync('/dev/null', 'r'), fs.openSync('/dev/null', 'r')];
    } catch (e) {
      spareFds = [];
    }
  }
  outputsSpec = outputs;
  // The program's stdout and stderr block while the daemon is behind, as
  // they would on a terminal. Node leaves a pipe or socket non-blocking
  // and queues what it cannot take at once, without bound: a print loop
  // would fill the heap (and die of it) before the output cap stops it,
  // and the queue could still be unwritten when the record goes out.
  for (const s of [proc.stdout, proc.stderr]) {
    if (s && s._handle && typeof s._handle.setBlocking === 'function') s._handle.setBlocking(true);
  }
  Module.runMain(mainPath);
})(require);
