#include "transport/http_response.h"

#include <string.h>

#include "base/util.h"
#include "mcp/jsonrpc.h"
#include "transport/http_headers.h"
#include "transport/http_sessions.h"

#define RETRY_AFTER_S "5"

const char *http_header(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

enum MHD_Result http_queue(struct MHD_Connection *c, struct request *rq, unsigned status,
                           struct MHD_Response *resp)
{
    if (!resp)
        return MHD_NO; /* out of memory: MHD drops the connection */
    if (rq->origin) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", rq->origin);
        MHD_add_response_header(resp, "Vary", "Origin");
        MHD_add_response_header(resp, "Access-Control-Expose-Headers", "Mcp-Session-Id");
    }
    rq->status = status;
    enum MHD_Result ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

struct MHD_Response *http_response_text(const char *text, size_t len, const char *type)
{
    char *copy = xmalloc(len + 1);
    memcpy(copy, text, len);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, copy, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(copy);
        return NULL;
    }
    if (type)
        MHD_add_response_header(resp, "Content-Type", type);
    return resp;
}

struct MHD_Response *http_response_empty(void)
{
    return MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
}

struct MHD_Response *http_response_json(json_object *body)
{
    size_t len = 0;
    const char *s = jsonrpc_serialize(body, &len);
    struct MHD_Response *resp = http_response_text(s, len, "application/json");
    json_object_put(body);
    return resp;
}

struct MHD_Response *http_response_error(int code, const char *message)
{
    return http_response_json(jsonrpc_error(NULL, code, message, NULL));
}

enum MHD_Result http_reply_error(struct MHD_Connection *c, struct request *rq, unsigned status,
                                 int code, const char *message)
{
    return http_queue(c, rq, status, http_response_error(code, message));
}

enum MHD_Result http_reply_busy(struct MHD_Connection *c, struct request *rq, unsigned status,
                                const char *why)
{
    struct MHD_Response *resp = http_response_error(HTTP_ERR_SERVER, why);
    if (resp && (status == MHD_HTTP_SERVICE_UNAVAILABLE || status == MHD_HTTP_TOO_MANY_REQUESTS))
        MHD_add_response_header(resp, "Retry-After", RETRY_AFTER_S);
    return http_queue(c, rq, status, resp);
}

bool http_count_request(struct MHD_Connection *c, struct request *rq, enum MHD_Result *ret)
{
    if (!rq->sess || rq->counted)
        return true;
    if (http_session_request_begin(rq->sess)) {
        rq->counted = true;
        return true;
    }
    *ret = http_reply_too_many(c, rq);
    return false;
}

enum MHD_Result http_reply_too_many(struct MHD_Connection *c, struct request *rq)
{
    return http_reply_busy(c, rq, MHD_HTTP_TOO_MANY_REQUESTS,
                           "too many requests: this session has --max-session-requests under "
                           "way; wait for their answers");
}

enum MHD_Result http_reply_too_big(struct MHD_Connection *c, struct request *rq,
                                   long long max_message_bytes)
{
    char *msg = (long long)rq->body_cap < max_message_bytes
                    ? xasprintf("Invalid Request: message exceeds %zu bytes (a message without "
                                "a session must be an initialize)",
                                rq->body_cap)
                    : xasprintf("Invalid Request: message exceeds %zu bytes (--max-message-bytes)",
                                rq->body_cap);
    enum MHD_Result ret =
        http_reply_error(c, rq, MHD_HTTP_CONTENT_TOO_LARGE, JSONRPC_INVALID_REQUEST, msg);
    free(msg);
    return ret;
}

json_object *http_read_post(struct MHD_Connection *c, struct request *rq,
                            long long max_message_bytes, enum MHD_Result *ret)
{
    if (rq->too_big) {
        *ret = http_reply_too_big(c, rq, max_message_bytes);
        return NULL;
    }
    if (!http_media_type_is(http_header(c, "Content-Type"), "application/json")) {
        *ret = http_reply_error(c, rq, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, HTTP_ERR_SERVER,
                                "Unsupported Media Type: Content-Type must be application/json");
        return NULL;
    }
    json_object *msg = NULL;
    struct err err = ERR_INIT;
    if (jsonrpc_parse(rq->body.data ? rq->body.data : "", rq->body.len,
                      JSONRPC_PARSE_BUDGET(rq->body_cap), &msg, &err) < 0) {
        /* The HTTP status is this transport's: a body refused for its size
         * is a 413, any other that cannot be read a 400. */
        unsigned status =
            err.code == ERR_TOO_BIG ? MHD_HTTP_CONTENT_TOO_LARGE : MHD_HTTP_BAD_REQUEST;
        *ret = http_reply_error(c, rq, status, err_jsonrpc_code(err.code), err_msg(&err));
        err_clear(&err);
        return NULL;
    }
    return msg;
}
