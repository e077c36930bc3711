/* Code sessions tied to an execution context, and their ends
 * (code_session.h): the registry's calls with the sandboxes they free. */
#include "sandbox/session/space.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "sandbox/pool/reaper.h"
#include "sandbox/run/exec.h"

/* A session call's cancel handle (the registry's cancel_call). */
static void cancel_call(void *call)
{
    exec_cancel(call);
}

static void kept_free(void *handle)
{
    struct kept *k = handle;
    /* Torn down before its session's last reference went. */
    pthread_mutex_destroy(&k->lock);
    egress_run_secrets_free(k->secrets);
    free(k);
}

int code_sessions_start(struct exec_ctx *ctx, const struct code_sessions_limits *lim,
                        struct err *err)
{
    if (ctx->sessions)
        return err_set(err, ERR_INVALID, "code sessions are on already");
    struct code_space *sp = xcalloc(1, sizeof(*sp));
    sp->ctx = ctx;
    sp->lim = *lim;
    sp->lim.cancel_call = cancel_call;
    sp->lim.free_handle = kept_free;
    if (!sp->lim.now_ms)
        sp->lim.now_ms = util_now_ms;
    sp->wake_fd = -1;
    pthread_mutex_init(&sp->lock, NULL);
    LIST_INIT(&sp->watched);
    /* A pooled sandbox's label gives it at least pool_expiry_extra_s from
     * when it is taken (exec.c's pool_start): enough for a session's whole
     * life, its last call and the margins only when the age fits. */
    long long life_s = (lim->max_age_ms + ctx->cfg->max_timeout_ms + SEND_TIMEOUT_MS) / 1000 + 1;
    sp->pool_fits = ctx->pool && life_s < ctx->pool_expiry_extra_s;
    sp->reg = code_sessions_new(&sp->lim, err);
    if (!sp->reg || watch_start(sp, err) < 0) {
        code_space_free(sp);
        return -1;
    }
    ctx->sessions = sp;
    return 0;
}

void code_space_free(struct code_space *sp)
{
    if (!sp)
        return;
    watch_stop(sp);
    if (sp->reg) {
        struct code_session_set set;
        code_sessions_end_owner(sp->reg, NULL, &set);
        space_teardown_set(sp, &set);
        /* What is left was torn down (tombstones) or is a call's, which
         * all returned: nothing holds a sandbox. */
        struct kept *k;
        while ((k = LIST_FIRST(&sp->watched)))
            space_teardown(sp, k, false);
        code_sessions_free(sp->reg);
    }
    if (sp->wake_fd >= 0)
        close(sp->wake_fd);
    pthread_mutex_destroy(&sp->lock);
    free(sp);
}

void space_teardown(struct code_space *sp, struct kept *k, bool kill)
{
    struct exec_ctx *ctx = sp->ctx;
    pthread_mutex_lock(&k->lock);
    struct sandbox sb = k->sb;
    k->sb = (struct sandbox){0};
    packages_held_release(ctx, &k->held);
    pthread_mutex_unlock(&k->lock);
    backend_stream_close(sb.stream);
    if (sb.id) {
        struct err err = ERR_INIT;
        if (kill && backend_kill(ctx->backend, sb.id, &err) < 0)
            log_warn("code session %.8s: killing its sandbox %.12s: %s", code_session_tag(k->cs),
                     sb.id, err_msg(&err));
        err_clear(&err);
        reaper_remove(ctx->reaper, sb.id);
        free(sb.id);
    }
    pthread_mutex_lock(&sp->lock);
    bool was_linked = k->linked;
    if (k->linked) {
        LIST_REMOVE(k, watched);
        sp->n_watched--;
        k->linked = false;
    }
    k->torn = true;
    pthread_mutex_unlock(&sp->lock);
    watch_wake(sp);
    if (was_linked)
        code_sessions_put(sp->reg, k->cs);
}

void space_teardown_set(struct code_space *sp, struct code_session_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        struct kept *k = code_session_handle(set->v[i]);
        if (k)
            space_teardown(sp, k, false);
    }
    code_sessions_set_put(sp->reg, set);
}

struct code_session *code_session_get(struct exec_ctx *ctx, const char *id,
                                      const struct code_session_owner *who, bool *lost)
{
    if (lost)
        *lost = false;
    if (!ctx->sessions)
        return NULL;
    return code_sessions_get(ctx->sessions->reg, id, who, lost);
}

void code_session_put(struct exec_ctx *ctx, struct code_session *cs)
{
    if (cs && ctx->sessions)
        code_sessions_put(ctx->sessions->reg, cs);
}

enum code_session_closed code_session_close(struct exec_ctx *ctx, struct code_session *cs)
{
    struct code_space *sp = ctx->sessions;
    if (!sp)
        return CODE_SESSION_GONE;
    enum code_session_closed what = code_sessions_close(sp->reg, cs);
    if (what == CODE_SESSION_CLOSED) {
        log_info("code session %.8s closed", code_session_tag(cs));
        space_teardown(sp, code_session_handle(cs), false);
    }
    return what;
}

void code_session_limits(const struct code_session *cs, long long *timeout_ms, long long *memory_mb)
{
    const struct kept *k = code_session_handle(cs);
    *timeout_ms = k ? k->timeout_ms : 0;
    *memory_mb = k ? k->memory_mb : 0;
}

size_t code_session_list(struct exec_ctx *ctx, const struct code_session_owner *who,
                         struct code_session_info **out)
{
    *out = NULL;
    return ctx->sessions ? code_sessions_list(ctx->sessions->reg, who, out) : 0;
}

void code_session_info(struct exec_ctx *ctx, const struct code_session *cs,
                       struct code_session_info *out)
{
    if (ctx->sessions)
        code_sessions_info(ctx->sessions->reg, cs, out);
    else
        memset(out, 0, sizeof(*out));
}

size_t code_session_end_owner(struct exec_ctx *ctx, const struct code_session_owner *who)
{
    struct code_space *sp = ctx->sessions;
    if (!sp)
        return 0;
    struct code_session_set set;
    size_t n = code_sessions_end_owner(sp->reg, who, &set);
    space_teardown_set(sp, &set);
    return n;
}

struct code_sessions_counts code_session_counts(struct exec_ctx *ctx,
                                                const struct code_session_owner *who)
{
    if (!ctx->sessions)
        return (struct code_sessions_counts){0};
    return code_sessions_counts(ctx->sessions->reg, who);
}
