/* backend/kubernetes/kube_ws.c against a WebSocket server written by
 * hand from RFC 6455 (tests/fake_kube/ws_peer.c, so libwslay is checked
 * against other code, not against itself) in this process, over TLS:
 * the handshake (the key's accept value, the protocols offered and
 * chosen), the channels (stdin out, stdout fragmented, stderr and the
 * error channel in, the bare channel bytes skipped), v5's close signal
 * {255, 0} and v4's lack of one, pings answered, masking, refusals with
 * a Status, a bad accept, a missing protocol, a message over the cap,
 * and the answer head parser on its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kubernetes/kube_ws.h"
#include "egress/tls.h"
#include "fake_kube/tls_server.h"
#include "fake_kube/ws_peer.h"

#define FAR_MS 10000L

enum mode { WS_V5, WS_V4, WS_REFUSED, WS_BAD_ACCEPT, WS_NO_PROTOCOL, WS_BIG };

struct server {
    struct tls_server *tls;
    enum mode mode;
    char head[8192];
    struct ws_frame frames[8];
    int nframes;
    int pongs;
    bool unmasked; /* a client frame came without a mask */
};

static struct egress_tls_ca *g_ca;
static char g_dir[64];

static int frame_in(struct server *s, SSL *ssl, struct ws_frame *f)
{
    if (ws_frame_in(ssl, f) < 0)
        return -1;
    if (!f->masked)
        s->unmasked = true;
    return 0;
}

static void exchange(struct server *s, SSL *ssl)
{
    /* Channels opened, a ping, stdout in two fragments. */
    static const unsigned char open1[] = {1}, open2[] = {2}, open3[] = {3};
    ws_frame_out(ssl, 0x82, open1, 1);
    ws_frame_out(ssl, 0x82, open2, 1);
    ws_frame_out(ssl, 0x82, open3, 1);
    /* The ping before the output the client waits for: a pong queued
     * together with a close would not be sent (nothing follows a close). */
    ws_frame_out(ssl, 0x89, "p", 1);
    ws_frame_out(ssl, 0x02, "\x01hel", 4);
    ws_frame_out(ssl, 0x80, "lo", 2);
    struct ws_frame f;
    while (s->nframes < 8 && frame_in(s, ssl, &f) == 0) {
        if (f.opcode == 0xA) {
            s->pongs++;
            continue;
        }
        s->frames[s->nframes++] = f;
        if (f.opcode == 0x8)
            return;
        if (f.opcode == 0x2 && f.len == 2 && f.data[0] == 255)
            break;
    }
    ws_frame_out(ssl, 0x82,
                 "\x02"
                 "err",
                 4);
    const char st[] = "\x03{\"metadata\":{},\"status\":\"Success\"}";
    ws_frame_out(ssl, 0x82, st, sizeof(st) - 1);
    ws_frame_out(ssl, 0x88, "\x03\xe8", 2);
    /* The pong may come late: the client reads the ping when it next reads. */
    while (s->nframes < 8 && frame_in(s, ssl, &f) == 0) {
        if (f.opcode == 0xA)
            s->pongs++;
        else
            s->frames[s->nframes++] = f;
    }
}

static void handle(void *ctx, SSL *ssl)
{
    struct server *s = ctx;
    tls_read_request(ssl, s->head, sizeof(s->head));
    if (s->mode == WS_REFUSED) {
        char head[512];
        const char body[] = "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"pods "
                            "\\\"p\\\" is forbidden\",\"reason\":\"Forbidden\",\"code\":403}";
        snprintf(head, sizeof(head),
                 "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\n\r\n%s",
                 sizeof(body) - 1, body);
        tls_puts(ssl, head);
        return;
    }
    ws_upgrade(ssl, s->head,
               s->mode == WS_NO_PROTOCOL ? NULL
               : s->mode == WS_V4        ? "v4.channel.k8s.io"
                                         : "v5.channel.k8s.io",
               s->mode == WS_BAD_ACCEPT);
    if (s->mode == WS_BIG) {
        size_t n = KUBE_WS_MAX_MSG + 16;
        unsigned char *b = calloc(1, n);
        b[0] = 1;
        ws_frame_out(ssl, 0x82, b, n);
        free(b);
        tls_drain(ssl);
        return;
    }
    if (s->mode == WS_V5 || s->mode == WS_V4)
        exchange(s, ssl);
}

static struct kube_api *client(struct server *s)
{
    struct kube_api *a = tls_server_client(s->tls, g_ca, (char[]){"tok"});
    assert_non_null(a);
    return a;
}

#define ATTACH "/api/v1/namespaces/ns/pods/p/attach?container=sandbox&stdin=true&stdout=true"

static void start(struct server *s, enum mode m)
{
    memset(s, 0, sizeof(*s));
    s->mode = m;
    s->tls = tls_server_start(g_ca, handle, s);
    assert_non_null(s->tls);
}

static void test_v5_channels(void **state)
{
    (void)state;
    struct server s;
    start(&s, WS_V5);
    struct kube_api *a = client(&s);
    struct kube_ws *ws = NULL;
    struct err err = ERR_INIT;
    if (kube_ws_open(a, ATTACH, FAR_MS, &ws, &err) < 0)
        fail_msg("%s", err_msg(&err));
    assert_true(kube_ws_v5(ws));
    assert_non_null(strstr(s.head, "GET " ATTACH " HTTP/1.1\r\n"));
    assert_non_null(strcasestr(s.head, "\r\nSec-WebSocket-Protocol: " KUBE_WS_PROTOCOLS "\r\n"));
    assert_non_null(strcasestr(s.head, "\r\nAuthorization: Bearer tok\r\n"));
    assert_non_null(strcasestr(s.head, "\r\nSec-WebSocket-Version: 13\r\n"));

    struct buf m;
    buf_init(&m, KUBE_WS_MAX_MSG);
    unsigned ch = 99;
    /* The bare channel bytes are skipped; the fragments are one message. */
    assert_int_equal(kube_ws_recv(ws, &ch, &m, FAR_MS, &err), 1);
    assert_int_equal(ch, KUBE_WS_STDOUT);
    assert_int_equal(m.len, 5);
    assert_memory_equal(m.data, "hello", 5);
    assert_int_equal(kube_ws_send(ws, KUBE_WS_STDIN, "input", 5, FAR_MS, &err), 0);
    assert_int_equal(kube_ws_close_stdin(ws, FAR_MS, &err), 0);
    assert_int_equal(kube_ws_recv(ws, &ch, &m, FAR_MS, &err), 1);
    assert_int_equal(ch, KUBE_WS_STDERR);
    assert_memory_equal(m.data, "err", 3);
    assert_int_equal(kube_ws_recv(ws, &ch, &m, FAR_MS, &err), 1);
    assert_int_equal(ch, KUBE_WS_ERROR);
    assert_memory_equal(m.data, "{\"metadata\"", 11);
    assert_int_equal(kube_ws_recv(ws, &ch, &m, FAR_MS, &err), 0);
    kube_ws_close(ws);
    tls_server_stop(s.tls);

    assert_false(s.unmasked);
    assert_int_equal(s.pongs, 1);
    assert_true(s.nframes >= 3);
    assert_int_equal(s.frames[0].opcode, 0x2);
    assert_int_equal(s.frames[0].len, 6);
    assert_memory_equal(s.frames[0].data, "\x00input", 6);
    assert_int_equal(s.frames[1].len, 2);
    assert_memory_equal(s.frames[1].data, "\xff\x00", 2);
    assert_int_equal(s.frames[2].opcode, 0x8); /* the close answered */
    buf_free(&m);
    kube_api_free(a);
}

static void test_v4_cannot_close_stdin(void **state)
{
    (void)state;
    struct server s;
    start(&s, WS_V4);
    struct kube_api *a = client(&s);
    struct kube_ws *ws = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(kube_ws_open(a, ATTACH, FAR_MS, &ws, &err), 0);
    assert_false(kube_ws_v5(ws));
    assert_int_equal(kube_ws_close_stdin(ws, FAR_MS, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    err_clear(&err);
    kube_ws_close(ws);
    tls_server_stop(s.tls);
    /* Nothing was sent for the refused close (the close frame itself may
     * be lost: closing with the server's frames unread resets the
     * connection). */
    for (int i = 0; i < s.nframes; i++)
        assert_false(s.frames[i].len == 2 && s.frames[i].data[0] == 255);
    kube_api_free(a);
}

static void expect_open_fails(enum mode m, enum err_code code, const char *needle)
{
    struct server s;
    start(&s, m);
    struct kube_api *a = client(&s);
    struct kube_ws *ws = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(kube_ws_open(a, ATTACH, FAR_MS, &ws, &err), -1);
    assert_null(ws);
    assert_int_equal(err.code, code);
    if (!strstr(err_msg(&err), needle))
        fail_msg("'%s' lacks '%s'", err_msg(&err), needle);
    err_clear(&err);
    tls_server_stop(s.tls);
    kube_api_free(a);
}

static void test_open_failures(void **state)
{
    (void)state;
    expect_open_fails(WS_REFUSED, ERR_ENGINE, "403 Forbidden: pods \"p\" is forbidden");
    expect_open_fails(WS_BAD_ACCEPT, ERR_PROTOCOL, "Sec-WebSocket-Accept");
    expect_open_fails(WS_NO_PROTOCOL, ERR_PROTOCOL, "none of the streaming protocols");
}

static void test_message_over_cap(void **state)
{
    (void)state;
    struct server s;
    start(&s, WS_BIG);
    struct kube_api *a = client(&s);
    struct kube_ws *ws = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(kube_ws_open(a, ATTACH, FAR_MS, &ws, &err), 0);
    struct buf m;
    buf_init(&m, KUBE_WS_MAX_MSG);
    unsigned ch = 0;
    assert_int_equal(kube_ws_recv(ws, &ch, &m, FAR_MS, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    err_clear(&err);
    kube_ws_close(ws);
    tls_server_stop(s.tls);
    buf_free(&m);
    kube_api_free(a);
}

static void test_check_answer(void **state)
{
    (void)state;
    const char key[] = "dGhlIHNhbXBsZSBub25jZQ==";
    char acc[29];
    kube_ws_accept_value(key, acc);
    /* RFC 6455's own example. */
    assert_string_equal(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    struct kube_ws_answer ans;
    struct err err = ERR_INIT;
    const char ok[] = "HTTP/1.1 101 Switching Protocols\r\nupgrade: WebSocket\r\n"
                      "connection: keep-alive, Upgrade\r\n"
                      "sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                      "Sec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n";
    assert_int_equal(kube_ws_check_answer(ok, sizeof(ok) - 1, key, &ans, &err), 0);
    assert_int_equal(ans.status, 101);
    assert_false(ans.v5);
    const char refused[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 12\r\n\r\n";
    assert_int_equal(kube_ws_check_answer(refused, sizeof(refused) - 1, key, &ans, &err), 0);
    assert_int_equal(ans.status, 404);
    assert_int_equal(ans.content_length, 12);
    const char *bad[] = {
        "HTTP/1.1 1x1 Switching\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 9x\r\n\r\n",
        "HTTP/1.1 101 S\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
        "HTTP/1.1 101 S\r\nUpgrade: websocket\r\nConnection: close\r\n\r\n",
        "garbage",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(kube_ws_check_answer(bad[i], strlen(bad[i]), key, &ans, &err), -1);
        assert_int_equal(err.code, ERR_PROTOCOL);
        err_clear(&err);
    }
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
        cmocka_unit_test(test_v5_channels),   cmocka_unit_test(test_v4_cannot_close_stdin),
        cmocka_unit_test(test_open_failures), cmocka_unit_test(test_message_over_cap),
        cmocka_unit_test(test_check_answer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
