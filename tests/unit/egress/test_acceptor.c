/* A run's gateway (egress/acceptor.h) over a stand-in stream whose
 * egress listener is a loopback TCP socket: connections are taken and
 * served, a burst far past the thread bound is answered whole, and the
 * run's end cuts an open tunnel and returns the summary. Nothing is
 * timed: a wait that never ends would hang a test, never pass it. */
#include "gateway_rig.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "egress/acceptor.h"

/* Connections in the burst: several times the threads the acceptor may
 * run (conns_open + EGRESS_ACCEPTOR_SPARE). */
#define BURST    48
#define OPEN_CAP 3
#define HEAD_CAP 512

struct fake_stream {
    struct backend_stream base;
    int listen_fd;
    unsigned port;
    atomic_int refusals; /* connections to refuse, as peer checks would */
};

static int fake_egress_fd(const struct backend_stream *s)
{
    return ((const struct fake_stream *)s)->listen_fd;
}

static int fake_egress_accept(struct backend_stream *bs, int *fd, struct err *err)
{
    struct fake_stream *s = (struct fake_stream *)bs;
    *fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (*fd < 0)
        return errno == EAGAIN ? 0 : err_set(err, ERR_IO, "accept: %s", strerror(errno));
    if (atomic_load(&s->refusals) > 0) {
        atomic_fetch_sub(&s->refusals, 1);
        close(*fd);
        *fd = -1;
        return err_set(err, ERR_PROTOCOL, "a process outside the sandbox connected");
    }
    return 0;
}

static const struct backend_ops fake_ops = {
    .kind = "fake",
    .stream_egress_fd = fake_egress_fd,
    .stream_egress_accept = fake_egress_accept,
};

static void fake_open(struct fake_stream *s)
{
    memset(s, 0, sizeof(*s));
    s->base.ops = &fake_ops;
    s->listen_fd = loopback_socket(&s->port);
    assert_int_equal(listen(s->listen_fd, BURST + 8), 0);
    int fl = fcntl(s->listen_fd, F_GETFL);
    assert_int_equal(fcntl(s->listen_fd, F_SETFL, fl | O_NONBLOCK), 0);
}

static int dial(const struct fake_stream *s)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                              .sin_port = htons((uint16_t)s->port)};
    assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    return fd;
}

/* A CONNECT to up.test:port through the acceptor, sending early right
 * after the head: the client's end, once the gateway said 200. */
static int tunnel_through(const struct fake_stream *s, unsigned port, const char *early)
{
    int fd = dial(s);
    char req[128];
    snprintf(req, sizeof(req), "CONNECT up.test:%u HTTP/1.1\r\n\r\n%s", port, early);
    send_str(fd, req);
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    char got[sizeof(ok)] = {0};
    assert_int_equal(recv_n(fd, got, sizeof(ok) - 1), sizeof(ok) - 1);
    assert_string_equal(got, ok);
    return fd;
}

static struct egress_acceptor *start(struct fake_stream *s, const struct egress_caps *caps)
{
    struct egress_run_spec spec = {.label = "run a1",
                                   .patterns = &policy->patterns,
                                   .pins = pins,
                                   .allow = allow,
                                   .caps = caps};
    struct egress_acceptor *a = NULL;
    struct err err = ERR_INIT;
    if (egress_acceptor_start(&s->base, &spec, &a, &err) < 0)
        fail_msg("%s", err_msg(&err));
    return a;
}

/* A tunnel through the acceptor to an echoing upstream, with a refused
 * peer before it: the refusal costs nothing but a log line. */
static void test_serves(void **state)
{
    (void)state;
    struct upstream *up = upstream_start(UP_ECHO, 1);
    struct fake_stream s;
    fake_open(&s);
    atomic_store(&s.refusals, 1);
    struct egress_acceptor *a = start(&s, NULL);
    int stranger = dial(&s);
    char none[8];
    assert_int_equal(recv_all(stranger, none, sizeof(none)), 0);
    close(stranger);

    int fd = tunnel_through(&s, up->port, "ping");
    char echo[5] = {0};
    assert_int_equal(recv_n(fd, echo, 4), 4);
    assert_string_equal(echo, "ping");
    close(fd);
    upstream_join(up);

    egress_acceptor_finish(a, report);
    assert_int_equal(report->n, 1);
    assert_true(report->entries[0].allowed);
    assert_int_equal(report->entries[0].up, 4);
    assert_int_equal(report->entries[0].down, 4);
    close(s.listen_fd);
}

/* BURST clients at once, each refused by the list: every one gets its
 * 403 (or 429 over the open cap) although at most OPEN_CAP + spare
 * threads serve them, and the summary counts them all. */
static void test_burst(void **state)
{
    (void)state;
    struct fake_stream s;
    fake_open(&s);
    struct egress_caps caps;
    egress_caps_default(&caps);
    caps.conns_open = OPEN_CAP;
    caps.conns_total = BURST * 2;
    struct egress_acceptor *a = start(&s, &caps);
    int fds[BURST];
    for (int i = 0; i < BURST; i++) {
        fds[i] = dial(&s);
        send_str(fds[i], "CONNECT nowhere.test:443 HTTP/1.1\r\n\r\n");
    }
    size_t forbidden = 0;
    for (int i = 0; i < BURST; i++) {
        char answer[HEAD_CAP];
        recv_all(fds[i], answer, sizeof(answer));
        assert_true(strncmp(answer, "HTTP/1.1 403 ", 13) == 0 ||
                    strncmp(answer, "HTTP/1.1 429 ", 13) == 0);
        forbidden += strncmp(answer, "HTTP/1.1 403 ", 13) == 0;
        close(fds[i]);
    }
    assert_true(forbidden > 0);
    egress_acceptor_finish(a, report);
    assert_int_equal(report->refused, BURST);
    assert_int_equal(report->allowed, 0);
    close(s.listen_fd);
}

/* The run's end cuts a tunnel to an upstream that never speaks, and a
 * client that never sends its head: finish returns, both see the end. */
static void test_finish_cuts(void **state)
{
    (void)state;
    struct upstream *up = upstream_start(UP_STALL, 1);
    struct fake_stream s;
    fake_open(&s);
    struct egress_acceptor *a = start(&s, NULL);
    int fd = tunnel_through(&s, up->port, "");
    int silent = dial(&s);

    egress_acceptor_finish(a, report);
    char rest[64];
    assert_int_equal(recv_all(fd, rest, sizeof(rest)), 0);
    /* Taken or still in the backlog: either way it ends, at the latest
     * with the listener (the stream's close). */
    close(s.listen_fd);
    recv_all(silent, rest, sizeof(rest));
    close(fd);
    close(silent);
    upstream_join(up);
    assert_true(report->allowed >= 1);
}

/* A stream without an egress listener has no gateway. */
static void test_no_listener(void **state)
{
    (void)state;
    struct fake_stream s = {.base.ops = &fake_ops, .listen_fd = -1};
    struct egress_run_spec spec = {.label = "x", .patterns = &policy->patterns};
    struct egress_acceptor *a = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(egress_acceptor_start(&s.base, &spec, &a, &err), -1);
    assert_null(a);
    err_clear(&err);
    egress_acceptor_finish(NULL, report);
}

int main(void)
{
    /* The refused peer is a warning: shown only where a test reads it. */
    log_set_threshold(LOG_LVL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_serves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_burst, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finish_cuts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_listener, setup, teardown),
    };
    return cmocka_run_group_tests_name("egress_acceptor", tests, NULL, NULL);
}
