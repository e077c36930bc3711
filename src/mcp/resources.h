/* What the server offers besides tools: the environment resource (read,
 * list, subscribe), prompts (none) and completion (nothing completes). */
#ifndef MCPSBX_MCP_RESOURCES_H
#define MCPSBX_MCP_RESOURCES_H

#include "mcp/jsonrpc.h"
#include "mcp/reply.h"
#include "mcp/session.h"

void resources_list(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);
void resources_templates_list(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);
void resources_read(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);
/* Also resources/unsubscribe: the one resource never changes. */
void resources_subscribe(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);
void prompts_list(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);
void prompts_get(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);
void completion_complete(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);

#endif
