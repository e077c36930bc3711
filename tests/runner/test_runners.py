#!/usr/bin/env python3
"""Host tests of the in-container runners (src/sandbox/runner/runner.py, .js).

Each case frames a request exactly as the daemon does, pipes it into
`python3 -u -c <runner.py>` / `node -e <runner.js>` running in a fresh temp
directory, and checks stdout, stderr, the exit status and the completion
record. "Fidelity" cases also run the same program the ordinary way
(`python3 main.py` / `node main.js`) and require identical stderr and exit
status. Environment: PYTHON, NODE pick the interpreters; RUNNER_TESTS=substr
runs a subset. Prints "runner: N passed, M failed"; exits 1 on failure.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY_SRC = open(os.path.join(ROOT, "src/sandbox/runner/runner.py")).read()
JS_SRC = open(os.path.join(ROOT, "src/sandbox/runner/runner.js")).read()
PYTHON = os.environ.get("PYTHON", "python3")
NODE = os.environ.get("NODE", "node")
NONCE = "0123456789abcdef0123456789abcdef"
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


def frame(code, stdin="", nonce=NONCE, extra=None):
    req = {"nonce": nonce, "code": code, "stdin": stdin}
    if extra:
        req.update(extra)
    body = json.dumps(req).encode()
    return b"mcpsbx/1 %d\n" % len(body) + body


def runner_cmd(lang, warm=None):
    """warm: the modules argument of a warm runner (src/sandbox/runner.h)."""
    extra = [] if warm is None else [warm]
    if lang == "py":
        return [PYTHON, "-u", "-c", PY_SRC] + extra
    return [NODE, "-e", JS_SRC] + extra


def split_record(data):
    """(bytes before the record but for file frames, record dict or None,
    bytes after it, [frame lines as bytes]): a line after the marker that
    starts with F, D, E or L is a file frame (src/sandbox/outfiles.h)."""
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
        return out, json.loads(line), rest[nl + 1:], frames


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
        warm=None, files=None):
    """Runs the runner in a fresh temp dir. request: raw bytes to send
    instead of a framed `code`; feed(fd, data): custom writer; warm: run it
    as a warm runner with this modules argument; files: {name: text} put in
    the directory first."""
    data = request if request is not None else frame(code, stdin)
    with tempfile.TemporaryDirectory(prefix="mcpsbx-rt-") as d:
        for name, text in (files or {}).items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        r, w = os.pipe()
        if nonblock:
            os.set_blocking(r, False)
        p = subprocess.Popen(runner_cmd(lang, warm), cwd=d, stdin=r, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
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
        "py": "import json, os, sys\nprint(json.dumps([sys.argv, sorted(os.listdir('.')), __name__, sys.path[0] == os.getcwd(), sys.stdin.read()]))",
        "js": "const fs = require('fs');\nconsole.log(JSON.stringify([process.argv.length, process.execArgv, fs.readdirSync('.').sort(), require.main === module, fs.readFileSync(0, 'utf8')]))",
    }[lang]
    res = warm_run(lang, probe, "json" if lang == "py" else "zlib", stdin="in")
    cold = run(lang, probe, stdin="in")
    ok_record(res)
    ok_record(cold)
    eq(res.out, cold.out, "stdout (warm vs cold)")
    eq(res.stderr, cold.stderr, "stderr (warm vs cold)")


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


@case("py", "js")
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



# ---- files in and out (src/sandbox/runner.h) --------------------------------
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


def main():
    sel = os.environ.get("RUNNER_TESTS", "")
    cases = [c for c in CASES if sel in c[0]]
    for tool, lang in ((PYTHON, "py"), (NODE, "js")):
        try:
            subprocess.run([tool, "--version"], capture_output=True, check=True)
        except (OSError, subprocess.CalledProcessError):
            print("runner: %s not found; skipping %s cases" % (tool, lang))
            cases = [c for c in cases if c[1] != lang]

    def one(c):
        name, lang, fn = c
        t0 = time.monotonic()
        try:
            fn(lang)
            return name, None, time.monotonic() - t0
        except Failure as e:
            return name, str(e), time.monotonic() - t0
        except Exception as e:  # a bug in the test itself still fails it
            return name, "%s: %s" % (type(e).__name__, e), time.monotonic() - t0

    passed = failed = 0
    with ThreadPoolExecutor(max_workers=int(os.environ.get("RUNNER_JOBS", "4"))) as ex:
        for name, err, dt in ex.map(one, cases):
            if err is None:
                passed += 1
                print("ok   %-60s %5.0f ms" % (name, dt * 1000))
            else:
                failed += 1
                print("FAIL %s\n     %s" % (name, err.replace("\n", "\n     ")))
    print("runner: %d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
