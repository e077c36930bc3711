#include "sandbox/exec.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>

#include "base/codec.h"
#include "base/log.h"
#include "sandbox/launch.h"
#include "sandbox/policy.h"
#include "sandbox/pool.h"
#include "sandbox/reaper.h"
#include "sandbox/redact.h"
#include "sandbox/runner.h"
#include "sandbox/uids.h"

_Static_assert(EXEC_STDOUT == BACKEND_STDOUT && EXEC_STDERR == BACKEND_STDERR,
               "exec stream numbers are the backend's");

/* Waits for the engine to report the exit after the stream ended. */
#define WAIT_AFTER_EOF_MS 10000
#define SEND_TIMEOUT_MS   30000
/* Without a deadline from the caller, how long create, connecting and start may
 * take at most (the engine's own request timeouts). */
#define ENGINE_SETUP_MAX_MS 60000
/* A request cut to the call's deadline may fail this much before it. */
#define SETUP_DEADLINE_SLACK_MS 50.0
/* A container's expiry label: its run's deadlines plus this margin, after
 * which any daemon may remove it. */
#define EXPIRY_MARGIN_S 60
/* A container whose program ended by itself is removed this long after the
 * run (reaper_remove_after). */
#define REMOVE_GRACE_MS 25
/* What a result or a log line shows of the sandbox's words at most: the
 * runner's error (the runners write at most 500 characters), a syntax
 * check's message (at most 500 characters), and a failed run's whole
 * error, which may quote either. */
#define RUNNER_ERROR_SHOWN_MAX  1024
#define CHECK_MESSAGE_SHOWN_MAX 2048
#define ERROR_SHOWN_MAX         2048

struct exec_cancel {
    int fd; /* eventfd, readable once cancelled */
    atomic_bool cancelled;
};

/* One language's commands: on demand, and for the pool with and without
 * its preloads (lean NULL: none to leave out). Arrays of borrowed strings. */
struct lang_cmds {
    const char **cmd;
    const char **warm;
    const char **lean;
    const char **env; /* policy_env_new */
};

struct exec_ctx {
    const struct config *cfg;
    const struct langtable *langs;
    struct lang_cmds *cmds; /* per language, by index */
    struct backend *backend;
    char instance[RUNNER_NONCE_HEX_LEN + 1];
    struct policy_secrets secrets; /* --pass-through-env, for the requests */
    struct redactor *redactor;     /* their values in output; NULL: none */
    char *seccomp;                 /* policy_seccomp_new, for the host's kernel */
    char *seccomp_gvisor;          /* and for gVisor's */
    struct uids *uids;             /* each sandbox's own uid; NULL: all run as --sandbox-user */
    struct reaper *reaper;
    struct launcher *launcher;
    struct pool *pool; /* NULL when no language keeps a pool */
};

const char *exec_status_name(enum exec_status st)
{
    switch (st) {
    case EXEC_OK:
        return "ok";
    case EXEC_ERROR:
        return "error";
    case EXEC_TIMEOUT:
        return "timeout";
    case EXEC_OOM:
        return "oom";
    case EXEC_OUTPUT_LIMIT:
        return "output_limit";
    case EXEC_CANCELLED:
        return "cancelled";
    case EXEC_BUSY:
        return "busy";
    case EXEC_COMPILE_ERROR:
        return "compile_error";
    }
    return "error";
}

/* ---- commands ------------------------------------------------------------ */

/* The argv of lang's warm checker after the generic runner's "warm": the
 * typecheck's arguments but its first and the source file go to the
 * checker (runner.h, runner_tscheck_src). NULL-terminated; k is its length. */
static size_t checker_argv(const struct langtable_lang *lang, const char **v)
{
    size_t k = 0;
    if (lang->typecheck_warm != LANGTABLE_CHECKER_TSC || lang->typecheck.n == 0)
        return 0;
    v[k++] = "node";
    v[k++] = "-e";
    v[k++] = runner_tscheck_src;
    v[k++] = "--";
    for (size_t i = 1; i < lang->typecheck.n; i++)
        if (strcmp(lang->typecheck.v[i], lang->source_file) != 0)
            v[k++] = lang->typecheck.v[i];
    return k;
}

/* The container's command for lang: its runner, and the warm runner's
 * argument when extra is not NULL (sandbox/runner.h), followed for the
 * generic one by its checker's argv. */
static const char **lang_cmd(const struct langtable_lang *lang, const char *extra)
{
    size_t n =
        lang->runner == LANGTABLE_RUNNER_GENERIC ? 3 + 4 + lang->typecheck.n : lang->run.n + 2;
    const char **v = xcalloc(n + 2, sizeof(char *));
    size_t k = 0;
    switch (lang->runner) {
    case LANGTABLE_RUNNER_PYTHON:
    case LANGTABLE_RUNNER_NODE:
        for (size_t i = 0; i < lang->run.n; i++)
            v[k++] = lang->run.v[i];
        v[k++] = lang->runner == LANGTABLE_RUNNER_PYTHON ? "-c" : "-e";
        v[k++] = lang->runner == LANGTABLE_RUNNER_PYTHON ? runner_python_src : runner_node_src;
        break;
    case LANGTABLE_RUNNER_GENERIC:
        /* perl is the generic runner's one need of an image (containers/README.md). */
        v[k++] = "perl";
        v[k++] = "-e";
        v[k++] = runner_generic_src;
        break;
    }
    if (extra)
        v[k++] = extra;
    if (extra && lang->runner == LANGTABLE_RUNNER_GENERIC)
        k += checker_argv(lang, v + k);
    v[k] = NULL;
    return v;
}

static void cmds_free(struct lang_cmds *c, size_t n)
{
    for (size_t i = 0; c && i < n; i++) {
        free(c[i].cmd);
        free(c[i].warm);
        free(c[i].lean);
        free(c[i].env);
    }
    free(c);
}

static void cmds_init(struct exec_ctx *ctx)
{
    size_t n = langtable_count(ctx->langs);
    ctx->cmds = xcalloc(n ? n : 1, sizeof(*ctx->cmds));
    for (size_t i = 0; i < n; i++) {
        const struct langtable_lang *l = langtable_get(ctx->langs, i);
        bool generic = l->runner == LANGTABLE_RUNNER_GENERIC;
        ctx->cmds[i].cmd = lang_cmd(l, NULL);
        ctx->cmds[i].warm = lang_cmd(l, generic ? "warm" : l->preload_joined);
        ctx->cmds[i].lean = !generic && *l->preload_joined ? lang_cmd(l, "") : NULL;
        ctx->cmds[i].env = policy_env_new((const char *const *)l->environment.v);
    }
}

static bool pool_wanted(const struct langtable *langs)
{
    for (size_t i = 0; i < langtable_count(langs); i++)
        if (langtable_get(langs, i)->pool_size > 0)
            return true;
    return false;
}

/* ---- cancel handles ---------------------------------------------------- */

struct exec_cancel *exec_cancel_new(void)
{
    struct exec_cancel *c = xcalloc(1, sizeof(*c));
    c->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    atomic_init(&c->cancelled, false);
    return c;
}

void exec_cancel(struct exec_cancel *c)
{
    if (!c)
        return;
    atomic_store(&c->cancelled, true);
    if (c->fd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(c->fd, &one, sizeof(one));
        (void)w;
    }
}

bool exec_cancelled(const struct exec_cancel *c)
{
    return c && atomic_load(&c->cancelled);
}

void exec_cancel_free(struct exec_cancel *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    free(c);
}

/* ---- results ----------------------------------------------------------- */

void exec_result_init(struct exec_result *r)
{
    memset(r, 0, sizeof(*r));
    r->status = EXEC_ERROR;
    buf_init(&r->out, 0);
    buf_init(&r->err, 0);
    outfiles_init(&r->files, &(struct outfiles_caps){0}, NULL);
}

void exec_result_free(struct exec_result *r)
{
    buf_free(&r->out);
    buf_free(&r->err);
    free(r->message);
    r->message = NULL;
    free(r->check.message);
    memset(&r->check, 0, sizeof(r->check));
    outfiles_free(&r->files);
}

static int pool_start(struct exec_ctx *ctx, struct err *err);

/* A failed run's error as it is returned and logged: any part of it may
 * quote the sandbox (the runner's words, a file's name). */
static void clean_error(const struct redactor *red, struct err *err)
{
    const char *m = err_msg(err);
    char *shown = redact_text(red, m, strlen(m), ERROR_SHOWN_MAX);
    err_set(err, err->code, "%s", shown);
    free(shown);
}

static void warn_missing_env(const char *name)
{
    log_warn("--pass-through-env: %s is not set in the daemon's environment; skipped", name);
}

/* Every sandbox that can be alive at once but those being removed: the
 * runs, and the pools' waiting ones. */
static long long sandboxes_alive_max(const struct exec_ctx *ctx)
{
    long long n = ctx->cfg->max_concurrent;
    for (size_t i = 0; i < langtable_count(ctx->langs); i++)
        n += langtable_get(ctx->langs, i)->pool_size;
    return n;
}

struct exec_ctx *exec_ctx_new(const struct config *cfg, const struct langtable *langs,
                              struct backend *backend, char **envp, struct err *err)
{
    struct exec_ctx *ctx = xcalloc(1, sizeof(*ctx));
    ctx->cfg = cfg;
    ctx->langs = langs;
    ctx->backend = backend;
    cmds_init(ctx);
    if (runner_new_nonce(ctx->instance, err) < 0) {
        exec_ctx_free(ctx);
        return NULL;
    }
    policy_secrets_init(&ctx->secrets, cfg, envp, warn_missing_env);
    ctx->redactor = redactor_new((const char *const *)ctx->secrets.names,
                                 (const char *const *)ctx->secrets.values, ctx->secrets.n);
    ctx->seccomp = policy_seccomp_new(POLICY_SECCOMP_HOST, err);
    ctx->seccomp_gvisor = ctx->seccomp ? policy_seccomp_new(POLICY_SECCOMP_GVISOR, err) : NULL;
    if (!ctx->seccomp_gvisor) {
        exec_ctx_free(ctx);
        return NULL;
    }
    if (uids_configure(cfg, sandboxes_alive_max(ctx), &ctx->uids, err) < 0) {
        exec_ctx_free(ctx);
        return NULL;
    }
    long long legacy_age = cfg->max_timeout_ms / 1000 + REAPER_LEGACY_MARGIN_S;
    ctx->reaper = reaper_new(backend, ctx->instance, legacy_age, REAPER_SWEEP_MS, ctx->uids, err);
    if (ctx->reaper)
        ctx->launcher = launcher_new(backend, ctx->reaper, cfg, ctx->uids);
    if (!ctx->reaper || (pool_wanted(langs) && pool_start(ctx, err) < 0)) {
        exec_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

void exec_ctx_free(struct exec_ctx *ctx)
{
    if (!ctx)
        return;
    /* The pool hands its containers to the reaper: it goes first. */
    pool_free(ctx->pool);
    launcher_free(ctx->launcher);
    reaper_free(ctx->reaper);
    uids_free(ctx->uids);
    redactor_free(ctx->redactor);
    policy_secrets_free(&ctx->secrets);
    free(ctx->seccomp);
    free(ctx->seccomp_gvisor);
    cmds_free(ctx->cmds, langtable_count(ctx->langs));
    free(ctx);
}

const struct langtable *exec_languages(const struct exec_ctx *ctx)
{
    return ctx->langs;
}

int exec_ping(struct exec_ctx *ctx, struct err *err)
{
    return backend_ping(ctx->backend, err);
}

const char *exec_backend_address(const struct exec_ctx *ctx)
{
    return backend_address(ctx->backend);
}

/* ---- one run ------------------------------------------------------------ */

const char *exec_sandbox_io(struct exec_ctx *ctx, const struct langtable_lang *lang)
{
    struct policy_run run = {
        .runtime = langtable_runtime(lang, ctx->cfg),
        .env = ctx->cmds[lang->index].env,
        .network = langtable_network(lang, ctx->cfg),
        .workdir_exec = lang->compile.n > 0,
        .image = lang->image,
        .cmd = ctx->cmds[lang->index].cmd,
        .memory_mb = ctx->cfg->memory_mb,
        .instance = ctx->instance,
        .seccomp = ctx->seccomp,
        .seccomp_gvisor = ctx->seccomp_gvisor,
    };
    struct backend_spec spec;
    policy_spec(ctx->cfg, &run, &spec);
    return launch_io_name(ctx->launcher, &spec);
}

/* The pool's profile for req, or -1 when it must go on demand: only a run
 * with exactly the pool's limits takes a pooled sandbox, so none ever runs
 * with weaker limits than it asked for, or stronger ones it did not ask
 * for (memory is the one limit a call chooses today). */
static int pool_profile_for(const struct exec_ctx *ctx, const struct exec_request *req)
{
    if (!ctx->pool || req->memory_mb != ctx->cfg->memory_mb || req->language->pool_size <= 0)
        return -1;
    return (int)req->language->index;
}

/* Everything but the runner's extra argument and the expiry is what an
 * on-demand run of the default limits gets: one spec from the policy. */
static int pool_start(struct exec_ctx *ctx, struct err *err)
{
    const struct config *cfg = ctx->cfg;
    size_t n = langtable_count(ctx->langs);
    struct pool_profile *prof = xcalloc(n, sizeof(*prof));
    for (size_t i = 0; i < n; i++) {
        const struct langtable_lang *l = langtable_get(ctx->langs, i);
        struct policy_run run = {
            .runtime = langtable_runtime(l, cfg),
            .env = ctx->cmds[i].env,
            .network = langtable_network(l, cfg),
            .workdir_exec = l->compile.n > 0,
            .image = l->image,
            .cmd = ctx->cmds[i].warm,
            .memory_mb = cfg->memory_mb,
            .instance = ctx->instance,
            .owner = reaper_owner(ctx->reaper),
            .seccomp = ctx->seccomp,
            .seccomp_gvisor = ctx->seccomp_gvisor,
        };
        prof[i].name = l->name;
        prof[i].size = (size_t)l->pool_size;
        policy_spec(cfg, &run, &prof[i].spec);
        prof[i].spec.pool = l->name;
        prof[i].lean = prof[i].spec;
        prof[i].lean.cmd = ctx->cmds[i].lean;
    }
    struct pool_timing timing = {
        .max_age_ms = cfg->pool_max_age_ms,
        .expiry_extra_s =
            (cfg->max_timeout_ms + SEND_TIMEOUT_MS + WAIT_AFTER_EOF_MS) / 1000 + EXPIRY_MARGIN_S,
        .refill_delay_ms = cfg->pool_refill_delay_ms,
    };
    ctx->pool = pool_new(ctx->backend, ctx->reaper, ctx->launcher, prof, n, &timing, err);
    free(prof);
    return ctx->pool ? 0 : -1;
}

bool exec_pool_stats(struct exec_ctx *ctx, const struct langtable_lang *lang,
                     struct exec_pool_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!ctx->pool)
        return false;
    struct pool_stats st;
    pool_stats(ctx->pool, lang->index, &st);
    *out = (struct exec_pool_stats){
        .size = st.size,
        .ready = st.ready,
        .starting = st.starting,
        .hits = st.hits,
        .misses = st.misses,
        .replaced = st.replaced,
        .recycled = st.recycled,
        .failed = st.failed,
        .lean = st.lean,
    };
    snprintf(out->last_error, sizeof(out->last_error), "%s", st.last_error);
    return true;
}

char *exec_render_create(const struct config *cfg, struct backend *backend,
                         const struct langtable_lang *lang)
{
    struct err err = ERR_INIT;
    char *seccomp = policy_seccomp_new(POLICY_SECCOMP_HOST, &err);
    char *seccomp_gvisor = policy_seccomp_new(POLICY_SECCOMP_GVISOR, &err);
    const char **cmd = lang_cmd(lang, NULL);
    const char **env = policy_env_new((const char *const *)lang->environment.v);
    struct policy_run run = {
        .runtime = langtable_runtime(lang, cfg),
        .env = env,
        .network = langtable_network(lang, cfg),
        .workdir_exec = lang->compile.n > 0,
        .image = lang->image,
        .cmd = cmd,
        .memory_mb = cfg->memory_mb,
        .instance = "dry-run",
        .seccomp = seccomp,
        .seccomp_gvisor = seccomp_gvisor,
    };
    struct backend_spec spec;
    policy_spec(cfg, &run, &spec);
    char *text = backend_render_create(backend, &spec);
    free(cmd);
    free(env);
    free(seccomp);
    free(seccomp_gvisor);
    err_clear(&err);
    return text;
}

struct run {
    const struct exec_request *req;
    struct exec_result *res;
    struct runner_scan scan_out;
    struct runner_scan scan_err;
    const struct redactor *redactor; /* between the scans and emit */
    struct redact_pair red;          /* stdout (0) and stderr (1) */
    size_t total;
    size_t cap;
    bool limit_hit;
};

/* Returned by the output callbacks to stop reading: not a failure. */
#define STOP_OUTPUT_LIMIT 1

static int emit(struct run *r, int stream, const char *data, size_t len)
{
    size_t room = r->cap - r->total;
    size_t take = len < room ? len : room;
    struct buf *b = stream == EXEC_STDERR ? &r->res->err : &r->res->out;
    if (take) {
        take = buf_add_upto(b, data, take);
        r->total += take;
        if (r->req->on_output)
            r->req->on_output(r->req->on_output_ctx, stream, data, take);
    }
    if (take < len) {
        r->limit_hit = true;
        return STOP_OUTPUT_LIMIT;
    }
    return 0;
}

static int emit_out_redacted(void *arg, const char *data, size_t len)
{
    return emit(arg, EXEC_STDOUT, data, len);
}

static int emit_err_redacted(void *arg, const char *data, size_t len)
{
    return emit(arg, EXEC_STDERR, data, len);
}

/* Program output, from the scans: secrets out, then emit. The two
 * streams are redacted as a pair: a value split across them is found. */
static int emit_out(void *arg, const char *data, size_t len)
{
    struct run *r = arg;
    return redact_pair_feed(r->redactor, &r->red, 0, data, len, emit_out_redacted, r);
}

static int emit_err(void *arg, const char *data, size_t len)
{
    struct run *r = arg;
    return redact_pair_feed(r->redactor, &r->red, 1, data, len, emit_err_redacted, r);
}

/* The output is over: what redaction held back as a possible secret's
 * start goes out. */
static void emit_flush(struct run *r)
{
    if (!r->limit_hit)
        (void)redact_pair_flush(r->redactor, &r->red, emit_out_redacted, emit_err_redacted, r);
    redact_pair_free(&r->red);
}

static int on_frame(void *arg, const char *line, size_t len, struct err *err)
{
    struct run *r = arg;
    if (!r->req->outputs)
        return err_set(err, ERR_PROTOCOL, "the runner sent a file nobody asked for");
    if (outfiles_frame(&r->res->files, line, len, err) < 0)
        return err_wrap(err, "the sandbox's output files are malformed");
    return 0;
}

static int on_output(void *arg, int stream, const char *data, size_t len, struct err *err)
{
    struct run *r = arg;
    struct runner_scan *scan = stream == EXEC_STDERR ? &r->scan_err : &r->scan_out;
    if (scan->done)
        return 0;
    return runner_scan_feed(scan, data, len, stream == EXEC_STDERR ? emit_err : emit_out, r, err);
}

static void set_message(struct exec_result *res, const char *fmt, ...) ATTR_PRINTF(2, 3);
static void set_message(struct exec_result *res, const char *fmt, ...)
{
    free(res->message);
    va_list ap;
    va_start(ap, fmt);
    res->message = xvasprintf(fmt, ap);
    va_end(ap);
}

/* A runner that failed is the sandbox failing, not the program: an error
 * of the run, like the record being unreadable.
 *
 * The record is the program's word, not the runner's: code in the
 * runner's process (Python's, Node's) can reach its nonce and write a
 * record of its own. So every field is data about the program, never an
 * authority: the exit status and memory_error it claims only say how the
 * program ended, which the program decides anyway (sys.exit(3), raising
 * MemoryError); the files account is checked against the frames that
 * came; and its texts (runner_error, a check's message) are redacted,
 * escaped and cut like any output before they reach a result or a log. */
static int finish_from_record(struct run *r, struct err *err)
{
    struct runner_done done = {0};
    const struct runner_scan *s = r->scan_out.done ? &r->scan_out : &r->scan_err;
    if (runner_scan_result(s, &done, err) < 0)
        return err_wrap(err, "unreadable completion record from the runner");
    r->res->has_exit_code = true;
    r->res->exit_code = done.exit_code;
    if (done.typecheck_by != RUNNER_TYPECHECK_NONE)
        log_debug("%s run: typecheck by the %s", r->req->language->name,
                  done.typecheck_by == RUNNER_TYPECHECK_WARM
                      ? "warm checker"
                      : "typecheck command (the warm checker failed)");
    int rc = 0;
    if (done.runner_error) {
        char *shown = redact_text(r->redactor, done.runner_error, strlen(done.runner_error),
                                  RUNNER_ERROR_SHOWN_MAX);
        rc = err_set(err, ERR_INTERNAL, "the sandbox runner failed: %s", shown);
        free(shown);
    } else if (done.compile_error.present) {
        r->res->status = EXEC_COMPILE_ERROR;
        r->res->exit_code = done.compile_error.exit_code;
        if (done.compile_error.timed_out)
            set_message(r->res,
                        "the compile step was stopped after %lld ms; the program did not run",
                        r->req->language->compile_timeout_ms);
        else
            set_message(r->res,
                        "the compile step failed (exit code %d, its output on stderr); the program "
                        "did not run",
                        done.compile_error.exit_code);
    } else if (r->req->check_only != done.check.present) {
        rc = err_set(err, ERR_PROTOCOL, "the runner %s a syntax check",
                     done.check.present ? "answered with" : "did not answer with");
    } else if (r->req->outputs && !done.check.present && !done.files.present) {
        rc = err_set(err, ERR_PROTOCOL, "the runner did not account for the output files");
    } else if (done.files.present &&
               outfiles_finish(&r->res->files, done.files.sent, done.files.left_out,
                               done.files.walk_stopped, done.files.cwd_gone, err) < 0) {
        rc = err_wrap(err, "the sandbox's output files are malformed");
    } else if (done.check.present) {
        r->res->status = EXEC_OK;
        r->res->check = done.check;
        if (done.check.message) {
            r->res->check.message =
                redact_text(r->redactor, done.check.message, strlen(done.check.message),
                            CHECK_MESSAGE_SHOWN_MAX);
            free(done.check.message);
        }
        memset(&done.check, 0, sizeof(done.check));
    } else if (done.memory_error) {
        r->res->status = EXEC_OOM;
        set_message(r->res, "the program ran out of memory (limit %lld MiB)", r->req->memory_mb);
    } else {
        r->res->status = EXEC_OK;
    }
    runner_done_free(&done);
    return rc;
}

/* The stream ended without a completion record: the process was killed or
 * left without the runner's help (os._exit, a crash). Ask the engine. */
static int finish_from_engine(struct exec_ctx *ctx, struct run *r, const char *id, struct err *err)
{
    struct backend_state st = {0};
    if (backend_wait(ctx->backend, id, WAIT_AFTER_EOF_MS, &st, err) < 0)
        return err_wrap(err, "the program's output ended but its exit status is unknown");
    r->res->has_exit_code = true;
    r->res->exit_code = st.exit_code;
    /* SIGKILL that we did not send: on an engine whose OOMKilled flag cannot
     * be trusted, the memory limit is by far the likeliest sender. */
    bool likely_oom = st.exit_code == 137 && backend_oom_flag_reliable(ctx->backend) != 1;
    if (st.oom_killed || likely_oom) {
        r->res->status = EXEC_OOM;
        set_message(r->res, "the program was killed for using more than %lld MiB of memory",
                    r->req->memory_mb);
        return 0;
    }
    r->res->status = EXEC_OK;
    if (st.exit_code > 128 && st.exit_code < 128 + 65)
        set_message(r->res, "the program was killed by signal %d", st.exit_code - 128);
    return 0;
}

/* read_loop's answer when the stream ended before the runner had the code. */
#define READ_NOT_STARTED 1

/* How often a run makes sure the engine is still there. A run whose
 * streams come over the daemon's socket would not notice otherwise, and
 * without the engine its sandbox can be neither stopped nor removed: the
 * run ends with what it wrote and an engine error, as when the engine's
 * own stream breaks. */
#define ENGINE_CHECK_MS 1000.0

/* Returns 0 (res says how the program ended), READ_NOT_STARTED, or -1. */
static int read_loop(struct exec_ctx *ctx, struct run *r, struct backend_stream *stream,
                     const char *id, struct exec_cancel *cancel, double deadline, struct err *err)
{
    int rc = 0;
    double next_check = util_now_ms() + ENGINE_CHECK_MS;
    for (;;) {
        if (r->scan_out.done && r->scan_err.done) {
            rc = finish_from_record(r, err);
            break;
        }
        double now = util_now_ms();
        if (now >= next_check) {
            next_check = now + ENGINE_CHECK_MS;
            if (backend_gone(ctx->backend, err)) {
                runner_scan_flush(&r->scan_out, emit_out, r);
                runner_scan_flush(&r->scan_err, emit_err, r);
                rc = err_wrap(err, "the run was cut short");
                break;
            }
        }
        if (!backend_stream_pending(stream)) {
            double left = deadline - util_now_ms();
            if (left <= 0) {
                r->res->status = EXEC_TIMEOUT;
                set_message(r->res, "the program was stopped after %lld ms (timeout)",
                            r->req->timeout_ms);
                break;
            }
            struct pollfd pfd[2] = {{.fd = backend_stream_fd(stream), .events = POLLIN},
                                    {.fd = cancel ? cancel->fd : -1, .events = POLLIN}};
            /* Live output is coalesced upstream; wake it up now and then so
             * buffered output goes out while the program is quiet. */
            int wait_ms = (int)(left + 1);
            if (r->req->on_output && wait_ms > EXEC_TICK_MS)
                wait_ms = EXEC_TICK_MS;
            if (wait_ms > (int)(next_check - now) + 1)
                wait_ms = (int)(next_check - now) + 1;
            int pr = poll(pfd, 2, wait_ms);
            if (pr < 0 && errno != EINTR) {
                rc = err_set(err, ERR_IO, "poll on the sandbox's streams: %s", strerror(errno));
                break;
            }
            if (exec_cancelled(cancel)) {
                r->res->status = EXEC_CANCELLED;
                set_message(r->res, "the run was cancelled");
                break;
            }
            if (pr == 0 && r->req->on_output)
                r->req->on_output(r->req->on_output_ctx, EXEC_TICK, NULL, 0);
            if (pr <= 0)
                continue;
        }
        long n = backend_stream_read(stream, on_output, r, err);
        if (n == BACKEND_AGAIN)
            continue;
        if (r->limit_hit)
            goto limit;
        if ((n < 0 || n == 0) && !runner_scan_started(&r->scan_out)) {
            /* A pooled container that died before its runner had the
             * code: the program never ran, another container may run it. */
            rc = READ_NOT_STARTED;
            break;
        }
        if (n < 0) {
            /* Bytes held back as a possible record start were output. */
            runner_scan_flush(&r->scan_out, emit_out, r);
            runner_scan_flush(&r->scan_err, emit_err, r);
            rc = err_wrap(err, "reading the program's output");
            break;
        }
        if (n == 0) {
            runner_scan_flush(&r->scan_out, emit_out, r);
            runner_scan_flush(&r->scan_err, emit_err, r);
            if (r->limit_hit)
                goto limit;
            if (r->scan_out.done)
                rc = finish_from_record(r, err);
            else
                rc = finish_from_engine(ctx, r, id, err);
            break;
        }
        continue;
    limit:
        r->res->status = EXEC_OUTPUT_LIMIT;
        r->res->truncated = true;
        set_message(r->res, "output passed the %zu-byte limit; the program was stopped", r->cap);
        break;
    }
    return rc;
}

/* The container for req: the policy's limits, and labels that let any
 * daemon remove it once every deadline of the run is past (setup, the
 * program, the wait for its exit status). */
static void run_spec(const struct exec_ctx *ctx, const struct exec_request *req, double t0,
                     struct backend_spec *spec)
{
    double setup_ms = req->start_by_ms > 0 ? req->start_by_ms - t0 : (double)ENGINE_SETUP_MAX_MS;
    long long expires = (long long)time(NULL) + (long long)(setup_ms / 1000.0) +
                        (req->timeout_ms + SEND_TIMEOUT_MS + WAIT_AFTER_EOF_MS) / 1000 +
                        EXPIRY_MARGIN_S;
    struct policy_run run = {
        .runtime = langtable_runtime(req->language, ctx->cfg),
        .env = ctx->cmds[req->language->index].env,
        .network = langtable_network(req->language, ctx->cfg),
        .workdir_exec = req->language->compile.n > 0,
        .image = req->language->image,
        .cmd = ctx->cmds[req->language->index].cmd,
        .memory_mb = req->memory_mb,
        .instance = ctx->instance,
        .owner = reaper_owner(ctx->reaper),
        .expires = expires,
        .seccomp = ctx->seccomp,
        .seccomp_gvisor = ctx->seccomp_gvisor,
    };
    policy_spec(ctx->cfg, &run, spec);
}

/* A container made for this run (sandbox/launch.h). Returns 0, 1 when
 * cancelled before it started, or -1 with err. */
static int on_demand(struct exec_ctx *ctx, const struct exec_request *req,
                     const struct backend_spec *spec, struct exec_cancel *cancel, char **id,
                     struct backend_stream **stream, struct err *err)
{
    return launch(ctx->launcher, spec, req->start_by_ms, cancel ? cancel->fd : -1, id, stream, err);
}

/* The call's own time ran out while its sandbox was set up (a slow or
 * loaded engine, a runtime such as gVisor that boots a kernel): the
 * caller's limit, not an engine failure. */
static bool setup_timed_out(const struct exec_request *req, const struct err *err)
{
    return err->code == ERR_TIMEOUT && req->start_by_ms > 0 &&
           util_now_ms() >= req->start_by_ms - SETUP_DEADLINE_SLACK_MS;
}

/* Sends the framed request, within what is left of the start deadline. */
static int send_request(struct backend_stream *stream, const struct exec_request *req,
                        const struct buf *request, struct err *err)
{
    long send_ms = SEND_TIMEOUT_MS;
    if (req->start_by_ms > 0 && req->start_by_ms - util_now_ms() < (double)send_ms)
        send_ms = (long)(req->start_by_ms - util_now_ms()) + 1;
    if (send_ms <= 0)
        err_set(err, ERR_TIMEOUT, "the run's time limit passed while its sandbox started");
    else if (backend_stream_send(stream, request->data, request->len, send_ms, err) == 0)
        return 0;
    return err_wrap(err, "sending the code to the sandbox");
}

int exec_run(struct exec_ctx *ctx, const struct exec_request *req, struct exec_cancel *cancel,
             struct exec_result *res, struct err *err)
{
    /* res.message is err's message: there must be one. */
    struct err local = ERR_INIT;
    if (!err)
        err = &local;
    const struct config *cfg = ctx->cfg;
    double t0 = util_now_ms();
    exec_result_free(res);
    exec_result_init(res);
    buf_init(&res->out, (size_t)cfg->max_output_bytes);
    buf_init(&res->err, (size_t)cfg->max_output_bytes);

    struct backend_spec spec;
    run_spec(ctx, req, t0, &spec);
    struct run r = {
        .req = req, .res = res, .cap = (size_t)cfg->max_output_bytes, .redactor = ctx->redactor};
    char nonce[RUNNER_NONCE_HEX_LEN + 1];
    struct buf request;
    /* JSON escaping grows a byte to at most six (\u0000). */
    size_t request_max = req->code_len + req->stdin_len + req->variables_len;
    for (size_t i = 0; i < req->n_files; i++)
        request_max += req->files[i].content_len + strlen(req->files[i].path) + 64;
    for (size_t i = 0; req->outputs && i < req->outputs->n_patterns; i++)
        request_max += strlen(req->outputs->patterns[i]) + 8;
    buf_init(&request, request_max * 6 + 4096);
    struct outfiles_caps caps = {0};
    if (req->outputs) {
        caps.max_files = (size_t)req->outputs->max_files;
        caps.max_file_bytes = (size_t)req->outputs->max_file_bytes;
        caps.max_plots = req->outputs->plots ? (size_t)req->outputs->max_plots : 0;
        caps.max_plot_bytes = (size_t)req->outputs->max_plot_bytes;
        caps.max_total_bytes = (size_t)req->outputs->max_total_bytes;
    }
    outfiles_free(&res->files);
    outfiles_init(&res->files, &caps, ctx->redactor);
    struct backend_stream *stream = NULL;
    char *id = NULL;
    bool pooled = false; /* id came from the pool */
    bool sent = false;   /* the code reached the sandbox */
    int rc = -1;

    if (runner_new_nonce(nonce, err) < 0)
        goto out;
    runner_scan_init(&r.scan_out, nonce);
    runner_scan_init(&r.scan_err, nonce);
    r.scan_out.on_frame = on_frame;
    r.scan_out.on_frame_ctx = &r;
    const struct langtable_lang *lang = req->language;
    bool generic = lang->runner == LANGTABLE_RUNNER_GENERIC;
    struct runner_program program = {.source_file = lang->source_file,
                                     .compile = lang->compile.v,
                                     .compile_timeout_ms = lang->compile_timeout_ms,
                                     .typecheck = lang->typecheck.v,
                                     .typecheck_blocks = req->typecheck_blocks,
                                     .run = lang->run.v};
    if (req->version_probe)
        program = (struct runner_program){.source_file = lang->source_file, .run = lang->version.v};
    struct runner_request rreq = {.nonce_hex = nonce,
                                  .code = req->code,
                                  .code_len = req->code_len,
                                  .stdin_data = req->stdin_data,
                                  .stdin_len = req->stdin_len,
                                  .variables = req->variables,
                                  .variables_len = req->variables_len,
                                  .check = req->check_only,
                                  .files = req->files,
                                  .n_files = req->n_files,
                                  .outputs = req->check_only ? NULL : req->outputs,
                                  .program = generic ? &program : NULL,
                                  .env_names = ctx->secrets.names,
                                  .env_values = ctx->secrets.values,
                                  .n_env = ctx->secrets.n};
    if (runner_encode_request(&rreq, &request, err) < 0)
        goto out;

    /* A pooled sandbox if one fits and is healthy; one that fails before
     * the code reached it is replaced by another, once; then on demand.
     * None while the engine is gone: a sandbox it cannot stop or remove
     * is not handed out (on demand then fails at once, naming it). */
    int profile = pool_profile_for(ctx, req);
    if (profile >= 0) {
        struct err gone = ERR_INIT;
        if (backend_gone(ctx->backend, &gone))
            profile = -1;
        err_clear(&gone);
    }
    unsigned tries = 2;
    for (;;) {
        struct pool_entry e;
        pooled = profile >= 0 && pool_take(ctx->pool, (size_t)profile, &tries, &e);
        int cancelled = 0;
        if (pooled) {
            id = e.id;
            stream = e.stream;
            log_debug("took pooled container %.12s (%s)", id, req->language->name);
        } else if ((cancelled = on_demand(ctx, req, &spec, cancel, &id, &stream, err)) < 0) {
            goto out;
        }
        if (cancelled || exec_cancelled(cancel)) {
            res->status = EXEC_CANCELLED;
            set_message(res, "the run was cancelled");
            rc = 0;
            goto out;
        }
        if (pooled)
            runner_scan_expect_go(&r.scan_out);
        rc = send_request(stream, req, &request, err);
        if (rc == 0) {
            sent = true;
            double deadline = util_now_ms() + (double)req->timeout_ms;
            rc = read_loop(ctx, &r, stream, id, cancel, deadline, err);
        }
        if (!pooled || (rc != -1 && rc != READ_NOT_STARTED) ||
            (rc == -1 && runner_scan_started(&r.scan_out)))
            break;
        /* The code never reached this container's runner. */
        log_info("pooled container %.12s failed before its run began (%s); taking another", id,
                 rc < 0 ? err_msg(err) : "its stream ended");
        err_clear(err);
        e = (struct pool_entry){.id = id, .stream = stream};
        pool_entry_discard(ctx->pool, (size_t)profile, &e);
        id = NULL;
        stream = NULL;
        rc = -1;
        sent = false;
        runner_scan_free(&r.scan_out);
        runner_scan_free(&r.scan_err);
        runner_scan_init(&r.scan_out, nonce);
        runner_scan_init(&r.scan_err, nonce);
        r.scan_out.on_frame = on_frame;
        r.scan_out.on_frame_ctx = &r;
        outfiles_free(&res->files);
        outfiles_init(&res->files, &caps, ctx->redactor);
        redact_pair_free(&r.red);
        r.total = 0;
        buf_reset(&res->out);
        buf_reset(&res->err);
    }

out:
    emit_flush(&r);
    /* Files only come with a program that finished and said what it sent
     * (redacted as they came: sandbox/outfiles.h). */
    if (!(rc == 0 && r.scan_out.done &&
          (res->status == EXEC_OK || res->status == EXEC_OOM ||
           res->status == EXEC_COMPILE_ERROR))) {
        outfiles_free(&res->files);
        outfiles_init(&res->files, &caps, ctx->redactor);
    }
    if (rc < 0)
        clean_error(ctx->redactor, err);
    if (rc < 0 && !sent && setup_timed_out(req, err)) {
        res->status = EXEC_TIMEOUT;
        set_message(res,
                    "the sandbox was not ready within timeout_ms (%lld ms), which counts "
                    "waiting for a run slot and starting the sandbox; the code never ran (%s)",
                    req->timeout_ms, err_msg(err));
    } else if (rc < 0) {
        res->status = EXEC_ERROR;
        set_message(res, "%s", err_msg(err));
    }
    backend_stream_close(stream);
    if (id) {
        /* A program that ended by itself is gone with its runner: no hurry
         * to remove its container. Anything else may still be running. */
        bool ended = rc == 0 && r.scan_out.done &&
                     (res->status == EXEC_OK || res->status == EXEC_OOM ||
                      res->status == EXEC_COMPILE_ERROR);
        reaper_remove_after(ctx->reaper, id, ended ? REMOVE_GRACE_MS : 0);
        free(id);
    }
    if (pooled)
        pool_run_end(ctx->pool);
    runner_scan_free(&r.scan_out);
    runner_scan_free(&r.scan_err);
    if (request.data)
        explicit_bzero(request.data, request.len); /* it holds the secrets */
    buf_free(&request);
    err_clear(&local);
    res->duration_ms = util_now_ms() - t0;
    return rc;
}
