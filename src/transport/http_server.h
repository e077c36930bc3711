/* Shared by the HTTP transport's files (http_*.c): the transport object.
 * http_server.c describes the files, the threads and the locking. */
#ifndef MCPSBX_HTTP_SERVER_H
#define MCPSBX_HTTP_SERVER_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/queue.h>

#include "transport/http_response.h"
#include "transport/transport_http.h"

#include "transport/http_conns.h"

struct session;
struct reader;
struct transport_http;

/* What answers a routed request (an endpoint's method) or a suspended
 * one resumed; the endpoints' files declare theirs with it. */
typedef enum MHD_Result http_handler(struct transport_http *t, struct MHD_Connection *c,
                                     struct request *rq);

struct transport_http {
    struct mcp_server *srv;
    const struct config *cfg;
    struct MHD_Daemon *daemon;
    unsigned port;
    unsigned threads; /* MHD's polling threads */
    char *self_host;  /* the bind address as a Host header names it; NULL for wildcards */
    struct mcp_channel discard;
    struct conn_table conns; /* deadlines and room (its own lock) */
    pthread_mutex_t lock;
    pthread_cond_t janitor_cond; /* wakes the janitor (and stop, waiting for requests) */
    pthread_cond_t closer_cond;  /* wakes the closer: a session to end */
    struct session *sessions;
    size_t n_sessions; /* counted against --max-sessions */
    size_t n_pending;  /* legacy sessions not yet initialized */
    /* Ended sessions whose runs the closer cancels, oldest first. */
    STAILQ_HEAD(session_queue, session) to_close;
    int closing;                              /* taken off to_close, being closed */
    LIST_HEAD(reader_list, reader) readers;   /* every SSE reader: keep-alives, hang-ups, stop */
    LIST_HEAD(request_list, request) waiting; /* requests suspended until their answer is ready */
    int active;                               /* requests between their first call and completion */
    /* The engine's health as the janitor last heard it (/healthz). */
    bool health_up;
    double health_at, health_wanted;
    const char *health_address;
    char health_error[256];
    size_t body_bytes;   /* reserved by request bodies held (--max-inflight-body-bytes) */
    atomic_bool started; /* read by MHD's logger from any thread */
    atomic_bool closed;  /* new connections are refused (stop): any polling thread reads it */
    bool stopping;       /* no new sessions or requests */
    bool threads_stop;   /* the janitor and the closer end */
    bool janitor_running, closer_running;
    pthread_t janitor, closer;
};

/* The janitor's tick: asks the engine how it is when /healthz was asked
 * lately and the last answer is old. */
void http_health_tick(struct transport_http *t, double now);

/* What a parsed request may do next: go on, find its session ended (404),
 * or find the session with --max-session-requests under way (429). */
enum request_admit { ADMIT_OK, ADMIT_ENDED, ADMIT_BUSY };

/* Once rq's body is parsed: gives back its room (and its bytes), checks
 * its session still lives and, when counts (it gets an answer), counts it
 * against the session's requests under way; one lock for all of it. */
enum request_admit http_request_admit(struct transport_http *t, struct request *rq, bool counts);

/* Gives back what rq's body reserved, and its buffer (lock not held). */
void http_release_body(struct transport_http *t, struct request *rq);

/* A request's connection stops being polled until http_resume_locked
 * (lock held; MHD's polling thread, in its request handler). False, and
 * nothing done, once the transport is stopping: the caller answers. */
bool http_suspend_locked(struct transport_http *t, struct request *rq);

/* Polls rq's connection again: MHD calls its handler once more (lock held;
 * any thread). Does nothing unless rq is suspended. */
void http_resume_locked(struct transport_http *t, struct request *rq);

#endif
