#include "mcp/jsonrpc.h"

#include <json-c/printbuf.h>
#include <string.h>

#include "base/json.h"

size_t jsonrpc_parse_cost(const char *data, size_t len)
{
    size_t cost = JSONRPC_COST_SCALAR; /* the top-level value */
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)data[i];
        if (in_string) {
            if (c == '\\') {
                i++; /* an escape stands for at least one byte */
                cost++;
            } else if (c == '"')
                in_string = false;
            else
                cost++;
            continue;
        }
        switch (c) {
        case '"':
            in_string = true;
            cost += JSONRPC_COST_STRING;
            break;
        case '{':
            cost += JSONRPC_COST_OBJECT;
            break;
        case '[':
            cost += JSONRPC_COST_ARRAY + JSONRPC_COST_SCALAR;
            break;
        case ',':
        case ':':
            cost += JSONRPC_COST_SCALAR;
            break;
        default:
            cost++; /* json-c keeps a double's own text */
            break;
        }
    }
    return cost;
}

int jsonrpc_parse(const char *data, size_t len, size_t budget, json_object **out, struct err *err)
{
    *out = NULL;
    if (len > (size_t)INT32_MAX)
        return err_set(err, ERR_TOO_BIG, "message too large");
    size_t cost = jsonrpc_parse_cost(data, len);
    if (cost > budget)
        return err_set(err, ERR_TOO_BIG,
                       "Invalid Request: the message holds too many JSON values (parsing it "
                       "would take about %zu KiB, more than %zu KiB)",
                       cost >> 10, budget >> 10);
    if (!util_utf8_valid(data, len))
        return err_set(err, ERR_PROTOCOL, "Parse error: message is not valid UTF-8");
    struct json_exact why;
    if (json_parse_exact(data, len, JSONRPC_MAX_DEPTH, JSON_TOKENER_STRICT, out, &why) == 0)
        return 0;
    switch (why.status) {
    case JSON_EXACT_INCOMPLETE:
        return err_set(err, ERR_PROTOCOL, "Parse error: incomplete JSON");
    case JSON_EXACT_TRAILING:
        return err_set(err, ERR_PROTOCOL, "Parse error: trailing data after JSON value");
    case JSON_EXACT_NOMEM:
        return err_set(err, ERR_INTERNAL, "out of memory");
    case JSON_EXACT_OK:
    case JSON_EXACT_SYNTAX:
        break;
    }
    return err_set(err, ERR_PROTOCOL, "Parse error: %s at offset %zu", why.why, why.offset);
}

int jsonrpc_valid_id(json_object *id)
{
    return id &&
           (json_object_is_type(id, json_type_string) || json_object_is_type(id, json_type_int));
}

void jsonrpc_classify(json_object *msg, struct jsonrpc_msg *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = JSONRPC_INVALID;
    if (!json_object_is_type(msg, json_type_object)) {
        out->invalid_reason = "Invalid Request: a message must be a JSON object";
        return;
    }
    json_object *id = NULL;
    int has_id = json_object_object_get_ex(msg, "id", &id);
    if (has_id && jsonrpc_valid_id(id))
        out->id = id;

    json_object *ver = NULL;
    if (!json_object_object_get_ex(msg, "jsonrpc", &ver) ||
        !json_object_is_type(ver, json_type_string) ||
        strcmp(json_object_get_string(ver), "2.0") != 0) {
        out->invalid_reason = "Invalid Request: \"jsonrpc\" must be \"2.0\"";
        return;
    }
    json_object *method = NULL;
    if (json_object_object_get_ex(msg, "method", &method)) {
        if (!json_object_is_type(method, json_type_string)) {
            out->invalid_reason = "Invalid Request: \"method\" must be a string";
            return;
        }
        if (has_id && !jsonrpc_valid_id(id)) {
            out->invalid_reason = "Invalid Request: \"id\" must be a string or an integer";
            return;
        }
        json_object *params = NULL;
        if (json_object_object_get_ex(msg, "params", &params) && params &&
            !json_object_is_type(params, json_type_object) &&
            !json_object_is_type(params, json_type_array)) {
            out->invalid_reason = "Invalid Request: \"params\" must be an object or an array";
            return;
        }
        out->method = json_object_get_string(method);
        out->params = params;
        out->kind = has_id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
        return;
    }
    json_object *tmp = NULL;
    int has_result = json_object_object_get_ex(msg, "result", &tmp);
    int has_error = json_object_object_get_ex(msg, "error", &tmp);
    if (has_id && (has_result ^ has_error)) {
        out->kind = JSONRPC_RESPONSE;
        return;
    }
    out->invalid_reason = "Invalid Request: missing \"method\"";
}

json_object *jsonrpc_result(json_object *id, json_object *result)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(o, "id", id ? json_object_get(id) : NULL);
    json_object_object_add(o, "result", result ? result : json_object_new_object());
    return o;
}

json_object *jsonrpc_error(json_object *id, int code, const char *message, json_object *data)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(o, "id", id ? json_object_get(id) : NULL);
    json_object *e = json_object_new_object();
    json_object_object_add(e, "code", json_object_new_int(code));
    json_object_object_add(e, "message", json_object_new_string(message));
    if (data)
        json_object_object_add(e, "data", data);
    json_object_object_add(o, "error", e);
    return o;
}

json_object *jsonrpc_notification(const char *method, json_object *params)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(o, "method", json_object_new_string(method));
    if (params)
        json_object_object_add(o, "params", params);
    return o;
}

const char *jsonrpc_serialize(json_object *obj, size_t *len)
{
    size_t n = 0;
    const char *s = json_object_to_json_string_length(
        obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
    if (len)
        *len = n;
    return s;
}

void jsonrpc_id_copy(struct jsonrpc_id *out, json_object *id)
{
    memset(out, 0, sizeof(*out));
    if (json_object_is_type(id, json_type_int)) {
        out->kind = JSONRPC_ID_INT;
        out->num = json_object_get_int64(id);
    } else if (json_object_is_type(id, json_type_string)) {
        out->kind = JSONRPC_ID_STRING;
        out->str = xstrndup(json_object_get_string(id), (size_t)json_object_get_string_len(id));
    }
}

json_object *jsonrpc_id_json(const struct jsonrpc_id *id)
{
    switch (id->kind) {
    case JSONRPC_ID_INT:
        return json_object_new_int64(id->num);
    case JSONRPC_ID_STRING:
        return json_object_new_string(id->str);
    case JSONRPC_ID_NONE:
        break;
    }
    return NULL;
}

bool jsonrpc_id_equal(const struct jsonrpc_id *id, json_object *other)
{
    switch (id->kind) {
    case JSONRPC_ID_INT:
        return json_object_is_type(other, json_type_int) && json_object_get_int64(other) == id->num;
    case JSONRPC_ID_STRING:
        return json_object_is_type(other, json_type_string) &&
               strcmp(json_object_get_string(other), id->str) == 0;
    case JSONRPC_ID_NONE:
        break;
    }
    return false;
}

void jsonrpc_id_clear(struct jsonrpc_id *id)
{
    free(id->str);
    memset(id, 0, sizeof(*id));
}

struct spliced {
    const char *json;
    size_t len;
};

static int splice_text(json_object *jso, struct printbuf *pb, int level, int flags)
{
    (void)level;
    (void)flags;
    const struct spliced *t = json_object_get_userdata(jso);
    return printbuf_memappend(pb, t->json, (int)t->len);
}

static void splice_free(json_object *jso, void *userdata)
{
    (void)jso;
    free(userdata);
}

json_object *jsonrpc_spliced(const char *json, size_t len)
{
    struct spliced *t = xmalloc(sizeof(*t));
    t->json = json;
    t->len = len;
    json_object *o = json_object_new_object();
    json_object_set_serializer(o, splice_text, t, splice_free);
    return o;
}
