#include "transport/http_legacy.h"

#include <string.h>

#include "mcp/jsonrpc.h"

#include "transport/http_headers.h"
#include "transport/http_sessions.h"
#include "transport/http_sse.h"

enum MHD_Result http_legacy_sse(struct transport_http *t, struct MHD_Connection *c,
                                struct request *rq)
{
    const char *accept = http_header(c, "Accept");
    if (accept && !http_accept_lists(accept, "text/event-stream"))
        return http_reply_error(c, rq, MHD_HTTP_NOT_ACCEPTABLE, HTTP_ERR_SERVER,
                                "Not Acceptable: Accept must list text/event-stream");
    unsigned status = 0;
    const char *why = NULL;
    struct session *s = http_session_create(t, rq, true, &status, &why);
    if (!s)
        return http_reply_busy(c, rq, status, why);
    pthread_mutex_lock(&t->lock);
    struct reader *r = http_reader_attach_locked(s, s->legacy_stream, 0, c);
    pthread_mutex_unlock(&t->lock);
    http_session_put(s);
    return http_queue_sse(c, rq, r, NULL);
}

enum MHD_Result http_legacy_messages_head(struct transport_http *t, struct MHD_Connection *c,
                                          struct request *rq)
{
    const char *sid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sessionId");
    if (!sid)
        return http_reply_error(c, rq, MHD_HTTP_BAD_REQUEST, HTTP_ERR_SERVER,
                                "Bad Request: sessionId query parameter is required");
    rq->sess = http_session_get(t, sid, true);
    if (!rq->sess) {
        char *why = http_session_not_found(sid);
        enum MHD_Result ret = http_reply_error(c, rq, MHD_HTTP_NOT_FOUND, HTTP_ERR_SESSION, why);
        free(why);
        return ret;
    }
    return MHD_YES;
}

enum MHD_Result http_legacy_messages(struct transport_http *t, struct MHD_Connection *c,
                                     struct request *rq)
{
    enum MHD_Result ret = MHD_NO;
    json_object *msg = http_read_post(c, rq, t->cfg->max_message_bytes, &ret);
    /* Parsed: the bytes go. Its answers go to the SSE stream: it holds
     * none itself, so it counts against nothing. */
    enum request_admit a = http_request_admit(t, rq, false);
    if (!msg)
        return ret;
    struct session *s = rq->sess;
    if (a == ADMIT_ENDED) {
        json_object_put(msg);
        return http_reply_error(c, rq, MHD_HTTP_NOT_FOUND, HTTP_ERR_SESSION, "Session not found");
    }
    /* The session counts against --max-sessions from its initialize on;
     * until then it is pending, bounded by its grace. */
    struct jsonrpc_msg m;
    jsonrpc_classify(msg, &m);
    if (m.kind == JSONRPC_REQUEST && strcmp(m.method, "initialize") == 0 &&
        !http_session_count(s)) {
        ret =
            http_reply_busy(c, rq, MHD_HTTP_SERVICE_UNAVAILABLE, "server busy: too many sessions");
    } else {
        /* Replies go to the session's SSE connection. */
        mcp_session_receive_json(s->mcp, msg, &s->legacy_stream->ch);
        ret = http_queue(c, rq, MHD_HTTP_ACCEPTED, http_response_text("Accepted", 8, "text/plain"));
    }
    json_object_put(msg);
    return ret;
}
