/* tools/call: a call is checked and copied into plain C data on the thread
 * that received it, waits in the admission queue, runs on a worker, and
 * streams the program's output as progress and log notifications while it
 * runs (coalesced). Cancelling withdraws a queued call or stops a running
 * one; a cancelled call gets no response. A tool that runs nothing
 * (list_languages) is answered on the receiving thread instead, or on the
 * aside thread when its answer may wait (aside.h). */
#ifndef MCPSBX_MCP_CALLS_H
#define MCPSBX_MCP_CALLS_H

#include "mcp/jsonrpc.h"
#include "mcp/reply.h"
#include "mcp/session.h"

void calls_tools_call(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);

/* notifications/cancelled */
void calls_cancel_request(struct mcp_session *s, const struct jsonrpc_msg *m);

/* Cancels s's calls whose request id is rid (borrowed). */
void calls_cancel_id(struct mcp_session *s, json_object *rid);

/* Marks the session closing and cancels all its calls; the caller then
 * waits for s->inflight to reach 0. */
void calls_cancel_all(struct mcp_session *s);

#endif
