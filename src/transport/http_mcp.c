#include "transport/http_mcp.h"

#include <string.h>

#include "mcp/jsonrpc.h"
#include "transport/http_headers.h"
#include "transport/http_sessions.h"
#include "transport/http_sse.h"

static bool version_header_ok(struct MHD_Connection *c)
{
    return http_protocol_version_ok(http_header(c, "MCP-Protocol-Version"));
}

static enum MHD_Result reply_bad_version(struct MHD_Connection *c, struct request *rq)
{
    return http_reply_error(c, rq, MHD_HTTP_BAD_REQUEST, HTTP_ERR_SERVER,
                            "Bad Request: unsupported MCP-Protocol-Version (supported: "
                            "2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)");
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
    if (!s)
        *ret = http_reply_error(c, rq, MHD_HTTP_NOT_FOUND, HTTP_ERR_SESSION, "Session not found");
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

/* Waits for a JSON stream to complete and answers with its last message. */
static enum MHD_Result answer_json(struct transport_http *t, struct MHD_Connection *c,
                                   struct request *rq, struct session *s, struct stream *st,
                                   bool new_session)
{
    pthread_mutex_lock(&t->lock);
    /* mcp answers every request, cancelled ones with nothing, and closing
     * a session waits for its runs: completion always comes. */
    while (!st->complete)
        pthread_cond_wait(&s->cond, &t->lock);
    pthread_mutex_unlock(&t->lock);

    bool with_id = false;
    if (new_session) {
        /* A failed initialize leaves no session behind. */
        with_id = mcp_session_initialized(s->mcp);
        if (!with_id)
            http_session_end(s);
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

enum MHD_Result http_mcp_post(struct transport_http *t, struct MHD_Connection *c,
                              struct request *rq)
{
    enum MHD_Result ret = MHD_NO;
    const char *accept = http_header(c, "Accept");
    bool want_json = !accept || http_accept_lists(accept, "application/json");
    bool want_sse = accept && http_accept_lists(accept, "text/event-stream");
    if (!want_json && !want_sse)
        return http_reply_error(c, rq, MHD_HTTP_NOT_ACCEPTABLE, HTTP_ERR_SERVER,
                                "Not Acceptable: Accept must list application/json or "
                                "text/event-stream");
    if (!version_header_ok(c))
        return reply_bad_version(c, rq);
    json_object *msg = http_read_post(t->cfg->max_message_bytes, c, rq, &ret);
    if (!msg)
        return ret;

    struct body_info bi;
    classify_body(msg, &bi);
    struct session *s = NULL;
    bool new_session = false;
    if (bi.initialize && !http_header(c, "Mcp-Session-Id")) {
        unsigned status = 0;
        const char *why = NULL;
        s = http_session_create(t, false, &status, &why);
        if (!s) {
            ret = http_reply_busy(c, rq, status, why);
            goto out;
        }
        new_session = true;
    } else if (!(s = require_session(t, c, rq, &ret))) {
        goto out;
    }

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

    /* SSE when the client takes it and progress or logs may precede the
     * result, or when it takes nothing else. */
    if (want_sse && (bi.has_call || !want_json)) {
        pthread_mutex_lock(&t->lock);
        struct stream *st = http_stream_new(s, STREAM_SSE);
        struct reader *r = http_reader_attach_locked(s, st, 0, c);
        pthread_mutex_unlock(&t->lock);
        mcp_session_receive_json(s->mcp, msg, &st->ch);
        mcp_channel_unref(&st->ch);
        /* initialize answers at once: keep the session only if it worked. */
        bool keep = new_session && mcp_session_initialized(s->mcp);
        if (new_session && !keep)
            http_session_end(s);
        ret = http_queue_sse(c, rq, r, keep ? s->id : NULL);
    } else {
        struct stream *st = http_stream_new(s, STREAM_JSON);
        mcp_session_receive_json(s->mcp, msg, &st->ch);
        mcp_channel_unref(&st->ch);
        ret = answer_json(t, c, rq, s, st, new_session);
    }
out:
    if (s)
        http_session_put(s);
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
    struct session *s = require_session(t, c, rq, &ret);
    if (!s)
        return ret;
    http_session_end_put(s);
    return http_queue(c, rq, MHD_HTTP_NO_CONTENT, http_response_empty());
}
