/* One execution: policy -> fresh container -> its streams -> run the framed
 * request -> read output until the runner's completion record, the
 * deadline, the output cap, a cancel, or the end of the stream -> result.
 * The container is removed on every path, off the request's path (the
 * reaper, which retries until the engine confirms). Concurrency is bounded
 * by the caller (mcp's admission queue), not here.
 *
 * With a pool (a language's pool_size, or --pool-size), a run whose limits
 * are the pool's takes a container that was created and started ahead
 * (pool.c) instead: same spec, same runner, only the setup is off the
 * request's path.
 *
 * The sandbox/ folder: exec.c (this), attempt.c (a sandbox taken or
 * made, the request sent, the run followed), request.c (a run's request
 * for its runner), output.c (the output pipeline:
 * scan, redact, cap, emit, and the runner's completion record),
 * commands.c (each language's container command), policy.c (what a sandbox may use, as
 * a backend-neutral spec), pool.c (warm containers, each for one run),
 * run.c (one run request, from admission to the runner's request),
 * runner.c + runner/ (the in-container runners and the framing between
 * them and exec), reaper.c (container removal with retries, and the sweep
 * for leftovers), langtable.c + languages/ (the languages as data: image,
 * runner kind, compile and run commands, pool size, network). */
#ifndef MCPSBX_EXEC_H
#define MCPSBX_EXEC_H

#include <stdbool.h>

#include "backend/backend.h"
#include "base/buf.h"
#include "base/config.h"
#include "base/err.h"
#include "egress/settings.h"
#include "egress/summary.h"
#include "sandbox/languages/langtable.h"
#include "sandbox/output/outfiles.h"
#include "sandbox/packages/report.h"
#include "sandbox/run/run.h"
#include "sandbox/runner/runner.h"

enum exec_status {
    EXEC_OK,            /* the program finished; exit_code is its status */
    EXEC_ERROR,         /* the run failed, not the program: see message (exec_run's -1) */
    EXEC_TIMEOUT,       /* killed at the deadline */
    EXEC_OOM,           /* killed for memory (or died of MemoryError) */
    EXEC_OUTPUT_LIMIT,  /* stopped when output passed the cap */
    EXEC_CANCELLED,     /* stopped because the caller cancelled */
    EXEC_BUSY,          /* never started: every run slot stayed taken */
    EXEC_COMPILE_ERROR, /* the compile step failed (exit_code is the compiler's); nothing ran */
};

const char *exec_status_name(enum exec_status st);

struct exec_ctx;

/* cfg, langs (configured: langtable_configure), backend and egress are
 * borrowed and must outlive the context; egress may be NULL: no pins, no
 * allowed CIDRs, the default caps. envp is the daemon's environment, read
 * once here for --pass-through-env. */
struct exec_ctx *exec_ctx_new(const struct config *cfg, const struct langtable *langs,
                              struct backend *backend, const struct egress_settings *egress,
                              char **envp, struct err *err);

/* The languages it runs (borrowed). */
const struct langtable *exec_languages(const struct exec_ctx *ctx);

/* Call once every run has returned: tries the pending removals once more,
 * stops the reaper, frees. */
void exec_ctx_free(struct exec_ctx *ctx);

/* Whether the backend answers (short timeout), and where it is. */
int exec_ping(struct exec_ctx *ctx, struct err *err);
const char *exec_backend_address(const struct exec_ctx *ctx);

/* "socket" or "attach": how lang's sandboxes connect their streams now,
 * as the backend says (backend_io_name). */
const char *exec_sandbox_io(struct exec_ctx *ctx, const struct langtable_lang *lang);

/* The backend's create request for a run of lang with the default limits,
 * as text (backend_describe_create; no create holds the pass-through
 * values: runs send them in their request); nothing is sent to the
 * backend. Caller frees. */
char *exec_describe_create(const struct config *cfg, struct backend *backend,
                           const struct langtable_lang *lang);

/* The warm pool of one language, at this moment (pool.h's figures). */
struct exec_pool_stats {
    size_t size, min, max, ready, starting; /* size: the target now, within [min, max] */
    unsigned long long hits, misses, replaced, recycled, failed, lean, trimmed;
    char last_error[256];
    char why[160]; /* how the target came */
};

/* False (and zeros) when the daemon keeps no pool. */
bool exec_pool_stats(struct exec_ctx *ctx, const struct langtable_lang *lang,
                     struct exec_pool_stats *out);
/* The same of lang's ready installers (packages_run.h); false (and zeros)
 * when it has none. */
bool exec_installer_stats(struct exec_ctx *ctx, const struct langtable_lang *lang,
                          struct exec_pool_stats *out);

/* Whether waiting pooled sandboxes sit at the low CPU weight (pool.h);
 * when not, why into why (why_max bytes). */
bool exec_pool_weights(struct exec_ctx *ctx, char *why, size_t why_max);

/* A cancel handle: exec_cancel() may be called from any thread, any number
 * of times, before, during or after the run. */
struct exec_cancel;
struct exec_cancel *exec_cancel_new(void);
void exec_cancel(struct exec_cancel *c);
bool exec_cancelled(const struct exec_cancel *c);
void exec_cancel_free(struct exec_cancel *c);

struct exec_result {
    enum exec_status status;
    bool has_exit_code;
    int exit_code;
    struct buf out; /* stdout, capped */
    struct buf err; /* stderr, capped */
    double duration_ms;
    bool truncated;
    char *message; /* why, for anything but a plain finish; may be NULL */
    /* A check_only request that finished (status EXEC_OK): present, with
     * ok, or the first error (1-based line/column, 0 unknown). */
    struct runner_check check;
    /* With run_outputs(run), a program that finished: the plots and files it
     * returned (text files redacted like its output), and those left out.
     * Empty for any other outcome. */
    struct outfiles files;
    /* A call in a code session (sandbox/session/code_session.h) that cost
     * the session its sandbox: why, in lost_reason (also the message). */
    bool session_lost;
    char *lost_reason;
    /* A run with egress (run.egress): the connections its sandbox made
     * through the gateway; NULL for a run without. */
    struct egress_report *egress;
    /* A run that asked for packages (run.packages): each one's version,
     * cached or installed, and what that cost; NULL for a run without. */
    struct packages_report *packages;
};

void exec_result_init(struct exec_result *r);
void exec_result_free(struct exec_result *r);
/* r emptied for a run that starts now; returns the time (util_now_ms). */
double exec_result_restart(struct exec_result *r);
/* r->message, replacing any. */
void exec_result_set_message(struct exec_result *r, const char *fmt, ...) ATTR_PRINTF(2, 3);

/* Runs one request (run borrowed: its cancel handle, may be NULL, and its
 * output sink come with it). Returns 0 with res filled for every outcome of the
 * program itself: it finished (whatever its exit status), or it was stopped
 * for time, memory, output or a cancel. Returns -1 with err whenever the
 * run failed instead: the backend failed or broke its protocol (including
 * an output stream cut short, or an exit status it cannot report), or the
 * sandbox machinery did (the runner failed, its completion record is
 * unreadable). Then res holds status EXEC_ERROR, err's message, and the
 * output received before the failure. res alone describes the run either
 * way. err may be NULL. */
int exec_run(struct exec_ctx *ctx, const struct run *run, struct exec_result *res, struct err *err);

#endif
