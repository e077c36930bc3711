/* The streamable HTTP endpoint, /mcp (spec 2025-03-26 and later): POST a
 * message (JSON or SSE answer), GET to resume a stream or open the
 * standalone one, DELETE to end the session. */
#ifndef MCPSBX_HTTP_MCP_H
#define MCPSBX_HTTP_MCP_H

#include "transport/http_server.h"

enum MHD_Result http_mcp_post(struct transport_http *t, struct MHD_Connection *c,
                              struct request *rq);
enum MHD_Result http_mcp_get(struct transport_http *t, struct MHD_Connection *c,
                             struct request *rq);
enum MHD_Result http_mcp_delete(struct transport_http *t, struct MHD_Connection *c,
                                struct request *rq);

#endif
