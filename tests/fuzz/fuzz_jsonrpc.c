/* libFuzzer harness for JSON-RPC framing: untrusted bytes from stdin or an
 * HTTP body go through jsonrpc_parse, then jsonrpc_classify on the object
 * or on each element of a batch, and a single message through the
 * 2026-07-28 wire's checks (its _meta envelope, the headers, the version).
 *
 * Beyond "no crash, no leak", it checks what the callers rely on: a failed
 * parse always has a message, classify fills the fields its kind promises,
 * and every reply the daemon would build from a message (an error naming
 * the method, echoing the id) serializes to one line of valid UTF-8 JSON
 * that parses again; and the cost estimate made before parsing is never
 * less than the cost model of what was parsed (every value, object, array
 * and string with its bytes), so the budget bounds json-c's memory.
 *
 * Build and run: scripts/fuzz.sh build; build/fuzz/fuzz_jsonrpc CORPUS...
 * Replay one input: build/fuzz/fuzz_jsonrpc FILE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "mcp/envelope.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"

/* A reply must be one line of valid UTF-8 JSON that the parser accepts. */
static void check_reply(json_object *reply)
{
    size_t len = 0;
    const char *s = jsonrpc_serialize(reply, &len);
    CHECK(s != NULL);
    CHECK(memchr(s, '\n', len) == NULL);
    CHECK(util_utf8_valid(s, len));
    json_object *again = NULL;
    struct err err = ERR_INIT;
    if (jsonrpc_parse(s, len, JSONRPC_PARSE_BUDGET(len), &again, &err) < 0) {
        fprintf(stderr, "reply does not parse again (%s): %.*s\n", err_msg(&err), (int)len, s);
        abort();
    }
    json_object_put(again);
}

/* The cost model of a parsed value: what jsonrpc_parse_cost must cover. */
static size_t model_cost(json_object *v)
{
    size_t cost = JSONRPC_COST_SCALAR;
    switch (json_object_get_type(v)) {
    case json_type_object: {
        cost += JSONRPC_COST_OBJECT;
        json_object_object_foreach(v, key, val)
        {
            cost += JSONRPC_COST_STRING + strlen(key) + model_cost(val);
        }
        break;
    }
    case json_type_array:
        cost += JSONRPC_COST_ARRAY;
        for (size_t i = 0; i < json_object_array_length(v); i++)
            cost += model_cost(json_object_array_get_idx(v, i));
        break;
    case json_type_string:
        cost += JSONRPC_COST_STRING + (size_t)json_object_get_string_len(v);
        break;
    case json_type_double:
        /* json-c keeps the number's text as written. */
        cost += strlen(json_object_get_string(v));
        break;
    case json_type_null:
    case json_type_boolean:
    case json_type_int:
        break;
    }
    return cost;
}

static void classify_one(json_object *msg)
{
    struct jsonrpc_msg m;
    jsonrpc_classify(msg, &m);
    switch (m.kind) {
    case JSONRPC_REQUEST:
        CHECK(m.method != NULL);
        CHECK(jsonrpc_valid_id(m.id));
        CHECK(m.invalid_reason == NULL);
        break;
    case JSONRPC_NOTIFICATION:
        CHECK(m.method != NULL);
        CHECK(m.id == NULL);
        CHECK(m.invalid_reason == NULL);
        break;
    case JSONRPC_RESPONSE:
        CHECK(m.method == NULL);
        break;
    case JSONRPC_INVALID:
        CHECK(m.invalid_reason != NULL);
        CHECK(m.method == NULL);
        break;
    default:
        CHECK(!"unknown kind");
    }
    CHECK(m.id == NULL || jsonrpc_valid_id(m.id));
    if (m.params)
        CHECK(json_object_is_type(m.params, json_type_object) ||
              json_object_is_type(m.params, json_type_array));

    /* What the server answers: an error that names the method (it came from
     * the client and may hold any escaped text, lone surrogates included),
     * or a result echoing the id. */
    json_object *reply;
    if (m.kind == JSONRPC_INVALID) {
        reply = jsonrpc_error(m.id, JSONRPC_INVALID_REQUEST, m.invalid_reason, NULL);
    } else if (m.method) {
        char *text = xasprintf("Method not found: %.*s", util_utf8_prefix(m.method, 128), m.method);
        reply = jsonrpc_error(m.id, JSONRPC_METHOD_NOT_FOUND, text,
                              m.params ? json_object_get(m.params) : NULL);
        free(text);
    } else {
        reply = jsonrpc_result(m.id, NULL);
    }
    check_reply(reply);
    json_object_put(reply);
}

/* The modern wire's refusal of a message, with no headers (stdio) and
 * with headers taken from the message itself (string members "h_version",
 * "h_method", "h_name" when present): only the revision's codes, echoing
 * the id, and a reply that serializes cleanly. */
static void modern_one(json_object *msg)
{
    if (!mcp_message_is_modern(msg))
        return;
    json_object *v = NULL;
    struct mcp_wire_headers h = {0};
    if (json_object_object_get_ex(msg, "h_version", &v) && json_object_is_type(v, json_type_string))
        h.protocol_version = json_object_get_string(v);
    if (json_object_object_get_ex(msg, "h_method", &v) && json_object_is_type(v, json_type_string))
        h.method = json_object_get_string(v);
    if (json_object_object_get_ex(msg, "h_name", &v) && json_object_is_type(v, json_type_string))
        h.name = json_object_get_string(v);
    for (int with_headers = 0; with_headers < 2; with_headers++) {
        json_object *e = mcp_modern_refusal(msg, with_headers ? &h : NULL);
        if (!e)
            continue;
        json_object *err = NULL;
        json_object *code = NULL;
        CHECK(json_object_object_get_ex(e, "error", &err));
        CHECK(json_object_object_get_ex(err, "code", &code));
        int c = json_object_get_int(code);
        CHECK(c == JSONRPC_INVALID_PARAMS || c == JSONRPC_METHOD_NOT_FOUND ||
              c == ENVELOPE_ERR_UNSUPPORTED_VERSION ||
              (with_headers && c == ENVELOPE_ERR_HEADER_MISMATCH));
        check_reply(e);
        json_object_put(e);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_object *obj = NULL;
    struct err err = ERR_INIT;
    if (jsonrpc_parse((const char *)data, size, (size_t)-1, &obj, &err) < 0) {
        CHECK(obj == NULL);
        CHECK(err.msg != NULL && err.code != ERR_OK);
        /* The message goes back to the client in a -32700 error. */
        json_object *reply = jsonrpc_error(NULL, JSONRPC_PARSE_ERROR, err_msg(&err), NULL);
        check_reply(reply);
        json_object_put(reply);
        err_clear(&err);
        return 0;
    }
    CHECK(err.msg == NULL);
    size_t cost = jsonrpc_parse_cost((const char *)data, size);
    if (cost < model_cost(obj)) {
        fprintf(stderr, "estimate %zu is below the model's %zu\n", cost, model_cost(obj));
        abort();
    }
    /* One byte less budget: refused before json-c, with the reason. */
    json_object *refused = NULL;
    CHECK(jsonrpc_parse((const char *)data, size, cost - 1, &refused, &err) < 0);
    CHECK(refused == NULL && err.code == ERR_TOO_BIG);
    err_clear(&err);
    if (json_object_is_type(obj, json_type_array)) {
        size_t n = json_object_array_length(obj);
        for (size_t i = 0; i < n; i++)
            classify_one(json_object_array_get_idx(obj, i));
    } else {
        classify_one(obj);
        modern_one(obj);
    }
    json_object_put(obj);
    return 0;
}
