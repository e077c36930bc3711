#include "mcp/calls.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/util.h"
#include "mcp/aside.h"
#include "mcp/envelope.h"
#include "mcp/tasks.h"

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
    struct tools_run_args args;       /* its run owns the cancel handle */
    struct reply reply;
    atomic_bool cancelled;
    struct tools_features features;
    enum mcp_version version;
    /* The modern wire's level travels with the request (-1: no log
     * notifications at all); the 2025 wire's is the session's, read at
     * each flush, since logging/setLevel may change it meanwhile. */
    bool own_level;
    int log_level;
    double received_ms;
    /* live output, touched only by the worker running the call */
    struct buf live;
    int live_stream;
    double live_last;
    long long progress;
    struct call *next;
    struct call *withdrawn_next; /* taken back out of the queue, to finish unlocked */
    /* Waiting behind an earlier call of the same code session (s->parked,
     * oldest first): a code session runs one call at a time. */
    bool parked;
    struct call *parked_next;
    bool submitted; /* went to the run queue: its end lets the next one go */
};

static void call_finish(struct call *c, json_object *result);
static void call_submit(struct call *c);
static void call_deadlines(struct call *c, double now);

static void parked_unlink_locked(struct mcp_session *s, struct call *c)
{
    for (struct call **pp = &s->parked; *pp; pp = &(*pp)->parked_next) {
        if (*pp == c) {
            *pp = c->parked_next;
            break;
        }
    }
    c->parked = false;
    c->parked_next = NULL;
}

/* Whether c must wait for another call of its code session (s->lock
 * held): any other unfinished call of that session, parked or running. */
static bool must_park_locked(struct mcp_session *s, const struct call *c)
{
    const void *cs = tools_run_session(&c->args);
    if (!cs)
        return false;
    for (const struct call *o = s->calls; o; o = o->next)
        if (o != c && tools_run_session(&o->args) == cs)
            return true;
    return false;
}

static size_t parked_for_locked(const struct mcp_session *s, const void *cs)
{
    size_t n = 0;
    for (const struct call *o = s->parked; o; o = o->parked_next)
        n += tools_run_session(&o->args) == cs;
    return n;
}

static void park_locked(struct mcp_session *s, struct call *c)
{
    struct call **pp = &s->parked;
    while (*pp)
        pp = &(*pp)->parked_next;
    *pp = c;
    c->parked = true;
}

/* The oldest call parked behind the one that just ended (s->lock held),
 * taken off the parked list, or NULL. */
static struct call *unpark_next_locked(struct mcp_session *s, const void *cs)
{
    if (!cs || s->closing)
        return NULL;
    for (struct call *o = s->parked; o; o = o->parked_next) {
        if (tools_run_session(&o->args) == cs) {
            parked_unlink_locked(s, o);
            return o;
        }
    }
    return NULL;
}

/* Cancels a call (s->lock held): one still waiting for a run slot is taken
 * back and added to *withdrawn, to be finished once the lock is released;
 * a running one has its container killed. */
static void call_cancel_locked(struct call *c, struct call **withdrawn)
{
    atomic_store(&c->cancelled, true);
    if (c->parked) {
        parked_unlink_locked(c->s, c);
        c->withdrawn_next = *withdrawn;
        *withdrawn = c;
    } else if (admission_withdraw(c->s->srv->admission, &c->job)) {
        c->withdrawn_next = *withdrawn;
        *withdrawn = c;
    } else {
        tools_cancel_call(c->args.run.cancel);
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

void calls_cancel_all(struct mcp_session *s)
{
    struct call *withdrawn = NULL;
    pthread_mutex_lock(&s->lock);
    s->closing = true;
    for (struct call *c = s->calls; c; c = c->next)
        call_cancel_locked(c, &withdrawn);
    pthread_mutex_unlock(&s->lock);
    finish_withdrawn(withdrawn);
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

static int call_log_level(struct call *c)
{
    if (c->own_level)
        return c->log_level;
    pthread_mutex_lock(&c->s->lock);
    int level = c->s->log_level;
    pthread_mutex_unlock(&c->s->lock);
    return level;
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
    const char *stream_name = c->live_stream == TOOLS_STDERR ? "stderr" : "stdout";
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
        reply_send(c->reply.ch, note);
        json_object_put(note);
    }
    /* stdout is "info", stderr "warning" for the client's logging level. */
    int level = c->live_stream == TOOLS_STDERR ? 3 : 1;
    int threshold = call_log_level(c);
    if (threshold >= 0 && level >= threshold) {
        json_object *p = json_object_new_object();
        json_object_object_add(p, "level", json_object_new_string(mcp_log_levels[level]));
        json_object_object_add(p, "logger", json_object_new_string(stream_name));
        json_object_object_add(p, "data", json_object_new_string_len(clean, (int)clean_len));
        json_object *note = jsonrpc_notification("notifications/message", p);
        reply_send(c->reply.ch, note);
        json_object_put(note);
    }
    free(clean);
    buf_consume(&c->live, n);
    c->live_last = util_now_ms();
}

static void on_output(void *ctx, int stream, const char *data, size_t len)
{
    struct call *c = ctx;
    if (stream != TOOLS_TICK) {
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
    return c->progress_token.kind != JSONRPC_ID_NONE || call_log_level(c) >= 0;
}

static void call_free(struct call *c)
{
    jsonrpc_id_clear(&c->id);
    jsonrpc_id_clear(&c->progress_token);
    tools_run_args_release(&c->args);
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
    struct call *next = c->submitted ? unpark_next_locked(s, tools_run_session(&c->args)) : NULL;
    pthread_mutex_unlock(&s->lock);

    if (cancelled || !result) {
        json_object_put(result);
        reply_done(&c->reply, NULL);
    } else {
        reply_result_for(&c->reply, &c->id, result);
    }
    call_free(c);

    session_call_ended(s);
    if (next) {
        /* Time spent parked is not the call's: its deadlines start now. */
        call_deadlines(next, util_now_ms());
        call_submit(next);
    }
}

static void call_run(struct admission_job *job)
{
    struct call *c = (struct call *)(void *)((char *)job - offsetof(struct call, job));
    struct mcp_session *s = c->s;
    log_trace_set(c->args.run.traceparent[0] ? c->args.run.traceparent : NULL);
    buf_init(&c->live, LIVE_MAX_BYTES);
    c->live_last = util_now_ms();
    if (wants_live_output(c)) {
        c->args.run.on_output = on_output;
        c->args.run.on_output_ctx = c;
    }
    json_object *result = tools_run(&s->srv->env, &c->args, &c->features);
    /* Everything streamed goes out before the result; nothing after it. */
    live_flush(c, true);
    buf_free(&c->live);
    /* The run is over: its slot is free before the answer goes out, so a
     * client that calls again at once finds it free. */
    admission_slot_done(s->srv->admission);
    log_trace_set(NULL); /* the worker's next call may have none */
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

/* Why a call could not even wait for a run slot. */
static char *busy_message(const struct config *cfg, enum admission_verdict v, bool over_inflight)
{
    if (over_inflight)
        return xasprintf("server busy: this session already has %lld calls under way "
                         "(--max-session-inflight); try again when one has answered",
                         cfg->max_session_inflight);
    switch (v) {
    case ADMISSION_OWNER_FULL:
        return xasprintf("server busy: this session already has %lld calls waiting for a run "
                         "slot (--max-session-queued); try again when one has started",
                         cfg->max_session_queued);
    case ADMISSION_STOPPED:
        return xstrdup("server busy: shutting down");
    case ADMISSION_FULL:
    case ADMISSION_QUEUED:
        break;
    }
    return xasprintf("server busy: %lld runs in progress and %lld waiting "
                     "(--max-concurrent, --max-queued); try again shortly",
                     cfg->max_concurrent, cfg->max_queued);
}

/* A tool that runs nothing takes no run slot: answered here, at once,
 * unless its answer may wait (aside.h). */
static void answer_now(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r,
                       const tools_tool *t, const char *tool, json_object *args)
{
    if (tools_answer_may_wait(&s->srv->env, t)) {
        aside_answer(s, m, r, tool, args);
        return;
    }
    pthread_mutex_lock(&s->lock);
    struct tools_features f = mcp_features_of(s->version);
    pthread_mutex_unlock(&s->lock);
    struct tools_caller who = mcp_caller_of(s);
    reply_result(r, m->id, tools_answer(&s->srv->env, t, args, &who, &f));
}

/* Waiting for a slot and starting the sandbox both count against the
 * call's own timeout, from now; the program then gets its whole timeout. */
static void call_deadlines(struct call *c, double now)
{
    double wait_ms = (double)c->s->srv->cfg->queue_timeout_ms;
    if ((double)c->args.run.timeout_ms < wait_ms)
        wait_ms = (double)c->args.run.timeout_ms;
    c->received_ms = now;
    c->job.deadline_ms = now + wait_ms;
    c->args.run.start_by_ms = now + (double)c->args.run.timeout_ms;
}

/* To the run queue; a call that cannot even wait there ends busy. */
static void call_submit(struct call *c)
{
    c->submitted = true;
    enum admission_verdict v = admission_submit(c->s->srv->admission, &c->job);
    if (v != ADMISSION_QUEUED) {
        char *msg = busy_message(c->s->srv->cfg, v, false);
        call_finish(c, tools_busy_result(&c->args, &c->features, msg, 0.0));
        free(msg);
    }
}

/* The call's identity, its progress token and its deadlines, once its
 * arguments are prepared. */
static void call_init(struct call *c, struct mcp_session *s, const struct jsonrpc_msg *m,
                      const struct reply *r, json_object *task_id)
{
    c->s = s;
    jsonrpc_id_copy(&c->id, task_id ? task_id : m->id);
    c->reply = *r;
    c->reply.env = NULL; /* the receiving thread's: what is needed is copied here */
    if (r->env) {
        c->own_level = true;
        c->log_level = task_id ? -1 : r->env->level;
        /* Checked by envelope_read: lowercase hex, or printable ASCII. */
        snprintf(c->args.run.traceparent, sizeof(c->args.run.traceparent), "%s",
                 r->env->traceparent);
        snprintf(c->args.run.tracestate, sizeof(c->args.run.tracestate), "%s", r->env->tracestate);
    }
    atomic_init(&c->cancelled, false);
    json_object *meta = NULL;
    json_object *token = NULL;
    if (task_id) /* its output goes to the task, whatever the client asked */
        jsonrpc_id_copy(&c->progress_token, task_id);
    else if (json_object_object_get_ex(m->params, "_meta", &meta) &&
             json_object_object_get_ex(meta, "progressToken", &token) && jsonrpc_valid_id(token))
        jsonrpc_id_copy(&c->progress_token, token);
    c->job.run = call_run;
    c->job.refuse = call_refuse;
    c->job.owner = &s->runs;
    call_deadlines(c, util_now_ms());
}

/* Whether a call that runs becomes a task: on the 2026-07-28 wire when the
 * client declared the extension (the server decides, and it does), on
 * 2025-11-25 when the call asks with params.task. */
static bool wants_task(struct mcp_session *s, const struct jsonrpc_msg *m, const struct reply *r)
{
    if (!s->srv->tasks)
        return false;
    if (r->env)
        return (r->env->caps & ENVELOPE_CAP_TASKS) != 0;
    json_object *task = NULL;
    pthread_mutex_lock(&s->lock);
    bool v = s->version >= MCP_V_2025_11_25;
    pthread_mutex_unlock(&s->lock);
    return v && json_object_object_get_ex(m->params, "task", &task) &&
           json_object_is_type(task, json_type_object);
}

void calls_tools_call(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r)
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
    const tools_tool *t = tools_find(tool);
    if (!t) {
        char *msg = xasprintf("Unknown tool: %.128s", tool);
        reply_error(r, m->id, JSONRPC_INVALID_PARAMS, msg);
        free(msg);
        return;
    }
    json_object_object_get_ex(m->params, "arguments", &args);
    if (tools_answers_at_once(t)) {
        answer_now(s, m, r, t, tool, args);
        return;
    }

    const struct config *cfg = s->srv->cfg;
    struct call *c = xcalloc(1, sizeof(*c));
    json_object *bad = NULL;
    /* Bad arguments are answered at once, without taking a run slot. */
    struct tools_caller who = mcp_caller_of(s);
    who.task = wants_task(s, m, r); /* a task may ask for a longer run */
    if (tools_prepare(&s->srv->env, t, args, &who, &c->args, &bad) < 0) {
        free(c);
        reply_result(r, m->id, bad);
        return;
    }
    /* A run for a client that declared tasks is a task: answered now with
     * its handle, run on the principal's task session, answering the task. */
    struct task *task = NULL;
    struct reply client_reply = *r;
    if (who.task) {
        struct mcp_channel *tch = NULL;
        char tid[TASKS_ID_CAP];
        task = tasks_begin(s->srv->tasks, &s, &tch, tid);
        if (task) {
            json_object *idj = json_object_new_string(tid);
            struct reply tr = {.ch = tch, .modern = r->modern, .env = r->env};
            call_init(c, s, m, &tr, idj);
            json_object_put(idj);
        }
    }
    if (!task) {
        /* Not a task after all (the store is full): a call's limits. */
        if (c->args.run.timeout_ms > cfg->max_timeout_ms)
            c->args.run.timeout_ms = cfg->max_timeout_ms;
        call_init(c, s, m, r, NULL);
    }

    pthread_mutex_lock(&s->lock);
    if (s->closing) {
        pthread_mutex_unlock(&s->lock);
        if (task)
            reply_done(&c->reply, NULL); /* the task's channel: it ends cancelled */
        call_free(c);
        reply_done(&client_reply, NULL);
        return;
    }
    c->features = mcp_features_of(s->version);
    c->version = s->version;
    c->next = s->calls;
    s->calls = c;
    /* Counted even when over: call_finish takes it off again. */
    bool over = s->inflight >= cfg->max_session_inflight;
    s->inflight++;
    bool park = !over && must_park_locked(s, c);
    /* Parked calls wait in no queue of admission's: they have their own cap. */
    bool park_full = park && parked_for_locked(s, tools_run_session(&c->args)) >=
                                 (size_t)cfg->max_session_queued;
    if (park && !park_full)
        park_locked(s, c);
    pthread_mutex_unlock(&s->lock);

    if (task)
        reply_result(&client_reply, m->id, tasks_created_json(task, r->modern));
    if (over || park_full) {
        char *msg = over ? busy_message(cfg, ADMISSION_OWNER_FULL, true)
                         : xasprintf("server busy: this code session already has %lld calls "
                                     "waiting for it to finish the one it runs "
                                     "(--max-session-queued); try again when one has started",
                                     cfg->max_session_queued);
        call_finish(c, tools_busy_result(&c->args, &c->features, msg, 0.0));
        free(msg);
    } else if (!park) {
        call_submit(c);
    }
}

void calls_cancel_request(struct mcp_session *s, const struct jsonrpc_msg *m)
{
    json_object *rid = NULL;
    if (!m->params || !json_object_is_type(m->params, json_type_object) ||
        !json_object_object_get_ex(m->params, "requestId", &rid))
        return;
    calls_cancel_id(s, rid);
}

void calls_cancel_id(struct mcp_session *s, json_object *rid)
{
    struct call *withdrawn = NULL;
    pthread_mutex_lock(&s->lock);
    for (struct call *c = s->calls; c; c = c->next)
        if (jsonrpc_id_equal(&c->id, rid))
            call_cancel_locked(c, &withdrawn);
    pthread_mutex_unlock(&s->lock);
    finish_withdrawn(withdrawn);
}
