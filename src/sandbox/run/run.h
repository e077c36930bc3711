/* One run request, from the call that asked for it to the runner's framed
 * request: made once where the call is admitted (tools/tools.c), passed
 * down unchanged (exec_run, then the runner encoding) and freed in one
 * place (run_free). It holds no json-c object, so it may go to another
 * thread: the code, stdin, variables and files are copies.
 *
 * What it owns: text (the copy code and stdin_data point into), variables,
 * files (and what they point into, file_data), the output patterns, the
 * egress list, the packages and the cancel handle. A run made on the stack with
 * borrowed strings (a probe, a test) owns nothing and needs no run_free. */
#ifndef MCPSBX_RUN_H
#define MCPSBX_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "egress/pattern.h"
#include "sandbox/languages/langtable.h"
#include "sandbox/packages/reqs.h"
#include "sandbox/runner/runner.h"

/* A cancel handle (sandbox/run/exec.h). */
struct exec_cancel;

/* Live output: called from the running thread for each chunk, in order
 * (stream 1 = stdout, 2 = stderr), and with stream EXEC_TICK and no data
 * every EXEC_TICK_MS while the program is quiet. */
typedef void (*exec_output_cb)(void *ctx, int stream, const char *data, size_t len);

#define EXEC_STDOUT  1
#define EXEC_STDERR  2
#define EXEC_TICK    (-1)
#define EXEC_TICK_MS 50

/* An install run's own (sandbox/run/packages_run.h), borrowed: the
 * installer's image and environment, the staging directory bound
 * writable (backend_spec.install_dir), the working directory's size and
 * the processes it may have. */
struct run_install {
    const char *image;
    const char *const *env;
    const char *dir;
    long long workdir_mb;
    long long pids_limit;
    int pool; /* the pool's profile of ready installers for it, or -1 */
    /* Set by the run when it took a ready installer: the directory that
     * was its target instead of dir, now the caller's. NULL otherwise. */
    char *taken_dir;
};

/* A traceparent (55 characters) and a tracestate (512 at most), each
 * with its NUL. */
#define RUN_TRACEPARENT_CAP 56
#define RUN_TRACESTATE_CAP  513

struct run {
    const struct langtable_lang *language; /* borrowed from the table */
    const char *code;
    size_t code_len;
    const char *stdin_data; /* may be NULL */
    size_t stdin_len;
    /* A JSON object (compact text) of names checked by the caller
     * (tools/variables.h), or NULL: bound before the program runs
     * (sandbox/runner/runner.h). */
    char *variables;
    size_t variables_len;
    /* Only parse the code (sandbox/runner/runner.h): the answer is res->check. */
    bool check_only;
    /* A failed typecheck step (sandbox/languages/langtable.h) stops the run as a
     * compile error instead of only showing on stderr. */
    bool typecheck_blocks;
    /* A generic language's version command instead of the code (the
     * table's "version"; tools/languages.c reads its output). */
    bool version_probe;
    /* Files written into the working directory first (paths checked). */
    struct runner_file *files;
    size_t n_files;
    char **file_data; /* what files[] points into */
    size_t n_file_data;
    char **patterns; /* output_files patterns, checked; outputs.patterns */
    size_t n_patterns;
    /* What comes back after the program (res->files), when returns: the
     * patterns and the operator's caps, decided at admission. */
    bool returns;
    struct runner_outputs outputs;
    /* The hosts the run may reach through the egress gateway: a copy of
     * its language's list, narrowed by the call's egress argument, decided
     * at admission (tools/egress_arg.h). NULL: no egress at all (the
     * language has none, or the call narrowed it to nothing); never an
     * empty list. */
    struct egress_patterns *egress;
    /* The packages the call asked for, parsed and checked against its
     * language's rules at admission (tools/packages_arg.h); NULL: none.
     * Made ready (the cache, or an install in a sandbox of its own)
     * before the run's sandbox is taken, and on its import path for this
     * run only; with packages_stay (a session call: install_packages),
     * for the rest of the session. */
    struct reqs_list *packages;
    bool packages_stay;
    /* Set for an install run alone (never by a call); NULL otherwise. */
    struct run_install *install;
    long long timeout_ms; /* already clamped */
    long long memory_mb;  /* already clamped */
    /* util_now_ms() time by which the program must have started: engine
     * requests before that are cut short there (0 = the engine timeouts). */
    double start_by_ms;
    /* W3C trace context of the request that made the run ("" for none),
     * checked by the caller: the program gets them as TRACEPARENT and
     * TRACESTATE (never an install). */
    char traceparent[RUN_TRACEPARENT_CAP];
    char tracestate[RUN_TRACESTATE_CAP];
    struct exec_cancel *cancel; /* may be NULL */
    exec_output_cb on_output;   /* may be NULL; set before the run starts */
    void *on_output_ctx;
    char *text; /* the copy code and stdin_data point into, or NULL */
};

/* All empty: no limits, no language, nothing owned. */
void run_init(struct run *r);

/* Frees what r owns and empties it. */
void run_free(struct run *r);

/* Frees the files in and the output patterns only (a files argument that
 * failed its checks). */
void run_files_free(struct run *r);

/* What the runner returns after the program, or NULL: nothing. */
static inline const struct runner_outputs *run_outputs(const struct run *r)
{
    return r->returns ? &r->outputs : NULL;
}

#endif
