/* A sandbox acquired and its run followed (attempt.h): the pool's part
 * of a run, and its retry when a warm sandbox died before the code. */
#include "sandbox/run/attempt.h"

#include "base/log.h"
#include "sandbox/run/egress_run.h"
#include "sandbox/run/exec.h"
#include "sandbox/run/follow.h"

int send_request(struct backend_stream *stream, const struct run *req, const struct buf *request,
                 struct err *err)
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

/* The pool's profile for req, or -1 when it must go on demand: only a run
 * with exactly the pool's limits takes a pooled sandbox, so none ever runs
 * with weaker limits than it asked for, or stronger ones it did not ask
 * for (memory is the one limit a call chooses today). None while the
 * engine is gone: a sandbox it cannot stop or remove is not handed out
 * (on demand then fails at once, naming it). */
static int pool_profile_for(const struct exec_ctx *ctx, const struct run *req)
{
    int profile = req->install ? req->install->pool : (int)req->language->index;
    if (!ctx->pool || profile < 0 ||
        (!req->install && (req->memory_mb != ctx->cfg->memory_mb || req->language->pool_max <= 0)))
        return -1;
    struct err gone = ERR_INIT;
    bool is_gone = backend_gone(ctx->backend, &gone);
    err_clear(&gone);
    return is_gone ? -1 : profile;
}

/* A healthy pooled sandbox if one fits, else one made for this run
 * (sandbox/run/launch.h). Returns 0, 1 when cancelled before it started, or
 * -1 with err. */
static int acquire(struct exec_ctx *ctx, const struct run *req, int profile, unsigned *tries,
                   const struct backend_spec *spec, struct exec_cancel *cancel, struct sandbox *sb,
                   struct err *err)
{
    struct pool_entry e;
    sb->pooled = profile >= 0 && pool_take(ctx->pool, (size_t)profile, tries, &e);
    if (!sb->pooled)
        return launch(ctx->launcher, spec, req->start_by_ms, cancel ? cancel->fd : -1, &sb->id,
                      &sb->stream, err);
    sb->id = e.id;
    sb->stream = e.stream;
    sb->dir = e.dir;
    log_debug("took pooled container %.12s (%s)", sb->id, req->language->name);
    return 0;
}

/* Whether sb was a pooled sandbox that failed before its runner had the
 * code: then it is discarded and the run starts over on another. */
static bool discard_unstarted(struct exec_ctx *ctx, int profile, struct sandbox *sb,
                              struct output *o, int rc, struct err *err)
{
    if (!sb->pooled || (rc != -1 && rc != FOLLOW_NOT_STARTED) || (rc == -1 && output_started(o)))
        return false;
    log_info("pooled container %.12s failed before its run began (%s); taking another", sb->id,
             rc < 0 ? err_msg(err) : "its stream ended");
    err_clear(err);
    struct pool_entry e = {.id = sb->id, .stream = sb->stream, .dir = sb->dir};
    pool_entry_discard(ctx->pool, (size_t)profile, &e);
    *sb = (struct sandbox){0};
    output_reset(o);
    return true;
}

int attempt(struct exec_ctx *ctx, const struct run *req, const struct egress_run_secrets *secrets,
            const struct backend_spec *spec, bool may_pool, const struct buf *request,
            struct exec_cancel *cancel, struct output *o, struct sandbox *sb, bool *sent,
            struct err *err)
{
    int profile = may_pool ? pool_profile_for(ctx, req) : -1;
    unsigned tries = 2;
    for (;;) {
        int rc = acquire(ctx, req, profile, &tries, spec, cancel, sb, err);
        if (rc < 0)
            return -1;
        if (rc > 0 || exec_cancelled(cancel)) {
            o->res->status = EXEC_CANCELLED;
            exec_result_set_message(o->res, "the run was cancelled");
            return 0;
        }
        if (sb->pooled)
            output_expect_go(o);
        struct egress_acceptor *gw = NULL;
        rc = egress_run_begin(ctx, req, secrets, sb->stream, sb->id, &gw, err);
        if (rc == 0)
            rc = send_request(sb->stream, req, request, err);
        if (rc == 0) {
            *sent = true;
            double deadline = util_now_ms() + (double)req->timeout_ms;
            rc = follow(ctx->backend, o, sb->stream, sb->id, cancel ? cancel->fd : -1, deadline,
                        err);
        }
        egress_run_end(gw, o->res);
        if (!discard_unstarted(ctx, profile, sb, o, rc, err))
            return rc;
        *sent = false;
    }
}
