/* The MCP server side of a connection: lifecycle and version negotiation,
 * the method table, and in-flight tool calls. Transports feed it bytes and
 * give it a channel to answer on.
 *
 * The mcp/ folder: mcp.c (this API, initialize, the method table),
 * modern.c (the 2026-07-28 wire's checks, server/discover), envelope.c (its
 * per-request _meta), tasks.c (the tasks extension), calls.c (tools/call: admission, live output,
 * cancellation), reply.c (one reply slot per message, batches),
 * resources.c (resources, prompts, completion), session.c (state the files
 * share; what a version and a log level mean), jsonrpc.c (messages).
 *
 * Threads and json-c: Debian's json-c is built without atomic reference
 * counts, and every object carries its own serialization buffer, so a
 * json-c object must never be reachable from two threads. A message is
 * parsed, dispatched and answered on the thread that received it; a
 * tools/call copies what it needs (id, progress token, arguments) into
 * plain C data before it waits for a run slot, and its worker builds the
 * answer from scratch. Built-in JSON (the tool list) is serialized once
 * and spliced into replies as bytes. Channels carry bytes only. */
#ifndef MCPSBX_MCP_H
#define MCPSBX_MCP_H

#include <stdatomic.h>
#include <stdbool.h>

#include <json-c/json.h>

#include "base/config.h"
#include "base/err.h"

#define MCP_SERVER_NAME "mcp-sandboxd"

/* JSON-RPC error code for resources/read of an unknown URI. */
#define MCP_RESOURCE_NOT_FOUND (-32002)

/* The protocol versions this server speaks, oldest first: the one table
 * the enum, the names initialize negotiates and MCP-Protocol-Version
 * accepts, and the list an error names are made from. */
#define MCP_VERSIONS(X)                                                                            \
    X(MCP_V_2024_11_05, "2024-11-05")                                                              \
    X(MCP_V_2025_03_26, "2025-03-26")                                                              \
    X(MCP_V_2025_06_18, "2025-06-18")                                                              \
    X(MCP_V_2025_11_25, "2025-11-25")

#define MCP_VERSION_ENUM(id, name) id,
enum mcp_version { MCP_VERSIONS(MCP_VERSION_ENUM) MCP_V_COUNT };
#undef MCP_VERSION_ENUM

#define MCP_V_LATEST MCP_V_2025_11_25

/* The stateless revision, served beside the versions above: a request
 * whose params._meta names it needs no initialize (modern.h). It is not
 * one initialize negotiates. */
#define MCP_MODERN_VERSION "2026-07-28"

const char *mcp_version_name(enum mcp_version v);

/* Every supported version's name, oldest first, as "2024-11-05, ...". */
const char *mcp_versions_text(void);

/* Returns the version for a name, or -1 when unsupported. */
int mcp_version_from_name(const char *name);

/* What initialize answers for a requested version: the same when supported,
 * else the latest. */
enum mcp_version mcp_negotiate(const char *requested);

/* Where replies and related notifications go: the stdio stream, or one
 * HTTP request's stream. Reference counted because tool calls answer from
 * their own threads; release runs when the last reference goes. send must
 * be thread-safe; it gets one serialized message without a newline. */
struct mcp_channel {
    int (*send)(struct mcp_channel *ch, const char *json, size_t len);
    void (*release)(struct mcp_channel *ch);
    /* Optional: as send, taking json (malloc'd, len bytes and a NUL), so a
     * channel that keeps a message need not copy it. */
    int (*send_take)(struct mcp_channel *ch, char *json, size_t len);
    atomic_int refs;
};

void mcp_channel_init(struct mcp_channel *ch,
                      int (*send)(struct mcp_channel *, const char *, size_t),
                      void (*release)(struct mcp_channel *));
void mcp_channel_ref(struct mcp_channel *ch);
void mcp_channel_unref(struct mcp_channel *ch);

struct mcp_server;
struct exec_ctx; /* opaque here: handed to the tools */

/* cfg and exec are borrowed. Starts the run workers (--max-concurrent)
 * and their admission queue (--max-queued, --max-session-queued per
 * session, sessions served in turn); NULL with err if it cannot. */
struct mcp_server *mcp_server_new(const struct config *cfg, struct exec_ctx *exec, struct err *err);
void mcp_server_free(struct mcp_server *srv);

/* Whether the sandboxes' backend answers (for health checks); *address
 * says where it is. Any thread. */
int mcp_server_backend_ping(struct mcp_server *srv, const char **address, struct err *err);

struct mcp_session;

/* Room for a principal and its NUL: "token:" and 16 hex digits. */
#define MCP_PRINCIPAL_CAP 24

/* A session for whoever the transport says holds it (principal, copied,
 * cut to MCP_PRINCIPAL_CAP - 1 bytes): "stdio", "token:<16 hex>" (the
 * start of the bearer token's SHA-256) or "anonymous". */
struct mcp_session *mcp_session_new(struct mcp_server *srv, const char *principal);

/* A session for the 2026-07-28 wire only, which remembers nothing between
 * requests: an HTTP transport makes one per request, so closing it when
 * the request's client goes cancels that request's run. What its calls
 * leave behind (code sessions, returned files) belongs to the principal,
 * not to it: closing it ends none of them. With auth on, only the same
 * bearer token reaches them again; without, their unguessable handle
 * (session_id, the file's URI) is what lets a caller in. */
struct mcp_session *mcp_session_new_stateless(struct mcp_server *srv, const char *principal);

/* Lets s's stream carry 2026-07-28 requests beside its 2025 ones (stdio):
 * each is served statelessly, in a companion session s owns; without
 * this, a message is read by the 2025 rules whatever its _meta says. */
void mcp_session_serve_modern(struct mcp_session *s);

/* A transport's headers for the 2026-07-28 wire's checks (NULL where
 * absent): MCP-Protocol-Version, Mcp-Method, Mcp-Name. */
struct mcp_wire_headers {
    const char *protocol_version;
    const char *method;
    const char *name;
};

/* Whether msg is one message claiming the 2026-07-28 wire (its params._meta
 * names a protocol version); a transport then hands it to a stateless
 * session. */
bool mcp_message_is_modern(json_object *msg);

/* For a message mcp_message_is_modern: the error response (taken by the
 * caller) that answers it before any method runs, in the revision's
 * order (envelope -32602, headers -32020, version -32022, method -32601,
 * the client capabilities the method needs -32021), or NULL when it may
 * be dispatched. On HTTP, -32601 is sent with 404 and
 * the others with 400. */
json_object *mcp_modern_refusal(json_object *msg, const struct mcp_wire_headers *h);

/* Parses and dispatches one message (or batch) of len bytes. Replies go to
 * ch, possibly later from another thread. */
void mcp_session_receive(struct mcp_session *s, const char *data, size_t len,
                         struct mcp_channel *ch);

/* Dispatches an already parsed message or batch (borrowed). */
void mcp_session_receive_json(struct mcp_session *s, json_object *msg, struct mcp_channel *ch);

/* True once initialize has been answered. */
bool mcp_session_initialized(struct mcp_session *s);

/* Answers a message that could not even be read (e.g. over the size cap)
 * with a JSON-RPC error with a null id. */
void mcp_session_reject(struct mcp_session *s, int code, const char *message,
                        struct mcp_channel *ch);

/* Cancels every in-flight call (no responses are sent for them) and waits
 * until they have all returned. */
void mcp_session_close(struct mcp_session *s);

/* Closes if needed, then frees. */
void mcp_session_free(struct mcp_session *s);

/* Number of tool calls in flight. */
int mcp_session_inflight(struct mcp_session *s);

#endif
