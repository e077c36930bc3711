/* egress/gateway.c with relay.c, policy.c and summary.c: one client
 * connection served end to end. The sandbox's side is a socketpair; the
 * upstreams are real TCP listeners on 127.0.0.1 (port 0) run by threads
 * of the test, reached under pinned names ("up.test=127.0.0.1") with the
 * allow CIDR 127.0.0.0/8. Covered: CONNECT relayed both ways (bytes right
 * after the head among them), absolute-form GET/POST (the upstream head
 * checked byte for byte, bodies by Content-Length and chunked, nothing
 * past a body passed on), each refusal with its status and reason (but a
 * name that does not resolve: that would ask DNS), the run's caps (bytes,
 * connections, time), the stop signal, the summary, the log lines, and
 * 16 tunnels at once. Nothing is timed: a wait that never ends would hang
 * the test, never pass it. */
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

static int setup(void **state)
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

static int teardown(void **state)
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

static void allow_pattern(const char *host, unsigned port)
{
    char text[128];
    snprintf(text, sizeof(text), "%s:%u", host, port);
    struct err err = ERR_INIT;
    if (egress_patterns_add(&policy->patterns, text, strlen(text), &err) < 0)
        fail_msg("%s: %s", text, err_msg(&err));
}

static const struct egress_entry *entry(size_t i)
{
    egress_summary_copy(&summary, report);
    assert_true(i < report->n);
    return &report->entries[i];
}

/* ---- socket helpers ----------------------------------------------------- */

static void send_all(int fd, const void *data, size_t n)
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

static void send_str(int fd, const char *s)
{
    send_all(fd, s, strlen(s));
}

/* tmpl with each "{P}" replaced by port. */
static void fill(char *out, size_t cap, const char *tmpl, unsigned port)
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
static size_t recv_n(int fd, char *buf, size_t want)
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
static size_t recv_all(int fd, char *buf, size_t cap)
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

static void *up_conn_main(void *arg)
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

static void *up_main(void *arg)
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

static int loopback_socket(unsigned *port)
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
static struct upstream *upstream_start(enum up_mode mode, int expect)
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

static void upstream_join(struct upstream *up)
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

static void *serve_main(void *arg)
{
    struct serving *sv = arg;
    egress_serve(policy, &usage, &summary, sv->fd, &stop);
    return NULL;
}

/* A connection to the gateway: the client's end (the sandbox's side). */
static int serve_start(struct serving *sv)
{
    int pair[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    sv->fd = pair[1];
    pthread_create(&sv->t, NULL, serve_main, sv);
    return pair[0];
}

/* Sends request on a new connection, reads the answer to its end. */
static void exchange(const char *request, char *answer, size_t cap)
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
static int tunnel_try(struct serving *sv, unsigned port, const char *early)
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

static int tunnel(struct serving *sv, unsigned port, const char *early)
{
    int fd = tunnel_try(sv, port, early);
    assert_true(fd >= 0);
    return fd;
}

static void refused_with(const char *answer, const char *status_line, const char *why)
{
    if (strncmp(answer, status_line, strlen(status_line)) != 0)
        fail_msg("answer '%s' is not '%s'", answer, status_line);
    if (!strstr(answer, "\r\nConnection: close\r\n") || !strstr(answer, why))
        fail_msg("answer '%s' lacks '%s'", answer, why);
}

/* ---- CONNECT ------------------------------------------------------------ */

static void test_connect_relay(void **state)
{
    (void)state;
    struct upstream *up = upstream_start(UP_ECHO, 1);
    struct serving sv;
    int fd = tunnel(&sv, up->port, "early-bytes|");
    send_str(fd, "then more");
    char got[64] = {0};
    const char *want = "early-bytes|then more";
    assert_int_equal(recv_n(fd, got, strlen(want)), strlen(want));
    assert_string_equal(got, want);
    /* The half-close goes through; the echo's end comes back. */
    shutdown(fd, SHUT_WR);
    assert_int_equal(recv_all(fd, got, sizeof(got)), 0);
    close(fd);
    pthread_join(sv.t, NULL);
    upstream_join(up);

    const struct egress_entry *e = entry(0);
    assert_int_equal(report->n, 1);
    assert_string_equal(e->host, "up.test");
    assert_true(e->allowed);
    assert_int_equal(e->status, 200);
    assert_string_equal(e->reason, "");
    assert_int_equal(e->up, strlen(want));
    assert_int_equal(e->down, strlen(want));
    assert_int_equal(egress_usage_bytes(&usage, EGRESS_UP), strlen(want));
    unsigned open = 9;
    egress_usage_conns(&usage, &open, NULL);
    assert_int_equal(open, 0);
}

/* ---- absolute form ------------------------------------------------------ */

static const char http_reply[] =
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";

/* request through the gateway ("{P}": the upstream's port): the upstream
 * must get exactly want, the client http_reply. */
static void through(const char *request, const char *until, const char *want_tmpl)
{
    struct upstream *up = upstream_start(UP_HTTP, 1);
    up->until = until;
    up->reply = http_reply;
    char req[2048];
    char want[2048];
    char answer[1024];
    fill(req, sizeof(req), request, up->port);
    fill(want, sizeof(want), want_tmpl, up->port);
    exchange(req, answer, sizeof(answer));
    pthread_join(up->t, NULL);
    assert_string_equal(answer, http_reply);
    struct up_conn *c = &up->conns[0];
    if (c->got_len != strlen(want) || memcmp(c->got, want, c->got_len) != 0)
        fail_msg("the upstream got '%.*s', not '%s'", (int)c->got_len, c->got, want);
    close(up->lfd);
    free(up);

    egress_summary_copy(&summary, report);
    assert_int_equal(report->n, 1);
    const struct egress_entry *e = &report->entries[0];
    assert_true(e->allowed);
    assert_int_equal(e->status, 0);
    assert_string_equal(e->reason, "");
    assert_int_equal(e->up, strlen(want));
    assert_int_equal(e->down, strlen(http_reply));
}

static void test_get(void **state)
{
    (void)state;
    through("GET http://up.test:{P}/path/x?q=1&r=two HTTP/1.1\r\n"
            "Host: up.test:{P}\r\n"
            "User-Agent: t/1\r\n"
            "Proxy-Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l\r\n"
            "Proxy-Connection: keep-alive\r\n"
            "Connection: keep-alive, X-Hop\r\n"
            "X-Hop: 1\r\n"
            "Keep-Alive: timeout=5\r\n"
            "TE: trailers\r\n"
            "Upgrade: websocket\r\n"
            "Proxy-Foo: bar\r\n"
            "Accept: */*\r\n"
            "\r\n",
            "\r\n\r\n",
            "GET /path/x?q=1&r=two HTTP/1.1\r\n"
            "Host: up.test:{P}\r\n"
            "User-Agent: t/1\r\n"
            "Accept: */*\r\n"
            "Connection: close\r\n"
            "\r\n");
}

static void test_post_length(void **state)
{
    (void)state;
    /* What follows the body must never reach the upstream. */
    through("POST http://up.test:{P}/submit HTTP/1.1\r\n"
            "Content-Length: 11\r\n"
            "Content-Type: text/plain\r\n"
            "\r\n"
            "hello world"
            "GET http://up.test:{P}/smuggled HTTP/1.1\r\n\r\n",
            "hello world",
            "POST /submit HTTP/1.1\r\n"
            "Host: up.test:{P}\r\n"
            "Content-Length: 11\r\n"
            "Content-Type: text/plain\r\n"
            "Connection: close\r\n"
            "\r\n"
            "hello world");
}

static void test_post_chunked(void **state)
{
    (void)state;
    through("POST http://up.test:{P}/c HTTP/1.1\r\n"
            "Host: elsewhere.test:{P}\r\n"
            "Transfer-Encoding: chunked\r\n"
            "\r\n"
            "5\r\nhello\r\n"
            "6;name=v\r\n world\r\n"
            "0\r\nX-Trailer: t\r\n\r\n"
            "GET /smuggled HTTP/1.1\r\n\r\n",
            "X-Trailer: t\r\n\r\n",
            "POST /c HTTP/1.1\r\n"
            "Host: up.test:{P}\r\n"
            "Transfer-Encoding: chunked\r\n"
            "Connection: close\r\n"
            "\r\n"
            "5\r\nhello\r\n"
            "6;name=v\r\n world\r\n"
            "0\r\nX-Trailer: t\r\n\r\n");
}

static void test_http10(void **state)
{
    (void)state;
    /* HTTP/1.0 stays 1.0 upstream (the answer is relayed as it is). */
    through("HEAD http://up.test:{P}/ HTTP/1.0\r\nX-N: 7\r\n\r\n", "\r\n\r\n",
            "HEAD / HTTP/1.0\r\nHost: up.test:{P}\r\nX-N: 7\r\nConnection: close\r\n\r\n");
}

/* ---- refusals ----------------------------------------------------------- */

static void test_not_listed(void **state)
{
    (void)state;
    char answer[1024];
    exchange("CONNECT api.example.com:443 HTTP/1.1\r\n\r\n", answer, sizeof(answer));
    refused_with(answer, "HTTP/1.1 403 Forbidden\r\n",
                 "\r\n\r\nmcp-sandboxd egress: api.example.com:443 is not in this run's egress "
                 "list\n");
    const struct egress_entry *e = entry(0);
    assert_string_equal(e->host, "api.example.com");
    assert_int_equal(e->port, 443);
    assert_false(e->allowed);
    assert_int_equal(e->status, 403);
    assert_string_equal(e->reason, "api.example.com:443 is not in this run's egress list");
    assert_int_equal(e->up + e->down, 0);
}

static void test_private_pin(void **state)
{
    (void)state;
    allow_pattern("inner.test", 80);
    char answer[1024];
    exchange("GET http://inner.test/ HTTP/1.1\r\n\r\n", answer, sizeof(answer));
    refused_with(answer, "HTTP/1.1 403 Forbidden\r\n",
                 "inner.test is pinned to 10.1.2.3, a private address");
    assert_false(entry(0)->allowed);
    assert_non_null(strstr(entry(0)->reason, "private"));
}

static void test_metadata(void **state)
{
    (void)state;
    allow_pattern("169.254.169.254", 80);
    char answer[1024];
    exchange("GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\n\r\n", answer,
             sizeof(answer));
    refused_with(answer, "HTTP/1.1 403 Forbidden\r\n", "the cloud metadata address");
}

static void test_connect_refused(void **state)
{
    (void)state;
    /* Bound, never listening: a connection to it is refused. */
    unsigned port = 0;
    int fd = loopback_socket(&port);
    allow_pattern("up.test", port);
    char req[128];
    char answer[1024];
    fill(req, sizeof(req), "CONNECT up.test:{P} HTTP/1.1\r\n\r\n", port);
    exchange(req, answer, sizeof(answer));
    close(fd);
    refused_with(answer, "HTTP/1.1 502 Bad Gateway\r\n", "cannot connect to up.test:");
    assert_non_null(strstr(answer, "(127.0.0.1): Connection refused"));
    const struct egress_entry *e = entry(0);
    assert_true(e->allowed);
    assert_int_equal(e->status, 502);
}

static void test_malformed(void **state)
{
    (void)state;
    char answer[1024];
    exchange("GET /relative HTTP/1.1\r\n\r\n", answer, sizeof(answer));
    refused_with(answer, "HTTP/1.1 400 Bad Request\r\n", "the target must be an absolute");
    exchange("BREW http://up.test/ HTTP/1.1\r\n\r\n", answer, sizeof(answer));
    refused_with(answer, "HTTP/1.1 405 Method Not Allowed\r\n", "only CONNECT");
    egress_summary_copy(&summary, report);
    assert_int_equal(report->n, 2);
    assert_string_equal(report->entries[0].host, "");
    assert_int_equal(report->entries[0].status, 400);
    assert_int_equal(report->refused, 2);
}

static void test_head_time(void **state)
{
    (void)state;
    policy->caps.head_ms = 50;
    struct serving sv;
    int fd = serve_start(&sv);
    send_str(fd, "CONNECT up.test:443 HTTP/1.1\r\n");
    char answer[1024];
    recv_all(fd, answer, sizeof(answer));
    refused_with(answer, "HTTP/1.1 408 Request Timeout\r\n", "did not arrive within 50 ms");
    close(fd);
    pthread_join(sv.t, NULL);
}

/* ---- caps --------------------------------------------------------------- */

/* A tunnel to an echo, fed 3000 bytes; returns what came back. */
static size_t capped_tunnel(void)
{
    struct upstream *up = upstream_start(UP_ECHO, 1);
    struct serving sv;
    int fd = tunnel(&sv, up->port, "");
    char data[3000];
    memset(data, 'x', sizeof(data));
    send_all(fd, data, sizeof(data));
    char back[4096];
    size_t n = recv_all(fd, back, sizeof(back));
    close(fd);
    pthread_join(sv.t, NULL);
    upstream_join(up);
    return n;
}

static void test_byte_caps(void **state)
{
    (void)state;
    policy->caps.bytes_up = 1000;
    assert_true(capped_tunnel() <= 1000);
    const struct egress_entry *e = entry(0);
    assert_true(e->allowed);
    assert_int_equal(e->up, 1000);
    assert_string_equal(e->reason, "cut: the run's upload cap (1000 bytes) was reached");
    assert_int_equal(egress_usage_bytes(&usage, EGRESS_UP), 1000);

    /* The run's allowance is spent: the next tunnel carries nothing up. */
    capped_tunnel();
    assert_int_equal(entry(1)->up, 0);

    policy->caps.bytes_up = 1 << 20;
    policy->caps.bytes_down = 500;
    /* Granted bytes go out before the cut: exactly the cap comes back. */
    assert_int_equal(capped_tunnel(), 500);
    assert_int_equal(entry(2)->down, 500);
    assert_string_equal(entry(2)->reason, "cut: the run's download cap (500 bytes) was reached");
}

static void test_open_cap(void **state)
{
    (void)state;
    policy->caps.conns_open = 1;
    struct upstream *up = upstream_start(UP_ECHO, 1);
    struct serving first;
    int fd = tunnel(&first, up->port, "");
    char req[128];
    char answer[1024];
    fill(req, sizeof(req), "CONNECT up.test:{P} HTTP/1.1\r\n\r\n", up->port);
    exchange(req, answer, sizeof(answer));
    refused_with(answer, "HTTP/1.1 429 Too Many Requests\r\n",
                 "this run has 1 connections open, its cap");
    close(fd);
    pthread_join(first.t, NULL);
    upstream_join(up);
    egress_summary_copy(&summary, report);
    assert_int_equal(report->n, 2);
    assert_int_equal(report->allowed, 1);
    assert_int_equal(report->refused, 1);
    assert_int_equal(report->entries[0].status, 429);
}

static void test_total_cap(void **state)
{
    (void)state;
    policy->caps.conns_total = 1;
    char answer[1024];
    exchange("CONNECT a.test:443 HTTP/1.1\r\n\r\n", answer, sizeof(answer));
    refused_with(answer, "HTTP/1.1 403 ", "not in this run's egress list");
    exchange("CONNECT a.test:443 HTTP/1.1\r\n\r\n", answer, sizeof(answer));
    refused_with(answer, "HTTP/1.1 429 ", "this run has made 1 connections, its cap");
}

static void test_conn_time(void **state)
{
    (void)state;
    policy->caps.conn_ms = 1000;
    struct upstream *up = upstream_start(UP_STALL, 1);
    struct serving sv;
    int fd = tunnel(&sv, up->port, "");
    char rest[16];
    assert_int_equal(recv_all(fd, rest, sizeof(rest)), 0);
    close(fd);
    pthread_join(sv.t, NULL);
    upstream_join(up);
    assert_string_equal(entry(0)->reason, "cut: the connection time cap (1000 ms) was reached");
}

/* ---- the run's end ---------------------------------------------------- */

static void test_stop(void **state)
{
    (void)state;
    /* A tunnel to an upstream that never answers, and a client that never
     * sends its head: the stop ends both (nothing else would for minutes). */
    struct upstream *up = upstream_start(UP_STALL, 1);
    struct serving stalled;
    struct serving silent;
    int fd = tunnel(&stalled, up->port, "");
    int quiet = serve_start(&silent);
    egress_cancel_fire(&stop);
    assert_true(egress_cancel_fired(&stop));
    pthread_join(stalled.t, NULL);
    pthread_join(silent.t, NULL);
    char rest[16];
    assert_int_equal(recv_all(fd, rest, sizeof(rest)), 0);
    close(fd);
    close(quiet);
    upstream_join(up);
    egress_summary_copy(&summary, report);
    assert_int_equal(report->n, 2);
    for (size_t i = 0; i < 2; i++) {
        const char *why = report->entries[i].reason;
        if (strcmp(why, "cut: the run ended") != 0 &&
            strcmp(why, "the run ended before the request's head arrived") != 0)
            fail_msg("reason '%s'", why);
    }
}

/* ---- the log ------------------------------------------------------------ */

static void test_log_lines(void **state)
{
    (void)state;
    char path[] = "/tmp/egress-log-XXXXXX";
    int log_fd = mkstemp(path);
    assert_true(log_fd >= 0);
    unlink(path);
    int saved = dup(STDERR_FILENO);
    dup2(log_fd, STDERR_FILENO);
    log_set_threshold(LOG_LVL_INFO);
    char answer[1024];
    exchange("GET http://secret-host.test/?token=hunter2 HTTP/1.1\r\n"
             "Authorization: Bearer hunter3\r\n\r\n",
             answer, sizeof(answer));
    exchange("junk\x1b[31m\r\n\r\n", answer, sizeof(answer));
    log_set_threshold(LOG_LVL_WARN);
    dup2(saved, STDERR_FILENO);
    close(saved);

    char text[4096] = {0};
    assert_true(pread(log_fd, text, sizeof(text) - 1, 0) > 0);
    close(log_fd);
    size_t lines = 0;
    for (const char *p = text; (p = strchr(p, '\n')); p++)
        lines++;
    assert_int_equal(lines, 2);
    assert_non_null(strstr(text, "egress run t1: GET secret-host.test:80 refused (403): "));
    assert_non_null(strstr(text, "egress run t1: no request (400): "));
    assert_null(strstr(text, "hunter"));
    assert_null(strstr(text, "\x1b"));
}

/* ---- many at once ------------------------------------------------------- */

#define STRESS_TUNNELS 16
#define STRESS_BYTES   (6 * 1024)

struct stress {
    unsigned port;
    int index;
    bool ok;
};

static void *stress_main(void *arg)
{
    struct stress *st = arg;
    struct serving sv;
    int fd = tunnel_try(&sv, st->port, "");
    if (fd < 0)
        return NULL;
    char *data = malloc(STRESS_BYTES);
    char *back = malloc(STRESS_BYTES);
    for (int i = 0; i < STRESS_BYTES; i++)
        data[i] = (char)('a' + (i * 7 + st->index) % 26);
    send_all(fd, data, STRESS_BYTES);
    st->ok =
        recv_n(fd, back, STRESS_BYTES) == STRESS_BYTES && memcmp(data, back, STRESS_BYTES) == 0;
    shutdown(fd, SHUT_WR);
    char rest[16];
    st->ok = st->ok && recv_all(fd, rest, sizeof(rest)) == 0;
    close(fd);
    pthread_join(sv.t, NULL);
    free(data);
    free(back);
    return NULL;
}

static void test_many_tunnels(void **state)
{
    (void)state;
    policy->caps.conns_open = STRESS_TUNNELS;
    struct upstream *up = upstream_start(UP_ECHO, STRESS_TUNNELS);
    pthread_t t[STRESS_TUNNELS];
    struct stress st[STRESS_TUNNELS];
    for (int i = 0; i < STRESS_TUNNELS; i++) {
        st[i] = (struct stress){.port = up->port, .index = i};
        pthread_create(&t[i], NULL, stress_main, &st[i]);
    }
    for (int i = 0; i < STRESS_TUNNELS; i++) {
        pthread_join(t[i], NULL);
        assert_true(st[i].ok);
    }
    upstream_join(up);
    egress_summary_copy(&summary, report);
    assert_int_equal(report->n, STRESS_TUNNELS);
    assert_int_equal(report->allowed, STRESS_TUNNELS);
    for (int i = 0; i < STRESS_TUNNELS; i++) {
        assert_int_equal(report->entries[i].up, STRESS_BYTES);
        assert_int_equal(report->entries[i].down, STRESS_BYTES);
    }
    assert_int_equal(report->up, STRESS_TUNNELS * STRESS_BYTES);
    assert_int_equal(egress_usage_bytes(&usage, EGRESS_DOWN), STRESS_TUNNELS * STRESS_BYTES);
    unsigned open = 9;
    unsigned total = 0;
    egress_usage_conns(&usage, &open, &total);
    assert_int_equal(open, 0);
    assert_int_equal(total, STRESS_TUNNELS);
}

#define GW_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    /* One line per connection at info: shown only where a test reads them. */
    log_set_threshold(LOG_LVL_WARN);
    const struct CMUnitTest tests[] = {
        GW_TEST(test_connect_relay), GW_TEST(test_get),       GW_TEST(test_post_length),
        GW_TEST(test_post_chunked),  GW_TEST(test_http10),    GW_TEST(test_not_listed),
        GW_TEST(test_private_pin),   GW_TEST(test_metadata),  GW_TEST(test_connect_refused),
        GW_TEST(test_malformed),     GW_TEST(test_head_time), GW_TEST(test_byte_caps),
        GW_TEST(test_open_cap),      GW_TEST(test_total_cap), GW_TEST(test_conn_time),
        GW_TEST(test_stop),          GW_TEST(test_log_lines), GW_TEST(test_many_tunnels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
