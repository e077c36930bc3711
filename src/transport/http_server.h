/* Shared by the HTTP transport's files (http_*.c): the transport object,
 * one request, and the plain responses every handler answers with.
 * http_server.c describes the files, the threads and the locking. */
#ifndef MCPSBX_HTTP_SERVER_H
#define MCPSBX_HTTP_SERVER_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "base/buf.h"
#include "transport/transport_http.h"

#define HTTP_LOG_FIELD_MAX 96

/* JSON-RPC codes for transport-level errors, as the TypeScript SDK uses. */
#define HTTP_ERR_SERVER  (-32000)
#define HTTP_ERR_SESSION (-32001)

struct session;

struct transport_http {
    struct mcp_server *srv;
    const struct config *cfg;
    struct MHD_Daemon *daemon;
    unsigned port;
    char *self_host; /* the bind address as a Host header names it; NULL for wildcards */
    struct mcp_channel discard;
    pthread_mutex_t lock;
    pthread_cond_t janitor_cond;
    struct session *sessions;
    size_t n_sessions;
    int active;          /* requests between their first call and completion */
    atomic_bool started; /* read by MHD's logger from any thread */
    bool stopping;
    bool janitor_running;
    pthread_t janitor;
};

/* One HTTP request (MHD's per-request pointer). */
struct request {
    double start;
    char method[16];
    char path[HTTP_LOG_FIELD_MAX];
    unsigned status;
    const char *origin; /* an allowed Origin, echoed in CORS headers */
    bool too_big;
    size_t received;
    struct buf body;
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

/* Checks and parses a POST body (both transports); answers and returns
 * NULL when it is not a readable JSON message. */
json_object *http_read_post(const struct transport_http *t, struct MHD_Connection *c,
                            struct request *rq, enum MHD_Result *ret);

#endif
