/* Opening a code session (code_session.h): a place reserved in the
 * registry, a sandbox whose runner answered a begin request, kept. */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "sandbox/output/output.h"
#include "sandbox/run/egress_run.h"
#include "sandbox/run/request.h"
#include "sandbox/session/space.h"

const char *code_session_mode_name(enum runner_session_mode m)
{
    switch (m) {
    case RUNNER_SESSION_MODE_INTERPRETER:
        return "interpreter";
    case RUNNER_SESSION_MODE_SHELL:
        return "shell";
    case RUNNER_SESSION_MODE_PROCESS:
        return "process";
    case RUNNER_SESSION_MODE_NONE:
        break;
    }
    return "none";
}

/* What the begin request came to: 0 when the runner began a session, else
 * -1 with err saying why not. */
static int begin_outcome(const struct output *o, int rc, struct err *err)
{
    const struct exec_result *res = o->res;
    if (rc < 0)
        return err_wrap(err, "starting the session's sandbox");
    if (res->status == EXEC_CANCELLED)
        return err_set(err, ERR_CANCELLED, "the session's start was cancelled");
    if (res->status == EXEC_TIMEOUT)
        return err_set(err, ERR_TIMEOUT, "the session's sandbox did not start in time");
    if (rc != 0 || !output_record_seen(o) || res->status != EXEC_OK || res->exit_code != 0 ||
        !o->session.present || o->session.mode == RUNNER_SESSION_MODE_NONE)
        return err_set(err, ERR_PROTOCOL,
                       "the sandbox's runner did not begin a session (it may not support them)");
    return 0;
}

/* A sandbox whose runner began a session into k: the begin request sent
 * as a run's would be, from the pool when the space allows it. */
static int begin(struct code_space *sp, const struct run *req, struct kept *k, struct err *err)
{
    struct exec_ctx *ctx = sp->ctx;
    struct backend_spec spec;
    /* Its label covers the session's whole life and its last call. */
    run_spec(ctx, req, util_now_ms(), sp->lim.max_age_ms + ctx->cfg->max_timeout_ms, &spec);
    struct exec_result res;
    exec_result_init(&res);
    char nonce[RUNNER_NONCE_HEX_LEN + 1] = "";
    int rc = runner_new_nonce(nonce, err);
    if (rc == 0)
        rc = egress_run_secrets_for(ctx, req, &k->secrets, err);
    struct output o;
    output_init(&o, req, &res, ctx->redactor, nonce, (size_t)ctx->cfg->max_output_bytes);
    struct buf request;
    buf_init(&request, request_cap(ctx, req, k->secrets));
    bool sent = false;
    if (rc == 0)
        rc = encode_request(ctx, req, k->secrets, NULL, nonce, RUNNER_SESSION_BEGIN, &request, err);
    if (rc == 0)
        rc = attempt(ctx, req, k->secrets, &spec, sp->pool_fits, &request, req->cancel, &o, &k->sb,
                     &sent, err);
    if (k->sb.pooled)
        pool_run_end(ctx->pool);
    rc = begin_outcome(&o, rc, err);
    k->mode = o.session.mode;
    output_end(&o, false);
    output_free(&o);
    if (request.data)
        explicit_bzero(request.data, request.len); /* it holds the secrets */
    buf_free(&request);
    exec_result_free(&res);
    return rc;
}

/* A sandbox that never became a session's: gone, and its kept with it. */
static void discard(struct code_space *sp, struct kept *k)
{
    backend_stream_close(k->sb.stream);
    if (k->sb.id) {
        reaper_remove(sp->ctx->reaper, k->sb.id);
        free(k->sb.id);
    }
    pthread_mutex_destroy(&k->lock);
    egress_run_secrets_free(k->secrets);
    free(k);
}

struct code_session *code_session_open(struct exec_ctx *ctx, const struct run *req,
                                       const char *name, const struct code_session_owner *who,
                                       enum runner_session_mode *mode, struct err *err)
{
    struct code_space *sp = ctx->sessions;
    if (!sp) {
        err_set(err, ERR_INVALID, "code sessions are off");
        return NULL;
    }
    struct code_session *cs = code_sessions_reserve(sp->reg, who, req->language->name, name, err);
    if (!cs)
        return NULL;
    struct kept *k = xcalloc(1, sizeof(*k));
    pthread_mutex_init(&k->lock, NULL);
    k->cs = cs;
    k->memory_mb = req->memory_mb;
    k->timeout_ms = req->timeout_ms;
    if (begin(sp, req, k, err) < 0) {
        log_info("code session %.8s (%s) did not open: %s", code_session_tag(cs),
                 req->language->name, err_msg(err));
        code_sessions_abandon(sp->reg, cs);
        code_sessions_put(sp->reg, cs);
        discard(sp, k);
        return NULL;
    }
    log_info("code session %.8s began: %s, %s mode, sandbox %.12s%s", code_session_tag(cs),
             req->language->name, code_session_mode_name(k->mode), k->sb.id,
             k->sb.pooled ? " (pooled)" : "");
    if (code_sessions_open(sp->reg, cs, k, err) < 0) {
        /* Ended while it started: the registry dropped it, not k. */
        code_sessions_put(sp->reg, cs);
        discard(sp, k);
        return NULL;
    }
    /* From here on k is the session's: torn down by whoever ends it. */
    watch_add(sp, k);
    if (req->cancel && exec_cancelled(req->cancel)) {
        /* Cancelled once the runner had begun: nobody will learn the id,
         * so nobody would close it before its idle end. */
        code_session_close(ctx, cs);
        code_sessions_put(sp->reg, cs);
        err_set(err, ERR_CANCELLED, "the session's start was cancelled");
        return NULL;
    }
    if (mode)
        *mode = k->mode;
    return cs;
}
