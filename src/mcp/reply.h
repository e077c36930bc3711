/* Replies: every message gets exactly one reply slot, filled by whichever
 * thread answers it (a tools/call answers from a worker). A batch's slots
 * are sent together, as one array, once the last is filled. */
#ifndef MCPSBX_MCP_REPLY_H
#define MCPSBX_MCP_REPLY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"

struct batch;

struct envelope;

struct reply {
    struct mcp_channel *ch; /* one reference held while the slot is open */
    struct batch *batch;    /* NULL for a single message */
    size_t index;
    /* On the 2026-07-28 wire a result carries resultType, and a cacheable
     * one (reply_cacheable) ttlMs and cacheScope. */
    bool modern;
    bool cacheable;
    bool cache_private;
    long long cache_ttl_ms;
    /* The request's envelope on the modern wire (NULL otherwise): valid
     * on the receiving thread until the method returns; a method that
     * answers later copies what it needs. */
    const struct envelope *env;
};

/* Marks the result r will carry as cacheable for ttl_ms, by any client
 * (public) or only this one (private); nothing on the 2025 wire. */
void reply_cacheable(struct reply *r, long long ttl_ms, bool private_scope);

/* Sends msg (borrowed) on ch now, outside any slot: notifications, and
 * answers to what has no slot (a message refused before it is read). */
void reply_send(struct mcp_channel *ch, json_object *msg);

/* Fills the slot with resp (taken; NULL means no response) and releases it. */
void reply_done(struct reply *r, json_object *resp);
void reply_result(struct reply *r, json_object *id, json_object *result);
/* The same for a call answered after its message was freed: its id as
 * the call kept it. */
void reply_result_for(struct reply *r, const struct jsonrpc_id *id, json_object *result);
/* The same with the result already serialized: result[0..len) is spliced
 * into the response as it is (built-in JSON, serialized once). */
void reply_result_raw(struct reply *r, json_object *id, const char *result, size_t len);
void reply_error(struct reply *r, json_object *id, int code, const char *message);

/* A batch of n slots answering on ch (takes a reference to it), whose
 * answers together stay under max_bytes. */
struct batch *reply_batch_new(struct mcp_channel *ch, size_t n, size_t max_bytes);

/* Slot i of batch b. */
struct reply reply_batch_slot(struct batch *b, size_t i);

#endif
