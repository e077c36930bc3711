/* Every HTTP connection's phase, for the limits libmicrohttpd cannot give:
 * absolute deadlines for a request's head and for its body (MHD's own
 * timeout restarts on every byte, so a client trickling one byte every few
 * seconds would hold its slot for ever), and room for new connections when
 * the slots run short: the connection that has waited longest without
 * sending a complete head is closed to make room. A connection whose
 * request passed the guard (Host, Origin, token) is never taken that way.
 *
 * The table has its own lock: it is touched by MHD's polling threads as
 * connections open, finish a head or a body and close, and by the janitor
 * that ends the ones past their deadline. Connections are closed by
 * shutdown() of their socket, which MHD then sees as the client's end; MHD
 * reports every close (conns_closed) before it closes the descriptor, so
 * a shut-down descriptor is never one MHD has handed on. */
#ifndef MCPSBX_HTTP_CONNS_H
#define MCPSBX_HTTP_CONNS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/queue.h>

enum conn_phase {
    CONN_HEAD,     /* no complete request head yet (new, or idle between requests) */
    CONN_BODY,     /* the head passed the guard; the body is on its way */
    CONN_ADMITTED, /* a request being answered: no deadline of ours */
    CONN_CLOSING,  /* shut down by us; MHD has yet to report the close */
};

struct conn {
    TAILQ_ENTRY(conn) link; /* in its phase's list while HEAD or BODY */
    enum conn_phase phase;
    int fd;
    double deadline; /* util_now_ms() time, HEAD and BODY */
};

/* A list of connections in one phase, oldest deadline first (every
 * connection of a phase gets the same time, so arrival order is deadline
 * order). */
TAILQ_HEAD(conn_list, conn);

struct conn_table {
    pthread_mutex_t lock;
    struct conn_list head, body;
    size_t open;     /* connections MHD has reported open and not closed */
    size_t evict_at; /* a new connection past this many closes the oldest HEAD one */
    double head_ms, body_ms;
    unsigned long evicted, expired; /* how many, for the log and the tests */
};

/* max_connections: the daemon's limit; headroom connections below it a
 * new one makes room. */
void conns_init(struct conn_table *tab, size_t max_connections, size_t headroom, double head_ms,
                double body_ms);
void conns_destroy(struct conn_table *tab);

/* A connection MHD accepted (its socket fd): in the HEAD phase. When the
 * table is crowded, the oldest connection still in its HEAD phase is shut
 * down. Returns the new entry. */
struct conn *conns_opened(struct conn_table *tab, int fd);

/* MHD is closing c: forget it (frees c). */
void conns_closed(struct conn_table *tab, struct conn *c);

/* c's request head arrived and passed the guard: its body (if any) gets
 * body_ms from now; without one it is admitted at once. */
void conns_head_done(struct conn_table *tab, struct conn *c, bool body_follows);

/* c's request body is all in: admitted. */
void conns_body_done(struct conn_table *tab, struct conn *c);

/* c's request was answered and the connection is kept alive: the next
 * head gets head_ms from now. */
void conns_request_done(struct conn_table *tab, struct conn *c);

/* Shuts down every connection past its deadline; returns how many. */
size_t conns_expire(struct conn_table *tab, double now);

#endif
