/* Lifetimes: a session is reference counted under t->lock. The table holds
 * one reference until the session ends; every handler and SSE reader using
 * it holds one. Ending unlinks it at once and hands the table's reference
 * to the closer, whose mcp_session_close() cancels and waits for its runs;
 * so once the last reference goes no mcp thread can reach its streams.
 * mcp's lock is never taken under t->lock. */
#include "transport/http_sessions.h"

#include <poll.h>
#include <string.h>

#include "base/log.h"
#include "transport/http_guard.h"
#include "transport/http_sse.h"

/* The janitor's tick: the resolution of head and body deadlines, idle and
 * grace expiry, and how soon a client gone from a waiting stream is seen. */
#define JANITOR_PERIOD_MS 250

static void session_free(struct session *s)
{
    mcp_session_free(s->mcp);
    while (s->streams) {
        struct stream *st = s->streams;
        s->streams = st->next;
        http_stream_free(st);
    }
    free(s);
}

struct session *http_session_create(struct transport_http *t, const struct request *rq, bool legacy,
                                    unsigned *status, const char **why)
{
    char id[SESSION_ID_CAP];
    if (handle_new(id) < 0) {
        *status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        *why = "Internal error: no randomness for a session id";
        return NULL;
    }
    struct session *s = xcalloc(1, sizeof(*s));
    s->t = t;
    memcpy(s->id, id, sizeof(s->id));
    s->legacy = legacy;
    s->refs = 2;
    s->created = s->last_active = util_now_ms();
    char principal[MCP_PRINCIPAL_CAP];
    http_principal(t, rq, principal);
    s->mcp = mcp_session_new(t->srv, principal);
    if (legacy)
        s->legacy_stream = http_stream_new(s, STREAM_LEGACY);

    pthread_mutex_lock(&t->lock);
    bool stopping = t->stopping;
    /* A pending legacy session is bounded by its connection (its SSE
     * stream), and by its grace. */
    bool full = !legacy && t->n_sessions >= (size_t)t->cfg->max_sessions;
    if (!stopping && !full) {
        s->next = t->sessions;
        t->sessions = s;
        s->counted = !legacy;
        if (legacy)
            t->n_pending++;
        else
            t->n_sessions++;
    }
    pthread_mutex_unlock(&t->lock);
    if (stopping || full) {
        *status = MHD_HTTP_SERVICE_UNAVAILABLE;
        *why = stopping ? "server busy: shutting down" : "server busy: too many sessions";
        session_free(s);
        return NULL;
    }
    log_debug("http: session %.8s... started%s", handle_tail(s->id), legacy ? " (HTTP+SSE)" : "");
    return s;
}

struct session *http_session_create_stateless(struct transport_http *t, const struct request *rq,
                                              unsigned *status, const char **why)
{
    struct session *s = xcalloc(1, sizeof(*s));
    s->t = t;
    s->stateless = true;
    s->refs = 2;
    s->created = s->last_active = util_now_ms();
    snprintf(s->id, sizeof(s->id), "stateless");
    char principal[MCP_PRINCIPAL_CAP];
    http_principal(t, rq, principal);
    s->mcp = mcp_session_new_stateless(t->srv, principal);
    pthread_mutex_lock(&t->lock);
    bool stopping = t->stopping;
    if (!stopping) { /* in the table so that stop ends it too */
        s->next = t->sessions;
        t->sessions = s;
    }
    pthread_mutex_unlock(&t->lock);
    if (stopping) {
        *status = MHD_HTTP_SERVICE_UNAVAILABLE;
        *why = "server busy: shutting down";
        session_free(s);
        return NULL;
    }
    return s;
}

bool http_session_count(struct session *s)
{
    struct transport_http *t = s->t;
    pthread_mutex_lock(&t->lock);
    bool ok = s->counted;
    if (!ok && !s->ended && t->n_sessions < (size_t)t->cfg->max_sessions) {
        s->counted = ok = true;
        t->n_pending--;
        t->n_sessions++;
    }
    pthread_mutex_unlock(&t->lock);
    return ok;
}

struct session *http_session_get(struct transport_http *t, const char *id, bool legacy)
{
    if (handle_parse(id, NULL) != HANDLE_MINE)
        return NULL;
    struct session *found = NULL;
    pthread_mutex_lock(&t->lock);
    for (struct session *s = t->sessions; s && !found; s = s->next)
        if (!s->stateless && s->legacy == legacy && handle_equal(id, s->id))
            found = s;
    if (found) {
        found->refs++;
        found->last_active = util_now_ms();
    }
    pthread_mutex_unlock(&t->lock);
    return found;
}

char *http_session_not_found(const char *id)
{
    char daemon[HANDLE_DAEMON_MAX + 1];
    if (handle_parse(id, daemon) != HANDLE_OTHER)
        return xstrdup("Session not found");
    return xasprintf("Session not found: it is held by daemon \"%s\" (this is \"%s\")", daemon,
                     handle_daemon());
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

bool http_session_request_begin(struct session *s)
{
    pthread_mutex_lock(&s->t->lock);
    bool ok = s->requests < s->t->cfg->max_session_requests;
    if (ok)
        s->requests++;
    pthread_mutex_unlock(&s->t->lock);
    return ok;
}

bool http_session_request_done_locked(struct session *s, bool counted)
{
    if (counted)
        s->requests--;
    s->last_active = util_now_ms();
    return --s->refs == 0;
}

void http_session_free(struct session *s)
{
    session_free(s);
}

/* Marks s ended, unlinks it (later lookups fail), wakes its streams'
 * readers and queues it for the closer with the table's reference; true
 * if this call did (lock held). */
static bool session_end_locked(struct session *s, struct request *waiter)
{
    struct transport_http *t = s->t;
    if (s->ended)
        return false;
    s->ended = true;
    for (struct session **pp = &t->sessions; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    if (s->counted)
        t->n_sessions--;
    else if (!s->stateless) /* (a stateless one is never counted) */
        t->n_pending--;
    http_readers_wake_locked(t, s, NULL);
    s->close_waiter = waiter;
    /* In the order they ended: a DELETE waits behind no later one. */
    STAILQ_INSERT_TAIL(&t->to_close, s, close_link);
    pthread_cond_signal(&t->closer_cond);
    return true;
}

bool http_session_end(struct session *s, struct request *waiter)
{
    pthread_mutex_lock(&s->t->lock);
    bool did = session_end_locked(s, waiter);
    pthread_mutex_unlock(&s->t->lock);
    return did;
}

void http_session_end_stateless(struct session *s)
{
    /* Nothing running: ended here, without a trip through the closer (two
     * thread hand-offs per request, measured as most of the stateless
     * wire's cost over the 2025 one). No message can reach it any more:
     * its request is over. */
    if (mcp_session_inflight(s->mcp) > 0) {
        http_session_end(s, NULL);
        return;
    }
    struct transport_http *t = s->t;
    pthread_mutex_lock(&t->lock);
    bool did = !s->ended;
    if (did) {
        s->ended = true;
        for (struct session **pp = &t->sessions; *pp; pp = &(*pp)->next) {
            if (*pp == s) {
                *pp = s->next;
                break;
            }
        }
        http_readers_wake_locked(t, s, NULL);
    }
    pthread_mutex_unlock(&t->lock);
    if (!did)
        return;
    mcp_session_close(s->mcp);
    pthread_mutex_lock(&t->lock);
    bool last = --s->refs == 0; /* the table's */
    pthread_mutex_unlock(&t->lock);
    if (last)
        session_free(s);
}

void http_session_end_put(struct session *s)
{
    http_session_end(s, NULL);
    http_session_put(s);
}

/* ---- the closer ------------------------------------------------------------ */

/* Ends sessions' runs (cancelling them and waiting until they returned,
 * which can take an engine round trip) off MHD's polling threads. */
static void *closer_main(void *arg)
{
    struct transport_http *t = arg;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        struct session *s = STAILQ_FIRST(&t->to_close);
        if (!s) {
            if (t->threads_stop)
                break;
            pthread_cond_wait(&t->closer_cond, &t->lock);
            continue;
        }
        STAILQ_REMOVE_HEAD(&t->to_close, close_link);
        t->closing++;
        pthread_mutex_unlock(&t->lock);
        mcp_session_close(s->mcp);
        if (!s->stateless)
            log_debug("http: session %.8s... ended", handle_tail(s->id));
        pthread_mutex_lock(&t->lock);
        if (s->close_waiter) {
            s->close_waiter->closed = true;
            http_resume_locked(t, s->close_waiter);
            s->close_waiter = NULL;
        }
        bool last = --s->refs == 0; /* the table's */
        t->closing--;
        if (t->stopping) /* stop waits for the queue; no one else does */
            pthread_cond_broadcast(&t->janitor_cond);
        if (last) {
            pthread_mutex_unlock(&t->lock);
            session_free(s);
            pthread_mutex_lock(&t->lock);
        }
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* ---- the janitor ----------------------------------------------------------- */

static bool session_idle_locked(const struct session *s, double now)
{
    return !s->ended && s->readers == 0 && s->refs == 1 &&
           now - s->last_active >= (double)s->t->cfg->session_idle_ms;
}

/* Ends sessions unused for session_idle_ms with nothing running, and
 * legacy ones whose client did not initialize within the head timeout. */
static void sweep_sessions(struct transport_http *t)
{
    double now = util_now_ms();
    struct session *idle[64];
    size_t n = 0;
    pthread_mutex_lock(&t->lock);
    for (struct session *s = t->sessions; s; s = s->next) {
        if (s->stateless)
            continue; /* its request ends it */
        if (!s->counted && now - s->created >= (double)t->cfg->http_head_timeout_ms) {
            log_debug("http: session %.8s... not initialized in time", handle_tail(s->id));
            session_end_locked(s, NULL); /* unlinks s; s->next stays */
            continue;
        }
        if (n < ARRAY_SIZE(idle) && session_idle_locked(s, now)) {
            s->refs++;
            idle[n++] = s;
        }
    }
    pthread_mutex_unlock(&t->lock);
    for (size_t i = 0; i < n; i++) {
        struct session *s = idle[i];
        /* mcp's lock is never taken under ours. */
        bool running = mcp_session_inflight(s->mcp) > 0;
        pthread_mutex_lock(&t->lock);
        s->refs--; /* ours: the table's (or the closer's) stays */
        if (!running && session_idle_locked(s, util_now_ms())) {
            log_debug("http: session %.8s... idle", handle_tail(s->id));
            session_end_locked(s, NULL);
        }
        bool last = s->refs == 0;
        pthread_mutex_unlock(&t->lock);
        if (last)
            session_free(s);
    }
}

static void *janitor_main(void *arg)
{
    struct transport_http *t = arg;
    double next = util_now_ms() + JANITOR_PERIOD_MS;
    pthread_mutex_lock(&t->lock);
    while (!t->threads_stop) {
        double now = util_now_ms();
        if (now < next) {
            util_cond_wait_ms(&t->janitor_cond, &t->lock, next - now);
            continue; /* woken early (stop, or the closer's progress) */
        }
        next = now + JANITOR_PERIOD_MS;
        pthread_mutex_unlock(&t->lock);
        conns_expire(&t->conns, now);
        sweep_sessions(t);
        http_readers_tick(t, now);
        http_health_tick(t, now);
        pthread_mutex_lock(&t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

int http_sessions_start(struct transport_http *t, struct err *err)
{
    if (pthread_create(&t->janitor, NULL, janitor_main, t) != 0)
        return err_set(err, ERR_INTERNAL, "cannot start the session janitor thread");
    t->janitor_running = true;
    if (pthread_create(&t->closer, NULL, closer_main, t) != 0) {
        http_sessions_join(t);
        return err_set(err, ERR_INTERNAL, "cannot start the session closer thread");
    }
    t->closer_running = true;
    return 0;
}

void http_sessions_stop(struct transport_http *t)
{
    pthread_mutex_lock(&t->lock);
    t->stopping = true;
    while (t->sessions)
        session_end_locked(t->sessions, NULL);
    http_readers_wake_locked(t, NULL, NULL);
    while ((!STAILQ_EMPTY(&t->to_close) || t->closing) && t->closer_running)
        util_cond_wait_ms(&t->janitor_cond, &t->lock, 100);
    pthread_mutex_unlock(&t->lock);
}

void http_sessions_join(struct transport_http *t)
{
    pthread_mutex_lock(&t->lock);
    t->threads_stop = true;
    pthread_cond_broadcast(&t->janitor_cond);
    pthread_cond_broadcast(&t->closer_cond);
    pthread_mutex_unlock(&t->lock);
    if (t->janitor_running)
        pthread_join(t->janitor, NULL);
    if (t->closer_running)
        pthread_join(t->closer, NULL);
    t->janitor_running = t->closer_running = false;
}
