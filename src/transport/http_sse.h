/* Reply streams and SSE: the channels mcp answers on, SSE event ids
 * ("<stream>-<seq>"), the bounded replay buffer that Last-Event-ID resumes
 * from, and the SSE readers that send a stream's events on a connection.
 *
 * A reply stream embeds the struct mcp_channel mcp answers on; release
 * marks it complete. SSE streams live in their session's list (for
 * resumption) and go with the session, or earlier once complete with no
 * reader. A JSON stream belongs to the request that waits for it to
 * complete (suspended, resumed by the release), or, if that request went
 * first, to its last channel reference. All stream fields are under
 * t->lock.
 *
 * A reader with nothing to send suspends its connection; a new event, the
 * stream's end, the session's end, a keep-alive due or the client's
 * hang-up (the janitor's tick) resumes it. */
#ifndef MCPSBX_HTTP_SSE_H
#define MCPSBX_HTTP_SSE_H

#include <sys/queue.h>

#include "transport/http_sessions.h"

enum stream_kind {
    STREAM_JSON,       /* one answer collected for a JSON response */
    STREAM_SSE,        /* a POST's SSE stream, resumable */
    STREAM_STANDALONE, /* GET /mcp: server-initiated messages */
    STREAM_LEGACY,     /* GET /sse: everything for a 2024-11-05 session */
};

struct event {
    STAILQ_ENTRY(event) link;
    unsigned long seq;
    size_t len;
    char text[]; /* the whole SSE event, ending in a blank line */
};

struct stream {
    struct mcp_channel ch; /* first: the channel pointer is the stream */
    struct session *sess;
    enum stream_kind kind;
    unsigned long no;
    STAILQ_HEAD(event_queue, event) events; /* oldest first */
    size_t n_events;
    size_t bytes;
    unsigned long next_seq;
    char *last; /* STREAM_JSON: the last message sent */
    size_t last_len;
    bool complete;
    int readers;            /* attached SSE readers */
    unsigned gen;           /* bumped by each attach: an older reader steps aside */
    struct request *waiter; /* STREAM_JSON: the request suspended until complete */
    bool orphan;            /* STREAM_JSON: its request is gone; release frees it */
    struct stream *next;    /* in the session's list, newest first */
};

/* An SSE response attached to a stream. */
struct reader;

/* A new stream of s with one channel reference; SSE kinds join the
 * session's list and start with a priming event (lock held, or s not yet
 * shared). */
struct stream *http_stream_new(struct session *s, enum stream_kind kind);

void http_stream_free(struct stream *st);

/* Attaches a reader for connection c to st from event seq on (lock held);
 * it holds a reference to s. A reader of the legacy stream first sends
 * the endpoint event. */
struct reader *http_reader_attach_locked(struct session *s, struct stream *st, unsigned long seq,
                                         struct MHD_Connection *c);

/* Answers with r's events as text/event-stream; MHD owns r from here.
 * session_id: set on the answer to an initialize that made a session. */
enum MHD_Result http_queue_sse(struct MHD_Connection *c, struct request *rq, struct reader *r,
                               const char *session_id);

/* Resumes the suspended readers of stream st, else of session s, else all
 * of them (lock held): they look again at what they have to send. */
void http_readers_wake_locked(struct transport_http *t, struct session *s, struct stream *st);

/* The janitor's tick: resumes readers due a keep-alive and those whose
 * client hung up (so they end). */
void http_readers_tick(struct transport_http *t, double now);

/* A request whose JSON stream may not be complete is done with it (lock
 * not held): frees it if complete, else leaves it to its release. */
void http_stream_abandon(struct transport_http *t, struct stream *st);

#endif
