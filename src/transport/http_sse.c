#include "transport/http_sse.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>

#define KEEPALIVE_MS   15000 /* SSE comment while idle, so a dead peer shows */
#define SSE_RETRY_MS   2000  /* reconnection delay suggested to clients */
#define SSE_BLOCK_SIZE (32u * 1024u)

/* Resumption keeps the newest events of a stream and the newest finished
 * streams of a session, within these bounds. */
#define STREAM_MAX_EVENTS    512
#define STREAM_MAX_BYTES     (4u << 20)
#define SESSION_MAX_FINISHED 32
#define SESSION_RETAIN_BYTES (16u << 20)

struct reader {
    struct transport_http *t;
    struct session *sess; /* one reference */
    struct stream *st;    /* st->readers counts us */
    struct MHD_Connection *c;
    unsigned gen;
    unsigned long next_seq;
    int fd; /* the connection's socket, polled for hang-ups while suspended */
    bool endpoint_pending;
    bool suspended;
    bool hung_up;
    double last_write;
    /* What is being sent, item_len bytes, off of them so far: a copy of one
     * event (the stream may drop it meanwhile) or a line of ours. Each is
     * allocated at its own length, so it is no buffer that grows. */
    char *item;
    size_t item_len, off;
    LIST_ENTRY(reader) link; /* in t->readers */
};

/* ---- streams (all under t->lock unless the stream is not yet shared) ---- */

static void stream_drop_head(struct stream *st)
{
    struct event *ev = STAILQ_FIRST(&st->events);
    STAILQ_REMOVE_HEAD(&st->events, link);
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
    ev->seq = st->next_seq++;
    memcpy(ev->text, prefix, plen);
    memcpy(ev->text + plen, json, len);
    memcpy(ev->text + plen + len, "\n\n", 3);
    ev->len = plen + len + 2;
    STAILQ_INSERT_TAIL(&st->events, ev, link);
    st->n_events++;
    st->bytes += ev->len;
    while ((st->n_events > STREAM_MAX_EVENTS || st->bytes > STREAM_MAX_BYTES) && st->n_events > 1)
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

/* A JSON stream keeps the message itself (its answer is the last one). */
static int stream_send_take(struct mcp_channel *ch, char *json, size_t len)
{
    struct stream *st = (struct stream *)ch;
    if (st->kind != STREAM_JSON) {
        int rc = st->ch.send(ch, json, len);
        free(json);
        return rc;
    }
    struct transport_http *t = st->sess->t;
    pthread_mutex_lock(&t->lock);
    free(st->last);
    st->last = json;
    st->last_len = len;
    pthread_mutex_unlock(&t->lock);
    return 0;
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
        http_readers_wake_locked(t, st->sess, st);
    }
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
    bool orphan = st->orphan;
    if (st->waiter)
        http_resume_locked(t, st->waiter);
    else if (st->kind != STREAM_JSON)
        http_readers_wake_locked(t, st->sess, st);
    pthread_mutex_unlock(&t->lock);
    if (orphan)
        http_stream_free(st);
}

void http_stream_abandon(struct transport_http *t, struct stream *st)
{
    pthread_mutex_lock(&t->lock);
    bool done = st->complete;
    st->waiter = NULL;
    st->orphan = !done;
    pthread_mutex_unlock(&t->lock);
    if (done)
        http_stream_free(st);
}

void http_stream_free(struct stream *st)
{
    while (!STAILQ_EMPTY(&st->events))
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
                http_stream_free(st);
                continue;
            }
        }
        pp = &st->next;
    }
}

struct stream *http_stream_new(struct session *s, enum stream_kind kind)
{
    struct stream *st = xcalloc(1, sizeof(*st));
    STAILQ_INIT(&st->events);
    st->sess = s;
    st->kind = kind;
    if (kind == STREAM_LEGACY)
        mcp_channel_init(&st->ch, stream_send, NULL); /* lives as long as the session */
    else
        mcp_channel_init(&st->ch, stream_send, stream_release);
    st->ch.send_take = stream_send_take;
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

/* ---- SSE readers ------------------------------------------------------------ */

static int connection_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

struct reader *http_reader_attach_locked(struct session *s, struct stream *st, unsigned long seq,
                                         struct MHD_Connection *c)
{
    struct transport_http *t = s->t;
    struct reader *r = xcalloc(1, sizeof(*r));
    r->t = t;
    r->sess = s;
    r->st = st;
    r->c = c;
    s->refs++;
    s->readers++;
    st->readers++;
    r->gen = ++st->gen;
    r->next_seq = seq;
    r->fd = connection_fd(c);
    /* The 2024-11-05 transport tells the client where to POST first. */
    r->endpoint_pending = st->kind == STREAM_LEGACY;
    r->last_write = util_now_ms();
    LIST_INSERT_HEAD(&t->readers, r, link);
    http_readers_wake_locked(t, s, st); /* an earlier reader of st steps aside */
    return r;
}

static void reader_resume_locked(struct reader *r)
{
    if (!r->suspended)
        return;
    r->suspended = false;
    MHD_resume_connection(r->c);
}

void http_readers_wake_locked(struct transport_http *t, struct session *s, struct stream *st)
{
    for (struct reader *r = LIST_FIRST(&t->readers); r; r = LIST_NEXT(r, link))
        if ((!s || r->sess == s) && (!st || r->st == st))
            reader_resume_locked(r);
}

void http_readers_tick(struct transport_http *t, double now)
{
    size_t n = 0;
    pthread_mutex_lock(&t->lock);
    for (struct reader *r = LIST_FIRST(&t->readers); r; r = LIST_NEXT(r, link))
        n += r->suspended;
    struct pollfd *p = n ? xcalloc(n, sizeof(*p)) : NULL;
    size_t i = 0;
    for (struct reader *r = LIST_FIRST(&t->readers); r && i < n; r = LIST_NEXT(r, link)) {
        if (!r->suspended)
            continue;
        if (now - r->last_write >= KEEPALIVE_MS)
            reader_resume_locked(r);
        else
            p[i++] = (struct pollfd){.fd = r->fd, .events = POLLRDHUP};
    }
    /* Non-blocking, under the lock: the list does not change meanwhile,
     * and its suspended readers are the polled ones, in order. */
    if (i && poll(p, i, 0) > 0) {
        size_t k = 0;
        for (struct reader *r = LIST_FIRST(&t->readers); r && k < i; r = LIST_NEXT(r, link)) {
            if (!r->suspended)
                continue;
            if (p[k++].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
                r->hung_up = true;
                reader_resume_locked(r);
            }
        }
    }
    pthread_mutex_unlock(&t->lock);
    free(p);
}

static const struct event *stream_find(const struct stream *st, unsigned long seq)
{
    for (const struct event *ev = STAILQ_FIRST(&st->events); ev; ev = STAILQ_NEXT(ev, link))
        if (ev->seq >= seq)
            return ev;
    return NULL;
}

static void reader_set_item(struct reader *r, const char *text, size_t len)
{
    r->item = xmalloc(len + 1);
    memcpy(r->item, text, len);
    r->item[len] = '\0';
    r->item_len = len;
    r->off = 0;
}

/* Sets r's item to what comes next (lock held). Returns 0 with output, 1
 * at the end of the stream, -1 to abort, 2 when there is nothing yet. */
static int reader_next_locked(struct reader *r)
{
    struct transport_http *t = r->t;
    struct stream *st = r->st;
    if (t->stopping || st->gen != r->gen)
        return 1;
    if (r->hung_up)
        return -1;
    if (r->endpoint_pending) {
        r->endpoint_pending = false;
        char *line = xasprintf("event: endpoint\ndata: /messages?sessionId=%s\n\n", r->sess->id);
        reader_set_item(r, line, strlen(line));
        free(line);
        return 0;
    }
    const struct event *ev = stream_find(st, r->next_seq);
    if (ev) {
        reader_set_item(r, ev->text, ev->len);
        r->next_seq = ev->seq + 1;
        /* Legacy streams are not resumable: sent events can go. */
        const struct event *first;
        while (st->kind == STREAM_LEGACY && (first = STAILQ_FIRST(&st->events)) &&
               first->seq < r->next_seq)
            stream_drop_head(st);
        return 0;
    }
    if (st->complete || (r->sess->ended && st->kind != STREAM_SSE))
        return 1;
    if (util_now_ms() - r->last_write >= KEEPALIVE_MS) {
        reader_set_item(r, ": keepalive\n\n", 13);
        return 0;
    }
    return 2;
}

/* MHD content reader, on the connection's polling thread: what is ready,
 * or nothing and the connection suspended until there is. A client going
 * away cancels nothing. */
static ssize_t reader_read(void *cls, uint64_t pos, char *out, size_t max)
{
    struct reader *r = cls;
    (void)pos;
    ssize_t ret;
    pthread_mutex_lock(&r->t->lock);
    if (r->off >= r->item_len) {
        free(r->item);
        r->item = NULL;
        r->item_len = 0;
        r->off = 0;
        int rc = reader_next_locked(r);
        if (rc == 2) {
            r->suspended = true;
            MHD_suspend_connection(r->c);
            pthread_mutex_unlock(&r->t->lock);
            return 0;
        }
        if (rc != 0) {
            pthread_mutex_unlock(&r->t->lock);
            return rc > 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    size_t n = r->item_len - r->off;
    if (n > max)
        n = max;
    memcpy(out, r->item + r->off, n);
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
    struct transport_http *t = r->t;
    pthread_mutex_lock(&t->lock);
    r->st->readers--;
    s->readers--;
    s->last_active = util_now_ms();
    session_prune_locked(s);
    LIST_REMOVE(r, link);
    pthread_mutex_unlock(&t->lock);
    /* A 2024-11-05 session lives exactly as long as its SSE connection. */
    if (s->legacy)
        http_session_end_put(s);
    else
        http_session_put(s);
    free(r->item);
    free(r);
}

enum MHD_Result http_queue_sse(struct MHD_Connection *c, struct request *rq, struct reader *r,
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
    return http_queue(c, rq, MHD_HTTP_OK, resp);
}
