#include "mcp/resources.h"

#include <string.h>

#include "base/codec.h"
#include "base/handle.h"
#include "base/json.h"
#include "base/util.h"
#include "mcp/modern.h"
#include "tools/environment.h"

#define ENVIRONMENT_URI "mcp-sandboxd://environment"

/* params.key as a string in *out; when it is missing or not a string,
 * answers m with "Invalid params: key is required" and returns false. */
static bool required_string(const struct jsonrpc_msg *m, struct reply *r, const char *key,
                            const char **out)
{
    const char *text = json_object_is_type(m->params, json_type_object)
                           ? json_get_string(m->params, key, NULL)
                           : NULL;
    if (!text) {
        char *msg = xasprintf("Invalid params: %s is required", key);
        reply_error(r, m->id, JSONRPC_INVALID_PARAMS, msg);
        free(msg);
        return false;
    }
    *out = text;
    return true;
}

void resources_list(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    (void)s;
    json_object *res = json_object_new_object();
    json_object *list = json_object_new_array();
    json_object *e = json_object_new_object();
    json_object_object_add(e, "uri", json_object_new_string(ENVIRONMENT_URI));
    json_object_object_add(e, "name", json_object_new_string("environment"));
    json_object_object_add(e, "description",
                           json_object_new_string("Languages, images and limits of the sandboxes"));
    json_object_object_add(e, "mimeType", json_object_new_string("application/json"));
    json_object_array_add(list, e);
    json_object_object_add(res, "resources", list);
    reply_cacheable(r, MODERN_LIST_TTL_MS, false);
    reply_result(r, m->id, res);
}

void resources_templates_list(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    (void)s;
    json_object *res = json_object_new_object();
    json_object *list = json_object_new_array();
    json_object *t = json_object_new_object();
    json_object_object_add(
        t, "uriTemplate", json_object_new_string(FILES_RESULT_URI_PREFIX "{run_id}/files/{+path}"));
    json_object_object_add(t, "name", json_object_new_string("run-file"));
    json_object_object_add(
        t, "description",
        json_object_new_string("A file a run of this session returned (outputs/ or "
                               "output_files), for --run-store-ttl-ms after the run; plots are "
                               "at .../plots/plot-<n>.png. The run's result gives each URI."));
    json_object_array_add(list, t);
    json_object_object_add(res, "resourceTemplates", list);
    reply_cacheable(r, MODERN_LIST_TTL_MS, false);
    reply_result(r, m->id, res);
}

/* Resource not found: the 2025 wire's own code, or on the modern wire
 * Invalid params naming the URI (the revision retired -32002). */
static void not_found(const struct jsonrpc_msg *m, struct reply *r, const char *uri,
                      const char *msg)
{
    if (!r->modern) {
        reply_done(r, jsonrpc_error(m->id, MCP_RESOURCE_NOT_FOUND, msg, NULL));
        return;
    }
    json_object *data = json_object_new_object();
    json_object_object_add(data, "uri", json_object_new_string(uri));
    reply_done(r, jsonrpc_error(m->id, JSONRPC_INVALID_PARAMS, msg, data));
}

/* The daemon a run-store URI names when that is not this one (its run id
 * is a handle: base/handle.h); false otherwise. */
static bool held_elsewhere(const char *uri, char daemon[HANDLE_DAEMON_MAX + 1])
{
    const char *id = uri + strlen(FILES_RESULT_URI_PREFIX);
    const char *end = strchr(id, '/');
    char h[HANDLE_MAX + 1];
    if (!end || (size_t)(end - id) > HANDLE_MAX)
        return false;
    memcpy(h, id, (size_t)(end - id));
    h[end - id] = '\0';
    return handle_parse(h, daemon) == HANDLE_OTHER;
}

/* A returned file, to the session that ran it only (on the modern wire,
 * to its principal: mcp.h). */
static void read_run_file(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r,
                          const char *uri)
{
    char *mime = NULL;
    char *data = NULL;
    size_t size = 0;
    if (!s->srv->env.store ||
        runstore_get(s->srv->env.store, s->owner, uri, &mime, &data, &size) < 0) {
        char daemon[HANDLE_DAEMON_MAX + 1];
        if (held_elsewhere(uri, daemon)) {
            char *msg = xasprintf("Resource not found here: it is held by daemon \"%s\" (this is "
                                  "\"%s\")",
                                  daemon, handle_daemon());
            not_found(m, r, uri, msg);
            free(msg);
            return;
        }
        char *msg = xasprintf("Resource not found: a run's files are readable by the session "
                              "that ran it, for %lld s (--run-store-ttl-ms), while the store "
                              "has room",
                              s->srv->cfg->run_store_ttl_ms / 1000);
        not_found(m, r, uri, msg);
        free(msg);
        return;
    }
    json_object *c = json_object_new_object();
    json_object_object_add(c, "uri", json_object_new_string(uri));
    json_object_object_add(c, "mimeType", json_object_new_string(mime));
    bool text = !memchr(data, '\0', size) && util_utf8_valid(data, size) &&
                strcmp(mime, "application/octet-stream") != 0 && strncmp(mime, "image/", 6) != 0;
    struct buf b64;
    /* The file's own base64 length (the run store caps the file). */
    buf_init(&b64, CODEC_BASE64_LEN(size));
    if (text || strcmp(mime, "image/svg+xml") == 0) {
        json_object_object_add(c, "text", json_object_new_string_len(data, (int)size));
    } else if (codec_base64_encode(data, size, &b64) == 0) {
        json_object_object_add(c, "blob",
                               json_object_new_string_len(b64.data ? b64.data : "", (int)b64.len));
    } else {
        struct err err = ERR_INIT;
        err_set(&err, ERR_INTERNAL, "the file's base64 passed %zu bytes", b64.max);
        reply_error(r, m->id, err_jsonrpc_code(err.code), err_msg(&err));
        err_clear(&err);
        json_object_put(c);
        goto out;
    }
    json_object *contents = json_object_new_array();
    json_object_array_add(contents, c);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "contents", contents);
    reply_cacheable(r, 0, true);
    reply_result(r, m->id, res);
out:
    buf_free(&b64);
    free(mime);
    free(data);
}

void resources_read(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    const char *uri = NULL;
    if (!required_string(m, r, "uri", &uri))
        return;
    if (strncmp(uri, FILES_RESULT_URI_PREFIX, strlen(FILES_RESULT_URI_PREFIX)) == 0) {
        read_run_file(s, m, r, uri);
        return;
    }
    if (strcmp(uri, ENVIRONMENT_URI) != 0) {
        not_found(m, r, uri, "Resource not found");
        return;
    }
    struct tools_caller who = mcp_caller_of(s);
    json_object *env = tools_environment_json(&s->srv->env, &who);
    json_object *c = json_object_new_object();
    json_object_object_add(c, "uri", json_object_new_string(ENVIRONMENT_URI));
    json_object_object_add(c, "mimeType", json_object_new_string("application/json"));
    json_object_object_add(
        c, "text",
        json_object_new_string(json_object_to_json_string_ext(env, JSON_C_TO_STRING_PLAIN)));
    json_object_put(env);
    json_object *contents = json_object_new_array();
    json_object_array_add(contents, c);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "contents", contents);
    /* It tells the pool's and the host's state now. */
    reply_cacheable(r, 0, false);
    reply_result(r, m->id, res);
}

/* Our one resource never changes; subscriptions are accepted and cost nothing. */
void resources_subscribe(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    (void)s;
    const char *uri = NULL;
    if (!required_string(m, r, "uri", &uri))
        return;
    reply_result(r, m->id, json_object_new_object());
}

void prompts_list(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    (void)s;
    json_object *res = json_object_new_object();
    json_object_object_add(res, "prompts", json_object_new_array());
    reply_cacheable(r, MODERN_LIST_TTL_MS, false);
    reply_result(r, m->id, res);
}

void prompts_get(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    (void)s;
    const char *name = NULL;
    if (!required_string(m, r, "name", &name))
        return;
    char *text = xasprintf("Invalid params: unknown prompt '%.128s'", name);
    reply_error(r, m->id, JSONRPC_INVALID_PARAMS, text);
    free(text);
}

/* No prompt or resource template takes arguments, so nothing completes. */
void completion_complete(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    (void)s;
    json_object *ref = NULL;
    json_object *arg = NULL;
    if (!m->params || !json_object_is_type(m->params, json_type_object) ||
        !json_object_object_get_ex(m->params, "ref", &ref) ||
        !json_object_is_type(ref, json_type_object) ||
        !json_object_object_get_ex(m->params, "argument", &arg) ||
        !json_object_is_type(arg, json_type_object)) {
        reply_error(r, m->id, JSONRPC_INVALID_PARAMS,
                    "Invalid params: completion/complete needs ref and argument objects");
        return;
    }
    json_object *c = json_object_new_object();
    json_object_object_add(c, "values", json_object_new_array());
    json_object_object_add(c, "total", json_object_new_int(0));
    json_object_object_add(c, "hasMore", json_object_new_boolean(0));
    json_object *res = json_object_new_object();
    json_object_object_add(res, "completion", c);
    reply_result(r, m->id, res);
}
