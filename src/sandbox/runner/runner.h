/* The in-container runner protocol, shared by src/sandbox/runner/runner.py,
 * runner.js and the generic runner runner.pl (embedded below as C strings).
 *
 * Request (daemon -> runner, on the container's stdin):
 *     "mcpsbx/1 <decimal length>\n" followed by exactly that many bytes of a
 *     JSON object {"nonce": "<32 hex>", "code": "...", "stdin": "...",
 *     "env": {"NAME": "value", ...}, "variables": {"name": <JSON>, ...}?
 *     (Python and Node only),
 *     "files": [{"path": "...", "content": "...", "encoding": "utf-8" |
 *     "base64"}]?, "outputs": {"paths": ["pattern", ...], "max_files": N,
 *     "max_file_bytes": N, "max_total_bytes": N, "plots": bool,
 *     "max_plots": N, "max_plot_bytes": N}?, "program": {...}?,
 *     "variables_file": "..."?, "variables_env": {"NAME": "value", ...}?}.
 *     "program" is for the generic runner only (languages with no runner
 *     of their own, sandbox/languages/langtable.h): {"source_file": "main.c",
 *     "compile": [argv]?, "compile_timeout_ms": N?, "typecheck": [argv]?,
 *     "typecheck_blocks": bool?, "run": [argv]}. It writes code to
 *     source_file, runs compile (output on stderr, stdin /dev/null, killed
 *     after compile_timeout_ms), then typecheck the same way (a failure
 *     only reported unless typecheck_blocks), then run with the stdin file
 *     as fd 0. Its request carries no "variables": the daemon makes them
 *     into what the program gets, so the runner never reads their JSON.
 *     "variables_file" is the variables object's compact JSON text (json-c's,
 *     numbers as the caller sent them), which the runner writes to
 *     .mcpsbx-variables.json (mode 0400) in the working directory and names
 *     in $MCPSBX_VARIABLES (an absolute path); "variables_env" has, for each
 *     member whose value is a string (as is; left out if it holds a NUL),
 *     a number (its JSON text: 1e+300, 12345678901234567890) or a boolean
 *     ("true"/"false"), that value as a string, which the runner sets in
 *     its environment after "env" (a variable wins over an env entry of
 *     its name); null, arrays and objects are in the file only. The
 *     runner checks the environment names again (an environment name,
 *     not MCPSBX_*).
 *     "packages": ["/opt/mcpsbx-packages/KEY", ...]? names package sets
 *     (runner_packages.h: at most RUNNER_MAX_PACKAGE_SETS, each checked
 *     again by the runner, which refuses the request, naming the set, when
 *     one breaks the rule or is not a directory) that the program can
 *     import for this run only (a session: for this cell only; a begin
 *     request has none). Python puts each set's directory on sys.path
 *     after the standard library and before the first site directory,
 *     where a venv's site-packages would be (so no set can replace a
 *     standard module, which is all the runner imports, or a module in
 *     the working directory; a set's .pth files are not run), and
 *     invalidates the import caches. Node and the generic runner
 *     (TypeScript's) make node_modules/ in the working directory a
 *     directory of symlinks, one per package (per @scope/name) at the top
 *     of each set's node_modules/, so that require() and import of a bare
 *     name from the program's files, and any `node` it starts there, find
 *     it; what a package requires resolves from its real place in its set.
 *     An entry already there (the caller's files, an earlier set) is kept,
 *     and the file walk leaves those links out silently. The generic
 *     runner puts a set in gem's layout (Ruby's: a specifications/
 *     directory) on GEM_PATH instead, ahead of the image's gems. (The runners'
 *     host tests move the root with MCPSBX_PACKAGES_ROOT in the runner's
 *     own environment, read before the request's env is applied.)
 *     "add_packages": [...]? (a session cell only) the same, for the rest
 *     of the session, before the cell's code runs (a cell with code "" only
 *     adds them): Python's interpreter mode adds them to the live
 *     interpreter's sys.path (the next import finds them: no restart), its
 *     process mode to the runner whose forks run the cells; Node links
 *     them into node_modules/ for good. At most RUNNER_MAX_PACKAGE_SETS
 *     per session; a set added earlier wins a name both have. A cell's
 *     own "packages" are on the path for that cell only, though what it
 *     imported from them stays loaded in an interpreter session.
 *     The generic runner reads the request with JSON::XS when the image has
 *     it, else JSON::PP; strings reach the program as the bytes sent (json-c
 *     writes non-ASCII as raw UTF-8 and \u escapes for control characters
 *     only; in a request that is UTF-8 any \u escape is its character's
 *     UTF-8, in one that is not, because a secret is not, each byte is
 *     itself).
 *     Files are written (O_EXCL, no link followed) before the program
 *     starts, and outputs/ is made; the paths were checked by the daemon
 *     (sandbox/output/workpath.h) and are checked again.
 *     The runner reads exactly that much, writes stdin to a file that
 *     becomes the program's fd 0 (so the program sees the given stdin, then
 *     EOF), sets env in its own environment (so the program and its
 *     children inherit it; the container's configuration never holds these
 *     values), binds variables (Python: globals of __main__; JavaScript:
 *     script-level const bindings of the global scope), refusing a name
 *     the live interpreter would have hidden behind it (tools/variables.h
 *     has the rule), and runs the code in-process as the main program.
 *     With "check": true it only parses the code as running it would
 *     (Python: compile(); Node: the CommonJS compile, or, for an ES
 *     module, main.mjs written and parsed by a second `node --check`),
 *     runs none of the code, and the record carries "check": {"ok": true}
 *     or {"ok": false, "message": "SyntaxError: ...", "line": N|null,
 *     "column": N|null} (1-based, message <= 500 chars). When the check
 *     itself cannot be made it fails as the runner (runner_error).
 *
 * Completion record (runner -> daemon, on stdout, once, after the program
 * finished: Python after non-daemon threads are joined, atexit handlers ran
 * and SystemExit was handled; Node when the event loop drained or on
 * process.exit/uncaught error):
 *     RUNNER_RECORD_PREFIX "<nonce>:" JSON "\n"
 *     JSON = {"exit_code": N, "memory_error": bool, "runner_error": "..."?,
 *             "files": {"sent": N, "left_out": N, "walk_stopped": N?,
 *                       "cwd_gone": true?}?,
 *             "compile_error": {"exit_code": N, "timed_out": bool}?,
 *             "typecheck_by": "warm" | "cold"?}
 * compile_error: the generic runner's compile step (or a blocking
 * typecheck) failed and the program did not run; exit_code is the
 * compiler's. typecheck_by: which checker a warm generic runner that kept
 * one used (the daemon only logs it); the generic runner also writes
 * members the daemon ignores (typecheck_error, steps_ms).
 * With outputs in the request, once the program finished the runner takes
 * the open matplotlib figures (with "plots"; each plt.show() took the ones
 * open then), the regular files under outputs/ and those the patterns
 * match, and sends them on stdout before the record as frames: lines
 * with the record's prefix whose JSON place starts with F, D, E or L
 * (sandbox/output/outfiles.h), each written at once and under 4096 bytes, so a
 * process still writing to stdout cannot split one. No symlink is
 * followed, only regular files with one link are sent, and the caps are
 * kept (files over them are named in L frames, at most 20). The scanner
 * passes such lines to its frame callback; any other line is the record,
 * which ends the stream.
 * The prefix starts with a NUL byte and carries the per-run nonce, so
 * ordinary output cannot be mistaken for it. The same record line is also
 * written on stderr, just before the stdout one: the engine copies the two
 * streams independently (their order is not kept), so only a mark on each
 * tells that both are complete. Scan each stream with its own runner_scan.
 * When Node's report of a fatal error cannot be reproduced exactly (see
 * runner.js), the runner writes no record and Node exits as usual: EOF.
 * A runner failure (bad frame, bad JSON) exits 76; the record carries
 * runner_error when the nonce was read, otherwise stderr says why.
 *
 * Warm runner (the pool): one more argument, a comma-separated list of
 * modules (a checked --python-preload / --js-preload; may be empty; the
 * generic runner takes "warm", then optionally the argv of a checker it
 * keeps ready for the typecheck, see runner_tscheck_src). The runner
 * imports them and (Python, JavaScript) rehearses a run on a program of
 * its own, since a process's first program is the slow one, its output
 * going nowhere; it writes RUNNER_READY on stdout, and only then reads the
 * request; nothing else comes before it.
 * Once it has read the whole request it writes RUNNER_GO on stdout, before
 * anything of the program: a stream that ends before RUNNER_GO is a
 * container that died before the code reached it (safe to run elsewhere).
 * Otherwise it behaves exactly as without the argument.
 *
 * Session mode (a runner kept between calls; one-shot runs never see it):
 *   Begin: a request whose JSON carries "session": {"begin": true} (code
 *     "", env as on every call; Python's also "source": the text of
 *     runner_session.py, which runner.py runs, as "interpreter" mode in
 *     one IPython shell, when the image has IPython; without it, or
 *     without IPython, it keeps "process" mode). A warm runner writes RUNNER_GO after
 *     reading it as usual. The runner keeps the env, answers with a record
 *     {"exit_code": 0, "memory_error": false, "session": {"mode": M}},
 *     M being "interpreter" (one live interpreter), "shell" (one
 *     persistent shell) or "process" (a fresh process per cell in the same
 *     working directory), and then reads further frames from a private,
 *     close-on-exec copy of its request descriptor.
 *   Cell: a request as above plus "session": {"cell": true}, a fresh nonce
 *     per cell; no RUNNER_GO. The program's stdin file is its fd 0, the
 *     working directory persists. Its record is written without the runner
 *     exiting and may add "session": {"interrupted": true} (an interrupt
 *     stopped it: exit_code 130, or 128 + the signal) or {"ended": "why"}
 *     (the runner exits right after the record).
 *   Control: "mcpsbx/1 interrupt <32 hex>\n", a header and no body (so a
 *     session runner takes headers of up to RUNNER_MAX_CONTROL bytes). It
 *     interrupts the running cell when the nonce is that cell's (SIGINT to
 *     what runs it: in "process" mode (runner.py, runner.pl) to the cell
 *     process's group, SIGKILL 500 ms later; in Node's "interpreter" mode
 *     to the runner, whose REPL stops the cell's code and stays); any other
 *     nonce, or no running cell, and it is ignored. The generic runner
 *     is in "shell" mode when the begin request's program runs the source
 *     file with bash alone: one interactive bash sources each cell's file
 *     (variables, functions and cwd persist); an interrupt is SIGINT to
 *     the shell's group and no SIGKILL (a cell that made the shell ignore
 *     SIGINT gets no record); `exit` gives the record with "ended", then
 *     the runner's exit. Node's interpreter
 *     shows the last value of a cell as its REPL does; a throw is exit
 *     code 1, an interrupt 130, and process.exit() the record with
 *     "ended", then the runner's exit.
 *   The runner ends (exit 0) at the end of its request descriptor.
 * The daemon trusts a record's "session" for those words only: the mode is
 * one of the three, interrupted a boolean, ended a short text it escapes. */
#ifndef MCPSBX_RUNNER_H
#define MCPSBX_RUNNER_H

#include <stdbool.h>

#include "base/buf.h"
#include "base/err.h"

extern const char runner_python_src[];
extern const char runner_node_src[];
extern const char runner_generic_src[];
/* The warm TypeScript checker (src/sandbox/runner/tscheck.js, a node -e
 * program given tsc's options after "--"): a warm generic runner starts
 * it before the request so a pooled run's typecheck skips loading the
 * compiler and the standard declarations (langtable.h, typecheck_warm). */
extern const char runner_tscheck_src[];
/* runner.py's "interpreter" session mode (src/sandbox/runner/runner_session.py),
 * sent as a Python begin request's session "source". */
extern const char runner_python_session_src[];

#define RUNNER_PROTOCOL          "mcpsbx/1"
#define RUNNER_RECORD_PREFIX     "\0\036mcpsbx-done:"
#define RUNNER_RECORD_PREFIX_LEN 14
#define RUNNER_NONCE_HEX_LEN     32
#define RUNNER_READY             "\0\036mcpsbx-ready\n"
#define RUNNER_READY_LEN         15
#define RUNNER_GO                "\0\036mcpsbx-go\n"
#define RUNNER_GO_LEN            12
#define RUNNER_MAX_RECORD        4096
/* A control frame's header, newline included: "mcpsbx/1 interrupt " + nonce. */
#define RUNNER_MAX_CONTROL 64
/* The most of a record's session "ended" text kept (escaped, cut). */
#define RUNNER_SESSION_ENDED_MAX 200
/* Nesting allowed in the variables: no less than a JSON-RPC message's. */
#define RUNNER_VARIABLES_DEPTH 64

/* A file written into the working directory before the program runs. */
struct runner_file {
    const char *path; /* normalized (sandbox/output/workpath.h) */
    const char *content;
    size_t content_len;
    bool base64; /* content is base64 (checked), else UTF-8 text */
};

/* What the runner returns after the program (see above). */
struct runner_outputs {
    char *const *patterns; /* output_files patterns, checked */
    size_t n_patterns;
    long long max_files, max_file_bytes, max_total_bytes;
    bool plots;
    long long max_plots, max_plot_bytes;
};

/* What the generic runner runs (argvs NULL-terminated, placeholders
 * already replaced: sandbox/languages/langtable.h). */
struct runner_program {
    const char *source_file;
    char *const *compile; /* NULL or empty: none */
    long long compile_timeout_ms;
    char *const *typecheck; /* NULL or empty: none */
    bool typecheck_blocks;
    char *const *run;
};

/* Which part of a session a request is (see above). */
enum runner_session_kind {
    RUNNER_SESSION_NONE, /* a one-shot run */
    RUNNER_SESSION_BEGIN,
    RUNNER_SESSION_CELL,
};

struct runner_request {
    const char *nonce_hex; /* RUNNER_NONCE_HEX_LEN hex digits */
    enum runner_session_kind session;
    /* A begin request's session "source" (runner_python_session_src), or
     * NULL; ignored in other requests. */
    const char *session_source;
    const char *code;
    size_t code_len;
    const char *stdin_data; /* may be NULL */
    size_t stdin_len;
    /* A JSON object (text) of values the runner binds before the program
     * runs, or NULL; the names were checked by the caller. */
    const char *variables;
    size_t variables_len;
    bool check; /* only parse the code (see above) */
    const struct runner_file *files;
    size_t n_files;
    const struct runner_outputs *outputs; /* NULL: return nothing */
    const struct runner_program *program; /* the generic runner's; else NULL */
    /* Package sets (runner_packages.h) for this run or cell only, and, in
     * a session cell only, sets added for the rest of the session. */
    char *const *packages;
    size_t n_packages;
    char *const *add_packages;
    size_t n_add_packages;
    /* Variables for the program's environment (n_env names and values). */
    char *const *env_names;
    char *const *env_values;
    size_t n_env;
};

/* Appends the framed request to out. */
int runner_encode_request(const struct runner_request *req, struct buf *out, struct err *err);

/* Appends the control frame that interrupts the session cell of nonce_hex. */
int runner_encode_interrupt(const char *nonce_hex, struct buf *out, struct err *err);

/* Fills nonce_hex (RUNNER_NONCE_HEX_LEN + 1 bytes) with a fresh random nonce. */
int runner_new_nonce(char *nonce_hex, struct err *err);

/* Scans the stdout stream for the completion record, passing through every
 * byte that is certainly program output and holding back only a possible
 * partial record prefix. */
struct runner_scan {
    char marker[RUNNER_RECORD_PREFIX_LEN + RUNNER_NONCE_HEX_LEN + 2];
    size_t marker_len;
    char held[RUNNER_RECORD_PREFIX_LEN + RUNNER_NONCE_HEX_LEN + 2];
    size_t held_len;
    size_t go_left; /* bytes of RUNNER_GO still due before any output */
    bool in_record; /* marker seen, collecting the line up to '\n' */
    bool done;      /* record complete */
    struct buf record;
    /* Lines after the marker that are not the record (file frames), or
     * NULL: then any such line is a protocol error. */
    int (*on_frame)(void *ctx, const char *line, size_t len, struct err *err);
    void *on_frame_ctx;
};

/* Returns 0 to go on, or a positive value to stop (not a failure). */
typedef int (*runner_emit_cb)(void *ctx, const char *data, size_t len);

void runner_scan_init(struct runner_scan *s, const char *nonce_hex);

/* A warm runner's stdout starts with RUNNER_GO: expect it, and drop it.
 * Until it came (runner_scan_started), the code has not reached the runner. */
void runner_scan_expect_go(struct runner_scan *s);
bool runner_scan_started(const struct runner_scan *s);

/* Feeds stdout bytes; emit gets program output in order. Bytes after the
 * record are ignored. Returns 0, emit's stop value, or -1 (err) when the
 * record is over RUNNER_MAX_RECORD. */
int runner_scan_feed(struct runner_scan *s, const char *data, size_t len, runner_emit_cb emit,
                     void *ctx, struct err *err);

/* At end of stream: emits any held bytes (they were output after all). */
int runner_scan_flush(struct runner_scan *s, runner_emit_cb emit, void *ctx);

/* A check-only request's answer: the first syntax error, if any. */
struct runner_check {
    bool present;  /* the record had one */
    bool ok;       /* no error */
    int line;      /* 1-based; 0 when the error has none */
    int column;    /* 1-based; 0 when the error has none */
    char *message; /* "SyntaxError: ..." (caller frees), or NULL when ok */
};

/* The record's account of the files it sent. */
struct runner_files {
    bool present;
    long long sent, left_out, walk_stopped;
    bool cwd_gone;
};

/* The generic runner's compile step failed: the program never ran. */
struct runner_compile_error {
    bool present;
    int exit_code; /* the compiler's */
    bool timed_out;
};

/* Which checker ran the generic runner's typecheck: informational (a log
 * line); anything but "warm" or "cold" in the record counts as none. */
enum runner_typecheck_by {
    RUNNER_TYPECHECK_NONE,
    RUNNER_TYPECHECK_WARM, /* the warm runner's checker (runner_tscheck_src) */
    RUNNER_TYPECHECK_COLD, /* the typecheck command, though a checker was kept */
};

/* How a session runner keeps state (the begin record's mode). */
enum runner_session_mode {
    RUNNER_SESSION_MODE_NONE, /* not said */
    RUNNER_SESSION_MODE_INTERPRETER,
    RUNNER_SESSION_MODE_SHELL,
    RUNNER_SESSION_MODE_PROCESS,
};

/* A record's "session": what the runner said about its session. */
struct runner_session_done {
    bool present;
    enum runner_session_mode mode;
    bool interrupted; /* an interrupt stopped the cell */
    bool ended;       /* the runner exits after this record */
    /* Why it ended, escaped (util_escape) and cut; "" when not said. */
    char ended_why[RUNNER_SESSION_ENDED_MAX + 1];
};

struct runner_done {
    int exit_code;
    struct runner_compile_error compile_error;
    enum runner_typecheck_by typecheck_by;
    struct runner_files files;
    bool memory_error;  /* the program died of MemoryError / heap exhaustion */
    char *runner_error; /* the runner itself failed (caller frees), or NULL */
    struct runner_check check;
    struct runner_session_done session;
};

/* Parses the completed record. Only valid when s->done. Free what it
 * holds with runner_done_free, whatever it returned. */
int runner_scan_result(const struct runner_scan *s, struct runner_done *out, struct err *err);
void runner_done_free(struct runner_done *d);

void runner_scan_free(struct runner_scan *s);

#endif
