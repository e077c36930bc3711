/* Answers that may wait, off the thread that received them. A tool that
 * runs nothing is answered where its request arrived, at once; but
 * list_languages may wait up to LANGUAGES_WAIT_MS for the interpreters'
 * versions while their probe is in flight, and the receiving thread is an
 * HTTP polling thread (serving every connection of its share) or the stdio
 * reader. Such an answer goes to one thread of this module's own, behind
 * a short queue; the call counts as in flight for its session, so closing
 * the session waits for it. */
#ifndef MCPSBX_MCP_ASIDE_H
#define MCPSBX_MCP_ASIDE_H

#include "mcp/jsonrpc.h"
#include "mcp/reply.h"
#include "mcp/session.h"

/* Calls waiting for the aside thread at most; more are answered busy. */
#define ASIDE_MAX_WAITING 64
/* How long one waits at most before it is answered busy. */
#define ASIDE_WAIT_MS 30000.0

/* The aside thread and its queue; NULL with err when it cannot start. */
struct admission *aside_new(struct err *err);

/* Answers tool (answered at once, but may wait) for request m of s on
 * the aside thread; args (may be NULL) are copied as text. Takes r. */
void aside_answer(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r,
                  const char *tool, json_object *args);

#endif
