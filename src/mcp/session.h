/* What the mcp folder's files share: the server and session state, and
 * what a negotiated version and logging level mean. A session's fields are
 * guarded by its lock; the server is read-only once made. */
#ifndef MCPSBX_MCP_SESSION_H
#define MCPSBX_MCP_SESSION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "base/admission.h"
#include "mcp/mcp.h"
#include "tools/tools.h"

struct mcp_server {
    const struct config *cfg;
    struct tools_env env;
    struct admission *admission; /* run slots and the queue in front of them */
    struct admission *aside;     /* the thread for answers that may wait (aside.h) */
    struct tasks *tasks;         /* NULL: no tasks offered (tasks.h) */
};

struct call;

struct mcp_session {
    struct mcp_server *srv;
    /* Set once at creation: whose files in the run store are this
     * session's (read without the lock). Random for a 2025 session;
     * "s:" and the principal for a stateless one, whose code sessions and
     * files outlive it (mcp.h). */
    char owner[33];
    /* Who the transport says holds it ("stdio", "token:<16 hex>",
     * "anonymous"), set once before its first call: code sessions belong
     * to the owner and the principal together. */
    char principal[MCP_PRINCIPAL_CAP];
    /* Serves only the 2026-07-28 wire (mcp_session_new_stateless). */
    bool stateless;
    /* A 2025 session's stateless companion for the modern requests that
     * come on its stream (stdio), made at the first one when serve_modern. */
    bool serve_modern;
    struct mcp_session *modern;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool initialize_done;
    enum mcp_version version;
    int log_level; /* index into mcp_log_levels, -1 when never set */
    struct call *calls;
    struct call *parked; /* calls waiting for their code session, oldest first */
    atomic_int inflight; /* written under the lock; mcp_session_inflight reads it without */
    bool closing;
    /* Its place in the run queue (the admission pool's, under its lock):
     * sessions are served in turn. */
    struct admission_owner runs;
};

/* RFC 5424 severities, lowest first, as logging/setLevel names them. */
#define MCP_LOG_LEVELS 8
extern const char *const mcp_log_levels[MCP_LOG_LEVELS];

/* What the daemon tells a client at initialize and server/discover. */
extern const char mcp_instructions[];

/* The server's capabilities on the modern wire or at initialize of v;
 * its identity as initialize of v gives it. */
json_object *session_capabilities(const struct mcp_server *srv, bool modern, enum mcp_version v);
json_object *session_server_info(enum mcp_version v);

/* One of s's calls has answered: one fewer in flight, and a close that
 * waits for none in flight (mcp_session_close) looks again. */
void session_call_ended(struct mcp_session *s);

/* Who calls, as the tools see it: s's owner token and principal (both
 * set once at creation, so read without the lock). */
static inline struct tools_caller mcp_caller_of(const struct mcp_session *s)
{
    struct tools_caller who = {.owner = s->owner, .principal = s->principal};
    return who;
}

/* What the negotiated version allows in tool shapes. */
struct tools_features mcp_features_of(enum mcp_version v);

#endif
