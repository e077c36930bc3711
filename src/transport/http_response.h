/* One HTTP request's state, and the plain responses every handler of the
 * HTTP transport answers with (CORS headers added on the way out). */
#ifndef MCPSBX_HTTP_RESPONSE_H
#define MCPSBX_HTTP_RESPONSE_H

#include <json-c/json.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/queue.h>

#include "base/buf.h"
#include "base/err.h"

#define HTTP_LOG_FIELD_MAX 96

/* JSON-RPC codes for transport-level errors, as the TypeScript SDK uses. */
#define HTTP_ERR_SERVER  ERR_JSONRPC_SERVER
#define HTTP_ERR_SESSION (-32001)

struct conn;
struct session;
struct stream;

/* What a suspended request waits for. */
enum request_wait {
    RQ_WAIT_NONE,
    RQ_WAIT_JSON,  /* its reply stream to complete (a JSON answer) */
    RQ_WAIT_CLOSE, /* its session's runs to end (DELETE) */
};

/* One HTTP request (MHD's per-request pointer), on the polling thread of
 * its connection; the fields under "waiting" are under t->lock. */
struct request {
    double start;
    char method[16];
    char path[HTTP_LOG_FIELD_MAX];
    unsigned status;
    const char *origin; /* an allowed Origin, echoed in CORS headers */
    bool authenticated; /* it carried the configured bearer token */
    bool too_big;
    size_t received;
    size_t body_cap; /* --max-message-bytes, or less before a session exists */
    size_t reserved; /* of t->body_bytes, while the body is held */
    struct buf body;
    struct MHD_Connection *c;
    struct conn *conn;    /* its connection's deadlines (http_conns.h) */
    struct session *sess; /* named by the request's headers: one reference */
    bool counted;         /* in sess->requests (http_session_request_begin) */
    bool new_session;     /* an initialize that made sess */
    bool modern_header;   /* MCP-Protocol-Version names no 2025 version */
    bool body_in;         /* the last upload call came */
    /* waiting */
    enum request_wait wait;
    bool suspended;
    struct stream *json;           /* RQ_WAIT_JSON */
    bool closed;                   /* RQ_WAIT_CLOSE: the session's runs ended */
    LIST_ENTRY(request) wait_link; /* in t->waiting while suspended */
};

/* A request header's value, or NULL. */
const char *http_header(struct MHD_Connection *c, const char *name);

/* Queues resp (adding the CORS headers) and destroys it; a NULL resp (out
 * of memory) makes MHD drop the connection. */
enum MHD_Result http_queue(struct MHD_Connection *c, struct request *rq, unsigned status,
                           struct MHD_Response *resp);

/* A response owning a copy of text[0..len); type may be NULL. */
struct MHD_Response *http_response_text(const char *text, size_t len, const char *type);
struct MHD_Response *http_response_empty(void);
/* Takes body. */
struct MHD_Response *http_response_json(json_object *body);
/* A JSON-RPC error with a null id as the body of an HTTP error. */
struct MHD_Response *http_response_error(int code, const char *message);

enum MHD_Result http_reply_error(struct MHD_Connection *c, struct request *rq, unsigned status,
                                 int code, const char *message);
/* 503 (with Retry-After) or another status with a "server busy" reason. */
enum MHD_Result http_reply_busy(struct MHD_Connection *c, struct request *rq, unsigned status,
                                const char *why);

/* Counts rq against its session's --max-session-requests (a no-op
 * without a session or when counted already): false when it has been
 * answered 429 instead, *ret being MHD's result. */
bool http_count_request(struct MHD_Connection *c, struct request *rq, enum MHD_Result *ret);

/* 429: the session has --max-session-requests under way. */
enum MHD_Result http_reply_too_many(struct MHD_Connection *c, struct request *rq);

/* 413: the message is over the request's body cap. */
enum MHD_Result http_reply_too_big(struct MHD_Connection *c, struct request *rq,
                                   long long max_message_bytes);

/* Checks and parses a POST body (both transports); answers and returns
 * NULL when it is not a readable JSON message. Parsing is bounded by the
 * request's body cap (jsonrpc.h: JSONRPC_PARSE_BUDGET). */
json_object *http_read_post(struct MHD_Connection *c, struct request *rq,
                            long long max_message_bytes, enum MHD_Result *ret);

#endif
