# mcp-sandboxd session runner for Python, "interpreter" mode (protocol:
# src/sandbox/runner/runner.h). The daemon sends this file as the begin
# request's session.source; runner.py (the one-shot runner) exec()s it when
# IPython can be found and calls interpreter_main with its own helpers, so
# one-shot runs never load it. Without IPython runner.py keeps its
# "process" mode (a fork per cell).
#
# Every cell runs in one IPython shell: variables, imports and functions
# persist. The begin record goes out at once; IPython's import (a second or
# two) runs in a thread meanwhile and the first cell waits for it.
# Threads:
# - the reader owns the request descriptor's private copy: it hands
#   requests to the main thread and turns an interrupt naming the running
#   cell into SIGINT for the main thread (pthread_kill), which Python's
#   default_int_handler makes a KeyboardInterrupt in the cell (exit 130).
#   A cell that ignores SIGINT is left alone: the daemon's grace ends it.
#   The end of the descriptor ends the runner (exit 0), a cell or not.
# - the main thread runs the cells. SIGINT is default_int_handler only
#   while a cell runs (set again for each cell, as ipykernel does) and a
#   no-op otherwise, so a late signal never lands in the runner's code.
# Output of background threads between cells goes to a buffer of at most
# held_max bytes (the rest is dropped, and a note says how much) written at
# the start of the next cell, as a notebook shows it; writes to fd 1 and 2
# that bypass sys.stdout and sys.stderr reach the idle stream, which the
# daemon reads and discards.
# Exit codes: 0, 1 (an error), 130 (KeyboardInterrupt), n for SystemExit(n)
# (caught: the session lives on). exit() or quit() ends the session: the
# record says "ended", then the runner exits.
# Files: outputs/ is listed before each cell, and only files the cell made
# or changed there come back (output_files patterns return every match).
# Request files are written beside and renamed over (runner.py). The cell
# starts in the directory the last one left (as %cd keeps it); files and
# outputs/ are always the session's working directory's.
# Package sets (runner.h): a cell's "add_packages" join sys.path for the
# rest of the session (importlib caches invalidated: the cell itself and any
# later one import them, no restart); its "packages" for that cell only,
# taken off once it ran (what it imported from them stays imported).
# Plots: the runner's Plots backend; figures still open at a cell's end are
# taken and closed (as the inline backend does), a Figure as the last
# expression or in display() is drawn once; anything else with an image/png
# representation (display(obj)) becomes a plot too.


def interpreter_main(h):
    import io
    import signal
    import threading

    os, sys = h["os"], h["sys"]
    write_all, finish, runner_fail, CellEnd = h["write_all"], h["finish"], h["runner_fail"], h["CellEnd"]
    nonce, in_session, own_pid, outputs_done = h["nonce"], h["in_session"], h["own_pid"], h["outputs_done"]
    cwd, os_exit, os_getpid, runner_exit = h["cwd"], h["os_exit"], os.getpid, h["runner_exit"]
    exit_status = h["exit_status"]
    held_max = 64 << 10  # bytes of between-cell output kept for the next cell
    ended_why = "exit() was called"

    # ---- the request descriptor and the begin record ----------------------
    try:
        ctl = os.dup(0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    except OSError as e:
        runner_fail("cannot keep the request descriptor: %s" % e)
    idle_int = lambda signum, frame: None  # noqa: E731
    signal.signal(signal.SIGINT, idle_int)
    # Inherited ignored (a background job), as process mode's cells reset it.
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    in_session[0] = True

    # ---- stdout and stderr -------------------------------------------------
    FullWriter = h["FullWriter"]  # never drops part of a write

    held = {"lock": threading.Lock(), 1: bytearray(), 2: bytearray(), "dropped": 0}

    class HeldWriter(FullWriter):
        # Between cells: into the capped buffer.
        def write(self, b):
            view = memoryview(b).cast("B")
            with held["lock"]:
                room = held_max - len(held[1]) - len(held[2])
                take = max(0, min(room, len(view)))
                held[self._fd] += view[:take]
                held["dropped"] += len(view) - take
            return len(view)

    def text_stream(raw, old, name):
        raw.name = "<%s>" % name
        enc = getattr(old, "encoding", None) or "utf-8"
        errors = getattr(old, "errors", None) or "strict"
        s = io.TextIOWrapper(raw, encoding=enc, errors=errors, line_buffering=False, write_through=True)
        s.mode = "w"
        return s

    real = {}
    idle = {}
    for fd, name in ((1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        try:
            old.flush()
        except Exception:
            pass
        real[name] = text_stream(FullWriter(fd), old, name)
        idle[name] = text_stream(HeldWriter(fd), old, name)
        setattr(sys, "__%s__" % name, real[name])

    def streams(which):
        for name in ("stdout", "stderr"):
            setattr(sys, name, which[name])

    def release_held(show):
        with held["lock"]:
            out, err, dropped = bytes(held[1]), bytes(held[2]), held["dropped"]
            held[1], held[2], held["dropped"] = bytearray(), bytearray(), 0
        if not show:
            return
        if out:
            write_all(1, out)
        if err:
            write_all(2, err)
        if dropped:
            note = "[%d bytes of output written between cells were dropped]\n" % dropped
            write_all(2, note.encode())

    streams(idle)

    # ---- IPython, imported in the background --------------------------------
    os.environ.setdefault("IPYTHONDIR", "/tmp/.ipython")
    ipy = {"done": threading.Event(), "error": None, "shell": None}

    def import_ipython():
        try:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import IPython.core.interactiveshell  # noqa: F401
                import IPython.core.displayhook  # noqa: F401
                import IPython.core.displaypub  # noqa: F401
        except BaseException as e:
            ipy["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
        finally:
            ipy["done"].set()

    threading.Thread(target=import_ipython, name="mcpsbx-ipython", daemon=True).start()

    try:
        finish(0, extra={"session": {"mode": "interpreter"}})
    except CellEnd:
        pass

    # ---- the reader -----------------------------------------------------
    # st: busy = the nonce of the cell the main thread took and has not
    # answered yet; active = its code runs (SIGINT allowed); asked = an
    # interrupt for it came. The main thread writes every record holding
    # lock with busy cleared first, so the reader's own record (a protocol
    # error during a cell) can never follow the cell's.
    lock = threading.RLock()
    ready = threading.Condition(lock)
    st = {"busy": None, "active": False, "asked": False}
    work = []
    main_ident = threading.get_ident()

    def reader():
        while True:
            kind, what = h["read_frame"](ctl, h["max_control"])
            with lock:
                if kind == "interrupt":
                    # Another nonce is a late interrupt of an earlier cell.
                    if what == st["busy"] and not st["asked"]:
                        st["asked"] = True
                        if st["active"]:
                            signal.pthread_kill(main_ident, signal.SIGINT)
                    continue
                if kind == "eof" and st["busy"] is not None:
                    os_exit(0)
                if st["busy"] is not None and (kind == "bad" or work):
                    # A bad frame, or more than one request while a cell
                    # runs: the cell ends, and the session with it.
                    why = what if kind == "bad" else "more than one request came while a cell ran"
                    try:
                        finish(runner_exit, runner_error=why)
                    except CellEnd:
                        pass
                    os_exit(76)
                work.append((kind, what))
                ready.notify()
                if kind != "request":
                    return

    threading.Thread(target=reader, name="mcpsbx-reader", daemon=True).start()

    # ---- the shell --------------------------------------------------------
    cell = {"plots": None, "shown": set(), "sets": []}
    plots = h["Plots"]({})
    h["seed_mpl_cache"]()
    plots.install()

    def add_png(data):
        p = cell["plots"]
        name = "plot-%d.png" % (len(p.images) + len(p.left) + 1)
        if len(p.images) >= p.max_count:
            p.left.append((name, "over the plot count limit", None))
        elif len(data) > p.max_bytes:
            p.left.append((name, "over the plot size limit", len(data)))
        else:
            p.images.append((name, bytes(data)))

    def show(data):
        # What a notebook would show of a display: the image, else the text.
        png = data.get("image/png")
        if isinstance(png, str):
            from binascii import a2b_base64

            try:
                png = a2b_base64(png)
            except ValueError:
                png = None
        if isinstance(png, (bytes, bytearray)) and cell["plots"] is not None:
            add_png(png)
            return
        text = data.get("text/plain")
        if isinstance(text, str):
            print(text, file=sys.stdout)

    def figure_png(fig):
        if cell["plots"] is None:
            return None
        b = io.BytesIO()
        fig.savefig(b, format="png")
        cell["shown"].add(id(fig))
        return b.getvalue()

    def make_shell():
        from IPython.core.displayhook import DisplayHook
        from IPython.core.displaypub import DisplayPublisher
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets import Type
        from traitlets.config import Config

        class Hook(DisplayHook):
            # No "Out[n]:" prompt; the value as show() has it.
            def write_output_prompt(self):
                pass

            def write_format_data(self, format_dict, md_dict=None):
                show(format_dict)

        class Pub(DisplayPublisher):
            def publish(self, data, metadata=None, source=None, **kwargs):
                show(data)

            def clear_output(self, wait=False):
                pass

        # A subclass: the hook classes set through Config, or swapped after
        # construction, leave IPython's own prompt in place.
        class Shell(InteractiveShell):
            displayhook_class = Type(Hook)
            display_pub_class = Type(Pub)

            def ask_exit(self):
                # exit() and quit() (the terminal shell's; this one has none).
                self.exit_now = True

            def _showtraceback(self, etype, evalue, stb):
                sys.stderr.write(self.InteractiveTB.stb2text(stb) + "\n")

            def showtraceback(self, exc_tuple=None, *args, **kwargs):
                # SystemExit is the cell's exit status, not an error to show.
                etype = (exc_tuple or sys.exc_info())[0]
                if isinstance(etype, type) and issubclass(etype, SystemExit):
                    return
                return super().showtraceback(exc_tuple, *args, **kwargs)

        import warnings

        warnings.filterwarnings("ignore", message="To exit: use 'exit', 'quit', or Ctrl-D.")
        c = Config()
        c.HistoryManager.enabled = False
        c.InteractiveShell.colors = "NoColor"
        c.InteractiveShell.autocall = 0
        sh = Shell.instance(config=c)
        sh.system = sh.system_raw  # !cmd: a plain subprocess, no pty
        fmt = sh.display_formatter.formatters["image/png"]
        fmt.for_type_by_name("matplotlib.figure", "Figure", figure_png)
        sys.argv = [""]
        if sys.path:
            sys.path[0] = cwd
        else:
            sys.path.insert(0, cwd)
        return sh

    def shell():
        # The first cell waits for the import; None if IPython failed.
        if ipy["shell"] is None and ipy["error"] is None:
            ipy["done"].wait()
            if ipy["error"] is None:
                try:
                    ipy["shell"] = make_shell()
                except BaseException as e:
                    ipy["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
            release_held(False)  # the import's own noise, not a cell's
        return ipy["shell"]

    # ---- one cell -----------------------------------------------------------
    def snapshot():
        # outputs/: (device, inode, size, mtime) of each file, no link followed.
        snap, seen, dirs = {}, 0, ["outputs"]
        if not os.path.isdir("outputs") or os.path.islink("outputs"):
            return snap
        while dirs and seen < h["walk_limit"]:
            d = dirs.pop()
            try:
                with os.scandir(d) as it:
                    for e in it:
                        seen += 1
                        rel = d + "/" + e.name
                        if e.is_dir(follow_symlinks=False):
                            dirs.append(rel)
                            continue
                        s = e.stat(follow_symlinks=False)
                        snap[rel] = (s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns)
            except OSError:
                pass
        return snap

    def set_stdin(data):
        # The cell's stdin file as fd 0 (unlinked), and a fresh sys.stdin.
        path = os.path.join(cwd, ".mcpsbx-stdin")
        try:
            os.unlink(path)  # an earlier one, never followed
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.unlink(path)
        write_all(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
        os.dup2(fd, 0)
        os.close(fd)
        old = sys.stdin
        raw = io.FileIO(0, "rb", closefd=False)
        raw.name = "<stdin>"
        enc = getattr(old, "encoding", None) or "utf-8"
        errors = getattr(old, "errors", None) or "strict"
        new = io.TextIOWrapper(io.BufferedReader(raw), encoding=enc, errors=errors, newline="\n")
        new.mode = "r"
        sys.stdin = sys.__stdin__ = new

    def bind(sh, variables):
        # The shell's own names count as built in.
        h["check_variable_names"](variables, sh.user_ns_hidden)
        sh.user_ns.update(variables)

    def prepare(req):
        # Everything before the code runs; (shell, code, outputs spec) or a
        # record already written (CellEnd).
        code, stdin = req.get("code"), req.get("stdin")
        stdin = "" if stdin is None else stdin
        if not isinstance(code, str) or not isinstance(stdin, str):
            runner_fail("request code/stdin must be strings")
        env = req.get("env")
        variables = req.get("variables")
        variables = {} if variables is None else variables
        if not isinstance(variables, dict):
            runner_fail("request variables must be an object")
        files = req.get("files")
        files = [] if files is None else files
        outputs = req.get("outputs")
        if not isinstance(files, list) or not (outputs is None or isinstance(outputs, dict)):
            runner_fail("request files must be a list and outputs an object")
        sh = shell()
        if sh is None:
            finish(
                runner_exit,
                runner_error="IPython could not be loaded: %s" % ipy["error"],
                extra={"session": {"ended": "IPython could not be loaded"}},
            )
        if req.get("check") is True:
            from ast import PyCF_ALLOW_TOP_LEVEL_AWAIT

            try:
                src = sh.transform_cell(code)
            except Exception:
                src = code
            h["check_syntax"](src, "<cell>", PyCF_ALLOW_TOP_LEVEL_AWAIT)
        # Checked before anything is written, once the shell is made
        # (IPython's own imports come first).
        sets = h["package_sets"](req, "packages")
        h["add_session_sets"](h["package_sets"](req, "add_packages"))
        h["set_env"]({} if env is None else env)
        try:
            os.chdir(cwd)
        except OSError as e:
            runner_fail("cannot enter the working directory: %s" % e)
        snap = snapshot() if outputs is not None else None
        h["write_inputs"](files)
        try:
            if outputs is not None and not os.path.isdir("outputs"):
                os.mkdir("outputs", 0o755)
            set_stdin(stdin.encode("utf-8", "surrogateescape"))
        except OSError as e:
            runner_fail("cannot prepare the working directory: %s" % e)
        bind(sh, variables)
        # For this cell only: taken off again once it ran (run_one).
        cell["sets"] = h["add_import_paths"](sets)
        wants = outputs is not None and outputs.get("plots")
        plots.images, plots.left = [], []
        plots.max_count = outputs.get("max_plots", 0) if wants else 0
        plots.max_bytes = outputs.get("max_plot_bytes", 0) if wants else 0
        cell["plots"] = plots if wants else None
        cell["shown"] = set()
        return sh, code, outputs, snap

    def run_code(sh, code):
        # (exit status, memory_error); SIGINT raises only in here.
        r = None
        try:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            with lock:
                st["active"] = True
                early = st["asked"]
            if early:
                raise KeyboardInterrupt
            try:
                r = sh.run_cell(code, store_history=True)
            finally:
                signal.signal(signal.SIGINT, idle_int)
                with lock:
                    st["active"] = False
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, idle_int)
            with lock:
                st["active"] = False
            return 130, False
        exc = r.error_before_exec or r.error_in_exec
        if exc is None:
            return 0, False
        if isinstance(exc, SystemExit):
            return exit_status(exc), False
        if isinstance(exc, KeyboardInterrupt):
            return 130, False
        return 1, isinstance(exc, MemoryError)

    def take_figures():
        # Figures the cell left open: taken unless already shown, then closed.
        mod = sys.modules.get("matplotlib._pylab_helpers")
        if mod is None:
            return
        try:
            for m in mod.Gcf.get_all_fig_managers():
                fig = getattr(getattr(m, "canvas", None), "figure", None)
                if fig is not None and cell["plots"] is not None and id(fig) not in cell["shown"]:
                    plots.capture(fig)
            plt = sys.modules.get("matplotlib.pyplot")
            if plt is not None:
                plt.close("all")
        except Exception:
            pass

    def run_one(req):
        with lock:
            try:
                sh, code, outputs, snap = prepare(req)
            except CellEnd:
                st["busy"] = None
                if ipy["error"] is not None:
                    os_exit(runner_exit)  # the record said "ended"
                return
        try:
            os.chdir(ipy.get("cwd", cwd))  # where the last cell left it
        except OSError:
            pass
        streams(real)
        release_held(True)
        status, memory_error = run_code(sh, code)
        if os_getpid() != own_pid[0]:
            os_exit(status)  # a fork of the cell's (os.fork() in the code)
        h["remove_import_paths"](cell["sets"])
        take_figures()
        streams(idle)
        try:
            ipy["cwd"] = os.getcwd()
        except OSError:
            ipy["cwd"] = cwd
        extra = {}
        with lock:
            if st["asked"]:
                extra["interrupted"] = True
            if sh.exit_now:
                extra["ended"] = ended_why
            st["busy"] = None
            try:
                if outputs is not None:
                    try:
                        h["send_outputs"](outputs, cell["plots"], lambda rel, s: snap.get(rel) == (
                            s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns))
                    except BaseException as e:
                        runner_fail("cannot return the output files: %s: %s" % (type(e).__name__, e))
                finish(status, memory_error, extra={"session": extra} if extra else None)
            except CellEnd:
                pass
            finally:
                try:
                    os.chdir(ipy["cwd"])
                except OSError:
                    pass
        if sh.exit_now:
            os_exit(0)

    # ---- the loop ------------------------------------------------------------
    while True:
        with lock:
            while not work:
                ready.wait()
            kind, what = work.pop(0)
            if kind == "eof":
                os_exit(0)
            nonce[0] = None
            if kind == "bad":
                runner_fail(what)  # no nonce to answer: stderr, exit 76
            try:
                req = h["take_request"](what)
                if h["session_kind"](req) != "cell":
                    runner_fail("a session request that is not a cell")
            except CellEnd:
                continue
            del what
            st["busy"], st["asked"] = nonce[0], False
            outputs_done[0] = None
        try:
            run_one(req)
        except CellEnd:
            pass
        except BaseException as e:
            # The runner's own failure: said in the cell's record; the
            # session goes on.
            with lock:
                busy, st["busy"] = st["busy"], None
                if busy is not None:
                    try:
                        finish(runner_exit, runner_error="session runner: %s: %s" % (
                            type(e).__name__, str(e)[:300]))
                    except CellEnd:
                        pass
        del req
