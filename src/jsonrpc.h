/* JSON-RPC 2.0 framing: parse untrusted bytes into a message, classify it,
 * and build responses. Every JSON byte goes through json-c. */
#ifndef MCPSBX_JSONRPC_H
#define MCPSBX_JSONRPC_H

#include <json-c/json.h>

#include "err.h"

#define JSONRPC_PARSE_ERROR      (-32700)
#define JSONRPC_INVALID_REQUEST  (-32600)
#define JSONRPC_METHOD_NOT_FOUND (-32601)
#define JSONRPC_INVALID_PARAMS   (-32602)
#define JSONRPC_INTERNAL_ERROR   (-32603)

/* Nesting deeper than this is refused before it costs stack or memory. */
#define JSONRPC_MAX_DEPTH 64

enum jsonrpc_kind {
    JSONRPC_REQUEST,
    JSONRPC_NOTIFICATION,
    JSONRPC_RESPONSE,
    JSONRPC_INVALID,
};

struct jsonrpc_msg {
    enum jsonrpc_kind kind;
    json_object *id;            /* borrowed; NULL for notifications or unreadable ids */
    const char *method;         /* borrowed */
    json_object *params;        /* borrowed; may be NULL */
    const char *invalid_reason; /* static text when kind == JSONRPC_INVALID */
};

/* Parses exactly len bytes holding one JSON value (surrounding whitespace
 * allowed). On failure returns -1 with a message suitable for a -32700. */
int jsonrpc_parse(const char *data, size_t len, json_object **out, struct err *err);

/* Classifies one message object (not an array). Never fails: malformed
 * messages come back as JSONRPC_INVALID with the id when it was readable. */
void jsonrpc_classify(json_object *msg, struct jsonrpc_msg *out);

/* Builders return new objects (caller owns). id is borrowed (copied by
 * reference count); a NULL id is written as null. result is taken over. */
json_object *jsonrpc_result(json_object *id, json_object *result);
json_object *jsonrpc_error(json_object *id, int code, const char *message, json_object *data);
json_object *jsonrpc_notification(const char *method, json_object *params);

/* Serializes without newlines (one message per line on stdio). The string
 * is owned by obj. */
const char *jsonrpc_serialize(json_object *obj, size_t *len);

/* True when id is a valid JSON-RPC request id: string or integer. */
int jsonrpc_valid_id(json_object *id);

#endif
