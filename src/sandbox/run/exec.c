#include "sandbox/run/exec.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>

#include "base/codec.h"
#include "base/log.h"
#include "sandbox/run/attempt.h"
#include "sandbox/run/commands.h"
#include "sandbox/run/egress_run.h"
#include "sandbox/run/packages_run.h"
#include "sandbox/run/exec_ctx.h"
#include "sandbox/run/follow.h"
#include "sandbox/run/launch.h"
#include "sandbox/output/output.h"
#include "sandbox/run/policy.h"
#include "sandbox/run/request.h"
#include "sandbox/pool/pool.h"
#include "sandbox/pool/reaper.h"
#include "sandbox/output/redact.h"
#include "sandbox/runner/runner.h"
#include "sandbox/pool/uids.h"
#include "sandbox/session/code_session.h"

_Static_assert(EXEC_STDOUT == BACKEND_STDOUT && EXEC_STDERR == BACKEND_STDERR,
               "exec stream numbers are the backend's");

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
/* What a result or a log line shows of a failed run's whole error at
 * most: it may quote the runner's error or a check's message
 * (sandbox/output/output.c). */
#define ERROR_SHOWN_MAX 2048

/* The names tools results carry, by status. */
static const char *const status_names[] = {
    [EXEC_OK] = "ok",
    [EXEC_ERROR] = "error",
    [EXEC_TIMEOUT] = "timeout",
    [EXEC_OOM] = "oom",
    [EXEC_OUTPUT_LIMIT] = "output_limit",
    [EXEC_CANCELLED] = "cancelled",
    [EXEC_BUSY] = "busy",
    [EXEC_COMPILE_ERROR] = "compile_error",
};
_Static_assert(ARRAY_SIZE(status_names) == EXEC_COMPILE_ERROR + 1, "a status without a name");

const char *exec_status_name(enum exec_status st)
{
    return (size_t)st < ARRAY_SIZE(status_names) ? status_names[st] : "error";
}

/* A run that failed: the status base/err.h gives its category. */
static enum exec_status failed_status(enum err_code code)
{
    const char *name = err_tool_status(code);
    for (size_t st = 0; st < ARRAY_SIZE(status_names); st++)
        if (strcmp(status_names[st], name) == 0)
            return (enum exec_status)st;
    return EXEC_ERROR;
}

static bool pool_wanted(const struct langtable *langs)
{
    for (size_t i = 0; i < langtable_count(langs); i++)
        if (langtable_get(langs, i)->pool_max > 0)
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

double exec_result_restart(struct exec_result *r)
{
    exec_result_free(r);
    exec_result_init(r);
    return util_now_ms();
}

void exec_result_free(struct exec_result *r)
{
    buf_free(&r->out);
    buf_free(&r->err);
    free(r->message);
    r->message = NULL;
    free(r->lost_reason);
    r->lost_reason = NULL;
    free(r->check.message);
    memset(&r->check, 0, sizeof(r->check));
    outfiles_free(&r->files);
    free(r->egress);
    r->egress = NULL;
    packages_report_free(r->packages);
    r->packages = NULL;
}

void exec_result_set_message(struct exec_result *r, const char *fmt, ...)
{
    free(r->message);
    va_list ap;
    va_start(ap, fmt);
    r->message = xvasprintf(fmt, ap);
    va_end(ap);
}

static int pool_start(struct exec_ctx *ctx, struct err *err);
static void policy_run_for(const struct exec_ctx *ctx, const struct langtable_lang *lang,
                           const char **cmd, const char **env, long long memory_mb,
                           struct policy_run *run);

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

static void warn_missing_secret(const char *name)
{
    log_warn("--secret: %s is not set in the daemon's environment; skipped", name);
}

/* The values redacted from output: --pass-through-env's, which the
 * sandbox holds, and --secret's, which an upstream may echo back. */
static int secrets_start(struct exec_ctx *ctx, char **envp, struct err *err)
{
    const struct config *cfg = ctx->cfg;
    policy_secrets_init(&ctx->secrets, cfg, envp, warn_missing_env);
    if (egress_secrets_new(cfg->secret.items, cfg->secret.n, envp, warn_missing_secret,
                           &ctx->egress_secrets, err) < 0)
        return -1;
    egress_run_check_secrets(ctx);
    const struct egress_secrets *t = ctx->egress_secrets;
    size_t n = ctx->secrets.n + t->n;
    const char **names = xcalloc(n + 1, sizeof(char *));
    const char **values = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < ctx->secrets.n; i++) {
        names[i] = ctx->secrets.names[i];
        values[i] = ctx->secrets.values[i];
    }
    for (size_t i = 0; i < t->n; i++) {
        names[ctx->secrets.n + i] = t->items[i].name;
        values[ctx->secrets.n + i] = t->items[i].value;
    }
    int rc = redactor_new(names, values, n, &ctx->redactor, err);
    free(names);
    free(values);
    return rc;
}

/* Every sandbox that can be alive at once but those being removed: the
 * runs, the pools' waiting ones (ready installers too: their bounds are
 * equal) up to their maximums or the total above the minimums, and the
 * code sessions' (idle ones hold theirs outside the runs' slots). */
static long long sandboxes_alive_max(const struct exec_ctx *ctx)
{
    long long mins = 0, maxs = 0;
    for (size_t i = 0; i < langtable_count(ctx->langs); i++) {
        const struct langtable_lang *l = langtable_get(ctx->langs, i);
        long long ready = l->packages ? ctx->cfg->packages_ready_installers : 0;
        mins += l->pool_size + ready;
        maxs += l->pool_max + ready;
    }
    long long pools =
        mins + ctx->cfg->pool_max_total < maxs ? mins + ctx->cfg->pool_max_total : maxs;
    return ctx->cfg->max_concurrent + ctx->cfg->max_code_sessions + pools;
}

/* Code sessions, when the operator allows any: after the pool, whose
 * labels decide whether a pooled sandbox may become one. */
static int sessions_start(struct exec_ctx *ctx, struct err *err)
{
    const struct config *cfg = ctx->cfg;
    if (cfg->max_code_sessions <= 0)
        return 0;
    struct code_sessions_limits lim = {
        .max_sessions = (int)cfg->max_code_sessions,
        .max_per_owner = (int)cfg->max_code_sessions_per_owner,
        .idle_ms = cfg->code_session_idle_ms,
        .max_age_ms = cfg->code_session_max_age_ms,
    };
    return code_sessions_start(ctx, &lim, err);
}

/* Every language with egress must be able to reach the gateway under its
 * runtime on this host, and one given the engine's network must get it:
 * one that cannot refuses to start, never runs without its gateway nor
 * with more, nor fails every call. */
static int egress_check(const struct exec_ctx *ctx, struct err *err)
{
    for (size_t i = 0; i < langtable_count(ctx->langs); i++) {
        const struct langtable_lang *lang = langtable_get(ctx->langs, i);
        bool network = langtable_network(lang, ctx->cfg);
        if (!lang->egress && !network)
            continue;
        struct policy_run run;
        policy_run_for(ctx, lang, ctx->cmds[i].cmd, ctx->cmds[i].env, ctx->cfg->memory_mb, &run);
        struct backend_spec spec;
        policy_spec(ctx->cfg, &run, &spec);
        if (backend_network_check(ctx->backend, &spec, err) < 0)
            return network ? err_wrap(err, "--allow-network names %s", lang->name)
                           : err_wrap(err, "%s has an egress allow-list (--egress)", lang->name);
    }
    return 0;
}

struct exec_ctx *exec_ctx_new(const struct config *cfg, const struct langtable *langs,
                              struct backend *backend, const struct egress_settings *egress,
                              char **envp, struct err *err)
{
    struct exec_ctx *ctx = xcalloc(1, sizeof(*ctx));
    ctx->cfg = cfg;
    ctx->langs = langs;
    ctx->backend = backend;
    if (egress) {
        ctx->egress_pins = &egress->pins;
        ctx->egress_allow = &egress->allow;
        ctx->egress_caps = egress->caps;
        ctx->egress_upstream_tls = egress->upstream_tls;
        ctx->egress_ca = egress->ca;
        if (egress->ca) {
            ctx->egress_ca_file = egress_tls_ca_path(egress->ca);
            ctx->egress_ca_bundle = egress_tls_ca_bundle_path(egress->ca);
        }
    } else {
        egress_caps_default(&ctx->egress_caps);
    }
    ctx->cmds = commands_new(langs, ctx->egress_ca != NULL);
    if (runner_new_nonce(ctx->instance, err) < 0) {
        exec_ctx_free(ctx);
        return NULL;
    }
    if (secrets_start(ctx, envp, err) < 0) {
        exec_ctx_free(ctx);
        return NULL;
    }
    if (uids_configure(cfg, sandboxes_alive_max(ctx), &ctx->uids, err) < 0) {
        exec_ctx_free(ctx);
        return NULL;
    }
    /* Before the pool: its sandboxes bind the package cache. */
    packages_start(ctx);
    long long legacy_age = cfg->max_timeout_ms / 1000 + REAPER_LEGACY_MARGIN_S;
    ctx->reaper = reaper_new(backend, ctx->instance, legacy_age, REAPER_SWEEP_MS, ctx->uids, err);
    if (ctx->reaper)
        ctx->launcher = launcher_new(backend, ctx->reaper, ctx->uids);
    if (!ctx->reaper || egress_check(ctx, err) < 0 ||
        (pool_wanted(langs) && pool_start(ctx, err) < 0) || sessions_start(ctx, err) < 0) {
        exec_ctx_free(ctx);
        return NULL;
    }
    packages_warm_start(ctx);
    return ctx;
}

void exec_ctx_free(struct exec_ctx *ctx)
{
    if (!ctx)
        return;
    /* The preinstalls run through everything below: they stop first. */
    packages_warm_stop(ctx);
    /* The code sessions hand their sandboxes to the reaper and may hold
     * pooled ones: they go first, then the pool, for the same reason. */
    code_space_free(ctx->sessions);
    pool_free(ctx->pool);
    launcher_free(ctx->launcher);
    reaper_free(ctx->reaper);
    packages_stop(ctx);
    uids_free(ctx->uids);
    redactor_free(ctx->redactor);
    policy_secrets_free(&ctx->secrets);
    egress_secrets_free(ctx->egress_secrets);
    commands_free(ctx->cmds, langtable_count(ctx->langs));
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

/* What every sandbox of lang gets from the policy, running cmd with env
 * (policy_env_new) and memory_mb; the caller adds the owner and the expiry where it has them. */
static void policy_run_for(const struct exec_ctx *ctx, const struct langtable_lang *lang,
                           const char **cmd, const char **env, long long memory_mb,
                           struct policy_run *run)
{
    *run = (struct policy_run){
        .runtime = langtable_runtime(lang, ctx->cfg),
        .env = env,
        .network = langtable_network(lang, ctx->cfg),
        .egress = lang->egress != NULL,
        .egress_ca_file = ctx->egress_ca_file,
        .egress_ca_bundle = ctx->egress_ca_bundle,
        .workdir_exec = lang->compile.n > 0,
        .packages_dir = ctx->packages ? packages_sets_dir(ctx, lang) : NULL,
        .image = lang->image,
        .cmd = cmd,
        .memory_mb = memory_mb,
        .instance = ctx->instance,
    };
}

const char *exec_sandbox_io(struct exec_ctx *ctx, const struct langtable_lang *lang)
{
    struct policy_run run;
    policy_run_for(ctx, lang, ctx->cmds[lang->index].cmd, ctx->cmds[lang->index].env,
                   ctx->cfg->memory_mb, &run);
    struct backend_spec spec;
    policy_spec(ctx->cfg, &run, &spec);
    return backend_io_name(ctx->backend, &spec);
}

/* Everything but the runner's extra argument and the expiry is what an
 * on-demand run of the default limits gets: one spec from the policy. */
static int pool_start(struct exec_ctx *ctx, struct err *err)
{
    const struct config *cfg = ctx->cfg;
    size_t n = langtable_count(ctx->langs);
    struct pool_profile *prof = xcalloc(2 * n, sizeof(*prof));
    for (size_t i = 0; i < n; i++) {
        const struct langtable_lang *l = langtable_get(ctx->langs, i);
        struct policy_run run;
        policy_run_for(ctx, l, ctx->cmds[i].warm, ctx->cmds[i].env, cfg->memory_mb, &run);
        run.owner = reaper_owner(ctx->reaper);
        prof[i].name = l->name;
        prof[i].min = (size_t)l->pool_size;
        prof[i].max = (size_t)l->pool_max;
        policy_spec(cfg, &run, &prof[i].spec);
        prof[i].spec.pool = l->name;
        prof[i].lean = prof[i].spec;
        prof[i].lean.cmd = ctx->cmds[i].lean;
    }
    /* While sessions are on, any waiting sandbox may become one: its label
     * covers a session's whole age too, and the longest install. */
    long long life_ms = cfg->max_code_sessions > 0 ? cfg->code_session_max_age_ms : 0;
    long long install_ms = packages_longest_install_ms(ctx);
    life_ms += (cfg->max_timeout_ms > install_ms ? cfg->max_timeout_ms : install_ms) +
               SEND_TIMEOUT_MS + FOLLOW_WAIT_AFTER_EOF_MS;
    /* Ready installers after the languages' profiles. */
    n += packages_pool_profiles(ctx, prof + n, n);
    ctx->pool_expiry_extra_s = life_ms / 1000 + EXPIRY_MARGIN_S;
    struct pool_timing timing = {
        .max_age_ms = cfg->pool_max_age_ms,
        .expiry_extra_s = ctx->pool_expiry_extra_s,
        .refill_delay_ms = cfg->pool_refill_delay_ms,
        .max_total = (size_t)cfg->pool_max_total,
        .idle_ms = cfg->pool_idle_ms,
    };
    ctx->pool = pool_new(ctx->backend, ctx->reaper, ctx->launcher, prof, n, &timing, err);
    free(prof);
    return ctx->pool ? 0 : -1;
}

/* Profile i's figures, false (and zeros) without a pool or i < 0. */
static bool profile_stats(struct exec_ctx *ctx, int i, struct exec_pool_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!ctx->pool || i < 0)
        return false;
    struct pool_stats st;
    pool_stats(ctx->pool, (size_t)i, &st);
    *out = (struct exec_pool_stats){
        .size = st.size,
        .min = st.min,
        .max = st.max,
        .trimmed = st.trimmed,
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
    snprintf(out->why, sizeof(out->why), "%s", st.why);
    return true;
}

bool exec_pool_stats(struct exec_ctx *ctx, const struct langtable_lang *lang,
                     struct exec_pool_stats *out)
{
    return profile_stats(ctx, (int)lang->index, out);
}

bool exec_installer_stats(struct exec_ctx *ctx, const struct langtable_lang *lang,
                          struct exec_pool_stats *out)
{
    const int *spare = ctx->packages->spare_profile;
    return profile_stats(ctx, spare ? spare[lang->index] : -1, out);
}

bool exec_pool_weights(struct exec_ctx *ctx, char *why, size_t why_max)
{
    return pool_weights(ctx->pool, why, why_max);
}

char *exec_describe_create(const struct config *cfg, struct backend *backend,
                           const struct langtable_lang *lang)
{
    struct exec_ctx dry = {.cfg = cfg, .instance = "dry-run"};
    const char **cmd = commands_on_demand(lang);
    const char **env =
        policy_env_new((const char *const *)lang->environment.v, lang->egress != NULL, false);
    struct policy_run run;
    policy_run_for(&dry, lang, cmd, env, cfg->memory_mb, &run);
    struct backend_spec spec;
    policy_spec(cfg, &run, &spec);
    char *text = backend_describe_create(backend, &spec);
    free(cmd);
    free(env);
    return text;
}

void run_spec(const struct exec_ctx *ctx, const struct run *req, double t0, long long life_ms,
              struct backend_spec *spec)
{
    double setup_ms = req->start_by_ms > 0 ? req->start_by_ms - t0 : (double)ENGINE_SETUP_MAX_MS;
    struct policy_run run;
    const struct lang_cmds *lc = &ctx->cmds[req->language->index];
    policy_run_for(ctx, req->language, lc->cmd, lc->env, req->memory_mb, &run);
    run.owner = reaper_owner(ctx->reaper);
    run.expires = (long long)time(NULL) + (long long)(setup_ms / 1000.0) +
                  (life_ms + SEND_TIMEOUT_MS + FOLLOW_WAIT_AFTER_EOF_MS) / 1000 + EXPIRY_MARGIN_S;
    policy_spec(ctx->cfg, &run, spec);
    const struct run_install *in = req->install;
    if (in) {
        /* The installer's image and its way to the index alone; the
         * staging directory its only writable host directory. */
        spec->image = in->image;
        spec->env = in->env;
        spec->egress = true;
        spec->egress_ca_file = ctx->egress_ca_file;
        spec->egress_ca_bundle = ctx->egress_ca_bundle;
        spec->packages_dir = NULL;
        spec->install_dir = in->dir;
        spec->workdir_mb = in->workdir_mb;
        spec->pids_limit = in->pids_limit;
        spec->nproc = in->pids_limit;
    }
}

/* The call's own time ran out while its sandbox was set up (a slow or
 * loaded engine, a runtime such as gVisor that boots a kernel): the
 * caller's limit, not an engine failure. */
static bool setup_timed_out(const struct run *req, const struct err *err)
{
    return err->code == ERR_TIMEOUT && req->start_by_ms > 0 &&
           util_now_ms() >= req->start_by_ms - SETUP_DEADLINE_SLACK_MS;
}

/* The run is over: the result says how (a failure's message cleaned of
 * the sandbox's secrets), and the sandbox goes. */
static void run_end(struct exec_ctx *ctx, const struct run *req, struct output *o,
                    struct sandbox *sb, int rc, bool sent, struct err *err)
{
    struct exec_result *res = o->res;
    /* A program that ended by itself and said what it sent: its files
     * count (redacted as they came: sandbox/output/outfiles.h), and its
     * container is gone with its runner, no hurry to remove it. Anything
     * else may still be running. */
    bool ended =
        rc == 0 && output_record_seen(o) &&
        (res->status == EXEC_OK || res->status == EXEC_OOM || res->status == EXEC_COMPILE_ERROR);
    output_end(o, ended);
    if (rc < 0)
        clean_error(ctx->redactor, err);
    if (rc < 0 && !sent && setup_timed_out(req, err)) {
        res->status = EXEC_TIMEOUT;
        exec_result_set_message(
            res,
            "the sandbox was not ready within timeout_ms (%lld ms), which counts "
            "waiting for a run slot and starting the sandbox; the code never ran (%s)",
            req->timeout_ms, err_msg(err));
    } else if (rc < 0) {
        res->status = failed_status(err->code);
        exec_result_set_message(res, "%s", err_msg(err));
    }
    backend_stream_close(sb->stream);
    if (sb->id) {
        reaper_remove_after(ctx->reaper, sb->id, ended ? REMOVE_GRACE_MS : 0);
        free(sb->id);
    }
    if (sb->pooled)
        pool_run_end(ctx->pool);
    if (sb->dir && req->install)
        req->install->taken_dir = sb->dir; /* the install adopts or drops it */
    else if (sb->dir)
        packages_spare_drop(ctx, sb->dir);
}

int exec_run(struct exec_ctx *ctx, const struct run *req, struct exec_result *res, struct err *err)
{
    struct exec_cancel *cancel = req->cancel;
    /* res.message is err's message: there must be one. */
    struct err local = ERR_INIT;
    if (!err)
        err = &local;
    double t0 = exec_result_restart(res);
    struct backend_spec spec;
    run_spec(ctx, req, t0, req->timeout_ms, &spec);
    char nonce[RUNNER_NONCE_HEX_LEN + 1] = "";
    int rc = runner_new_nonce(nonce, err);
    struct egress_run_secrets *secrets = NULL;
    if (rc == 0)
        rc = egress_run_secrets_for(ctx, req, &secrets, err);
    struct output o;
    output_init(&o, req, res, ctx->redactor, nonce, (size_t)ctx->cfg->max_output_bytes);
    struct buf request;
    buf_init(&request, request_cap(ctx, req, secrets));
    struct sandbox sb = {0};
    bool sent = false;
    struct packages_use pk;
    if (rc == 0)
        rc = packages_run_ready(ctx, req, &pk, res, err);
    else
        memset(&pk, 0, sizeof(pk));
    if (rc == 0)
        rc = encode_request(ctx, req, secrets, pk.dir, nonce, RUNNER_SESSION_NONE, &request, err);
    /* An install takes a ready installer (its own profile), never a
     * language's sandbox; no run takes one whose set a pooled runner's
     * preload would shadow. */
    bool may_pool = !pk.cold;
    if (rc == 0)
        rc = attempt(ctx, req, secrets, &spec, may_pool, &request, cancel, &o, &sb, &sent, err);
    run_end(ctx, req, &o, &sb, rc, sent, err);
    packages_run_done(ctx, &pk);
    egress_run_secrets_free(secrets);
    output_free(&o);
    if (request.data)
        explicit_bzero(request.data, request.len); /* it holds the secrets */
    buf_free(&request);
    err_clear(&local);
    res->duration_ms = util_now_ms() - t0;
    return rc;
}
