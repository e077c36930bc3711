/* backend/kubernetes/kube_stream.c against the hand-written WebSocket
 * peer (tests/fake_kube) as an attach: the attach path, stdout and
 * stderr handed to the callback by stream, stdin sent in pieces on
 * channel 0, a Status of Success on the error channel saying nothing,
 * one of Failure failing the read with its message, BACKEND_AGAIN when
 * nothing waits, a callback that asks to stop, and bad names refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kubernetes/kube_stream.h"
#include "backend/kubernetes/kube_ws.h"
#include "egress/tls.h"
#include "fake_kube/tls_server.h"
#include "fake_kube/ws_peer.h"

#define FAR_MS 10000L
#define BIG    (3 * KUBE_STREAM_PIECE + 100)

struct server {
    struct tls_server *tls;
    bool fail;
    char head[8192];
    int stdin_frames;
    size_t stdin_bytes;
};

static struct egress_tls_ca *g_ca;
static char g_dir[64];

static void handle(void *ctx, SSL *ssl)
{
    struct server *s = ctx;
    tls_read_request(ssl, s->head, sizeof(s->head));
    ws_upgrade(ssl, s->head, "v5.channel.k8s.io", false);
    static const unsigned char open1[] = {1}, open2[] = {2}, open3[] = {3};
    ws_frame_out(ssl, 0x82, open1, 1);
    ws_frame_out(ssl, 0x82, open2, 1);
    ws_frame_out(ssl, 0x82, open3, 1);
    if (s->fail) {
        const char st[] = "\x03{\"metadata\":{},\"status\":\"Failure\",\"message\":\"container "
                          "sandbox not found in pod p\",\"reason\":\"BadRequest\",\"code\":400}";
        ws_frame_out(ssl, 0x82, st, sizeof(st) - 1);
        tls_drain(ssl);
        return;
    }
    ws_frame_out(ssl, 0x82, "\x01out1", 5);
    ws_frame_out(ssl, 0x82,
                 "\x02"
                 "err1",
                 5);
    /* Stdin until BIG bytes came, then an answer and the end. */
    struct ws_frame f;
    while (s->stdin_bytes < BIG && ws_frame_in(ssl, &f) == 0) {
        if (f.opcode == 0x2 && f.len > 0 && f.data[0] == 0) {
            s->stdin_frames++;
            s->stdin_bytes += f.total - 1;
        }
    }
    ws_frame_out(ssl, 0x82, "\x01out2", 5);
    const char ok[] = "\x03{\"metadata\":{},\"status\":\"Success\"}";
    ws_frame_out(ssl, 0x82, ok, sizeof(ok) - 1);
    ws_frame_out(ssl, 0x88, "\x03\xe8", 2);
    tls_drain(ssl);
}

struct got {
    char out[64], err[64];
    int calls;
    int stop_after;
};

static int on_output(void *ctx, int stream, const char *data, size_t len, struct err *err)
{
    (void)err;
    struct got *g = ctx;
    char *to = stream == BACKEND_STDOUT ? g->out : g->err;
    size_t have = strlen(to);
    if (have + len < sizeof(g->out))
        memcpy(to + have, data, len), to[have + len] = '\0';
    g->calls++;
    return g->stop_after && g->calls >= g->stop_after ? 1 : 0;
}

/* Reads until the end or an error; returns the last read's result. */
static long read_all(struct kube_stream *ks, struct got *g, struct err *err)
{
    for (;;) {
        long r = kube_stream_read(ks, on_output, g, err);
        if (r == BACKEND_AGAIN) {
            struct pollfd p = {.fd = kube_stream_fd(ks), .events = POLLIN};
            if (!kube_stream_pending(ks))
                assert_true(poll(&p, 1, (int)FAR_MS) > 0);
            continue;
        }
        if (r <= 0)
            return r;
    }
}

static struct kube_api *client(struct server *s, bool fail)
{
    memset(s, 0, sizeof(*s));
    s->fail = fail;
    s->tls = tls_server_start(g_ca, handle, s);
    assert_non_null(s->tls);
    struct kube_api *a = tls_server_client(s->tls, g_ca, NULL);
    assert_non_null(a);
    return a;
}

static void test_streams(void **state)
{
    (void)state;
    struct server s;
    struct kube_api *a = client(&s, false);
    struct kube_stream *ks = NULL;
    struct err err = ERR_INIT;
    if (kube_stream_open(a, "ns", "p", FAR_MS, &ks, &err) < 0)
        fail_msg("%s", err_msg(&err));
    assert_non_null(strstr(s.head, "GET /api/v1/namespaces/ns/pods/p/attach?container=sandbox"
                                   "&stdin=true&stdout=true&stderr=true&tty=false HTTP/1.1\r\n"));
    /* The first output, one message at a time. */
    struct got g = {.stop_after = 1};
    long r;
    while ((r = kube_stream_read(ks, on_output, &g, &err)) == BACKEND_AGAIN) {
        struct pollfd p = {.fd = kube_stream_fd(ks), .events = POLLIN};
        assert_true(poll(&p, 1, (int)FAR_MS) > 0);
    }
    assert_int_equal(r, 4);
    assert_string_equal(g.out, "out1");
    g.stop_after = 0;
    char *big = calloc(1, BIG);
    assert_int_equal(kube_stream_send(ks, big, BIG, FAR_MS, &err), 0);
    free(big);
    assert_int_equal(read_all(ks, &g, &err), 0);
    assert_string_equal(g.out, "out1out2");
    assert_string_equal(g.err, "err1");
    kube_stream_close(ks);
    tls_server_stop(s.tls);
    assert_int_equal(s.stdin_frames, 4);
    kube_api_free(a);
}

static void test_attach_failure(void **state)
{
    (void)state;
    struct server s;
    struct kube_api *a = client(&s, true);
    struct kube_stream *ks = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(kube_stream_open(a, "ns", "p", FAR_MS, &ks, &err), 0);
    struct got g = {0};
    assert_int_equal(read_all(ks, &g, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_string_equal(err_msg(&err),
                        "the Kubernetes attach failed: container sandbox not found in pod p");
    err_clear(&err);
    kube_stream_close(ks);
    assert_int_equal(kube_stream_open(a, "ns", "a/b", FAR_MS, &ks, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    err_clear(&err);
    tls_server_stop(s.tls);
    kube_api_free(a);
}

static int setup(void **state)
{
    (void)state;
    return tls_ca_setup(g_dir, &g_ca);
}

static int teardown(void **state)
{
    (void)state;
    return tls_ca_teardown(g_dir, g_ca);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_streams),
        cmocka_unit_test(test_attach_failure),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
