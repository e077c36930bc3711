/* The byte pump of one gateway connection: the sandbox's side (the
 * client) and the upstream, both non-blocking stream sockets, polled
 * together with the run's stop descriptor until the connection ends.
 *
 * Two shapes:
 *   - a tunnel (CONNECT): bytes both ways untouched; an end that stops
 *     sending is passed on as a half-close (shutdown SHUT_WR), and the
 *     tunnel ends when both ways have ended, or when the client has gone
 *     altogether;
 *   - a request (absolute form): the client's bytes up to the body's end
 *     (egress/body.h; nothing past it), and the upstream's until it
 *     closes, which is where the response ends (the gateway asked for
 *     "Connection: close").
 * Each way has one buffer of EGRESS_RELAY_BUF bytes, refilled only once
 * it has been written out: a slow reader slows its writer, and memory
 * stays bounded. Bytes are taken from the run's allowance before they are
 * forwarded (egress_usage_take); at a cap the bytes granted still go out,
 * then the connection is cut. */
#ifndef MCPSBX_EGRESS_RELAY_H
#define MCPSBX_EGRESS_RELAY_H

#include <stdbool.h>
#include <stddef.h>

#include "egress/body.h"
#include "egress/policy.h"

/* One way's buffer. */
#define EGRESS_RELAY_BUF (16 * 1024)

enum egress_relay_end {
    EGRESS_RELAY_DONE,        /* both ways ended (a tunnel), or the response did */
    EGRESS_RELAY_CLIENT_GONE, /* the client closed before the end (why says how) */
    EGRESS_RELAY_CAP_UP,      /* the run's bytes_up cap */
    EGRESS_RELAY_CAP_DOWN,    /* the run's bytes_down cap */
    EGRESS_RELAY_TIME,        /* the deadline passed */
    EGRESS_RELAY_STOPPED,     /* the stop descriptor became readable */
    EGRESS_RELAY_BAD_BODY,    /* the request's chunked framing was refused (why) */
    EGRESS_RELAY_ERROR,       /* a socket failed (why, err_no) */
};

/* One way: private to relay.c. */
struct egress_relay_way {
    int from;
    int to;
    enum egress_way way;
    size_t off;
    size_t len;
    bool eof;    /* nothing more to read: the end of the stream or body */
    bool shut;   /* to's writing side is shut (tunnel) */
    bool capped; /* the run's cap was reached: cut once buf is written */
    char buf[EGRESS_RELAY_BUF];
};

struct egress_relay {
    /* Set by the caller (egress_relay_init). */
    int client;
    int upstream;
    int stop_fd;     /* -1: none */
    double deadline; /* util_now_ms time */
    struct egress_usage *usage;
    const struct egress_caps *caps;
    struct egress_body *body; /* NULL: a tunnel */
    /* Results. */
    unsigned long long up;   /* bytes written to the upstream */
    unsigned long long down; /* bytes written to the client */
    const char *why;         /* for CLIENT_GONE, BAD_BODY, ERROR: a constant phrase */
    int err_no;              /* for ERROR */
    /* Private. */
    struct egress_relay_way w[2]; /* by enum egress_way */
};

/* Sets r up for the two sockets (already non-blocking). body NULL makes
 * a tunnel. Large (over 32 KiB): allocate it. */
void egress_relay_init(struct egress_relay *r, int client, int upstream, int stop_fd,
                       double deadline, struct egress_usage *usage, const struct egress_caps *caps,
                       struct egress_body *body);

/* Runs the connection to its end. early[0..n) (n at most EGRESS_RELAY_BUF)
 * are the client's bytes already read past the request's head: they go
 * first, as if just read. */
enum egress_relay_end egress_relay_run(struct egress_relay *r, const void *early, size_t n);

/* What a wait for one descriptor gave. */
enum egress_wait {
    EGRESS_WAIT_READY,
    EGRESS_WAIT_TIMEOUT,
    EGRESS_WAIT_STOPPED,
};

/* Waits until fd has one of events (or an error or hang-up), the
 * deadline passes, or stop_fd (-1: none) is readable. */
enum egress_wait egress_wait_fd(int fd, short events, int stop_fd, double deadline);

/* Writes all of data[0..n) to the non-blocking fd by the deadline.
 * 0; or EGRESS_WAIT_TIMEOUT or EGRESS_WAIT_STOPPED as a positive value;
 * or -1 with errno. */
int egress_send_all(int fd, const void *data, size_t n, int stop_fd, double deadline);

#endif
