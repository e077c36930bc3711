#include "mcp/mcp.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "mcp/aside.h"
#include "mcp/calls.h"
#include "mcp/jsonrpc.h"
#include "mcp/modern.h"
#include "mcp/reply.h"
#include "mcp/resources.h"
#include "mcp/session.h"
#include "mcp/tasks.h"

#define VERSION_NAME(id, name) [id] = (name),
static const char *const version_names[MCP_V_COUNT] = {MCP_VERSIONS(VERSION_NAME)};
#undef VERSION_NAME

/* ", <name>" for each, read from after the first ", ". */
#define VERSION_TEXT(id, name) ", " name
static const char versions_text[] = MCP_VERSIONS(VERSION_TEXT);
#undef VERSION_TEXT

const char *mcp_version_name(enum mcp_version v)
{
    if ((int)v < 0 || v >= MCP_V_COUNT)
        return version_names[MCP_V_LATEST];
    return version_names[v];
}

const char *mcp_versions_text(void)
{
    return versions_text + 2;
}

int mcp_version_from_name(const char *name)
{
    for (int i = 0; i < MCP_V_COUNT; i++)
        if (strcmp(name, version_names[i]) == 0)
            return i;
    return -1;
}

enum mcp_version mcp_negotiate(const char *requested)
{
    int v = requested ? mcp_version_from_name(requested) : -1;
    return v < 0 ? MCP_V_LATEST : (enum mcp_version)v;
}

/* ---- server and sessions ------------------------------------------------- */

struct mcp_server *mcp_server_new(const struct config *cfg, struct exec_ctx *exec, struct err *err)
{
    struct mcp_server *srv = xcalloc(1, sizeof(*srv));
    srv->cfg = cfg;
    if (tools_env_init(&srv->env, cfg, NULL, exec, err) < 0) {
        free(srv);
        return NULL;
    }
    srv->admission = admission_new((size_t)cfg->max_concurrent, (size_t)cfg->max_queued,
                                   (size_t)cfg->max_session_queued, err);
    if (!srv->admission) {
        tools_env_cleanup(&srv->env);
        free(srv);
        return NULL;
    }
    srv->aside = aside_new(err);
    if (!srv->aside) {
        admission_free(srv->admission);
        tools_env_cleanup(&srv->env);
        free(srv);
        return NULL;
    }
    srv->tasks = tasks_new(srv);
    return srv;
}

int mcp_server_backend_ping(struct mcp_server *srv, const char **address, struct err *err)
{
    return tools_backend_ping(&srv->env, address, err);
}

void mcp_server_free(struct mcp_server *srv)
{
    if (!srv)
        return;
    tasks_free(srv->tasks); /* its sessions' runs end first */
    admission_free(srv->admission);
    admission_free(srv->aside);
    tools_env_cleanup(&srv->env);
    free(srv);
}

struct mcp_session *mcp_session_new(struct mcp_server *srv, const char *principal)
{
    struct mcp_session *s = xcalloc(1, sizeof(*s));
    s->srv = srv;
    snprintf(s->principal, sizeof(s->principal), "%s", principal);
    unsigned char raw[16];
    if (util_random_bytes(raw, sizeof(raw)) < 0)
        abort(); /* util_random_bytes falls back to nothing: no token, no session */
    util_hex(raw, sizeof(raw), s->owner);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->version = MCP_V_LATEST;
    s->log_level = -1;
    return s;
}

struct mcp_session *mcp_session_new_stateless(struct mcp_server *srv, const char *principal)
{
    struct mcp_session *s = xcalloc(1, sizeof(*s));
    s->srv = srv;
    s->stateless = true;
    snprintf(s->principal, sizeof(s->principal), "%s", principal);
    snprintf(s->owner, sizeof(s->owner), "s:%s", s->principal);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->version = MCP_V_LATEST;
    s->log_level = -1;
    s->initialize_done = true; /* nothing to initialize on its wire */
    return s;
}

void mcp_session_serve_modern(struct mcp_session *s)
{
    s->serve_modern = true; /* before its first message: no lock needed */
}

/* s's stateless companion, made at the first modern request on s. */
static struct mcp_session *modern_of(struct mcp_session *s)
{
    pthread_mutex_lock(&s->lock);
    if (!s->modern)
        s->modern = mcp_session_new_stateless(s->srv, s->principal);
    struct mcp_session *m = s->modern;
    pthread_mutex_unlock(&s->lock);
    return m;
}

int mcp_session_inflight(struct mcp_session *s)
{
    pthread_mutex_lock(&s->lock);
    struct mcp_session *m = s->modern;
    pthread_mutex_unlock(&s->lock);
    return atomic_load(&s->inflight) + (m ? atomic_load(&m->inflight) : 0);
}

void mcp_session_close(struct mcp_session *s)
{
    pthread_mutex_lock(&s->lock);
    struct mcp_session *m = s->modern;
    pthread_mutex_unlock(&s->lock);
    if (m)
        mcp_session_close(m);
    calls_cancel_all(s);
    pthread_mutex_lock(&s->lock);
    while (s->inflight > 0)
        pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
    if (s->stateless)
        return; /* its code sessions are the principal's (mcp.h) */
    /* Its code sessions end with it: no call of theirs is left. */
    struct tools_caller who = mcp_caller_of(s);
    tools_sessions_end_owner(&s->srv->env, &who);
}

void mcp_session_free(struct mcp_session *s)
{
    if (!s)
        return;
    mcp_session_close(s);
    mcp_session_free(s->modern);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}

/* ---- methods ------------------------------------------------------------- */

typedef void (*method_fn)(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r);

static void m_initialize(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    if (r->batch) {
        reply_error(r, m->id, JSONRPC_INVALID_REQUEST,
                    "Invalid Request: initialize must not be part of a batch");
        return;
    }
    json_object *pv = NULL;
    if (!m->params || !json_object_is_type(m->params, json_type_object) ||
        !json_object_object_get_ex(m->params, "protocolVersion", &pv) ||
        !json_object_is_type(pv, json_type_string)) {
        reply_error(r, m->id, JSONRPC_INVALID_PARAMS,
                    "Invalid params: initialize needs a string protocolVersion");
        return;
    }
    pthread_mutex_lock(&s->lock);
    bool again = s->initialize_done;
    enum mcp_version v = mcp_negotiate(json_object_get_string(pv));
    if (!again) {
        s->initialize_done = true;
        s->version = v;
    }
    pthread_mutex_unlock(&s->lock);
    if (again) {
        reply_error(r, m->id, JSONRPC_INVALID_REQUEST,
                    "Invalid Request: the session is already initialized");
        return;
    }
    json_object *client = NULL;
    json_object *cname = NULL;
    if (json_object_object_get_ex(m->params, "clientInfo", &client) &&
        json_object_object_get_ex(client, "name", &cname) &&
        json_object_is_type(cname, json_type_string))
        log_info(
            "client '%s' initialized with protocol %s (asked %s)",
            LOG_FIELD_N(json_object_get_string(cname), (size_t)json_object_get_string_len(cname)),
            mcp_version_name(v),
            LOG_FIELD_N(json_object_get_string(pv), (size_t)json_object_get_string_len(pv)));

    json_object *res = json_object_new_object();
    json_object_object_add(res, "protocolVersion", json_object_new_string(mcp_version_name(v)));
    json_object_object_add(res, "capabilities", session_capabilities(s->srv, false, v));
    json_object_object_add(res, "serverInfo", session_server_info(v));
    json_object_object_add(res, "instructions", json_object_new_string(mcp_instructions));
    reply_result(r, m->id, res);
}

static void m_ping(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    (void)s;
    reply_result(r, m->id, json_object_new_object());
}

static void m_tools_list(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    json_object *cursor = NULL;
    if (m->params && json_object_is_type(m->params, json_type_object) &&
        json_object_object_get_ex(m->params, "cursor", &cursor) && cursor) {
        /* We never hand out cursors, so any cursor is not one of ours. */
        reply_error(r, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: unknown cursor");
        return;
    }
    pthread_mutex_lock(&s->lock);
    struct tools_features f = mcp_features_of(s->version);
    /* 2025-11-25's execution.taskSupport; the 2026-07-28 Tool has none. */
    f.tasks = !r->modern && s->version >= MCP_V_2025_11_25 && s->srv->tasks;
    pthread_mutex_unlock(&s->lock);
    size_t len = 0;
    const char *result = tools_list_result_json(&s->srv->env, &f, &len);
    reply_cacheable(r, MODERN_LIST_TTL_MS, false);
    reply_result_raw(r, m->id, result, len);
}

static void m_set_level(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    json_object *lv = NULL;
    int level = -1;
    if (m->params && json_object_is_type(m->params, json_type_object) &&
        json_object_object_get_ex(m->params, "level", &lv) &&
        json_object_is_type(lv, json_type_string)) {
        for (size_t i = 0; i < ARRAY_SIZE(mcp_log_levels); i++)
            if (strcmp(json_object_get_string(lv), mcp_log_levels[i]) == 0)
                level = (int)i;
    }
    if (level < 0) {
        reply_error(r, m->id, JSONRPC_INVALID_PARAMS,
                    "Invalid params: level must be one of debug, info, notice, warning, error, "
                    "critical, alert, emergency");
        return;
    }
    pthread_mutex_lock(&s->lock);
    s->log_level = level;
    pthread_mutex_unlock(&s->lock);
    reply_result(r, m->id, json_object_new_object());
}

/* Which wire a method is served on: the 2025 one (after initialize unless
 * allowed before), the 2026-07-28 one, or both. */
enum wire { WIRE_2025 = 1, WIRE_2026 = 2, WIRE_BOTH = 3 };

static const struct method {
    const char *name;
    method_fn fn;
    enum wire wire;
    bool before_initialize; /* allowed before initialize */
    /* What the client must have declared on the modern wire
     * (envelope.h's ENVELOPE_CAP_*), else -32021 before it runs. */
    unsigned needs;
} methods[] = {
    {"completion/complete", completion_complete, WIRE_BOTH, false, 0},
    {"initialize", m_initialize, WIRE_2025, true, 0},
    {"logging/setLevel", m_set_level, WIRE_2025, false, 0},
    {"ping", m_ping, WIRE_2025, true, 0},
    {"prompts/get", prompts_get, WIRE_BOTH, false, 0},
    {"prompts/list", prompts_list, WIRE_BOTH, false, 0},
    {"resources/list", resources_list, WIRE_BOTH, false, 0},
    {"resources/read", resources_read, WIRE_BOTH, false, 0},
    {"resources/subscribe", resources_subscribe, WIRE_2025, false, 0},
    {"resources/templates/list", resources_templates_list, WIRE_BOTH, false, 0},
    {"resources/unsubscribe", resources_subscribe, WIRE_2025, false, 0},
    {"server/discover", modern_discover, WIRE_2026, false, 0},
    {"tasks/cancel", tasks_cancel, WIRE_BOTH, false, ENVELOPE_CAP_TASKS},
    {"tasks/get", tasks_get, WIRE_BOTH, false, ENVELOPE_CAP_TASKS},
    {"tasks/list", tasks_list, WIRE_2025, false, 0},
    {"tasks/result", tasks_result, WIRE_2025, false, 0},
    {"tasks/update", tasks_update, WIRE_2026, false, ENVELOPE_CAP_TASKS},
    {"tools/call", calls_tools_call, WIRE_BOTH, false, 0},
    {"tools/list", m_tools_list, WIRE_BOTH, false, 0},
};

static const struct method *method_find(const char *name, enum wire wire)
{
    for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
        if ((methods[i].wire & wire) && strcmp(methods[i].name, name) == 0)
            return &methods[i];
    return NULL;
}

static json_object *method_not_found(const struct jsonrpc_msg *m)
{
    char *text = xasprintf("Method not found: %.*s", util_utf8_prefix(m->method, 128), m->method);
    json_object *e = jsonrpc_error(m->id, JSONRPC_METHOD_NOT_FOUND, text, NULL);
    free(text);
    return e;
}

bool mcp_message_is_modern(json_object *msg)
{
    return modern_claims(msg);
}

/* The refusal of m on the modern wire (envelope, headers when h, version,
 * method, capabilities), or NULL with *found its method. */
static json_object *modern_check(const struct jsonrpc_msg *m, const struct mcp_wire_headers *h,
                                 struct envelope *env, const struct method **found)
{
    json_object *e = modern_refusal(m, h, env);
    if (e)
        return e;
    *found = method_find(m->method, WIRE_2026);
    if (!*found)
        return method_not_found(m);
    unsigned missing = (*found)->needs & ~env->caps;
    if (missing) {
        char *text = xasprintf("Missing client capability: %s needs what clientCapabilities "
                               "does not declare (see data.requiredCapabilities)",
                               (*found)->name);
        e = jsonrpc_error(m->id, ENVELOPE_ERR_MISSING_CAPABILITY, text,
                          envelope_missing_caps_data(missing));
        free(text);
    }
    return e;
}

json_object *mcp_modern_refusal(json_object *msg, const struct mcp_wire_headers *h)
{
    struct jsonrpc_msg m;
    jsonrpc_classify(msg, &m);
    if (m.kind != JSONRPC_REQUEST)
        return NULL;
    struct envelope env;
    const struct method *found = NULL;
    return modern_check(&m, h, &env, &found);
}

/* A request on the 2026-07-28 wire (s is stateless): checked, then its
 * method runs with the envelope at hand. */
static void handle_modern(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    struct envelope env;
    const struct method *found = NULL;
    json_object *e = modern_check(m, NULL, &env, &found);
    if (e || !found) {
        reply_done(r, e);
        return;
    }
    /* The slot as the method sees it: on this wire, with the envelope
     * that lives as long as this call. */
    struct reply slot = *r;
    slot.modern = true;
    slot.env = &env;
    log_trace_set(env.traceparent[0] ? env.traceparent : NULL);
    found->fn(s, m, &slot);
    log_trace_set(NULL);
}

static void handle_message(struct mcp_session *s, json_object *msg, struct reply *r)
{
    struct jsonrpc_msg m;
    jsonrpc_classify(msg, &m);
    switch (m.kind) {
    case JSONRPC_INVALID:
        reply_error(r, m.id, JSONRPC_INVALID_REQUEST, m.invalid_reason);
        return;
    case JSONRPC_RESPONSE:
        /* We send no requests, so there is nothing to match it with. */
        reply_done(r, NULL);
        return;
    case JSONRPC_NOTIFICATION:
        if (strcmp(m.method, "notifications/cancelled") == 0) {
            calls_cancel_request(s, &m);
            pthread_mutex_lock(&s->lock);
            struct mcp_session *companion = s->modern;
            pthread_mutex_unlock(&s->lock);
            if (companion) /* a request id names a call in either */
                calls_cancel_request(companion, &m);
        }
        reply_done(r, NULL);
        return;
    case JSONRPC_REQUEST:
        break;
    }
    if (s->stateless) {
        handle_modern(s, &m, r);
        return;
    }
    const struct method *found = method_find(m.method, WIRE_2025);
    if (!found) {
        reply_done(r, method_not_found(&m));
        return;
    }
    pthread_mutex_lock(&s->lock);
    bool ready = s->initialize_done;
    pthread_mutex_unlock(&s->lock);
    if (!ready && !found->before_initialize) {
        reply_error(r, m.id, JSONRPC_INVALID_REQUEST,
                    "Invalid Request: the session is not initialized; send initialize first");
        return;
    }
    found->fn(s, &m, r);
}

void mcp_session_reject(struct mcp_session *s, int code, const char *message,
                        struct mcp_channel *ch)
{
    (void)s;
    json_object *e = jsonrpc_error(NULL, code, message, NULL);
    reply_send(ch, e);
    json_object_put(e);
}

void mcp_session_receive(struct mcp_session *s, const char *data, size_t len,
                         struct mcp_channel *ch)
{
    json_object *msg = NULL;
    struct err err = ERR_INIT;
    size_t budget = JSONRPC_PARSE_BUDGET(s->srv->cfg->max_message_bytes);
    if (jsonrpc_parse(data, len, budget, &msg, &err) < 0) {
        mcp_session_reject(s, err_jsonrpc_code(err.code), err_msg(&err), ch);
        err_clear(&err);
        return;
    }
    mcp_session_receive_json(s, msg, ch);
    json_object_put(msg);
}

bool mcp_session_initialized(struct mcp_session *s)
{
    pthread_mutex_lock(&s->lock);
    bool done = s->initialize_done;
    pthread_mutex_unlock(&s->lock);
    return done;
}

void mcp_session_receive_json(struct mcp_session *s, json_object *msg, struct mcp_channel *ch)
{
    if (!json_object_is_type(msg, json_type_array)) {
        if (s->serve_modern && modern_claims(msg))
            s = modern_of(s); /* stdio: beside the 2025 session, not in it */
        mcp_channel_ref(ch);
        struct reply r = {.ch = ch};
        handle_message(s, msg, &r);
        return;
    }

    size_t n = json_object_array_length(msg);
    pthread_mutex_lock(&s->lock);
    bool initialized = s->initialize_done;
    bool batches = initialized && s->version == MCP_V_2025_03_26;
    enum mcp_version v = s->version;
    pthread_mutex_unlock(&s->lock);
    const struct config *cfg = s->srv->cfg;
    if (!batches || n == 0 || n > (size_t)cfg->max_batch_items) {
        char *text = n == 0 ? xstrdup("Invalid Request: empty batch")
                     : !batches
                         ? xasprintf("Invalid Request: batches are not supported in protocol "
                                     "version %s",
                                     initialized ? mcp_version_name(v) : "(none yet)")
                         : xasprintf("Invalid Request: a batch of %zu messages; at most %lld "
                                     "(--max-batch-items)",
                                     n, cfg->max_batch_items);
        mcp_session_reject(s, JSONRPC_INVALID_REQUEST, text, ch);
        free(text);
        return;
    }
    struct batch *b = reply_batch_new(ch, n, (size_t)cfg->max_message_bytes);
    for (size_t i = 0; i < n; i++) {
        struct reply r = reply_batch_slot(b, i);
        handle_message(s, json_object_array_get_idx(msg, i), &r);
    }
}
