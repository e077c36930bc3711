#include "mcp/mcp.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "base/admission.h"
#include "mcp/jsonrpc.h"
#include "base/log.h"
#include "tools/tools.h"

static const char *const version_names[MCP_V_COUNT] = {
    [MCP_V_2024_11_05] = "2024-11-05",
    [MCP_V_2025_03_26] = "2025-03-26",
    [MCP_V_2025_06_18] = "2025-06-18",
    [MCP_V_2025_11_25] = "2025-11-25",
};

/* RFC 5424 severities, lowest first, as logging/setLevel names them. */
static const char *const log_levels[] = {"debug", "info",     "notice", "warning",
                                         "error", "critical", "alert",  "emergency"};

#define INSTRUCTIONS                                                                               \
    "Runs Python and JavaScript in fresh, isolated containers with no network access. Use "        \
    "run_python_code or run_js_code for a quick run, execute_code for stdin and per-call limits. " \
    "Results carry stdout, stderr, exit_code and status."

const char *mcp_version_name(enum mcp_version v)
{
    if ((int)v < 0 || v >= MCP_V_COUNT)
        return version_names[MCP_V_LATEST];
    return version_names[v];
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

/* ---- channels ------------------------------------------------------------ */

void mcp_channel_init(struct mcp_channel *ch,
                      int (*send)(struct mcp_channel *, const char *, size_t),
                      void (*release)(struct mcp_channel *))
{
    ch->send = send;
    ch->release = release;
    atomic_init(&ch->refs, 1);
}

void mcp_channel_ref(struct mcp_channel *ch)
{
    atomic_fetch_add(&ch->refs, 1);
}

void mcp_channel_unref(struct mcp_channel *ch)
{
    if (atomic_fetch_sub(&ch->refs, 1) == 1 && ch->release)
        ch->release(ch);
}

static void channel_send(struct mcp_channel *ch, json_object *msg)
{
    size_t len = 0;
    const char *s = jsonrpc_serialize(msg, &len);
    if (ch->send(ch, s, len) < 0)
        log_debug("could not deliver a message: the client went away");
}

/* ---- replies: every message gets exactly one reply slot ------------------ */

/* A batch's answers are collected as serialized text, because its slots
 * are filled from different threads (a tools/call answers from a worker). */
struct batch {
    pthread_mutex_t lock;
    size_t n;
    size_t remaining;
    char **texts;
    size_t *lens;
    struct mcp_channel *ch;
};

struct reply {
    struct mcp_channel *ch; /* one reference held while the slot is open */
    struct batch *batch;    /* NULL for a single message */
    size_t index;
};

static void batch_send(struct batch *b)
{
    struct buf out;
    buf_init(&out, (size_t)-1);
    int rc = buf_add(&out, "[", 1);
    bool any = false;
    for (size_t i = 0; i < b->n; i++) {
        if (!b->texts[i])
            continue;
        if (any)
            rc |= buf_add(&out, ",", 1);
        rc |= buf_add(&out, b->texts[i], b->lens[i]);
        any = true;
    }
    rc |= buf_add(&out, "]", 1);
    (void)rc; /* out has no cap */
    /* A batch of only notifications gets no answer at all. */
    if (any && b->ch->send(b->ch, out.data, out.len) < 0)
        log_debug("could not deliver a message: the client went away");
    buf_free(&out);
}

/* Fills the slot with resp (taken; NULL means no response) and releases it. */
static void reply_done(struct reply *r, json_object *resp)
{
    if (!r->batch) {
        if (resp)
            channel_send(r->ch, resp);
        json_object_put(resp);
        mcp_channel_unref(r->ch);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    if (resp) {
        const char *s = jsonrpc_serialize(resp, &len);
        text = xstrndup(s, len);
        json_object_put(resp);
    }
    struct batch *b = r->batch;
    pthread_mutex_lock(&b->lock);
    b->texts[r->index] = text;
    b->lens[r->index] = len;
    bool last = --b->remaining == 0;
    pthread_mutex_unlock(&b->lock);
    if (!last)
        return;
    batch_send(b);
    mcp_channel_unref(b->ch);
    for (size_t i = 0; i < b->n; i++)
        free(b->texts[i]);
    pthread_mutex_destroy(&b->lock);
    free(b->texts);
    free(b->lens);
    free(b);
}

static void reply_result(struct reply *r, json_object *id, json_object *result)
{
    reply_done(r, jsonrpc_result(id, result));
}

static void reply_error(struct reply *r, json_object *id, int code, const char *message)
{
    reply_done(r, jsonrpc_error(id, code, message, NULL));
}

/* ---- server and sessions ------------------------------------------------- */

struct mcp_server {
    const struct config *cfg;
    struct tools_env env;
    struct admission *admission; /* run slots and the queue in front of them */
};

/* Live output is gathered and sent at most every LIVE_FLUSH_MS (or when
 * LIVE_FLUSH_BYTES are waiting), so a print loop cannot flood the client. */
#define LIVE_FLUSH_MS    100.0
#define LIVE_FLUSH_BYTES (16u * 1024u)
#define LIVE_MAX_BYTES   (64u * 1024u)

/* A tools/call from admission to answer. It holds no json-c object: the
 * request's id, progress token and arguments are copied out of the parsed
 * message by the thread that received it, and the call then waits in the
 * admission queue and runs on a worker thread. */
struct call {
    struct admission_job job;
    struct mcp_session *s;
    struct jsonrpc_id id;
    struct jsonrpc_id progress_token; /* NONE when the caller asked for no progress */
    struct tools_run_args args;
    struct reply reply;
    struct exec_cancel *cancel;
    atomic_bool cancelled;
    struct tools_features features;
    enum mcp_version version;
    double received_ms;
    /* live output, touched only by the worker running the call */
    struct buf live;
    int live_stream;
    double live_last;
    long long progress;
    struct call *next;
    struct call *withdrawn_next; /* taken back out of the queue, to finish unlocked */
};

struct mcp_session {
    struct mcp_server *srv;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool initialize_done;
    enum mcp_version version;
    int log_level; /* index into log_levels, -1 when never set */
    struct call *calls;
    int inflight;
    bool closing;
};

struct mcp_server *mcp_server_new(const struct config *cfg, struct exec_ctx *exec, struct err *err)
{
    struct mcp_server *srv = xcalloc(1, sizeof(*srv));
    srv->cfg = cfg;
    if (tools_env_init(&srv->env, cfg, exec, err) < 0) {
        free(srv);
        return NULL;
    }
    srv->admission = admission_new((size_t)cfg->max_concurrent, (size_t)cfg->max_queued, err);
    if (!srv->admission) {
        tools_env_cleanup(&srv->env);
        free(srv);
        return NULL;
    }
    return srv;
}

void mcp_server_free(struct mcp_server *srv)
{
    if (!srv)
        return;
    admission_free(srv->admission);
    tools_env_cleanup(&srv->env);
    free(srv);
}

struct mcp_session *mcp_session_new(struct mcp_server *srv)
{
    struct mcp_session *s = xcalloc(1, sizeof(*s));
    s->srv = srv;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->version = MCP_V_LATEST;
    s->log_level = -1;
    return s;
}

int mcp_session_inflight(struct mcp_session *s)
{
    pthread_mutex_lock(&s->lock);
    int n = s->inflight;
    pthread_mutex_unlock(&s->lock);
    return n;
}

static void call_finish(struct call *c, json_object *result);

/* Cancels a call (s->lock held): one still waiting for a run slot is taken
 * back and added to *withdrawn, to be finished once the lock is released;
 * a running one has its container killed. */
static void call_cancel_locked(struct call *c, struct call **withdrawn)
{
    atomic_store(&c->cancelled, true);
    if (admission_withdraw(c->s->srv->admission, &c->job)) {
        c->withdrawn_next = *withdrawn;
        *withdrawn = c;
    } else {
        exec_cancel(c->cancel);
    }
}

static void finish_withdrawn(struct call *list)
{
    while (list) {
        struct call *c = list;
        list = c->withdrawn_next;
        call_finish(c, NULL);
    }
}

void mcp_session_close(struct mcp_session *s)
{
    struct call *withdrawn = NULL;
    pthread_mutex_lock(&s->lock);
    s->closing = true;
    for (struct call *c = s->calls; c; c = c->next)
        call_cancel_locked(c, &withdrawn);
    pthread_mutex_unlock(&s->lock);
    finish_withdrawn(withdrawn);
    pthread_mutex_lock(&s->lock);
    while (s->inflight > 0)
        pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

void mcp_session_free(struct mcp_session *s)
{
    if (!s)
        return;
    mcp_session_close(s);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}

static struct tools_features features_of(enum mcp_version v)
{
    struct tools_features f = {
        .annotations = v >= MCP_V_2025_03_26,
        .structured = v >= MCP_V_2025_06_18,
    };
    return f;
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
        log_info("client '%.64s' initialized with protocol %s (asked %.32s)",
                 json_object_get_string(cname), mcp_version_name(v), json_object_get_string(pv));

    json_object *res = json_object_new_object();
    json_object_object_add(res, "protocolVersion", json_object_new_string(mcp_version_name(v)));
    json_object *caps = json_object_new_object();
    json_object *tools = json_object_new_object();
    json_object_object_add(tools, "listChanged", json_object_new_boolean(0));
    json_object_object_add(caps, "tools", tools);
    json_object_object_add(caps, "logging", json_object_new_object());
    json_object *resources = json_object_new_object();
    json_object_object_add(resources, "subscribe", json_object_new_boolean(1));
    json_object_object_add(resources, "listChanged", json_object_new_boolean(0));
    json_object_object_add(caps, "resources", resources);
    json_object *prompts = json_object_new_object();
    json_object_object_add(prompts, "listChanged", json_object_new_boolean(0));
    json_object_object_add(caps, "prompts", prompts);
    if (v >= MCP_V_2025_03_26)
        json_object_object_add(caps, "completions", json_object_new_object());
    json_object_object_add(res, "capabilities", caps);
    json_object *info = json_object_new_object();
    json_object_object_add(info, "name", json_object_new_string(MCP_SERVER_NAME));
    json_object_object_add(info, "version", json_object_new_string(MCPSBX_VERSION));
    if (v >= MCP_V_2025_06_18)
        json_object_object_add(info, "title", json_object_new_string("mcp-sandboxd code sandbox"));
    if (v >= MCP_V_2025_11_25)
        json_object_object_add(
            info, "description",
            json_object_new_string("Runs Python and JavaScript in fresh hardened containers"));
    json_object_object_add(res, "serverInfo", info);
    json_object_object_add(res, "instructions", json_object_new_string(INSTRUCTIONS));
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
    struct tools_features f = features_of(s->version);
    pthread_mutex_unlock(&s->lock);
    size_t len = 0;
    const char *tools = tools_list_json(&s->srv->env, &f, &len);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "tools", jsonrpc_spliced(tools, len));
    reply_result(r, m->id, res);
}

static void m_set_level(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    json_object *lv = NULL;
    int level = -1;
    if (m->params && json_object_is_type(m->params, json_type_object) &&
        json_object_object_get_ex(m->params, "level", &lv) &&
        json_object_is_type(lv, json_type_string)) {
        for (size_t i = 0; i < ARRAY_SIZE(log_levels); i++)
            if (strcmp(json_object_get_string(lv), log_levels[i]) == 0)
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

/* Bytes at the end of p[0..n) that start a UTF-8 sequence the chunk cut
 * short: held for the next flush instead of being mangled. */
static size_t utf8_incomplete_tail(const char *p, size_t n)
{
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char c = (unsigned char)p[n - back];
        if ((c & 0xc0) == 0x80)
            continue; /* continuation byte: keep looking for the lead */
        size_t need = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 1;
        return need > back ? back : 0;
    }
    return 0;
}

static void live_flush(struct call *c, bool final)
{
    if (c->live.len == 0 || atomic_load(&c->cancelled))
        return;
    size_t n = c->live.len;
    if (!final)
        n -= utf8_incomplete_tail(c->live.data, n);
    if (n == 0)
        return;
    size_t clean_len = 0;
    char *clean = util_utf8_sanitize(c->live.data, n, &clean_len);
    const char *stream_name = c->live_stream == EXEC_STDERR ? "stderr" : "stdout";
    if (c->progress_token.kind != JSONRPC_ID_NONE) {
        json_object *p = json_object_new_object();
        json_object_object_add(p, "progressToken", jsonrpc_id_json(&c->progress_token));
        json_object_object_add(p, "progress", json_object_new_int64(++c->progress));
        if (c->version >= MCP_V_2025_03_26)
            json_object_object_add(p, "message", json_object_new_string_len(clean, (int)clean_len));
        json_object *meta = json_object_new_object();
        json_object_object_add(meta, "dev.mcp-sandboxd/stream",
                               json_object_new_string(stream_name));
        json_object_object_add(p, "_meta", meta);
        json_object *note = jsonrpc_notification("notifications/progress", p);
        channel_send(c->reply.ch, note);
        json_object_put(note);
    }
    /* stdout is "info", stderr "warning" for the client's logging level. */
    int level = c->live_stream == EXEC_STDERR ? 3 : 1;
    pthread_mutex_lock(&c->s->lock);
    int threshold = c->s->log_level;
    pthread_mutex_unlock(&c->s->lock);
    if (threshold >= 0 && level >= threshold) {
        json_object *p = json_object_new_object();
        json_object_object_add(p, "level", json_object_new_string(log_levels[level]));
        json_object_object_add(p, "logger", json_object_new_string(stream_name));
        json_object_object_add(p, "data", json_object_new_string_len(clean, (int)clean_len));
        json_object *note = jsonrpc_notification("notifications/message", p);
        channel_send(c->reply.ch, note);
        json_object_put(note);
    }
    free(clean);
    buf_consume(&c->live, n);
    c->live_last = util_now_ms();
}

static void on_output(void *ctx, int stream, const char *data, size_t len)
{
    struct call *c = ctx;
    if (stream != EXEC_TICK) {
        if (c->live.len && stream != c->live_stream)
            live_flush(c, true);
        c->live_stream = stream;
        while (len) {
            size_t took = buf_add_upto(&c->live, data, len);
            data += took;
            len -= took;
            if (len)
                live_flush(c, c->live.len == c->live.max);
        }
    }
    if (c->live.len &&
        (c->live.len >= LIVE_FLUSH_BYTES || util_now_ms() - c->live_last >= LIVE_FLUSH_MS))
        live_flush(c, false);
}

static bool wants_live_output(struct call *c)
{
    if (c->progress_token.kind != JSONRPC_ID_NONE)
        return true;
    pthread_mutex_lock(&c->s->lock);
    bool logging = c->s->log_level >= 0;
    pthread_mutex_unlock(&c->s->lock);
    return logging;
}

static void call_free(struct call *c)
{
    jsonrpc_id_clear(&c->id);
    jsonrpc_id_clear(&c->progress_token);
    tools_run_args_release(&c->args);
    exec_cancel_free(c->cancel);
    free(c);
}

static void call_unlink_locked(struct mcp_session *s, struct call *c)
{
    for (struct call **pp = &s->calls; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
}

/* The one way a call ends, whichever thread ends it: answers with result
 * (taken; a cancelled request gets no response at all, the spec's rule),
 * then lets the session know. */
static void call_finish(struct call *c, json_object *result)
{
    struct mcp_session *s = c->s;
    pthread_mutex_lock(&s->lock);
    call_unlink_locked(s, c);
    bool cancelled = atomic_load(&c->cancelled);
    pthread_mutex_unlock(&s->lock);

    if (cancelled || !result) {
        json_object_put(result);
        reply_done(&c->reply, NULL);
    } else {
        json_object *id = jsonrpc_id_json(&c->id);
        reply_result(&c->reply, id, result);
        json_object_put(id);
    }
    call_free(c);

    pthread_mutex_lock(&s->lock);
    s->inflight--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static void call_run(struct admission_job *job)
{
    struct call *c = (struct call *)(void *)((char *)job - offsetof(struct call, job));
    struct mcp_session *s = c->s;
    buf_init(&c->live, LIVE_MAX_BYTES);
    c->live_last = util_now_ms();
    bool live = wants_live_output(c);
    json_object *result =
        tools_run(&s->srv->env, &c->args, &c->features, c->cancel, live ? on_output : NULL, c);
    /* Everything streamed goes out before the result; nothing after it. */
    live_flush(c, true);
    buf_free(&c->live);
    call_finish(c, result);
}

static void call_refuse(struct admission_job *job, enum admission_refusal why)
{
    struct call *c = (struct call *)(void *)((char *)job - offsetof(struct call, job));
    double waited = util_now_ms() - c->received_ms;
    char *msg = why == ADMISSION_STOPPING
                    ? xstrdup("server busy: shutting down")
                    : xasprintf("server busy: waited %.0f ms and no run slot came free (%lld "
                                "runs at once, --max-concurrent); try again shortly",
                                waited, c->s->srv->cfg->max_concurrent);
    call_finish(c, tools_busy_result(&c->args, &c->features, msg, waited));
    free(msg);
}

static void m_tools_call(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    json_object *name = NULL;
    json_object *args = NULL;
    if (!m->params || !json_object_is_type(m->params, json_type_object) ||
        !json_object_object_get_ex(m->params, "name", &name) ||
        !json_object_is_type(name, json_type_string)) {
        reply_error(r, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: tools/call needs a name");
        return;
    }
    const char *tool = json_object_get_string(name);
    if (!tools_exists(tool)) {
        char *msg = xasprintf("Unknown tool: %.128s", tool);
        reply_error(r, m->id, JSONRPC_INVALID_PARAMS, msg);
        free(msg);
        return;
    }
    json_object_object_get_ex(m->params, "arguments", &args);

    const struct config *cfg = s->srv->cfg;
    struct call *c = xcalloc(1, sizeof(*c));
    json_object *bad = NULL;
    /* Bad arguments are answered at once, without taking a run slot. */
    if (tools_prepare(cfg, tool, args, &c->args, &bad) < 0) {
        free(c);
        reply_result(r, m->id, bad);
        return;
    }
    c->s = s;
    jsonrpc_id_copy(&c->id, m->id);
    c->reply = *r;
    c->cancel = exec_cancel_new();
    atomic_init(&c->cancelled, false);
    c->received_ms = util_now_ms();
    json_object *meta = NULL;
    json_object *token = NULL;
    if (json_object_object_get_ex(m->params, "_meta", &meta) &&
        json_object_object_get_ex(meta, "progressToken", &token) && jsonrpc_valid_id(token))
        jsonrpc_id_copy(&c->progress_token, token);
    /* Waiting for a slot and starting the sandbox both count against the
     * call's own timeout; the program then gets its whole timeout. */
    double wait_ms = (double)cfg->queue_timeout_ms;
    if ((double)c->args.timeout_ms < wait_ms)
        wait_ms = (double)c->args.timeout_ms;
    c->job.run = call_run;
    c->job.refuse = call_refuse;
    c->job.deadline_ms = c->received_ms + wait_ms;
    c->args.start_by_ms = c->received_ms + (double)c->args.timeout_ms;

    pthread_mutex_lock(&s->lock);
    if (s->closing) {
        pthread_mutex_unlock(&s->lock);
        call_free(c);
        reply_done(r, NULL);
        return;
    }
    c->features = features_of(s->version);
    c->version = s->version;
    c->next = s->calls;
    s->calls = c;
    s->inflight++;
    pthread_mutex_unlock(&s->lock);

    if (admission_submit(s->srv->admission, &c->job) < 0) {
        char *msg = xasprintf("server busy: %lld runs in progress and %lld waiting "
                              "(--max-concurrent, --max-queued); try again shortly",
                              cfg->max_concurrent, cfg->max_queued);
        call_finish(c, tools_busy_result(&c->args, &c->features, msg, 0.0));
        free(msg);
    }
}

#define ENVIRONMENT_URI "mcp-sandboxd://environment"

static bool params_string(const struct jsonrpc_msg *m, const char *key, const char **out)
{
    json_object *v = NULL;
    if (!m->params || !json_object_is_type(m->params, json_type_object) ||
        !json_object_object_get_ex(m->params, key, &v) || !json_object_is_type(v, json_type_string))
        return false;
    *out = json_object_get_string(v);
    return true;
}

/* What agents ask before writing code: languages, images, limits. */
static json_object *environment_json(const struct config *cfg)
{
    json_object *env = json_object_new_object();
    json_object *langs = json_object_new_array();
    const char *names[] = {"python", "javascript"};
    const char *images[] = {cfg->python_image, cfg->js_image};
    const char *tools[] = {"run_python_code", "run_js_code"};
    for (size_t i = 0; i < 2; i++) {
        json_object *l = json_object_new_object();
        json_object_object_add(l, "language", json_object_new_string(names[i]));
        json_object_object_add(l, "image", json_object_new_string(images[i]));
        json_object_object_add(l, "tool", json_object_new_string(tools[i]));
        json_object_array_add(langs, l);
    }
    json_object_object_add(env, "languages", langs);
    json_object *lim = json_object_new_object();
    json_object_object_add(lim, "timeout_ms", json_object_new_int64(cfg->timeout_ms));
    json_object_object_add(lim, "max_timeout_ms", json_object_new_int64(cfg->max_timeout_ms));
    json_object_object_add(lim, "memory_mb", json_object_new_int64(cfg->memory_mb));
    json_object_object_add(lim, "max_memory_mb", json_object_new_int64(cfg->max_memory_mb));
    json_object_object_add(lim, "max_output_bytes", json_object_new_int64(cfg->max_output_bytes));
    json_object_object_add(lim, "max_code_bytes", json_object_new_int64(cfg->max_code_bytes));
    json_object_object_add(lim, "cpus", json_object_new_double(cfg->cpus));
    json_object_object_add(lim, "pids_limit", json_object_new_int64(cfg->pids_limit));
    json_object_object_add(lim, "tmpfs_mb", json_object_new_int64(cfg->tmpfs_mb));
    json_object_object_add(env, "limits", lim);
    json_object_object_add(env, "network", json_object_new_string("none"));
    json_object_object_add(env, "working_directory", json_object_new_string("/tmp"));
    json_object_object_add(env, "persistent", json_object_new_boolean(0));
    return env;
}

static void m_resources_list(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
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
    reply_result(r, m->id, res);
}

static void m_resource_templates(struct mcp_session *s, const struct jsonrpc_msg *m,
                                 struct reply *r)
{
    (void)s;
    json_object *res = json_object_new_object();
    json_object_object_add(res, "resourceTemplates", json_object_new_array());
    reply_result(r, m->id, res);
}

static void m_resources_read(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    const char *uri = NULL;
    if (!params_string(m, "uri", &uri)) {
        reply_error(r, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: uri is required");
        return;
    }
    if (strcmp(uri, ENVIRONMENT_URI) != 0) {
        reply_done(r, jsonrpc_error(m->id, MCP_RESOURCE_NOT_FOUND, "Resource not found", NULL));
        return;
    }
    json_object *env = environment_json(s->srv->cfg);
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
    reply_result(r, m->id, res);
}

/* Our one resource never changes; subscriptions are accepted and cost nothing. */
static void m_resources_subscribe(struct mcp_session *s, const struct jsonrpc_msg *m,
                                  struct reply *r)
{
    (void)s;
    const char *uri = NULL;
    if (!params_string(m, "uri", &uri)) {
        reply_error(r, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: uri is required");
        return;
    }
    reply_result(r, m->id, json_object_new_object());
}

static void m_prompts_list(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    (void)s;
    json_object *res = json_object_new_object();
    json_object_object_add(res, "prompts", json_object_new_array());
    reply_result(r, m->id, res);
}

static void m_prompts_get(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    (void)s;
    const char *name = NULL;
    if (!params_string(m, "name", &name)) {
        reply_error(r, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: name is required");
        return;
    }
    char *text = xasprintf("Invalid params: unknown prompt '%.128s'", name);
    reply_error(r, m->id, JSONRPC_INVALID_PARAMS, text);
    free(text);
}

/* No prompt or resource template takes arguments, so nothing completes. */
static void m_complete(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
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

static void n_cancelled(struct mcp_session *s, const struct jsonrpc_msg *m)
{
    json_object *rid = NULL;
    if (!m->params || !json_object_is_type(m->params, json_type_object) ||
        !json_object_object_get_ex(m->params, "requestId", &rid))
        return;
    struct call *withdrawn = NULL;
    pthread_mutex_lock(&s->lock);
    for (struct call *c = s->calls; c; c = c->next)
        if (jsonrpc_id_equal(&c->id, rid))
            call_cancel_locked(c, &withdrawn);
    pthread_mutex_unlock(&s->lock);
    finish_withdrawn(withdrawn);
}

static const struct method {
    const char *name;
    method_fn fn;
    bool before_initialize; /* allowed before initialize */
} methods[] = {
    {"completion/complete", m_complete, false},
    {"initialize", m_initialize, true},
    {"logging/setLevel", m_set_level, false},
    {"ping", m_ping, true},
    {"prompts/get", m_prompts_get, false},
    {"prompts/list", m_prompts_list, false},
    {"resources/list", m_resources_list, false},
    {"resources/read", m_resources_read, false},
    {"resources/subscribe", m_resources_subscribe, false},
    {"resources/templates/list", m_resource_templates, false},
    {"resources/unsubscribe", m_resources_subscribe, false},
    {"tools/call", m_tools_call, false},
    {"tools/list", m_tools_list, false},
};

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
        if (strcmp(m.method, "notifications/cancelled") == 0)
            n_cancelled(s, &m);
        reply_done(r, NULL);
        return;
    case JSONRPC_REQUEST:
        break;
    }
    const struct method *found = NULL;
    for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
        if (strcmp(methods[i].name, m.method) == 0)
            found = &methods[i];
    if (!found) {
        char *text = xasprintf("Method not found: %.128s", m.method);
        reply_error(r, m.id, JSONRPC_METHOD_NOT_FOUND, text);
        free(text);
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
    channel_send(ch, e);
    json_object_put(e);
}

void mcp_session_receive(struct mcp_session *s, const char *data, size_t len,
                         struct mcp_channel *ch)
{
    json_object *msg = NULL;
    struct err err = ERR_INIT;
    if (jsonrpc_parse(data, len, &msg, &err) < 0) {
        mcp_session_reject(s, JSONRPC_PARSE_ERROR, err_msg(&err), ch);
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
    if (!batches || n == 0) {
        char *text = n == 0 ? xstrdup("Invalid Request: empty batch")
                            : xasprintf("Invalid Request: batches are not supported in protocol "
                                        "version %s",
                                        initialized ? mcp_version_name(v) : "(none yet)");
        mcp_session_reject(s, JSONRPC_INVALID_REQUEST, text, ch);
        free(text);
        return;
    }
    struct batch *b = xcalloc(1, sizeof(*b));
    pthread_mutex_init(&b->lock, NULL);
    b->n = n;
    b->remaining = n;
    b->texts = xcalloc(n, sizeof(char *));
    b->lens = xcalloc(n, sizeof(size_t));
    b->ch = ch;
    mcp_channel_ref(ch);
    for (size_t i = 0; i < n; i++) {
        struct reply r = {.ch = ch, .batch = b, .index = i};
        handle_message(s, json_object_array_get_idx(msg, i), &r);
    }
}
