/* HTTP to the container engine over its unix socket, with libcurl. Every
 * request has a timeout; responses are capped. Thread-safe: one curl easy
 * handle per request. */
#ifndef MCPSBX_ENGINE_HTTP_H
#define MCPSBX_ENGINE_HTTP_H

#include <stdbool.h>

#include "base/buf.h"
#include "base/err.h"

#define ENGINE_HTTP_MAX_RESPONSE (4u * 1024u * 1024u)

/* Calls curl_global_init once; call from main before threads start. */
int engine_http_global_init(struct err *err);
void engine_http_global_cleanup(void);

/* Whether the engine is gone, asked without a request (so a stalled engine
 * cannot hold the caller): 1 with an ERR_ENGINE err naming the socket
 * when nothing listens on it (no socket file, or the connection is
 * refused); 0 otherwise, a stalled engine included. */
int engine_http_gone(const char *socket_path, struct err *err);

/* Sends METHOD path (path includes the API version prefix and query) with an
 * optional JSON body. On transport success returns 0 and sets *status and
 * resp (capped at ENGINE_HTTP_MAX_RESPONSE); the caller judges the status.
 * Fails with ERR_ENGINE (naming the socket) when the socket cannot be
 * reached, ERR_TIMEOUT past timeout_ms. */
int engine_http_request(const char *socket_path, const char *method, const char *path,
                        const char *body, size_t body_len, long timeout_ms, long *status,
                        struct buf *resp, struct err *err);

/* The "message" field of an engine error body ({"message": "..."}), or
 * the body itself when it is not JSON (Docker answers a failed attach in
 * plain text); length-capped, control characters replaced, trimmed. NULL
 * when there is none. Caller frees. */
char *engine_http_message(const char *body, size_t len);

/* The status and body framing of an HTTP/1.x response head in head[0..n)
 * (status line, then CRLF-separated headers): *content_length is -1 when
 * absent, *chunked is true for Transfer-Encoding: chunked. Fails with
 * ERR_PROTOCOL on a malformed status line or Content-Length. Pure. */
int engine_http_parse_head(const char *head, size_t n, long *status, long long *content_length,
                           bool *chunked, struct err *err);

/* Decodes a chunked body in b[0..n) in place and returns the decoded
 * length; on any irregularity keeps what was decoded so far (it only ever
 * reads error messages). Pure. */
size_t engine_http_dechunk(char *b, size_t n);

/* A hijacked (upgraded) connection: after the 101/200 answer the socket is
 * a raw byte stream. */
struct engine_http_conn;

/* Sends POST path with Connection: Upgrade / Upgrade: tcp and reads the
 * answer headers. Bytes already read past the headers are kept and
 * returned first by engine_http_conn_recv. */
int engine_http_upgrade(const char *socket_path, const char *path, long timeout_ms,
                        struct engine_http_conn **out, struct err *err);

/* The socket, for poll(). */
int engine_http_conn_fd(const struct engine_http_conn *c);

/* Sends all n bytes (waits with poll up to timeout_ms in total). */
int engine_http_conn_send(struct engine_http_conn *c, const void *data, size_t n, long timeout_ms,
                          struct err *err);

/* Non-blocking read: returns bytes read (>0), 0 at end of stream, -2 when
 * nothing is available now (poll the fd), -1 on error. */
long engine_http_conn_recv(struct engine_http_conn *c, void *data, size_t n, struct err *err);

/* True when bytes are buffered that poll() would not report. */
int engine_http_conn_pending(const struct engine_http_conn *c);

void engine_http_conn_close(struct engine_http_conn *c);

#endif
