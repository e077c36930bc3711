/* backend/kubernetes/kube_api.c against an HTTPS server in this process
 * (a loopback listener whose certificate the egress CA mints): the token
 * sent as a bearer and re-read from its file, bodies and headers, Status
 * refusals as errors, an untrusted server refused, timeouts, the answer
 * cap, and watches (events split across writes, stopping, the watch's
 * own timeout, a refused watch, the event cap). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/kubernetes/kube_api.h"
#include "egress/tls.h"
#include "fake_kube/tls_server.h"

#define HEAD_CAP (64 * 1024)
#define FAR_MS   10000L

/* What the server answers, chosen per test. */
enum answer {
    ANSWER_POD,       /* 200 and a pod */
    ANSWER_NOT_FOUND, /* 404 and a Status */
    ANSWER_SILENT,    /* nothing until the client goes */
    ANSWER_HUGE,      /* a body over the cap */
    ANSWER_EVENTS,    /* three events, cut mid-line, then the end */
    ANSWER_ONE_EVENT, /* one event, then silence */
    ANSWER_GONE,      /* 410 and a Status, to a watch */
    ANSWER_BIG_EVENT, /* one event line over the cap */
};

struct server {
    struct tls_server *tls;
    enum answer answer;
    char head[HEAD_CAP]; /* the last request's head and body */
};

static struct egress_tls_ca *g_ca, *g_other_ca;
static char g_dir[64], g_other_dir[64];

static const char k_status_404[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"pods \\\"p\\\" not found\",\"reason\":\"NotFound\",\"details\":"
    "{\"name\":\"p\",\"kind\":\"pods\"},\"code\":404}";

static void answer(void *ctx, SSL *ssl)
{
    struct server *s = ctx;
    char head[256];
    tls_read_request(ssl, s->head, sizeof(s->head));
    switch (s->answer) {
    case ANSWER_POD:
        tls_puts(ssl, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      "Content-Length: 27\r\n\r\n{\"kind\":\"Pod\",\"metadata\":{}}");
        break;
    case ANSWER_NOT_FOUND:
        snprintf(head, sizeof(head),
                 "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\n\r\n",
                 strlen(k_status_404));
        tls_puts(ssl, head);
        tls_puts(ssl, k_status_404);
        break;
    case ANSWER_SILENT:
        tls_drain(ssl);
        break;
    case ANSWER_HUGE: {
        size_t n = KUBE_API_MAX_RESPONSE + 10;
        snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", n);
        tls_puts(ssl, head);
        char *b = calloc(1, n);
        tls_put(ssl, b, n);
        free(b);
        break;
    }
    case ANSWER_EVENTS:
        tls_puts(ssl, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n");
        tls_chunk(ssl, "{\"type\":\"ADDED\",\"object\":{\"n\":1}}\n{\"type\":\"MOD");
        tls_chunk(ssl, "IFIED\",\"object\":{\"n\":2}}\n");
        tls_chunk(ssl, "{\"type\":\"DELETED\",\"object\":{\"n\":3}}\n");
        tls_puts(ssl, "0\r\n\r\n");
        tls_drain(ssl);
        break;
    case ANSWER_ONE_EVENT:
        tls_puts(ssl, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        tls_chunk(ssl, "{\"type\":\"ADDED\",\"object\":{\"n\":1}}\n");
        tls_drain(ssl);
        break;
    case ANSWER_GONE:
        tls_puts(ssl, "HTTP/1.1 410 Gone\r\nContent-Type: application/json\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n");
        tls_chunk(ssl, "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"too old "
                       "resource version: 1 (42)\",\"reason\":\"Expired\",\"code\":410}");
        tls_puts(ssl, "0\r\n\r\n");
        break;
    case ANSWER_BIG_EVENT: {
        tls_puts(ssl, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        size_t n = KUBE_API_MAX_EVENT + 10;
        char *b = malloc(n + 1);
        memset(b, 'x', n);
        b[n] = '\0';
        tls_chunk(ssl, b);
        free(b);
        tls_drain(ssl);
        break;
    }
    }
}

static void server_start(struct server *s, enum answer a)
{
    memset(s, 0, sizeof(*s));
    s->answer = a;
    s->tls = tls_server_start(g_ca, answer, s);
    assert_non_null(s->tls);
}

static void server_stop(struct server *s)
{
    tls_server_stop(s->tls);
}

static struct kube_api *client(const struct server *s, const char *ca_file, char *token,
                               char *token_file)
{
    char ca[256];
    snprintf(ca, sizeof(ca), "%s", ca_file);
    char server[64];
    snprintf(server, sizeof(server), "%s/", tls_server_url(s->tls));
    struct kube_config cfg = {
        .server = server, .ca_file = ca, .token = token, .token_file = token_file};
    struct kube_api *a = NULL;
    struct err err = ERR_INIT;
    if (kube_api_new(&cfg, &a, &err) < 0)
        fail_msg("%s", err_msg(&err));
    return a;
}

static int setup(void **state)
{
    (void)state;
    return tls_ca_setup(g_dir, &g_ca) < 0 || tls_ca_setup(g_other_dir, &g_other_ca) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    int a = tls_ca_teardown(g_dir, g_ca), b = tls_ca_teardown(g_other_dir, g_other_ca);
    return a < 0 || b < 0 ? -1 : 0;
}

static void test_get_sends_bearer(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, ANSWER_POD);
    struct kube_api *a = client(&s, egress_tls_ca_path(g_ca), "s3cret-token", NULL);
    struct buf resp;
    buf_init(&resp, 1 << 20);
    struct err err = ERR_INIT;
    long status = 0;
    assert_int_equal(kube_api_request(a, "GET", "/api/v1/namespaces/ns/pods/p", NULL, 0, FAR_MS,
                                      &status, &resp, &err),
                     0);
    assert_int_equal(status, 200);
    assert_int_equal(resp.len, 27);
    assert_memory_equal(resp.data, "{\"kind\":\"Pod\"", 13);
    assert_non_null(strstr(s.head, "GET /api/v1/namespaces/ns/pods/p HTTP/1.1\r\n"));
    assert_non_null(strcasestr(s.head, "\r\nAuthorization: Bearer s3cret-token\r\n"));
    assert_non_null(strcasestr(s.head, "\r\nAccept: application/json\r\n"));
    buf_free(&resp);
    kube_api_free(a);
    server_stop(&s);
}

static void test_post_body(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, ANSWER_POD);
    struct kube_api *a = client(&s, egress_tls_ca_path(g_ca), NULL, NULL);
    struct buf resp;
    buf_init(&resp, 1 << 20);
    struct err err = ERR_INIT;
    long status = 0;
    const char body[] = "{\"kind\":\"Pod\"}";
    assert_int_equal(kube_api_request(a, "POST", "/api/v1/namespaces/ns/pods", body,
                                      sizeof(body) - 1, FAR_MS, &status, &resp, &err),
                     0);
    assert_non_null(strstr(s.head, "POST /api/v1/namespaces/ns/pods HTTP/1.1\r\n"));
    assert_non_null(strcasestr(s.head, "\r\nContent-Type: application/json\r\n"));
    assert_null(strcasestr(s.head, "Authorization:"));
    assert_non_null(strstr(s.head, "\r\n\r\n{\"kind\":\"Pod\"}"));
    /* DELETE goes as itself. */
    assert_int_equal(kube_api_request(a, "DELETE", "/api/v1/namespaces/ns/pods/p", NULL, 0, FAR_MS,
                                      &status, &resp, &err),
                     0);
    assert_non_null(strstr(s.head, "DELETE /api/v1/namespaces/ns/pods/p HTTP/1.1\r\n"));
    buf_free(&resp);
    kube_api_free(a);
    server_stop(&s);
}

static void test_refusals(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, ANSWER_NOT_FOUND);
    struct kube_api *a = client(&s, egress_tls_ca_path(g_ca), "t", NULL);
    struct buf resp;
    buf_init(&resp, 1 << 20);
    struct err err = ERR_INIT;
    long status = 0;
    assert_int_equal(kube_api_request(a, "GET", "/api/v1/namespaces/ns/pods/p", NULL, 0, FAR_MS,
                                      &status, &resp, &err),
                     0);
    assert_int_equal(status, 404);
    assert_int_equal(kube_api_refusal(status, resp.data, resp.len, "reading pod p", &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    assert_string_equal(err_msg(&err), "the Kubernetes API refused reading pod p: 404 NotFound: "
                                       "pods \"p\" not found");
    err_clear(&err);
    /* Not a Status: its text, cleaned. */
    const char plain[] = "forbidden\x1b[31m: no\n";
    kube_api_refusal(403, plain, sizeof(plain) - 1, "listing pods", &err);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_null(strchr(err_msg(&err), '\x1b'));
    assert_non_null(strstr(err_msg(&err), "403"));
    err_clear(&err);
    kube_api_refusal(504, NULL, 0, "creating pod p", &err);
    assert_int_equal(err.code, ERR_TIMEOUT);
    err_clear(&err);
    buf_free(&resp);
    kube_api_free(a);
    server_stop(&s);
}

static void test_untrusted_server(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, ANSWER_POD);
    struct kube_api *a = client(&s, egress_tls_ca_path(g_other_ca), "s3cret-token", NULL);
    struct buf resp;
    buf_init(&resp, 1 << 20);
    struct err err = ERR_INIT;
    long status = 0;
    assert_int_equal(kube_api_request(a, "GET", "/api/v1/namespaces/ns/pods?x=1", NULL, 0, FAR_MS,
                                      &status, &resp, &err),
                     -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err_msg(&err), "does not verify"));
    assert_null(strstr(err_msg(&err), "s3cret"));
    assert_null(strstr(err_msg(&err), "x=1"));
    err_clear(&err);
    buf_free(&resp);
    kube_api_free(a);
    server_stop(&s);
}

static void test_timeout_and_cap(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, ANSWER_SILENT);
    struct kube_api *a = client(&s, egress_tls_ca_path(g_ca), NULL, NULL);
    struct buf resp;
    buf_init(&resp, KUBE_API_MAX_RESPONSE);
    struct err err = ERR_INIT;
    long status = 0;
    assert_int_equal(kube_api_request(a, "GET", "/api/v1/pods", NULL, 0, 300, &status, &resp, &err),
                     -1);
    assert_int_equal(err.code, ERR_TIMEOUT);
    err_clear(&err);
    s.answer = ANSWER_HUGE;
    assert_int_equal(
        kube_api_request(a, "GET", "/api/v1/pods", NULL, 0, FAR_MS, &status, &resp, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    err_clear(&err);
    buf_free(&resp);
    kube_api_free(a);
    server_stop(&s);
}

static void test_token_reread(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/token", g_dir);
    FILE *fp = fopen(path, "we");
    fputs("first\n", fp);
    fclose(fp);
    struct server s;
    server_start(&s, ANSWER_POD);
    struct kube_api *a = client(&s, egress_tls_ca_path(g_ca), (char[]){"first"}, path);
    kube_api_set_token_reread_ms(a, 0);
    fp = fopen(path, "we");
    fputs("second\n", fp);
    fclose(fp);
    struct buf resp;
    buf_init(&resp, 1 << 20);
    struct err err = ERR_INIT;
    long status = 0;
    assert_int_equal(
        kube_api_request(a, "GET", "/api/v1/pods", NULL, 0, FAR_MS, &status, &resp, &err), 0);
    assert_non_null(strcasestr(s.head, "\r\nAuthorization: Bearer second\r\n"));
    /* A file that cannot be read keeps the token read before. */
    unlink(path);
    assert_int_equal(
        kube_api_request(a, "GET", "/api/v1/pods", NULL, 0, FAR_MS, &status, &resp, &err), 0);
    assert_non_null(strcasestr(s.head, "\r\nAuthorization: Bearer second\r\n"));
    buf_free(&resp);
    kube_api_free(a);
    server_stop(&s);
}

struct events {
    char lines[4][128];
    int n;
    int stop_after;
};

static int on_event(void *ctx, const char *line, size_t n)
{
    struct events *e = ctx;
    if (e->n < 4 && n < sizeof(e->lines[0]))
        memcpy(e->lines[e->n], line, n);
    e->n++;
    return e->stop_after && e->n >= e->stop_after;
}

static void test_watch(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, ANSWER_EVENTS);
    struct kube_api *a = client(&s, egress_tls_ca_path(g_ca), "t", NULL);
    struct err err = ERR_INIT;
    struct events ev = {0};
    bool timed_out = true;
    assert_int_equal(kube_api_watch(a, "/api/v1/namespaces/ns/pods?watch=1", FAR_MS, on_event, &ev,
                                    NULL, &timed_out, &err),
                     0);
    assert_false(timed_out);
    assert_int_equal(ev.n, 3);
    assert_string_equal(ev.lines[1], "{\"type\":\"MODIFIED\",\"object\":{\"n\":2}}");
    assert_string_equal(ev.lines[2], "{\"type\":\"DELETED\",\"object\":{\"n\":3}}");
    /* The callback ends it. */
    memset(&ev, 0, sizeof(ev));
    ev.stop_after = 1;
    assert_int_equal(kube_api_watch(a, "/api/v1/namespaces/ns/pods?watch=1", FAR_MS, on_event, &ev,
                                    NULL, &timed_out, &err),
                     0);
    assert_int_equal(ev.n, 1);
    /* The watch's own time is its normal end. */
    s.answer = ANSWER_ONE_EVENT;
    memset(&ev, 0, sizeof(ev));
    assert_int_equal(kube_api_watch(a, "/api/v1/namespaces/ns/pods?watch=1", 1500, on_event, &ev,
                                    NULL, &timed_out, &err),
                     0);
    assert_true(timed_out);
    assert_int_equal(ev.n, 1);
    /* A stop flag ends it too. */
    atomic_bool stop = true;
    memset(&ev, 0, sizeof(ev));
    assert_int_equal(kube_api_watch(a, "/api/v1/namespaces/ns/pods?watch=1", FAR_MS, on_event, &ev,
                                    &stop, &timed_out, &err),
                     0);
    assert_false(timed_out);
    kube_api_free(a);
    server_stop(&s);
}

static void test_watch_refused_and_capped(void **state)
{
    (void)state;
    struct server s;
    server_start(&s, ANSWER_GONE);
    struct kube_api *a = client(&s, egress_tls_ca_path(g_ca), "t", NULL);
    struct err err = ERR_INIT;
    struct events ev = {0};
    bool timed_out = false;
    assert_int_equal(kube_api_watch(a, "/api/v1/namespaces/ns/pods?watch=1", FAR_MS, on_event, &ev,
                                    NULL, &timed_out, &err),
                     -1);
    assert_int_equal(ev.n, 0);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err_msg(&err), "410 Expired: too old resource version"));
    err_clear(&err);
    s.answer = ANSWER_BIG_EVENT;
    assert_int_equal(kube_api_watch(a, "/api/v1/namespaces/ns/pods?watch=1", FAR_MS, on_event, &ev,
                                    NULL, &timed_out, &err),
                     -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    assert_int_equal(ev.n, 0);
    err_clear(&err);
    kube_api_free(a);
    server_stop(&s);
}

/* Plain http, and addresses that would put more than a host and port
 * into a URL or an upgrade's Host line. */
static void test_new_refuses_bad_servers(void **state)
{
    (void)state;
    static char *const bad[] = {
        "http://127.0.0.1:8080", "https://",          "https:///api",
        "https://h\r\nX: y",     "https://h ost",     "https://user@host:6443",
        "https://host:6443/a b", "https://host/?q=1", "https://host/#frag",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct kube_config cfg = {.server = bad[i]};
        struct kube_api *a = NULL;
        struct err err = ERR_INIT;
        assert_int_equal(kube_api_new(&cfg, &a, &err), -1);
        assert_int_equal(err.code, ERR_INVALID);
        assert_null(a);
        err_clear(&err);
    }
    static char *const good[] = {"https://10.0.0.1:6443", "https://[fd00::1]:443/",
                                 "https://api.example.com/k8s/clusters/c-1"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct kube_config cfg = {.server = good[i]};
        struct kube_api *a = NULL;
        struct err err = ERR_INIT;
        assert_int_equal(kube_api_new(&cfg, &a, &err), 0);
        kube_api_free(a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_sends_bearer),
        cmocka_unit_test(test_post_body),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_untrusted_server),
        cmocka_unit_test(test_timeout_and_cap),
        cmocka_unit_test(test_token_reread),
        cmocka_unit_test(test_watch),
        cmocka_unit_test(test_watch_refused_and_capped),
        cmocka_unit_test(test_new_refuses_bad_servers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
