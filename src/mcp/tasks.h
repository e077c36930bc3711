/* Tasks (the 2026-07-28 extension io.modelcontextprotocol/tasks, and the
 * experimental tasks of 2025-11-25): a tools/call that runs code, from a
 * client that declared the extension (or, on 2025-11-25, asked with
 * params.task), answers at once with a task handle; the run goes on whether or not the
 * client stays, and tasks/get polls it (its live output while it works,
 * the whole result once it completed), tasks/cancel stops it (its
 * container is killed).
 *
 * A task's run is a call like any other, on a stateless session the store
 * keeps for the caller's principal (so it outlives the request that
 * started it), answering on the task's own channel instead of the
 * client's: that channel keeps the tail of the output and, at the end,
 * puts the result into the run store (mcp-sandboxd://tasks/<id>), where
 * it is kept for --task-result-ttl-ms and counted in the run store's byte
 * budget like a returned file. A task is its principal's only: another
 * caller naming its id learns nothing of it (-32602, as for an id that
 * never was). Only plain C data lives here; answers are built on the
 * thread that asks. */
#ifndef MCPSBX_MCP_TASKS_H
#define MCPSBX_MCP_TASKS_H

#include "base/handle.h"
#include "mcp/jsonrpc.h"
#include "mcp/reply.h"
#include "mcp/session.h"

/* Tasks the store keeps at once (working or with a result still kept): a
 * call past it runs as a plain call instead. */
#define TASKS_MAX 1024
/* The tail of a working task's output that tasks/get shows. */
#define TASKS_OUTPUT_TAIL (8u * 1024u)
/* How often a client should poll, as told in every task. */
#define TASKS_POLL_MS 1000
/* Room for a task id, a handle (base/handle.h), and a NUL. */
#define TASKS_ID_CAP (HANDLE_MAX + 1)

struct tasks;
struct call;

/* NULL when there is no run store to keep results in (no tasks then). */
struct tasks *tasks_new(struct mcp_server *srv);
/* Cancels every working task and waits for their runs. */
void tasks_free(struct tasks *ts);

/* Whether the server offers tasks (discover's capabilities say so). */
bool tasks_offered(const struct mcp_server *srv);

/* Makes a task for a call on *session: a stateless session's call moves
 * to its principal's task session (*session becomes that), a 2025
 * session's stays in it (its tasks end with it, as that revision scopes
 * them). *ch is the channel the call answers on (one reference, the
 * call's), id the task's id (the call's request id, for cancelling).
 * NULL when the store is full. */
struct task *tasks_begin(struct tasks *ts, struct mcp_session **session, struct mcp_channel **ch,
                         char id[TASKS_ID_CAP]);

/* The answer to the tools/call that began t: the 2026-07-28 extension's
 * flat CreateTaskResult (modern) or 2025-11-25's {task: {...}}. */
json_object *tasks_created_json(struct task *t, bool modern);

/* tasks/get, tasks/cancel (both wires), tasks/update (2026-07-28),
 * tasks/result and tasks/list (2025-11-25 only: the extension removed
 * them). tasks/result answers once the task has ended. */
void tasks_get(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);
void tasks_update(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);
void tasks_cancel(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);
void tasks_result(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);
void tasks_list(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);

#endif
