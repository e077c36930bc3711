/* The 2026-07-28 wire beside the 2025 one. A request whose params._meta
 * names a protocolVersion is served statelessly: no initialize, its own
 * envelope (envelope.h) says everything, results carry resultType and
 * cacheable ones ttlMs and cacheScope. Anything else keeps the 2025 rules
 * (initialize, sessions).
 *
 * Checked in the revision's order before any method runs: the envelope's
 * form (-32602), the transport's headers against the body (-32020, HTTP
 * only), the version (-32022), the method (-32601: initialize, ping,
 * logging/setLevel and resources/(un)subscribe are gone on this wire). */
#ifndef MCPSBX_MCP_MODERN_H
#define MCPSBX_MCP_MODERN_H

#include <json-c/json.h>
#include <stdbool.h>

#include "mcp/envelope.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "mcp/reply.h"
#include "mcp/session.h"

/* What discover and list results let a client cache, in ms: the tool
 * list, prompts and templates are fixed for the daemon's life; a restart
 * may change them, so not for long. */
#define MODERN_LIST_TTL_MS 300000

/* Whether msg (one message) claims the 2026-07-28 wire: a request or
 * notification whose params._meta names a protocol version. */
bool modern_claims(json_object *msg);

/* The error response (with m's id) that answers a modern request's
 * envelope, headers or version, or NULL when they are fine (the method is
 * the caller's to check); env is filled either way. h is the transport's
 * headers (NULL on stdio: none to check). */
json_object *modern_refusal(const struct jsonrpc_msg *m, const struct mcp_wire_headers *h,
                            struct envelope *env);

/* server/discover */
void modern_discover(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);

#endif
