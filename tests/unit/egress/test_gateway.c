/* egress/gateway.c with relay.c, policy.c and summary.c: one client
 * connection served end to end (the rig: gateway_rig.h). Here: CONNECT
 * relayed both ways (bytes right after the head among them),
 * absolute-form GET/POST (the upstream head checked byte for byte, bodies
 * by Content-Length and chunked, nothing past a body passed on), each
 * refusal with its status and reason (but a name that does not resolve:
 * that would ask DNS; a head that does not come in time among them), and
 * 16 tunnels at once; --secret values put in place of their
 * placeholders for a bound host only. test_gateway_limits.c has
 * the caps, the stop signal and the log lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "unit/egress/gateway_rig.h"

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

/* ---- --secret ------------------------------------------------------------ */

#define GW_VALUE "real-value/0123456789" /* '/' is percent-encoded in a query */

/* One request with the placeholder in the query and a field to an
 * upstream on its own port; what the upstream got, in got. */
static void secret_request(const struct egress_run_secrets *rs, struct upstream *up, char *got,
                           size_t cap)
{
    up->until = "\r\n\r\n";
    up->reply = http_reply;
    char req[512];
    char answer[256];
    snprintf(req, sizeof(req),
             "GET http://up.test:%u/%s?k=%s HTTP/1.1\r\nAuthorization: Bearer %s\r\n\r\n", up->port,
             rs->placeholders[0], rs->placeholders[0], rs->placeholders[0]);
    exchange(req, answer, sizeof(answer));
    pthread_join(up->t, NULL);
    assert_string_equal(answer, http_reply);
    size_t n = up->conns[0].got_len < cap - 1 ? up->conns[0].got_len : cap - 1;
    memcpy(got, up->conns[0].got, n);
    got[n] = '\0';
    close(up->lfd);
    free(up);
}

static void test_secret_inserted(void **state)
{
    (void)state;
    struct upstream *bound = upstream_start(UP_HTTP, 1);
    struct upstream *other = upstream_start(UP_HTTP, 1);
    char item[64];
    snprintf(item, sizeof(item), "GW_KEY=up.test:%u", bound->port);
    char *items[] = {item};
    char *env[] = {"GW_KEY=" GW_VALUE, NULL};
    struct egress_secrets *t = NULL;
    struct egress_run_secrets *rs = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(egress_secrets_new(items, 1, env, NULL, &t, &err), 0);
    assert_int_equal(egress_run_secrets_new(t, &rs, &err), 0);
    policy->secrets = rs;
    const char *ph = rs->placeholders[0];
    unsigned bound_port = bound->port;

    char got[1024];
    char want[1024];
    secret_request(rs, bound, got, sizeof(got));
    snprintf(want, sizeof(want),
             "GET /%s?k=real-value%%2F0123456789 HTTP/1.1\r\nHost: up.test:%u\r\n"
             "Authorization: Bearer " GW_VALUE "\r\nConnection: close\r\n\r\n",
             ph, bound_port);
    assert_string_equal(got, want);
    const struct egress_entry *e = entry(0);
    assert_int_equal(e->secrets, 2);
    assert_int_equal(e->up, strlen(want));

    /* Allowed but not bound: the placeholder goes as it is. */
    unsigned other_port = other->port;
    secret_request(rs, other, got, sizeof(got));
    snprintf(want, sizeof(want),
             "GET /%s?k=%s HTTP/1.1\r\nHost: up.test:%u\r\nAuthorization: Bearer %s\r\n"
             "Connection: close\r\n\r\n",
             ph, ph, other_port, ph);
    assert_string_equal(got, want);
    assert_int_equal(entry(1)->secrets, 0);
    policy->secrets = NULL;
    egress_run_secrets_free(rs);
    egress_secrets_free(t);
}

#define GW_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    /* One line per connection at info: shown only where a test reads them. */
    log_set_threshold(LOG_LVL_WARN);
    const struct CMUnitTest tests[] = {
        GW_TEST(test_connect_relay),   GW_TEST(test_get),       GW_TEST(test_post_length),
        GW_TEST(test_post_chunked),    GW_TEST(test_http10),    GW_TEST(test_not_listed),
        GW_TEST(test_private_pin),     GW_TEST(test_metadata),  GW_TEST(test_connect_refused),
        GW_TEST(test_malformed),       GW_TEST(test_head_time), GW_TEST(test_many_tunnels),
        GW_TEST(test_secret_inserted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
