#!/usr/bin/env python3
"""Host tests of the in-container runners (src/sandbox/runner/runner.py,
runner.js and the generic runner runner.pl).

Each case frames a request exactly as the daemon does, pipes it into
`python3 -u -c <runner.py>` / `node -e <runner.js>` / `perl -e <runner.pl>`
running in a fresh temp directory, and checks stdout, stderr, the exit
status and the completion record (the generic runner's "pl" cases run
bash, sh and gcc programs; the "pp" cases run some of them again with a
JSON::XS that cannot be loaded, so that the runner reads with JSON::PP).
"Fidelity" cases also run the same program the ordinary way (`python3
main.py` / `node main.js`) and require identical stderr and exit status.
The "pl:forwarder_" cases run the Docker backend's egress forwarder
(src/backend/docker/forward.pl) on the host, in front of a unix-socket
echo server that stands for the daemon's gateway.
Environment: PYTHON, NODE, PERL pick the interpreters; RUNNER_TESTS=substr
runs a subset. Prints "runner: N passed, M failed"; exits 1 on failure.
"""

import hashlib
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY_SRC = open(os.path.join(ROOT, "src/sandbox/runner/runner.py")).read()
JS_SRC = open(os.path.join(ROOT, "src/sandbox/runner/runner.js")).read()
PL_SRC = open(os.path.join(ROOT, "src/sandbox/runner/runner.pl")).read()
# The Docker backend's egress forwarder (src/backend/docker/egress_sock.h).
FW_SRC = open(os.path.join(ROOT, "src/backend/docker/forward.pl")).read()
# What the daemon sends with a Python session's begin request (runner.h).
SESSION_SRC = open(os.path.join(ROOT, "src/sandbox/runner/runner_session.py")).read()
PYTHON = os.environ.get("PYTHON", "python3")
NODE = os.environ.get("NODE", "node")
PERL = os.environ.get("PERL", "perl")
NONCE = "0123456789abcdef0123456789abcdef"
# A directory for PERL5LIB whose JSON/XS.pm dies (made by main()): the "pp"
# cases' runner falls back to JSON::PP.
PP_LIB = None
# The case a thread is running (pl_run runs its language).
CURRENT = threading.local()
PREFIX = b"\x00\x1emcpsbx-done:"
RUNNER_EXIT = 76


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def eq(got, want, what):
    if got != want:
        raise Failure("%s: got %r, want %r" % (what, got, want))


def frame(code, stdin="", nonce=NONCE, extra=None, ascii=True):
    """ascii: non-ASCII as \\u escapes (Python's default); else written the
    way the daemon's json-c writes it: raw UTF-8, compact, \\u escapes for
    control characters only."""
    req = {"nonce": nonce, "code": code, "stdin": stdin}
    if extra:
        req.update(extra)
    if ascii:
        body = json.dumps(req).encode()
    else:
        body = json.dumps(req, ensure_ascii=False, separators=(",", ":")).encode()
    return b"mcpsbx/1 %d\n" % len(body) + body


def runner_cmd(lang, warm=None):
    """warm: the argument of a warm runner (src/sandbox/runner/runner.h): the
    modules to load, or "warm" for the generic runner ("pl"); a list is
    its arguments (the generic runner's "warm" and a checker's argv)."""
    extra = [] if warm is None else list(warm) if isinstance(warm, (list, tuple)) else [warm]
    if lang in ("pl", "pp"):
        return [PERL, "-e", PL_SRC] + extra
    if lang == "py":
        return [PYTHON, "-u", "-c", PY_SRC] + extra
    return [NODE, "-e", JS_SRC] + extra


def split_record(data):
    """(bytes before the record but for file frames, record dict or None,
    bytes after it, [frame lines as bytes]): a line after the marker that
    starts with F, D, E or L is a file frame (src/sandbox/output/outfiles.h)."""
    marker = PREFIX + NONCE.encode() + b":"
    out, frames = b"", []
    while True:
        i = data.find(marker)
        if i < 0:
            return out + data, None, b"", frames
        out += data[:i]
        rest = data[i + len(marker):]
        nl = rest.find(b"\n")
        if nl < 0:
            raise Failure("record without newline: %r" % rest[:200])
        line = rest[:nl]
        if line[:1] in (b"F", b"D", b"E", b"L"):
            frames.append(line)
            data = rest[nl + 1:]
            continue
        rec = json.loads(line)
        # The generic runner's step timings (for the benchmark): checked
        # here, then left out of the comparisons.
        steps = rec.pop("steps_ms", None) if isinstance(rec, dict) else None
        if steps is not None:
            check(isinstance(steps, dict) and set(steps) <= {"compile", "typecheck", "run"}
                  and all(isinstance(v, (int, float)) and v >= 0 for v in steps.values()),
                  "bad steps_ms: %r" % (steps,))
        return out, rec, rest[nl + 1:], frames


class Result:
    """stdout/stderr are the program's bytes before the record on each."""

    def __init__(self, proc_rc, out, err, cwd):
        self.rc = proc_rc
        self.cwd = cwd
        self.stdout, self.record, self.after, self.frames = split_record(out)
        err_bytes, self.err_record, self.err_after, err_frames = split_record(err)
        if err_frames:
            raise Failure("file frames on stderr: %r" % err_frames[:3])
        self.stderr = err_bytes.decode("utf-8", "replace")

    @property
    def out(self):
        return self.stdout.decode("utf-8", "replace")


def run(lang, code=None, stdin="", request=None, timeout=30, feed=None, nonblock=False,
        warm=None, files=None, env=None):
    """Runs the runner in a fresh temp dir. request: raw bytes to send
    instead of a framed `code`; feed(fd, data): custom writer; warm: run it
    as a warm runner with this modules argument; files: {name: text} put in
    the directory first; env: the runner's environment (default: ours)."""
    data = request if request is not None else frame(code, stdin)
    if lang == "pp" and env is None:
        env = pp_env()
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-") as d:
        for name, text in (files or {}).items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        r, w = os.pipe()
        if nonblock:
            os.set_blocking(r, False)
        p = subprocess.Popen(runner_cmd(lang, warm), cwd=d, stdin=r, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env)
        os.close(r)

        def writer():
            try:
                if feed:
                    feed(w, data)
                else:
                    os.write(w, data) if len(data) < 65536 else _write_all(w, data)
            except BrokenPipeError:
                pass
            finally:
                os.close(w)

        t = threading.Thread(target=writer)
        t.start()
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise Failure("timed out")
        t.join()
        return Result(p.returncode, out, err, d)


def pp_env():
    """The environment of a runner that cannot load JSON::XS."""
    lib = PP_LIB + (":" + os.environ["PERL5LIB"] if os.environ.get("PERL5LIB") else "")
    return dict(os.environ, PERL5LIB=lib)


def make_pp_lib():
    d = tempfile.mkdtemp(prefix="mcpsbx-rt-pp-")
    os.mkdir(os.path.join(d, "JSON"))
    with open(os.path.join(d, "JSON", "XS.pm"), "w") as f:
        # Says it was tried (the file "tried"), then fails as a module does
        # that is not there.
        f.write("open(my $fh, '>>', '%s/tried') or die $!; close $fh;\n"
                "die \"Can't locate JSON/XS.pm (mcpsbx runner test)\\n\";\n" % d)
    return d


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def run_native(lang, code, stdin="", name=None):
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-") as d:
        name = name or ("main.py" if lang == "py" else "main.js")
        with open(os.path.join(d, name), "w") as f:
            f.write(code)
        cmd = [PYTHON, "-u", name] if lang == "py" else [NODE, name]
        p = subprocess.run(cmd, cwd=d, input=stdin.encode(), capture_output=True, timeout=30)
        return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace"), d


def check_record_pair(res):
    # The same record closes stderr, so the daemon knows both are complete.
    eq(res.err_record, res.record, "stderr record")
    eq(res.err_after, b"", "stderr bytes after the record")
    eq(res.after, b"", "stdout bytes after the record")


def ok_record(res, code=0, memory_error=False):
    check(res.record is not None, "no completion record; rc=%r stderr=%r" % (res.rc, res.stderr))
    eq(res.record, {"exit_code": code, "memory_error": memory_error}, "record")
    eq(res.rc, code, "exit status")
    check_record_pair(res)


# ---- cases -----------------------------------------------------------------
CASES = []


def case(*langs):
    def deco(fn):
        for lang in langs:
            CASES.append(("%s:%s" % (lang, fn.__name__[2:]), lang, fn))
        return fn

    return deco


HELLO = {"py": 'print("hello, world")', "js": 'console.log("hello, world")'}


@case("py", "js")
def t_hello(lang):
    res = run(lang, HELLO[lang])
    ok_record(res)
    eq(res.out, "hello, world\n", "stdout")
    eq(res.stderr, "", "stderr")


ECHO = {
    "py": "import sys\nsys.stdout.write(sys.stdin.read())",
    "js": 'process.stdout.write(require("fs").readFileSync(0, "utf8"))',
}
STDIN_TEXT = "line one\nline two \u00fc\u00f1\u00ed \u2603 \U0001F600\n\ttabs\r\nno newline"


@case("py", "js")
def t_stdin_echo(lang):
    res = run(lang, ECHO[lang], STDIN_TEXT)
    ok_record(res)
    eq(res.out, STDIN_TEXT, "stdout")


@case("py", "js")
def t_stdin_nul_bytes(lang):
    res = run(lang, ECHO[lang], "a\x00b\x00\x1ec")
    ok_record(res)
    eq(res.stdout, b"a\x00b\x00\x1ec", "stdout")


@case("py", "js")
def t_stdin_large(lang):
    text = "".join("%07d\n" % i for i in range(300000))  # 2.4 MB
    res = run(lang, ECHO[lang], text)
    ok_record(res)
    eq(len(res.out), len(text), "stdout length")
    check(res.out == text, "stdout differs")


@case("py")
def t_stdin_input_lines(lang):
    res = run(lang, "a = input()\nb = input()\nprint(b, a)\nimport sys\nprint(repr(sys.stdin.read()))", "x\ny\nrest")
    ok_record(res)
    eq(res.out, "y x\n'rest'\n", "stdout")


@case("js")
def t_stdin_stream_and_readline(lang):
    code = (
        'const rl = require("readline").createInterface({ input: process.stdin });\n'
        'const lines = [];\n'
        'rl.on("line", l => lines.push(l));\n'
        'rl.on("close", () => console.log(JSON.stringify(lines)));\n'
    )
    res = run(lang, code, "x\ny\nz")
    ok_record(res)
    eq(res.out, '["x","y","z"]\n', "stdout")


def run_unread(lang, request):
    """Runs a request with the runner's stdout not read for half a second
    (a pipe that fills up), then reads everything."""
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-") as d:
        p = subprocess.Popen(runner_cmd(lang), cwd=d, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        try:
            p.stdin.write(request)
            p.stdin.close()
            p.stdin = None  # communicate() must not touch it again
            time.sleep(0.5)
            out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return Result(p.returncode, out, err, d)


@case("js")
def t_stdout_blocks_instead_of_queueing(lang):
    # 1 MiB to a pipe nobody reads yet: the writes wait for the reader
    # rather than pile up in Node's queue (which has no bound).
    code = ('const line = "y".repeat(1023) + "\\n";\n'
            'for (let i = 0; i < 1024; i++) process.stdout.write(line);\n'
            'console.error("queued " + process.stdout.writableLength);\n')
    res = run_unread(lang, frame(code))
    ok_record(res)
    eq(len(res.stdout), 1 << 20, "stdout bytes")
    eq(res.stderr, "queued 0\n", "stderr")


EMPTY = {
    "py": "import sys\nprint(repr(sys.stdin.read()))\ntry:\n    input()\nexcept EOFError:\n    print('EOF')",
    "js": 'console.log(JSON.stringify(require("fs").readFileSync(0, "utf8")));\n'
    'let n = 0; process.stdin.on("data", () => n++); process.stdin.on("end", () => console.log("end", n));',
}


@case("py", "js")
def t_empty_stdin_is_eof(lang):
    res = run(lang, EMPTY[lang], "")
    ok_record(res)
    eq(res.out, "''\nEOF\n" if lang == "py" else '""\nend 0\n', "stdout")


CHILD_STDIN = {
    "py": "import subprocess\nsubprocess.run(['cat'])",
    "js": 'require("child_process").spawnSync("cat", { stdio: "inherit" })',
}


@case("py", "js")
def t_child_process_inherits_stdin(lang):
    res = run(lang, CHILD_STDIN[lang], "to the child\n")
    ok_record(res)
    eq(res.out, "to the child\n", "stdout")


@case("py", "js")
def t_stdin_file_is_hidden(lang):
    code = {
        "py": "import os\nprint(sorted(os.listdir('.')))",
        "js": 'console.log(JSON.stringify(require("fs").readdirSync(".").sort()))',
    }[lang]
    res = run(lang, code)
    ok_record(res)
    eq(res.out.strip(), "['main.py']" if lang == "py" else '["main.js"]', "cwd listing")


EXITS = {
    "py": [("import sys\nsys.exit(3)", 3, ""), ("import sys\nsys.exit()", 0, ""),
           ("raise SystemExit(None)", 0, ""), ("import sys\nsys.exit(True)", 1, ""),
           ("import sys\nsys.exit('bye now')", 1, "bye now\n"), ("import sys\nsys.exit(256 + 7)", 7, ""),
           ("import sys\nsys.exit(-1)", 255, "")],
    "js": [("process.exit(4)", 4, ""), ("process.exitCode = 5", 5, ""),
           ("process.exitCode = 6; setTimeout(() => {}, 5)", 6, ""), ("process.exit()", 0, ""),
           ("process.exit(256 + 7)", 7, ""), ('process.exitCode = 2; process.on("exit", () => { process.exitCode = 9 })', 9, "")],
}


@case("py", "js")
def t_exit_codes(lang):
    for code, status, err in EXITS[lang]:
        res = run(lang, code)
        try:
            ok_record(res, status)
            eq(res.stderr, err, "stderr")
        except Failure as e:
            raise Failure("%r: %s" % (code, e))


@case("py")
def t_uncaught_exception_traceback(lang):
    code = "def f():\n    return 1 / 0\n\nprint('before')\nf()\n"
    res = run(lang, code)
    ok_record(res, 1)
    eq(res.out, "before\n", "stdout")
    want = "Traceback (most recent call last):\n  File \"%s/main.py\", line 5, in <module>\n" % res.cwd
    check(res.stderr.startswith(want), "traceback start: %r" % res.stderr)
    check("<string>" not in res.stderr and "_mcpsbx" not in res.stderr, "runner frames leak: %r" % res.stderr)
    check(res.stderr.endswith("ZeroDivisionError: division by zero\n"), "last line: %r" % res.stderr)


@case("js")
def t_uncaught_exception_report(lang):
    code = 'console.log("before");\nfunction f() { throw new Error("boom") }\nf()\n'
    res = run(lang, code)
    ok_record(res, 1)
    eq(res.out, "before\n", "stdout")
    want = "%s/main.js:2\nfunction f() { throw new Error(\"boom\") }\n               ^\n\nError: boom\n    at f (%s/main.js:2:22)\n" % (res.cwd, res.cwd)
    check(res.stderr.startswith(want), "report start: %r" % res.stderr)
    check(re.search(r"\nNode\.js v\d+\.\d+\.\d+\n$", res.stderr), "trailer: %r" % res.stderr)


@case("py")
def t_syntax_error(lang):
    res = run(lang, "x = 1\nprint(x +)\n")
    ok_record(res, 1)
    eq(res.stderr, '  File "%s/main.py", line 2\n    print(x +)\n             ^\nSyntaxError: invalid syntax\n' % res.cwd, "stderr")


@case("js")
def t_syntax_error(lang):
    res = run(lang, "const x = 1;\nlet y = ;\n")
    ok_record(res, 1)
    check(res.stderr.startswith("%s/main.js:2\nlet y = ;\n        ^\n\nSyntaxError: Unexpected token ';'\n" % res.cwd), "stderr: %r" % res.stderr)


THREAD = {
    "py": "import threading, time\ndef w():\n    time.sleep(0.3)\n    print('from thread')\n"
    "threading.Thread(target=w).start()\nprint('main done')",
    "js": 'setTimeout(() => console.log("from timer"), 300); console.log("main done")',
}


@case("py", "js")
def t_pending_work_finishes_before_record(lang):
    res = run(lang, THREAD[lang])
    ok_record(res)
    eq(res.out, "main done\nfrom %s\n" % ("thread" if lang == "py" else "timer"), "stdout")


@case("py")
def t_thread_pool_and_daemon_thread(lang):
    code = ("import concurrent.futures, threading, time\n"
            "threading.Thread(target=lambda: time.sleep(30), daemon=True).start()\n"
            "ex = concurrent.futures.ThreadPoolExecutor(2)\n"
            "ex.submit(lambda: (time.sleep(0.2), print('pool')))\n"
            "print('main')")
    t0 = time.monotonic()
    res = run(lang, code)
    ok_record(res)
    eq(res.out, "main\npool\n", "stdout")
    check(time.monotonic() - t0 < 10, "waited for a daemon thread")


AT_EXIT = {
    "py": "import atexit\natexit.register(lambda: print('at exit'))\nprint('main')\nraise SystemExit(2)",
    "js": 'process.on("exit", (c) => console.log("exit listener", c)); console.log("main"); process.exitCode = 2',
}


@case("py", "js")
def t_exit_handlers_before_record(lang):
    res = run(lang, AT_EXIT[lang])
    ok_record(res, 2)
    eq(res.out, "main\nat exit\n" if lang == "py" else "main\nexit listener 2\n", "stdout")


@case("py")
def t_print_without_newline_flushed(lang):
    res = run(lang, "import sys\nsys.stdout.write('no newline')\nsys.stderr.write('err too')")
    ok_record(res)
    eq(res.out, "no newline", "stdout")
    eq(res.stderr, "err too", "stderr")


@case("js")
def t_unhandled_rejection(lang):
    code = 'async function main() {\n  await null;\n  throw new TypeError("bad " + 1);\n}\nmain();\n'
    res = run(lang, code)
    ok_record(res, 1)
    check(res.stderr.startswith("%s/main.js:3\n  throw new TypeError(\"bad \" + 1);\n        ^\n\nTypeError: bad 1\n" % res.cwd),
          "stderr: %r" % res.stderr)


@case("js")
def t_esm_import(lang):
    code = 'import fs from "fs";\nimport { join } from "path";\nconsole.log(typeof fs.readFileSync, join("a", "b"), import.meta.url.endsWith("/main.mjs"), typeof require);\n'
    res = run(lang, code)
    ok_record(res)
    eq(res.out, "function a/b true undefined\n", "stdout")


@case("js")
def t_esm_top_level_await(lang):
    res = run(lang, 'const v = await new Promise(r => setTimeout(() => r(42), 20));\nconsole.log("got", v);\n')
    ok_record(res)
    eq(res.out, "got 42\n", "stdout")


@case("js")
def t_esm_stdin_and_exit(lang):
    res = run(lang, 'import { readFileSync } from "fs";\nconsole.log(readFileSync(0, "utf8").toUpperCase());\nprocess.exitCode = 3;\n', "abc")
    ok_record(res, 3)
    eq(res.out, "ABC\n", "stdout")


@case("js")
def t_esm_uncaught(lang):
    res = run(lang, 'import "fs";\nthrow new Error("esm boom");\n')
    ok_record(res, 1)
    check(res.stderr.startswith("file://%s/main.mjs:2\nthrow new Error(\"esm boom\");\n      ^\n\nError: esm boom\n" % res.cwd), "stderr: %r" % res.stderr)


@case("js")
def t_cjs_with_return_and_shebang_stays_cjs(lang):
    res = run(lang, '#!/usr/bin/env node\nconsole.log(typeof require, typeof module);\nreturn;\nconsole.log("unreached");\n')
    ok_record(res)
    eq(res.out, "function object\n", "stdout")


MAIN_CHECK = {
    "py": "import sys\nprint(__name__ == '__main__', __file__.endswith('/main.py'), sys.argv, sys.modules['__main__'].__dict__ is globals(), "
    "__spec__, __package__, sorted(k for k in globals() if k.startswith('__')))",
    "js": 'console.log(require.main === module, __filename.endsWith("/main.js"), process.argv.length, process.argv[1] === __filename, '
    'module.id, JSON.stringify(process.execArgv))',
}
MAIN_WANT = {
    "py": "True True ['main.py'] True None None ['__annotations__', '__builtins__', '__cached__', '__doc__', '__file__', "
    "'__loader__', '__name__', '__package__', '__spec__']\n",
    "js": "true true 2 true . []\n",
}


@case("py", "js")
def t_main_module_identity(lang):
    res = run(lang, MAIN_CHECK[lang])
    ok_record(res)
    eq(res.out, MAIN_WANT[lang], "stdout")


HIDDEN = {
    "py": ["_mcpsbx_runner", "nonce", "finish", "prefix", "own_pid", "mod", "write_all", "req"],
    "js": ["nonce", "writeRecord", "origEmit", "PREFIX", "fatal", "renderFatal", "fs", "vm", "proc", "req"],
}


@case("py", "js")
def t_runner_names_invisible(lang):
    if lang == "py":
        code = "\n".join("try:\n    %s\n    print('LEAK %s')\nexcept NameError:\n    pass" % (n, n) for n in HIDDEN[lang])
        code += "\nprint(sorted(k for k in globals() if not k.startswith('__')))"
        want = "[]\n"
    else:
        code = "console.log(JSON.stringify([%s].filter(x => x)));" % ",".join(
            '(typeof %s !== "undefined" ? "%s" : "")' % (n, n) for n in HIDDEN[lang])
        code += '\nconsole.log(typeof globalThis.require, typeof globalThis.module, typeof globalThis.__filename, typeof process._eval)'
        want = "[]\nundefined undefined undefined undefined\n"
    res = run(lang, code)
    ok_record(res)
    eq(res.out, want, "stdout")


@case("py")
def t_memory_error_marked(lang):
    res = run(lang, "print('start')\nx = bytearray(1 << 60)\n")
    ok_record(res, 1, memory_error=True)
    check(res.stderr.rstrip().endswith("MemoryError"), "stderr: %r" % res.stderr)


@case("js")
def t_memory_error_marked(lang):
    res = run(lang, "const b = new ArrayBuffer(2 ** 40);\n")
    ok_record(res, 1, memory_error=True)
    check("RangeError: Array buffer allocation failed" in res.stderr, "stderr: %r" % res.stderr)


@case("py")
def t_keyboard_interrupt(lang):
    res = run(lang, "raise KeyboardInterrupt")
    ok_record(res, 130)
    check(res.stderr.rstrip().endswith("KeyboardInterrupt"), "stderr: %r" % res.stderr)


DECOY = {
    "py": "import sys\nsys.stdout.buffer.write(b'\\x00\\x1emcpsbx-done:' + b'f' * 32 + b':{\"exit_code\":9}\\n')\n"
    "sys.stdout.buffer.write(b'\\x00\\x1emcpsbx-do')\nprint('after')",
    "js": 'process.stdout.write("\\u0000\\u001emcpsbx-done:" + "f".repeat(32) + ":{\\"exit_code\\":9}\\n");\n'
    'process.stdout.write("\\u0000\\u001emcpsbx-do"); console.log("after")',
}


@case("py", "js")
def t_decoy_record_is_output(lang):
    res = run(lang, DECOY[lang])
    ok_record(res)
    eq(res.stdout, b"\x00\x1emcpsbx-done:" + b"f" * 32 + b':{"exit_code":9}\n\x00\x1emcpsbx-doafter\n', "stdout")


@case("py")
def t_forked_child_writes_no_record(lang):
    res = run(lang, "import os\npid = os.fork()\nif pid:\n    os.waitpid(pid, 0)\n    print('parent')\nelse:\n    print('child')\n")
    ok_record(res)
    eq(res.out, "child\nparent\n", "stdout")


@case("js")
def t_fork_runs_main_js(lang):
    code = ('if (process.argv[2] === "child") { console.log("child", require.main === module); }\n'
            'else require("child_process").fork(__filename, ["child"]).on("exit", (c) => console.log("child exit", c));\n')
    res = run(lang, code)
    ok_record(res)
    eq(res.out, "child true\nchild exit 0\n", "stdout")


@case("js")
def t_require_relative_to_cwd(lang):
    code = ('const fs = require("fs");\nfs.writeFileSync("helper.js", "module.exports = 40 + 2;");\n'
            'fs.mkdirSync("node_modules/pkg", { recursive: true });\n'
            'fs.writeFileSync("node_modules/pkg/index.js", "module.exports = \\"pkg\\";");\n'
            'console.log(require("./helper"), require("pkg"), process.cwd() === __dirname);\n')
    res = run(lang, code)
    ok_record(res)
    eq(res.out, "42 pkg true\n", "stdout")


@case("py")
def t_import_sibling_module(lang):
    res = run(lang, "open('helper.py', 'w').write('X = 42')\nimport helper\nprint(helper.X)")
    ok_record(res)
    eq(res.out, "42\n", "stdout")


@case("py", "js")
def t_output_with_nul_and_big_output(lang):
    code = {
        "py": "import sys\nsys.stdout.buffer.write(b'\\x00' * 3 + b'x' * 1000000)\nprint('end')",
        "js": 'process.stdout.write("\\u0000".repeat(3) + "x".repeat(1000000)); console.log("end")',
    }[lang]
    res = run(lang, code)
    ok_record(res)
    eq(res.stdout, b"\x00" * 3 + b"x" * 1000000 + b"end\n", "stdout")


@case("py", "js")
def t_stdout_pipe_taking_part_of_each_write(lang):
    # A pipe may take part of a large write (gVisor's take 64 KiB at a time;
    # here a non-blocking pipe nobody reads yet): nothing may be dropped.
    code = {
        "py": "import sys\nsys.stdout.write('y' * 1000000)\nsys.stderr.write('e' * 300000)\nprint('end')",
        "js": 'process.stdout.write("y".repeat(1000000)); process.stderr.write("e".repeat(300000)); console.log("end")',
    }[lang]
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-") as d:
        pipes = [os.pipe(), os.pipe()]
        for _, w in pipes:
            os.set_blocking(w, False)
        p = subprocess.Popen(runner_cmd(lang), cwd=d, stdin=subprocess.PIPE,
                             stdout=pipes[0][1], stderr=pipes[1][1])
        for _, w in pipes:
            os.close(w)
        got = [bytearray(), bytearray()]

        def drain(i):
            time.sleep(0.5)  # let the pipe fill first
            while True:
                b = os.read(pipes[i][0], 1 << 16)
                if not b:
                    break
                got[i] += b
                time.sleep(0.001)

        readers = [threading.Thread(target=drain, args=(i,)) for i in (0, 1)]
        for t in readers:
            t.start()
        p.stdin.write(frame(code))
        p.stdin.close()
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            raise Failure("timed out")
        for t in readers:
            t.join()
        for r, _ in pipes:
            os.close(r)
    res = Result(p.returncode, bytes(got[0]), bytes(got[1]), d)
    ok_record(res)
    check(res.stdout == b"y" * 1000000 + b"end\n",
          "stdout: %d bytes, ends %r" % (len(res.stdout), res.stdout[-8:]))
    check(res.stderr == "e" * 300000, "stderr: %d bytes" % len(res.stderr))


@case("py", "js")
def t_unicode_code(lang):
    code = {"py": "s = '\u00e9\u2603\U0001F600'\nprint(s, len(s))", "js": 'const s = "\u00e9\u2603\U0001F600"; console.log(s, [...s].length)'}[lang]
    res = run(lang, code)
    ok_record(res)
    eq(res.out, "\u00e9\u2603\U0001F600 3\n", "stdout")


# ---- warm runners (the pool) -------------------------------------------------
READY = b"\x00\x1emcpsbx-ready\n"
GO = b"\x00\x1emcpsbx-go\n"


def warm_run(lang, code, warm, **kw):
    """A warm runner's run: its stdout must start READY, GO; returns the
    Result with those two marks taken off stdout."""
    res = run(lang, code, warm=warm, **kw)
    check(res.stdout.startswith(READY + GO), "stdout does not start with READY, GO: %r" % res.stdout[:60])
    res.stdout = res.stdout[len(READY + GO):]
    return res


@case("py", "js")
def t_warm_hello(lang):
    res = warm_run(lang, HELLO[lang], "json,decimal" if lang == "py" else "zlib,node:fs")
    ok_record(res)
    eq(res.out, "hello, world\n", "stdout")
    eq(res.stderr, "", "stderr")


@case("py")
def t_warm_preload_is_imported_and_silent(lang):
    noisy = "import sys, warnings\nprint('noise')\nprint('noise', file=sys.stderr)\nwarnings.warn('once')\n"
    code = "import sys, warnings\nprint('noisy' in sys.modules, 'nosuchmod' in sys.modules)\nwarnings.warn('once')\n"
    res = warm_run(lang, code, "noisy,nosuchmod,json", files={"noisy.py": noisy})
    ok_record(res)
    eq(res.out, "True False\n", "stdout")
    # The warning shown (to nowhere) during the import shows again.
    check("UserWarning: once" in res.stderr, "warning not shown: %r" % res.stderr)


@case("js")
def t_warm_preload_builtins_only(lang):
    code = "console.log(Object.keys(require.cache).length, typeof require('zlib').gzipSync)"
    res = warm_run(lang, code, "zlib,left-pad,./x")
    cold = run(lang, code)
    ok_record(res)
    eq(res.out, cold.out, "stdout (warm vs cold)")


@case("py", "js")
def t_warm_looks_cold(lang):
    probe = {
        "py": "import json, os, sys\nprint(json.dumps([sys.argv, sorted(os.listdir('.')), __name__, sys.path[0] == os.getcwd(), sys.stdin.read(), sorted(globals())]))",
        "js": "const fs = require('fs');\nconsole.log(JSON.stringify([process.argv.length, process.execArgv, fs.readdirSync('.').sort(), require.main === module, fs.readFileSync(0, 'utf8')]))",
    }[lang]
    cold = run(lang, probe, stdin="in")
    ok_record(cold)
    # Every warm runner rehearses a program of its own; "" (no modules)
    # is the one where nothing else has run before the probe.
    for warm in ("json", "") if lang == "py" else ("zlib",):
        res = warm_run(lang, probe, warm, stdin="in")
        ok_record(res)
        eq(res.out, cold.out, "stdout (warm %r vs cold)" % warm)
        eq(res.stderr, cold.stderr, "stderr (warm %r vs cold)" % warm)


@case("py", "js")
def t_warm_bad_request_after_go(lang):
    # GO comes once the whole frame is read, whatever it holds.
    body = b"not json"
    res = run(lang, request=b"mcpsbx/1 %d\n" % len(body) + body, warm="")
    check(res.stdout.startswith(READY + GO), "stdout: %r" % res.stdout[:60])
    eq(res.rc, RUNNER_EXIT, "exit status")


def slow_feed(fd, data):
    # Byte-sized pieces with pauses: the runner must loop on short reads.
    for i in range(0, len(data), 7):
        os.write(fd, data[i:i + 7])
        if i < 200:
            time.sleep(0.002)


@case("py", "js")
def t_request_in_small_pieces(lang):
    res = run(lang, ECHO[lang], "pieces", feed=slow_feed)
    ok_record(res)
    eq(res.out, "pieces", "stdout")


@case("py", "js")
def t_nonblocking_stdin(lang):
    res = run(lang, ECHO[lang], "nb", feed=slow_feed, nonblock=True)
    ok_record(res)
    eq(res.out, "nb", "stdout")


def expect_runner_failure(res, with_record, msg_part):
    eq(res.rc, RUNNER_EXIT, "exit status")
    eq(res.stdout, b"", "stdout")
    if with_record:
        check(res.record is not None, "no record")
        check_record_pair(res)
        check(msg_part in res.record.get("runner_error", ""), "runner_error: %r" % res.record)
        eq(res.record.get("exit_code"), RUNNER_EXIT, "record exit_code")
    else:
        check(res.record is None, "unexpected record")
        check(res.stderr.startswith("mcpsbx runner: ") and msg_part in res.stderr, "stderr: %r" % res.stderr)


@case("py", "js", "pl", "pp")
def t_bad_requests(lang):
    body = json.dumps({"nonce": NONCE, "code": 1}).encode()
    cases = [
        (b"", False, "end of input"),
        (b"GET / HTTP/1.1\n", False, "bad request header"),
        (b"mcpsbx/2 2\n{}", False, "bad request header"),
        (b"mcpsbx/1 -1\n", False, "bad request header"),
        (b"mcpsbx/1 99999999999\n", False, "bad request header"),
        (b"mcpsbx/1 " + b"1" * 40, False, "too long"),
        (b"mcpsbx/1 67108865\n", False, "too large"),
        (b"mcpsbx/1 10\n{}", False, "end of input inside"),
        (b"mcpsbx/1 3\n{x}", False, "not JSON"),
        (b"mcpsbx/1 2\n[]", False, "not a JSON object"),
        (b'mcpsbx/1 13\n{"nonce":"a"}', False, "nonce"),
        (b"mcpsbx/1 %d\n" % len(body) + body, True, "must be strings"),
    ]
    for env in ([], "x", {"A": 1}, {"": "x"}, {"A=B": "x"}, {"A": "x\0y"}):
        body = json.dumps({"nonce": NONCE, "code": "", "env": env}).encode()
        cases.append((b"mcpsbx/1 %d\n" % len(body) + body, True, "request env"))
    for req, with_record, msg in cases:
        res = run(lang, request=req)
        try:
            expect_runner_failure(res, with_record, msg)
        except Failure as e:
            raise Failure("%r: %s" % (req[:40], e))


ENV_SHOW = {
    "py": "import os, subprocess\n"
    "print(os.environ['MCPSBX_T_SECRET'])\n"
    "print(subprocess.run(['sh', '-c', 'echo $MCPSBX_T_SECRET'], capture_output=True, text=True).stdout, end='')\n"
    "print('MCPSBX_T_SECRET' in open('/proc/self/environ', 'rb').read().decode('latin-1'))",
    "js": "const cp = require('child_process');\n"
    "console.log(process.env.MCPSBX_T_SECRET);\n"
    "process.stdout.write(cp.execSync('echo $MCPSBX_T_SECRET', { encoding: 'utf8' }));\n"
    "console.log(require('fs').readFileSync('/proc/self/environ', 'latin1').includes('MCPSBX_T_SECRET') ? 'True' : 'False');",
}


@case("py", "js")
def t_env_from_request(lang):
    # The program and its children see the request's variables; the
    # process's initial environment (what /proc shows) does not hold them.
    value = "v al=ue \u00fc \U0001F600"
    res = run(lang, request=frame(ENV_SHOW[lang], extra={"env": {"MCPSBX_T_SECRET": value}}))
    ok_record(res)
    eq(res.out, "%s\n%s\nFalse\n" % (value, value), "stdout")


VARIABLES = {
    "s": "h\u00e9llo \U0001F600\nline",
    "i": -42,
    "big": 2 ** 53,
    "f": 2.5,
    "t": True,
    "n": None,
    "arr": [1, "two", [3.5], {"k": None}],
    "obj": {"a": {"b": [False]}, "__proto__": 1, "constructor": "c"},
    "empty": {},
}
# Each variable's type and JSON text as the program sees it.
VARIABLES_SHOW = {
    "py": "import json\n"
    "for k in ('s', 'i', 'big', 'f', 't', 'n', 'arr', 'obj', 'empty'):\n"
    "    v = globals()[k]\n"
    "    print(k, type(v).__name__, json.dumps(v, sort_keys=True))\n",
    "js": "const sk = (v) => JSON.stringify(v, (k, x) => x && typeof x === 'object' && !Array.isArray(x)"
    " ? Object.fromEntries(Object.keys(x).sort().map((y) => [y, x[y]])) : x);\n"
    "const all = { s, i, big, f, t, n, arr, obj, empty };\n"
    "for (const k of Object.keys(all)) console.log(k, all[k] === null ? 'null' : Array.isArray(all[k]) ? 'array' : typeof all[k], sk(all[k]));\n"
    "try { s = 'x'; } catch (e) { console.log(e.constructor.name); }\n"
    "console.log('s' in globalThis, typeof require, (() => { const s = 1; return s; })());\n",
}


@case("py", "js")
def t_variables(lang):
    # Every JSON type arrives as the language's own value, before the
    # program's first line; JavaScript's are read-only.
    res = run(lang, request=frame(VARIABLES_SHOW[lang], extra={"variables": VARIABLES}))
    ok_record(res)
    dump = lambda v: json.dumps(v, sort_keys=True, ensure_ascii=(lang == "py"),
                                separators=(", ", ": ") if lang == "py" else (",", ":"))
    types = {
        "py": ["str", "int", "int", "float", "bool", "NoneType", "list", "dict", "dict"],
        "js": ["string", "number", "number", "number", "boolean", "null", "array", "object", "object"],
    }[lang]
    want = ""
    for (k, v), ty in zip(VARIABLES.items(), types):
        want += "%s %s %s\n" % (k, ty, dump(v))
    if lang == "js":
        want += "TypeError\nfalse function 1\n"
    eq(res.out, want, "stdout")


@case("js")
def t_variables_esm(lang):
    # An ES module sees them too, and may declare its own of the same name.
    res = run(lang, request=frame(
        "import os from 'node:os';\nconsole.log(rows.length, typeof os.cpus);\n"
        "await null;\nconsole.log(typeof name);\n",
        extra={"variables": {"rows": [1, 2], "name": "n"}}))
    ok_record(res)
    eq(res.out, "2 function\nstring\n", "stdout")
    res = run(lang, request=frame("export const rows = 3;\nconsole.log(rows);\n",
                                  extra={"variables": {"rows": [1, 2]}}))
    ok_record(res)
    eq(res.out, "3\n", "stdout")


@case("py", "js")
def t_variables_refused(lang):
    # The runner's own check (the daemon checks first): names that would
    # hide something of the language's end the run before it starts.
    bad = {
        "py": ["__import__", "print", "len", "class", "1abc", "a-b", "\u00e9t\u00e9", "x" * 129],
        "js": ["__proto__", "constructor", "toString", "require", "process", "globalThis",
               "class", "let", "yield", "1abc", "a-b", "undefined", "module", "exports", "setTimeout",
               "x" * 129],
    }[lang]
    for name in bad:
        res = run(lang, request=frame("print(1)" if lang == "py" else "console.log(1)",
                                      extra={"variables": {"ok": 1, name: 2}}))
        try:
            expect_runner_failure(res, True, "is not allowed")
            eq(res.out, "", "stdout")
        except Failure as e:
            raise Failure("%r: %s" % (name[:20], e))
    for req_vars in ([], "x", 1):
        res = run(lang, request=frame("", extra={"variables": req_vars}))
        expect_runner_failure(res, True, "variables must be an object")


# (code, the record's check) for a check-only request: the first error's
# message, 1-based line and column, as running the code would report it.
CHECKS = {
    "py": [
        ("print('ok')\nimport os\n", {"ok": True}),
        ("x = 1\ny = (\n", {"ok": False, "message": "SyntaxError: '(' was never closed", "line": 2, "column": 5}),
        ("def f():\nreturn 1\n", {"ok": False, "message": "IndentationError: expected an indented block after function definition on line 1", "line": 2, "column": 1}),
        ("x = 1 +* 2\n", {"ok": False, "message": "SyntaxError: invalid syntax", "line": 1, "column": 8}),
        ("a\0b", {"ok": False, "message": "SyntaxError: source code string cannot contain null bytes", "line": None, "column": None}),
    ],
    "js": [
        ("console.log('ok');\nreturn;\n", {"ok": True}),
        ("#!/usr/bin/env node\nconst a = 1;\n", {"ok": True}),
        ("let x = 1;\nlet y = (;\n", {"ok": False, "message": "SyntaxError: Unexpected token ';'", "line": 2, "column": 10}),
        ("x = 1\n  foo bar\n", {"ok": False, "message": "SyntaxError: Unexpected identifier", "line": 2, "column": 7}),
        ("import fs from 'fs';\nawait 1;\nexport const a = fs;\n", {"ok": True}),
        ("import fs from 'fs';\nconst = 2;\n", {"ok": False, "message": "SyntaxError: Unexpected token '='", "line": 2, "column": 7}),
    ],
}


@case("py", "js")
def t_check_only(lang):
    # Parsed, never run: no output, no file written, nothing bound.
    for code, want in CHECKS[lang]:
        for warm in (None, ""):
            res = run(lang, request=frame(code, extra={"check": True, "variables": {"v": 1}}), warm=warm)
            try:
                check(res.record is not None, "no record; rc=%r stderr=%r" % (res.rc, res.stderr))
                got = dict(res.record.get("check") or {})
                if lang == "js" and want.get("message", "").endswith("Unexpected identifier") and \
                        got.get("message", "").startswith("SyntaxError: Unexpected identifier"):
                    got["message"] = want["message"]  # newer Node names the identifier
                if lang == "py" and "null bytes" in want.get("message", "") and "null bytes" in got.get("message", ""):
                    got["message"] = want["message"]  # ValueError before Python 3.12
                eq(got, want, "check")
                eq(res.record.get("exit_code"), 0, "exit_code")
                eq(res.rc, 0, "exit status")
                out = res.stdout.replace(b"\x00\x1emcpsbx-ready\n", b"").replace(b"\x00\x1emcpsbx-go\n", b"")
                eq(out, b"", "stdout")
                eq(res.stderr, "", "stderr")
            except Failure as e:
                raise Failure("%r (warm=%r): %s" % (code[:30], warm, e))


@case("py")
def t_check_long_message(lang):
    # An error quoting a long non-ASCII name still fits the record.
    name = "\U00020000" * 460
    res = run(lang, request=frame("def f(%s, %s):\n    pass\n" % (name, name), extra={"check": True}))
    check(res.record is not None, "no record; rc=%r stderr=%r" % (res.rc, res.stderr))
    got = res.record.get("check") or {}
    eq(got.get("ok"), False, "ok")
    check(got.get("message", "").startswith("SyntaxError: duplicate argument"), "message: %r" % got.get("message", "")[:80])
    eq(got.get("line"), 1, "line")


@case("js")
def t_check_label_like_message(lang):
    # The source line shown above the caret is not the error's message.
    res = run(lang, request=frame("SyntaxError: for (;;) { let x = (; }\n", extra={"check": True}))
    eq((res.record or {}).get("check"), {"ok": False, "message": "SyntaxError: Unexpected token ';'",
                                         "line": 1, "column": 34}, "check")


@case("js")
def t_warm_package_scope(lang):
    # A package.json the program writes counts, warm or cold: the warm-up
    # cached nothing about the working directory's package scope.
    code = ("import fs from 'fs';\n"
            "fs.writeFileSync('package.json', '{\"type\":\"module\"}');\n"
            "fs.writeFileSync('x.js', 'export const v = 42;');\n"
            "const m = await import('./x.js');\nconsole.log(m.v, fs.existsSync('.mcpsbx-warm'));\n")
    for warm in (None, ""):
        res = run(lang, code, warm=warm)
        ok_record(res)
        out = res.stdout.replace(b"\x00\x1emcpsbx-ready\n", b"").replace(b"\x00\x1emcpsbx-go\n", b"")
        eq(out, b"42 false\n", "stdout (warm=%r)" % warm)


@case("py", "js")
def t_reads_exactly_the_frame(lang):
    # Bytes after the frame are not the program's stdin and not consumed.
    res = run(lang, ECHO[lang], request=frame(ECHO[lang], "mine") + b"NOT STDIN")
    ok_record(res)
    eq(res.out, "mine", "stdout")


# Same program, run by the runner and the ordinary way: stderr and exit
# status must match (Node: ignoring stack frames outside the program, which
# name the runner's eval instead of node's run_main_module).
FIDELITY = {
    "py": [
        "def f():\n    1/0\nf()",
        "x = (",
        "  print(1)",
        "raise SystemExit('bye')",
        "import no_such_module_here",
        "try:\n    1/0\nexcept Exception as e:\n    raise ValueError('v') from e",
        "try:\n    1/0\nexcept Exception:\n    {}['k']",
        "def f(): f()\nf()",
        "import threading\nt = threading.Thread(target=lambda: 1/0)\nt.start(); t.join()\nprint('ok')",
        "import atexit\ndef bad():\n    raise RuntimeError('in atexit')\natexit.register(bad)",
        "import warnings\nwarnings.warn('careful')",
        "import sys\nsys.excepthook = lambda t, v, tb: print('hooked', t.__name__, file=sys.stderr)\n1/0",
        "class E(Exception):\n    pass\nraise E('custom')",
        "exec('1/0')",
        "import sys\nprint(sys.stdin.read().upper())\nassert False, 'msg'",
        "raise ExceptionGroup('eg', [ValueError(1), TypeError(2)])",
    ],
    "js": [
        'function f() { throw new Error("boom") }\nf()',
        "let x = ;",
        'setTimeout(() => { throw new Error("async") }, 1)',
        "setTimeout(() => {\n  const x = {};\n  x.y.z = 1\n}, 1)",
        "async function main() { await null; null.foo() } main()",
        'Promise.reject(new Error("rej"))',
        "Promise.reject(42)",
        'throw "a string"',
        "JSON.parse('{')",
        "setTimeout(() => JSON.parse('{'), 1)",
        "undefinedFn()",
        'require("./nope")',
        'class E extends Error { constructor(m) { super(m); this.name = "E"; this.extra = 1 } }\nthrow new E("custom")',
        'const e = new Error("with props"); e.code = "X"; throw e',
        '\tif (1) { throw new Error("tab") }',
        "function rec() { rec() } rec()",
        'setTimeout(() => eval("{("), 1)',
        'const e = new Error("made early");\nsetTimeout(() => { throw e }, 1)',
        "process.nextTick(() => { undefinedThing.x })",
        'require("fs").readFile("/nope", (err) => { if (err) throw err })',
        'const ee = new (require("events"))(); ee.emit("error", new Error("ee"))',
        'setTimeout(() => { new (require("events"))().emit("error", new Error("ee2")) }, 1)',
        'process.on("exit", () => { throw new Error("in exit") })',
        'process.on("uncaughtException", (e) => { console.error("handled", e.message); process.exitCode = 3 }); throw new Error("x")',
        'const s = "\u00e9\u00e9"; setTimeout(() => { throw new Error(s) }, 1)',
        'import fs from "fs"; throw new Error("esm")',
        'import fs from "fs"; let y = ;',
        "await new Promise(() => {})",
        'import "fs"; setTimeout(() => { throw new RangeError("esm timer") })',
        'console.log(Object.getOwnPropertyNames(globalThis).sort().join(" "))',
        'console.log(typeof fs, typeof path, typeof require, typeof module, typeof exports)',
        'console.log(Object.keys(require.cache).length, module.paths.length, process.argv.length)',
    ],
}


def node_norm(s):
    keep = []
    for line in s.split("\n"):
        if re.match(r"^\s+at ", line) and "main.js" not in line and "main.mjs" not in line:
            continue
        if line.startswith("    [... lines matching original stack trace"):
            continue
        keep.append(line)
    return "\n".join(keep)


def py_norm(s):
    s = re.sub(r"0x[0-9a-f]+", "0x?", s)
    # The runner's two frames below the program count against the recursion
    # limit, so a RecursionError traceback elides 2 fewer repeats.
    return re.sub(r"\[Previous line repeated \d+ more times\]", "[Previous line repeated N more times]", s)


def fidelity(lang, code):
    esm = lang == "js" and (code.startswith("import ") or code.startswith("await "))
    name = ("main.mjs" if esm else "main.js") if lang == "js" else "main.py"
    stdin = "some input\n"
    nrc, nout, nerr, nd = run_native(lang, code, stdin, name)
    res = run(lang, code, stdin)
    if nrc < 0:
        return "native died of signal %d" % -nrc
    got_err = res.stderr.replace(res.cwd, "<cwd>")
    want_err = nerr.replace(nd, "<cwd>")
    if lang == "js":
        got_err, want_err = node_norm(got_err), node_norm(want_err)
    else:
        got_err, want_err = py_norm(got_err), py_norm(want_err)
    problems = []
    if res.rc != nrc:
        problems.append("exit status %r, native %r" % (res.rc, nrc))
    if res.stdout != nout:
        problems.append("stdout %r, native %r" % (res.stdout, nout))
    if got_err != want_err:
        problems.append("stderr differs:\n--- runner\n%s\n--- native\n%s" % (got_err, want_err))
    if res.record is not None:
        if res.record.get("exit_code") != res.rc:
            problems.append("record %r but exit status %r" % (res.record, res.rc))
        try:
            check_record_pair(res)
        except Failure as e:
            problems.append(str(e))
    elif res.err_record is not None:
        problems.append("record on stderr only")
    return "; ".join(problems) or None


def make_fidelity_case(lang, i, code):
    def fn(_lang):
        p = fidelity(lang, code)
        if p:
            raise Failure(p)

    CASES.append(("%s:fidelity_%02d %s" % (lang, i, code.split("\n")[0][:40]), lang, fn))


for _lang, _progs in FIDELITY.items():
    for _i, _code in enumerate(_progs):
        make_fidelity_case(_lang, _i, _code)



# ---- files in and out (src/sandbox/runner/runner.h) --------------------------------
OUTPUTS = {"paths": [], "max_files": 5, "max_file_bytes": 100000, "max_total_bytes": 200000,
           "plots": False, "max_plots": 0, "max_plot_bytes": 0}


def files_request(code, files=(), outputs=None, **over):
    spec = dict(OUTPUTS, **over)
    return frame(code, extra={"files": list(files), "outputs": spec if outputs is None else outputs})


def returned(res):
    """{path: bytes} and [left-out dicts] from the frames, each file's
    declared size and digest checked."""
    import base64
    import hashlib

    files, left, cur = {}, [], None
    for line in res.frames:
        kind, body = line[:1], line[1:]
        check(len(PREFIX) + 33 + len(line) + 1 <= 4096, "a frame over 4096 bytes")
        if kind == b"F":
            check(cur is None, "F inside a file")
            cur = json.loads(body)
            cur["data"] = b""
        elif kind == b"D":
            cur["data"] += base64.b64decode(body, validate=True)
        elif kind == b"E":
            eq(len(cur["data"]), cur["size"], "size of " + cur["path"])
            eq(body.decode(), hashlib.sha256(cur["data"]).hexdigest(), "sha256 of " + cur["path"])
            files[cur["path"]] = cur["data"]
            cur = None
        else:
            left.append(json.loads(body))
    check(cur is None, "a file never ended")
    return files, left


FILES_IN = [
    {"path": "data/in.csv", "content": "a,b\n1,\u00e9\n", "encoding": "utf-8"},
    {"path": "raw.bin", "content": "AAH/", "encoding": "base64"},
]
FILES_PROGRAM = {
    "py": """import os
print(open("data/in.csv", encoding="utf-8").read().split()[1], list(open("raw.bin", "rb").read()))
print(sorted(os.listdir(".")))
open("outputs/r.txt", "w").write("result")
os.makedirs("outputs/sub")
open("outputs/sub/s.bin", "wb").write(bytes(range(256)) * 40)
open("keep.log", "w").write("log")
open("skip.log2", "w").write("no")
os.chdir("/")
""",
    "js": """const fs = require('fs');
console.log(fs.readFileSync('data/in.csv', 'utf8').split('\\n')[1], JSON.stringify([...fs.readFileSync('raw.bin')]));
console.log(JSON.stringify(fs.readdirSync('.').filter((n) => n !== 'main.js').sort()));
fs.writeFileSync('outputs/r.txt', 'result');
fs.mkdirSync('outputs/sub');
fs.writeFileSync('outputs/sub/s.bin', Buffer.alloc(10240, 7));
fs.writeFileSync('keep.log', 'log');
fs.writeFileSync('skip.log2', 'no');
process.chdir('/');
""",
}


@case("py", "js")
def t_files_in_and_out(lang):
    res = run(lang, request=files_request(FILES_PROGRAM[lang], FILES_IN, paths=["*.log", "data/**"]))
    check(res.record is not None, "no record: %r" % res.stderr)
    eq(res.record.get("files"), {"sent": 4, "left_out": 0}, "files account")
    eq(res.rc, 0, "exit status")
    check_record_pair(res)
    lines = res.out.splitlines()
    eq(lines[0].replace(" ", ""), "1,\u00e9[0,1,255]", "files read")
    listing = json.loads(lines[1].replace("'", '"'))
    eq([n for n in listing if n != "main.py"], ["data", "outputs", "raw.bin"], "working directory")
    files, left = returned(res)
    eq(list(files), ["outputs/r.txt", "outputs/sub/s.bin", "keep.log", "data/in.csv"], "returned, in order")
    eq(files["outputs/r.txt"], b"result", "r.txt")
    eq(len(files["outputs/sub/s.bin"]), 10240, "s.bin")
    eq(left, [], "left out")


HOSTILE_OUT = {
    "py": """import os, threading, sys
os.symlink("/etc/passwd", "outputs/passwd")
os.symlink("/etc", "outputs/etc")
os.mkfifo("outputs/fifo")
open("h", "w").write("x")
os.link("h", "outputs/hard")
for i in range(8):
    open("outputs/f%d" % i, "w").write("y" * (i * 30000))
def noise():
    while True:
        sys.stdout.write("noise\\n" * 50)
threading.Thread(target=noise, daemon=True).start()
""",
    "js": """const fs = require('fs');
fs.symlinkSync('/etc/passwd', 'outputs/passwd');
fs.symlinkSync('/etc', 'outputs/etc');
require('child_process').execFileSync('mkfifo', ['outputs/fifo']);
fs.writeFileSync('h', 'x');
fs.linkSync('h', 'outputs/hard');
for (let i = 0; i < 8; i++) fs.writeFileSync('outputs/f' + i, 'y'.repeat(i * 30000));
require('child_process').spawn('sh', ['-c', 'for i in $(seq 3000); do echo noise; done'], { stdio: ['ignore', 'inherit', 'inherit'] });
""",
}


@case("py", "js")
def t_files_out_hostile(lang):
    # Caps: 5 files, 100000 bytes each, 200000 in all; links, a FIFO and a
    # hard link are named, never read; output written meanwhile (a thread,
    # a child) cannot split a frame.
    res = run(lang, request=files_request(HOSTILE_OUT[lang], paths=["outputs/etc/*", "*/passwd"]))
    check(res.record is not None, "no record: %r" % res.stderr[-500:])
    files, left = returned(res)
    sizes = {p: len(b) for p, b in files.items()}
    check(all(p.startswith("outputs/f") for p in sizes), "only regular files: %r" % sizes)
    check(sum(sizes.values()) <= 200000 and max(sizes.values()) <= 100000 and len(sizes) <= 5, "caps: %r" % sizes)
    reasons = {l["path"]: l["reason"] for l in left}
    check("symbolic link" in reasons.get("outputs/passwd", ""), "passwd: %r" % reasons)
    check("symbolic link" in reasons.get("outputs/etc", ""), "etc: %r" % reasons)
    check("not a regular file" in reasons.get("outputs/fifo", ""), "fifo: %r" % reasons)
    check("hard-linked" in reasons.get("outputs/hard", ""), "hard: %r" % reasons)
    eq(res.record["files"]["sent"], len(files), "sent")
    eq(res.record["files"]["left_out"], 4 + 8 - len(files), "left out")
    check(b"root:" not in b"".join(files.values()), "/etc/passwd was read")


@case("py", "js")
def t_files_bad_entry(lang):
    for entry in ({"path": "../x", "content": "", "encoding": "utf-8"},
                  {"path": "a", "content": "", "encoding": "utf-16"},
                  {"path": "a//b", "content": "", "encoding": "utf-8"},
                  {"path": "/abs", "content": "", "encoding": "utf-8"}):
        res = run(lang, request=files_request("print(1)" if lang == "py" else "console.log(1)", [entry]))
        eq(res.rc, RUNNER_EXIT, "exit status for %r" % entry)
        check("request files" in res.record.get("runner_error", ""), "runner_error: %r" % res.record)
    # An existing name is never replaced.
    res = run(lang, request=files_request("print(1)" if lang == "py" else "console.log(1)",
                                          [{"path": "x", "content": "", "encoding": "utf-8"}] * 2))
    eq(res.rc, RUNNER_EXIT, "a file twice")
    check("cannot write the file" in res.record.get("runner_error", ""), "runner_error: %r" % res.record)


@case("py", "js")
def t_no_outputs_without_request(lang):
    # Without "outputs" nothing is made or returned: the record is as before.
    code = {"py": "import os\nprint(os.path.exists('outputs'))",
            "js": "console.log(require('fs').existsSync('outputs') ? 'True' : 'False')"}
    res = run(lang, code[lang])
    ok_record(res)
    eq(res.out, "False\n", "outputs/ made")
    eq(res.frames, [], "frames")


# ---- the generic runner (runner.pl) ------------------------------------------
# Programs are bash, sh and gcc's: the "program" object tells the runner
# what to write, compile, check and run (src/sandbox/runner/runner.h).
BASH = {"source_file": "main.sh", "run": ["bash", "main.sh"]}
C_PROGRAM = {"source_file": "main.c", "compile": ["gcc", "-O2", "-Wall", "-o", "main", "main.c"],
             "compile_timeout_ms": 20000, "run": ["./main"]}


def generic_variables(variables):
    """What the daemon sends the generic runner for a `variables` object
    (src/sandbox/runner/runner.c): its compact JSON as the file's text, and each
    string (but one with a NUL), number (its JSON text) and boolean as an
    environment string."""
    env = {}
    for name, v in variables.items():
        if isinstance(v, bool):
            env[name] = "true" if v else "false"
        elif isinstance(v, (int, float)):
            env[name] = json.dumps(v)
        elif isinstance(v, str) and "\0" not in v:
            env[name] = v
    return {"variables_file": json.dumps(variables, ensure_ascii=False, separators=(",", ":")),
            "variables_env": env}


def pl_frame(code, program=BASH, stdin="", **extra):
    """A generic runner's request, written as the daemon writes it;
    program None leaves it out; variables= is made what the daemon makes
    of it (generic_variables)."""
    if program is not None:
        extra["program"] = program
    if "variables" in extra:
        extra.update(generic_variables(extra.pop("variables")))
    return frame(code, stdin, extra=extra, ascii=False)


def jsonc_string(b):
    """bytes as a JSON string the way json-c writes one: raw but for '"',
    '\\' and control characters."""
    short = {0x22: b'\\"', 0x5c: b"\\\\", 0x08: b"\\b", 0x0c: b"\\f", 0x0a: b"\\n", 0x0d: b"\\r", 0x09: b"\\t"}
    return b'"' + b"".join(short.get(c) or (b"\\u%04x" % c if c < 0x20 else bytes([c])) for c in b) + b'"'


def with_bytes(framed, raw):
    """A framed request whose placeholder strings (raw's keys) become the
    strings of raw's bytes, which need not be UTF-8."""
    body = framed.split(b"\n", 1)[1]
    for placeholder, b in raw.items():
        body = body.replace(json.dumps(placeholder).encode(), jsonc_string(b))
    return b"mcpsbx/1 %d\n" % len(body) + body


def pl_run(code, program=BASH, stdin="", warm=None, timeout=30, **extra):
    lang = getattr(CURRENT, "lang", "pl")
    return run(lang, request=pl_frame(code, program, stdin, **extra), warm=warm, timeout=timeout)


def pl_ok(res, code=0, **more):
    """The record says the program's status (more: its other members); the
    generic runner itself exits 0 once the record is out."""
    check(res.record is not None, "no completion record; rc=%r stderr=%r" % (res.rc, res.stderr))
    want = {"exit_code": code, "memory_error": False}
    want.update(more)
    eq(res.record, want, "record")
    eq(res.rc, 0, "exit status")
    check_record_pair(res)


@case("pl", "pp")
def t_hello(lang):
    res = pl_run('echo "hello, world"')
    pl_ok(res)
    eq(res.out, "hello, world\n", "stdout")
    eq(res.stderr, "", "stderr")


@case("pl")
def t_stdin_read(lang):
    res = pl_run("read x\necho got $x", stdin="abc\nrest")
    pl_ok(res)
    eq(res.out, "got abc\n", "stdout")


@case("pl", "pp")
def t_stdin_exact_bytes_shared_with_children(lang):
    # One file offset for the program and its children: head takes 3 bytes,
    # cat the rest, then EOF. JSON escapes of every kind arrive as sent.
    text = STDIN_TEXT + "\x00\x01\x1f\"\\/\b\f\x7f end"
    res = pl_run("head -c 3\ncat\ncat", stdin=text)
    pl_ok(res)
    eq(res.stdout, text.encode(), "stdout")
    # Bytes that are not UTF-8 (a surrogate's generalized UTF-8, a stray
    # byte) arrive as sent.
    raw = b"a\xed\xa0\x80b\xed\xbf\xbfc\xff"
    res = run(lang, request=with_bytes(pl_frame("cat", stdin="@STDIN@"), {"@STDIN@": raw}))
    pl_ok(res)
    eq(res.stdout, raw, "stdout")
    eq(res.stderr, "", "stderr")
    # A lone surrogate escape is not JSON text the libraries take (json-c,
    # which writes the daemon's requests, never writes one: it reads one as
    # U+FFFD).
    res = run(lang, request=frame("cat", "a\ud800b", extra={"program": BASH}))
    expect_runner_failure(res, False, "surrogate")


@case("pl")
def t_stdin_large(lang):
    text = "".join("%07d\n" % i for i in range(300000))  # 2.4 MB
    t0 = time.monotonic()
    res = pl_run("cat", stdin=text)
    pl_ok(res)
    check(res.out == text, "stdout differs (%d bytes)" % len(res.out))
    check(time.monotonic() - t0 < 10, "slow request reading")


NODE_PROGRAM = {"source_file": "main.js", "run": ["node", "main.js"]}


@case("pl")
def t_node_stdout_blocks_instead_of_queueing(lang):
    # A node program under the generic runner (TypeScript's, or one an
    # operator adds): 1 MiB to a pipe nobody reads yet waits for the reader
    # rather than piling up in Node's unbounded queue; a node it starts
    # does the same, and a NODE_OPTIONS of the request's env is kept.
    child = r"for (let i = 0; i < 512; i++) process.stdout.write('z'.repeat(1023) + '\n');" \
        r" console.error('child ' + process.stdout.writableLength);"
    code = ('const line = "y".repeat(1023) + "\\n";\n'
            'for (let i = 0; i < 512; i++) process.stdout.write(line);\n'
            'const limit = require("v8").getHeapStatistics().heap_size_limit;\n'
            'console.error("queued " + process.stdout.writableLength, limit < 400 * 2 ** 20);\n'
            'require("child_process").execFileSync("node", ["-e", %s], {stdio: "inherit"});\n'
            % json.dumps(child))
    request = pl_frame(code, NODE_PROGRAM, env={"NODE_OPTIONS": "--max-old-space-size=256"})
    res = run_unread(lang, request)
    pl_ok(res)
    eq(len(res.stdout), 1 << 20, "stdout bytes")
    eq(res.stderr, "queued 0 true\nchild 0\n", "stderr")


@case("pl")
def t_empty_stdin_is_eof(lang):
    res = pl_run("if read x; then echo read; else echo EOF; fi\ncat /dev/stdin | wc -c")
    pl_ok(res)
    eq(res.out.split(), ["EOF", "0"], "stdout")


@case("pl", "pp")
def t_unicode_code(lang):
    res = pl_run("s='\u00e9\u2603\U0001F600'\necho \"$s\"\nprintf %s \"$s\" | wc -c")
    pl_ok(res)
    eq(res.out.split(), ["\u00e9\u2603\U0001F600", "9"], "stdout")


@case("pl")
def t_exit_codes(lang):
    for code, status in (("exit 3", 3), ("exit 0", 0), ("false", 1), ("exit 255", 255),
                         ("echo before\nkill -9 $$\necho after", 137), ("kill -TERM $$", 143)):
        res = pl_run(code)
        try:
            pl_ok(res, status)
            check("after" not in res.out, "ran on after the signal")
        except Failure as e:
            raise Failure("%r: %s" % (code, e))


@case("pl")
def t_exec_failure(lang):
    res = pl_run("echo no", {"source_file": "main.sh", "run": ["./no-such-program", "x"]})
    pl_ok(res, 127)
    eq(res.stderr, "cannot run ./no-such-program: No such file or directory\n", "stderr")
    eq(res.out, "", "stdout")


@case("pl")
def t_closed_stdout_still_gets_record(lang):
    res = pl_run("echo first\nexec 1>&-\necho gone >&2\nexit 5")
    pl_ok(res, 5)
    eq(res.out, "first\n", "stdout")
    eq(res.stderr, "gone\n", "stderr")


@case("pl")
def t_leftovers_killed(lang):
    # What the program left running in its group is killed once it exited:
    # nothing writes after the record, and the streams end.
    t0 = time.monotonic()
    res = pl_run("(sleep 20; echo late) &\n(trap '' TERM HUP; sleep 20; echo later >&2) &\necho main", timeout=15)
    pl_ok(res)
    eq(res.out, "main\n", "stdout")
    check(time.monotonic() - t0 < 10, "waited for the leftovers")


@case("pl")
def t_sigpipe_default_in_program(lang):
    # The runner ignores SIGPIPE for itself; the program gets the default.
    res = pl_run("yes | head -n 2")
    pl_ok(res)
    eq(res.out, "y\ny\n", "stdout")
    eq(res.stderr, "", "stderr")


@case("pl")
def t_only_standard_descriptors(lang):
    # The runner's own descriptors (the stdin file, /dev/null, the request)
    # are close-on-exec: the compile step and the program have 0, 1, 2.
    # (stat, not a listing: a listing opens a descriptor of its own)
    fds = "n=0; while [ $n -lt 256 ]; do [ -e /proc/$$/fd/$n ] && echo $n; n=$((n + 1)); done"
    res = pl_run("", {"source_file": "main.sh", "compile": ["sh", "-c", fds],
                      "compile_timeout_ms": 5000, "run": ["sh", "-c", fds]})
    pl_ok(res)
    eq(res.out.split(), ["0", "1", "2"], "program's descriptors")
    eq(res.stderr.split(), ["0", "1", "2"], "compile step's descriptors")


@case("pl")
def t_steps_streams(lang):
    # The compile step's and the typecheck's stdout go to stderr and their
    # stdin is /dev/null; the program's stdin is the request's.
    prog = {"source_file": "main.sh",
            "compile": ["sh", "-c", "echo compiled $(cat | wc -c); echo compile-err >&2"],
            "compile_timeout_ms": 5000,
            "typecheck": ["sh", "-c", "echo checked $(cat | wc -c)"],
            "run": ["sh", "-c", "echo ran; cat"]}
    res = pl_run("", prog, stdin="data")
    pl_ok(res)
    eq(res.out, "ran\ndata", "stdout")
    eq(res.stderr.split("\n"), ["compiled 0", "compile-err", "checked 0", ""], "stderr")


C_HELLO = r"""#include <stdio.h>
int main(void) {
    char buf[64];
    if (!fgets(buf, sizeof buf, stdin))
        return 9;
    printf("C says %s", buf);
    fprintf(stderr, "to stderr\n");
    return 4;
}
"""


@case("pl")
def t_c_compile_and_run(lang):
    res = pl_run(C_HELLO, C_PROGRAM, stdin="hi\n")
    pl_ok(res, 4)
    eq(res.out, "C says hi\n", "stdout")
    eq(res.stderr, "to stderr\n", "stderr")


@case("pl")
def t_c_warning_then_run(lang):
    res = pl_run('#include <stdio.h>\nint main(void) { int unused; puts("ok"); return 0; }\n', C_PROGRAM)
    pl_ok(res)
    eq(res.out, "ok\n", "stdout")
    check("unused" in res.stderr and "warning" in res.stderr, "gcc's warning: %r" % res.stderr)


@case("pl")
def t_c_compile_error(lang):
    res = pl_run("int main(void) { return x; }\n", C_PROGRAM, stdin="in")
    pl_ok(res, 1, compile_error={"exit_code": 1, "timed_out": False})
    eq(res.stdout, b"", "stdout")
    check("main.c:1" in res.stderr and "error" in res.stderr and "undeclared" in res.stderr,
          "gcc's message: %r" % res.stderr)
    check("cannot run" not in res.stderr, "the program was run: %r" % res.stderr)


@case("pl")
def t_compiler_missing(lang):
    res = pl_run("echo no", dict(BASH, compile=["no-such-compiler", "x"], compile_timeout_ms=5000))
    pl_ok(res, 127, compile_error={"exit_code": 127, "timed_out": False})
    eq(res.stderr, "cannot run no-such-compiler: No such file or directory\n", "stderr")
    eq(res.out, "", "stdout")


@case("pl")
def t_compile_timeout(lang):
    # Killed with what it started (the background sleep would hold stderr
    # open): the stream ends at once.
    t0 = time.monotonic()
    prog = dict(BASH, compile=["sh", "-c", "sleep 20 & sleep 5"], compile_timeout_ms=300)
    res = pl_run("echo never", prog, timeout=15)
    pl_ok(res, 137, compile_error={"exit_code": 137, "timed_out": True})
    eq(res.out, "", "stdout")
    check(time.monotonic() - t0 < 4, "took %.1f s" % (time.monotonic() - t0))


@case("pl")
def t_compile_killed_by_signal(lang):
    res = pl_run("echo never", dict(BASH, compile=["sh", "-c", "kill -SEGV $$"], compile_timeout_ms=5000))
    pl_ok(res, 139, compile_error={"exit_code": 139, "timed_out": False})
    eq(res.out, "", "stdout")


TYPECHECK_FAILS = ["sh", "-c", "echo typeerr >&2; exit 2"]


@case("pl")
def t_typecheck_reported_only(lang):
    res = pl_run("echo ran", dict(BASH, typecheck=TYPECHECK_FAILS))
    pl_ok(res, 0, typecheck_error={"exit_code": 2, "timed_out": False})
    eq(res.out, "ran\n", "stdout")
    eq(res.stderr, "typeerr\n", "stderr")
    res = pl_run("echo ran", dict(BASH, typecheck=TYPECHECK_FAILS, typecheck_blocks=False))
    pl_ok(res, 0, typecheck_error={"exit_code": 2, "timed_out": False})
    eq(res.out, "ran\n", "stdout")


@case("pl")
def t_typecheck_blocks(lang):
    res = pl_run("echo ran", dict(BASH, typecheck=TYPECHECK_FAILS, typecheck_blocks=True))
    pl_ok(res, 2, compile_error={"exit_code": 2, "timed_out": False})
    eq(res.out, "", "stdout")
    eq(res.stderr, "typeerr\n", "stderr")
    # A passing one lets the program run, and says nothing.
    res = pl_run("echo ran", dict(BASH, typecheck=["true"], typecheck_blocks=True))
    pl_ok(res)
    eq(res.out, "ran\n", "stdout")


@case("pl")
def t_typecheck_timeout(lang):
    prog = dict(BASH, compile=["true"], compile_timeout_ms=300, typecheck=["sleep", "5"])
    res = pl_run("echo ran", prog, timeout=15)
    pl_ok(res, 0, typecheck_error={"exit_code": 137, "timed_out": True})
    eq(res.out, "ran\n", "stdout")
    check("typecheck was stopped after 300 ms" in res.stderr, "stderr: %r" % res.stderr)
    res = pl_run("echo ran", dict(prog, typecheck_blocks=True), timeout=15)
    pl_ok(res, 137, compile_error={"exit_code": 137, "timed_out": True})
    eq(res.out, "", "stdout")


# A warm checker (runner.pl's warm_check) that does as its mode says once
# it has read the file's name.
FAKE_CHECKER = r"""
read -r f || exit 3
checked() { printf '\000\036mcpsbx-checked\n'; exit "$1"; }
case "$1" in
ok) checked 0 ;;
errors) echo "$f(1,1): error TS1: warm says no"; checked 2 ;;
crash) echo "checker crashed"; exit 7 ;;
crash-marked) echo "checker crashed"; checked 7 ;;
unmarked) echo "$f(1,1): error TS1: warm says no"; exit 2 ;;
slow) sleep 5; checked 0 ;;
flood) head -c 9000000 /dev/zero | tr '\0' x; checked 2 ;;
edge) head -c 8388603 /dev/zero | tr '\0' x; checked 2 ;;
esac
"""


def pl_warm_run(code, program, checker, timeout=30, **extra):
    """A warm generic runner with a checker (argv, or a FAKE_CHECKER mode)
    runs code; its READY and GO are taken off stdout."""
    argv = checker if isinstance(checker, list) else ["sh", "-c", FAKE_CHECKER, "checker", checker]
    res = run("pl", request=pl_frame(code, program, **extra), warm=["warm"] + argv, timeout=timeout)
    check(res.stdout.startswith(READY + GO), "stdout does not start with READY, GO: %r" % res.stdout[:60])
    res.stdout = res.stdout[len(READY + GO):]
    return res


@case("pl")
def t_warm_checker_reports(lang):
    prog = dict(BASH, typecheck=TYPECHECK_FAILS)
    res = pl_warm_run("echo ran", prog, "errors")
    pl_ok(res, 0, typecheck_error={"exit_code": 2, "timed_out": False}, typecheck_by="warm")
    eq(res.out, "ran\n", "stdout")
    eq(res.stderr, "main.sh(1,1): error TS1: warm says no\n", "stderr: the warm checker's, not the cold one's")
    res = pl_warm_run("echo ran", dict(prog, typecheck_blocks=True), "errors")
    pl_ok(res, 2, compile_error={"exit_code": 2, "timed_out": False}, typecheck_by="warm")
    eq(res.out, "", "stdout")
    res = pl_warm_run("echo ran", prog, "ok")
    pl_ok(res, 0, typecheck_by="warm")
    eq((res.out, res.stderr), ("ran\n", ""), "stdout, stderr")


@case("pl")
def t_warm_checker_failing_leaves_it_to_the_cold_command(lang):
    prog = dict(BASH, typecheck=TYPECHECK_FAILS)
    for checker in ("crash", "crash-marked", "unmarked", ["/nonexistent/checker"], ["sh", "-c", "exit 0"],
                    ["sh", "-c", "exec 0<&-; sleep 1"]):
        res = pl_warm_run("echo ran", prog, checker)
        try:
            pl_ok(res, 0, typecheck_error={"exit_code": 2, "timed_out": False}, typecheck_by="cold")
            eq((res.out, res.stderr), ("ran\n", "typeerr\n"), "stdout, stderr: the cold command's only")
        except Failure as e:
            raise Failure("checker %r: %s" % (checker, e))


@case("pl")
def t_warm_checker_timeout(lang):
    prog = dict(BASH, compile=["true"], compile_timeout_ms=300, typecheck=TYPECHECK_FAILS)
    t0 = time.monotonic()
    res = pl_warm_run("echo ran", prog, "slow")
    pl_ok(res, 0, typecheck_error={"exit_code": 137, "timed_out": True}, typecheck_by="warm")
    eq(res.out, "ran\n", "stdout")
    check("typecheck was stopped after 300 ms" in res.stderr, "stderr: %r" % res.stderr)
    check(time.monotonic() - t0 < 4, "took %.1f s" % (time.monotonic() - t0))


@case("pl")
def t_warm_checker_output_is_capped(lang):
    res = pl_warm_run("echo ran", dict(BASH, typecheck=TYPECHECK_FAILS), "flood")
    pl_ok(res, 0, typecheck_error={"exit_code": 2, "timed_out": False}, typecheck_by="warm")
    eq(res.out, "ran\n", "stdout")
    kept, _, note = res.stderr.partition("mcpsbx: ")
    eq(len(kept), 8 << 20, "bytes of the checker's output kept")
    eq(note, "%d more bytes of the typecheck's output were left out\n" % (9000000 - (8 << 20)), "the note")
    # Only the end mark beyond the cap: all the output, and no note.
    res = pl_warm_run("echo ran", dict(BASH, typecheck=TYPECHECK_FAILS), "edge")
    pl_ok(res, 0, typecheck_error={"exit_code": 2, "timed_out": False}, typecheck_by="warm")
    eq(res.stderr, "x" * ((8 << 20) - 5), "stderr")


@case("pl")
def t_warm_checker_ends_before_the_program(lang):
    # Unused (no typecheck) or done, the checker is gone before the program
    # starts: what it would do later never happens.
    lingers = ["sh", "-c", "read -r f; (sleep 0.5; touch lingered) >/dev/null 2>&1 & exit 0"]
    for prog in (BASH, dict(BASH, typecheck=["true"])):
        res = pl_warm_run("sleep 1.5; ls lingered 2>/dev/null; echo done", prog, lingers)
        check(res.record is not None and res.record["exit_code"] == 0, "record: %r" % (res.record,))
        eq(res.out, "done\n", "stdout: no file of the checker's (%r)" % (prog,))


PL_FILES_PROGRAM = r"""printf '%s|' "$(sed -n 2p data/in.csv)"; od -An -tu1 raw.bin | tr -s ' ' | sed 's/^ //'
ls -A | tr '\n' ' '; echo
printf result > outputs/r.txt
mkdir outputs/sub
head -c 10240 /dev/zero | tr '\0' '\7' > outputs/sub/s.bin
printf log > keep.log
printf no > skip.log2
ln -s /etc/passwd outputs/passwd
mkfifo outputs/fifo
cd /
"""


@case("pl", "pp")
def t_files_in_and_out(lang):
    res = run(lang, request=pl_frame(PL_FILES_PROGRAM, files=FILES_IN,
                                     outputs=dict(OUTPUTS, paths=["*.log", "data/**"])))
    pl_ok(res, files={"sent": 4, "left_out": 2})
    lines = res.out.splitlines()
    eq(lines[0], "1,\u00e9|0 1 255", "files read")
    eq(lines[1], "data main.sh outputs raw.bin ", "working directory")
    files, left = returned(res)
    eq(list(files), ["outputs/r.txt", "outputs/sub/s.bin", "keep.log", "data/in.csv"], "returned, in order")
    eq(files["outputs/r.txt"], b"result", "r.txt")
    eq(files["outputs/sub/s.bin"], b"\x07" * 10240, "s.bin")
    eq(files["data/in.csv"], "a,b\n1,\u00e9\n".encode(), "in.csv")
    eq(left, [{"path": "outputs/fifo", "reason": "not a regular file"},
              {"path": "outputs/passwd", "reason": "a symbolic link (never followed)"}], "left out")


PL_HOSTILE_OUT = r"""ln -s /etc/passwd outputs/passwd
ln -s /etc outputs/etc
mkfifo outputs/fifo
printf x > h
ln h outputs/hard
for i in 0 1 2 3 4 5 6 7; do head -c $((i * 30000)) /dev/zero | tr '\0' y > outputs/f$i; done
setsid sh -c 'for i in $(seq 20000); do echo noise; done' &
"""


@case("pl")
def t_files_out_hostile(lang):
    # As the in-process runners: caps kept, links, a FIFO and a hard link
    # named and never read; a process outside the program's group still
    # writing to stdout cannot split a frame.
    res = run(lang, request=pl_frame(PL_HOSTILE_OUT, outputs=dict(OUTPUTS, paths=["outputs/etc/*", "*/passwd"])))
    check(res.record is not None, "no record: %r" % res.stderr[-500:])
    files, left = returned(res)
    sizes = {p: len(b) for p, b in files.items()}
    eq(sorted(sizes), ["outputs/f0", "outputs/f1", "outputs/f2", "outputs/f3"], "sent")
    check(sum(sizes.values()) <= 200000 and max(sizes.values()) <= 100000, "caps: %r" % sizes)
    reasons = {l["path"]: l["reason"] for l in left}
    eq(reasons.get("outputs/passwd"), "a symbolic link (never followed)", "passwd")
    eq(reasons.get("outputs/etc"), "a symbolic link (never followed)", "etc")
    eq(reasons.get("outputs/fifo"), "not a regular file", "fifo")
    eq(reasons.get("outputs/hard"), "a hard-linked file", "hard")
    eq(reasons.get("outputs/f4"), "over the per-file size limit", "f4")
    eq([l["path"] for l in left][:4], ["outputs/etc", "outputs/fifo", "outputs/hard", "outputs/passwd"],
       "refused before capped")
    eq(res.record["files"], {"sent": 4, "left_out": 8}, "files account")
    check(b"root:" not in b"".join(files.values()), "/etc/passwd was read")


@case("pl")
def t_odd_names_left_out(lang):
    # Names the daemon could not take are named (made UTF-8, control
    # characters escaped), never sent; globs match characters, not bytes.
    code = ("printf x > outputs/$'\\xff\\xfe'\nprintf x > outputs/$'a\\nb'\n"
            "printf x > \u00e9t\u00e9.txt\nprintf x > ab.txt\nprintf x > '[x].txt'\n")
    res = run(lang, request=pl_frame(code, outputs=dict(OUTPUTS, paths=["?t?.txt", "[!a]?.txt", "[[]x].txt"])))
    pl_ok(res, files={"sent": 2, "left_out": 2})
    files, left = returned(res)
    eq(sorted(files), ["[x].txt", "\u00e9t\u00e9.txt"], "sent")
    eq(left, [{"path": "outputs/a\nb", "reason": "the name is not allowed"},
              {"path": "outputs/\ufffd\ufffd", "reason": "the name is not UTF-8"}], "left out")


@case("pl")
def t_outputs_dir_swapped_for_link(lang):
    res = run(lang, request=pl_frame("rmdir outputs\nln -s /etc outputs",
                                     outputs=dict(OUTPUTS, paths=["outputs/*", "outputs/**"])))
    pl_ok(res, files={"sent": 0, "left_out": 0})
    eq(res.frames, [], "frames")


@case("pl")
def t_runner_files_never_returned(lang):
    # .mcpsbx* names are the runner's: not returned even when a pattern
    # names them; the program's other hidden files are.
    code = "printf h > .hidden\nprintf m > .mcpsbx-mine\n"
    res = run(lang, request=pl_frame(code, variables={"v": 1},
                                     outputs=dict(OUTPUTS, paths=[".*", ".mcpsbx-variables.json", "**"])))
    pl_ok(res, files={"sent": 2, "left_out": 0})
    files, _ = returned(res)
    eq(sorted(files), [".hidden", "main.sh"], "returned")


@case("pl")
def t_walk_stops(lang):
    code = "cd outputs\nseq -f 'f%g' 20010 | xargs touch\n"
    res = run(lang, request=pl_frame(code, outputs=OUTPUTS))
    pl_ok(res, files={"sent": 5, "left_out": 19995, "walk_stopped": 20000})
    files, left = returned(res)
    eq(len(files), 5, "sent")
    eq(len(left), 20, "named")
    check(all(l["reason"] == "over the file count limit" and l["size"] == 0 for l in left), "reasons: %r" % left[:2])


@case("pl")
def t_cwd_gone(lang):
    # Removed (and made again: a new directory is not the program's).
    code = 'd=$PWD\ncd /\nrm -rf "$d"\nmkdir "$d"\n'
    res = run(lang, request=pl_frame(code, outputs=OUTPUTS))
    pl_ok(res, files={"sent": 0, "left_out": 0, "cwd_gone": True})


@case("pl")
def t_no_outputs_without_request(lang):
    res = pl_run("test -e outputs && echo yes || echo no")
    pl_ok(res)
    eq(res.out, "no\n", "stdout")
    eq(res.frames, [], "frames")


@case("pl")
def t_outputs_after_compile_error(lang):
    # The program did not run: nothing is returned, and the record has no
    # files account (the daemon reports the compile error).
    res = run(lang, request=pl_frame("echo x", dict(BASH, compile=["false"], compile_timeout_ms=5000),
                                     files=FILES_IN, outputs=dict(OUTPUTS, paths=["**"])))
    pl_ok(res, 1, compile_error={"exit_code": 1, "timed_out": False})
    eq(res.frames, [], "frames")


@case("pl")
def t_c_nonblocking_stdout(lang):
    # The program leaves its stdout and stderr (the runner's too) non-blocking
    # and the pipes full: the frames and the record still go out whole.
    code = r"""#include <fcntl.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    static char buf[90000];
    memset(buf, 'z', sizeof buf);
    FILE *f = fopen("outputs/big.txt", "w");
    fwrite(buf, 1, sizeof buf, f);
    fclose(f);
    fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
    fcntl(2, F_SETFL, fcntl(2, F_GETFL) | O_NONBLOCK);
    printf("done\n");
    return 0;
}
"""
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-") as d:
        pipes = [os.pipe(), os.pipe()]
        p = subprocess.Popen(runner_cmd(lang), cwd=d, stdin=subprocess.PIPE,
                             stdout=pipes[0][1], stderr=pipes[1][1])
        for _, w in pipes:
            os.close(w)
        got = [bytearray(), bytearray()]

        def drain(i):
            time.sleep(1.0)  # let the pipe fill first
            while True:
                b = os.read(pipes[i][0], 1 << 12)
                if not b:
                    break
                got[i] += b
                time.sleep(0.001)

        readers = [threading.Thread(target=drain, args=(i,)) for i in (0, 1)]
        for t in readers:
            t.start()
        p.stdin.write(pl_frame(code, C_PROGRAM, outputs=OUTPUTS))
        p.stdin.close()
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            raise Failure("timed out")
        for t in readers:
            t.join()
        for r, _ in pipes:
            os.close(r)
    res = Result(p.returncode, bytes(got[0]), bytes(got[1]), d)
    pl_ok(res, files={"sent": 1, "left_out": 0})
    eq(res.out, "done\n", "stdout")
    files, _ = returned(res)
    eq(files.get("outputs/big.txt"), b"z" * 90000, "big.txt")


@case("pl", "pp")
def t_files_bad_entry(lang):
    for entry in ({"path": "../x", "content": "", "encoding": "utf-8"},
                  {"path": "a", "content": "", "encoding": "utf-16"},
                  {"path": "a//b", "content": "", "encoding": "utf-8"},
                  {"path": "/abs", "content": "", "encoding": "utf-8"},
                  {"path": "a/", "content": "", "encoding": "utf-8"},
                  {"path": "a", "content": 1, "encoding": "utf-8"},
                  "a"):
        res = run(lang, request=pl_frame("echo 1", files=[entry]))
        try:
            expect_runner_failure(res, True, "request files")
        except Failure as e:
            raise Failure("%r: %s" % (entry, e))
    # An existing name is never replaced; the source file is one.
    res = run(lang, request=pl_frame("echo 1", files=[{"path": "x", "content": "", "encoding": "utf-8"}] * 2))
    expect_runner_failure(res, True, "cannot write the file")
    res = run(lang, request=pl_frame("echo 1", files=[{"path": "main.sh", "content": "", "encoding": "utf-8"}]))
    expect_runner_failure(res, True, "cannot write the source file main.sh")


PL_VARIABLES = {
    "s": "h\u00e9llo \U0001F600\nline = 2",
    "i": -42,
    "big": 12345678901234567890123,
    "f": 2.5,
    "e": 1e300,
    "t": True,
    "fa": False,
    "n": None,
    "arr": [1, "two", [3.5]],
    "obj": {"a": {"b": [False]}},
    "empty": "",
    "nul": "a\u0000b",
}


@case("pl", "pp")
def t_variables(lang):
    # Scalars as environment variables (numbers as sent), everything in the
    # JSON file $MCPSBX_VARIABLES names (read-only, not in the listing).
    code = ("for v in s i big f e t fa n arr obj empty nul; do printf '%s=[%s]\\n' \"$v\" \"${!v-unset}\"; done\n"
            "echo \"$MCPSBX_VARIABLES\"\nls -l \"$MCPSBX_VARIABLES\" | cut -c1-10\nls\n"
            "sh -c 'echo child $i'\ncat \"$MCPSBX_VARIABLES\"")
    res = pl_run(code, variables=PL_VARIABLES)
    pl_ok(res)
    out = res.out.split("\n")
    want = ["s=[%s" % PL_VARIABLES["s"].split("\n")[0], "line = 2]", "i=[-42]", "big=[12345678901234567890123]",
            "f=[2.5]", "e=[1e+300]", "t=[true]", "fa=[false]", "n=[unset]", "arr=[unset]", "obj=[unset]",
            "empty=[]", "nul=[unset]", res.cwd + "/.mcpsbx-variables.json", "-r--------", "main.sh", "child -42"]
    eq(out[:len(want)], want, "stdout")
    eq(json.loads("\n".join(out[len(want):])), PL_VARIABLES, "the variables file")


@case("pl", "pp")
def t_variables_reach_compile_step(lang):
    prog = dict(BASH, compile=["sh", "-c", 'echo "cc: $v $MCPSBX_T_SECRET"'], compile_timeout_ms=5000)
    res = pl_run("echo \"run: $v $MCPSBX_T_SECRET\"", prog, variables={"v": "x"}, env={"MCPSBX_T_SECRET": "sec"})
    pl_ok(res)
    eq(res.stderr, "cc: x sec\n", "stderr")
    eq(res.out, "run: x sec\n", "stdout")


@case("pl")
def t_no_variables_no_file(lang):
    res = pl_run('echo "[${MCPSBX_VARIABLES-unset}]"\nls -A')
    pl_ok(res)
    eq(res.out, "[unset]\nmain.sh\n", "stdout")


@case("pl", "pp")
def t_variables_refused(lang):
    for name in ["1abc", "a-b", "\u00e9t\u00e9", "x" * 129, "MCPSBX_VARIABLES", "MCPSBX_X", "", "a b"]:
        res = pl_run("echo 1", variables={"ok": 1, name: 2})
        try:
            expect_runner_failure(res, True, "is not allowed")
        except Failure as e:
            raise Failure("%r: %s" % (name[:20], e))
    cases = [({"variables_env": v}, "variables_env must be an object") for v in ([], "x", 1)]
    cases += [({"variables_file": v}, "variables_file must be a string") for v in (1, 2.5, True, [], {})]
    cases += [({"variables_env": {"a": v}}, "variables_env: bad value") for v in (1, True, None, [], "x\0y")]
    for extra, msg in cases:
        res = pl_run("echo 1", **extra)
        try:
            expect_runner_failure(res, True, msg)
        except Failure as e:
            raise Failure("%r: %s" % (extra, e))
    # "variables" is the in-process runners' form: the daemon never sends
    # it to this runner.
    res = run(lang, request=frame("echo 1", extra={"program": BASH, "variables": {"a": 1}}))
    expect_runner_failure(res, True, "variables are not for the generic runner")


@case("pl", "pp")
def t_variables_as_sent(lang):
    # The runner passes the daemon's text on untouched: the file's bytes
    # whatever they are, the environment's strings as given.
    res = pl_run('cat "$MCPSBX_VARIABLES"; echo; echo "[$n][$f]"',
                 variables_file='{"n":1.50,"f":-0e0,"x":[ 1 ]}', variables_env={"n": "1.50", "f": "-0e0"})
    pl_ok(res)
    eq(res.out, '{"n":1.50,"f":-0e0,"x":[ 1 ]}\n[1.50][-0e0]\n', "stdout")
    # Only the environment: no file.
    res = pl_run('echo "[$v][${MCPSBX_VARIABLES-unset}]"; ls -A', variables_env={"v": "x"})
    pl_ok(res)
    eq(res.out, "[x][unset]\nmain.sh\n", "stdout")


@case("pl", "pp")
def t_env_from_request(lang):
    value = "v al=ue \u00fc \U0001F600"
    res = pl_run('echo "$MCPSBX_T_SECRET"\nsh -c \'echo "$MCPSBX_T_SECRET"\'', env={"MCPSBX_T_SECRET": value})
    pl_ok(res)
    eq(res.out, "%s\n%s\n" % (value, value), "stdout")


def json_library():
    """Which library the host's runner reads with ("pl" cases)."""
    p = subprocess.run([PERL, "-MJSON::XS", "-e", "1"], capture_output=True)
    return "JSON::XS" if p.returncode == 0 else "JSON::PP"


@case("pl", "pp")
def t_text_exact(lang):
    # Non-ASCII and control characters in the code, the program's argv, a
    # file's path and content, stdin and env (a name too) arrive as their
    # UTF-8 bytes, whether the JSON has them raw with \u escapes for control
    # characters only (json-c, the daemon's) or all as \u escapes.
    path = "d\u00efr/\u00fcn\u00ef \u20ac\U0001F600.txt"
    content = "cont\u00e9nu \U0001F600 \x01\x1f\x7f\t\"\\/ \u2028 end"
    value = "v\u00e4lue \x02 \u20ac"
    arg = "\u00e4rg \U0001F600"
    stdin = STDIN_TEXT + "\x03"
    code = ('printf "%s|%s|" "$MCPSBX_T_V" "$1"; cat "' + path + '"; printf "|"; ls d\u00efr\n'
            'env | grep "^MCPSBX_T_\u00c9="\nprintf "\u00e7\u20ac\U0001F600\\001|"; cat')
    prog = dict(BASH, run=["bash", "main.sh", arg])
    want = "%s|%s|%s|%s\nMCPSBX_T_\u00c9=\u00e9\n\u00e7\u20ac\U0001F600\x01|%s" % (
        value, arg, content, path.split("/")[1], stdin)
    for ascii in (False, True):
        req = frame(code, stdin, ascii=ascii, extra={
            "program": prog, "env": {"MCPSBX_T_V": value, "MCPSBX_T_\u00c9": "\u00e9"},
            "files": [{"path": path, "content": content, "encoding": "utf-8"}]})
        # The control characters are escapes either way; non-ASCII is raw
        # or escaped.
        check(b"\\u0001" in req and not re.search(rb"[\x00-\x09\x0b-\x1f]", req), "control characters")
        check((b"\xe2\x82\xac" in req) != ascii, "non-ASCII raw: %r" % (not ascii))
        res = run(lang, request=req)
        try:
            pl_ok(res)
            eq(res.stdout, want.encode(), "stdout")
            eq(res.stderr, "", "stderr")
        except Failure as e:
            raise Failure("ascii=%r: %s" % (ascii, e))


@case("pl", "pp")
def t_request_not_utf8(lang):
    # A request that is not UTF-8 (a secret need not be): every byte as
    # sent, raw UTF-8 and escaped control characters in the other strings
    # too.
    secret = b"\xff\xfe s\xe9cret \x01 \xed\xa0\x80"
    content = "\u00e9\u20ac\x01\U0001F600"
    req = with_bytes(pl_frame('printf "%s|" "$MCPSBX_T_V"; cat f\u00e9.txt', env={"MCPSBX_T_V": "@V@"},
                              files=[{"path": "f\u00e9.txt", "content": content, "encoding": "utf-8"}]),
                     {"@V@": secret})
    res = run(lang, request=req)
    pl_ok(res)
    eq(res.stdout, secret + b"|" + content.encode(), "stdout")
    # There a \u escape over \u00ff cannot be one byte: refused.
    req = with_bytes(frame("echo", "\u20ac", extra={"program": BASH, "env": {"MCPSBX_T_V": "@V@"}}),
                     {"@V@": secret})
    expect_runner_failure(run(lang, request=req), False, "over \\u00ff in a request that is not UTF-8")


@case("pl", "pp")
def t_large_request(lang):
    # About 20 MB of file content (non-ASCII, quotes, backslashes, control
    # characters) is read in reasonable time: JSON::XS takes well under a
    # second. JSON::PP (the fallback) reads about 3 MB a second: 5 MB there.
    line = "line \u00e9\u20ac \"q\" \\ \t\x01 " + "x" * 80 + "\n"
    content = line * ((1250000 if lang == "pp" else 5000000) // len(line.encode()))
    files = [{"path": "big%d.txt" % i, "content": content, "encoding": "utf-8"} for i in range(4)]
    req = pl_frame("cat big*.txt | wc -c; sha256sum big0.txt | cut -c1-64", files=files)
    library = "JSON::PP" if lang == "pp" else json_library()
    t0 = time.monotonic()
    res = run(lang, request=req, timeout=300)
    dt = time.monotonic() - t0
    pl_ok(res)
    eq(res.out.split(), [str(4 * len(content.encode())), hashlib.sha256(content.encode()).hexdigest()], "stdout")
    if library == "JSON::XS":
        check(dt < 5, "%.1f s for a request of %.1f MB" % (dt, len(req) / 1e6))
    return "a %.1f MB request with %s: %.2f s (the whole run)" % (len(req) / 1e6, library, dt)


@case("pl", "pp")
def t_nesting_limit(lang):
    # 512 levels of arrays and objects at most, as the runner always had.
    for depth, ok in ((511, True), (600, False)):
        req = pl_frame("echo ran", deep=json.loads("[" * depth + "]" * depth))
        res = run(lang, request=req)
        if ok:
            pl_ok(res)
            eq(res.out, "ran\n", "stdout")
        else:
            expect_runner_failure(res, False, "nesting level")


@case("pp")
def t_pp_fallback_tried_xs(lang):
    # The "pp" cases' runner did try JSON::XS, then read with JSON::PP.
    res = pl_run('echo "hello, world"')
    pl_ok(res)
    eq(res.out, "hello, world\n", "stdout")
    eq(res.stderr, "", "stderr")
    check(os.path.exists(os.path.join(PP_LIB, "tried")), "JSON::XS was not tried")


@case("pl", "pp")
def t_runner_failures(lang):
    cases = [
        (pl_frame("echo", None), "request program must be an object"),
        (pl_frame("echo", "main.sh"), "request program must be an object"),
        (pl_frame("echo", {"source_file": "main.sh"}), "bad run"),
        (pl_frame("echo", {"source_file": "main.sh", "run": []}), "bad run"),
        (pl_frame("echo", {"source_file": "main.sh", "run": ["bash", 1]}), "bad run"),
        (pl_frame("echo", {"source_file": "main.sh", "run": ["bash", ""]}), "bad run"),
        (pl_frame("echo", {"source_file": "main.sh", "run": "bash"}), "bad run"),
        (pl_frame("echo", {"run": ["bash"]}), "bad source_file"),
        (pl_frame("echo", {"source_file": "../x", "run": ["bash"]}), "bad source_file"),
        (pl_frame("echo", {"source_file": "d/x.sh", "run": ["bash"]}), "bad source_file"),
        (pl_frame("echo", {"source_file": ".mcpsbx-x", "run": ["bash"]}), "bad source_file"),
        (pl_frame("echo", dict(BASH, compile="gcc")), "bad compile"),
        (pl_frame("echo", dict(BASH, compile=[])), "bad compile"),
        (pl_frame("echo", dict(BASH, typecheck=[1])), "bad typecheck"),
        (pl_frame("echo", dict(BASH, compile=["true"], compile_timeout_ms=-1)), "bad compile_timeout_ms"),
        (pl_frame("echo", dict(BASH, compile=["true"], compile_timeout_ms=0)), "bad compile_timeout_ms"),
        (pl_frame("echo", dict(BASH, compile=["true"], compile_timeout_ms=1.5)), "bad compile_timeout_ms"),
        (pl_frame("echo", dict(BASH, compile=["true"], compile_timeout_ms="5")), "bad compile_timeout_ms"),
        (pl_frame("echo", dict(BASH, typecheck_blocks=1)), "bad typecheck_blocks"),
        (pl_frame("echo", BASH, check=True), "check is not supported by the generic runner"),
        (pl_frame("echo", BASH, files={}), "request files must be a list"),
        (pl_frame("echo", BASH, outputs=[]), "outputs an object"),
    ]
    for req, msg in cases:
        res = run(lang, request=req)
        try:
            expect_runner_failure(res, True, msg)
            eq(res.stderr, "", "stderr")
        except Failure as e:
            raise Failure("%r: %s" % (req[-120:], e))
    # Before the nonce: no record, stderr says why.
    for req, msg in ((b"mcpsbx/1 5\n[1,2]", "not a JSON object"), (b"mcpsbx/1 2\n{\"", "not JSON"),
                     (b"mcpsbx/1 6\n{}  []", "not JSON"), (b'mcpsbx/1 15\n{"nonce":"ABC"}', "nonce")):
        expect_runner_failure(run(lang, request=req), False, msg)
    res = run(lang, request=pl_frame("echo"), warm="x")
    expect_runner_failure(res, False, "usage")


@case("pl")
def t_check_false_runs(lang):
    res = pl_run("echo ran", check=False)
    pl_ok(res)
    eq(res.out, "ran\n", "stdout")


@case("pl")
def t_decoy_record_is_output(lang):
    res = pl_run(r"printf '\000\036mcpsbx-done:%s:{\"exit_code\":9}\n' ffffffffffffffffffffffffffffffff" "\n"
                 r"printf '\000\036mcpsbx-do'; echo after")
    pl_ok(res)
    eq(res.stdout, b"\x00\x1emcpsbx-done:" + b"f" * 32 + b':{"exit_code":9}\n\x00\x1emcpsbx-doafter\n', "stdout")


@case("pl")
def t_reads_exactly_the_frame(lang):
    res = run(lang, request=pl_frame("cat", stdin="mine") + b"NOT STDIN")
    pl_ok(res)
    eq(res.out, "mine", "stdout")


@case("pl")
def t_request_in_small_pieces(lang):
    for nonblock in (False, True):
        res = run(lang, request=pl_frame("cat", stdin="pieces"), feed=slow_feed, nonblock=nonblock)
        pl_ok(res)
        eq(res.out, "pieces", "stdout (nonblock=%r)" % nonblock)


@case("pl")
def t_warm(lang):
    # READY before the request is sent, GO once it is read, then the run.
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-") as d:
        p = subprocess.Popen(runner_cmd(lang, "warm"), cwd=d, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            ready = b""
            deadline = time.monotonic() + 10
            while len(ready) < len(READY) and time.monotonic() < deadline:
                if select.select([p.stdout.fileno()], [], [], 0.1)[0]:
                    b = os.read(p.stdout.fileno(), len(READY) - len(ready))
                    if not b:
                        break
                    ready += b
            eq(ready, READY, "before the request")
            out, err = p.communicate(pl_frame("read x\necho warm $x", stdin="in\n"), timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        res = Result(p.returncode, out, err, d)
    check(res.stdout.startswith(GO), "stdout does not start with GO: %r" % res.stdout[:60])
    res.stdout = res.stdout[len(GO):]
    pl_ok(res)
    eq(res.out, "warm in\n", "stdout")
    eq(res.stderr, "", "stderr")


@case("pl")
def t_warm_bad_request_after_go(lang):
    body = b"not json"
    res = run(lang, request=b"mcpsbx/1 %d\n" % len(body) + body, warm="warm")
    eq(res.stdout, READY + GO, "stdout")
    eq(res.rc, RUNNER_EXIT, "exit status")
    check("not JSON" in res.stderr, "stderr: %r" % res.stderr)
    res = run(lang, request=pl_frame("echo", None), warm="warm")
    check(res.stdout.startswith(READY + GO), "stdout: %r" % res.stdout[:60])
    res.stdout = res.stdout[len(READY + GO):]
    expect_runner_failure(res, True, "request program")


# ---- session mode (runner.h, "process") -----------------------------------------
class PlSession:
    """A runner fed one frame at a time, as the daemon feeds a session:
    begin, cells, interrupts, then the end of its stdin."""

    def __init__(self, lang, warm=None, env=None):
        self.lang = lang
        self.dir = tempfile.mkdtemp(prefix="mcpsbx-rt-")
        r, self.w = os.pipe()
        self.p = subprocess.Popen(runner_cmd(lang, warm), cwd=self.dir, stdin=r,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=pp_env() if lang == "pp" else env)
        os.close(r)
        self.out, self.err, self.seen = b"", b"", 0
        self.cond = threading.Condition()
        # Daemons: a failed case's orphans (a session shell's commands) may
        # hold the pipes open after the runner is killed.
        self.readers = [threading.Thread(target=self._read, args=(self.p.stdout, "out"), daemon=True),
                        threading.Thread(target=self._read, args=(self.p.stderr, "err"), daemon=True)]
        for t in self.readers:
            t.start()

    def _read(self, f, which):
        while True:
            b = f.read1(65536)
            with self.cond:
                if not b:
                    self.cond.notify_all()
                    return
                setattr(self, which, getattr(self, which) + b)
                self.cond.notify_all()

    def send(self, data):
        _write_all(self.w, data)

    def request(self, nonce, code="", kind="cell", program="default", **extra):
        req = {"nonce": nonce, "code": code, "stdin": "", "env": {}, "session": {kind: True}}
        if program == "default":
            program = BASH if self.lang in ("pl", "pp") else None
        if program is not None:
            req["program"] = program
        req.update(extra)
        body = json.dumps(req, ensure_ascii=False, separators=(",", ":")).encode()
        self.send(b"mcpsbx/1 %d\n" % len(body) + body)

    def interrupt(self, nonce):
        self.send(b"mcpsbx/1 interrupt %s\n" % nonce.encode())

    def wait_for(self, pred, what, timeout=30):
        with self.cond:
            if not self.cond.wait_for(lambda: pred(self.out[self.seen:]), timeout):
                raise Failure("no %s; stdout %r, stderr %r" % (what, self.out[-300:], self.err[-300:]))

    def record(self, nonce, timeout=30):
        """(stdout since the last record, file frames included, the record
        of nonce)."""
        marker = PREFIX + nonce.encode() + b":"

        def find(b):
            # The record's marker: the first one not starting a file frame.
            i = b.find(marker)
            while i >= 0:
                nl = b.find(b"\n", i)
                if nl < 0:
                    return None
                if b[i + len(marker):i + len(marker) + 1] not in (b"F", b"D", b"E", b"L"):
                    return i, nl
                i = b.find(marker, nl)
            return None

        self.wait_for(lambda b: find(b) is not None, "record of %s" % nonce, timeout)
        with self.cond:
            b = self.out[self.seen:]
            i, nl = find(b)
            self.seen += nl + 1
            return b[:i], json.loads(b[i + len(marker):nl])

    def start(self, nonce, code):
        """Sends a cell whose code echoes "start", and waits for that."""
        self.request(nonce, code)
        self.wait_for(lambda b: b"start\n" in b, "start")

    def call(self, nonce, code, **kw):
        self.request(nonce, code, **kw)
        return self.record(nonce)

    def end(self, timeout=30):
        """Closes the runner's stdin: its exit status."""
        os.close(self.w)
        self.w = None  # never closed twice: the number may be another case's by then
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise Failure("the runner did not end at the end of its stdin")
        finally:
            for t in self.readers:
                t.join()
            shutil.rmtree(self.dir, ignore_errors=True)
        return rc

    def exited(self, timeout=30):
        """The exit status of a runner that ends by itself, once all its
        output was read."""
        rc = self.p.wait(timeout=timeout)
        for t in self.readers:
            t.join()
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        if self.w is not None:
            os.close(self.w)
            self.w = None
        self.p.wait()
        for t in self.readers:
            t.join(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


def nonce_of(i):
    return "%032x" % (0xC0FFEE00 + i)


def session_begin(lang, warm=None, source=None, mode="process", env=None, program=None):
    """source: the begin request's session source (Python's interpreter
    mode); mode: the one the begin record must say; program: the begin
    request's (the generic runner's shell mode)."""
    s = PlSession(lang, warm, env)
    try:
        begin = {"begin": True}
        if source is not None:
            begin["source"] = source
        s.request(nonce_of(0), kind="begin", program=program, env={"MCPSBX_T_KEPT": "kept"}, session=begin)
        if warm:
            s.wait_for(lambda b: b.startswith(READY + GO), "ready and go")
            s.seen = len(READY + GO)
        out, rec = s.record(nonce_of(0))
        eq((out, rec), (b"", {"exit_code": 0, "memory_error": False, "session": {"mode": mode}}),
           "begin record")
    except BaseException:
        s.kill()
        raise
    return s


def cell_ok(got, out, code=0, steps=None, **more):
    """A cell's (stdout, record): its output and record; steps: the
    steps_ms keys it must have."""
    o, rec = got
    st = rec.pop("steps_ms", None)
    want = {"exit_code": code, "memory_error": False}
    want.update(more)
    eq(rec, want, "record")
    eq(o, out, "stdout")
    if steps is not None:
        eq(sorted(st or {}), sorted(steps), "steps")


C_STATE = r"""#include <stdio.h>
int main(void) {
    FILE *f = fopen("state.txt", "r");
    char line[64] = "";
    if (f) { fgets(line, sizeof line, f); fclose(f); printf("found %s", line); return 0; }
    f = fopen("state.txt", "w");
    fputs("one\n", f);
    fclose(f);
    puts("wrote");
    return 0;
}
"""


@case("pl", "pp")
def t_session_cells(lang):
    with session_begin(lang, warm="warm" if lang == "pl" else None) as s:
        # The same source twice: compiled once; the second cell finds the
        # file the first wrote, in the same working directory.
        cell_ok(s.call(nonce_of(1), C_STATE, program=C_PROGRAM), b"wrote\n", steps=["compile", "run"])
        cell_ok(s.call(nonce_of(2), C_STATE, program=C_PROGRAM), b"found one\n", steps=["run"])
        # A changed source is compiled again.
        cell_ok(s.call(nonce_of(3), C_STATE + "\n", program=C_PROGRAM), b"found one\n",
                steps=["compile", "run"])
        # The begin request's env stays; a cell's variables and files are its own.
        cell_ok(s.call(nonce_of(4), 'echo "$MCPSBX_T_KEPT ${V-unset}"; cat f.txt',
                       files=[{"path": "f.txt", "content": "a\n", "encoding": "utf-8"}],
                       **generic_variables({"V": "v4"})), b"kept v4\na\n")
        cell_ok(s.call(nonce_of(5), 'echo "$MCPSBX_T_KEPT ${V-unset} ${MCPSBX_VARIABLES-none}"; cat f.txt',
                       files=[{"path": "f.txt", "content": "b\n", "encoding": "utf-8"}]),
                b"kept unset none\nb\n")
        # A failed cell is the cell's: the next one runs.
        cell_ok(s.call(nonce_of(6), "echo bad >&2; exit 3"), b"", code=3)
        cell_ok(s.call(nonce_of(7), "pwd"), (s.dir + "\n").encode())
        eq(s.end(), 0, "exit status at the end of stdin")


@case("pl")
def t_session_interrupt(lang):
    with session_begin(lang) as s:
        s.start(nonce_of(1), "echo start; echo state > kept.txt; sleep 60; echo never")
        # Another nonce (a late interrupt of an earlier cell) is ignored.
        s.interrupt(nonce_of(9))
        time.sleep(0.2)
        check(s.p.poll() is None, "the runner ended")
        s.interrupt(nonce_of(1))
        cell_ok(s.record(nonce_of(1)), b"start\n", code=130, session={"interrupted": True})
        # A program that ignores SIGINT is killed after the grace.
        s.start(nonce_of(2), "trap '' INT; echo start; sleep 60")
        s.interrupt(nonce_of(2))
        cell_ok(s.record(nonce_of(2)), b"start\n", code=137, session={"interrupted": True})
        # An interrupt with no cell running is ignored; the state is kept.
        s.interrupt(nonce_of(2))
        cell_ok(s.call(nonce_of(3), "cat kept.txt"), b"state\n")
        eq(s.end(), 0, "exit status at the end of stdin")


@case("pl")
def t_session_wrong_nonce_ignored(lang):
    with session_begin(lang) as s:
        s.start(nonce_of(1), "echo start; sleep 1; echo done")
        s.interrupt(nonce_of(2))
        cell_ok(s.record(nonce_of(1)), b"start\ndone\n")
        # The end of stdin while a cell runs ends the cell and the runner.
        s.start(nonce_of(3), "echo start; sleep 60")
        t0 = time.monotonic()
        eq(s.end(timeout=20), 0, "exit status at the end of stdin")
        check(time.monotonic() - t0 < 20, "the cell was not stopped")


@case("pl")
def t_session_bad_requests(lang):
    # A cell with no session is the runner's failure, as any bad request.
    req = frame("echo", extra={"program": BASH, "session": {"cell": True}})
    expect_runner_failure(run(lang, request=req), True, "session cell without a session")
    req = frame("echo", extra={"program": BASH, "session": {"begin": False}})
    expect_runner_failure(run(lang, request=req), True, "neither begin nor cell")
    # In a session a bad request fails its cell and the session goes on.
    with session_begin(lang) as s:
        s.request(nonce_of(1), "echo", kind="begin")
        o, rec = s.record(nonce_of(1))
        eq(rec.get("exit_code"), RUNNER_EXIT, "record")
        check("not a cell" in rec.get("runner_error", ""), "record: %r" % rec)
        s.request(nonce_of(2), "echo", program=None)
        o, rec = s.record(nonce_of(2))
        check("request program" in rec.get("runner_error", ""), "record: %r" % rec)
        cell_ok(s.call(nonce_of(3), "echo fine"), b"fine\n")
        # A bad frame ends the session: there is no cell to answer.
        s.send(b"mcpsbx/1 interrupt xyz\n")
        eq(s.end(), RUNNER_EXIT, "exit status after a bad frame")
        check("bad request header" in s.err.decode(), "stderr: %r" % s.err[-200:])


# The Python runner's process mode: each cell a fresh process (a fork of
# the runner) in the same directory.
PJ_CODE = {
    "py": {
        "write": "open('state.txt', 'w').write('one\\n'); print('wrote')",
        "read": "print('found', open('state.txt').read(), end='')",
        "env": "import os, sys\nprint(os.environ.get('MCPSBX_T_KEPT'), globals().get('V', 'unset'),"
               " sys.stdin.read())\nprint(open('f.txt').read(), end='')",
        "exit3": "import sys; print('bad', file=sys.stderr); sys.exit(3)",
        "raise": "1 / 0",
        "pwd": "import os; print(os.getcwd())",
        "output": "import os; open('outputs/r.txt', 'w').write('r'); print('out')",
        "sleep": "import time; print('start', flush=True); open('kept.txt', 'w').write('state')\n"
                 "time.sleep(60); print('never')",
        "deaf": "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print('start', flush=True)\n"
                "time.sleep(60)",
        "kept": "print(open('kept.txt').read())",
        "short": "import time; print('start', flush=True); time.sleep(1); print('done')",
        "long": "import time; print('start', flush=True); time.sleep(60)",
        "fine": "print('fine')",
        "stdin_len": "import sys; print(len(sys.stdin.buffer.read()))",
        "die": "import os; print('dying', flush=True); os.kill(os.getpid(), 9)",
    },
}


@case("py")
def t_session_process_cells(lang):
    c = PJ_CODE[lang]
    # A warm runner: its preloads stay loaded for each cell.
    with session_begin(lang, warm="json" if lang == "py" else "fs") as s:
        cell_ok(s.call(nonce_of(1), c["write"]), b"wrote\n")
        cell_ok(s.call(nonce_of(2), c["read"]), b"found one\n")
        # The begin request's env stays; a cell's variables, stdin and files
        # are its own, and a file of an earlier cell's name is replaced.
        cell_ok(s.call(nonce_of(3), c["env"], variables={"V": "v3"}, stdin="in3",
                       files=[{"path": "f.txt", "content": "a\n", "encoding": "utf-8"}]),
                b"kept v3 in3\na\n")
        cell_ok(s.call(nonce_of(4), c["env"], files=[{"path": "f.txt", "content": "b\n", "encoding": "utf-8"}]),
                b"kept unset \nb\n")
        # A failed cell is the cell's: the next one runs.
        cell_ok(s.call(nonce_of(5), c["exit3"]), b"", code=3)
        # The record on stderr too, after the cell's own stderr.
        want = b"bad\n" + PREFIX + nonce_of(5).encode() + b':{"exit_code":3,"memory_error":false}\n'
        with s.cond:
            check(s.cond.wait_for(lambda: want in s.err, 30), "stderr: %r" % s.err[-200:])
        cell_ok(s.call(nonce_of(6), c["raise"]), b"", code=1)
        cell_ok(s.call(nonce_of(7), c["pwd"]), (os.path.realpath(s.dir) + "\n").encode())
        # Output files come back as frames before the record.
        o, rec = s.call(nonce_of(8), c["output"], outputs={"paths": [], "max_files": 5, "max_file_bytes": 100,
                                                           "max_total_bytes": 100})
        eq(rec, {"exit_code": 0, "memory_error": False, "files": {"sent": 1, "left_out": 0}}, "record")
        check(o.startswith(b"out\n" + PREFIX + nonce_of(8).encode() + b':F{"path":"outputs/r.txt"'), "stdout: %r" % o)
        # Only a syntax check: nothing runs.
        cell_ok(s.call(nonce_of(9), c["fine"], check=True), b"", check={"ok": True})
        # A cell that dies with no record of its own gets one from its
        # status (memory_error: whether the cgroup, where readable, counted
        # an OOM kill), and the session goes on.
        o, rec = s.call(nonce_of(11), c["die"])
        eq((o, rec.get("exit_code"), sorted(rec)), (b"dying\n", 137, ["exit_code", "memory_error"]), "record")
        # Its files still come back, counted in the record, as a one-shot
        # run's do however it ended.
        o, rec = s.call(nonce_of(12), c["die"], outputs={"paths": [], "max_files": 5, "max_file_bytes": 100,
                                                          "max_total_bytes": 100})
        eq((rec.get("exit_code"), rec.get("files")), (137, {"sent": 1, "left_out": 0}), "record of a dying cell")
        check(b':F{"path":"outputs/r.txt"' in o, "stdout: %r" % o)
        # A request of many reads.
        cell_ok(s.call(nonce_of(10), c["stdin_len"], stdin="x" * (3 << 20)), b"3145728\n")
        eq(s.end(), 0, "exit status at the end of stdin")


@case("py")
def t_session_process_interrupt(lang):
    c = PJ_CODE[lang]
    with session_begin(lang) as s:
        s.start(nonce_of(1), c["sleep"])
        # Another nonce (a late interrupt of an earlier cell) is ignored.
        s.interrupt(nonce_of(9))
        time.sleep(0.2)
        check(s.p.poll() is None, "the runner ended")
        s.interrupt(nonce_of(1))
        cell_ok(s.record(nonce_of(1)), b"start\n", code=130, session={"interrupted": True})
        # A program that ignores SIGINT is killed after the grace.
        s.start(nonce_of(2), c["deaf"])
        s.interrupt(nonce_of(2))
        cell_ok(s.record(nonce_of(2)), b"start\n", code=137, session={"interrupted": True})
        # An interrupt with no cell running is ignored; the state is kept.
        s.interrupt(nonce_of(2))
        cell_ok(s.call(nonce_of(3), c["kept"]), b"state\n")
        eq(s.end(), 0, "exit status at the end of stdin")


@case("py")
def t_session_process_wrong_nonce_ignored(lang):
    c = PJ_CODE[lang]
    with session_begin(lang) as s:
        s.start(nonce_of(1), c["short"])
        s.interrupt(nonce_of(2))
        cell_ok(s.record(nonce_of(1)), b"start\ndone\n")
        # The end of stdin while a cell runs ends the cell and the runner.
        s.start(nonce_of(3), c["long"])
        t0 = time.monotonic()
        eq(s.end(timeout=20), 0, "exit status at the end of stdin")
        check(time.monotonic() - t0 < 20, "the cell was not stopped")


@case("py")
def t_session_process_bad_requests(lang):
    # A cell with no session is the runner's failure, as any bad request.
    req = frame("1", extra={"session": {"cell": True}})
    expect_runner_failure(run(lang, request=req), True, "session cell without a session")
    req = frame("1", extra={"session": {"begin": False}})
    expect_runner_failure(run(lang, request=req), True, "neither begin nor cell")
    req = frame("1", extra={"session": True})
    expect_runner_failure(run(lang, request=req), True, "session must be an object")
    # In a session a bad request fails its cell and the session goes on.
    with session_begin(lang) as s:
        s.request(nonce_of(1), "1", kind="begin")
        o, rec = s.record(nonce_of(1))
        eq(rec.get("exit_code"), RUNNER_EXIT, "record")
        check("not a cell" in rec.get("runner_error", ""), "record: %r" % rec)
        s.request(nonce_of(2), 5)
        o, rec = s.record(nonce_of(2))
        eq(rec.get("exit_code"), RUNNER_EXIT, "record")
        check("code/stdin must be strings" in rec.get("runner_error", ""), "record: %r" % rec)
        cell_ok(s.call(nonce_of(3), PJ_CODE[lang]["fine"]), b"fine\n")
        # A bad frame ends the session: there is no cell to answer.
        s.send(b"mcpsbx/1 interrupt xyz\n")
        eq(s.end(), RUNNER_EXIT, "exit status after a bad frame")
        check("bad request header" in s.err.decode(), "stderr: %r" % s.err[-200:])
    # So does a request with no nonce to answer, the runner reading on.
    with session_begin(lang) as s:
        s.send(b"mcpsbx/1 3\n{x}")
        eq(s.exited(), RUNNER_EXIT, "exit status after a request that is not JSON")
        check("not JSON" in s.err.decode(), "stderr: %r" % s.err[-200:])
    # Two requests while a cell runs: the cell ends, and the session.
    with session_begin(lang) as s:
        s.start(nonce_of(1), PJ_CODE[lang]["long"])
        s.request(nonce_of(2), PJ_CODE[lang]["fine"])
        s.request(nonce_of(3), PJ_CODE[lang]["fine"])
        o, rec = s.record(nonce_of(1))
        eq(rec.get("exit_code"), RUNNER_EXIT, "record")
        check("more than one request" in rec.get("runner_error", ""), "record: %r" % rec)
        eq(s.exited(), RUNNER_EXIT, "exit status after two requests")


# Python's interpreter mode (runner_session.py): one IPython shell for every
# cell. The "session_ipython" cases are skipped, saying so, when PYTHON has
# no IPython (main()).
def ipython_begin(warm=None, env=None):
    return session_begin("py", warm=warm, source=SESSION_SRC, mode="interpreter", env=env)


def err_of(s, nonce, since=None):
    """stderr up to the record of nonce (the stream is read on its own, so
    it may lag behind stdout's record), from the end of since's record."""
    end = PREFIX + nonce.encode() + b":"
    with s.cond:
        check(s.cond.wait_for(lambda: end in s.err, 30), "no record of %s on stderr" % nonce)
        start = 0
        if since is not None:
            start = s.err.index(b"\n", s.err.index(PREFIX + since.encode() + b":")) + 1
        return s.err[start:s.err.index(end)]


IPY_OUTPUTS = {"paths": [], "max_files": 10, "max_file_bytes": 1000, "max_total_bytes": 100000,
               "plots": True, "max_plots": 3, "max_plot_bytes": 100000}


def file_frames(o, nonce):
    """{path: (kind, bytes)} of the F/D/E frames in o."""
    import base64

    marker = PREFIX + nonce.encode() + b":"
    got, cur = {}, None
    for line in o.split(b"\n"):
        i = line.find(marker)
        if i < 0:
            continue
        body = line[i + len(marker):]
        if body[:1] == b"F":
            meta = json.loads(body[1:])
            cur = meta["path"]
            got[cur] = (meta["kind"], b"")
        elif body[:1] == b"D":
            got[cur] = (got[cur][0], got[cur][1] + base64.b64decode(body[1:]))
    return got


def plain_output(o, nonce):
    """o without its file frames."""
    marker = PREFIX + nonce.encode() + b":"
    return b"".join(l for l in o.splitlines(True) if marker not in l)


@case("py")
def t_session_ipython_state(lang):
    # A warm runner: its preloads stay loaded for the shell.
    with ipython_begin(warm="json") as s:
        cell_ok(s.call(nonce_of(1), "x = 1"), b"")
        # The last expression's value, with no Out[n]: prompt; none after ";".
        cell_ok(s.call(nonce_of(2), "x + 1"), b"2\n")
        cell_ok(s.call(nonce_of(3), "x + 1;"), b"")
        cell_ok(s.call(nonce_of(4), "import collections\nc = collections.Counter('abca')\nc.most_common(1)"),
                b"[('a', 2)]\n")
        cell_ok(s.call(nonce_of(5), "from IPython.display import display\ndisplay({'k': x}); print('after')"),
                b"{'k': 1}\nafter\n")
        # An error is the cell's (exit 1, the traceback on stderr); state stays.
        cell_ok(s.call(nonce_of(6), "def f():\n    return 1 / 0\nf()"), b"", code=1)
        err = err_of(s, nonce_of(6), nonce_of(5))
        check(b"ZeroDivisionError" in err, "stderr: %r" % err)
        cell_ok(s.call(nonce_of(7), "f.__name__, x"), b"('f', 1)\n")
        # SystemExit(n) is the exit code, and the session lives on, quietly.
        cell_ok(s.call(nonce_of(8), "import sys\ny = 5\nsys.exit(3)"), b"", code=3)
        cell_ok(s.call(nonce_of(9), "y"), b"5\n")
        eq(err_of(s, nonce_of(8), nonce_of(7)), b"", "stderr of SystemExit")
        # Variables, stdin and the begin request's env, per cell.
        cell_ok(s.call(nonce_of(10), "import os\nprint(v['a'], x, input(), os.environ['MCPSBX_T_KEPT'])",
                       variables={"v": {"a": [1, 2]}, "x": 7}, stdin="line\n"), b"[1, 2] 7 line kept\n")
        cell_ok(s.call(nonce_of(11), "x"), b"7\n")
        o, rec = s.call(nonce_of(12), "1", variables={"get_ipython": 1})
        eq(rec.get("exit_code"), RUNNER_EXIT, "record of a hidden name")
        check("not allowed" in rec.get("runner_error", ""), "record: %r" % rec)
        # Magics and shell escapes.
        cell_ok(s.call(nonce_of(13), "%cd -q .\n!echo from-shell"), b"from-shell\n")
        # Top-level await.
        cell_ok(s.call(nonce_of(14), "import asyncio\nawait asyncio.sleep(0)\n'awaited'"), b"'awaited'\n")
        # Only a check (as IPython reads the cell: magics are valid); nothing runs.
        cell_ok(s.call(nonce_of(15), "%time z = 1\n!ls\nawait asyncio.sleep(0)", check=True), b"",
                check={"ok": True})
        o, rec = s.call(nonce_of(16), "z = 2\ndef g(:\n    pass", check=True)
        eq(rec.get("check", {}).get("line"), 2, "check line: %r" % rec)
        cell_ok(s.call(nonce_of(17), "'z' in dir()"), b"False\n")
        # exit() ends the session: its record says so, and the runner exits.
        cell_ok(s.call(nonce_of(18), "print('bye')\nexit()"), b"bye\n", session={"ended": "exit() was called"})
        eq(s.exited(), 0, "exit status after exit()")


@case("py")
def t_session_ipython_interrupt(lang):
    with ipython_begin() as s:
        cell_ok(s.call(nonce_of(1), "x = 1"), b"")
        s.start(nonce_of(2), "print('start', flush=True)\nwhile True:\n    x += 1")
        # Another nonce (a late interrupt of an earlier cell) is ignored.
        s.interrupt(nonce_of(1))
        time.sleep(0.3)
        check(s.p.poll() is None, "the runner ended")
        with s.cond:
            check(PREFIX + nonce_of(2).encode() not in s.out[s.seen:], "the cell ended early")
        s.interrupt(nonce_of(2))
        cell_ok(s.record(nonce_of(2)), b"start\n", code=130, session={"interrupted": True})
        err = err_of(s, nonce_of(2), nonce_of(1))
        check(b"KeyboardInterrupt" in err, "stderr: %r" % err)
        # The loop's state is kept; an interrupt with no cell running is ignored.
        s.interrupt(nonce_of(2))
        cell_ok(s.call(nonce_of(3), "x > 1"), b"True\n")
        # A blocking call is interrupted too.
        s.start(nonce_of(4), "import time\nprint('start', flush=True)\ntime.sleep(60)")
        s.interrupt(nonce_of(4))
        cell_ok(s.record(nonce_of(4)), b"start\n", code=130, session={"interrupted": True})
        cell_ok(s.call(nonce_of(5), "x > 1"), b"True\n")
        # The end of stdin while a cell runs ends the runner.
        s.start(nonce_of(6), "print('start', flush=True)\nwhile True: pass")
        eq(s.end(timeout=20), 0, "exit status at the end of stdin")


@case("py")
def t_session_ipython_sigint_ignored(lang):
    # A cell that ignores SIGINT gets nothing more from the runner: no
    # record, the daemon's grace then ends the container (here: the test).
    with ipython_begin() as s:
        s.start(nonce_of(1), "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                             "print('start', flush=True)\nwhile True: pass")
        s.interrupt(nonce_of(1))
        time.sleep(1)
        with s.cond:
            check(PREFIX + nonce_of(1).encode() not in s.out[s.seen:], "a record came")
        check(s.p.poll() is None, "the runner ended")


@case("py")
def t_session_ipython_files(lang):
    with ipython_begin() as s:
        out = dict(IPY_OUTPUTS)
        o, rec = s.call(nonce_of(1), "open('outputs/a.txt', 'w').write('a')\nopen('outputs/b.txt', 'w').write('b');",
                        outputs=out)
        eq(rec, {"exit_code": 0, "memory_error": False, "files": {"sent": 2, "left_out": 0}}, "record")
        eq(file_frames(o, nonce_of(1)), {"outputs/a.txt": ("file", b"a"), "outputs/b.txt": ("file", b"b")},
           "files")
        # Only what changed comes back; a pattern's match comes back anyway.
        o, rec = s.call(nonce_of(2), "open('outputs/b.txt', 'w').write('bb')\nopen('outputs/c.txt', 'w').write('c');",
                        outputs=dict(out, paths=["outputs/a.txt"]))
        eq(file_frames(o, nonce_of(2)), {"outputs/a.txt": ("file", b"a"), "outputs/b.txt": ("file", b"bb"),
                                         "outputs/c.txt": ("file", b"c")}, "files")
        o, rec = s.call(nonce_of(3), "pass", outputs=out)
        eq((file_frames(o, nonce_of(3)), rec.get("files")), ({}, {"sent": 0, "left_out": 0}), "files")
        # Request files replace an earlier cell's; a symlink is replaced, not followed.
        os.symlink("/nonexistent-target", os.path.join(s.dir, "f.txt"))
        cell_ok(s.call(nonce_of(4), "print(open('f.txt').read())",
                       files=[{"path": "f.txt", "content": "one", "encoding": "utf-8"}]), b"one\n")
        cell_ok(s.call(nonce_of(5), "print(open('f.txt').read())",
                       files=[{"path": "f.txt", "content": "two", "encoding": "utf-8"}]), b"two\n")
        # A display() of anything with a PNG is a plot; without plots asked, its text.
        png = "class P:\n    def _repr_png_(self): return b'\\x89PNG-fake'\n    def __repr__(self): return 'P()'\n"
        o, rec = s.call(nonce_of(6), png + "display(P())\nP()", outputs=out)
        eq(file_frames(o, nonce_of(6)), {"plot-1.png": ("plot", b"\x89PNG-fake"),
                                         "plot-2.png": ("plot", b"\x89PNG-fake")}, "plots")
        eq(rec.get("files"), {"sent": 2, "left_out": 0}, "record")
        cell_ok(s.call(nonce_of(7), "display(P())\nP()"), b"P()\nP()\n")
        # The directory a cell moved to is where the next starts; files stay the session's.
        cell_ok(s.call(nonce_of(8), "import os\nos.makedirs('sub', exist_ok=True)\n%cd -q sub"), b"")
        cell_ok(s.call(nonce_of(9), "print(os.path.basename(os.getcwd()), open('../f.txt').read())",
                       files=[{"path": "f.txt", "content": "three", "encoding": "utf-8"}]), b"sub three\n")


@case("py")
def t_session_ipython_background_output(lang):
    # Output of a thread between cells comes at the start of the next cell,
    # up to 64 KiB; the rest is dropped, and a note says how much.
    with ipython_begin() as s:
        # The thread writes once the test made "go", after the cell's record.
        code = ("import threading, sys, os, time\n"
                "def bg():\n    while not os.path.exists('go'):\n        time.sleep(0.01)\n"
                "    print('from the thread')\n"
                "    sys.stderr.write('e' * 70000)\n    open('bg-done', 'w').close()\n"
                "threading.Thread(target=bg).start()")
        cell_ok(s.call(nonce_of(1), code), b"")
        cell_ok(s.call(nonce_of(2), "1;"), b"")
        open(os.path.join(s.dir, "go"), "w").close()
        deadline = time.monotonic() + 30
        while not os.path.exists(os.path.join(s.dir, "bg-done")):
            check(time.monotonic() < deadline, "the thread did not finish")
            time.sleep(0.05)
        cell_ok(s.call(nonce_of(3), "print('next')"), b"from the thread\nnext\n")
        err = err_of(s, nonce_of(3), nonce_of(2))
        check(err.startswith(b"e" * (65536 - 16)) and b"[4480 bytes of output written between cells were dropped]"
              in err, "stderr: %r" % err[-200:])


@case("py")
def t_session_ipython_plot(lang):
    # matplotlib: figures left open are taken at the cell's end, a Figure as
    # the last value once; MPLBACKEND=Agg as in the image.
    env = dict(os.environ, MPLBACKEND="Agg")
    with ipython_begin(env=env) as s:
        o, rec = s.call(nonce_of(1), "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2]);", outputs=IPY_OUTPUTS)
        got = file_frames(o, nonce_of(1))
        eq(sorted(got), ["plot-1.png"], "plots")
        check(got["plot-1.png"][1].startswith(b"\x89PNG"), "not a PNG")
        o, rec = s.call(nonce_of(2), "fig, ax = plt.subplots()\nax.plot([1, 2])\nfig", outputs=IPY_OUTPUTS)
        eq(sorted(file_frames(o, nonce_of(2))), ["plot-1.png"], "plots")
        # The figures were closed: none is left for the next cell.
        o, rec = s.call(nonce_of(3), "len(plt.get_fignums())", outputs=IPY_OUTPUTS)
        eq((plain_output(o, nonce_of(3)), file_frames(o, nonce_of(3))), (b"0\n", {}), "next cell")


@case("py")
def t_session_ipython_unavailable(lang):
    # Without IPython the begin request's source is not used: process mode.
    hide = tempfile.mkdtemp(prefix="mcpsbx-rt-hide-")
    try:
        with open(os.path.join(hide, "sitecustomize.py"), "w") as f:
            f.write("import sys\nclass Hide:\n    def find_spec(self, name, path=None, target=None):\n"
                    "        if name.split('.')[0] == 'IPython':\n            raise ModuleNotFoundError(name)\n"
                    "sys.meta_path.insert(0, Hide())\n")
        with session_begin("py", source=SESSION_SRC, mode="process", env=dict(os.environ, PYTHONPATH=hide)) as s:
            cell_ok(s.call(nonce_of(1), "x = 1"), b"")
            cell_ok(s.call(nonce_of(2), "print(globals().get('x', 'gone'))"), b"gone\n")
            eq(s.end(), 0, "exit status at the end of stdin")
        # An IPython that cannot be loaded: the first cell says so and ends the session.
        with open(os.path.join(hide, "sitecustomize.py"), "w") as f:
            f.write("")
        with open(os.path.join(hide, "IPython.py"), "w") as f:
            f.write("raise ImportError('broken on purpose')\n")
        with ipython_begin(env=dict(os.environ, PYTHONPATH=hide)) as s:
            o, rec = s.call(nonce_of(1), "1")
            eq((rec.get("exit_code"), rec.get("session")), (RUNNER_EXIT, {"ended": "IPython could not be loaded"}),
               "record")
            check("broken on purpose" in rec.get("runner_error", ""), "record: %r" % rec)
            eq(s.exited(), RUNNER_EXIT, "exit status")
    finally:
        shutil.rmtree(hide, ignore_errors=True)


@case("py")
def t_session_ipython_bad_requests(lang):
    with ipython_begin() as s:
        o, rec = s.call(nonce_of(1), 5)
        eq(rec.get("exit_code"), RUNNER_EXIT, "record")
        check("code/stdin must be strings" in rec.get("runner_error", ""), "record: %r" % rec)
        s.request(nonce_of(2), "1", kind="begin")
        o, rec = s.record(nonce_of(2))
        check("not a cell" in rec.get("runner_error", ""), "record: %r" % rec)
        cell_ok(s.call(nonce_of(3), "'fine'"), b"'fine'\n")
        # Two requests while a cell runs: the cell ends, and the session.
        s.start(nonce_of(4), "print('start', flush=True)\nwhile True: pass")
        s.request(nonce_of(5), "1")
        s.request(nonce_of(6), "1")
        o, rec = s.record(nonce_of(4))
        eq(rec.get("exit_code"), RUNNER_EXIT, "record")
        check("more than one request" in rec.get("runner_error", ""), "record: %r" % rec)
        eq(s.exited(), RUNNER_EXIT, "exit status after two requests")
    with ipython_begin() as s:
        # A bad frame while idle: no cell to answer.
        s.send(b"mcpsbx/1 interrupt xyz\n")
        eq(s.end(), RUNNER_EXIT, "exit status after a bad frame")
        check("bad request header" in s.err.decode(), "stderr: %r" % s.err[-200:])


# ---- the generic runner's shell mode: one bash for a bash session ----------
def sh_begin(warm=None):
    # The daemon's begin request for bash carries its program.
    return session_begin("pl", warm=warm, mode="shell", program=BASH)


@case("pl")
def t_session_shell_cells(lang):
    with sh_begin(warm="warm") as s:
        # Variables, functions and cd persist; the begin request's env stays.
        cell_ok(s.call(nonce_of(1), "x=41; f() { echo \"f $1 $x\"; }; mkdir -p sub; cd sub; pwd"),
                (os.path.realpath(s.dir) + "/sub\n").encode())
        cell_ok(s.call(nonce_of(2), "x=$((x + 1)); f a; pwd; echo $MCPSBX_T_KEPT"),
                ("f a 42\n%s/sub\nkept\n" % os.path.realpath(s.dir)).encode())
        # Stdin, files and variables per cell; an earlier file is replaced.
        cell_ok(s.call(nonce_of(3), "cat; cat ../f.txt; echo \" $V\"", stdin="in3\n",
                       files=[{"path": "f.txt", "content": "a", "encoding": "utf-8"}],
                       **generic_variables({"V": "it's v3"})), b"in3\na it's v3\n")
        cell_ok(s.call(nonce_of(4), "cat; cat ../f.txt; echo", stdin="in4\n",
                       files=[{"path": "f.txt", "content": "b", "encoding": "utf-8"}]), b"in4\nb\n")
        # A failing command is the cell's status; the shell goes on.
        cell_ok(s.call(nonce_of(5), "echo bad >&2; false"), b"", code=1)
        cell_ok(s.call(nonce_of(6), "(exit 7)"), b"", code=7)
        # Output files come back from the session's directory.
        o, rec = s.call(nonce_of(7), "echo r > ../outputs/r.txt; echo out",
                        outputs={"paths": [], "max_files": 5, "max_file_bytes": 100, "max_total_bytes": 100})
        eq(rec, {"exit_code": 0, "memory_error": False, "files": {"sent": 1, "left_out": 0}}, "record")
        check(o.startswith(b"out\n" + PREFIX + nonce_of(7).encode() + b':F{"path":"outputs/r.txt"'), "stdout: %r" % o)
        with s.cond:
            check(s.cond.wait_for(lambda: b"bad\n" in s.err, 30), "stderr: %r" % s.err[-200:])
            check(b"job control" not in s.err, "start-up warnings: %r" % s.err[-300:])
        # exit ends the session: the record, then the runner.
        o, rec = s.call(nonce_of(8), "echo bye; exit 3")
        eq((o, rec), (b"bye\n", {"exit_code": 3, "memory_error": False,
                                 "session": {"ended": "the shell exited"}}), "record")
        eq(s.p.wait(timeout=30), 0, "exit status")


@case("pl")
def t_session_shell_interrupt(lang):
    with sh_begin() as s:
        cell_ok(s.call(nonce_of(1), "kept=state"), b"")
        # A pure-bash loop, then an external command, each stopped with the
        # shell and its state kept.
        s.start(nonce_of(2), "echo start; while :; do :; done")
        s.interrupt(nonce_of(9))
        time.sleep(0.3)
        check(s.p.poll() is None, "the runner ended")
        s.interrupt(nonce_of(2))
        cell_ok(s.record(nonce_of(2)), b"start\n", code=130, session={"interrupted": True})
        s.start(nonce_of(3), "echo start; sleep 60; echo never")
        s.interrupt(nonce_of(3))
        cell_ok(s.record(nonce_of(3)), b"start\n", code=130, session={"interrupted": True})
        s.interrupt(nonce_of(3))
        # A command the first SIGINT misses (as one between fork and exec
        # does) gets another; the rest of the line does not run.
        s.start(nonce_of(6), "perl -e '$| = 1; $SIG{INT} = sub { $SIG{INT} = q(DEFAULT) }; print qq(start\\n);"
                " sleep 1 for 1 .. 60'; echo never")
        s.interrupt(nonce_of(6))
        cell_ok(s.record(nonce_of(6)), b"start\n", code=130, session={"interrupted": True})
        cell_ok(s.call(nonce_of(4), "echo $kept"), b"state\n")
        # A cell that makes the shell ignore SIGINT is not stopped: no
        # record (the daemon's grace ends the sandbox).
        s.start(nonce_of(5), "trap '' INT; echo start; while :; do :; done")
        s.interrupt(nonce_of(5))
        time.sleep(1)
        with s.cond:
            check(PREFIX + nonce_of(5).encode() not in s.out, "a record: %r" % s.out[-200:])
        check(s.p.poll() is None, "the runner ended")
        t0 = time.monotonic()
        eq(s.end(timeout=20), 0, "exit status at the end of stdin")
        check(time.monotonic() - t0 < 20, "the cell was not stopped")


# ---- the Node runner's interpreter mode: one REPL for the whole session ----
JS_LOOP = "console.log('start'); for (;;) {}"


def js_begin(warm=None):
    return session_begin("js", warm=warm, mode="interpreter")


@case("js")
def t_session_repl_cells(lang):
    with js_begin(warm="fs") as s:
        # Top-level let, class, function and await persist; the last value
        # is shown as the REPL shows it, unless undefined.
        cell_ok(s.call(nonce_of(1), "let x = 41; class A { f() { return 'a' } }; function g() { return x + 1 }"),
                b"")
        cell_ok(s.call(nonce_of(2), "const y = await Promise.resolve(g()); y"), b"42\n")
        cell_ok(s.call(nonce_of(3), "console.log(new A().f()); ({a: 1, b: [y]})"), b"a\n{ a: 1, b: [ 42 ] }\n")
        cell_ok(s.call(nonce_of(4), "'s'"), b"'s'\n")
        # A throw fails the cell (the REPL's "Uncaught" on stderr), the state stays.
        o, rec = s.call(nonce_of(5), "x = 7; null.x")
        eq((o, rec), (b"", {"exit_code": 1, "memory_error": False}), "throwing cell")
        with s.cond:
            check(s.cond.wait_for(lambda: b"Uncaught TypeError" in s.err, 30), "stderr: %r" % s.err[-300:])
            check(b"[eval]" not in s.err and b"node:repl" not in s.err, "runner frames: %r" % s.err[-600:])
        o, rec = s.call(nonce_of(6), "let x = 2")
        eq(rec["exit_code"], 1, "a second let")
        cell_ok(s.call(nonce_of(7), "x"), b"7\n")
        # Per cell: stdin, variables (writable globals, given again later),
        # files (an earlier one replaced), the begin request's env.
        cell_ok(s.call(nonce_of(8), "V + ' ' + process.env.MCPSBX_T_KEPT + ' ' + require('fs').readFileSync(0, 'utf8')"
                       " + require('fs').readFileSync('f.txt', 'utf8')", variables={"V": "v8"}, stdin="in8",
                       files=[{"path": "f.txt", "content": "a", "encoding": "utf-8"}]), b"'v8 kept in8a'\n")
        cell_ok(s.call(nonce_of(9), "V = V + '!'; let t = ''; for await (const b of process.stdin) t += b;"
                       " console.log(V, t, require('fs').readFileSync('f.txt', 'utf8'))",
                       variables={"V": "v9"}, stdin="in9",
                       files=[{"path": "f.txt", "content": "b", "encoding": "utf-8"}]), b"v9! in9 b\n")
        # cwd persists; files still come from the session's directory.
        cell_ok(s.call(nonce_of(10), "require('fs').mkdirSync('sub'); process.chdir('sub')"), b"")
        o, rec = s.call(nonce_of(11), "require('fs').writeFileSync('../outputs/r.txt', 'r'); process.cwd()",
                        outputs={"paths": [], "max_files": 5, "max_file_bytes": 100, "max_total_bytes": 100})
        eq(rec, {"exit_code": 0, "memory_error": False, "files": {"sent": 1, "left_out": 0}}, "record")
        check(o.startswith(("'%s/sub'\n" % os.path.realpath(s.dir)).encode() + PREFIX + nonce_of(11).encode()
                           + b':F{"path":"outputs/r.txt"'), "stdout: %r" % o)
        cell_ok(s.call(nonce_of(12), "process.cwd().endsWith('/sub')"), b"true\n")
        # A check-only cell runs nothing.
        cell_ok(s.call(nonce_of(13), "x = 100", check=True), b"", check={"ok": True})
        o, rec = s.call(nonce_of(14), "let (", check=True)
        eq(rec["check"]["ok"], False, "check of bad code")
        cell_ok(s.call(nonce_of(15), "x"), b"7\n")
        # A bad variable name is the cell's runner failure.
        o, rec = s.call(nonce_of(16), "1", variables={"fs": 1})
        eq(rec.get("exit_code"), RUNNER_EXIT, "record")
        check("is not allowed" in rec.get("runner_error", ""), "record: %r" % rec)
        eq(s.end(), 0, "exit status at the end of stdin")


@case("js")
def t_session_repl_interrupt(lang):
    with js_begin() as s:
        cell_ok(s.call(nonce_of(1), "let kept = 'state'"), b"")
        # Synchronous code, twice in two cells (the REPL's SIGINT watchdog
        # must be ready again after each evaluation).
        for i in (2, 3):
            s.start(nonce_of(i), JS_LOOP)
            # Another nonce (a late interrupt of an earlier cell) is ignored.
            s.interrupt(nonce_of(9))
            time.sleep(0.3)
            check(s.p.poll() is None, "the runner ended")
            s.interrupt(nonce_of(i))
            cell_ok(s.record(nonce_of(i)), b"start\n", code=130, session={"interrupted": True})
        # A pending top-level await.
        s.start(nonce_of(4), "console.log('start'); await new Promise(() => {})")
        s.interrupt(nonce_of(4))
        cell_ok(s.record(nonce_of(4)), b"start\n", code=130, session={"interrupted": True})
        # An interrupt with no cell running is ignored; the state is kept.
        s.interrupt(nonce_of(4))
        time.sleep(0.2)
        cell_ok(s.call(nonce_of(5), "kept"), b"'state'\n")
        s.start(nonce_of(6), JS_LOOP)
        s.interrupt(nonce_of(6))
        cell_ok(s.record(nonce_of(6)), b"start\n", code=130, session={"interrupted": True})
        cell_ok(s.call(nonce_of(7), "kept"), b"'state'\n")
        eq(s.end(), 0, "exit status at the end of stdin")


@case("js")
def t_session_repl_wrong_nonce_and_exit(lang):
    with js_begin() as s:
        s.start(nonce_of(1), "console.log('start'); await new Promise((r) => setTimeout(r, 1000)); 'done'")
        s.interrupt(nonce_of(2))
        cell_ok(s.record(nonce_of(1)), b"start\n'done'\n")
        # process.exit() ends the session: the record, then the end.
        o, rec = s.call(nonce_of(3), "console.log('bye'); process.exit(4)")
        eq((o, rec), (b"bye\n", {"exit_code": 4, "memory_error": False,
                                 "session": {"ended": "the program exited"}}), "record")
        eq(s.p.wait(timeout=30), 4, "exit status")
    # The end of stdin while a cell runs ends the runner, even in a loop.
    with js_begin() as s:
        s.start(nonce_of(1), "console.log('start'); await new Promise(() => {})")
        eq(s.end(timeout=20), 0, "exit status at the end of stdin")
    with js_begin() as s:
        s.start(nonce_of(1), JS_LOOP)
        rc = s.end(timeout=20)
        check(rc in (-9, 137), "exit status at the end of stdin: %r" % rc)  # 137: through a container


@case("js")
def t_session_repl_bad_requests(lang):
    req = frame("1", extra={"session": {"cell": True}})
    expect_runner_failure(run(lang, request=req), True, "session cell without a session")
    req = frame("1", extra={"session": {"begin": False}})
    expect_runner_failure(run(lang, request=req), True, "neither begin nor cell")
    with js_begin() as s:
        s.request(nonce_of(1), "1", kind="begin")
        o, rec = s.record(nonce_of(1))
        eq(rec.get("exit_code"), RUNNER_EXIT, "record")
        check("not a cell" in rec.get("runner_error", ""), "record: %r" % rec)
        s.request(nonce_of(2), 5)
        o, rec = s.record(nonce_of(2))
        check("code/stdin must be strings" in rec.get("runner_error", ""), "record: %r" % rec)
        cell_ok(s.call(nonce_of(3), "'fine'"), b"'fine'\n")
        s.send(b"mcpsbx/1 interrupt xyz\n")
        eq(s.end(), RUNNER_EXIT, "exit status after a bad frame")
        check("bad request header" in s.err.decode(), "stderr: %r" % s.err[-200:])
    with js_begin() as s:
        s.start(nonce_of(1), "console.log('start'); await new Promise(() => {})")
        s.request(nonce_of(2), "1")
        s.request(nonce_of(3), "1")
        o, rec = s.record(nonce_of(1))
        check("more than one request" in rec.get("runner_error", ""), "record: %r" % rec)
        eq(s.p.wait(timeout=30), RUNNER_EXIT, "exit status after two requests")


@case("pl")
def t_perl_syntax(lang):
    # The runner compiles cleanly with nothing but Debian's perl package
    # and JSON::XS (libjson-xs-perl), which it only tries.
    p = subprocess.run([PERL, "-c", "-e", PL_SRC], capture_output=True, text=True, timeout=30)
    eq((p.returncode, p.stderr.strip()), (0, "-e syntax OK"), "perl -c")
    mods = set(re.findall(r"(?:^\s*use|\brequire)\s+([A-Z][\w:]*)", PL_SRC, re.M))
    allowed = {"POSIX", "Fcntl", "Errno", "B", "Time::HiRes", "Digest::SHA", "MIME::Base64", "JSON::PP", "IO::Poll",
               "JSON::XS"}
    check({"POSIX", "JSON::PP", "JSON::XS"} <= mods and not mods - allowed, "modules: %r" % sorted(mods))

# ---- the egress forwarder ---------------------------------------------------


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class EchoGateway:
    """A unix socket standing for the daemon's gateway: each connection is
    echoed; once the client's end comes, "<end>" follows and it closes.
    refuse: the first that many connections are closed at once, unread (a
    gateway that turns one away). hold: after that many connections it
    takes no more until resume(), so its backlog (of `backlog`) fills."""

    def __init__(self, path, backlog=8, refuse=0, hold=None):
        self.path = path
        self.refuse = refuse
        self.hold = hold
        self.resumed = threading.Event()
        self.lock = threading.Lock()
        self.ends = 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(backlog)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        n = 0
        while True:
            if self.hold is not None and n >= self.hold:
                self.resumed.wait()
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            n += 1
            if n <= self.refuse:
                c.close()
                continue
            threading.Thread(target=self._echo, args=(c,), daemon=True).start()

    def _echo(self, c):
        with c:
            try:
                while True:
                    data = c.recv(65536)
                    if not data:
                        break
                    c.sendall(data)
                with self.lock:
                    self.ends += 1
                c.sendall(b"<end>")
            except OSError:
                pass

    def resume(self):
        self.resumed.set()

    def close(self):
        self.sock.close()
        self.resumed.set()


def marked(marker):
    """The pids whose command line holds marker (a unique socket path: the
    forwarder's detached relay)."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if marker.encode() in args:
            pids.append(int(pid))
    return pids


def kill_marked(marker):
    """SIGKILLs the processes marked(marker); how many."""
    n = 0
    for pid in marked(marker):
        try:
            os.kill(pid, signal.SIGKILL)
            n += 1
        except OSError:
            pass
    return n


def forwarder(sock, port, *prog, blocking=False):
    """Runs prog behind the forwarder (with -b: blocking); its result once
    its stdout and stderr closed."""
    mode = ["--", "-b"] if blocking else []
    try:
        return subprocess.run([PERL, "-e", FW_SRC] + mode + [sock, str(port)] + list(prog),
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        raise Failure("the program's stdout and stderr did not close within 30 s of its end")


def read_to_end(c):
    got = b""
    while True:
        data = c.recv(65536)
        if not data:
            return got
        got += data


def recv_exact(c, n):
    got = b""
    while len(got) < n:
        data = c.recv(n - len(got))
        if not data:
            raise Failure("the connection ended after %d of %d bytes" % (len(got), n))
        got += data
    return got


def echo(c, data):
    """Sends data and reads as much back."""
    c.sendall(data)
    return recv_exact(c, len(data))


def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=30)


@case("pl")
def t_forwarder_syntax(lang):
    # perl-base is all an image is sure to have.
    p = subprocess.run([PERL, "-c", "-e", FW_SRC], capture_output=True, text=True, timeout=30)
    eq((p.returncode, p.stderr.strip()), (0, "-e syntax OK"), "perl -c")
    mods = set(re.findall(r"^\s*use\s+([A-Z][\w:]*)", FW_SRC, re.M))
    check(mods == {"Socket", "POSIX", "Errno", "Fcntl"}, "modules: %r" % sorted(mods))


@case("pl")
def t_forwarder_relays(lang):
    # The program runs with its own stdio, which close when it ends (the
    # relay holds none of them); the relay then passes a TCP connection to
    # the unix socket and back, more than its buffers hold, and each side's
    # end to the other.
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-fw-") as d:
        sock = os.path.join(d, "egress.sock")
        gw = EchoGateway(sock)
        try:
            port = free_port()
            p = forwarder(sock, port, "sh", "-c", "echo hi; echo oops >&2; exit 3")
            eq((p.returncode, p.stdout, p.stderr), (3, b"hi\n", b"oops\n"), "the program")
            data = os.urandom(300 * 1024)
            with socket.create_connection(("127.0.0.1", port), timeout=30) as c:
                def send():
                    c.sendall(data)
                    c.shutdown(socket.SHUT_WR)

                t = threading.Thread(target=send)
                t.start()
                got = read_to_end(c)
                t.join()
            eq(len(got), len(data) + 5, "bytes back")
            check(got[:len(data)] == data, "the bytes came back changed")
            eq(got[len(data):], b"<end>", "after the client's end")
            eq(gw.ends, 1, "ends the gateway saw")
        finally:
            relays = kill_marked(sock)
            gw.close()
        check(relays >= 1, "no detached relay was found")


@case("pl")
def t_forwarder_without_gateway(lang):
    # Nothing at the socket: a connection is closed at once (reset, when
    # what it sent was never read), never kept or answered.
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-fw-") as d:
        sock = os.path.join(d, "egress.sock")
        port = free_port()
        try:
            p = forwarder(sock, port, "true")
            eq(p.returncode, 0, "exit status")
            with socket.create_connection(("127.0.0.1", port), timeout=30) as c:
                c.sendall(b"CONNECT example.com:443 HTTP/1.1\r\n\r\n")
                try:
                    got = read_to_end(c)
                except ConnectionResetError:
                    got = b""
                eq(got, b"", "answer")
        finally:
            kill_marked(sock)


@case("pl")
def t_forwarder_port_taken(lang):
    # It cannot listen: it says so and the program never runs (a sandbox
    # that asked for egress does not start without it).
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-fw-") as d:
        sock = os.path.join(d, "egress.sock")
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        try:
            p = forwarder(sock, port, "sh", "-c", "echo ran")
        finally:
            taken.close()
            left = kill_marked(sock)
        check(p.returncode != 0, "exit status 0")
        eq(p.stdout, b"", "stdout")
        msg = "mcpsbx egress forwarder: cannot listen on 127.0.0.1:%d: " % port
        check(p.stderr.decode().startswith(msg), "stderr: %r" % p.stderr)
        eq(left, 0, "processes left")


@case("pl")
def t_forwarder_many_at_once(lang):
    # Many connections at once, a few KiB each way: every byte comes back
    # on its own connection, and one process relays them all (none is
    # made per connection).
    n = 50
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-fw-") as d:
        sock = os.path.join(d, "egress.sock")
        gw = EchoGateway(sock)
        try:
            port = free_port()
            eq(forwarder(sock, port, "true").returncode, 0, "exit status")
            all_open = threading.Barrier(n + 1, timeout=60)
            results = [None] * n

            def client(k):
                data = os.urandom(4096 + 97 * k)
                half = len(data) // 2
                try:
                    with connect(port) as c:
                        got = echo(c, data[:half])
                        all_open.wait()  # every connection open
                        all_open.wait()  # counted
                        c.sendall(data[half:])
                        c.shutdown(socket.SHUT_WR)
                        got += read_to_end(c)
                    results[k] = "ok" if got == data + b"<end>" else "%d bytes back, changed" % len(got)
                except Exception as e:
                    all_open.abort()
                    results[k] = "%s: %s" % (type(e).__name__, e)

            threads = [threading.Thread(target=client, args=(k,)) for k in range(n)]
            for t in threads:
                t.start()
            try:
                all_open.wait()
                relays = marked(sock)
                all_open.wait()
            except threading.BrokenBarrierError:
                relays = None
            for t in threads:
                t.join()
            bad = ["%d: %s" % (k, r) for k, r in enumerate(results) if r != "ok"]
            eq(bad, [], "connections that failed")
            eq(len(relays), 1, "relay processes with %d connections open" % n)
            eq(gw.ends, n, "ends the gateway saw")
        finally:
            kill_marked(sock)
            gw.close()


def half_close_apart(blocking):
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-fw-") as d:
        sock = os.path.join(d, "egress.sock")
        gw = EchoGateway(sock)
        try:
            port = free_port()
            eq(forwarder(sock, port, "true", blocking=blocking).returncode, 0, "exit status")
            with connect(port) as a, connect(port) as b:
                eq(echo(b, b"b1"), b"b1", "the second's echo")
                data = os.urandom(1024 * 1024)

                def send():
                    a.sendall(data)
                    a.shutdown(socket.SHUT_WR)

                t = threading.Thread(target=send)
                t.start()
                for k in range(20):
                    chunk = os.urandom(8192)
                    check(echo(b, chunk) == chunk, "the second's echo %d changed" % k)
                got = read_to_end(a)
                t.join()
                eq(len(got), len(data) + 5, "the first's bytes back")
                check(got[:len(data)] == data, "the first's bytes came back changed")
                eq(got[len(data):], b"<end>", "after the first's end")
                eq(gw.ends, 1, "ends the gateway saw")
                eq(echo(b, b"b2"), b"b2", "the second's echo after the first ended")
                b.shutdown(socket.SHUT_WR)
                eq(read_to_end(b), b"<end>", "after the second's end")
            eq(gw.ends, 2, "ends the gateway saw")
        finally:
            kill_marked(sock)
            gw.close()


@case("pl")
def t_forwarder_half_close_apart(lang):
    # One connection's end goes to its own gateway connection only: while
    # its bytes back wait for it (it is not read, so the relay stops
    # reading it), another connection goes on both ways; the first still
    # receives after its end.
    half_close_apart(False)


@case("pl")
def t_forwarder_blocking(lang):
    # -b (a gateway socket that cannot be polled, as under gVisor): the
    # same relay with blocking reads, two processes per open connection,
    # none left once the connections end; the program's output and status
    # as without it.
    half_close_apart(True)
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-fw-") as d:
        sock = os.path.join(d, "egress.sock")
        gw = EchoGateway(sock)
        try:
            port = free_port()
            p = forwarder(sock, port, "sh", "-c", "echo hi; exit 3", blocking=True)
            eq((p.returncode, p.stdout), (3, b"hi\n"), "the program's status and output")
            with connect(port) as a, connect(port) as b:
                eq(echo(a, b"a1"), b"a1", "the first's echo")
                eq(echo(b, b"b1"), b"b1", "the second's echo")
                eq(len(marked(sock)), 1 + 2 * 2, "relay processes with two connections open")
                for c in (a, b):
                    c.shutdown(socket.SHUT_WR)
                    eq(read_to_end(c), b"<end>", "after its end")
            deadline = time.monotonic() + 10
            while len(marked(sock)) > 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            eq(len(marked(sock)), 1, "relay processes once the connections ended")
        finally:
            kill_marked(sock)
            gw.close()


@case("pl")
def t_forwarder_gateway_refuses(lang):
    # The gateway closes a connection unread: its client sees it end, and
    # the relay goes on with the next.
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-fw-") as d:
        sock = os.path.join(d, "egress.sock")
        gw = EchoGateway(sock, refuse=1)
        try:
            port = free_port()
            eq(forwarder(sock, port, "true").returncode, 0, "exit status")
            with connect(port) as c:
                c.sendall(b"CONNECT example.com:443 HTTP/1.1\r\n\r\n")
                try:
                    got = read_to_end(c)
                except ConnectionResetError:
                    got = b""
                eq(got, b"", "the refused connection's answer")
            with connect(port) as c:
                eq(echo(c, b"hello"), b"hello", "the next connection's echo")
                c.shutdown(socket.SHUT_WR)
                eq(read_to_end(c), b"<end>", "after the next connection's end")
            eq(len(marked(sock)), 1, "relay processes")
        finally:
            kill_marked(sock)
            gw.close()


@case("pl")
def t_forwarder_gateway_backlog_full(lang):
    # The gateway takes one connection, then none while its backlog fills:
    # the connections beyond it wait in the relay, which meanwhile goes on
    # relaying the first (one that waited in a connect would stop); once
    # the gateway takes them, each is served in full.
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-fw-") as d:
        sock = os.path.join(d, "egress.sock")
        gw = EchoGateway(sock, backlog=1, hold=1)
        others = []
        try:
            port = free_port()
            eq(forwarder(sock, port, "true").returncode, 0, "exit status")
            with connect(port) as a:
                eq(echo(a, b"a1"), b"a1", "the first's echo")
                datas = [os.urandom(1000 + k) for k in range(6)]
                for data in datas:
                    c = connect(port)
                    others.append(c)
                    c.sendall(data)
                    c.shutdown(socket.SHUT_WR)
                # Time for the relay to reach them all (not needed to pass).
                time.sleep(0.3)
                eq(echo(a, b"a2"), b"a2", "the first's echo while the others wait")
                gw.resume()
                for k, (c, data) in enumerate(zip(others, datas)):
                    eq(read_to_end(c), data + b"<end>", "connection %d" % k)
                a.shutdown(socket.SHUT_WR)
                eq(read_to_end(a), b"<end>", "after the first's end")
            eq(gw.ends, 7, "ends the gateway saw")
        finally:
            for c in others:
                c.close()
            kill_marked(sock)
            gw.close()


@case("pl")
def t_forwarder_cap(lang):
    # CONNS_MAX connections at once are relayed; the next waits in the
    # kernel's backlog, unanswered, until one of them ends.
    cap = int(re.search(r"CONNS_MAX\s*=>\s*(\d+)", FW_SRC).group(1))
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-fw-") as d:
        sock = os.path.join(d, "egress.sock")
        gw = EchoGateway(sock, backlog=64)
        conns = []
        try:
            port = free_port()
            eq(forwarder(sock, port, "true").returncode, 0, "exit status")
            for _ in range(cap):
                conns.append(connect(port))
                conns[-1].sendall(b"x")
            for k, c in enumerate(conns):
                eq(recv_exact(c, 1), b"x", "connection %d's echo" % k)
            extra = connect(port)
            conns.append(extra)
            extra.sendall(b"y")
            # Would be answered at once if it were relayed.
            extra.settimeout(0.5)
            try:
                got = extra.recv(1)
            except socket.timeout:
                got = None
            eq(got, None, "the connection over the cap's answer")
            extra.settimeout(30)
            conns[0].shutdown(socket.SHUT_WR)
            eq(read_to_end(conns[0]), b"<end>", "after the first's end")
            eq(recv_exact(extra, 1), b"y", "the connection over the cap's echo once one ended")
            eq(len(marked(sock)), 1, "relay processes")
        finally:
            for c in conns:
                c.close()
            kill_marked(sock)
            gw.close()


# ---- package sets (runner.h, "packages" and "add_packages") ------------------
class PackageRoot:
    """A stand-in for /opt/mcpsbx-packages: a temp directory the runner is
    told of through MCPSBX_PACKAGES_ROOT in its own environment (the only
    way to move the root; the host has no /opt/mcpsbx-packages to write),
    holding a pip-style set (the set's directory is an import root) and an
    npm-style one (packages under its node_modules/)."""

    PY = {
        "mcpsbx_t_pkg/__init__.py": "VALUE = 'from the set'\n",
        # Names the set must not win: a standard module, the working directory's.
        "colorsys.py": "raise SystemExit('the set replaced colorsys')\n",
        "mcpsbx_t_local.py": "WHERE = 'set'\n",
    }
    PY2 = {"mcpsbx_t_two.py": "VALUE = 'second set'\n", "mcpsbx_t_pkg/__init__.py": "VALUE = 'loser'\n"}
    JS = {
        "node_modules/tpkg/package.json": '{"name": "tpkg", "main": "lib/index.js"}',
        "node_modules/tpkg/lib/index.js": "module.exports = 'tpkg ' + require('tdep');\n",
        "node_modules/tdep/index.js": "module.exports = 'with tdep';\n",
        "node_modules/@tscope/esm/package.json": '{"name": "@tscope/esm", "type": "module", "exports": "./main.js"}',
        "node_modules/@tscope/esm/main.js": "export const v = 'esm from the set';\n",
        "node_modules/.package-lock.json": "{}",
    }
    JS2 = {"node_modules/tsecond/index.js": "module.exports = 'second set';\n",
           "node_modules/tpkg/index.js": "module.exports = 'loser';\n"}

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="mcpsbx-rt-pkgs-")
        self.env = dict(os.environ, MCPSBX_PACKAGES_ROOT=self.dir)

    def set(self, name, files):
        d = os.path.join(self.dir, name)
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as f:
                f.write(text)
        return d

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)


PKG_USE = {
    "py": "import mcpsbx_t_pkg\nprint(mcpsbx_t_pkg.VALUE)",
    "js": "console.log(require('tpkg'))",
}
PKG_OUT = {"py": "from the set\n", "js": "tpkg with tdep\n"}


@case("py", "js")
def t_packages_import(lang):
    with PackageRoot() as root:
        one = root.set("one", root.PY if lang == "py" else root.JS)
        two = root.set("two", root.PY2 if lang == "py" else root.JS2)
        res = run(lang, request=frame(PKG_USE[lang], extra={"packages": [one]}), env=root.env)
        ok_record(res)
        eq(res.out, PKG_OUT[lang], "stdout with the set")
        # Without it the program cannot import it.
        res = run(lang, request=frame(PKG_USE[lang]), env=root.env)
        eq((res.record or {}).get("exit_code"), 1, "record without the set")
        want = "No module named 'mcpsbx_t_pkg'" if lang == "py" else "Cannot find module 'tpkg'"
        check(want in res.stderr, "stderr without the set: %r" % res.stderr[-300:])
        # Two sets: the first wins a name both have.
        both = {"py": "import mcpsbx_t_pkg, mcpsbx_t_two\nprint(mcpsbx_t_pkg.VALUE, mcpsbx_t_two.VALUE)",
                "js": "console.log(require('tpkg'), require('tsecond'))"}[lang]
        res = run(lang, request=frame(both, extra={"packages": [one, two]}), env=root.env)
        ok_record(res)
        eq(res.out, {"py": "from the set second set\n", "js": "tpkg with tdep second set\n"}[lang], "two sets")


@case("py")
def t_packages_path_order(lang):
    # The set sits after the standard library and before the site
    # directories: it cannot replace a standard module or the working
    # directory's, and runs no code of its own on the way.
    with PackageRoot() as root:
        one = root.set("one", root.PY)
        code = ("import sys, colorsys, mcpsbx_t_local\n"
                "print(mcpsbx_t_local.WHERE, colorsys.__name__)\n"
                "i = sys.path.index(%r)\n"
                "print(sys.path[0] == __import__('os').getcwd(), i > sys.path.index(__import__('os').path.dirname(colorsys.__file__)))\n"
                "print(all(not p.endswith(('site-packages', 'dist-packages')) for p in sys.path[:i]))\n" % one)
        files = [{"path": "mcpsbx_t_local.py", "content": "WHERE = 'cwd'\n", "encoding": "utf-8"}]
        res = run(lang, request=frame(code, extra={"packages": [one], "files": files}), env=root.env)
        ok_record(res)
        eq(res.out, "cwd colorsys\nTrue True\nTrue\n", "stdout")


@case("js")
def t_packages_esm_and_outputs(lang):
    # import of a bare name (an ES module and a CommonJS one) resolves from
    # the set too, and the links are no output files, nor left-out ones.
    with PackageRoot() as root:
        one = root.set("one", root.JS)
        code = "import { v } from '@tscope/esm';\nimport t from 'tpkg';\nconsole.log(v, t);\n"
        outputs = {"paths": ["node_modules/**", "**/*.js"], "max_files": 5, "max_file_bytes": 1000,
                   "max_total_bytes": 10000, "plots": False}
        res = run(lang, request=frame(code, extra={"packages": [one], "outputs": outputs}), env=root.env)
        check(res.record is not None, "no record: %r" % res.stderr)
        eq(res.record.get("exit_code"), 0, "exit code; stderr %r" % res.stderr)
        eq(res.out, "esm from the set tpkg with tdep\n", "stdout")
        eq(res.record.get("files"), {"sent": 0, "left_out": 0}, "files")


@case("py", "js")
def t_packages_refused(lang):
    with PackageRoot() as root:
        one = root.set("one", root.PY if lang == "py" else root.JS)
        os.makedirs(os.path.join(root.dir, "..x"), exist_ok=True)
        cases = [
            ("/usr/lib", "is not a package set directory"),
            (root.dir, "is not a package set directory"),
            (root.dir + "/one/../one", "is not a package set directory"),
            (root.dir + "/../" + os.path.basename(root.dir) + "/one", "is not a package set directory"),
            (root.dir + "//one", "is not a package set directory"),
            (root.dir + "/one/", "is not a package set directory"),
            (root.dir + "/missing", "is not there"),
            (7, "is not a package set directory"),
        ]
        for d, why in cases:
            res = run(lang, request=frame(PKG_USE[lang], extra={"packages": [d]}), env=root.env)
            expect_runner_failure(res, True, why)
        for bad in ("x", [one] * 9):
            res = run(lang, request=frame(PKG_USE[lang], extra={"packages": bad}), env=root.env)
            expect_runner_failure(res, True, "must be a list of at most 8 package sets")
        res = run(lang, request=frame(PKG_USE[lang], extra={"add_packages": [one]}), env=root.env)
        expect_runner_failure(res, True, "add_packages outside a session cell")
        # Without the override the root is /opt/mcpsbx-packages, and the
        # request's env cannot move it.
        res = run(lang, request=frame(PKG_USE[lang], extra={
            "packages": [one], "env": {"MCPSBX_PACKAGES_ROOT": root.dir}}))
        expect_runner_failure(res, True, "is not a package set directory under /opt/mcpsbx-packages/")


# The generic runner links them as Node's runner does (TypeScript's program
# is `node main.js` in the working directory).
NODE_PROGRAM = {"source_file": "main.js", "run": ["node", "main.js"]}


@case("pl")
def t_packages_generic(lang):
    with PackageRoot() as root:
        one = root.set("one", root.JS)
        two = root.set("two", root.JS2)
        code = "console.log(require('tpkg'))"
        outputs = {"paths": ["node_modules/**"], "max_files": 5, "max_file_bytes": 1000,
                   "max_total_bytes": 10000, "plots": False}
        res = run(lang, request=pl_frame(code, NODE_PROGRAM, packages=[one], outputs=outputs), env=root.env)
        pl_ok(res, files={"sent": 0, "left_out": 0})
        eq(res.out, "tpkg with tdep\n", "stdout with the set")
        res = run(lang, request=pl_frame(code, NODE_PROGRAM), env=root.env)
        eq((res.record or {}).get("exit_code"), 1, "record without the set")
        check("Cannot find module 'tpkg'" in res.stderr, "stderr: %r" % res.stderr[-300:])
        res = run(lang, request=pl_frame(code, NODE_PROGRAM, packages=[root.dir + "/one/.."]), env=root.env)
        expect_runner_failure(res, True, "is not a package set directory")
        res = run(lang, request=pl_frame(code, NODE_PROGRAM, add_packages=[one]), env=root.env)
        expect_runner_failure(res, True, "add_packages outside a session cell")
        with session_begin(lang, env=root.env) as s:
            use_two = "console.log(require('tsecond'))"
            cell_ok(s.call(nonce_of(1), use_two, program=NODE_PROGRAM, packages=[two]), b"second set\n")
            cell_ok(s.call(nonce_of(2), "test -e node_modules/tsecond && echo kept || echo gone"), b"gone\n")
            cell_ok(s.call(nonce_of(3), "", add_packages=[one]), b"")
            cell_ok(s.call(nonce_of(4), code, program=NODE_PROGRAM), b"tpkg with tdep\n")


# Ruby's sets (gem's layout): on GEM_PATH, ahead of the image's gems (the
# trailing ':'), a cell's for that cell only.
SH_PROGRAM = {"source_file": "main.sh", "run": ["sh", "main.sh"]}
GEMS = {"specifications/tgem-1.0.gemspec": "# a spec\n", "gems/tgem-1.0/lib/tgem.rb": "TGEM = 1\n"}


@case("pl")
def t_packages_gem_path(lang):
    with PackageRoot() as root:
        one = root.set("one", GEMS)
        two = root.set("two", GEMS)
        node = root.set("node", root.JS)
        code = 'echo "$GEM_PATH"'
        res = run(lang, request=pl_frame(code, SH_PROGRAM, packages=[one, node]), env=root.env)
        pl_ok(res)
        eq(res.out, one + ":\n", "GEM_PATH with a gem set and an npm one")
        res = run(lang, request=pl_frame(code, SH_PROGRAM), env=root.env)
        eq(res.out, "\n", "GEM_PATH without a set")
        with session_begin(lang, env=root.env) as s:
            cell_ok(s.call(nonce_of(1), "", add_packages=[one]), b"")
            cell_ok(s.call(nonce_of(2), code, program=SH_PROGRAM, packages=[two]), (two + ":" + one + ":\n").encode())
            cell_ok(s.call(nonce_of(3), code, program=SH_PROGRAM), (one + ":\n").encode())


def packages_session_cells(s, root, lang):
    """A session: a cell's packages for that cell only; add_packages for
    the rest of the session (a cell of no code adds them), and the next
    cell imports them without a restart; a bad set fails its cell only."""
    one = root.set("one", root.PY if lang == "py" else root.JS)
    two = root.set("two", root.PY2 if lang == "py" else root.JS2)
    use_two = {"py": "import mcpsbx_t_two\nprint(mcpsbx_t_two.VALUE)", "js": "console.log(require('tsecond'))"}[lang]
    # A failed import first: what was looked up must not stay cached.
    o, rec = s.call(nonce_of(1), PKG_USE[lang])
    eq(rec.get("exit_code"), 1, "before any set")
    cell_ok(s.call(nonce_of(2), use_two, packages=[two]), b"second set\n")
    if lang == "py":
        probe = "import sys\nprint(%r in sys.path)" % two
    else:
        probe = "console.log(require('fs').existsSync('node_modules/tsecond'))"
    cell_ok(s.call(nonce_of(3), probe), b"False\n" if lang == "py" else b"false\n")
    cell_ok(s.call(nonce_of(4), "", add_packages=[one]), b"")
    cell_ok(s.call(nonce_of(5), PKG_USE[lang]), PKG_OUT[lang].encode())
    o, rec = s.call(nonce_of(6), PKG_USE[lang], add_packages=[root.dir + "/../x"])
    eq(rec.get("exit_code"), RUNNER_EXIT, "a bad set's cell")
    check("is not a package set directory" in rec.get("runner_error", ""), "runner_error: %r" % rec)
    cell_ok(s.call(nonce_of(7), PKG_USE[lang]), PKG_OUT[lang].encode())


@case("py", "js")
def t_packages_session(lang):
    with PackageRoot() as root:
        with session_begin(lang, mode="process" if lang == "py" else "interpreter", env=root.env) as s:
            packages_session_cells(s, root, lang)


@case("py")
def t_session_ipython_packages(lang):
    with PackageRoot() as root:
        with ipython_begin(env=root.env) as s:
            packages_session_cells(s, root, lang)


def main():
    sel = os.environ.get("RUNNER_TESTS", "")
    cases = [c for c in CASES if sel in c[0]]
    for tool, lang in ((PYTHON, "py"), (NODE, "js"), (PERL, "pl")):
        try:
            subprocess.run([tool, "--version"], capture_output=True, check=True)
        except (OSError, subprocess.CalledProcessError):
            print("runner: %s not found; skipping %s cases" % (tool, lang))
            cases = [c for c in cases if c[1] != lang and not (lang == "pl" and c[1] == "pp")]
    has = {}
    for mod in ("IPython", "matplotlib"):
        has[mod] = any(c[1] == "py" for c in cases) and subprocess.run(
            [PYTHON, "-c", "import " + mod], capture_output=True).returncode == 0
    if not has["IPython"]:
        print("runner: %s cannot import IPython; skipping py:session_ipython cases" % PYTHON)
        cases = [c for c in cases if not c[0].startswith("py:session_ipython")]
    elif not has["matplotlib"]:
        print("runner: %s cannot import matplotlib; skipping py:session_ipython_plot" % PYTHON)
        cases = [c for c in cases if c[0] != "py:session_ipython_plot"]
    if shutil.which("gcc") is None:
        print("runner: gcc not found; skipping pl:c_ cases")
        cases = [c for c in cases if not c[0].startswith(("pl:c_", "pp:c_"))]

    def one(c):
        # A case may return a note to print (a timing).
        name, lang, fn = c
        CURRENT.lang = lang
        t0 = time.monotonic()
        try:
            note = fn(lang)
            return name, None, time.monotonic() - t0, note
        except Failure as e:
            return name, str(e), time.monotonic() - t0, None
        except Exception as e:  # a bug in the test itself still fails it
            return name, "%s: %s" % (type(e).__name__, e), time.monotonic() - t0, None

    global PP_LIB
    PP_LIB = make_pp_lib()
    passed = failed = 0
    try:
        with ThreadPoolExecutor(max_workers=int(os.environ.get("RUNNER_JOBS", "4"))) as ex:
            for name, err, dt, note in ex.map(one, cases):
                if err is None:
                    passed += 1
                    print("ok   %-60s %5.0f ms" % (name, dt * 1000))
                    if note:
                        print("     %s" % note)
                else:
                    failed += 1
                    print("FAIL %s\n     %s" % (name, err.replace("\n", "\n     ")))
    finally:
        shutil.rmtree(PP_LIB, ignore_errors=True)
    print("runner: %d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
