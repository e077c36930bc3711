/* The HTTP transports (libmicrohttpd): streamable HTTP at /mcp (POST, GET,
 * DELETE; JSON or SSE answers; sessions; resumable SSE streams) and the
 * legacy 2024-11-05 HTTP+SSE transport at /sse + /messages, plus /healthz.
 * Host and Origin are checked on every request; a bearer token is required
 * when configured. Implemented by the http_*.c files of this folder, which
 * http_server.c describes. */
#ifndef MCPSBX_TRANSPORT_HTTP_H
#define MCPSBX_TRANSPORT_HTTP_H

#include "mcp/mcp.h"

struct transport_http;

/* Starts serving on cfg->http_host:cfg->http_port in background threads.
 * srv and cfg are borrowed and must outlive the transport. */
int transport_http_start(struct mcp_server *srv, const struct config *cfg,
                         struct transport_http **out, struct err *err);

/* The port actually bound (useful when cfg->http_port is 0). */
unsigned transport_http_port(const struct transport_http *t);

/* MHD's polling threads (one per core). */
unsigned transport_http_threads(const struct transport_http *t);

/* Ends every session (cancelling its runs and waiting for them), stops
 * accepting connections, frees. */
void transport_http_stop(struct transport_http *t);

#endif
