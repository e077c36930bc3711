/* The legacy 2024-11-05 HTTP+SSE transport: GET /sse opens a session and
 * its one SSE stream, whose first event names the URL to POST messages to
 * (/messages?sessionId=...); every reply travels on that stream. The
 * session is pending until its client sends initialize: it does not count
 * against --max-sessions, and ends after --http-head-timeout-ms without
 * one. */
#ifndef MCPSBX_HTTP_LEGACY_H
#define MCPSBX_HTTP_LEGACY_H

#include "transport/http_server.h"

/* GET /sse */
http_handler http_legacy_sse;

/* POST /messages?sessionId=: its session, looked up from the head (404
 * before any body is read). */
http_handler http_legacy_messages_head;

/* POST /messages?sessionId= */
http_handler http_legacy_messages;

#endif
