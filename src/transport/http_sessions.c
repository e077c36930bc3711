/* Lifetimes: a session is reference counted under t->lock. The table holds
 * one reference until the session ends; every handler and SSE reader using
 * it holds one. Ending unlinks it, then mcp_session_close() cancels and
 * waits for its runs, so once the last reference goes no mcp thread can
 * reach its streams. mcp's lock is never taken under t->lock. */
#include "transport/http_sessions.h"

#include <string.h>

#include "base/log.h"
#include "transport/http_guard.h"
#include "transport/http_sse.h"

#define JANITOR_PERIOD_MS 1000 /* at most; shorter for short idle limits */

static void session_free(struct session *s)
{
    mcp_session_free(s->mcp);
    while (s->streams) {
        struct stream *st = s->streams;
        s->streams = st->next;
        http_stream_free(st);
    }
    pthread_cond_destroy(&s->cond);
    free(s);
}

struct session *http_session_create(struct transport_http *t, bool legacy, unsigned *status,
                                    const char **why)
{
    unsigned char raw[SESSION_ID_BYTES];
    if (util_random_bytes(raw, sizeof(raw)) < 0) {
        *status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        *why = "Internal error: no randomness for a session id";
        return NULL;
    }
    struct session *s = xcalloc(1, sizeof(*s));
    s->t = t;
    util_hex(raw, sizeof(raw), s->id);
    util_cond_init_monotonic(&s->cond);
    s->legacy = legacy;
    s->refs = 2;
    s->last_active = util_now_ms();
    s->mcp = mcp_session_new(t->srv);
    if (legacy)
        s->legacy_stream = http_stream_new(s, STREAM_LEGACY);

    pthread_mutex_lock(&t->lock);
    bool stopping = t->stopping;
    bool full = t->n_sessions >= (size_t)t->cfg->max_sessions;
    if (!stopping && !full) {
        s->next = t->sessions;
        t->sessions = s;
        t->n_sessions++;
    }
    pthread_mutex_unlock(&t->lock);
    if (stopping || full) {
        *status = MHD_HTTP_SERVICE_UNAVAILABLE;
        *why = stopping ? "server busy: shutting down" : "server busy: too many sessions";
        session_free(s);
        return NULL;
    }
    log_debug("http: session %.8s... started%s", s->id, legacy ? " (HTTP+SSE)" : "");
    return s;
}

struct session *http_session_get(struct transport_http *t, const char *id, bool legacy)
{
    if (!id || strlen(id) != SESSION_ID_LEN)
        return NULL;
    struct session *found = NULL;
    pthread_mutex_lock(&t->lock);
    for (struct session *s = t->sessions; s && !found; s = s->next)
        if (s->legacy == legacy && http_secret_equal(id, SESSION_ID_LEN, s->id))
            found = s;
    if (found) {
        found->refs++;
        found->last_active = util_now_ms();
    }
    pthread_mutex_unlock(&t->lock);
    return found;
}

void http_session_put(struct session *s)
{
    struct transport_http *t = s->t;
    pthread_mutex_lock(&t->lock);
    s->last_active = util_now_ms();
    bool last = --s->refs == 0;
    pthread_mutex_unlock(&t->lock);
    if (last)
        session_free(s);
}

/* Marks s ended and unlinks it (later lookups fail); true if this call did. */
static bool session_detach_locked(struct session *s)
{
    struct transport_http *t = s->t;
    if (s->ended)
        return false;
    s->ended = true;
    for (struct session **pp = &t->sessions; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            t->n_sessions--;
            break;
        }
    }
    pthread_cond_broadcast(&s->cond);
    return true;
}

/* After session_detach_locked: cancels and waits for the session's runs
 * (which completes its streams), then drops the table's reference and
 * caller_refs more (the caller's own, when it is done with s). */
static void session_finish_end(struct session *s, bool detached, int caller_refs)
{
    struct transport_http *t = s->t;
    if (detached) {
        mcp_session_close(s->mcp);
        log_debug("http: session %.8s... ended", s->id);
    }
    pthread_mutex_lock(&t->lock);
    s->refs -= (detached ? 1 : 0) + caller_refs;
    bool last = s->refs == 0;
    pthread_mutex_unlock(&t->lock);
    if (last)
        session_free(s);
}

void http_session_end(struct session *s)
{
    pthread_mutex_lock(&s->t->lock);
    bool did = session_detach_locked(s);
    pthread_mutex_unlock(&s->t->lock);
    session_finish_end(s, did, 0);
}

void http_session_end_put(struct session *s)
{
    pthread_mutex_lock(&s->t->lock);
    bool did = session_detach_locked(s);
    pthread_mutex_unlock(&s->t->lock);
    session_finish_end(s, did, 1);
}

/* ---- the janitor ----------------------------------------------------------- */

static bool session_idle_locked(const struct session *s, double now, int extra_refs)
{
    return !s->ended && s->refs == 1 + extra_refs && s->readers == 0 &&
           now - s->last_active >= (double)s->t->cfg->session_idle_ms;
}

/* Ends sessions unused for session_idle_ms with nothing running. */
static void janitor_sweep_locked(struct transport_http *t)
{
    double now = util_now_ms();
    struct session *idle = NULL;
    for (struct session *s = t->sessions; s; s = s->next) {
        if (session_idle_locked(s, now, 0)) {
            s->refs++;
            s->sweep_next = idle;
            idle = s;
        }
    }
    if (!idle)
        return;
    pthread_mutex_unlock(&t->lock);
    while (idle) {
        struct session *s = idle;
        idle = s->sweep_next;
        /* mcp's lock is never taken under ours. */
        bool running = mcp_session_inflight(s->mcp) > 0;
        pthread_mutex_lock(&t->lock);
        bool end = !running && session_idle_locked(s, util_now_ms(), 1) && session_detach_locked(s);
        pthread_mutex_unlock(&t->lock);
        if (end)
            log_debug("http: session %.8s... idle", s->id);
        session_finish_end(s, end, 1);
    }
    pthread_mutex_lock(&t->lock);
}

static void *janitor_main(void *arg)
{
    struct transport_http *t = arg;
    long period = (long)(t->cfg->session_idle_ms / 4);
    if (period > JANITOR_PERIOD_MS)
        period = JANITOR_PERIOD_MS;
    if (period < 50)
        period = 50;
    pthread_mutex_lock(&t->lock);
    while (!t->stopping) {
        util_cond_wait_ms(&t->janitor_cond, &t->lock, period);
        if (!t->stopping)
            janitor_sweep_locked(t);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

int http_sessions_start(struct transport_http *t, struct err *err)
{
    if (pthread_create(&t->janitor, NULL, janitor_main, t) != 0)
        return err_set(err, ERR_INTERNAL, "cannot start the session janitor thread");
    t->janitor_running = true;
    return 0;
}

void http_sessions_stop(struct transport_http *t)
{
    pthread_mutex_lock(&t->lock);
    t->stopping = true;
    struct session *all = NULL;
    for (struct session *s = t->sessions; s; s = s->next) {
        s->refs++;
        s->stop_next = all;
        all = s;
    }
    pthread_cond_broadcast(&t->janitor_cond);
    pthread_mutex_unlock(&t->lock);
    if (t->janitor_running)
        pthread_join(t->janitor, NULL);

    /* Runs are cancelled and waited for, so every reply stream completes;
     * readers and waiting handlers wake and finish. */
    while (all) {
        struct session *s = all;
        all = s->stop_next;
        http_session_end_put(s);
    }
}
