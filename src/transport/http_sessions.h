/* The session table: random ids, reference counts, ending (DELETE, idle
 * expiry, the legacy SSE connection closing, a legacy session never
 * initialized, stop), and the transport's two threads: the janitor (timers)
 * and the closer (ends sessions off MHD's polling threads). */
#ifndef MCPSBX_HTTP_SESSIONS_H
#define MCPSBX_HTTP_SESSIONS_H

#include "base/handle.h"
#include "transport/http_server.h"

/* A session id is a handle (base/handle.h): it names this daemon. */
#define SESSION_ID_CAP (HANDLE_MAX + 1)

/* A legacy (GET /sse) session exists before its client initializes; it
 * counts against --max-sessions only once it does, and ends if that has
 * not happened within --http-head-timeout-ms of its opening (the time a
 * client has for a request's head: its initialize is the next request). */

struct stream;

/* Fields under t->lock, except id, t, legacy and mcp (fixed at creation). */
struct session {
    struct transport_http *t;
    char id[SESSION_ID_CAP];
    struct mcp_session *mcp;
    int refs;
    int readers;
    int requests; /* POSTs and DELETEs under way (--max-session-requests) */
    bool ended;
    bool legacy;
    /* One 2026-07-28 request's (http_session_create_stateless): no id
     * given out, not found by lookups, not counted in --max-sessions
     * (its connection bounds it), ended when its request completes. */
    bool stateless;
    bool counted; /* counted in t->n_sessions (else a pending legacy one) */
    double created;
    double last_active;
    unsigned long next_stream_no;
    struct stream *streams; /* SSE kinds, newest first (http_sse.c) */
    struct stream *standalone;
    struct stream *legacy_stream;
    struct request *close_waiter; /* a DELETE answered once the runs ended */
    struct session *next;
    STAILQ_ENTRY(session) close_link; /* in t->to_close */
};

/* Creates a session holding two references (the table's and the
 * caller's); NULL with an HTTP status and message when it cannot. A
 * legacy session is pending (not counted against --max-sessions) until
 * http_session_count succeeds. */
struct session *http_session_create(struct transport_http *t, const struct request *rq, bool legacy,
                                    unsigned *status, const char **why);

/* A stateless session for one 2026-07-28 request, holding two references
 * as above; NULL with a status and message when stopping. */
struct session *http_session_create_stateless(struct transport_http *t, const struct request *rq,
                                              unsigned *status, const char **why);

/* Counts a pending legacy session against --max-sessions (its client is
 * initializing); false when the table is full. */
bool http_session_count(struct session *s);

/* A live session by id, with a reference for the caller; NULL if none. */
struct session *http_session_get(struct transport_http *t, const char *id, bool legacy);

/* The 404's words for an id http_session_get found nothing for: whose it
 * is when it names another daemon. Allocated. */
char *http_session_not_found(const char *id);

/* Drops the caller's reference. */
void http_session_put(struct session *s);

/* Counts a request of s under way; false (nothing counted) when s has
 * --max-session-requests under way already. */
bool http_session_request_begin(struct session *s);

/* A request holding a reference to s is done (lock held): drops it, and
 * its count when counted; true when that was the last reference (the
 * caller then frees s with http_session_free, unlocked). */
bool http_session_request_done_locked(struct session *s, bool counted);

/* Frees a session whose last reference went. */
void http_session_free(struct session *s);

/* Ends s: later lookups fail at once, and the closer cancels its runs and
 * waits for them. waiter (may be NULL; lock not held): a request resumed
 * with rq->closed set once that is done. The caller keeps its reference.
 * Returns false when s had ended already (waiter then not kept). */
bool http_session_end(struct session *s, struct request *waiter);

/* Ends a stateless session whose request is over: at once when nothing
 * of it runs, else through the closer as http_session_end. The caller
 * keeps its reference. */
void http_session_end_stateless(struct session *s);

/* Ends s and drops the caller's reference. */
void http_session_end_put(struct session *s);

/* Starts the janitor and the closer. */
int http_sessions_start(struct transport_http *t, struct err *err);

/* Sets t->stopping (new sessions, requests and SSE reads are refused from
 * then on), ends every session and waits until the closer has cancelled
 * and waited for all their runs. */
void http_sessions_stop(struct transport_http *t);

/* Joins the janitor and the closer (after MHD has stopped). */
void http_sessions_join(struct transport_http *t);

#endif
