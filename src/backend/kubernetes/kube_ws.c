/* The streaming subprotocol over a WebSocket (kube_ws.h): the handshake
 * checked here, the framing libwslay's, driven over kube_api's upgraded
 * TLS connection with poll(2) and deadlines. */
#include "backend/kubernetes/kube_ws.h"

#include <ctype.h>
#include <errno.h>
#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <wslay/wslay.h>

#include "base/util.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

/* A received message waiting for the caller. */
struct msg {
    struct msg *next;
    unsigned channel;
    size_t len;
    unsigned char data[];
};

struct kube_ws {
    struct kube_api_conn *conn;
    wslay_event_context_ptr ctx;
    bool v5;
    bool eof;      /* the connection ended */
    bool failed;   /* reading it failed: err holds why */
    bool bad_peer; /* the server broke the subprotocol */
    struct err err;
    struct msg *head, *tail;
    size_t queued;
};

void kube_ws_accept_value(const char *key, char out[29])
{
    struct sha1_ctx h;
    uint8_t digest[SHA1_DIGEST_SIZE];
    sha1_init(&h);
    sha1_update(&h, strlen(key), (const uint8_t *)key);
    sha1_update(&h, sizeof(WS_GUID) - 1, (const uint8_t *)WS_GUID);
    sha1_digest(&h, sizeof(digest), digest);
    base64_encode_raw(out, sizeof(digest), digest);
    out[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE)] = '\0';
}

/* Whether the comma-separated list v[0..n) holds token (any case). */
static bool list_has(const char *v, size_t n, const char *token)
{
    size_t tl = strlen(token);
    for (size_t i = 0; i < n;) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t j = i;
        while (j < n && v[j] != ',')
            j++;
        size_t e = j;
        while (e > i && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e - i == tl && strncasecmp(v + i, token, tl) == 0)
            return true;
        i = j;
    }
    return false;
}

/* Header name's value in the head's lines, trimmed; NULL when absent. */
static const char *header(const char *head, size_t n, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    const char *end = head + n;
    const char *p = memchr(head, '\n', n); /* past the status line */
    while (p && ++p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        if ((size_t)(le - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (v < le && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = le;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            *vlen = (size_t)(ve - v);
            return v;
        }
        p = eol;
    }
    return NULL;
}

static bool value_is(const char *v, size_t n, const char *want)
{
    return v && n == strlen(want) && strncasecmp(v, want, n) == 0;
}

int kube_ws_check_answer(const char *head, size_t n, const char *key, struct kube_ws_answer *out,
                         struct err *err)
{
    *out = (struct kube_ws_answer){.content_length = -1};
    if (n < 12 || strncmp(head, "HTTP/1.", 7) != 0 || head[8] != ' ' ||
        !isdigit((unsigned char)head[9]) || !isdigit((unsigned char)head[10]) ||
        !isdigit((unsigned char)head[11]))
        return err_set(err, ERR_PROTOCOL, "the Kubernetes API's answer has no HTTP status line");
    out->status = (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
    size_t vl = 0;
    const char *v = header(head, n, "Content-Length", &vl);
    if (v) {
        long long cl = 0;
        for (size_t i = 0; i < vl; i++) {
            if (!isdigit((unsigned char)v[i]) || cl > (1LL << 40))
                return err_set(err, ERR_PROTOCOL, "the Kubernetes API's Content-Length is bad");
            cl = cl * 10 + (v[i] - '0');
        }
        out->content_length = vl ? cl : -1;
    }
    if (out->status != 101)
        return 0;
    v = header(head, n, "Upgrade", &vl);
    if (!value_is(v, vl, "websocket"))
        return err_set(err, ERR_PROTOCOL, "the Kubernetes API's upgrade is not to websocket");
    v = header(head, n, "Connection", &vl);
    if (!v || !list_has(v, vl, "upgrade"))
        return err_set(err, ERR_PROTOCOL, "the Kubernetes API's upgrade lacks Connection: Upgrade");
    char want[29];
    kube_ws_accept_value(key, want);
    v = header(head, n, "Sec-WebSocket-Accept", &vl);
    if (!v || vl != strlen(want) || memcmp(v, want, vl) != 0)
        return err_set(err, ERR_PROTOCOL,
                       "the Kubernetes API's Sec-WebSocket-Accept does not match the key sent");
    v = header(head, n, "Sec-WebSocket-Protocol", &vl);
    if (value_is(v, vl, "v5.channel.k8s.io"))
        out->v5 = true;
    else if (!value_is(v, vl, "v4.channel.k8s.io"))
        return err_set(err, ERR_PROTOCOL,
                       "the Kubernetes API chose none of the streaming protocols offered (%s)",
                       KUBE_WS_PROTOCOLS);
    return 0;
}

/* ---- libwslay's callbacks -------------------------------------------- */

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *ud)
{
    (void)flags;
    struct kube_ws *ws = ud;
    if (ws->queued >= KUBE_WS_MAX_QUEUED) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    long r = kube_api_conn_recv(ws->conn, buf, len, &ws->err);
    if (r > 0)
        return (ssize_t)r;
    if (r == -2) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (r == 0)
        ws->eof = true;
    else
        ws->failed = true;
    wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
    return -1;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *ud)
{
    (void)flags;
    struct kube_ws *ws = ud;
    long r = kube_api_conn_write(ws->conn, data, len, &ws->err);
    if (r > 0)
        return (ssize_t)r;
    if (r == -2 || r == 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    ws->failed = true;
    wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
    return -1;
}

static int on_genmask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *ud)
{
    (void)ud;
    if (getrandom(buf, len, 0) != (ssize_t)len) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return 0;
}

static void on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *m,
                   void *ud)
{
    (void)ctx;
    struct kube_ws *ws = ud;
    if (wslay_is_ctrl_frame(m->opcode))
        return; /* pings are answered by libwslay; a close ends reads */
    if (m->opcode != WSLAY_BINARY_FRAME) {
        /* The base64 subprotocols, which were not offered, use text. */
        ws->bad_peer = true;
        return;
    }
    /* A bare channel byte opens a channel and says nothing. */
    if (m->msg_length <= 1)
        return;
    struct msg *q = xmalloc(sizeof(*q) + m->msg_length - 1);
    q->next = NULL;
    q->channel = m->msg[0];
    q->len = m->msg_length - 1;
    memcpy(q->data, m->msg + 1, q->len);
    if (ws->tail)
        ws->tail->next = q;
    else
        ws->head = q;
    ws->tail = q;
    ws->queued += q->len;
}

/* ---- the session ----------------------------------------------------- */

/* Sends what libwslay has queued, by the deadline. */
static int flush(struct kube_ws *ws, double deadline, struct err *err)
{
    while (wslay_event_want_write(ws->ctx)) {
        int r = wslay_event_send(ws->ctx);
        if (r != 0 || ws->failed) {
            if (ws->failed)
                return err_set(err, ws->err.code, "%s", err_msg(&ws->err));
            return err_set(err, ERR_ENGINE, "the Kubernetes API stream cannot be written (%d)", r);
        }
        if (!wslay_event_want_write(ws->ctx))
            break;
        if (kube_api_wait_fd(kube_api_conn_fd(ws->conn), POLLOUT, deadline) < 0)
            return err_set(err, ERR_TIMEOUT, "the Kubernetes API did not take the stream's bytes");
    }
    return 0;
}

/* Reads a refusal's body (the Content-Length given, within its cap and
 * the deadline) into body, after the bytes read with the head. */
static void read_refusal(struct kube_api_conn *c, long long want, struct buf *body, double deadline)
{
    char chunk[4096];
    struct err ignored = ERR_INIT;
    while (want < 0 || (long long)body->len < want) {
        long r = kube_api_conn_recv(c, chunk, sizeof(chunk), &ignored);
        if (r == -2) {
            if (kube_api_wait_fd(kube_api_conn_fd(c), POLLIN, deadline) < 0)
                break;
            continue;
        }
        if (r <= 0 || buf_add(body, chunk, (size_t)r) < 0)
            break;
    }
    err_clear(&ignored);
}

static int handshake(struct kube_api *a, const char *path, long timeout_ms, bool *v5,
                     struct kube_api_conn **conn, struct err *err)
{
    uint8_t raw[16];
    char key[BASE64_ENCODE_RAW_LENGTH(16) + 1];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        return err_set(err, ERR_INTERNAL, "getrandom: %s", strerror(errno));
    base64_encode_raw(key, sizeof(raw), raw);
    key[BASE64_ENCODE_RAW_LENGTH(16)] = '\0';
    cleanup_free char *hdrs = xasprintf("Connection: Upgrade\r\nUpgrade: websocket\r\n"
                                        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n"
                                        "Sec-WebSocket-Protocol: " KUBE_WS_PROTOCOLS "\r\n",
                                        key);
    double deadline = util_now_ms() + (double)timeout_ms;
    struct buf head, body;
    buf_init(&head, KUBE_WS_MAX_HEAD);
    buf_init(&body, KUBE_WS_MAX_HEAD);
    int ret = -1;
    struct kube_ws_answer ans;
    if (kube_api_upgrade(a, path, hdrs, timeout_ms, &head, conn, err) < 0)
        goto out;
    if (kube_ws_check_answer(head.data, head.len, key, &ans, err) < 0)
        goto out;
    if (ans.status != 101) {
        read_refusal(*conn, ans.content_length, &body, deadline);
        kube_api_refusal(ans.status, body.data, body.len, "attaching", err);
        goto out;
    }
    *v5 = ans.v5;
    ret = 0;
out:
    if (ret < 0) {
        kube_api_conn_close(*conn);
        *conn = NULL;
    }
    buf_free(&head);
    buf_free(&body);
    return ret;
}

int kube_ws_open(struct kube_api *a, const char *path, long timeout_ms, struct kube_ws **out,
                 struct err *err)
{
    *out = NULL;
    struct kube_ws *ws = xcalloc(1, sizeof(*ws));
    ws->err = (struct err)ERR_INIT;
    if (handshake(a, path, timeout_ms, &ws->v5, &ws->conn, err) < 0) {
        free(ws);
        return -1;
    }
    static const struct wslay_event_callbacks cb = {
        .recv_callback = on_recv,
        .send_callback = on_send,
        .genmask_callback = on_genmask,
        .on_msg_recv_callback = on_msg,
    };
    if (wslay_event_context_client_init(&ws->ctx, &cb, ws) != 0) {
        kube_api_conn_close(ws->conn);
        free(ws);
        return err_set(err, ERR_INTERNAL, "wslay_event_context_client_init failed");
    }
    wslay_event_config_set_max_recv_msg_length(ws->ctx, KUBE_WS_MAX_MSG);
    *out = ws;
    return 0;
}

bool kube_ws_v5(const struct kube_ws *ws)
{
    return ws->v5;
}

int kube_ws_send(struct kube_ws *ws, unsigned channel, const void *data, size_t n, long timeout_ms,
                 struct err *err)
{
    if (channel > 255 || n > KUBE_WS_MAX_MSG)
        return err_set(err, ERR_INTERNAL, "a stream message for channel %u of %zu bytes", channel,
                       n);
    cleanup_free unsigned char *m = xmalloc(n + 1);
    m[0] = (unsigned char)channel;
    if (n)
        memcpy(m + 1, data, n);
    struct wslay_event_msg msg = {.opcode = WSLAY_BINARY_FRAME, .msg = m, .msg_length = n + 1};
    if (wslay_event_queue_msg(ws->ctx, &msg) != 0)
        return err_set(err, ERR_ENGINE, "the Kubernetes API stream is closed for writing");
    return flush(ws, util_now_ms() + (double)timeout_ms, err);
}

int kube_ws_close_stdin(struct kube_ws *ws, long timeout_ms, struct err *err)
{
    if (!ws->v5)
        return err_set(err, ERR_PROTOCOL,
                       "the Kubernetes API speaks v4.channel.k8s.io, which cannot close stdin");
    const unsigned char ch = KUBE_WS_STDIN;
    return kube_ws_send(ws, KUBE_WS_CLOSE, &ch, 1, timeout_ms, err);
}

static void pop(struct kube_ws *ws, unsigned *channel, struct buf *out)
{
    struct msg *q = ws->head;
    ws->head = q->next;
    if (!ws->head)
        ws->tail = NULL;
    ws->queued -= q->len;
    *channel = q->channel;
    buf_reset(out);
    if (buf_add(out, q->data, q->len) < 0)
        out->len = 0; /* the caller's cap is below a message's: nothing */
    free(q);
}

int kube_ws_recv(struct kube_ws *ws, unsigned *channel, struct buf *out, long timeout_ms,
                 struct err *err)
{
    double deadline = util_now_ms() + (double)timeout_ms;
    for (;;) {
        if (ws->head) {
            pop(ws, channel, out);
            return 1;
        }
        /* Always read before polling: TLS may hold bytes poll cannot see. */
        int r = wslay_event_recv(ws->ctx);
        if (ws->bad_peer)
            return err_set(err, ERR_PROTOCOL, "the Kubernetes API sent a text message");
        if (ws->failed)
            return err_set(err, ws->err.code, "%s", err_msg(&ws->err));
        if (r != 0 && !ws->eof && !ws->head)
            return err_set(err, ERR_PROTOCOL, "the Kubernetes API broke WebSocket framing (%d)", r);
        if (flush(ws, deadline, err) < 0)
            return -1;
        if (ws->head)
            continue;
        /* libwslay ends a stream it cannot take with a close of its own. */
        uint16_t sent = wslay_event_get_status_code_sent(ws->ctx);
        if (sent == WSLAY_CODE_MESSAGE_TOO_BIG)
            return err_set(err, ERR_TOO_BIG,
                           "a message on the Kubernetes API's stream is over %u bytes",
                           KUBE_WS_MAX_MSG);
        if (sent == WSLAY_CODE_PROTOCOL_ERROR || sent == WSLAY_CODE_INVALID_FRAME_PAYLOAD_DATA)
            return err_set(err, ERR_PROTOCOL, "the Kubernetes API broke WebSocket framing");
        if (ws->eof || !wslay_event_get_read_enabled(ws->ctx))
            return 0;
        if (timeout_ms == 0 || kube_api_wait_fd(kube_api_conn_fd(ws->conn), POLLIN, deadline) < 0)
            return err_set(err, ERR_TIMEOUT, "nothing from the Kubernetes API's stream in %ld ms",
                           timeout_ms);
    }
}

int kube_ws_fd(const struct kube_ws *ws)
{
    return kube_api_conn_fd(ws->conn);
}

bool kube_ws_queued(const struct kube_ws *ws)
{
    return ws->head != NULL;
}

void kube_ws_close(struct kube_ws *ws)
{
    if (!ws)
        return;
    if (wslay_event_get_write_enabled(ws->ctx) &&
        wslay_event_queue_close(ws->ctx, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0) == 0) {
        struct err ignored = ERR_INIT;
        flush(ws, util_now_ms() + 100, &ignored);
        err_clear(&ignored);
    }
    while (ws->head) {
        struct msg *q = ws->head;
        ws->head = q->next;
        free(q);
    }
    wslay_event_context_free(ws->ctx);
    kube_api_conn_close(ws->conn);
    err_clear(&ws->err);
    free(ws);
}
