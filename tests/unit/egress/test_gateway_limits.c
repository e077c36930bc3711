/* egress/gateway.c's limits (the rig: gateway_rig.h): the run's caps
 * (bytes each way, connections open and made, a connection's time), the
 * stop signal at the run's end, and the one log line per connection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "unit/egress/gateway_rig.h"

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

#define GW_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    /* One line per connection at info: shown only where a test reads them. */
    log_set_threshold(LOG_LVL_WARN);
    const struct CMUnitTest tests[] = {
        GW_TEST(test_byte_caps), GW_TEST(test_open_cap), GW_TEST(test_total_cap),
        GW_TEST(test_conn_time), GW_TEST(test_stop),     GW_TEST(test_log_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
