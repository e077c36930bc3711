/* One call in a code session (code_session.h): a cell request on the
 * stream the session keeps, followed with an interrupt for its stops, and
 * the session kept or lost by how the call ended. */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "sandbox/output/output.h"
#include "sandbox/output/redact.h"
#include "sandbox/run/egress_run.h"
#include "sandbox/run/follow.h"
#include "sandbox/run/packages_run.h"
#include "sandbox/run/request.h"
#include "sandbox/session/space.h"

/* How long sending the interrupt may take: the runner reads its frames
 * while a cell runs, so the pipe is never full for long. */
#define INTERRUPT_SEND_MS 1000
/* What a failed call's error shows at most: it may quote the runner. */
#define CELL_ERROR_SHOWN_MAX 2048

struct interrupt_ctx {
    struct backend_stream *stream;
    const char *nonce;
};

static int send_interrupt(void *arg, struct err *err)
{
    struct interrupt_ctx *x = arg;
    struct buf frame;
    buf_init(&frame, RUNNER_MAX_CONTROL);
    int rc = runner_encode_interrupt(x->nonce, &frame, err);
    if (rc == 0)
        rc = backend_stream_send(x->stream, frame.data, frame.len, INTERRUPT_SEND_MS, err);
    buf_free(&frame);
    return rc;
}

/* The session's stream is the call's: BUSY in the registry, busy for the
 * watcher, under k's lock. */
static int take(struct code_space *sp, struct kept *k, struct code_session *cs,
                const struct run *req, struct exec_result *res, struct err *err)
{
    bool lost = false;
    pthread_mutex_lock(&k->lock);
    int rc = code_sessions_begin_call(sp->reg, cs, req->cancel, &lost, err);
    if (rc == 0)
        k->busy = true;
    pthread_mutex_unlock(&k->lock);
    if (rc == 0) {
        watch_wake(sp);
        return 0;
    }
    res->status = EXEC_ERROR;
    exec_result_set_message(res, "%s", err_msg(err));
    if (lost) {
        res->session_lost = true;
        res->lost_reason = xstrdup(code_session_lost_reason(cs));
    }
    return -1;
}

/* Why the call cost the session its sandbox, or NULL when it did not;
 * *kill when the sandbox may still run. res's status says an ended
 * program was an error. */
static char *lost_why(const struct output *o, int rc, struct exec_result *res,
                      const struct err *err, bool *kill)
{
    *kill = rc != 0;
    if (rc == FOLLOW_GRACE_EXPIRED)
        return xasprintf("the sandbox did not stop within %d ms of the interrupt and was "
                         "killed; the session's state is gone",
                         CODE_SESSION_GRACE_MS);
    if (rc < 0)
        return xasprintf("the session's sandbox failed: %s", err_msg(err));
    if (rc != 0 || !output_record_seen(o)) {
        if (res->status == EXEC_OOM)
            return xasprintf("the sandbox was killed for using more than %lld MiB of memory",
                             o->req->memory_mb);
        if (res->status == EXEC_OK)
            res->status = EXEC_ERROR;
        return xasprintf("the sandbox's process exited (code %d)",
                         res->has_exit_code ? res->exit_code : -1);
    }
    if (res->status == EXEC_OOM)
        return xasprintf("the program ran out of memory (limit %lld MiB)", o->req->memory_mb);
    if (o->session.ended)
        return xasprintf("the session's runner ended%s%s", o->session.ended_why[0] ? ": " : "",
                         o->session.ended_why);
    return NULL;
}

/* The call is over: the stream back to the watcher, or the sandbox torn
 * down when the session was lost or closed meanwhile. */
static void give_back(struct code_space *sp, struct kept *k, struct code_session *cs,
                      const char *lost, bool kill)
{
    bool gone;
    pthread_mutex_lock(&k->lock);
    k->busy = false;
    if (lost)
        gone = code_sessions_lose(sp->reg, cs, lost);
    else
        gone = code_sessions_end_call(sp->reg, cs);
    pthread_mutex_unlock(&k->lock);
    if (lost)
        log_info("code session %.8s lost: %s", code_session_tag(cs), lost);
    if (gone)
        space_teardown(sp, k, kill);
    else
        watch_wake(sp);
}

static bool held_room(struct kept *k)
{
    pthread_mutex_lock(&k->lock);
    bool room = packages_held_room(&k->held);
    pthread_mutex_unlock(&k->lock);
    return room;
}

/* The cell's set stays held while the session lives: its interpreter may
 * have put it on its path, whether the cell went well or not. A session
 * torn down meanwhile released what it held; the set goes too. */
static void hold(struct exec_ctx *ctx, struct kept *k, struct packages_use *pk)
{
    pthread_mutex_lock(&k->lock);
    if (k->sb.id)
        packages_hold(ctx, &k->held, pk);
    pthread_mutex_unlock(&k->lock);
    packages_run_done(ctx, pk);
}

/* A failed call's error as it is returned: cleaned of the secrets. */
static void clean_error(const struct redactor *red, struct err *err)
{
    const char *m = err_msg(err);
    char *shown = redact_text(red, m, strlen(m), CELL_ERROR_SHOWN_MAX);
    err_set(err, err->code, "%s", shown);
    free(shown);
}

/* Sends the cell and follows it; returns as follow_interrupted. */
static int run_cell(struct exec_ctx *ctx, struct kept *k, const struct run *req, struct output *o,
                    const char *package_set, const char *nonce, struct err *err)
{
    struct egress_acceptor *gw = NULL;
    struct buf request;
    buf_init(&request, request_cap(ctx, req, k->secrets));
    int rc = egress_run_begin(ctx, req, k->secrets, k->sb.stream, k->sb.id, &gw, err);
    if (rc == 0)
        rc = encode_request(ctx, req, k->secrets, package_set, nonce, RUNNER_SESSION_CELL, &request,
                            err);
    if (rc == 0)
        rc = send_request(k->sb.stream, req, &request, err);
    if (request.data)
        explicit_bzero(request.data, request.len); /* it holds the secrets */
    buf_free(&request);
    if (rc == 0) {
        struct interrupt_ctx ic = {.stream = k->sb.stream, .nonce = nonce};
        struct follow_interrupt intr = {
            .send = send_interrupt, .ctx = &ic, .grace_ms = CODE_SESSION_GRACE_MS};
        double deadline = util_now_ms() + (double)req->timeout_ms;
        rc = follow_interrupted(ctx->backend, o, k->sb.stream, k->sb.id,
                                req->cancel ? req->cancel->fd : -1, deadline, &intr, err);
    }
    egress_run_end(gw, o->res);
    return rc;
}

int code_session_run(struct exec_ctx *ctx, struct code_session *cs, const struct run *req,
                     struct exec_result *res, struct err *err)
{
    struct err local = ERR_INIT;
    if (!err)
        err = &local;
    double t0 = exec_result_restart(res);
    struct code_space *sp = ctx->sessions;
    struct kept *k = sp ? code_session_handle(cs) : NULL;
    int rc = 0;
    if (!k)
        rc = err_set(err, ERR_NOT_FOUND, "no such session");
    else if (strcmp(req->language->name, code_session_language(cs)) != 0)
        rc = err_set(err, ERR_INVALID, "this session runs %s, not %s", code_session_language(cs),
                     req->language->name);
    /* Before the session is taken: a set that does not install costs
     * the call, never the session. */
    struct packages_use pk;
    memset(&pk, 0, sizeof(pk));
    if (rc == 0 && req->packages && !held_room(k))
        rc = err_set(err, ERR_INVALID,
                     "this session has added %d package sets, the most a session may; "
                     "open another session for more",
                     PACKAGES_SESSION_SETS_MAX);
    if (rc == 0)
        rc = packages_run_ready(ctx, req, &pk, res, err);
    if (rc < 0 || take(sp, k, cs, req, res, err) < 0) {
        packages_run_done(ctx, &pk);
        exec_result_set_message(res, "%s", err_msg(err));
        res->status = EXEC_ERROR;
        err_clear(&local);
        return -1;
    }
    char nonce[RUNNER_NONCE_HEX_LEN + 1] = "";
    struct output o;
    rc = runner_new_nonce(nonce, err);
    output_init(&o, req, res, ctx->redactor, nonce, (size_t)ctx->cfg->max_output_bytes);
    if (rc == 0)
        rc = run_cell(ctx, k, req, &o, pk.dir, nonce, err);
    hold(ctx, k, &pk);
    if (rc < 0)
        clean_error(ctx->redactor, err);
    bool kill = false;
    bool seen = output_record_seen(&o);
    char *lost = lost_why(&o, rc, res, err, &kill);
    output_end(&o, rc == 0 && seen && !lost);
    output_free(&o);
    if (rc < 0) {
        res->status = EXEC_ERROR;
        exec_result_set_message(res, "%s", err_msg(err));
    } else if (lost && rc == 0 && !seen) {
        exec_result_set_message(res, "%s", lost);
    }
    if (lost) {
        res->session_lost = true;
        res->lost_reason = xstrdup(lost);
    }
    give_back(sp, k, cs, lost, kill);
    free(lost);
    err_clear(&local);
    res->duration_ms = util_now_ms() - t0;
    return rc < 0 ? -1 : 0;
}
