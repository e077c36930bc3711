/* The HTTP transports on libmicrohttpd (MHD): start and stop, routing, the
 * request lifecycle and /healthz.
 *
 * Files of the HTTP transport (src/transport/):
 *   transport_http.h    the public entry main.c uses: start, port, stop
 *   http_server.[ch]    this file; the transport object shared by the others
 *   http_response.[ch]  one request's state, and the plain responses every
 *                       handler answers with
 *   http_guard.[ch]     Host and Origin allow-lists, bearer token: checked first
 *   http_headers.[ch]   pure parsers of header values (Accept, Content-Type,
 *                       Host, Origin, Authorization, Content-Length,
 *                       Last-Event-ID, MCP-Protocol-Version)
 *   http_sessions.[ch]  the session table, reference counts, ending, janitor
 *   http_sse.[ch]       reply streams, SSE event ids, the replay buffer that
 *                       Last-Event-ID resumes from, SSE readers, keep-alives
 *   http_mcp.[ch]       /mcp, streamable HTTP: POST, GET, DELETE
 *   http_legacy.[ch]    /sse + /messages, the 2024-11-05 HTTP+SSE transport
 *
 * Threads: MHD's listener accepts connections and gives each a thread of
 * its own, which runs on_request and, for an SSE answer, the stream's
 * content reader; so handlers and readers may block on condition variables
 * (a JSON answer until its stream completes, an SSE reader until its next
 * event). A janitor thread ends idle sessions (http_sessions.c). mcp sends
 * replies from its own threads (workers, the queue timer) through the
 * streams' channels (http_sse.c). main starts and stops the transport.
 *
 * Locking: one mutex, t->lock, guards the session table and every session's
 * fields, streams and events. Each session has a condition variable (used
 * with t->lock), broadcast when one of its streams gets an event or
 * completes and when the session ends. mcp functions are never called with
 * t->lock held. Lifetimes: http_sessions.c (sessions), http_sse.h (streams).
 * json-c objects stay on the connection thread that parsed them; only
 * serialized bytes cross threads. */
#include "transport/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "base/log.h"
#include "mcp/jsonrpc.h"
#include "transport/http_guard.h"
#include "transport/http_headers.h"
#include "transport/http_legacy.h"
#include "transport/http_mcp.h"
#include "transport/http_response.h"
#include "transport/http_sessions.h"

#define STOP_DRAIN_MS        3000 /* stop lets answers in progress go out */
#define CONNECTION_TIMEOUT_S 120  /* within a request; SSE writes keep theirs */
/* A connection with no request under way (not yet one, or between
 * keep-alive requests) is closed after this long, so idle or trickling
 * clients cannot hold the connection slots. */
#define IDLE_TIMEOUT_S 10
/* Each connection has a thread (thread per connection): small stacks keep
 * --max-connections of them cheap. Handlers keep little on the stack; JSON
 * nesting is capped (JSONRPC_MAX_DEPTH). */
#define THREAD_STACK_BYTES (1u << 20)

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

/* ---- /healthz ---------------------------------------------------------------- */

static enum MHD_Result healthz(struct transport_http *t, struct MHD_Connection *c,
                               struct request *rq)
{
    struct err err = ERR_INIT;
    json_object *o = json_object_new_object();
    unsigned status = MHD_HTTP_OK;
    const char *address = NULL;
    if (mcp_server_backend_ping(t->srv, &address, &err) == 0) {
        json_object_object_add(o, "status", json_object_new_string("ok"));
        json_object_object_add(o, "engine", json_object_new_string("reachable"));
    } else {
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
        json_object_object_add(o, "status", json_object_new_string("degraded"));
        json_object_object_add(o, "engine", json_object_new_string("unreachable"));
        json_object_object_add(o, "error", json_object_new_string(err_msg(&err)));
    }
    json_object_object_add(o, "socket", json_object_new_string(address));
    err_clear(&err);
    struct MHD_Response *resp = http_response_json(o);
    if (resp)
        MHD_add_response_header(resp, "Cache-Control", "no-store");
    return http_queue(c, rq, status, resp);
}

/* ---- dispatch ---------------------------------------------------------------- */

static bool method_is(const char *method, const char *name)
{
    return strcmp(method, name) == 0;
}

static enum MHD_Result route(struct transport_http *t, struct MHD_Connection *c, struct request *rq,
                             const char *url, const char *method)
{
    if (strcmp(url, "/mcp") == 0) {
        if (method_is(method, "POST"))
            return http_mcp_post(t, c, rq);
        if (method_is(method, "GET"))
            return http_mcp_get(t, c, rq);
        if (method_is(method, "DELETE"))
            return http_mcp_delete(t, c, rq);
        if (method_is(method, "OPTIONS"))
            return reply_preflight(c, rq, ALLOW_METHODS);
        return reply_not_allowed(c, rq, ALLOW_METHODS);
    }
    if (strcmp(url, "/sse") == 0) {
        if (method_is(method, "GET"))
            return http_legacy_sse(t, c, rq);
        if (method_is(method, "OPTIONS"))
            return reply_preflight(c, rq, "GET, OPTIONS");
        return reply_not_allowed(c, rq, "GET, OPTIONS");
    }
    if (strcmp(url, "/messages") == 0) {
        if (method_is(method, "POST"))
            return http_legacy_messages(t, c, rq);
        if (method_is(method, "OPTIONS"))
            return reply_preflight(c, rq, "POST, OPTIONS");
        return reply_not_allowed(c, rq, "POST, OPTIONS");
    }
    if (strcmp(url, "/healthz") == 0) {
        if (method_is(method, "GET"))
            return healthz(t, c, rq);
        return reply_not_allowed(c, rq, "GET");
    }
    return http_reply_error(c, rq, MHD_HTTP_NOT_FOUND, HTTP_ERR_SERVER,
                            "Not Found: the MCP endpoint is /mcp");
}

/* Checks that come before anything else; answers early (MHD then skips
 * the body and closes the connection) or returns MHD_YES to go on. */
static enum MHD_Result first_call(struct transport_http *t, struct MHD_Connection *c,
                                  struct request *rq, const char *url, const char *method)
{
    pthread_mutex_lock(&t->lock);
    bool stopping = t->stopping;
    pthread_mutex_unlock(&t->lock);
    if (stopping)
        return http_reply_busy(c, rq, MHD_HTTP_SERVICE_UNAVAILABLE, "server busy: shutting down");
    enum MHD_Result ret = MHD_NO;
    if (!http_guard_admit(t, c, rq, url, method, &ret))
        return ret;
    /* Refused before the body is read (and before 100 Continue). */
    if (http_content_length_over(http_header(c, "Content-Length"),
                                 (unsigned long long)t->cfg->max_message_bytes))
        return http_reply_too_big(t->cfg->max_message_bytes, c, rq);
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
        util_printable_ascii(rq->method, sizeof(rq->method), method, method ? strlen(method) : 0,
                             false);
        util_printable_ascii(rq->path, sizeof(rq->path), url, url ? strlen(url) : 0, false);
        buf_init(&rq->body, (size_t)t->cfg->max_message_bytes);
        *req_cls = rq;
        pthread_mutex_lock(&t->lock);
        t->active++;
        pthread_mutex_unlock(&t->lock);
        MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S);
        return first_call(t, c, rq, url, method);
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
        if (rq->too_big && rq->received / 2 > (size_t)t->cfg->max_message_bytes)
            return MHD_NO;
        return MHD_YES;
    }
    return route(t, c, rq, url, method);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode toe)
{
    (void)cls;
    (void)socket_ctx;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED)
        MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct transport_http *t = cls;
    struct request *rq = *req_cls;
    if (c) /* kept alive: idle again until the next request */
        MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S);
    if (!rq)
        return;
    pthread_mutex_lock(&t->lock);
    t->active--;
    pthread_cond_broadcast(&t->janitor_cond); /* stop may be draining */
    pthread_mutex_unlock(&t->lock);
    log_debug("http: %s %s %u %.0f ms%s", rq->method, rq->path, rq->status,
              util_now_ms() - rq->start,
              toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection ended early)");
    buf_free(&rq->body);
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
    /* Once serving, MHD mostly reports clients that went away. */
    if (atomic_load(&t->started))
        log_debug("http: %s", msg);
    else
        log_error("http: %s", msg);
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

static int resolve_bind(const char *host, unsigned port, struct sockaddr_storage *ss, bool *v6,
                        struct err *err)
{
    memset(ss, 0, sizeof(*ss));
    if (!host || !*host || strcasecmp(host, "localhost") == 0)
        host = "127.0.0.1";
    struct sockaddr_in *sin = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
        sin->sin_port = htons((uint16_t)port);
        *v6 = false;
        return 0;
    }
    if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons((uint16_t)port);
        *v6 = true;
        return 0;
    }
    struct addrinfo hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || !res)
        return err_set(err, ERR_INVALID, "--http: cannot resolve '%s': %s", host,
                       rc ? gai_strerror(rc) : "no address");
    if (res->ai_addrlen > sizeof(*ss) ||
        (res->ai_family != AF_INET && res->ai_family != AF_INET6)) {
        freeaddrinfo(res);
        return err_set(err, ERR_INVALID, "--http: '%s' has no IPv4 or IPv6 address", host);
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *v6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    if (*v6)
        sin6->sin6_port = htons((uint16_t)port);
    else
        sin->sin_port = htons((uint16_t)port);
    return 0;
}

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

int transport_http_start(struct mcp_server *srv, const struct config *cfg,
                         struct transport_http **out, struct err *err)
{
    struct sockaddr_storage ss;
    bool v6 = false;
    *out = NULL;
    if (resolve_bind(cfg->http_host, cfg->http_port, &ss, &v6, err) < 0)
        return -1;

    struct transport_http *t = xcalloc(1, sizeof(*t));
    t->srv = srv;
    t->cfg = cfg;
    t->self_host = self_host_name(cfg->http_host);
    mcp_channel_init(&t->discard, discard_send, NULL);
    pthread_mutex_init(&t->lock, NULL);
    util_cond_init_monotonic(&t->janitor_cond);

    /* Thread per connection: SSE readers and JSON answers block on
     * condition variables. ITC lets stop quiesce the listener. poll, not
     * select: descriptors past FD_SETSIZE (1024) must work too. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_ITC | (v6 ? MHD_USE_IPv6 : 0);
    t->daemon = MHD_start_daemon(
        flags, (uint16_t)cfg->http_port, NULL, NULL, on_request, t, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_log, t, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)cfg->max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)CONNECTION_TIMEOUT_S, MHD_OPTION_THREAD_STACK_SIZE, (size_t)THREAD_STACK_BYTES,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, t, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
        t, MHD_OPTION_END);
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
    pthread_cond_destroy(&t->janitor_cond);
    pthread_mutex_destroy(&t->lock);
    free(t->self_host);
    free(t);
    return -1;
}

unsigned transport_http_port(const struct transport_http *t)
{
    return t->port;
}

void transport_http_stop(struct transport_http *t)
{
    if (!t)
        return;
    /* 1. Stop accepting; refuse new requests on open connections; end
     * every live session (http_sessions_stop): runs are cancelled and
     * waited for, readers and waiting handlers wake and finish. */
    MHD_socket listen_fd = MHD_quiesce_daemon(t->daemon);
    http_sessions_stop(t);

    /* 2. Readers see stopping and end their streams; waiting handlers got
     * their answers. Give those a moment to reach the clients. */
    double deadline = util_now_ms() + STOP_DRAIN_MS;
    pthread_mutex_lock(&t->lock);
    while (t->active > 0 && util_now_ms() < deadline)
        util_cond_wait_ms(&t->janitor_cond, &t->lock, 100);
    int left = t->active;
    pthread_mutex_unlock(&t->lock);
    if (left)
        log_debug("http: stopping with %d request(s) unfinished", left);

    /* 3. MHD joins its connection threads; their responses' free callbacks
     * drop the last handler and reader references (freeing the sessions). */
    MHD_stop_daemon(t->daemon);
    if (listen_fd != MHD_INVALID_SOCKET)
        close(listen_fd); /* ours after quiesce, once MHD's threads are gone */

    pthread_cond_destroy(&t->janitor_cond);
    pthread_mutex_destroy(&t->lock);
    free(t->self_host);
    free(t);
}
