#include "mcp/modern.h"

#include <string.h>

#include "base/buf.h"
#include "base/codec.h"
#include "base/util.h"

/* An Mcp-Name header as decoded for comparing: a tool or prompt name or a
 * resource URI, and the URI is bounded by the message cap only; longer
 * than this is not a name anyone sends in a header. */
#define MODERN_NAME_MAX 8192

bool modern_claims(json_object *msg)
{
    json_object *params = NULL;
    json_object *meta = NULL;
    return json_object_is_type(msg, json_type_object) &&
           json_object_object_get_ex(msg, "params", &params) &&
           json_object_is_type(params, json_type_object) &&
           json_object_object_get_ex(params, "_meta", &meta) &&
           json_object_is_type(meta, json_type_object) &&
           json_object_object_get_ex(meta, ENVELOPE_KEY_VERSION, NULL);
}

static json_object *refuse(const struct jsonrpc_msg *m, int code, const char *msg,
                           json_object *data)
{
    return jsonrpc_error(m->id, code, msg, data);
}

/* The body value Mcp-Name must equal for m's method, or NULL when the
 * method names nothing (*named false) or the body lacks it. */
static const char *named_by_body(const struct jsonrpc_msg *m, bool *named)
{
    const char *key = strcmp(m->method, "tools/call") == 0       ? "name"
                      : strcmp(m->method, "prompts/get") == 0    ? "name"
                      : strcmp(m->method, "resources/read") == 0 ? "uri"
                      : strcmp(m->method, "tasks/get") == 0      ? "taskId"
                      : strcmp(m->method, "tasks/update") == 0   ? "taskId"
                      : strcmp(m->method, "tasks/cancel") == 0   ? "taskId"
                                                                 : NULL;
    *named = key != NULL;
    json_object *v = NULL;
    if (!key || !json_object_is_type(m->params, json_type_object) ||
        !json_object_object_get_ex(m->params, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* header[0..*n) without the spaces and tabs around it, which are not
 * part of a field's value (RFC 9110 5.5). */
static const char *trimmed(const char *header, size_t *n)
{
    size_t len = strlen(header);
    while (len && (*header == ' ' || *header == '\t')) {
        header++;
        len--;
    }
    while (len && (header[len - 1] == ' ' || header[len - 1] == '\t'))
        len--;
    *n = len;
    return header;
}

static bool header_is(const char *header, const char *body)
{
    size_t n = 0;
    const char *v = trimmed(header, &n);
    return n == strlen(body) && memcmp(v, body, n) == 0;
}

/* Whether header (as sent: plain, or "=?base64?...?=" for what is not
 * header-safe) says the same as body. */
static bool name_matches(const char *value, const char *body)
{
    static const char pre[] = "=?base64?";
    static const char post[] = "?=";
    size_t n = 0;
    const char *header = trimmed(value, &n);
    if (n < sizeof(pre) - 1 + sizeof(post) - 1 || strncmp(header, pre, sizeof(pre) - 1) != 0 ||
        memcmp(header + n - (sizeof(post) - 1), post, sizeof(post) - 1) != 0)
        return n == strlen(body) && memcmp(header, body, n) == 0;
    struct buf raw;
    buf_init(&raw, MODERN_NAME_MAX);
    const char *b64 = header + sizeof(pre) - 1;
    size_t b64_len = n - (sizeof(pre) - 1) - (sizeof(post) - 1);
    bool same = codec_base64_decode(b64, b64_len, &raw) >= 0 && raw.len == strlen(body) &&
                memcmp(raw.data ? raw.data : "", body, raw.len) == 0;
    buf_free(&raw);
    return same;
}

static json_object *header_refusal(const struct jsonrpc_msg *m, const struct mcp_wire_headers *h,
                                   const struct envelope *env)
{
    if (!h->protocol_version || !header_is(h->protocol_version, env->version))
        return refuse(m, ENVELOPE_ERR_HEADER_MISMATCH,
                      h->protocol_version ? "Header mismatch: MCP-Protocol-Version differs from "
                                            "_meta's " ENVELOPE_KEY_VERSION
                                          : "Header mismatch: MCP-Protocol-Version is required",
                      NULL);
    if (!h->method || !header_is(h->method, m->method))
        return refuse(m, ENVELOPE_ERR_HEADER_MISMATCH,
                      h->method ? "Header mismatch: Mcp-Method differs from the method"
                                : "Header mismatch: Mcp-Method is required",
                      NULL);
    bool named = false;
    const char *body = named_by_body(m, &named);
    if (named && body && !h->name)
        return refuse(m, ENVELOPE_ERR_HEADER_MISMATCH,
                      "Header mismatch: Mcp-Name is required for this method", NULL);
    if (named && h->name && (!body || !name_matches(h->name, body)))
        return refuse(m, ENVELOPE_ERR_HEADER_MISMATCH,
                      "Header mismatch: Mcp-Name differs from the request's name or uri", NULL);
    return NULL;
}

json_object *modern_refusal(const struct jsonrpc_msg *m, const struct mcp_wire_headers *h,
                            struct envelope *env)
{
    struct envelope_error e;
    if (envelope_read(m->params, env, &e) < 0)
        return refuse(m, e.code, e.msg, NULL);
    if (h) {
        json_object *bad = header_refusal(m, h, env);
        if (bad)
            return bad;
    }
    if (strcmp(env->version, MCP_MODERN_VERSION) != 0) {
        json_object *data = json_object_new_object();
        json_object *supported = json_object_new_array();
        json_object_array_add(supported, json_object_new_string(MCP_MODERN_VERSION));
        json_object_object_add(data, "supported", supported);
        json_object_object_add(data, "requested", json_object_new_string(env->version));
        char *msg = xasprintf("Unsupported protocol version %s on this wire (supported: %s; "
                              "initialize negotiates %s)",
                              env->version, MCP_MODERN_VERSION, mcp_versions_text());
        json_object *out = refuse(m, ENVELOPE_ERR_UNSUPPORTED_VERSION, msg, data);
        free(msg);
        return out;
    }
    return NULL;
}

void modern_discover(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    json_object *res = json_object_new_object();
    json_object *versions = json_object_new_array();
    json_object_array_add(versions, json_object_new_string(MCP_MODERN_VERSION));
    json_object_object_add(res, "supportedVersions", versions);
    json_object_object_add(res, "capabilities", session_capabilities(s->srv, true, MCP_V_LATEST));
    json_object_object_add(res, "instructions", json_object_new_string(mcp_instructions));
    json_object *meta = json_object_new_object();
    json_object_object_add(meta, "io.modelcontextprotocol/serverInfo",
                           session_server_info(MCP_V_LATEST));
    json_object_object_add(res, "_meta", meta);
    reply_cacheable(r, MODERN_LIST_TTL_MS, false);
    reply_result(r, m->id, res);
}
