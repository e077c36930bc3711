/* The session table: random ids, reference counts, ending (DELETE, idle
 * expiry, the legacy SSE connection closing, stop) and the janitor thread
 * that ends idle sessions. */
#ifndef MCPSBX_HTTP_SESSIONS_H
#define MCPSBX_HTTP_SESSIONS_H

#include "transport/http_server.h"

#define SESSION_ID_BYTES 16
#define SESSION_ID_LEN   (2 * SESSION_ID_BYTES)

struct stream;

/* Fields under t->lock, except id, t, legacy and mcp (fixed at creation). */
struct session {
    struct transport_http *t;
    char id[SESSION_ID_LEN + 1];
    struct mcp_session *mcp;
    pthread_cond_t cond; /* with t->lock: a stream got an event or completed, or the end */
    int refs;
    int readers;
    bool ended;
    bool legacy;
    double last_active;
    unsigned long next_stream_no;
    struct stream *streams; /* SSE kinds, newest first (http_sse.c) */
    struct stream *standalone;
    struct stream *legacy_stream;
    struct session *next;
    struct session *sweep_next; /* the janitor's list of candidates */
    struct session *stop_next;  /* http_sessions_stop's list */
};

/* Creates a session holding two references (the table's and the
 * caller's); NULL with an HTTP status and message when it cannot. */
struct session *http_session_create(struct transport_http *t, bool legacy, unsigned *status,
                                    const char **why);

/* A live session by id, with a reference for the caller; NULL if none. */
struct session *http_session_get(struct transport_http *t, const char *id, bool legacy);

/* Drops the caller's reference. */
void http_session_put(struct session *s);

/* Ends s (cancelling and waiting for its runs); the caller keeps its
 * reference. */
void http_session_end(struct session *s);

/* Ends s and drops the caller's reference. */
void http_session_end_put(struct session *s);

/* Starts the janitor. */
int http_sessions_start(struct transport_http *t, struct err *err);

/* Sets t->stopping (new sessions, requests and SSE reads are refused from
 * then on), joins the janitor and ends every session. */
void http_sessions_stop(struct transport_http *t);

#endif
