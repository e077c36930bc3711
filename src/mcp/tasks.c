#include "mcp/tasks.h"

#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/util.h"
#include "mcp/calls.h"

#define TASKS_URI_PREFIX "mcp-sandboxd://tasks/"

enum task_status { TASK_WORKING, TASK_COMPLETED, TASK_FAILED, TASK_CANCELLED };
static const char *const status_names[] = {"working", "completed", "failed", "cancelled"};

/* One task. The store owns it; its channel is the call's (ch first, so a
 * channel is its task). Fields under ts->lock, except id, owner and ch,
 * set once. It is freed once its call let go of the channel (released)
 * and it has been terminal for the run store's TTL. */
struct task {
    struct mcp_channel ch;
    struct tasks *ts;
    char id[TASKS_ID_CAP];
    char owner[33]; /* the principal's stateless owner: who may see it */
    enum task_status status;
    bool released;
    long long created_wall;
    long long updated_wall;
    double expires;         /* util_now_ms(), once terminal */
    struct buf output;      /* the tail of the live output */
    char error[256];        /* failed: why */
    struct waiter *waiters; /* tasks/result requests waiting for its end */
    struct task *next;
};

/* A 2025-11-25 tasks/result request waiting for its task's end: its slot
 * (holding its channel) and its id, plain data. */
struct waiter {
    struct reply reply;
    struct jsonrpc_id id;
    char owner[33];
    struct waiter *next;
};

/* The session a principal's task calls run on: it outlives the requests. */
struct owner_session {
    struct mcp_session *s;
    struct owner_session *next;
};

struct tasks {
    struct mcp_server *srv;
    pthread_mutex_t lock;
    struct task *list;
    size_t n;
    struct owner_session *sessions;
};

static void answer_waiters(struct tasks *ts, struct waiter *w, const char *task_id);

struct tasks *tasks_new(struct mcp_server *srv)
{
    if (!srv->env.store)
        return NULL;
    struct tasks *ts = xcalloc(1, sizeof(*ts));
    ts->srv = srv;
    pthread_mutex_init(&ts->lock, NULL);
    return ts;
}

bool tasks_offered(const struct mcp_server *srv)
{
    return srv->tasks != NULL;
}

void tasks_free(struct tasks *ts)
{
    if (!ts)
        return;
    /* Closing a session cancels its calls and waits: their channels are
     * released, into the tasks, before the tasks go. */
    while (ts->sessions) {
        struct owner_session *o = ts->sessions;
        ts->sessions = o->next;
        mcp_session_free(o->s);
        free(o);
    }
    while (ts->list) {
        struct task *t = ts->list;
        ts->list = t->next;
        answer_waiters(ts, t->waiters, t->id); /* (none: its end answered them) */
        buf_free(&t->output);
        free(t);
    }
    pthread_mutex_destroy(&ts->lock);
    free(ts);
}

/* Frees terminal tasks past their time whose call is done (lock held). */
static void sweep_locked(struct tasks *ts, double now)
{
    for (struct task **pp = &ts->list; *pp;) {
        struct task *t = *pp;
        if (t->released && t->status != TASK_WORKING && now >= t->expires) {
            *pp = t->next;
            ts->n--;
            buf_free(&t->output);
            free(t);
        } else {
            pp = &t->next;
        }
    }
}

/* Ends t as status (lock held), unless it ended already; its waiters
 * are the caller's to answer, unlocked (answer_waiters). */
static struct waiter *end_locked(struct task *t, enum task_status status, const char *error)
{
    if (t->status != TASK_WORKING)
        return NULL;
    struct waiter *w = t->waiters;
    t->waiters = NULL;
    t->status = status;
    t->updated_wall = util_wall_ms();
    t->expires = util_now_ms() + (double)t->ts->srv->cfg->task_result_ttl_ms;
    if (error)
        snprintf(t->error, sizeof(t->error), "%s", error);
    return w;
}

static void task_uri(const struct task *t, char *out, size_t cap)
{
    snprintf(out, cap, TASKS_URI_PREFIX "%s", t->id);
}

/* The call's answer: the result goes to the run store, the task ends. */
static void take_result(struct task *t, json_object *result)
{
    size_t len = 0;
    const char *text = json_object_to_json_string_length(result, JSON_C_TO_STRING_PLAIN, &len);
    char uri[sizeof(TASKS_URI_PREFIX) + TASKS_ID_CAP];
    task_uri(t, uri, sizeof(uri));
    bool kept = runstore_put_for(t->ts->srv->env.store, t->owner, uri, "application/json", text,
                                 len, t->ts->srv->cfg->task_result_ttl_ms) == 0;
    pthread_mutex_lock(&t->ts->lock);
    struct waiter *w = kept ? end_locked(t, TASK_COMPLETED, NULL)
                            : end_locked(t, TASK_FAILED,
                                         "the result is larger than the run store keeps for one "
                                         "caller (--run-store-session-max-bytes)");
    pthread_mutex_unlock(&t->ts->lock);
    answer_waiters(t->ts, w, t->id);
}

/* What the call sends: progress (its text joins the output's tail), log
 * messages (the same text again: dropped) and, last, its answer. Called
 * from the worker running the call; the parsed message stays here. */
static int task_send(struct mcp_channel *ch, const char *json, size_t len)
{
    struct task *t = (struct task *)ch;
    json_object *msg = json_tokener_parse(json);
    (void)len;
    json_object *v = NULL;
    json_object *params = NULL;
    if (json_object_object_get_ex(msg, "result", &v)) {
        take_result(t, v);
    } else if (json_object_object_get_ex(msg, "error", &v)) {
        json_object *text = NULL;
        json_object_object_get_ex(v, "message", &text);
        pthread_mutex_lock(&t->ts->lock);
        struct waiter *w = end_locked(t, TASK_FAILED, json_object_get_string(text));
        pthread_mutex_unlock(&t->ts->lock);
        answer_waiters(t->ts, w, t->id);
    } else if (json_object_object_get_ex(msg, "method", &v) &&
               strcmp(json_object_get_string(v), "notifications/progress") == 0 &&
               json_object_object_get_ex(msg, "params", &params) &&
               json_object_object_get_ex(params, "message", &v)) {
        const char *s = json_object_get_string(v);
        size_t n = (size_t)json_object_get_string_len(v);
        pthread_mutex_lock(&t->ts->lock);
        if (n >= TASKS_OUTPUT_TAIL) {
            s += n - TASKS_OUTPUT_TAIL;
            n = TASKS_OUTPUT_TAIL;
        }
        if (t->output.len + n > TASKS_OUTPUT_TAIL)
            buf_consume(&t->output, t->output.len + n - TASKS_OUTPUT_TAIL);
        buf_add_upto(&t->output, s, n);
        t->updated_wall = util_wall_ms();
        pthread_mutex_unlock(&t->ts->lock);
    }
    json_object_put(msg);
    return 0;
}

/* The call let go: one that never answered was cancelled (or its session
 * closed under it). */
static void task_release(struct mcp_channel *ch)
{
    struct task *t = (struct task *)ch;
    pthread_mutex_lock(&t->ts->lock);
    struct waiter *w = end_locked(t, TASK_CANCELLED, NULL);
    t->released = true;
    pthread_mutex_unlock(&t->ts->lock);
    answer_waiters(t->ts, w, t->id);
}

/* The principal's task session, made at its first task (lock held). */
static struct mcp_session *session_for_locked(struct tasks *ts, const char *principal)
{
    for (struct owner_session *o = ts->sessions; o; o = o->next)
        if (strcmp(o->s->principal, principal) == 0)
            return o->s;
    struct owner_session *o = xcalloc(1, sizeof(*o));
    o->s = mcp_session_new_stateless(ts->srv, principal);
    o->next = ts->sessions;
    ts->sessions = o;
    return o->s;
}

struct task *tasks_begin(struct tasks *ts, struct mcp_session **session, struct mcp_channel **ch,
                         char id[TASKS_ID_CAP])
{
    char fresh[TASKS_ID_CAP];
    if (handle_new(fresh) < 0)
        return NULL;
    pthread_mutex_lock(&ts->lock);
    sweep_locked(ts, util_now_ms());
    if (ts->n >= TASKS_MAX) {
        pthread_mutex_unlock(&ts->lock);
        return NULL;
    }
    struct task *t = xcalloc(1, sizeof(*t));
    mcp_channel_init(&t->ch, task_send, task_release);
    t->ts = ts;
    memcpy(t->id, fresh, sizeof(t->id));
    t->created_wall = t->updated_wall = util_wall_ms();
    buf_init(&t->output, TASKS_OUTPUT_TAIL);
    if ((*session)->stateless)
        *session = session_for_locked(ts, (*session)->principal);
    snprintf(t->owner, sizeof(t->owner), "%s", (*session)->owner);
    t->next = ts->list;
    ts->list = t;
    ts->n++;
    pthread_mutex_unlock(&ts->lock);
    memcpy(id, t->id, TASKS_ID_CAP);
    *ch = &t->ch;
    log_info("task %.8s... started", handle_tail(t->id));
    return t;
}

/* A snapshot of a task, copied under the lock. */
struct task_view {
    char id[TASKS_ID_CAP];
    enum task_status status;
    long long created_wall, updated_wall;
    char error[256];
    char *output; /* NUL-terminated copy */
};

static void task_fields(json_object *o, const struct task_view *v, long long ttl_ms, bool modern)
{
    char when[UTIL_RFC3339_CAP];
    json_object_object_add(o, "taskId", json_object_new_string(v->id));
    json_object_object_add(o, "status", json_object_new_string(status_names[v->status]));
    util_rfc3339_ms(when, v->created_wall);
    json_object_object_add(o, "createdAt", json_object_new_string(when));
    util_rfc3339_ms(when, v->updated_wall);
    json_object_object_add(o, "lastUpdatedAt", json_object_new_string(when));
    /* The extension renamed them. */
    json_object_object_add(o, modern ? "ttlMs" : "ttl", json_object_new_int64(ttl_ms));
    json_object_object_add(o, modern ? "pollIntervalMs" : "pollInterval",
                           json_object_new_int(TASKS_POLL_MS));
    if (v->status == TASK_FAILED && v->error[0])
        json_object_object_add(o, "statusMessage", json_object_new_string(v->error));
}

json_object *tasks_created_json(struct task *t, bool modern)
{
    struct task_view v = {.status = TASK_WORKING};
    pthread_mutex_lock(&t->ts->lock);
    memcpy(v.id, t->id, sizeof(v.id));
    v.created_wall = t->created_wall;
    v.updated_wall = t->updated_wall;
    pthread_mutex_unlock(&t->ts->lock);
    json_object *o = json_object_new_object();
    task_fields(o, &v, t->ts->srv->cfg->task_result_ttl_ms, modern);
    json_object_object_add(o, "statusMessage", json_object_new_string("the run is under way"));
    if (!modern) {
        json_object *wrap = json_object_new_object();
        json_object_object_add(wrap, "task", o);
        return wrap;
    }
    json_object_object_add(o, "resultType", json_object_new_string("task"));
    return o;
}

/* The request's taskId; else answered (-32602) and NULL. (That the
 * client declared the extension, the method table checked.) */
static const char *task_id_of(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    json_object *v = NULL;
    if (!r->modern && (s->version < MCP_V_2025_11_25 || !s->srv->tasks)) {
        /* Before 2025-11-25 (or with no tasks offered) there are none. */
        char *text = xasprintf("Method not found: %s", m->method);
        reply_error(r, m->id, JSONRPC_METHOD_NOT_FOUND, text);
        free(text);
        return NULL;
    }
    if (!json_object_is_type(m->params, json_type_object) ||
        !json_object_object_get_ex(m->params, "taskId", &v) ||
        !json_object_is_type(v, json_type_string)) {
        reply_error(r, m->id, JSONRPC_INVALID_PARAMS, "Invalid params: taskId is required");
        return NULL;
    }
    return json_object_get_string(v);
}

/* Whether s may list tasks (2025-11-25 with tasks offered); else
 * answered -32601. */
static bool task_list_allowed(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    if (s->version >= MCP_V_2025_11_25 && s->srv->tasks)
        return true;
    char *text = xasprintf("Method not found: %s", m->method);
    reply_error(r, m->id, JSONRPC_METHOD_NOT_FOUND, text);
    free(text);
    return false;
}

/* s's task named id (lock held), or NULL: another principal's is none. */
static struct task *find_locked(struct tasks *ts, const struct mcp_session *s, const char *id)
{
    for (struct task *t = ts->list; t; t = t->next)
        if (strcmp(t->id, id) == 0 && strcmp(t->owner, s->owner) == 0)
            return t;
    return NULL;
}

static void unknown_task(const struct jsonrpc_msg *m, struct reply *r, const char *id)
{
    char daemon[HANDLE_DAEMON_MAX + 1];
    if (handle_parse(id, daemon) == HANDLE_OTHER) {
        char *msg = xasprintf("Invalid params: that task is held by daemon \"%s\" (this is "
                              "\"%s\")",
                              daemon, handle_daemon());
        reply_error(r, m->id, JSONRPC_INVALID_PARAMS, msg);
        free(msg);
        return;
    }
    char *msg = xasprintf("Invalid params: no task %.40s (unknown, another caller's, or "
                          "expired after --task-result-ttl-ms)",
                          id);
    reply_error(r, m->id, JSONRPC_INVALID_PARAMS, msg);
    free(msg);
}

/* Copies s's task id into v; false when there is none. */
static bool view_of(struct mcp_session *s, const char *id, struct task_view *v)
{
    struct tasks *ts = s->srv->tasks;
    if (!ts)
        return false;
    pthread_mutex_lock(&ts->lock);
    sweep_locked(ts, util_now_ms());
    struct task *t = find_locked(ts, s, id);
    if (t) {
        memcpy(v->id, t->id, sizeof(v->id));
        v->status = t->status;
        v->created_wall = t->created_wall;
        v->updated_wall = t->updated_wall;
        memcpy(v->error, t->error, sizeof(v->error));
        v->output = xstrndup(t->output.data ? t->output.data : "", t->output.len);
    }
    pthread_mutex_unlock(&ts->lock);
    return t != NULL;
}

/* A completed task's result, from the run store; NULL when it is gone. */
static json_object *stored_result(struct mcp_session *s, const char *id)
{
    char uri[sizeof(TASKS_URI_PREFIX) + TASKS_ID_CAP];
    snprintf(uri, sizeof(uri), TASKS_URI_PREFIX "%s", id);
    char *mime = NULL;
    char *data = NULL;
    size_t size = 0;
    if (runstore_get(s->srv->env.store, s->owner, uri, &mime, &data, &size) < 0)
        return NULL;
    json_object *res = json_tokener_parse(data);
    free(mime);
    free(data);
    return res;
}

/* The request's task, as v (its output the caller's to free); false when
 * the request has been answered instead (no such task, bad params). */
static bool requested_view(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r,
                           struct task_view *v)
{
    const char *id = task_id_of(s, m, r);
    if (!id)
        return false;
    if (!view_of(s, id, v)) {
        unknown_task(m, r, id);
        return false;
    }
    return true;
}

void tasks_get(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    struct task_view v = {0};
    if (!requested_view(s, m, r, &v))
        return;
    json_object *o = json_object_new_object();
    task_fields(o, &v, s->srv->cfg->task_result_ttl_ms, r->modern);
    /* The extension inlines the outcome; 2025-11-25 has tasks/result. */
    if (r->modern && v.status == TASK_COMPLETED) {
        json_object *res = stored_result(s, v.id);
        if (res) {
            json_object_object_add(o, "result", res);
        } else {
            json_object_object_add(o, "status", json_object_new_string("failed"));
            snprintf(v.error, sizeof(v.error),
                     "the result is no longer kept (--task-result-ttl-ms, --run-store-max-bytes)");
            v.status = TASK_FAILED;
        }
    }
    if (r->modern && v.status == TASK_FAILED) {
        json_object *e = json_object_new_object();
        json_object_object_add(e, "code", json_object_new_int(JSONRPC_SERVER_ERROR));
        json_object_object_add(e, "message", json_object_new_string(v.error));
        json_object_object_add(o, "error", e);
    }
    if (v.status == TASK_WORKING) {
        json_object_object_add(o, "statusMessage", json_object_new_string("the run is under way"));
        /* The live output so far (its tail): a client polling sees it. */
        json_object *meta = json_object_new_object();
        json_object_object_add(meta, "dev.mcp-sandboxd/output", json_object_new_string(v.output));
        json_object_object_add(o, "_meta", meta);
    }
    free(v.output);
    reply_result(r, m->id, o);
}

/* A run never asks its client for input: there is nothing to update, but
 * the request is acknowledged for a task that is the caller's. */
void tasks_update(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    struct task_view v = {0};
    if (!requested_view(s, m, r, &v))
        return;
    free(v.output);
    reply_result(r, m->id, json_object_new_object());
}

void tasks_cancel(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    const char *id = task_id_of(s, m, r);
    if (!id)
        return;
    struct tasks *ts = s->srv->tasks;
    struct mcp_session *runs_on = NULL;
    struct waiter *w = NULL;
    bool found = false;
    enum task_status was = TASK_WORKING;
    if (ts) {
        pthread_mutex_lock(&ts->lock);
        struct task *t = find_locked(ts, s, id);
        if (t) {
            found = true;
            was = t->status;
            if (t->status == TASK_WORKING) {
                w = end_locked(t, TASK_CANCELLED, NULL);
                /* A 2025 session's task runs in it; a stateless one's in
                 * its principal's task session. */
                runs_on = s->stateless ? session_for_locked(ts, s->principal) : s;
            }
        }
        pthread_mutex_unlock(&ts->lock);
    }
    if (!found) {
        unknown_task(m, r, id);
        return;
    }
    answer_waiters(ts, w, id);
    if (!r->modern && was != TASK_WORKING) {
        char *text = xasprintf("Invalid params: task %s has ended (%s); only a working task can "
                               "be cancelled",
                               id, status_names[was]);
        reply_error(r, m->id, JSONRPC_INVALID_PARAMS, text);
        free(text);
        return;
    }
    if (runs_on) { /* its container is killed; the call ends unanswered */
        json_object *rid = json_object_new_string(id);
        calls_cancel_id(runs_on, rid);
        json_object_put(rid);
        log_info("task %.8s... cancelled", handle_tail(id));
    }
    if (r->modern) {
        reply_result(r, m->id, json_object_new_object());
        return;
    }
    struct task_view v = {0};
    if (!view_of(s, id, &v)) { /* (swept meanwhile: it had ended long ago) */
        unknown_task(m, r, id);
        return;
    }
    json_object *o = json_object_new_object();
    task_fields(o, &v, s->srv->cfg->task_result_ttl_ms, false);
    free(v.output);
    reply_result(r, m->id, o);
}

/* ---- 2025-11-25: tasks/result, tasks/list ----------------------------------- */

/* Answers a tasks/result slot for owner's task id, which has ended. */
static void answer_result(struct tasks *ts, const char *owner, const char *task_id, struct reply *r,
                          const struct jsonrpc_id *rid)
{
    enum task_status status = TASK_FAILED;
    char error[256] = "the task is no longer kept";
    pthread_mutex_lock(&ts->lock);
    for (struct task *t = ts->list; t; t = t->next) {
        if (strcmp(t->id, task_id) == 0 && strcmp(t->owner, owner) == 0) {
            status = t->status;
            memcpy(error, t->error, sizeof(error));
        }
    }
    pthread_mutex_unlock(&ts->lock);
    json_object *res = NULL;
    if (status == TASK_COMPLETED) {
        char uri[sizeof(TASKS_URI_PREFIX) + TASKS_ID_CAP];
        snprintf(uri, sizeof(uri), TASKS_URI_PREFIX "%s", task_id);
        char *mime = NULL;
        char *data = NULL;
        size_t size = 0;
        if (runstore_get(ts->srv->env.store, owner, uri, &mime, &data, &size) == 0)
            res = json_tokener_parse(data);
        free(mime);
        free(data);
        snprintf(error, sizeof(error),
                 "the result is no longer kept (--task-result-ttl-ms, --run-store-max-bytes)");
    }
    json_object *idj = jsonrpc_id_json(rid);
    if (json_object_is_type(res, json_type_object)) {
        json_object *meta = NULL;
        if (!json_object_object_get_ex(res, "_meta", &meta)) {
            meta = json_object_new_object();
            json_object_object_add(res, "_meta", meta);
        }
        json_object *rel = json_object_new_object();
        json_object_object_add(rel, "taskId", json_object_new_string(task_id));
        json_object_object_add(meta, "io.modelcontextprotocol/related-task", rel);
        reply_result(r, idj, res);
    } else {
        json_object_put(res);
        char *text = xasprintf("task %s %s: %s", task_id,
                               status == TASK_CANCELLED ? "was cancelled" : "failed",
                               status == TASK_CANCELLED ? "it has no result" : error);
        reply_error(r, idj, JSONRPC_SERVER_ERROR, text);
        free(text);
    }
    json_object_put(idj);
}

static void answer_waiters(struct tasks *ts, struct waiter *w, const char *task_id)
{
    while (w) {
        struct waiter *next = w->next;
        answer_result(ts, w->owner, task_id, &w->reply, &w->id);
        jsonrpc_id_clear(&w->id);
        free(w);
        w = next;
    }
}

void tasks_result(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    const char *id = task_id_of(s, m, r);
    if (!id)
        return;
    struct tasks *ts = s->srv->tasks;
    pthread_mutex_lock(&ts->lock);
    struct task *t = find_locked(ts, s, id);
    bool waits = t && t->status == TASK_WORKING;
    if (waits) { /* answered when it ends, from the thread that ends it */
        struct waiter *w = xcalloc(1, sizeof(*w));
        w->reply = *r;
        w->reply.env = NULL;
        jsonrpc_id_copy(&w->id, m->id);
        snprintf(w->owner, sizeof(w->owner), "%s", s->owner);
        w->next = t->waiters;
        t->waiters = w;
    }
    pthread_mutex_unlock(&ts->lock);
    if (!t) {
        unknown_task(m, r, id);
    } else if (!waits) {
        struct jsonrpc_id rid;
        jsonrpc_id_copy(&rid, m->id);
        answer_result(ts, s->owner, id, r, &rid);
        jsonrpc_id_clear(&rid);
    }
}

void tasks_list(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
{
    if (!task_list_allowed(s, m, r))
        return;
    struct tasks *ts = s->srv->tasks;
    json_object *arr = json_object_new_array();
    pthread_mutex_lock(&ts->lock);
    sweep_locked(ts, util_now_ms());
    for (struct task *t = ts->list; t; t = t->next) {
        if (strcmp(t->owner, s->owner) != 0)
            continue;
        struct task_view v = {
            .status = t->status, .created_wall = t->created_wall, .updated_wall = t->updated_wall};
        memcpy(v.id, t->id, sizeof(v.id));
        memcpy(v.error, t->error, sizeof(v.error));
        json_object *o = json_object_new_object();
        task_fields(o, &v, s->srv->cfg->task_result_ttl_ms, false);
        json_object_array_add(arr, o);
    }
    pthread_mutex_unlock(&ts->lock);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "tasks", arr);
    reply_result(r, m->id, res);
}
