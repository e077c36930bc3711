# mcp-sandboxd in-container runner for Python (protocol: src/sandbox/runner/runner.h).
# Started as `python3 -u -c <this file>`; waits on stdin for one framed
# request, runs the code in this process as the main program, then writes
# the completion record on stderr and stdout. Started as
# `python3 -u -c <this file> <modules>` it is a warm runner: it imports the
# comma-separated modules first, says it is ready, then waits. Standard library only
# (Python >= 3.8; tracebacks match `python3 main.py` from 3.9 on).
# A request with "session": {"begin": true} makes it a session runner
# (runner.h, "process" mode): it answers with a record, then takes one
# request per cell from a private copy of its request descriptor and runs
# each in a forked child (so the preloaded modules stay imported), in the
# same working directory, until that descriptor ends; an interrupt frame for
# the running cell stops the child's process group (SIGINT, then SIGKILL
# after int_grace). The child hands its record to the runner on a pipe; the
# runner adds what only it knows (the interrupt) and writes it out. When the
# begin request carries session.source (runner_session.py) and the image has
# IPython, it runs that instead ("interpreter" mode: one IPython shell, whose
# state persists across cells) with the helpers below.
# A request's "packages" (runner.h) go on sys.path for its run (a cell's,
# in its fork); a session cell's "add_packages" join the session runner's
# own path before it forks, so every later cell has them.
# Everything lives inside one function so that the program's namespace
# (a fresh __main__ module) sees none of the runner's names.


def _mcpsbx_runner():
    import io
    import os
    import sys

    from json import dumps, loads

    prefix = b"\x00\x1emcpsbx-done:"
    ready = b"\x00\x1emcpsbx-ready\n"
    go = b"\x00\x1emcpsbx-go\n"
    max_request = 64 << 20
    max_header = 32  # bytes of a request header
    max_control = 64  # in a session: "mcpsbx/1 interrupt <nonce>" too
    max_cell_record = 64 << 10  # bytes a cell's child may hand over as its record
    int_grace = 0.5  # s from a cell's SIGINT to its SIGKILL
    child_nap = 0.1  # s: the longest a session waits to notice its cell ended
    runner_exit = 76  # EX_PROTOCOL: the runner itself failed
    own_code = _mcpsbx_runner.__code__
    # Bound now: the program may monkeypatch os, json or sys.
    os_write, os_exit, os_getpid = os.write, os._exit, os.getpid
    own_pid = [os_getpid()]
    nonce = [None]
    # Session mode: in_session in the runner that reads the frames (a record
    # ends a cell, not the runner); cell_done in a cell's child, the pipe
    # its record goes to.
    in_session = [False]
    cell_done = [None]
    # Package sets (runner.h, "packages"): where they are. The host tests
    # move the root with MCPSBX_PACKAGES_ROOT (they cannot make /opt/...);
    # it is read here, before any request's env is applied, so no caller can.
    packages_root = (os.environ.get("MCPSBX_PACKAGES_ROOT") or "/opt/mcpsbx-packages").rstrip("/")
    max_package_sets = 8  # RUNNER_MAX_PACKAGE_SETS: per request, and per session
    max_package_path = 256  # RUNNER_MAX_PACKAGE_PATH, with the real root
    session_sets = []  # added for the rest of the session ("add_packages")

    class CellEnd(Exception):
        """finish's way out of a cell in a session runner."""

    def wait_readable(fds, timeout=None, write=False):
        # The fds ready to read (or write), within timeout seconds (None:
        # no limit). poll(), not select(): gVisor (runsc 2022) answers
        # select() with EPERM whatever the descriptors.
        import select

        p = select.poll()
        want = select.POLLOUT if write else select.POLLIN
        for fd in fds:
            p.register(fd, want)
        ms = None if timeout is None else max(0, int(timeout * 1000) + 1)
        return [fd for fd, _ in p.poll(ms)]

    def wait_fd(fd, write):
        # Only reached if someone made a stdio fd non-blocking.
        wait_readable([fd], None, write)

    def write_all(fd, data):
        view = memoryview(data)
        while view:
            try:
                n = os_write(fd, view)
            except BlockingIOError:
                wait_fd(fd, True)
                continue
            view = view[n:]

    def check_variable_names(variables, hidden=()):
        # The daemon checked the names (src/tools/variables.h); this is the
        # same rule against the live interpreter, plus hidden: names an
        # interpreter session keeps for itself.
        import builtins
        import keyword

        for name in variables:
            if (
                not name.isascii()
                or not name.isidentifier()
                or len(name) > 128
                or name.startswith("__")
                or keyword.iskeyword(name)
                or hasattr(builtins, name)
                or name in hidden
            ):
                runner_fail("variable %r is not allowed" % name[:128])

    # A raw stream that never drops part of a write: a pipe may take only
    # part of a large write (gVisor's take 64 KiB at a time), and the
    # interpreter's unbuffered (-u) text streams ignore what was left over.
    class FullWriter(io.RawIOBase):
        def __init__(self, fd):
            self._fd = fd

        def writable(self):
            return True

        def fileno(self):
            return self._fd

        def isatty(self):
            return False

        def write(self, b):
            if self.closed:
                raise ValueError("I/O operation on closed file")
            view = memoryview(b).cast("B")
            write_all(self._fd, view)
            return len(view)

    def read_some(n, fd=0):
        while True:
            try:
                return os.read(fd, n)
            except BlockingIOError:
                wait_fd(fd, False)

    def write_record(rec):
        line = prefix + nonce[0] + b":" + dumps(rec, separators=(",", ":")).encode() + b"\n"
        # stderr first, then stdout: the engine copies the two streams
        # independently, so the daemon needs an end mark on each.
        for fd in (2, 1):
            try:
                write_all(fd, line)
            except OSError:
                pass

    def finish(status, memory_error=False, runner_error=None, check=None, extra=None):
        # A child forked by the program must not claim the run is over.
        if os_getpid() == own_pid[0] and nonce[0] is not None:
            rec = {"exit_code": status, "memory_error": memory_error}
            if runner_error is not None:
                rec["runner_error"] = runner_error
            if check is not None:
                rec["check"] = check
            if outputs_done[0] is not None:
                rec["files"] = outputs_done[0]
            if extra is not None:
                rec.update(extra)
            if cell_done[0] is not None:
                # A cell's child: the session runner writes it out.
                try:
                    write_all(cell_done[0], dumps(rec, separators=(",", ":")).encode())
                except OSError:
                    pass
            else:
                write_record(rec)
                if in_session[0]:
                    raise CellEnd()
        os_exit(status)

    def runner_fail(msg):
        if nonce[0] is None:
            # No nonce, no record: stderr and the exit status are all we have.
            try:
                write_all(2, ("mcpsbx runner: %s\n" % msg).encode("utf-8", "replace"))
            except OSError:
                pass
        finish(runner_exit, runner_error=msg)

    def seed_mpl_cache():
        # An image may carry matplotlib's font cache prebuilt (its root is
        # read-only here, and matplotlib wants a writable config directory):
        # copying it into MPLCONFIGDIR spares the program the rebuild. Best
        # effort; without it matplotlib builds the cache itself.
        conf = os.environ.get("MPLCONFIGDIR")
        seed = "/usr/local/share/mcp-sandboxd/matplotlib"
        if not conf or not os.path.isdir(seed) or os.path.exists(conf):
            return
        try:
            os.makedirs(conf, 0o700)
            for name in os.listdir(seed):
                src = os.open(os.path.join(seed, name), os.O_RDONLY)
                try:
                    data = b""
                    while True:
                        b = os.read(src, 1 << 20)
                        if not b:
                            break
                        data += b
                finally:
                    os.close(src)
                dst = os.open(os.path.join(conf, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                try:
                    write_all(dst, data)
                finally:
                    os.close(dst)
        except OSError:
            pass

    def warm_plots():
        # The first figure a process draws loads fonts and the renderer
        # (tens of ms): paid here, on a figure pyplot never sees.
        try:
            from io import BytesIO

            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure

            fig = Figure()
            FigureCanvasAgg(fig)
            ax = fig.add_subplot()
            ax.plot([1, 3, 2])
            ax.set_title("warm")
            fig.savefig(BytesIO(), format="png")
        except BaseException:
            pass

    def rehearse():
        # A process's first program costs about a millisecond more than
        # later ones (code and data touched for the first time): 1.5 to 2
        # ms against 0.6 for print("hello") in a container here. Preloads
        # pay most of it incidentally; a runner with none would pay it in
        # the caller's run. So it runs one of its own the way a run does,
        # with the modules each run imports.
        try:
            from importlib.machinery import SourceFileLoader

            for name in ("atexit", "binascii"):
                __import__(name)
            mod = type(sys)("__mcpsbx_warm__")
            mod.__loader__ = SourceFileLoader(mod.__name__, "<mcpsbx-warm>")
            code = compile(b"print('warm')\n", "<mcpsbx-warm>", "exec", dont_inherit=True)
            exec(code, mod.__dict__)
        except BaseException:
            pass

    def warm_up(modules):
        # Output of the imports (warnings, banners) would reach the next
        # program's output: it goes nowhere. A module that is missing or
        # fails to import is skipped; the program's own import reports it.
        seed_mpl_cache()
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
        try:
            for name in modules.split(","):
                if name:
                    try:
                        __import__(name)
                    except BaseException:
                        pass
            if "matplotlib.pyplot" in sys.modules:
                warm_plots()
            rehearse()
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:
                pass
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        # A warning shown (to nowhere) while importing must show again
        # when the program triggers it: new filter state, empty registries.
        warnings = sys.modules.get("warnings")
        mutated = getattr(warnings, "_filters_mutated", None)
        if mutated is not None:
            try:
                mutated()
            except BaseException:
                pass
        write_all(1, ready)

    def check_syntax(source, name="main.py", flags=0):
        # compile() of the bytes, as running main.py would: the first
        # error with its 1-based line and column (None when it has none).
        # (An interpreter session passes the cell as IPython transformed it.)
        result = {"ok": True}
        try:
            compile(source, name, "exec", flags=flags, dont_inherit=True)
        except SyntaxError as e:
            result = {
                "ok": False,
                "message": "%s: %s" % (type(e).__name__, e.msg),
                "line": e.lineno if isinstance(e.lineno, int) and e.lineno > 0 else None,
                "column": e.offset if isinstance(e.offset, int) and e.offset > 0 else None,
            }
        except (ValueError, MemoryError, RecursionError) as e:
            result = {"ok": False, "message": "%s: %s" % (type(e).__name__, e), "line": None, "column": None}
        # The record must stay under RUNNER_MAX_RECORD once escaped
        # (a non-ASCII character may take 12 bytes).
        m = result.get("message", "")[:500]
        while len(dumps(m)) > 1500:
            m = m[: len(m) * 3 // 4]
        result["message"] = m
        if result["ok"]:
            del result["message"]
        finish(0, check=result)

    # ---- package sets (runner.h, "packages") ------------------------------
    def package_dir_valid(d):
        # runner_packages.h's rule: under the root, components of
        # [A-Za-z0-9._-] that are not "." or "..", nothing empty.
        from re import fullmatch

        if not isinstance(d, str) or len(d) > max_package_path or not d.startswith(packages_root + "/"):
            return False
        parts = d[len(packages_root) + 1 :].split("/")
        return all(fullmatch(r"[A-Za-z0-9._-]+", c) and c not in (".", "..") for c in parts)

    def package_sets(req, key):
        # The request's list of set directories under key, checked; [] when absent.
        v = req.get(key)
        if v is None:
            return []
        if not isinstance(v, list) or len(v) > max_package_sets:
            runner_fail("request %s must be a list of at most %d package sets" % (key, max_package_sets))
        out = []
        for d in v:
            if not package_dir_valid(d):
                shown = d[:300] if isinstance(d, str) else type(d).__name__
                runner_fail("request %s: %r is not a package set directory under %s/ "
                            "(no empty, '.' or '..' parts)" % (key, shown, packages_root))
            if not os.path.isdir(d):
                runner_fail("request %s: the package set %s is not there" % (key, d))
            if d not in out:
                out.append(d)
        return out

    def add_import_paths(dirs):
        # After the standard library, before the first site directory:
        # where a venv's site-packages would be. A set may add modules and
        # replace site packages, never a standard module (nor, so, one the
        # runner imports later) or the working directory's (sys.path[0]);
        # its .pth files are not run. A set already on the path stays where
        # it is, so one added earlier wins. Returns those added.
        import importlib

        at = len(sys.path)
        for i, p in enumerate(sys.path):
            if i > 0 and isinstance(p, str) and p.rstrip("/").endswith(("site-packages", "dist-packages")):
                at = i
                break
        added = []
        for d in dirs:
            if d not in sys.path:
                sys.path.insert(at, d)
                at += 1
                added.append(d)
        # The finders cache directory listings: the next import must look.
        importlib.invalidate_caches()
        return added

    def remove_import_paths(dirs):
        import importlib

        for d in dirs:
            while d in sys.path:
                sys.path.remove(d)
            sys.path_importer_cache.pop(d, None)
        importlib.invalidate_caches()

    def add_session_sets(dirs):
        # "add_packages": on the path for the rest of the session.
        new = [d for d in dirs if d not in session_sets]
        if len(session_sets) + len(new) > max_package_sets:
            runner_fail("a session takes at most %d package sets" % max_package_sets)
        session_sets.extend(new)
        add_import_paths(new)

    # ---- files in and out (src/sandbox/runner/runner.h) --------------------------
    def write_inputs(files):
        # The daemon checked every path (sandbox/output/workpath.h); this is the
        # same rule again, and O_EXCL|O_NOFOLLOW: nothing existing is
        # replaced and no link is followed.
        from binascii import a2b_base64

        for f in files:
            if not isinstance(f, dict):
                runner_fail("request files: an entry is not an object")
            p, content, enc = f.get("path"), f.get("content"), f.get("encoding")
            if (
                not isinstance(p, str)
                or not isinstance(content, str)
                or enc not in ("utf-8", "base64")
                or not p
                or p.startswith("/")
                or "\0" in p
                or any(c in ("", ".", "..") for c in p.split("/"))
            ):
                runner_fail("request files: bad entry %r" % (p if isinstance(p, str) else None,))
            try:
                if enc == "base64":
                    data = a2b_base64(content)
                else:
                    data = content.encode("utf-8", "surrogateescape")
                parent = os.path.dirname(p)
                if parent:
                    os.makedirs(parent, 0o755, exist_ok=True)
                write_file(p, data, 0o644)
            except (OSError, ValueError) as e:
                runner_fail("cannot write the file %r: %s" % (p[:200], e))

    def write_new_file(p, data, mode):
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)

    def write_file(p, data, mode):
        # A new file; in a session's cell, where an earlier cell may have
        # left one of that name, written beside it and renamed over it
        # (rename replaces a symlink itself, never its target).
        if cell_done[0] is None and not in_session[0]:
            return write_new_file(p, data, mode)
        tmp = os.path.join(os.path.dirname(p), ".mcpsbx-new-%d" % os_getpid())
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        write_new_file(tmp, data, mode)
        try:
            os.rename(tmp, p)
        except OSError:
            os.unlink(tmp)
            raise

    frame_raw = 3000  # bytes per D frame: a whole frame stays under PIPE_BUF
    walk_limit = 20000  # directory entries looked at, at most
    left_report = 20  # left-out files named, at most
    outputs_done = [None]

    def frame(kind, payload):
        # One write of at most 4096 bytes: a pipe (and a unix socket) takes
        # it whole, so a process still writing to stdout cannot split it.
        write_all(1, prefix + nonce[0] + b":" + kind + payload + b"\n")

    class Plots:
        # matplotlib figures become PNGs: each plt.show() takes the open
        # figures (and closes them, as a notebook does), and those still
        # open when the program ends are taken then; in the order drawn.
        backend = "_mcpsbx_plots"

        def __init__(self, spec):
            self.max_count = spec.get("max_plots", 0)
            self.max_bytes = spec.get("max_plot_bytes", 0)
            self.images = []
            self.left = []
            self.busy = False

        def capture(self, fig):
            n = len(self.images) + len(self.left) + 1
            name = "plot-%d.png" % n
            if len(self.images) >= self.max_count:
                self.left.append((name, "over the plot count limit", None))
                return
            from io import BytesIO

            b = BytesIO()
            try:
                fig.savefig(b, format="png")
            except Exception as e:
                self.left.append((name, "matplotlib could not save it: %s" % str(e)[:200], None))
                return
            data = b.getvalue()
            if len(data) > self.max_bytes:
                self.left.append((name, "over the plot size limit", len(data)))
            else:
                self.images.append((name, data))

        def capture_open(self, close):
            helpers = sys.modules.get("matplotlib._pylab_helpers")
            if helpers is None:
                return
            try:
                managers = helpers.Gcf.get_all_fig_managers()
            except Exception:
                return
            for m in managers:
                fig = getattr(getattr(m, "canvas", None), "figure", None)
                if fig is not None:
                    self.capture(fig)
            if close:
                plt = sys.modules.get("matplotlib.pyplot")
                if plt is not None:
                    plt.close("all")

        def use(self, mpl):
            # Only where the sandbox's default (Agg) would draw: a backend
            # the program chose is left alone.
            try:
                current = dict.__getitem__(mpl.rcParams, "backend")
                if isinstance(current, str) and current.lower() == "agg":
                    mpl.rcParams["backend"] = "module://" + self.backend
                    plt = sys.modules.get("matplotlib.pyplot")
                    if plt is not None and getattr(plt, "_backend_mod", None) is not None:
                        plt.switch_backend("module://" + self.backend)
            except Exception:
                pass

        # A meta path finder that finds nothing of its own but the backend
        # module: when matplotlib is imported it lets the real loader run,
        # then points matplotlib at the backend.
        def find_spec(self, name, path=None, target=None):
            if name == self.backend:
                from importlib.machinery import ModuleSpec

                return ModuleSpec(name, self)
            if name != "matplotlib" or self.busy:
                return None
            self.busy = True
            try:
                spec = None
                for f in sys.meta_path:
                    if f is not self and hasattr(f, "find_spec"):
                        spec = f.find_spec(name, path, target)
                        if spec is not None:
                            break
            finally:
                self.busy = False
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            real, plots = spec.loader.exec_module, self

            def exec_module(module):
                real(module)
                plots.use(module)

            spec.loader.exec_module = exec_module
            return spec

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            from matplotlib.backend_bases import FigureManagerBase
            from matplotlib.backends.backend_agg import FigureCanvasAgg

            plots = self

            def show(*args, **kwargs):
                plots.capture_open(True)

            module.FigureCanvas = FigureCanvasAgg
            module.FigureManager = FigureManagerBase
            module.show = show

        def install(self):
            mpl = sys.modules.get("matplotlib")
            if mpl is not None:
                self.use(mpl)
            sys.meta_path.insert(0, self)

    def send_outputs(spec, plots, unchanged=None):
        # Plots, then the files of outputs/ and of the output_files
        # patterns, as frames before the completion record. hashlib is
        # imported only when there is a file to send. unchanged(rel, st):
        # a file of outputs/ to leave out (an interpreter session's cell
        # returns only what it made or changed there; a pattern's match
        # comes back anyway).
        from binascii import b2a_base64
        from stat import S_ISLNK, S_ISREG

        try:
            os.chdir(cwd)  # the program may have left it
        except OSError:
            outputs_done[0] = {"sent": 0, "left_out": 0, "cwd_gone": True}
            return
        max_files = spec.get("max_files", 0)
        max_file = spec.get("max_file_bytes", 0)
        total_left = [spec.get("max_total_bytes", 0)]
        counts = {"sent": 0, "left_out": 0}
        n_files = [0]

        lefts = []

        def leave_out(p, reason, size=None, cap=False):
            counts["left_out"] += 1
            if len(lefts) < walk_limit:
                lefts.append((cap, p, reason, size))

        def send(p, kind, data):
            from hashlib import sha256

            frame(b"F", dumps({"path": p, "size": len(data), "kind": kind}, separators=(",", ":")).encode())
            for i in range(0, len(data), frame_raw):
                frame(b"D", b2a_base64(data[i : i + frame_raw], newline=False))
            frame(b"E", sha256(data).hexdigest().encode())
            counts["sent"] += 1
            total_left[0] -= len(data)

        if plots is not None:
            for name, data in plots.images:
                if len(data) > total_left[0]:
                    leave_out(name, "over the total size limit", len(data), True)
                else:
                    send(name, "plot", data)
            for name, reason, size in plots.left:
                leave_out(name, reason, size)

        # The walk never follows a symlink: it lists with lstat semantics
        # and descends only into real directories.
        seen = [0]
        found = []
        stopped = [False]

        def entries(d):
            if stopped[0]:
                return []
            try:
                with os.scandir(d if d else ".") as it:
                    out = []
                    for e in it:
                        seen[0] += 1
                        if seen[0] > walk_limit:
                            stopped[0] = True
                            break
                        out.append(e)
            except OSError:
                return []
            out.sort(key=lambda e: e.name)
            return out

        def join(d, n):
            return d + "/" + n if d else n

        def add(rel, e):
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                return
            found.append((rel, st))

        def walk_all(d):
            for e in entries(d):
                rel = join(d, e.name)
                if e.is_dir(follow_symlinks=False):
                    walk_all(rel)
                else:
                    add(rel, e)

        def walk_glob(d, parts):
            from fnmatch import fnmatchcase

            head, rest = parts[0], parts[1:]
            if head == "**":
                # Zero or more directories, hidden ones only when named; a
                # pattern ending in ** takes every file below.
                walk_glob(d, rest or ["*"])
                for e in entries(d):
                    if e.name.startswith(".") or not e.is_dir(follow_symlinks=False):
                        continue
                    walk_glob(join(d, e.name), parts)
                return
            for e in entries(d):
                if e.name.startswith(".") and not head.startswith("."):
                    continue
                if not fnmatchcase(e.name, head):
                    continue
                rel = join(d, e.name)
                if rest:
                    if e.is_dir(follow_symlinks=False):
                        walk_glob(rel, rest)
                elif e.is_dir(follow_symlinks=False):
                    walk_all(rel)
                else:
                    add(rel, e)

        if os.path.isdir("outputs") and not os.path.islink("outputs"):
            walk_all("outputs")
        in_outputs = len(found)
        for pattern in spec.get("paths", ()):
            walk_glob("", [c for c in pattern.split("/") if c])

        done = set()
        for i, (rel, st) in enumerate(found):
            if rel in done:
                continue
            if i < in_outputs and unchanged is not None and unchanged(rel, st):
                continue
            done.add(rel)
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:
                leave_out(rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace"), "the name is not UTF-8")
                continue
            if any(ord(c) < 32 or ord(c) == 127 for c in rel) or len(rel.encode()) > 1024:
                leave_out(rel, "the name is not allowed")
                continue
            if S_ISLNK(st.st_mode):
                leave_out(rel, "a symbolic link (never followed)")
                continue
            if not S_ISREG(st.st_mode):
                leave_out(rel, "not a regular file")
                continue
            if st.st_nlink > 1:
                leave_out(rel, "a hard-linked file", st.st_size)
                continue
            if n_files[0] >= max_files:
                leave_out(rel, "over the file count limit", st.st_size, True)
                continue
            if st.st_size > max_file:
                leave_out(rel, "over the per-file size limit", st.st_size, True)
                continue
            if st.st_size > total_left[0]:
                leave_out(rel, "over the total size limit", st.st_size, True)
                continue
            try:
                fd = os.open(rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError as e:
                leave_out(rel, "cannot be opened: %s" % e.strerror)
                continue
            try:
                st2 = os.fstat(fd)
                # The same file the walk saw, and inside the working
                # directory (no directory on the way was swapped for a link).
                real = os.readlink("/proc/self/fd/%d" % fd)
                if (st2.st_dev, st2.st_ino) != (st.st_dev, st.st_ino) or real != os.path.join(cwd, rel):
                    leave_out(rel, "changed while being read")
                    continue
                chunks, size = [], 0
                while size <= max_file:
                    b = os.read(fd, min(1 << 20, max_file + 1 - size))
                    if not b:
                        break
                    chunks.append(b)
                    size += len(b)
            except OSError as e:
                leave_out(rel, "cannot be read: %s" % e.strerror)
                continue
            finally:
                os.close(fd)
            data = b"".join(chunks)
            if len(data) > max_file or len(data) > total_left[0]:
                leave_out(rel, "grew past the size limit while being read", len(data), True)
                continue
            send(rel, "file", data)
            n_files[0] += 1
        # Named: what was refused for what it is before what the caps
        # turned away (stable: in walk order within each).
        lefts.sort(key=lambda e: e[0])
        for _, p, reason, size in lefts[:left_report]:
            rec = {"path": p[:256], "reason": reason}
            if size is not None:
                rec["size"] = size
            frame(b"L", dumps(rec, separators=(",", ":")).encode())
        if stopped[0]:
            counts["walk_stopped"] = walk_limit
        outputs_done[0] = counts

    # ---- the request: "mcpsbx/1 <len>\n" + <len> bytes of JSON ----------
    def read_frame(fd, limit):
        # One frame of fd: ("request", body), ("interrupt", nonce) (in a
        # session only), ("eof", None) (a session's end) or ("bad", why).
        # The header is read a byte at a time so nothing past the frame is
        # consumed.
        header = b""
        while True:
            b = read_some(1, fd)
            if not b:
                if in_session[0] and not header:
                    return "eof", None
                return "bad", "end of input before the request header"
            if b == b"\n":
                break
            header += b
            if len(header) > limit:
                return "bad", "request header too long"
        proto, _, size = header.partition(b" ")
        if in_session[0] and proto == b"mcpsbx/1" and size.startswith(b"interrupt "):
            n = size[10:]
            if len(n) == 32 and all(c in b"0123456789abcdef" for c in n):
                return "interrupt", n
        if proto != b"mcpsbx/1" or not size.isdigit() or len(size) > 10:
            return "bad", "bad request header"
        size = int(size)
        if size > max_request:
            return "bad", "request too large"
        chunks = []
        left = size
        while left > 0:
            b = read_some(min(left, 1 << 20), fd)
            if not b:
                return "bad", "end of input inside the request"
            chunks.append(b)
            left -= len(b)
        return "request", b"".join(chunks)

    def take_request(body):
        # The request of a body; sets the nonce.
        try:
            # surrogateescape keeps any non-UTF-8 bytes exactly as sent.
            req = loads(body.decode("utf-8", "surrogateescape"))
        except ValueError as e:
            runner_fail("request is not JSON: %s" % e)
        if not isinstance(req, dict):
            runner_fail("request is not a JSON object")
        n = req.get("nonce")
        if (
            not isinstance(n, str)
            or len(n) != 32
            or any(c not in "0123456789abcdef" for c in n)
        ):
            runner_fail("request has no valid nonce")
        nonce[0] = n.encode("ascii")
        return req

    def session_kind(req):
        # The request's "session" member: "begin", "cell", or "" when absent.
        if "session" not in req:
            return ""
        s = req["session"]
        if not isinstance(s, dict):
            runner_fail("request session must be an object")
        for kind in ("begin", "cell"):
            if s.get(kind) is True:
                return kind
        runner_fail("request session is neither begin nor cell")

    def set_env(env):
        if not isinstance(env, dict):
            runner_fail("request env must be an object")
        for k, v in env.items():
            if not isinstance(v, str) or not k or "=" in k or "\0" in k or "\0" in v:
                runner_fail("request env: bad variable %r" % k[:64])
            # Here, not in the container's configuration: the engine keeps
            # that on disk. os.environ also reaches child processes.
            os.environ[k] = v

    # ---- session mode ----------------------------------------------------
    def oom_kills():
        # The sandbox cgroup's OOM kills so far (cgroup v2, else v1), or None.
        for f in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
            try:
                with open(f, "rb") as fh:
                    for line in fh:
                        if line.startswith(b"oom_kill "):
                            return int(line.split()[1])
            except (OSError, ValueError, IndexError):
                pass
        return None

    def kill_group(pid, sig):
        try:
            os.killpg(pid, sig)
        except OSError:
            pass

    def ipython_found():
        # Whether the image has IPython, without importing it (a second).
        try:
            from importlib.util import find_spec

            return find_spec("IPython") is not None
        except Exception:
            return False

    def exit_status(exc):
        # What the interpreter does with an uncaught SystemExit.
        c = exc.code
        if c is None:
            return 0
        if isinstance(c, int):
            return c & 0xFF if -(1 << 63) <= c < (1 << 63) else 0xFF
        try:
            err = sys.stderr
            if err is not None:
                err.write(str(c) + "\n")
        except BaseException:
            pass
        return 1

    def interpreter_session(source):
        # "interpreter" mode: runner_session.py, which the daemon sends
        # with the begin request, runs the cells in one IPython shell with
        # these helpers; it never returns.
        helpers = {
            "os": os,
            "sys": sys,
            "dumps": dumps,
            "os_exit": os_exit,
            "write_all": write_all,
            "FullWriter": FullWriter,
            "check_variable_names": check_variable_names,
            "finish": finish,
            "runner_fail": runner_fail,
            "CellEnd": CellEnd,
            "read_frame": read_frame,
            "take_request": take_request,
            "session_kind": session_kind,
            "set_env": set_env,
            "write_inputs": write_inputs,
            "send_outputs": send_outputs,
            "check_syntax": check_syntax,
            "Plots": Plots,
            "seed_mpl_cache": seed_mpl_cache,
            "nonce": nonce,
            "in_session": in_session,
            "own_pid": own_pid,
            "outputs_done": outputs_done,
            "max_control": max_control,
            "runner_exit": runner_exit,
            "exit_status": exit_status,
            "walk_limit": walk_limit,
            "cwd": cwd,
            "package_sets": package_sets,
            "add_import_paths": add_import_paths,
            "remove_import_paths": remove_import_paths,
            "add_session_sets": add_session_sets,
        }
        ns = {"__name__": "_mcpsbx_session", "__builtins__": __builtins__}
        try:
            exec(compile(source, "<mcpsbx-session>", "exec", dont_inherit=True), ns)
            main = ns["interpreter_main"]
        except Exception as e:
            runner_fail("the session runner does not compile: %s: %s" % (type(e).__name__, e))
        main(helpers)
        os_exit(0)

    def session_main(req):
        # The begin request: keeps env, says the mode, then runs cells until
        # the request descriptor ends. Returns only in a cell's child, with
        # the cell's request, for the one-shot code below to run.
        import signal
        import warnings

        set_env(req.get("env") if req.get("env") is not None else {})
        source = req["session"].get("source")
        if isinstance(source, str) and ipython_found():
            interpreter_session(source)
        # The cells get their stdin files on fd 0; the frames come on a
        # copy of the request descriptor no child keeps (os.dup's copy is
        # close-on-exec, and each cell's child closes it).
        try:
            ctl = os.dup(0)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
            # SIGCHLD wakes the wait for a cell through this pipe.
            wake = os.pipe()
            for fd in wake:
                os.set_blocking(fd, False)
            signal.signal(signal.SIGCHLD, lambda signum, frame: None)
            signal.set_wakeup_fd(wake[1])
        except (OSError, ValueError) as e:
            runner_fail("cannot keep the request descriptor: %s" % e)
        in_session[0] = True
        try:
            finish(0, extra={"session": {"mode": "process"}})
        except CellEnd:
            pass
        state = {"eof": False, "pending": None}
        while not state["eof"]:
            nonce[0] = None
            got = state["pending"] or read_frame(ctl, max_control)
            state["pending"] = None
            if got[0] == "bad":
                runner_fail(got[1])
            if got[0] == "eof":
                break
            if got[0] == "interrupt":
                continue  # no cell runs: nothing to stop
            try:
                cell = take_request(got[1])
                if session_kind(cell) != "cell":
                    runner_fail("a session request that is not a cell")
                # Here, so that every later cell's fork has them.
                add_session_sets(package_sets(cell, "add_packages"))
            except CellEnd:
                continue
            del got
            done_r, done_w = os.pipe()
            ooms_before = oom_kills()
            # Python 3.12+ warns about fork when a preload started threads
            # (OpenBLAS does): not the cell's output. The child has one thread.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:
                # The cell: the one-shot code below runs its request.
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                # The interrupt must reach the cell however the runner was
                # started: one started with SIGINT ignored (a background
                # job of a non-interactive shell) keeps it ignored, and
                # Python then installs no KeyboardInterrupt of its own.
                signal.signal(signal.SIGINT, signal.default_int_handler)
                signal.signal(signal.SIGQUIT, signal.SIG_DFL)
                for fd in (ctl, done_r) + wake:
                    os.close(fd)
                try:
                    os.setpgid(0, 0)
                except OSError:
                    pass
                in_session[0] = False
                own_pid[0] = os_getpid()
                cell_done[0] = done_w
                return cell
            outputs = cell.get("outputs")
            del cell
            os.close(done_w)
            try:
                # From this side too: no moment in which the group kill could miss it.
                os.setpgid(pid, pid)
            except OSError:
                pass
            wait_cell(pid, ctl, done_r, wake[0], ooms_before, state, outputs)
        os_exit(0)

    def wait_cell(pid, ctl, done_r, wake_r, ooms_before, state, outputs):
        # Waits for a cell's child, acting on the frames that come
        # meanwhile: an interrupt for this cell (SIGINT to its group,
        # SIGKILL after int_grace), the end of the request stream (SIGKILL).
        # Then writes the cell's record: the child's, or one made from its
        # wait status when it handed none over.
        import signal
        from time import monotonic

        got, int_at, killed, interrupted, done_open = b"", None, False, False, True
        while True:
            r, st = os.waitpid(pid, os.WNOHANG)
            if r == pid:
                break
            timeout = child_nap
            if int_at is not None and not killed:
                left = int_at + int_grace - monotonic()
                if left <= 0:
                    kill_group(pid, signal.SIGKILL)
                    killed = True
                else:
                    timeout = min(timeout, left)
            fds = [wake_r] + ([done_r] if done_open else []) + ([] if state["eof"] else [ctl])
            ready = wait_readable(fds, timeout)
            if wake_r in ready:
                try:
                    while os.read(wake_r, 512):
                        pass
                except OSError:
                    pass
            if done_r in ready:
                b = os.read(done_r, 65536)
                done_open = bool(b)
                if len(got) <= max_cell_record:
                    got += b
            if ctl not in ready:
                continue
            kind, what = read_frame(ctl, max_control)
            if kind == "eof":
                state["eof"] = True
                kill_group(pid, signal.SIGKILL)
            elif kind == "interrupt":
                # Another nonce is a late interrupt of an earlier cell: ignored.
                if what == nonce[0] and int_at is None:
                    kill_group(pid, signal.SIGINT)
                    int_at = monotonic()
                    interrupted = True
            elif kind == "request" and state["pending"] is None:
                state["pending"] = (kind, what)
            else:
                # A bad frame, or more than one request while a cell runs:
                # the cell ends, and the session with it.
                kill_group(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                in_session[0] = False
                runner_fail(what if kind == "bad" else "more than one request came while a cell ran")
        # What the child left running in its group must not write after the
        # record. The group id stays reserved while any member lives, so the
        # kill cannot reach anything else.
        kill_group(pid, signal.SIGKILL)
        os.set_blocking(done_r, False)
        try:
            while len(got) <= max_cell_record:
                b = os.read(done_r, 65536)
                if not b:
                    break
                got += b
        except BlockingIOError:
            pass
        os.close(done_r)
        rec = None
        if len(got) <= max_cell_record:
            try:
                rec = loads(got.decode("utf-8", "surrogateescape"))
            except ValueError:
                pass
        if not isinstance(rec, dict) or not isinstance(rec.get("exit_code"), int):
            status = 128 + os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st) & 0xFF
            # A SIGKILL nobody here sent is the kernel's OOM killer when the
            # cgroup counted one (or, where the count cannot be read, by far
            # the likeliest); after an interrupt only a count that rose says so.
            memory_error = False
            if status == 128 + 9:
                after = oom_kills()
                rose = after is not None and ooms_before is not None and after > ooms_before
                memory_error = rose if interrupted else (rose or after is None or ooms_before is None)
            rec = {"exit_code": status, "memory_error": memory_error}
            if isinstance(outputs, dict):
                # The cell's files still come back, as a one-shot run's do
                # whatever ended it (its plots were its own).
                outputs_done[0] = None
                try:
                    send_outputs(outputs, None)
                except BaseException as exc:
                    rec["runner_error"] = "cannot return the output files: %s: %s" % (type(exc).__name__, exc)
                if outputs_done[0] is not None:
                    rec["files"] = outputs_done[0]
                outputs_done[0] = None  # the next cell's child starts from this
        if interrupted:
            rec["session"] = {"interrupted": True}
        write_record(rec)

    # The working directory (a session's cells share it).
    cwd = os.getcwd()
    warm = len(sys.argv) > 1
    if warm:
        warm_up(sys.argv[1])

    kind, body = read_frame(0, max_header)
    if kind != "request":
        runner_fail(body)
    if warm:
        # The code reached this runner: from here on a failure is the run's.
        write_all(1, go)

    req = take_request(body)
    del body
    kind = session_kind(req)
    if kind == "begin":
        req = session_main(req)
    elif kind == "cell":
        runner_fail("a session cell without a session")
    code = req.get("code")
    stdin = req.get("stdin")
    if stdin is None:
        stdin = ""
    if not isinstance(code, str) or not isinstance(stdin, str):
        runner_fail("request code/stdin must be strings")
    env = req.get("env")
    if env is None:
        env = {}
    variables = req.get("variables")
    if variables is None:
        variables = {}
    if not isinstance(variables, dict):
        runner_fail("request variables must be an object")
    files = req.get("files")
    if files is None:
        files = []
    outputs = req.get("outputs")
    if not isinstance(files, list) or not (outputs is None or isinstance(outputs, dict)):
        runner_fail("request files must be a list and outputs an object")
    if req.get("check") is True:
        # Only compile: nothing is written, bound or run.
        del req, env, variables, files
        check_syntax(code.encode("utf-8", "surrogateescape"))
    # A cell's child: its session runner added "add_packages" already.
    if cell_done[0] is None and req.get("add_packages") is not None:
        runner_fail("request add_packages outside a session cell")
    packages = package_sets(req, "packages")
    set_env(env)
    del req, env
    code = code.encode("utf-8", "surrogateescape")
    stdin = stdin.encode("utf-8", "surrogateescape")

    # ---- files: the caller's, outputs/, main.py (tracebacks, inspect,
    # multiprocessing) and stdin --------------------------------------------
    write_inputs(files)
    del files
    if outputs is not None:
        try:
            os.mkdir("outputs", 0o755)
        except FileExistsError:
            pass
        except OSError as e:
            runner_fail("cannot make outputs/: %s" % e)
    try:
        main_path = os.path.join(cwd, "main.py")
        if cell_done[0] is None:
            fd = os.open(main_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                write_all(fd, code)
            finally:
                os.close(fd)
        else:
            write_file(main_path, code, 0o644)
        # An unlinked regular file as fd 0: the program reads exactly the
        # given bytes, then EOF, through any API (sys.stdin, os.read(0),
        # /dev/stdin, child processes).
        stdin_path = os.path.join(cwd, ".mcpsbx-stdin")
        if cell_done[0] is not None:
            try:
                os.unlink(stdin_path)  # an earlier cell's, never followed
            except FileNotFoundError:
                pass
        fd = os.open(stdin_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.unlink(stdin_path)
        write_all(fd, stdin)
        os.lseek(fd, 0, os.SEEK_SET)
        os.dup2(fd, 0)
        os.close(fd)
    except OSError as e:
        runner_fail("cannot prepare the working directory: %s" % e)
    del stdin
    seed_mpl_cache()

    import builtins
    from importlib.machinery import SourceFileLoader

    # A fresh sys.stdin, built the way the interpreter builds it, so nothing
    # cached about the old pipe (seekability) survives.
    old = sys.stdin
    if old is not None:
        raw = io.FileIO(0, "rb", closefd=False)
        raw.name = "<stdin>"
        new = io.TextIOWrapper(
            io.BufferedReader(raw),
            encoding=old.encoding,
            errors=old.errors,
            newline="\n",
        )
        new.mode = "r"
        sys.stdin = sys.__stdin__ = new
        del new, raw
    del old

    # Fresh sys.stdout and sys.stderr that never drop part of a write: a
    # pipe may take only part of a large write (gVisor's take 64 KiB at a
    # time), and the interpreter's unbuffered (-u) text streams ignore what
    # was left over. Still unbuffered, so live output leaves at once.
    for fd, name in ((1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        if old is None:
            continue
        old.flush()
        raw = FullWriter(fd)
        raw.name = "<%s>" % name
        new = io.TextIOWrapper(
            raw,
            encoding=old.encoding,
            errors=old.errors,
            line_buffering=old.line_buffering,
            write_through=True,
        )
        new.mode = "w"
        setattr(sys, name, new)
        setattr(sys, "__%s__" % name, new)
        del old, new, raw

    # ---- the program's __main__ -----------------------------------------
    mod = type(sys)("__main__")
    mod.__file__ = main_path
    mod.__cached__ = None
    mod.__builtins__ = builtins
    mod.__annotations__ = {}
    mod.__loader__ = SourceFileLoader("__main__", main_path)
    # Not against sys.modules: a pooled runner has more loaded than a cold one.
    check_variable_names(variables)
    mod.__dict__.update(variables)
    del variables
    sys.modules["__main__"] = mod
    sys.argv = ["main.py"]
    if sys.path:
        sys.path[0] = cwd
    else:
        sys.path.insert(0, cwd)
    add_import_paths(packages)
    del packages

    def print_exception(exc):
        # The runner's own frames (exec, this function) are not the
        # program's: the traceback starts at the user's file as it would
        # under `python3 main.py`.
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code is own_code:
            tb = tb.tb_next
        exc.__traceback__ = tb
        sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
        hook = getattr(sys, "excepthook", None)
        try:
            if hook is None:
                raise RuntimeError("lost sys.excepthook")
            hook(type(exc), exc, tb)
        except BaseException as hook_exc:
            try:
                sys.__excepthook__(type(hook_exc), hook_exc, hook_exc.__traceback__)
                print("\nOriginal exception was:", file=sys.stderr)
                sys.__excepthook__(type(exc), exc, tb)
            except BaseException:
                pass

    # Python 3.13+ keeps the -c source in linecache as "<string>", which
    # would show runner lines for the program's own exec()'d strings.
    linecache = sys.modules.get("linecache")
    if linecache is not None:
        for key, entry in list(linecache.cache.items()):
            lines = entry[2] if len(entry) > 2 else None
            if lines and lines[0].startswith("# mcp-sandboxd in-container runner"):
                del linecache.cache[key]
    del linecache

    plots = Plots(outputs) if outputs is not None and outputs.get("plots") else None
    if plots is not None:
        plots.install()
    # Two descriptors kept back for returning the files (a directory being
    # listed, a file or module being read): a program that used up every
    # descriptor still gets its files back. Not inherited by children.
    spare = []
    if outputs is not None:
        try:
            spare = [os.open(os.devnull, os.O_RDONLY) for _ in range(2)]
        except OSError:
            pass

    status = 0
    memory_error = False
    try:
        # Compiling the bytes (not a str) honours coding cookies and reports
        # bad encodings exactly as running the file would.
        exec(compile(code, main_path, "exec", dont_inherit=True), mod.__dict__)
    except SystemExit as exc:
        status = exit_status(exc)
    except BaseException as exc:
        memory_error = isinstance(exc, MemoryError)
        status = 130 if isinstance(exc, KeyboardInterrupt) else 1
        try:
            print_exception(exc)
        except BaseException:
            pass
    del code

    # ---- interpreter shutdown, in Py_FinalizeEx's order -----------------
    # Non-daemon threads first (this also runs threading._register_atexit
    # callbacks such as concurrent.futures'), then atexit, then flushing.
    threading = sys.modules.get("threading")
    if threading is not None:
        shutdown = getattr(threading, "_shutdown", None)
        try:
            if shutdown is not None:
                shutdown()
            else:
                for t in threading.enumerate():
                    if not t.daemon and t is not threading.current_thread():
                        t.join()
        except SystemExit:
            pass
        except BaseException as exc:
            print_exception(exc)
    # Before atexit: pyplot's handler destroys every figure.
    if plots is not None:
        plots.capture_open(False)
    try:
        import atexit

        atexit._run_exitfuncs()
    except BaseException:
        pass

    for name in ("stdout", "stderr"):
        f = getattr(sys, name, None)
        try:
            if f is not None and not getattr(f, "closed", False):
                f.flush()
        except BaseException as exc:
            # As the interpreter does: report, and exit 120 for stdout.
            if name == "stdout":
                status = 120
            msg = "Exception ignored in: %r\n%s: %s\n" % (f, type(exc).__name__, exc)
            try:
                write_all(2, msg.encode("utf-8", "replace"))
            except BaseException:
                pass
    if outputs is not None:
        for fd in spare:
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            send_outputs(outputs, plots)
        except BaseException as exc:
            runner_fail("cannot return the output files: %s: %s" % (type(exc).__name__, exc))
    finish(status, memory_error)


_mcpsbx_runner()
