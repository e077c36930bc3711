/* The HTTP transports (libmicrohttpd): streamable HTTP at /mcp (POST, GET,
 * DELETE; JSON or SSE answers; sessions; resumable SSE streams) and the
 * legacy 2024-11-05 HTTP+SSE transport at /sse + /messages, plus /healthz.
 * Host and Origin are checked on every request; a bearer token is required
 * when configured. http_server.c says how its threads and locks work.
 *
 * Files of the HTTP transport (src/transport/):
 *   transport_http.h    the public entry main.c uses: start, port, stop
 *   http_server.[ch]    start and stop, routing, the request lifecycle,
 *                       /healthz; the transport object shared by the others
 *   http_response.[ch]  one request's state, and the plain responses every
 *                       handler answers with
 *   http_guard.[ch]     Host and Origin allow-lists, bearer token: checked first
 *   http_conns.[ch]     every connection's phase: head and body deadlines,
 *                       room made near the connection limit
 *   http_headers.[ch]   pure parsers of header values (Accept, Content-Type,
 *                       Host, Origin, Authorization, Content-Length,
 *                       Last-Event-ID, MCP-Protocol-Version)
 *   http_sessions.[ch]  the session table, reference counts, ending; the
 *                       janitor and the closer threads
 *   http_sse.[ch]       reply streams, SSE event ids, the replay buffer that
 *                       Last-Event-ID resumes from, SSE readers (suspended
 *                       while they have nothing to send), keep-alives
 *   http_mcp.[ch]       /mcp, streamable HTTP: POST, GET, DELETE
 *   http_legacy.[ch]    /sse + /messages, the 2024-11-05 HTTP+SSE transport */
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
