/* The HTTP transports on libmicrohttpd (MHD): start and stop, routing, the
 * request lifecycle and /healthz. The transport's files are listed in
 * transport_http.h.
 *
 * Threads: libmicrohttpd polls every connection with epoll on one thread
 * per core (MHD's thread pool); a connection is a few KiB of state, not a
 * thread. Handlers never block: a JSON answer that is not ready, a DELETE
 * waiting for its runs and an SSE reader with nothing to send suspend
 * their connection (MHD stops polling it) and whoever makes progress
 * resumes it (a worker sending a reply, the closer ending a session, the
 * janitor for keep-alives, hang-ups and stop). Two threads of the
 * transport's own: the janitor (http_sessions.c) closes connections past
 * their head or body deadline, ends idle sessions and un-initialized
 * legacy ones, sends keep-alives and notices clients gone from suspended
 * streams; the closer ends sessions (cancelling and waiting for their
 * runs) off the polling threads. mcp sends replies from its own threads
 * (workers, the queue timer) through the streams' channels (http_sse.c).
 *
 * Locking: t->lock guards the session table and every session's fields,
 * streams, events and readers, and every request's waiting fields. MHD's
 * suspend and resume are called under it (MHD takes only its own lock
 * inside them and never calls us holding that lock). t->conns has a lock
 * of its own (http_conns.h). mcp functions are never called with t->lock
 * held. Lifetimes: http_sessions.c (sessions), http_sse.h (streams).
 * json-c objects stay on the polling thread that parsed them; only
 * serialized bytes cross threads. */
#include "transport/http_server.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "base/netaddr.h"
#include "mcp/jsonrpc.h"
#include "transport/http_guard.h"
#include "transport/http_headers.h"
#include "transport/http_legacy.h"
#include "transport/http_mcp.h"
#include "transport/http_response.h"
#include "transport/http_sessions.h"
#include "transport/http_sse.h"

#define STOP_DRAIN_MS 3000 /* stop lets answers in progress go out */
/* MHD's own timeout, which restarts on every byte: a backstop for a client
 * that stops reading an answer. Deadlines of heads and bodies are ours
 * (http_conns.h); suspended connections do not time out. */
#define CONNECTION_TIMEOUT_S 120
/* MHD's memory per connection: the request head and its buffers. */
#define CONNECTION_MEMORY_BYTES (32u * 1024u)
/* Before a session exists the only message is an initialize: its body is
 * capped far below --max-message-bytes, so a client without a session
 * costs little. */
#define SESSIONLESS_BODY_MAX (64u * 1024u)
/* Near --max-connections, this many slots below it a new connection
 * closes the oldest one without a complete request head. */
#define EVICT_HEADROOM_MIN 16
/* /healthz answers from the engine's last answer: asked again once it is
 * this old, while health checks came within HEALTH_WANTED_MS. */
#define HEALTH_FRESH_MS  1000.0
#define HEALTH_WANTED_MS 30000.0
#define MAX_POLL_THREADS 16

#define ALLOW_METHODS "GET, POST, DELETE, OPTIONS"
#define ALLOW_HEADERS                                                                              \
    "Content-Type, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID"

/* ---- responses ----------------------------------------------------------- */

static enum MHD_Result reply_not_allowed(struct MHD_Connection *c, struct request *rq,
                                         const char *allow)
{
    struct MHD_Response *resp = http_response_error(HTTP_ERR_SERVER, "Method not allowed");
    if (resp)
        MHD_add_response_header(resp, "Allow", allow);
    return http_queue(c, rq, MHD_HTTP_METHOD_NOT_ALLOWED, resp);
}

static enum MHD_Result reply_preflight(struct MHD_Connection *c, struct request *rq,
                                       const char *allow)
{
    struct MHD_Response *resp = http_response_empty();
    if (resp) {
        MHD_add_response_header(resp, "Allow", allow);
        MHD_add_response_header(resp, "Access-Control-Allow-Methods", allow);
        MHD_add_response_header(resp, "Access-Control-Allow-Headers", ALLOW_HEADERS);
        MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
    }
    return http_queue(c, rq, MHD_HTTP_NO_CONTENT, resp);
}

/* ---- suspension ---------------------------------------------------------------- */

bool http_suspend_locked(struct transport_http *t, struct request *rq)
{
    /* Stop resumes every suspended connection once: none may come after. */
    if (t->stopping)
        return false;
    rq->suspended = true;
    LIST_INSERT_HEAD(&t->waiting, rq, wait_link);
    MHD_suspend_connection(rq->c);
    return true;
}

void http_resume_locked(struct transport_http *t, struct request *rq)
{
    (void)t; /* its lock is held; the list needs no head to leave */
    if (!rq->suspended)
        return;
    rq->suspended = false;
    LIST_REMOVE(rq, wait_link);
    MHD_resume_connection(rq->c);
}

/* ---- /healthz ---------------------------------------------------------------- */

/* Asks the engine (a round trip of up to the ping timeout) and keeps the
 * answer; never on a polling thread. */
static void health_refresh(struct transport_http *t)
{
    struct err err = ERR_INIT;
    const char *address = NULL;
    bool up = mcp_server_backend_ping(t->srv, &address, &err) == 0;
    pthread_mutex_lock(&t->lock);
    t->health_up = up;
    t->health_at = util_now_ms();
    t->health_address = address;
    snprintf(t->health_error, sizeof(t->health_error), "%s", up ? "" : err_msg(&err));
    pthread_mutex_unlock(&t->lock);
    err_clear(&err);
}

void http_health_tick(struct transport_http *t, double now)
{
    pthread_mutex_lock(&t->lock);
    bool due = now - t->health_wanted < HEALTH_WANTED_MS && now - t->health_at >= HEALTH_FRESH_MS;
    pthread_mutex_unlock(&t->lock);
    if (due)
        health_refresh(t);
}

/* Answered from what the janitor last heard from the engine (at most
 * HEALTH_FRESH_MS and a tick old while checks keep coming). Before auth it
 * says ok or unavailable and nothing else: where the engine listens and
 * why it fails are for the operator (a valid token). Start asks once
 * before it listens; "unknown" only if an answer named no address. */
static enum MHD_Result healthz(struct transport_http *t, struct MHD_Connection *c,
                               struct request *rq)
{
    bool details = rq->authenticated;
    json_object *o = json_object_new_object();
    pthread_mutex_lock(&t->lock);
    t->health_wanted = util_now_ms();
    bool up = t->health_up;
    bool asked = t->health_address != NULL;
    json_object_object_add(o, "status", json_object_new_string(up ? "ok" : "unavailable"));
    if (details) {
        const char *engine = up ? "reachable" : asked ? "unreachable" : "unknown";
        json_object_object_add(o, "engine", json_object_new_string(engine));
        if (!up)
            json_object_object_add(
                o, "error", json_object_new_string(asked ? t->health_error : "not asked yet"));
        if (asked)
            json_object_object_add(o, "socket", json_object_new_string(t->health_address));
    }
    pthread_mutex_unlock(&t->lock);
    struct MHD_Response *resp = http_response_json(o);
    if (resp)
        MHD_add_response_header(resp, "Cache-Control", "no-store");
    return http_queue(c, rq, up ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, resp);
}

/* ---- dispatch ---------------------------------------------------------------- */

static bool method_is(const char *method, const char *name)
{
    return strcmp(method, name) == 0;
}

/* The endpoints and the methods each answers. allow is the Allow header; a
 * CORS preflight (OPTIONS) is answered where it lists OPTIONS. */
static const struct endpoint {
    const char *path;
    const char *allow;
    struct {
        const char *method;
        http_handler *fn;
    } methods[3];
} ENDPOINTS[] = {
    {"/mcp",
     ALLOW_METHODS,
     {{"POST", http_mcp_post}, {"GET", http_mcp_get}, {"DELETE", http_mcp_delete}}},
    {"/sse", "GET, OPTIONS", {{"GET", http_legacy_sse}}},
    {"/messages", "POST, OPTIONS", {{"POST", http_legacy_messages}}},
    {"/healthz", "GET", {{"GET", healthz}}},
};

static enum MHD_Result route(struct transport_http *t, struct MHD_Connection *c, struct request *rq,
                             const char *url, const char *method)
{
    for (size_t i = 0; i < ARRAY_SIZE(ENDPOINTS); i++) {
        const struct endpoint *e = &ENDPOINTS[i];
        if (strcmp(url, e->path) != 0)
            continue;
        for (size_t m = 0; m < ARRAY_SIZE(e->methods) && e->methods[m].method; m++)
            if (method_is(method, e->methods[m].method))
                return e->methods[m].fn(t, c, rq);
        if (method_is(method, "OPTIONS") && strstr(e->allow, "OPTIONS"))
            return reply_preflight(c, rq, e->allow);
        return reply_not_allowed(c, rq, e->allow);
    }
    return http_reply_error(c, rq, MHD_HTTP_NOT_FOUND, HTTP_ERR_SERVER,
                            "Not Found: the MCP endpoint is /mcp");
}

/* A request MHD calls again after its connection was resumed. */
static enum MHD_Result resumed(struct transport_http *t, struct MHD_Connection *c,
                               struct request *rq)
{
    switch (rq->wait) {
    case RQ_WAIT_JSON:
        return http_mcp_json_ready(t, c, rq);
    case RQ_WAIT_CLOSE:
        return http_mcp_delete_done(t, c, rq);
    case RQ_WAIT_NONE:
        break;
    }
    return MHD_NO;
}

/* Reserves what rq's body may take of --max-inflight-body-bytes: its
 * announced length, else its cap. */
static bool reserve_body(struct transport_http *t, struct request *rq, const char *length)
{
    size_t want = rq->body_cap;
    if (length) {
        unsigned long long n = strtoull(length, NULL, 10);
        if (n < want)
            want = (size_t)n;
    }
    pthread_mutex_lock(&t->lock);
    bool ok = want <= (size_t)t->cfg->max_inflight_body_bytes - t->body_bytes;
    if (ok) {
        t->body_bytes += want;
        rq->reserved = want;
    }
    pthread_mutex_unlock(&t->lock);
    return ok;
}

enum request_admit http_request_admit(struct transport_http *t, struct request *rq, bool counts)
{
    enum request_admit a = ADMIT_OK;
    pthread_mutex_lock(&t->lock);
    t->body_bytes -= rq->reserved;
    rq->reserved = 0;
    if (rq->sess && rq->sess->ended)
        a = ADMIT_ENDED;
    else if (rq->sess && counts && !rq->counted) {
        if (rq->sess->requests < t->cfg->max_session_requests) {
            rq->sess->requests++;
            rq->counted = true;
        } else {
            a = ADMIT_BUSY;
        }
    }
    pthread_mutex_unlock(&t->lock);
    buf_free(&rq->body);
    return a;
}

void http_release_body(struct transport_http *t, struct request *rq)
{
    buf_free(&rq->body);
    if (!rq->reserved)
        return;
    pthread_mutex_lock(&t->lock);
    t->body_bytes -= rq->reserved;
    rq->reserved = 0;
    pthread_mutex_unlock(&t->lock);
}

/* What the head alone decides, before any body is read: the guard, the
 * size announced, and for the POST endpoints the session (a body is never
 * read for a session that does not exist, and one without a session may
 * only be a small initialize). Answers early (MHD then skips the body and
 * closes the connection) or returns MHD_YES to go on. */
static enum MHD_Result first_call(struct transport_http *t, struct MHD_Connection *c,
                                  struct request *rq, const char *url, const char *method,
                                  bool stopping)
{
    if (stopping)
        return http_reply_busy(c, rq, MHD_HTTP_SERVICE_UNAVAILABLE, "server busy: shutting down");
    /* A complete head: its connection is no longer one that may be
     * closed to make room (the guard's answer, if it refuses, is quick). */
    bool body = method_is(method, "POST") || http_header(c, "Content-Length") ||
                http_header(c, "Transfer-Encoding");
    conns_head_done(&t->conns, rq->conn, body);
    enum MHD_Result ret = MHD_NO;
    if (!http_guard_admit(t, c, rq, url, method, &ret))
        return ret;
    rq->body_cap = (size_t)t->cfg->max_message_bytes;
    if (method_is(method, "POST") && strcmp(url, "/mcp") == 0)
        ret = http_mcp_post_head(t, c, rq, SESSIONLESS_BODY_MAX);
    else if (method_is(method, "POST") && strcmp(url, "/messages") == 0)
        ret = http_legacy_messages_head(t, c, rq);
    else
        ret = MHD_YES;
    if (ret != MHD_YES || rq->status)
        return ret;
    /* Refused before the body is read (and before 100 Continue). */
    const char *length = http_header(c, "Content-Length");
    if (http_content_length_over(length, rq->body_cap))
        return http_reply_too_big(c, rq, t->cfg->max_message_bytes);
    if (body && !reserve_body(t, rq, length))
        return http_reply_busy(c, rq, MHD_HTTP_SERVICE_UNAVAILABLE,
                               "server busy: too many request bodies at once "
                               "(--max-inflight-body-bytes); try again shortly");
    buf_init(&rq->body, rq->body_cap);
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    struct transport_http *t = cls;
    struct request *rq = *req_cls;
    (void)version;
    if (!rq) {
        rq = xcalloc(1, sizeof(*rq));
        rq->start = util_now_ms();
        rq->c = c;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        rq->conn = ci ? ci->socket_context : NULL;
        util_printable_ascii(rq->method, sizeof(rq->method), method, strlen(method), false);
        util_printable_ascii(rq->path, sizeof(rq->path), url, strlen(url), false);
        buf_init(&rq->body, 0);
        *req_cls = rq;
        pthread_mutex_lock(&t->lock);
        t->active++;
        bool stopping = t->stopping;
        pthread_mutex_unlock(&t->lock);
        return first_call(t, c, rq, url, method, stopping);
    }
    if (*upload_data_size) {
        rq->received += *upload_data_size;
        if (!rq->too_big && buf_add(&rq->body, upload_data, *upload_data_size) < 0) {
            rq->too_big = true;
            buf_free(&rq->body);
        }
        *upload_data_size = 0;
        /* Without a Content-Length the cap shows only while reading, and
         * MHD can answer only once the body is in: past twice the cap,
         * stop reading and drop the connection instead. */
        if (rq->too_big && rq->received / 2 > rq->body_cap)
            return MHD_NO;
        return MHD_YES;
    }
    if (rq->body_in)
        return resumed(t, c, rq);
    rq->body_in = true;
    conns_body_done(&t->conns, rq->conn);
    /* Only the POST endpoints read a body: any other's room goes back
     * now, not when the request (an SSE stream, say) ends. */
    if (!method_is(method, "POST") || (strcmp(url, "/mcp") != 0 && strcmp(url, "/messages") != 0))
        http_release_body(t, rq);
    return route(t, c, rq, url, method);
}

/* Stop refuses new connections here rather than with MHD_quiesce_daemon:
 * in 0.9.75's thread-pool epoll mode, quiesce races a polling thread that
 * takes the listen socket out of its own epoll set first, and panics. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
    (void)addr;
    (void)len;
    const struct transport_http *t = cls;
    return atomic_load(&t->closed) ? MHD_NO : MHD_YES;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct transport_http *t = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_ctx = conns_opened(&t->conns, ci ? ci->connect_fd : -1);
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        conns_closed(&t->conns, *socket_ctx);
        *socket_ctx = NULL;
    }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct transport_http *t = cls;
    struct request *rq = *req_cls;
    (void)c;
    if (!rq)
        return;
    if (rq->conn) /* kept alive or not: its next head, if any, has a deadline */
        conns_request_done(&t->conns, rq->conn);
    http_mcp_request_done(t, rq);
    /* A stateless session lives as long as its request: a client gone
     * before the answer cancels the run. */
    if (rq->sess && rq->sess->stateless)
        http_session_end_stateless(rq->sess);
    struct session *last = NULL;
    pthread_mutex_lock(&t->lock);
    t->active--;
    if (t->stopping)
        pthread_cond_broadcast(&t->janitor_cond); /* stop is draining */
    t->body_bytes -= rq->reserved;
    rq->reserved = 0;
    if (rq->sess && http_session_request_done_locked(rq->sess, rq->counted))
        last = rq->sess;
    pthread_mutex_unlock(&t->lock);
    if (last)
        http_session_free(last);
    log_debug("http: %s %s %u %.0f ms%s", rq->method, rq->path, rq->status,
              util_now_ms() - rq->start,
              toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection ended early)");
    http_release_body(t, rq);
    free(rq);
    *req_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) ATTR_PRINTF(2, 0);

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    const struct transport_http *t = cls;
    char *msg = xvasprintf(fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    /* Once serving, MHD mostly reports clients that went away; its text
     * may quote what a client sent. */
    if (atomic_load(&t->started))
        log_debug("http: %s", LOG_FIELD(msg));
    else
        log_error("http: %s", LOG_FIELD(msg));
    free(msg);
}

static int discard_send(struct mcp_channel *ch, const char *json, size_t len)
{
    (void)ch;
    (void)json;
    (void)len;
    return 0;
}

/* ---- start and stop ----------------------------------------------------------- */

/* How a Host header names the bind address; NULL for wildcard addresses,
 * which a browser must not be able to use to reach us. */
static char *self_host_name(const char *host)
{
    if (!host || !*host || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0)
        return NULL;
    if (strchr(host, ':'))
        return xasprintf("[%s]", host);
    return xstrdup(host);
}

/* One polling thread per core: enough to keep every core busy answering,
 * and the count does not grow with connections. */
static unsigned poll_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    return n > MAX_POLL_THREADS ? MAX_POLL_THREADS : (unsigned)n;
}

/* What transport_http_start made, once no thread uses it. */
static void http_free(struct transport_http *t)
{
    conns_destroy(&t->conns);
    pthread_cond_destroy(&t->closer_cond);
    pthread_cond_destroy(&t->janitor_cond);
    pthread_mutex_destroy(&t->lock);
    free(t->self_host);
    free(t);
}

int transport_http_start(struct mcp_server *srv, const struct config *cfg,
                         struct transport_http **out, struct err *err)
{
    struct sockaddr_storage ss;
    *out = NULL;
    if (netaddr_resolve_listen(cfg->http_host, cfg->http_port, &ss, err) < 0)
        return -1;
    bool v6 = ss.ss_family == AF_INET6;
    /* The address bound, checked again: a name may resolve differently
     * than when the configuration was checked. */
    if (!netaddr_is_loopback((const struct sockaddr *)&ss) &&
        !(cfg->auth_token && *cfg->auth_token))
        return err_set(err, ERR_INVALID,
                       "--http: refusing to serve a non-loopback address without a bearer "
                       "token (--auth-token-file)");

    struct transport_http *t = xcalloc(1, sizeof(*t));
    STAILQ_INIT(&t->to_close);
    t->srv = srv;
    t->cfg = cfg;
    t->self_host = self_host_name(cfg->http_host);
    t->threads = poll_threads();
    mcp_channel_init(&t->discard, discard_send, NULL);
    pthread_mutex_init(&t->lock, NULL);
    util_cond_init_monotonic(&t->janitor_cond);
    util_cond_init_monotonic(&t->closer_cond);
    size_t headroom = (size_t)cfg->max_connections / 64;
    if (headroom < EVICT_HEADROOM_MIN + t->threads)
        headroom = EVICT_HEADROOM_MIN + t->threads;
    conns_init(&t->conns, (size_t)cfg->max_connections, headroom, (double)cfg->http_head_timeout_ms,
               (double)cfg->http_body_timeout_ms);

    /* The engine's first answer before the first request can come: a
     * check with a token reads where it listens. */
    health_refresh(t);
    /* epoll on a pool of polling threads; suspend and resume (which need
     * ITC) for answers that are not ready. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0);
    t->daemon = MHD_start_daemon(
        flags, (uint16_t)cfg->http_port, on_accept, t, on_request, t, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_log, t, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE,
        t->threads, MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_connections_per_address,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY_BYTES,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, t, MHD_OPTION_NOTIFY_COMPLETED, on_completed, t, MHD_OPTION_END);
    if (!t->daemon) {
        err_set(err, ERR_IO, "cannot listen on %s%s%s:%u (see the message above)", v6 ? "[" : "",
                cfg->http_host ? cfg->http_host : "127.0.0.1", v6 ? "]" : "", cfg->http_port);
        goto fail;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(t->daemon, MHD_DAEMON_INFO_BIND_PORT);
    t->port = info ? info->port : cfg->http_port;
    atomic_store(&t->started, true);

    if (http_sessions_start(t, err) < 0) {
        MHD_stop_daemon(t->daemon);
        goto fail;
    }
    *out = t;
    return 0;
fail:
    http_free(t);
    return -1;
}

unsigned transport_http_port(const struct transport_http *t)
{
    return t->port;
}

unsigned transport_http_threads(const struct transport_http *t)
{
    return t->threads;
}

void transport_http_stop(struct transport_http *t)
{
    if (!t)
        return;
    /* 1. Stop accepting; refuse new requests on open connections; end
     * every live session (http_sessions_stop): runs are cancelled and
     * waited for, so every reply stream completes and its waiting request
     * is resumed; streams' readers are resumed to end. */
    atomic_store(&t->closed, true);
    http_sessions_stop(t);

    /* 2. Give answers in progress a moment to reach the clients. */
    double deadline = util_now_ms() + STOP_DRAIN_MS;
    pthread_mutex_lock(&t->lock);
    while (t->active > 0 && util_now_ms() < deadline)
        util_cond_wait_ms(&t->janitor_cond, &t->lock, 100);
    int left = t->active;
    /* MHD must not be stopped with a connection suspended. */
    while (!LIST_EMPTY(&t->waiting))
        http_resume_locked(t, LIST_FIRST(&t->waiting));
    http_readers_wake_locked(t, NULL, NULL);
    pthread_mutex_unlock(&t->lock);
    if (left)
        log_debug("http: stopping with %d request(s) unfinished", left);

    /* 3. MHD joins its threads; their responses' free callbacks drop the
     * last handler and reader references (freeing the sessions). */
    MHD_stop_daemon(t->daemon);
    http_sessions_join(t);
    http_free(t);
}
