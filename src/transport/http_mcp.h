/* The streamable HTTP endpoint, /mcp (spec 2025-03-26 and later): POST a
 * message (JSON or SSE answer), GET to resume a stream or open the
 * standalone one, DELETE to end the session. */
#ifndef MCPSBX_HTTP_MCP_H
#define MCPSBX_HTTP_MCP_H

#include "transport/http_server.h"

/* What a POST's head decides before its body is read: Accept, the
 * protocol version, and its session (404 for one that does not exist; no
 * session: the body may only be an initialize, at most sessionless_cap). */
enum MHD_Result http_mcp_post_head(struct transport_http *t, struct MHD_Connection *c,
                                   struct request *rq, size_t sessionless_cap);
http_handler http_mcp_post;
/* A POST waiting for its JSON answer, resumed. */
http_handler http_mcp_json_ready;
http_handler http_mcp_get;
http_handler http_mcp_delete;
/* A DELETE waiting for its session's runs to end, resumed. */
http_handler http_mcp_delete_done;
/* rq is complete: lets go of a JSON stream it may still hold. */
void http_mcp_request_done(struct transport_http *t, struct request *rq);

#endif
