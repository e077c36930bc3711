/* The HTTP transports on libmicrohttpd.
 *
 * Threads: MHD runs one thread per connection, so request handlers and SSE
 * content readers may block on condition variables; a janitor thread ends
 * idle sessions; mcp answers tool calls from its own threads through the
 * stream channels below.
 *
 * Locking: one mutex, t->lock, guards the session table and every session's
 * fields, streams and events. Each session has a condition variable (used
 * with t->lock), broadcast when one of its streams gets an event or
 * completes and when the session ends. mcp functions are never called with
 * t->lock held.
 *
 * Lifetimes: a session is reference counted under t->lock. The table holds
 * one reference until the session ends; every handler and SSE reader using
 * it holds one. Ending (DELETE, idle expiry, legacy disconnect, stop)
 * unlinks it, then mcp_session_close() cancels and waits for its runs, so
 * once the last reference goes no mcp thread can reach its streams. A
 * reply stream embeds the struct mcp_channel mcp answers on; release marks
 * it complete. SSE streams live in their session's list (for resumption)
 * and go with the session, or earlier once complete with no reader. A JSON
 * stream belongs to the handler, which waits for it to complete. */
#include "transport/transport_http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "base/buf.h"
#include "mcp/jsonrpc.h"
#include "base/log.h"

#define SESSION_ID_BYTES 16
#define SESSION_ID_LEN   (2 * SESSION_ID_BYTES)

#define KEEPALIVE_MS      15000 /* SSE comment while idle, so a dead peer shows */
#define HANGUP_POLL_MS    1000  /* a waiting reader checks for a client hang-up */
#define SSE_RETRY_MS      2000  /* reconnection delay suggested to clients */
#define JANITOR_PERIOD_MS 1000  /* at most; shorter for short idle limits */

/* Resumption keeps the newest events of a stream and the newest finished
 * streams of a session, within these bounds. */
#define STREAM_MAX_EVENTS    512
#define STREAM_MAX_BYTES     (4u << 20)
#define SESSION_MAX_FINISHED 32
#define SESSION_RETAIN_BYTES (16u << 20)

#define STOP_DRAIN_MS        3000 /* stop lets answers in progress go out */
#define CONNECTION_TIMEOUT_S 120  /* idle keep-alive connections; SSE writes keep theirs */
#define SSE_BLOCK_SIZE       (32u * 1024u)
#define RETRY_AFTER_S        "5"
#define LOG_FIELD_MAX        96

#define ALLOW_METHODS "GET, POST, DELETE, OPTIONS"
#define ALLOW_HEADERS                                                                              \
    "Content-Type, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID"
#define AUTH_REALM "Bearer realm=\"" MCP_SERVER_NAME "\""

/* JSON-RPC codes for transport-level errors, as the TypeScript SDK uses. */
#define HTTP_ERR_SERVER  (-32000)
#define HTTP_ERR_SESSION (-32001)

struct session;

enum stream_kind {
    STREAM_JSON,       /* one answer collected for a JSON response */
    STREAM_SSE,        /* a POST's SSE stream, resumable */
    STREAM_STANDALONE, /* GET /mcp: server-initiated messages */
    STREAM_LEGACY,     /* GET /sse: everything for a 2024-11-05 session */
};

struct event {
    struct event *next;
    unsigned long seq;
    size_t len;
    char text[]; /* the whole SSE event, ending in a blank line */
};

struct stream {
    struct mcp_channel ch; /* first: the channel pointer is the stream */
    struct session *sess;
    enum stream_kind kind;
    unsigned long no;
    struct event *head, *tail; /* oldest first */
    size_t n_events;
    size_t bytes;
    unsigned long next_seq;
    char *last; /* STREAM_JSON: the last message sent */
    size_t last_len;
    bool complete;
    int readers;         /* attached SSE readers */
    unsigned gen;        /* bumped by each attach: an older reader steps aside */
    struct stream *next; /* in the session's list, newest first */
};

struct session {
    struct transport_http *t;
    char id[SESSION_ID_LEN + 1];
    struct mcp_session *mcp;
    pthread_cond_t cond;
    int refs;
    int readers;
    bool ended;
    bool legacy;
    double last_active;
    unsigned long next_stream_no;
    struct stream *streams;
    struct stream *standalone;
    struct stream *legacy_stream;
    struct session *next;
    struct session *sweep_next; /* the janitor's list of candidates */
    struct session *stop_next;  /* transport_http_stop's list */
};

struct transport_http {
    struct mcp_server *srv;
    const struct config *cfg;
    struct MHD_Daemon *daemon;
    unsigned port;
    char *self_host; /* the bind address as a Host header names it; NULL for wildcards */
    struct mcp_channel discard;
    pthread_mutex_t lock;
    pthread_cond_t janitor_cond;
    struct session *sessions;
    size_t n_sessions;
    int active;          /* requests between their first call and completion */
    atomic_bool started; /* read by MHD's logger from any thread */
    bool stopping;
    bool janitor_running;
    pthread_t janitor;
};

/* One HTTP request (MHD's per-request pointer). */
struct request {
    double start;
    char method[16];
    char path[LOG_FIELD_MAX];
    unsigned status;
    const char *origin; /* an allowed Origin, echoed in CORS headers */
    bool too_big;
    size_t received;
    struct buf body;
};

/* An SSE response attached to a stream. */
struct reader {
    struct transport_http *t;
    struct session *sess; /* one reference */
    struct stream *st;    /* st->readers counts us */
    unsigned gen;
    unsigned long next_seq;
    int fd; /* the connection's socket, polled for hang-ups */
    bool endpoint_pending;
    double last_write;
    struct buf out;
    size_t off;
};

/* ---- small helpers ------------------------------------------------------- */

/* No early exit, so the time taken does not tell how much of secret matched. */
static bool secret_equal(const char *given, size_t given_len, const char *secret)
{
    size_t n = strlen(secret);
    unsigned diff = given_len != n;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)secret[i] ^ (unsigned char)(i < given_len ? given[i] : 0);
    return diff == 0;
}

static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static size_t trim_len(const char *s, size_t n)
{
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    return n;
}

static bool token_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

/* Copies for a log line: bounded, control bytes and spaces as '?'. */
static void copy_printable(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src && src[i] && i + 1 < cap; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[i] = ch < 0x21 || ch > 0x7e ? '?' : (char)ch;
    }
    dst[i] = '\0';
}

/* True when a Content-Type value names type (parameters ignored). */
static bool media_type_is(const char *value, const char *type)
{
    if (!value)
        return false;
    value = skip_ows(value);
    return token_is(value, trim_len(value, strcspn(value, ";")), type);
}

/* True when the parameters of one Accept element hold q=0. */
static bool q_is_zero(const char *p)
{
    while (*p == ';') {
        p = skip_ows(p + 1);
        if ((p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
            char *end = NULL;
            double q = strtod(p + 2, &end);
            return end != p + 2 && q <= 0.0;
        }
        p += strcspn(p, ";,");
    }
    return false;
}

/* True when an Accept value lists type, or a wildcard covering it. */
static bool accept_lists(const char *accept, const char *type)
{
    size_t major = strcspn(type, "/");
    const char *p = accept;
    while (p && *p) {
        p = skip_ows(p);
        size_t elem = strcspn(p, ",");
        size_t mlen = strcspn(p, ";,");
        size_t n = trim_len(p, mlen);
        bool match =
            token_is(p, n, type) || token_is(p, n, "*/*") ||
            (n == major + 2 && strncasecmp(p, type, major + 1) == 0 && p[major + 1] == '*');
        if (match && !q_is_zero(p + mlen))
            return true;
        p += elem;
        if (*p == ',')
            p++;
    }
    return false;
}

/* Splits "name[:port]" or "[v6][:port]"; false when malformed. */
static bool split_host(const char *s, size_t len, size_t *name_len, const char **port,
                       size_t *port_len)
{
    size_t nl;
    if (len && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close)
            return false;
        nl = (size_t)(close - s) + 1;
    } else {
        const char *colon = memchr(s, ':', len);
        nl = colon ? (size_t)(colon - s) : len;
    }
    if (nl == 0)
        return false;
    *name_len = nl;
    *port = NULL;
    *port_len = 0;
    if (nl == len)
        return true;
    if (s[nl] != ':')
        return false;
    *port = s + nl + 1;
    *port_len = len - nl - 1;
    if (*port_len == 0 || *port_len > 5)
        return false;
    for (size_t i = 0; i < *port_len; i++)
        if (!isdigit((unsigned char)(*port)[i]))
            return false;
    return true;
}

static unsigned parse_port(const char *p, size_t n)
{
    unsigned v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (unsigned)(p[i] - '0');
    return v;
}

static bool is_loopback_name(const char *s, size_t n)
{
    return token_is(s, n, "localhost") || token_is(s, n, "127.0.0.1") || token_is(s, n, "[::1]");
}

/* DNS rebinding defence: a browser tricked into calling us sends the
 * attacker's name as Host. */
static bool host_allowed(const struct transport_http *t, const char *host)
{
    size_t nl = 0;
    size_t pl = 0;
    const char *port = NULL;
    if (!host || !split_host(host, strlen(host), &nl, &port, &pl))
        return false;
    bool local = is_loopback_name(host, nl) || (t->self_host && token_is(host, nl, t->self_host));
    if (local && (!port || parse_port(port, pl) == t->port))
        return true;
    for (size_t i = 0; i < t->cfg->allowed_hosts.n; i++) {
        const char *a = t->cfg->allowed_hosts.items[i];
        size_t anl = 0;
        size_t apl = 0;
        const char *aport = NULL;
        if (strcasecmp(a, host) == 0)
            return true;
        /* An entry without a port allows that name on any port (proxies). */
        if (split_host(a, strlen(a), &anl, &aport, &apl) && !aport && anl == nl &&
            strncasecmp(a, host, nl) == 0)
            return true;
    }
    return false;
}

static bool origin_allowed(const struct transport_http *t, const char *origin)
{
    for (size_t i = 0; i < t->cfg->allowed_origins.n; i++)
        if (strcasecmp(t->cfg->allowed_origins.items[i], origin) == 0)
            return true;
    const char *rest;
    if (strncasecmp(origin, "http://", 7) == 0)
        rest = origin + 7;
    else if (strncasecmp(origin, "https://", 8) == 0)
        rest = origin + 8;
    else
        return false;
    size_t nl = 0;
    size_t pl = 0;
    const char *port = NULL;
    return split_host(rest, strlen(rest), &nl, &port, &pl) && is_loopback_name(rest, nl);
}

static bool auth_ok(const struct transport_http *t, const char *header)
{
    const char *token = t->cfg->auth_token;
    if (!token || !*token)
        return true;
    if (!header || strncasecmp(header, "Bearer ", 7) != 0)
        return false;
    const char *given = skip_ows(header + 7);
    return secret_equal(given, trim_len(given, strlen(given)), token);
}

static const char *header(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static int connection_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

/* True once the client closed its side: nothing more will read our events. */
static bool peer_hung_up(int fd)
{
    if (fd < 0)
        return false;
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* ---- streams (all under t->lock unless the stream is not yet shared) ---- */

static void stream_drop_head(struct stream *st)
{
    struct event *ev = st->head;
    st->head = ev->next;
    if (!st->head)
        st->tail = NULL;
    st->n_events--;
    st->bytes -= ev->len;
    free(ev);
}

/* Appends "<prefix><json>\n\n" as the next event, dropping the oldest
 * beyond the bounds (the newest always stays). */
static void stream_push(struct stream *st, const char *prefix, const char *json, size_t len)
{
    size_t plen = strlen(prefix);
    struct event *ev = xmalloc(sizeof(*ev) + plen + len + 3);
    ev->next = NULL;
    ev->seq = st->next_seq++;
    memcpy(ev->text, prefix, plen);
    memcpy(ev->text + plen, json, len);
    memcpy(ev->text + plen + len, "\n\n", 3);
    ev->len = plen + len + 2;
    if (st->tail)
        st->tail->next = ev;
    else
        st->head = ev;
    st->tail = ev;
    st->n_events++;
    st->bytes += ev->len;
    while ((st->n_events > STREAM_MAX_EVENTS || st->bytes > STREAM_MAX_BYTES) &&
           st->head != st->tail)
        stream_drop_head(st);
}

static void stream_push_message(struct stream *st, const char *json, size_t len)
{
    char prefix[64];
    if (st->kind == STREAM_LEGACY)
        snprintf(prefix, sizeof(prefix), "event: message\ndata: ");
    else
        snprintf(prefix, sizeof(prefix), "id: %lu-%lu\ndata: ", st->no, st->next_seq);
    stream_push(st, prefix, json, len);
}

static int stream_send(struct mcp_channel *ch, const char *json, size_t len)
{
    struct stream *st = (struct stream *)ch;
    struct transport_http *t = st->sess->t;
    pthread_mutex_lock(&t->lock);
    if (st->kind == STREAM_JSON) {
        /* Notifications (progress, logs) come before the response; a JSON
         * answer can carry only the response, which is the last message. */
        free(st->last);
        st->last = xmalloc(len + 1);
        memcpy(st->last, json, len);
        st->last[len] = '\0';
        st->last_len = len;
    } else {
        stream_push_message(st, json, len);
    }
    pthread_cond_broadcast(&st->sess->cond);
    pthread_mutex_unlock(&t->lock);
    return 0;
}

/* Every reply for the messages dispatched on the stream has been sent. */
static void stream_release(struct mcp_channel *ch)
{
    struct stream *st = (struct stream *)ch;
    struct transport_http *t = st->sess->t;
    pthread_mutex_lock(&t->lock);
    st->complete = true;
    pthread_cond_broadcast(&st->sess->cond);
    pthread_mutex_unlock(&t->lock);
}

static void stream_free(struct stream *st)
{
    while (st->head)
        stream_drop_head(st);
    free(st->last);
    free(st);
}

/* Drops the oldest finished, unattached streams beyond the bounds. */
static void session_prune_locked(struct session *s)
{
    size_t finished = 0;
    size_t bytes = 0;
    struct stream **pp = &s->streams;
    while (*pp) {
        struct stream *st = *pp;
        if (st->complete && st->readers == 0 && st->kind != STREAM_LEGACY) {
            finished++;
            bytes += st->bytes;
            if (finished > SESSION_MAX_FINISHED || bytes > SESSION_RETAIN_BYTES) {
                *pp = st->next;
                stream_free(st);
                continue;
            }
        }
        pp = &st->next;
    }
}

/* A new stream of s; SSE kinds join the session's list (lock held, or s
 * not yet shared). */
static struct stream *stream_new(struct session *s, enum stream_kind kind)
{
    struct stream *st = xcalloc(1, sizeof(*st));
    st->sess = s;
    st->kind = kind;
    if (kind == STREAM_LEGACY)
        mcp_channel_init(&st->ch, stream_send, NULL); /* lives as long as the session */
    else
        mcp_channel_init(&st->ch, stream_send, stream_release);
    if (kind == STREAM_JSON)
        return st;
    st->no = ++s->next_stream_no;
    if (kind != STREAM_LEGACY) {
        /* Priming event: an id to resume from, and a retry hint. */
        char prefix[96];
        snprintf(prefix, sizeof(prefix), "id: %lu-0\nretry: %d\ndata: ", st->no, SSE_RETRY_MS);
        stream_push(st, prefix, "", 0);
    }
    session_prune_locked(s);
    st->next = s->streams;
    s->streams = st;
    return st;
}

/* ---- sessions ------------------------------------------------------------ */

static void session_free(struct session *s)
{
    mcp_session_free(s->mcp);
    while (s->streams) {
        struct stream *st = s->streams;
        s->streams = st->next;
        stream_free(st);
    }
    pthread_cond_destroy(&s->cond);
    free(s);
}

/* Creates a session holding two references (the table's and the
 * caller's); NULL with an HTTP status and message when it cannot. */
static struct session *session_create(struct transport_http *t, bool legacy, unsigned *status,
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
        s->legacy_stream = stream_new(s, STREAM_LEGACY);

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

/* A live session by id, with a reference for the caller; NULL if none. */
static struct session *session_get(struct transport_http *t, const char *id, bool legacy)
{
    if (!id || strlen(id) != SESSION_ID_LEN)
        return NULL;
    struct session *found = NULL;
    pthread_mutex_lock(&t->lock);
    for (struct session *s = t->sessions; s && !found; s = s->next)
        if (s->legacy == legacy && secret_equal(id, SESSION_ID_LEN, s->id))
            found = s;
    if (found) {
        found->refs++;
        found->last_active = util_now_ms();
    }
    pthread_mutex_unlock(&t->lock);
    return found;
}

static void session_put(struct session *s)
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

/* Ends s; the caller keeps its reference. */
static void session_end(struct session *s)
{
    pthread_mutex_lock(&s->t->lock);
    bool did = session_detach_locked(s);
    pthread_mutex_unlock(&s->t->lock);
    session_finish_end(s, did, 0);
}

/* Ends s and drops the caller's reference. */
static void session_end_put(struct session *s)
{
    pthread_mutex_lock(&s->t->lock);
    bool did = session_detach_locked(s);
    pthread_mutex_unlock(&s->t->lock);
    session_finish_end(s, did, 1);
}

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

/* ---- responses ----------------------------------------------------------- */

static enum MHD_Result queue(struct MHD_Connection *c, struct request *rq, unsigned status,
                             struct MHD_Response *resp)
{
    if (!resp)
        return MHD_NO; /* out of memory: MHD drops the connection */
    if (rq->origin) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", rq->origin);
        MHD_add_response_header(resp, "Vary", "Origin");
        MHD_add_response_header(resp, "Access-Control-Expose-Headers", "Mcp-Session-Id");
    }
    rq->status = status;
    enum MHD_Result ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* A response owning a copy of text[0..len). */
static struct MHD_Response *response_text(const char *text, size_t len, const char *type)
{
    char *copy = xmalloc(len + 1);
    memcpy(copy, text, len);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, copy, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(copy);
        return NULL;
    }
    if (type)
        MHD_add_response_header(resp, "Content-Type", type);
    return resp;
}

static struct MHD_Response *response_empty(void)
{
    return MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
}

/* Takes body. */
static struct MHD_Response *response_json(json_object *body)
{
    size_t len = 0;
    const char *s = jsonrpc_serialize(body, &len);
    struct MHD_Response *resp = response_text(s, len, "application/json");
    json_object_put(body);
    return resp;
}

/* A JSON-RPC error with a null id as the body of an HTTP error. */
static struct MHD_Response *response_error(int code, const char *message)
{
    return response_json(jsonrpc_error(NULL, code, message, NULL));
}

static enum MHD_Result reply_error(struct MHD_Connection *c, struct request *rq, unsigned status,
                                   int code, const char *message)
{
    return queue(c, rq, status, response_error(code, message));
}

static enum MHD_Result reply_busy(struct MHD_Connection *c, struct request *rq, unsigned status,
                                  const char *why)
{
    struct MHD_Response *resp = response_error(HTTP_ERR_SERVER, why);
    if (resp && status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(resp, "Retry-After", RETRY_AFTER_S);
    return queue(c, rq, status, resp);
}

static enum MHD_Result reply_not_allowed(struct MHD_Connection *c, struct request *rq,
                                         const char *allow)
{
    struct MHD_Response *resp = response_error(HTTP_ERR_SERVER, "Method not allowed");
    if (resp)
        MHD_add_response_header(resp, "Allow", allow);
    return queue(c, rq, MHD_HTTP_METHOD_NOT_ALLOWED, resp);
}

static enum MHD_Result reply_preflight(struct MHD_Connection *c, struct request *rq,
                                       const char *allow)
{
    struct MHD_Response *resp = response_empty();
    if (resp) {
        MHD_add_response_header(resp, "Allow", allow);
        MHD_add_response_header(resp, "Access-Control-Allow-Methods", allow);
        MHD_add_response_header(resp, "Access-Control-Allow-Headers", ALLOW_HEADERS);
        MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
    }
    return queue(c, rq, MHD_HTTP_NO_CONTENT, resp);
}

/* ---- SSE readers ---------------------------------------------------------- */

/* Attaches a reader to st from event seq on (lock held). */
static struct reader *reader_attach_locked(struct session *s, struct stream *st, unsigned long seq,
                                           int fd)
{
    struct reader *r = xcalloc(1, sizeof(*r));
    r->t = s->t;
    r->sess = s;
    r->st = st;
    s->refs++;
    s->readers++;
    st->readers++;
    r->gen = ++st->gen;
    r->next_seq = seq;
    r->fd = fd;
    r->last_write = util_now_ms();
    buf_init(&r->out, SIZE_MAX);
    pthread_cond_broadcast(&s->cond); /* an earlier reader of st steps aside */
    return r;
}

static const struct event *stream_find(const struct stream *st, unsigned long seq)
{
    for (const struct event *ev = st->head; ev; ev = ev->next)
        if (ev->seq >= seq)
            return ev;
    return NULL;
}

/* Fills r->out with what comes next, waiting if need be (lock held).
 * Returns 0 with output, 1 at the end of the stream, -1 to abort. */
static int reader_next_locked(struct reader *r)
{
    struct transport_http *t = r->t;
    struct stream *st = r->st;
    for (;;) {
        if (t->stopping || st->gen != r->gen)
            return 1;
        if (r->endpoint_pending) {
            r->endpoint_pending = false;
            if (buf_addf(&r->out, "event: endpoint\ndata: /messages?sessionId=%s\n\n",
                         r->sess->id) < 0)
                return -1;
            return 0;
        }
        const struct event *ev = stream_find(st, r->next_seq);
        if (ev) {
            if (buf_add(&r->out, ev->text, ev->len) < 0)
                return -1;
            r->next_seq = ev->seq + 1;
            /* Legacy streams are not resumable: sent events can go. */
            while (st->kind == STREAM_LEGACY && st->head && st->head->seq < r->next_seq)
                stream_drop_head(st);
            return 0;
        }
        if (st->complete || (r->sess->ended && st->kind != STREAM_SSE))
            return 1;
        double idle = util_now_ms() - r->last_write;
        if (idle >= KEEPALIVE_MS) {
            if (buf_add(&r->out, ": keepalive\n\n", 13) < 0)
                return -1;
            return 0;
        }
        if (peer_hung_up(r->fd))
            return -1;
        long wait = (long)(KEEPALIVE_MS - idle) + 1;
        util_cond_wait_ms(&r->sess->cond, &t->lock, wait < HANGUP_POLL_MS ? wait : HANGUP_POLL_MS);
    }
}

/* MHD content reader: blocks (thread per connection) until there is
 * something to send. A client going away cancels nothing. */
static ssize_t reader_read(void *cls, uint64_t pos, char *out, size_t max)
{
    struct reader *r = cls;
    (void)pos;
    ssize_t ret;
    pthread_mutex_lock(&r->t->lock);
    if (r->off >= r->out.len) {
        buf_reset(&r->out);
        r->off = 0;
        int rc = reader_next_locked(r);
        if (rc != 0) {
            pthread_mutex_unlock(&r->t->lock);
            return rc > 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    size_t n = r->out.len - r->off;
    if (n > max)
        n = max;
    memcpy(out, r->out.data + r->off, n);
    r->off += n;
    r->last_write = util_now_ms();
    ret = (ssize_t)n;
    pthread_mutex_unlock(&r->t->lock);
    return ret;
}

/* MHD is done with the response (sent, failed or connection closed). */
static void reader_free(void *cls)
{
    struct reader *r = cls;
    struct session *s = r->sess;
    pthread_mutex_lock(&r->t->lock);
    r->st->readers--;
    s->readers--;
    s->last_active = util_now_ms();
    session_prune_locked(s);
    pthread_mutex_unlock(&r->t->lock);
    /* A 2024-11-05 session lives exactly as long as its SSE connection. */
    if (s->legacy)
        session_end_put(s);
    else
        session_put(s);
    buf_free(&r->out);
    free(r);
}

/* session_id: set on the answer to an initialize that made a session. */
static enum MHD_Result queue_sse(struct MHD_Connection *c, struct request *rq, struct reader *r,
                                 const char *session_id)
{
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, SSE_BLOCK_SIZE,
                                                                  reader_read, r, reader_free);
    if (!resp) {
        reader_free(r);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no"); /* proxies: do not buffer */
    if (session_id)
        MHD_add_response_header(resp, "Mcp-Session-Id", session_id);
    return queue(c, rq, MHD_HTTP_OK, resp);
}

/* ---- /mcp ------------------------------------------------------------------ */

/* MCP-Protocol-Version: absent means 2025-03-26; any supported value is
 * fine, even one other than the session's. */
static bool version_header_ok(struct MHD_Connection *c)
{
    const char *v = header(c, "MCP-Protocol-Version");
    return !v || mcp_version_from_name(v) >= 0;
}

static enum MHD_Result reply_bad_version(struct MHD_Connection *c, struct request *rq)
{
    return reply_error(c, rq, MHD_HTTP_BAD_REQUEST, HTTP_ERR_SERVER,
                       "Bad Request: unsupported MCP-Protocol-Version (supported: 2025-11-25, "
                       "2025-06-18, 2025-03-26, 2024-11-05)");
}

/* Looks up the session named by Mcp-Session-Id, or answers 400/404. */
static struct session *require_session(struct transport_http *t, struct MHD_Connection *c,
                                       struct request *rq, enum MHD_Result *ret)
{
    const char *sid = header(c, "Mcp-Session-Id");
    if (!sid) {
        *ret = reply_error(c, rq, MHD_HTTP_BAD_REQUEST, HTTP_ERR_SERVER,
                           "Bad Request: Mcp-Session-Id header is required");
        return NULL;
    }
    struct session *s = session_get(t, sid, false);
    if (!s)
        *ret = reply_error(c, rq, MHD_HTTP_NOT_FOUND, HTTP_ERR_SESSION, "Session not found");
    return s;
}

struct body_info {
    bool has_request; /* something in it gets an answer */
    bool has_call;    /* a tools/call request: progress may come first */
    bool initialize;  /* a single initialize request */
    const char *invalid;
    json_object *invalid_id;
};

static void classify_body(json_object *msg, struct body_info *bi)
{
    memset(bi, 0, sizeof(*bi));
    if (json_object_is_type(msg, json_type_array)) {
        /* Batches always get a collected answer: mcp may reject them. */
        bi->has_request = true;
        for (size_t i = 0; i < json_object_array_length(msg); i++) {
            struct jsonrpc_msg m;
            jsonrpc_classify(json_object_array_get_idx(msg, i), &m);
            if (m.kind == JSONRPC_REQUEST && strcmp(m.method, "tools/call") == 0)
                bi->has_call = true;
        }
        return;
    }
    struct jsonrpc_msg m;
    jsonrpc_classify(msg, &m);
    switch (m.kind) {
    case JSONRPC_REQUEST:
        bi->has_request = true;
        bi->has_call = strcmp(m.method, "tools/call") == 0;
        bi->initialize = strcmp(m.method, "initialize") == 0;
        break;
    case JSONRPC_INVALID:
        bi->invalid = m.invalid_reason;
        bi->invalid_id = m.id;
        break;
    case JSONRPC_NOTIFICATION:
    case JSONRPC_RESPONSE:
        break;
    }
}

static enum MHD_Result reply_too_big(struct transport_http *t, struct MHD_Connection *c,
                                     struct request *rq)
{
    char *msg = xasprintf("Invalid Request: message exceeds %lld bytes (--max-message-bytes)",
                          t->cfg->max_message_bytes);
    enum MHD_Result ret =
        reply_error(c, rq, MHD_HTTP_CONTENT_TOO_LARGE, JSONRPC_INVALID_REQUEST, msg);
    free(msg);
    return ret;
}

/* Checks and parses a POST body (both transports); answers and returns
 * NULL when it is not a readable JSON message. */
static json_object *read_post(struct transport_http *t, struct MHD_Connection *c,
                              struct request *rq, enum MHD_Result *ret)
{
    if (rq->too_big) {
        *ret = reply_too_big(t, c, rq);
        return NULL;
    }
    if (!media_type_is(header(c, "Content-Type"), "application/json")) {
        *ret = reply_error(c, rq, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, HTTP_ERR_SERVER,
                           "Unsupported Media Type: Content-Type must be application/json");
        return NULL;
    }
    json_object *msg = NULL;
    struct err err = ERR_INIT;
    if (jsonrpc_parse(rq->body.data ? rq->body.data : "", rq->body.len, &msg, &err) < 0) {
        *ret = reply_error(c, rq, MHD_HTTP_BAD_REQUEST, JSONRPC_PARSE_ERROR, err_msg(&err));
        err_clear(&err);
        return NULL;
    }
    return msg;
}

/* Waits for a JSON stream to complete and answers with its last message. */
static enum MHD_Result answer_json(struct transport_http *t, struct MHD_Connection *c,
                                   struct request *rq, struct session *s, struct stream *st,
                                   bool new_session)
{
    pthread_mutex_lock(&t->lock);
    /* mcp answers every request, cancelled ones with nothing, and closing
     * a session waits for its runs: completion always comes. */
    while (!st->complete)
        pthread_cond_wait(&s->cond, &t->lock);
    pthread_mutex_unlock(&t->lock);

    bool with_id = false;
    if (new_session) {
        /* A failed initialize leaves no session behind. */
        with_id = mcp_session_initialized(s->mcp);
        if (!with_id)
            session_end(s);
    }
    struct MHD_Response *resp;
    unsigned status = MHD_HTTP_OK;
    if (st->last) {
        resp = MHD_create_response_from_buffer(st->last_len, st->last, MHD_RESPMEM_MUST_FREE);
        if (resp) {
            st->last = NULL;
            MHD_add_response_header(resp, "Content-Type", "application/json");
        }
    } else {
        status = MHD_HTTP_ACCEPTED;
        resp = response_empty();
    }
    stream_free(st);
    if (resp && with_id)
        MHD_add_response_header(resp, "Mcp-Session-Id", s->id);
    return queue(c, rq, status, resp);
}

static enum MHD_Result mcp_post(struct transport_http *t, struct MHD_Connection *c,
                                struct request *rq)
{
    enum MHD_Result ret = MHD_NO;
    const char *accept = header(c, "Accept");
    bool want_json = !accept || accept_lists(accept, "application/json");
    bool want_sse = accept && accept_lists(accept, "text/event-stream");
    if (!want_json && !want_sse)
        return reply_error(c, rq, MHD_HTTP_NOT_ACCEPTABLE, HTTP_ERR_SERVER,
                           "Not Acceptable: Accept must list application/json or "
                           "text/event-stream");
    if (!version_header_ok(c))
        return reply_bad_version(c, rq);
    json_object *msg = read_post(t, c, rq, &ret);
    if (!msg)
        return ret;

    struct body_info bi;
    classify_body(msg, &bi);
    struct session *s = NULL;
    bool new_session = false;
    if (bi.initialize && !header(c, "Mcp-Session-Id")) {
        unsigned status = 0;
        const char *why = NULL;
        s = session_create(t, false, &status, &why);
        if (!s) {
            ret = reply_busy(c, rq, status, why);
            goto out;
        }
        new_session = true;
    } else if (!(s = require_session(t, c, rq, &ret))) {
        goto out;
    }

    if (bi.invalid) {
        ret = queue(
            c, rq, MHD_HTTP_BAD_REQUEST,
            response_json(jsonrpc_error(bi.invalid_id, JSONRPC_INVALID_REQUEST, bi.invalid, NULL)));
        goto out;
    }
    if (!bi.has_request) {
        mcp_session_receive_json(s->mcp, msg, &t->discard);
        ret = queue(c, rq, MHD_HTTP_ACCEPTED, response_empty());
        goto out;
    }

    /* SSE when the client takes it and progress or logs may precede the
     * result, or when it takes nothing else. */
    if (want_sse && (bi.has_call || !want_json)) {
        pthread_mutex_lock(&t->lock);
        struct stream *st = stream_new(s, STREAM_SSE);
        struct reader *r = reader_attach_locked(s, st, 0, connection_fd(c));
        pthread_mutex_unlock(&t->lock);
        mcp_session_receive_json(s->mcp, msg, &st->ch);
        mcp_channel_unref(&st->ch);
        /* initialize answers at once: keep the session only if it worked. */
        bool keep = new_session && mcp_session_initialized(s->mcp);
        if (new_session && !keep)
            session_end(s);
        ret = queue_sse(c, rq, r, keep ? s->id : NULL);
    } else {
        struct stream *st = stream_new(s, STREAM_JSON);
        mcp_session_receive_json(s->mcp, msg, &st->ch);
        mcp_channel_unref(&st->ch);
        ret = answer_json(t, c, rq, s, st, new_session);
    }
out:
    if (s)
        session_put(s);
    json_object_put(msg);
    return ret;
}

/* Parses a Last-Event-ID "<stream>-<seq>". */
static bool parse_event_id(const char *s, unsigned long *no, unsigned long *seq)
{
    char *end = NULL;
    if (!isdigit((unsigned char)s[0]))
        return false;
    *no = strtoul(s, &end, 10);
    if (*end != '-' || !isdigit((unsigned char)end[1]))
        return false;
    *seq = strtoul(end + 1, &end, 10);
    return *end == '\0' && *no > 0 && *seq < (unsigned long)-1;
}

static enum MHD_Result mcp_get(struct transport_http *t, struct MHD_Connection *c,
                               struct request *rq)
{
    enum MHD_Result ret = MHD_NO;
    const char *accept = header(c, "Accept");
    if (!accept || !accept_lists(accept, "text/event-stream"))
        return reply_error(c, rq, MHD_HTTP_NOT_ACCEPTABLE, HTTP_ERR_SERVER,
                           "Not Acceptable: Accept must list text/event-stream");
    if (!version_header_ok(c))
        return reply_bad_version(c, rq);
    const char *last = header(c, "Last-Event-ID");
    unsigned long no = 0;
    unsigned long seq = 0;
    if (last && !parse_event_id(last, &no, &seq))
        return reply_error(c, rq, MHD_HTTP_BAD_REQUEST, HTTP_ERR_SERVER,
                           "Bad Request: malformed Last-Event-ID");
    struct session *s = require_session(t, c, rq, &ret);
    if (!s)
        return ret;

    struct reader *r = NULL;
    unsigned status = 0;
    pthread_mutex_lock(&t->lock);
    if (last) {
        struct stream *st = s->streams;
        while (st && st->no != no)
            st = st->next;
        if (st)
            r = reader_attach_locked(s, st, seq + 1, connection_fd(c));
        else
            status = MHD_HTTP_NOT_FOUND;
    } else if (s->standalone && s->standalone->readers > 0) {
        status = MHD_HTTP_CONFLICT;
    } else {
        /* A new standalone stream; the previous one (if any) is finished. */
        if (s->standalone)
            s->standalone->complete = true;
        s->standalone = stream_new(s, STREAM_STANDALONE);
        r = reader_attach_locked(s, s->standalone, 0, connection_fd(c));
    }
    pthread_mutex_unlock(&t->lock);
    session_put(s);

    if (status == MHD_HTTP_NOT_FOUND)
        return reply_error(c, rq, status, HTTP_ERR_SERVER,
                           "Not Found: no such stream in this session to resume");
    if (status == MHD_HTTP_CONFLICT)
        return reply_error(c, rq, status, HTTP_ERR_SERVER,
                           "Conflict: only one standalone SSE stream per session");
    return queue_sse(c, rq, r, NULL);
}

static enum MHD_Result mcp_delete(struct transport_http *t, struct MHD_Connection *c,
                                  struct request *rq)
{
    enum MHD_Result ret = MHD_NO;
    if (!version_header_ok(c))
        return reply_bad_version(c, rq);
    struct session *s = require_session(t, c, rq, &ret);
    if (!s)
        return ret;
    session_end_put(s);
    return queue(c, rq, MHD_HTTP_NO_CONTENT, response_empty());
}

/* ---- legacy HTTP+SSE (2024-11-05) ------------------------------------------ */

static enum MHD_Result sse_get(struct transport_http *t, struct MHD_Connection *c,
                               struct request *rq)
{
    const char *accept = header(c, "Accept");
    if (accept && !accept_lists(accept, "text/event-stream"))
        return reply_error(c, rq, MHD_HTTP_NOT_ACCEPTABLE, HTTP_ERR_SERVER,
                           "Not Acceptable: Accept must list text/event-stream");
    unsigned status = 0;
    const char *why = NULL;
    struct session *s = session_create(t, true, &status, &why);
    if (!s)
        return reply_busy(c, rq, status, why);
    pthread_mutex_lock(&t->lock);
    struct reader *r = reader_attach_locked(s, s->legacy_stream, 0, connection_fd(c));
    r->endpoint_pending = true;
    pthread_mutex_unlock(&t->lock);
    session_put(s);
    return queue_sse(c, rq, r, NULL);
}

static enum MHD_Result messages_post(struct transport_http *t, struct MHD_Connection *c,
                                     struct request *rq)
{
    enum MHD_Result ret = MHD_NO;
    const char *sid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sessionId");
    if (!sid)
        return reply_error(c, rq, MHD_HTTP_BAD_REQUEST, HTTP_ERR_SERVER,
                           "Bad Request: sessionId query parameter is required");
    json_object *msg = read_post(t, c, rq, &ret);
    if (!msg)
        return ret;
    struct session *s = session_get(t, sid, true);
    if (!s) {
        ret = reply_error(c, rq, MHD_HTTP_NOT_FOUND, HTTP_ERR_SESSION, "Session not found");
    } else {
        /* Replies go to the session's SSE connection. */
        mcp_session_receive_json(s->mcp, msg, &s->legacy_stream->ch);
        session_put(s);
        ret = queue(c, rq, MHD_HTTP_ACCEPTED, response_text("Accepted", 8, "text/plain"));
    }
    json_object_put(msg);
    return ret;
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
    struct MHD_Response *resp = response_json(o);
    if (resp)
        MHD_add_response_header(resp, "Cache-Control", "no-store");
    return queue(c, rq, status, resp);
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
            return mcp_post(t, c, rq);
        if (method_is(method, "GET"))
            return mcp_get(t, c, rq);
        if (method_is(method, "DELETE"))
            return mcp_delete(t, c, rq);
        if (method_is(method, "OPTIONS"))
            return reply_preflight(c, rq, ALLOW_METHODS);
        return reply_not_allowed(c, rq, ALLOW_METHODS);
    }
    if (strcmp(url, "/sse") == 0) {
        if (method_is(method, "GET"))
            return sse_get(t, c, rq);
        if (method_is(method, "OPTIONS"))
            return reply_preflight(c, rq, "GET, OPTIONS");
        return reply_not_allowed(c, rq, "GET, OPTIONS");
    }
    if (strcmp(url, "/messages") == 0) {
        if (method_is(method, "POST"))
            return messages_post(t, c, rq);
        if (method_is(method, "OPTIONS"))
            return reply_preflight(c, rq, "POST, OPTIONS");
        return reply_not_allowed(c, rq, "POST, OPTIONS");
    }
    if (strcmp(url, "/healthz") == 0) {
        if (method_is(method, "GET"))
            return healthz(t, c, rq);
        return reply_not_allowed(c, rq, "GET");
    }
    return reply_error(c, rq, MHD_HTTP_NOT_FOUND, HTTP_ERR_SERVER,
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
        return reply_busy(c, rq, MHD_HTTP_SERVICE_UNAVAILABLE, "server busy: shutting down");
    if (!host_allowed(t, header(c, "Host")))
        return reply_error(c, rq, MHD_HTTP_FORBIDDEN, HTTP_ERR_SERVER,
                           "Forbidden: Host header not allowed");
    const char *origin = header(c, "Origin");
    if (origin) {
        if (!origin_allowed(t, origin))
            return reply_error(c, rq, MHD_HTTP_FORBIDDEN, HTTP_ERR_SERVER,
                               "Forbidden: Origin not allowed");
        rq->origin = origin;
    }
    /* Preflights carry no credentials; health checks are open. */
    if (!method_is(method, "OPTIONS") && strcmp(url, "/healthz") != 0 &&
        !auth_ok(t, header(c, "Authorization"))) {
        bool sent = header(c, "Authorization") != NULL;
        struct MHD_Response *resp =
            response_error(HTTP_ERR_SERVER, sent ? "Unauthorized: invalid bearer token"
                                                 : "Unauthorized: a bearer token is required");
        if (resp)
            MHD_add_response_header(resp, "WWW-Authenticate",
                                    sent ? AUTH_REALM ", error=\"invalid_token\"" : AUTH_REALM);
        return queue(c, rq, MHD_HTTP_UNAUTHORIZED, resp);
    }
    /* Refused before the body is read (and before 100 Continue). */
    const char *cl = header(c, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > (unsigned long long)t->cfg->max_message_bytes)
        return reply_too_big(t, c, rq);
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
        copy_printable(rq->method, sizeof(rq->method), method);
        copy_printable(rq->path, sizeof(rq->path), url);
        buf_init(&rq->body, (size_t)t->cfg->max_message_bytes);
        *req_cls = rq;
        pthread_mutex_lock(&t->lock);
        t->active++;
        pthread_mutex_unlock(&t->lock);
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

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct transport_http *t = cls;
    struct request *rq = *req_cls;
    (void)c;
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
     * condition variables. ITC lets stop quiesce the listener. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_ERROR_LOG | MHD_USE_ITC | (v6 ? MHD_USE_IPv6 : 0);
    long long limit = cfg->max_sessions * 4 + 16;
    t->daemon = MHD_start_daemon(flags, (uint16_t)cfg->http_port, NULL, NULL, on_request, t,
                                 MHD_OPTION_EXTERNAL_LOGGER, mhd_log, t, MHD_OPTION_SOCK_ADDR,
                                 (const struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
                                 (unsigned)(limit > 1000000 ? 1000000 : limit),
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, t, MHD_OPTION_END);
    if (!t->daemon) {
        err_set(err, ERR_IO, "cannot listen on %s%s%s:%u (see the message above)", v6 ? "[" : "",
                cfg->http_host ? cfg->http_host : "127.0.0.1", v6 ? "]" : "", cfg->http_port);
        goto fail;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(t->daemon, MHD_DAEMON_INFO_BIND_PORT);
    t->port = info ? info->port : cfg->http_port;
    atomic_store(&t->started, true);

    if (pthread_create(&t->janitor, NULL, janitor_main, t) != 0) {
        err_set(err, ERR_INTERNAL, "cannot start the session janitor thread");
        MHD_stop_daemon(t->daemon);
        goto fail;
    }
    t->janitor_running = true;
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
    /* 1. Stop accepting; refuse new requests on open connections; take
     * every live session out of the table. */
    MHD_socket listen_fd = MHD_quiesce_daemon(t->daemon);
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

    /* 2. End them: runs are cancelled and waited for, so every reply stream
     * completes; readers and waiting handlers wake and finish. */
    while (all) {
        struct session *s = all;
        all = s->stop_next;
        session_end_put(s);
    }

    /* 3. Readers see stopping and end their streams; waiting handlers got
     * their answers. Give those a moment to reach the clients. */
    double deadline = util_now_ms() + STOP_DRAIN_MS;
    pthread_mutex_lock(&t->lock);
    while (t->active > 0 && util_now_ms() < deadline)
        util_cond_wait_ms(&t->janitor_cond, &t->lock, 100);
    int left = t->active;
    pthread_mutex_unlock(&t->lock);
    if (left)
        log_debug("http: stopping with %d request(s) unfinished", left);

    /* 4. MHD joins its connection threads; their responses' free callbacks
     * drop the last handler and reader references (freeing the sessions). */
    MHD_stop_daemon(t->daemon);
    if (listen_fd != MHD_INVALID_SOCKET)
        close(listen_fd); /* ours after quiesce, once MHD's threads are gone */

    pthread_cond_destroy(&t->janitor_cond);
    pthread_mutex_destroy(&t->lock);
    free(t->self_host);
    free(t);
}
