#include "transport/http_mcp.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "transport/http_headers.h"
#include "transport/http_sessions.h"
#include "transport/http_sse.h"

static bool version_header_ok(struct MHD_Connection *c)
{
    return http_protocol_version_ok(http_header(c, "MCP-Protocol-Version"));
}

static enum MHD_Result reply_bad_version(struct MHD_Connection *c, struct request *rq)
{
    char *msg = xasprintf("Bad Request: unsupported MCP-Protocol-Version (supported: %s)",
                          mcp_versions_text());
    enum MHD_Result ret = http_reply_error(c, rq, MHD_HTTP_BAD_REQUEST, HTTP_ERR_SERVER, msg);
    free(msg);
    return ret;
}

/* Looks up the session named by Mcp-Session-Id, or answers 400/404. */
static struct session *require_session(struct transport_http *t, struct MHD_Connection *c,
                                       struct request *rq, enum MHD_Result *ret)
{
    const char *sid = http_header(c, "Mcp-Session-Id");
    if (!sid) {
        *ret = http_reply_error(c, rq, MHD_HTTP_BAD_REQUEST, HTTP_ERR_SERVER,
                                "Bad Request: Mcp-Session-Id header is required");
        return NULL;
    }
    struct session *s = http_session_get(t, sid, false);
    if (!s) {
        char *why = http_session_not_found(sid);
        *ret = http_reply_error(c, rq, MHD_HTTP_NOT_FOUND, HTTP_ERR_SESSION, why);
        free(why);
    }
    return s;
}

struct body_info {
    bool has_request; /* something in it gets an answer */
    bool has_call;    /* a tools/call request: progress may come first */
    bool initialize;  /* a single initialize request */
    const char *invalid;
    json_object *invalid_id;
};

static void classify_body(json_object *msg, struct body_info *bi)
{
    memset(bi, 0, sizeof(*bi));
    if (json_object_is_type(msg, json_type_array)) {
        /* Batches always get a collected answer: mcp may reject them. */
        bi->has_request = true;
        for (size_t i = 0; i < json_object_array_length(msg); i++) {
            struct jsonrpc_msg m;
            jsonrpc_classify(json_object_array_get_idx(msg, i), &m);
            if (m.kind == JSONRPC_REQUEST && strcmp(m.method, "tools/call") == 0)
                bi->has_call = true;
        }
        return;
    }
    struct jsonrpc_msg m;
    jsonrpc_classify(msg, &m);
    switch (m.kind) {
    case JSONRPC_REQUEST:
        bi->has_request = true;
        bi->has_call = strcmp(m.method, "tools/call") == 0;
        bi->initialize = strcmp(m.method, "initialize") == 0;
        break;
    case JSONRPC_INVALID:
        bi->invalid = m.invalid_reason;
        bi->invalid_id = m.id;
        break;
    case JSONRPC_NOTIFICATION:
    case JSONRPC_RESPONSE:
        break;
    }
}

/* Answers with a complete JSON stream's last message, or 202 when the
 * request got none (only notifications); frees the stream. */
static enum MHD_Result answer_json(struct transport_http *t, struct MHD_Connection *c,
                                   struct request *rq, struct stream *st)
{
    (void)t;
    struct session *s = rq->sess;
    bool with_id = false;
    if (rq->new_session) {
        /* A failed initialize leaves no session behind. */
        with_id = mcp_session_initialized(s->mcp);
        if (!with_id)
            http_session_end(s, NULL);
    }
    struct MHD_Response *resp;
    unsigned status = MHD_HTTP_OK;
    if (st->last) {
        resp = MHD_create_response_from_buffer(st->last_len, st->last, MHD_RESPMEM_MUST_FREE);
        if (resp) {
            st->last = NULL;
            MHD_add_response_header(resp, "Content-Type", "application/json");
        }
    } else {
        status = MHD_HTTP_ACCEPTED;
        resp = http_response_empty();
    }
    http_stream_free(st);
    if (resp && with_id)
        MHD_add_response_header(resp, "Mcp-Session-Id", s->id);
    return http_queue(c, rq, status, resp);
}

/* Answers at once if the stream completed already (the message was
 * answered on this thread), else suspends rq until it does. */
static enum MHD_Result answer_json_when_done(struct transport_http *t, struct MHD_Connection *c,
                                             struct request *rq, struct stream *st)
{
    pthread_mutex_lock(&t->lock);
    bool done = st->complete;
    bool waiting = false;
    if (!done) {
        rq->json = st; /* ours until answered: http_mcp_request_done lets go */
        waiting = http_suspend_locked(t, rq);
        if (waiting) {
            st->waiter = rq;
            rq->wait = RQ_WAIT_JSON;
        }
    }
    pthread_mutex_unlock(&t->lock);
    if (done)
        return answer_json(t, c, rq, st);
    if (waiting)
        return MHD_YES;
    return http_reply_busy(c, rq, MHD_HTTP_SERVICE_UNAVAILABLE, "server busy: shutting down");
}

enum MHD_Result http_mcp_json_ready(struct transport_http *t, struct MHD_Connection *c,
                                    struct request *rq)
{
    struct stream *st = rq->json;
    pthread_mutex_lock(&t->lock);
    bool done = st->complete;
    bool stopping = t->stopping;
    if (done) {
        st->waiter = NULL;
        rq->json = NULL;
        rq->wait = RQ_WAIT_NONE;
    } else if (!stopping) {
        stopping = !http_suspend_locked(t, rq); /* woken early: wait on */
    }
    pthread_mutex_unlock(&t->lock);
    if (done)
        return answer_json(t, c, rq, st);
    if (!stopping)
        return MHD_YES;
    /* Stopping with the answer still out: the stream goes with its last
     * reference (http_mcp_request_done). */
    return http_reply_busy(c, rq, MHD_HTTP_SERVICE_UNAVAILABLE, "server busy: shutting down");
}

void http_mcp_request_done(struct transport_http *t, struct request *rq)
{
    if (rq->json) {
        http_stream_abandon(t, rq->json);
        rq->json = NULL;
    }
}

enum MHD_Result http_mcp_post_head(struct transport_http *t, struct MHD_Connection *c,
                                   struct request *rq, size_t sessionless_cap)
{
    const char *accept = http_header(c, "Accept");
    bool want_json = !accept || http_accept_lists(accept, "application/json");
    bool want_sse = accept && http_accept_lists(accept, "text/event-stream");
    if (!want_json && !want_sse)
        return http_reply_error(c, rq, MHD_HTTP_NOT_ACCEPTABLE, HTTP_ERR_SERVER,
                                "Not Acceptable: Accept must list application/json or "
                                "text/event-stream");
    if (!version_header_ok(c)) {
        /* Not a 2025 version: the 2026-07-28 wire's, whose requests need
         * no session and whose body says whether the header fits. */
        rq->modern_header = true;
        return MHD_YES;
    }
    if (!http_header(c, "Mcp-Session-Id")) {
        /* Only an initialize or a 2026-07-28 request may come without a
         * session, and that one has the modern header: a small body. */
        if (rq->body_cap > sessionless_cap)
            rq->body_cap = sessionless_cap;
        return MHD_YES;
    }
    enum MHD_Result ret = MHD_NO;
    rq->sess = require_session(t, c, rq, &ret);
    return rq->sess ? MHD_YES : ret;
}

/* Hands msg to rq's session, answering on a stream of its own: SSE when
 * the client takes it and progress or logs may precede the result, or
 * when it takes nothing else; else one JSON answer. */
static enum MHD_Result dispatch(struct transport_http *t, struct MHD_Connection *c,
                                struct request *rq, json_object *msg, const struct body_info *bi)
{
    struct session *s = rq->sess;
    const char *accept = http_header(c, "Accept");
    bool want_json = !accept || http_accept_lists(accept, "application/json");
    bool want_sse = accept && http_accept_lists(accept, "text/event-stream");
    if (want_sse && (bi->has_call || !want_json)) {
        pthread_mutex_lock(&t->lock);
        struct stream *st = http_stream_new(s, STREAM_SSE);
        struct reader *r = http_reader_attach_locked(s, st, 0, c);
        pthread_mutex_unlock(&t->lock);
        mcp_session_receive_json(s->mcp, msg, &st->ch);
        mcp_channel_unref(&st->ch);
        /* initialize answers at once: keep the session only if it worked. */
        bool keep = rq->new_session && mcp_session_initialized(s->mcp);
        if (rq->new_session && !keep)
            http_session_end(s, NULL);
        return http_queue_sse(c, rq, r, keep ? s->id : NULL);
    }
    struct stream *st = http_stream_new(s, STREAM_JSON);
    mcp_session_receive_json(s->mcp, msg, &st->ch);
    mcp_channel_unref(&st->ch);
    return answer_json_when_done(t, c, rq, st);
}

/* A 2026-07-28 request: refused before any method runs (400, or 404 for
 * a method this wire does not have), or answered on a stateless session
 * of its own, which ends with the request. */
static enum MHD_Result post_modern(struct transport_http *t, struct MHD_Connection *c,
                                   struct request *rq, json_object *msg, const struct body_info *bi)
{
    struct mcp_wire_headers h = {
        .protocol_version = http_header(c, "MCP-Protocol-Version"),
        .method = http_header(c, "Mcp-Method"),
        .name = http_header(c, "Mcp-Name"),
    };
    json_object *refusal = mcp_modern_refusal(msg, &h);
    if (refusal) {
        json_object *e = NULL;
        json_object *code = NULL;
        json_object_object_get_ex(refusal, "error", &e);
        json_object_object_get_ex(e, "code", &code);
        unsigned status = json_object_get_int(code) == JSONRPC_METHOD_NOT_FOUND
                              ? MHD_HTTP_NOT_FOUND
                              : MHD_HTTP_BAD_REQUEST;
        return http_queue(c, rq, status, http_response_json(refusal));
    }
    if (!bi->has_request) /* a notification: no session to tell */
        return http_queue(c, rq, MHD_HTTP_ACCEPTED, http_response_empty());
    if (rq->sess) { /* a 2025 session's id beside it means nothing here */
        pthread_mutex_lock(&t->lock);
        bool last = http_session_request_done_locked(rq->sess, rq->counted);
        pthread_mutex_unlock(&t->lock);
        if (last)
            http_session_free(rq->sess);
        rq->sess = NULL;
        rq->counted = false;
    }
    unsigned status = 0;
    const char *why = NULL;
    rq->sess = http_session_create_stateless(t, rq, &status, &why);
    if (!rq->sess)
        return http_reply_busy(c, rq, status, why);
    return dispatch(t, c, rq, msg, bi);
}

enum MHD_Result http_mcp_post(struct transport_http *t, struct MHD_Connection *c,
                              struct request *rq)
{
    enum MHD_Result ret = MHD_NO;
    json_object *msg = http_read_post(c, rq, t->cfg->max_message_bytes, &ret);
    if (!msg) {
        http_release_body(t, rq);
        return ret;
    }
    struct body_info bi;
    classify_body(msg, &bi);
    /* Parsed: the bytes go; a session that ended meanwhile is gone, and
     * what gets an answer counts against the session's requests under way
     * (an answer may wait in memory until its client reads it). */
    switch (http_request_admit(t, rq, bi.has_request)) {
    case ADMIT_OK:
        break;
    case ADMIT_ENDED:
        ret = http_reply_error(c, rq, MHD_HTTP_NOT_FOUND, HTTP_ERR_SESSION, "Session not found");
        goto out;
    case ADMIT_BUSY:
        ret = http_reply_too_many(c, rq);
        goto out;
    }
    if (mcp_message_is_modern(msg)) {
        ret = post_modern(t, c, rq, msg, &bi);
        goto out;
    }
    if (rq->modern_header) {
        const char *pv = http_header(c, "MCP-Protocol-Version");
        struct jsonrpc_msg m;
        jsonrpc_classify(msg, &m);
        ret = pv && strcmp(pv, MCP_MODERN_VERSION) == 0
                  ? http_queue(c, rq, MHD_HTTP_BAD_REQUEST,
                               http_response_json(jsonrpc_error(
                                   m.id, JSONRPC_INVALID_PARAMS,
                                   "Invalid params: MCP-Protocol-Version is " MCP_MODERN_VERSION
                                   " but the message has no _meta envelope naming it",
                                   NULL)))
                  : reply_bad_version(c, rq);
        goto out;
    }
    if (!rq->sess) {
        if (!bi.initialize) {
            ret = http_reply_error(c, rq, MHD_HTTP_BAD_REQUEST, HTTP_ERR_SERVER,
                                   "Bad Request: Mcp-Session-Id header is required");
            goto out;
        }
        unsigned status = 0;
        const char *why = NULL;
        rq->sess = http_session_create(t, rq, false, &status, &why);
        if (!rq->sess) {
            ret = http_reply_busy(c, rq, status, why);
            goto out;
        }
        rq->new_session = true;
    }
    struct session *s = rq->sess;
    if (rq->new_session && bi.has_request)
        http_count_request(c, rq, &ret); /* a new session has room */

    if (bi.invalid) {
        ret = http_queue(c, rq, MHD_HTTP_BAD_REQUEST,
                         http_response_json(jsonrpc_error(bi.invalid_id, JSONRPC_INVALID_REQUEST,
                                                          bi.invalid, NULL)));
        goto out;
    }
    if (!bi.has_request) {
        mcp_session_receive_json(s->mcp, msg, &t->discard);
        ret = http_queue(c, rq, MHD_HTTP_ACCEPTED, http_response_empty());
        goto out;
    }

    ret = dispatch(t, c, rq, msg, &bi);
out:
    json_object_put(msg);
    return ret;
}

enum MHD_Result http_mcp_get(struct transport_http *t, struct MHD_Connection *c, struct request *rq)
{
    enum MHD_Result ret = MHD_NO;
    const char *accept = http_header(c, "Accept");
    if (!accept || !http_accept_lists(accept, "text/event-stream"))
        return http_reply_error(c, rq, MHD_HTTP_NOT_ACCEPTABLE, HTTP_ERR_SERVER,
                                "Not Acceptable: Accept must list text/event-stream");
    if (!version_header_ok(c))
        return reply_bad_version(c, rq);
    const char *last = http_header(c, "Last-Event-ID");
    unsigned long no = 0;
    unsigned long seq = 0;
    if (last && !http_parse_event_id(last, &no, &seq))
        return http_reply_error(c, rq, MHD_HTTP_BAD_REQUEST, HTTP_ERR_SERVER,
                                "Bad Request: malformed Last-Event-ID");
    struct session *s = require_session(t, c, rq, &ret);
    if (!s)
        return ret;

    struct reader *r = NULL;
    unsigned status = 0;
    pthread_mutex_lock(&t->lock);
    if (last) {
        struct stream *st = s->streams;
        while (st && st->no != no)
            st = st->next;
        if (st)
            r = http_reader_attach_locked(s, st, seq + 1, c);
        else
            status = MHD_HTTP_NOT_FOUND;
    } else if (s->standalone && s->standalone->readers > 0) {
        status = MHD_HTTP_CONFLICT;
    } else {
        /* A new standalone stream; the previous one (if any) is finished. */
        if (s->standalone)
            s->standalone->complete = true;
        s->standalone = http_stream_new(s, STREAM_STANDALONE);
        r = http_reader_attach_locked(s, s->standalone, 0, c);
    }
    pthread_mutex_unlock(&t->lock);
    http_session_put(s);

    if (status == MHD_HTTP_NOT_FOUND)
        return http_reply_error(c, rq, status, HTTP_ERR_SERVER,
                                "Not Found: no such stream in this session to resume");
    if (status == MHD_HTTP_CONFLICT)
        return http_reply_error(c, rq, status, HTTP_ERR_SERVER,
                                "Conflict: only one standalone SSE stream per session");
    return http_queue_sse(c, rq, r, NULL);
}

enum MHD_Result http_mcp_delete(struct transport_http *t, struct MHD_Connection *c,
                                struct request *rq)
{
    enum MHD_Result ret = MHD_NO;
    if (!version_header_ok(c))
        return reply_bad_version(c, rq);
    rq->sess = require_session(t, c, rq, &ret);
    if (!rq->sess)
        return ret;
    /* Answered once the session's runs have ended (the closer resumes
     * us), as a client deleting a session expects. */
    pthread_mutex_lock(&t->lock);
    rq->wait = RQ_WAIT_CLOSE;
    bool waiting = http_suspend_locked(t, rq);
    pthread_mutex_unlock(&t->lock);
    if (!waiting) /* stopping: every session is ending already */
        return http_queue(c, rq, MHD_HTTP_NO_CONTENT, http_response_empty());
    if (!http_session_end(rq->sess, rq)) {
        pthread_mutex_lock(&t->lock);
        rq->closed = true;
        http_resume_locked(t, rq);
        pthread_mutex_unlock(&t->lock);
    }
    return MHD_YES;
}

enum MHD_Result http_mcp_delete_done(struct transport_http *t, struct MHD_Connection *c,
                                     struct request *rq)
{
    pthread_mutex_lock(&t->lock);
    bool wait = !rq->closed && http_suspend_locked(t, rq); /* woken early: wait on */
    pthread_mutex_unlock(&t->lock);
    if (wait)
        return MHD_YES;
    rq->wait = RQ_WAIT_NONE;
    return http_queue(c, rq, MHD_HTTP_NO_CONTENT, http_response_empty());
}
