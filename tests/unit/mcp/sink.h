/* A channel that keeps every message sent on it, for the protocol layer's
 * unit tests: replies read back by index or id, waited for with a guard.
 * Include after cmocka.h. */
#ifndef MCPSBX_TEST_MCP_SINK_H
#define MCPSBX_TEST_MCP_SINK_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/util.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "unit/json_get.h"

#define MAX_REPLIES 4096

struct sink {
    struct mcp_channel ch;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    char *texts[MAX_REPLIES];
    size_t n;
    bool overflow;
};

static inline int sink_send(struct mcp_channel *ch, const char *json, size_t len)
{
    struct sink *k = (struct sink *)ch;
    pthread_mutex_lock(&k->lock);
    if (k->n < MAX_REPLIES)
        k->texts[k->n++] = xstrndup(json, len);
    else
        k->overflow = true;
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->lock);
    return 0;
}

static inline void sink_init(struct sink *k)
{
    memset(k, 0, sizeof(*k));
    mcp_channel_init(&k->ch, sink_send, NULL);
    pthread_mutex_init(&k->lock, NULL);
    util_cond_init_monotonic(&k->cond);
}

/* Waits (a hang guard of 20 s) until no call holds the channel: a worker
 * lets go of it just after its answer was sent. */
static inline void sink_free(struct sink *k)
{
    double until = util_now_ms() + 20000;
    while (atomic_load(&k->ch.refs) > 1 && util_now_ms() < until) {
        const struct timespec pause = {0, 1000000L};
        nanosleep(&pause, NULL);
    }
    assert_int_equal(atomic_load(&k->ch.refs), 1);
    for (size_t i = 0; i < k->n; i++)
        free(k->texts[i]);
    pthread_mutex_destroy(&k->lock);
    pthread_cond_destroy(&k->cond);
}

/* Waits (up to 20 s) until the sink holds want replies. */
static inline size_t sink_wait(struct sink *k, size_t want)
{
    double until = util_now_ms() + 20000;
    pthread_mutex_lock(&k->lock);
    while (k->n < want && util_now_ms() < until)
        util_cond_wait_ms(&k->cond, &k->lock, until - util_now_ms());
    size_t n = k->n;
    pthread_mutex_unlock(&k->lock);
    return n;
}

static inline json_object *parsed(struct sink *k, size_t i)
{
    char what[32];
    snprintf(what, sizeof(what), "reply %zu", i);
    return json_parse_or_fail(what, k->texts[i]);
}

/* The reply with this integer id, parsed (caller puts), or NULL. */
static inline json_object *reply_for(struct sink *k, int id)
{
    for (size_t i = 0; i < k->n; i++) {
        json_object *o = parsed(k, i);
        json_object *v = NULL;
        if (json_object_object_get_ex(o, "id", &v) && json_object_is_type(v, json_type_int) &&
            json_object_get_int(v) == id)
            return o;
        json_object_put(o);
    }
    return NULL;
}

static inline const char *status_of(json_object *reply)
{
    return json_object_get_string(
        json_get(json_get(json_get(reply, "result"), "structuredContent"), "status"));
}

/* ---- a server ------------------------------------------------------------ */

/* engine: "missing" (calls fail at once) or "stalled" (every backend
 * operation hangs until its deadline, so runs hold their slot for
 * timeout_ms). session_inflight, session_queued: one session's caps (-1:
 * the whole daemon's, as over stdio). */
static inline void send_text(struct mcp_session *s, struct sink *k, const char *text)
{
    mcp_session_receive(s, text, strlen(text), &k->ch);
}

/* send_text with a printf-style message. */
static inline void send_vfmt(struct mcp_session *s, struct sink *k, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static inline void send_vfmt(struct mcp_session *s, struct sink *k, const char *fmt, va_list ap)
{
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        abort();
    send_text(s, k, msg);
    free(msg);
}

static inline void send_fmt(struct mcp_session *s, struct sink *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void send_fmt(struct mcp_session *s, struct sink *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    send_vfmt(s, k, fmt, ap);
    va_end(ap);
}

static inline void initialize(struct mcp_session *s)
{
    struct sink k;
    sink_init(&k);
    send_text(s, &k,
              "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
              "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{"
              "\"name\":\"t\",\"version\":\"1\"}}}");
    assert_int_equal(sink_wait(&k, 1), 1);
    sink_free(&k);
}

/* The id of reply i, and whether it is a busy result naming option. */
static inline int id_at(struct sink *k, size_t i, const char *option)
{
    json_object *o = parsed(k, i);
    int id = json_object_get_int(json_get(o, "id"));
    if (option) {
        assert_string_equal(status_of(o), "busy");
        const char *msg = json_object_get_string(
            json_get(json_get(json_get(o, "result"), "structuredContent"), "message"));
        if (!strstr(msg, option))
            fail_msg("call %d: busy for another reason than %s: %s", id, option, msg);
    }
    json_object_put(o);
    return id;
}

#endif
