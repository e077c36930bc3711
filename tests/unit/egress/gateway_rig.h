/* The rig of the egress gateway's tests (test_gateway.c: relays and
 * refusals; test_gateway_limits.c: caps, the run's end and the log): one
 * run's policy over pinned names ("up.test=127.0.0.1") and the allow CIDR
 * 127.0.0.0/8, the sandbox's side as a socketpair, and upstreams that are
 * real TCP listeners on 127.0.0.1 (port 0) run by threads of the test.
 * Nothing is timed: a wait that never ends would hang a test, never pass
 * it. Include after cmocka.h. */
#ifndef MCPSBX_TEST_GATEWAY_RIG_H
#define MCPSBX_TEST_GATEWAY_RIG_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "egress/gateway.h"

/* ---- the run ------------------------------------------------------------ */

static struct egress_policy *policy;
static struct egress_pins *pins;
static struct egress_cidrs *allow;
static struct egress_usage usage;
static struct egress_summary summary;
static struct egress_cancel stop;
static struct egress_report *report;

static inline int setup(void **state)
{
    (void)state;
    policy = calloc(1, sizeof(*policy));
    pins = calloc(1, sizeof(*pins));
    allow = calloc(1, sizeof(*allow));
    report = calloc(1, sizeof(*report));
    if (!policy || !pins || !allow || !report)
        return -1;
    struct err err = ERR_INIT;
    if (egress_pins_add(pins, "up.test=127.0.0.1", &err) < 0 ||
        egress_pins_add(pins, "inner.test=10.1.2.3", &err) < 0 ||
        egress_cidrs_add(allow, "127.0.0.0/8", &err) < 0 ||
        egress_policy_init(policy, "run t1", NULL, pins, allow, NULL, &err) < 0 ||
        egress_cancel_init(&stop, &err) < 0)
        return -1;
    egress_usage_init(&usage);
    egress_summary_init(&summary);
    return 0;
}

static inline int teardown(void **state)
{
    (void)state;
    egress_cancel_destroy(&stop);
    egress_usage_destroy(&usage);
    egress_summary_destroy(&summary);
    free(policy);
    free(pins);
    free(allow);
    free(report);
    return 0;
}

static inline void allow_pattern(const char *host, unsigned port)
{
    char text[128];
    snprintf(text, sizeof(text), "%s:%u", host, port);
    struct err err = ERR_INIT;
    if (egress_patterns_add(&policy->patterns, text, strlen(text), &err) < 0)
        fail_msg("%s: %s", text, err_msg(&err));
}

static inline const struct egress_entry *entry(size_t i)
{
    egress_summary_copy(&summary, report);
    assert_true(i < report->n);
    return &report->entries[i];
}

/* ---- socket helpers ----------------------------------------------------- */

static inline void send_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        assert_true(w > 0);
        p += w;
        n -= (size_t)w;
    }
}

static inline void send_str(int fd, const char *s)
{
    send_all(fd, s, strlen(s));
}

/* tmpl with each "{P}" replaced by port. */
static inline void fill(char *out, size_t cap, const char *tmpl, unsigned port)
{
    char num[16];
    snprintf(num, sizeof(num), "%u", port);
    size_t n = 0;
    for (const char *p = tmpl; *p; p++) {
        const char *add = p;
        size_t len = 1;
        if (strncmp(p, "{P}", 3) == 0) {
            add = num;
            len = strlen(num);
            p += 2;
        }
        assert_true(n + len < cap);
        memcpy(out + n, add, len);
        n += len;
    }
    out[n] = '\0';
}

/* Reads until want bytes are in buf, or the end; returns how many. */
static inline size_t recv_n(int fd, char *buf, size_t want)
{
    size_t got = 0;
    while (got < want) {
        ssize_t r = recv(fd, buf + got, want - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

/* Reads until the end (cap - 1 at most kept, NUL-terminated). */
static inline size_t recv_all(int fd, char *buf, size_t cap)
{
    size_t got = 0;
    for (;;) {
        char scratch[4096];
        ssize_t r = recv(fd, scratch, sizeof(scratch), 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        size_t keep = (size_t)r;
        if (keep > cap - 1 - got)
            keep = cap - 1 - got;
        memcpy(buf + got, scratch, keep);
        got += keep;
    }
    buf[got] = '\0';
    return got;
}

/* ---- upstreams ---------------------------------------------------------- */

enum up_mode {
    UP_ECHO,  /* every byte back, until the end */
    UP_HTTP,  /* reads until `until`, answers `reply`, then reads to the end */
    UP_STALL, /* reads to the end, sends nothing */
};

#define UP_CONNS_MAX 32
#define UP_GOT_CAP   (64 * 1024)

struct up_conn {
    struct upstream *up;
    int fd;
    pthread_t t;
    size_t got_len;
    char got[UP_GOT_CAP];
};

struct upstream {
    int lfd;
    unsigned port;
    enum up_mode mode;
    const char *until;
    const char *reply;
    int expect;
    pthread_t t;
    struct up_conn conns[UP_CONNS_MAX];
};

static inline void *up_conn_main(void *arg)
{
    struct up_conn *c = arg;
    struct upstream *up = c->up;
    bool answered = false;
    for (;;) {
        char buf[4096];
        ssize_t r = recv(c->fd, buf, sizeof(buf), 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (up->mode == UP_ECHO && send(c->fd, buf, (size_t)r, MSG_NOSIGNAL) != r)
            break;
        size_t keep = (size_t)r < UP_GOT_CAP - c->got_len ? (size_t)r : UP_GOT_CAP - c->got_len;
        memcpy(c->got + c->got_len, buf, keep);
        c->got_len += keep;
        if (up->mode == UP_HTTP && !answered &&
            memmem(c->got, c->got_len, up->until, strlen(up->until))) {
            answered = true;
            send_all(c->fd, up->reply, strlen(up->reply));
            shutdown(c->fd, SHUT_WR);
        }
    }
    close(c->fd);
    return NULL;
}

static inline void *up_main(void *arg)
{
    struct upstream *up = arg;
    int started = 0;
    while (started < up->expect) {
        struct up_conn *c = &up->conns[started];
        c->up = up;
        c->fd = accept(up->lfd, NULL, NULL);
        if (c->fd < 0 || pthread_create(&c->t, NULL, up_conn_main, c) != 0)
            break;
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(up->conns[i].t, NULL);
    return NULL;
}

static inline int loopback_socket(unsigned *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    socklen_t len = sizeof(sin);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    *port = ntohs(sin.sin_port);
    return fd;
}

/* An upstream serving expect connections; allowed as up.test:PORT. */
static inline struct upstream *upstream_start(enum up_mode mode, int expect)
{
    struct upstream *up = calloc(1, sizeof(*up));
    assert_non_null(up);
    assert_true(expect <= UP_CONNS_MAX);
    up->mode = mode;
    up->expect = expect;
    up->lfd = loopback_socket(&up->port);
    assert_int_equal(listen(up->lfd, 64), 0);
    pthread_create(&up->t, NULL, up_main, up);
    allow_pattern("up.test", up->port);
    return up;
}

static inline void upstream_join(struct upstream *up)
{
    pthread_join(up->t, NULL);
    close(up->lfd);
    free(up);
}

/* ---- the gateway's side ----------------------------------------------- */

struct serving {
    pthread_t t;
    int fd;
};

static inline void *serve_main(void *arg)
{
    struct serving *sv = arg;
    egress_serve(policy, &usage, &summary, sv->fd, &stop);
    return NULL;
}

/* A connection to the gateway: the client's end (the sandbox's side). */
static inline int serve_start(struct serving *sv)
{
    int pair[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    sv->fd = pair[1];
    pthread_create(&sv->t, NULL, serve_main, sv);
    return pair[0];
}

/* Sends request on a new connection, reads the answer to its end. */
static inline void exchange(const char *request, char *answer, size_t cap)
{
    struct serving sv;
    int fd = serve_start(&sv);
    send_str(fd, request);
    recv_all(fd, answer, cap);
    close(fd);
    pthread_join(sv.t, NULL);
}

/* A CONNECT to up.test, established: the client's end, or -1 when the
 * gateway answered otherwise (callable from any thread). */
static inline int tunnel_try(struct serving *sv, unsigned port, const char *early)
{
    int fd = serve_start(sv);
    char req[256];
    snprintf(req, sizeof(req), "CONNECT up.test:%u HTTP/1.1\r\nHost: up.test:%u\r\n\r\n%s", port,
             port, early);
    send_str(fd, req);
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    char got[sizeof(ok)] = {0};
    if (recv_n(fd, got, sizeof(ok) - 1) != sizeof(ok) - 1 || strcmp(got, ok) != 0) {
        close(fd);
        pthread_join(sv->t, NULL);
        return -1;
    }
    return fd;
}

static inline int tunnel(struct serving *sv, unsigned port, const char *early)
{
    int fd = tunnel_try(sv, port, early);
    assert_true(fd >= 0);
    return fd;
}

static inline void refused_with(const char *answer, const char *status_line, const char *why)
{
    if (strncmp(answer, status_line, strlen(status_line)) != 0)
        fail_msg("answer '%s' is not '%s'", answer, status_line);
    if (!strstr(answer, "\r\nConnection: close\r\n") || !strstr(answer, why))
        fail_msg("answer '%s' lacks '%s'", answer, why);
}

#endif
