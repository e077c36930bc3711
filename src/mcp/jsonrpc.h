/* JSON-RPC 2.0 framing: parse untrusted bytes into a message, classify it,
 * and build responses. Every JSON byte goes through json-c. */
#ifndef MCPSBX_JSONRPC_H
#define MCPSBX_JSONRPC_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

/* The error codes are base/err.h's, where the categories map to them. */
#define JSONRPC_PARSE_ERROR      ERR_JSONRPC_PARSE
#define JSONRPC_INVALID_REQUEST  ERR_JSONRPC_INVALID_REQUEST
#define JSONRPC_METHOD_NOT_FOUND ERR_JSONRPC_METHOD_NOT_FOUND
#define JSONRPC_INVALID_PARAMS   ERR_JSONRPC_INVALID_PARAMS
#define JSONRPC_INTERNAL_ERROR   ERR_JSONRPC_INTERNAL
#define JSONRPC_SERVER_ERROR     ERR_JSONRPC_SERVER

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

/* json-c spends far more memory per value than the value's text takes (an
 * empty object costs about 800 bytes, a number about 100; measured on
 * Debian 12's json-c 0.16), so what a message may cost is estimated from
 * its bytes before json-c sees them. The estimate never undercounts:
 * JSONRPC_COST_* per object, array and scalar (every value after '[', ','
 * or ':' counted as one), plus each string's own bytes and every byte
 * outside strings (json-c keeps a double's text as written). */
#define JSONRPC_COST_OBJECT 832
#define JSONRPC_COST_ARRAY  192
#define JSONRPC_COST_SCALAR 112
#define JSONRPC_COST_STRING 96

/* What parsing one message may cost at most, for messages capped at cap
 * bytes: a message whose estimate is over it is refused unparsed. Text
 * (code, files, strings) costs about its length; a message of a million
 * small values does not pass. */
#define JSONRPC_PARSE_BUDGET(cap) (4 * (size_t)(cap) + ((size_t)1 << 20))

/* The estimate of what json-c would allocate to parse data[0..len). */
size_t jsonrpc_parse_cost(const char *data, size_t len);

/* Parses exactly len bytes holding one JSON value (surrounding whitespace
 * allowed). On failure returns -1 with ERR_PROTOCOL (a -32700) and a
 * message suitable for it; a message whose jsonrpc_parse_cost is over
 * budget is refused unparsed with ERR_TOO_BIG (a -32600): the answer is
 * err_jsonrpc_code's. */
int jsonrpc_parse(const char *data, size_t len, size_t budget, json_object **out, struct err *err);

/* Classifies one message object (not an array). Never fails: malformed
 * messages come back as JSONRPC_INVALID with the id when it was readable. */
void jsonrpc_classify(json_object *msg, struct jsonrpc_msg *out);

/* Builders return new objects (caller owns). id is borrowed (copied by
 * reference count, so it must belong to the calling thread); a NULL id is
 * written as null. result is taken over. */
json_object *jsonrpc_result(json_object *id, json_object *result);
json_object *jsonrpc_error(json_object *id, int code, const char *message, json_object *data);
json_object *jsonrpc_notification(const char *method, json_object *params);

/* Serializes without newlines (one message per line on stdio). The string
 * is owned by obj. */
const char *jsonrpc_serialize(json_object *obj, size_t *len);

/* True when id is a valid JSON-RPC request id: string or integer. */
int jsonrpc_valid_id(json_object *id);

/* A request id (or progress token) as plain C data. json-c objects must
 * never be reachable from two threads, so what a request's answer needs
 * later, on another thread, is copied out of the parsed message. */
struct jsonrpc_id {
    enum { JSONRPC_ID_NONE, JSONRPC_ID_INT, JSONRPC_ID_STRING } kind;
    int64_t num;
    char *str;
};

/* Copies a valid id (borrowed); anything else gives JSONRPC_ID_NONE. */
void jsonrpc_id_copy(struct jsonrpc_id *out, json_object *id);

/* A new json-c object for the id, or NULL (JSON null) for NONE. */
json_object *jsonrpc_id_json(const struct jsonrpc_id *id);

/* True when the parsed id (borrowed) is the same id: same type, same value. */
bool jsonrpc_id_equal(const struct jsonrpc_id *id, json_object *other);

void jsonrpc_id_clear(struct jsonrpc_id *id);

/* A new object that serializes as the given JSON text, verbatim: built-in
 * JSON is serialized once and spliced into replies this way, so no shared
 * json-c object is touched. json is borrowed: valid JSON that outlives the
 * object and is never written to while it lives. */
json_object *jsonrpc_spliced(const char *json, size_t len);

#endif
