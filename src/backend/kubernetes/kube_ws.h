/* The Kubernetes API's streaming subprotocol over a WebSocket: how an
 * attach (or exec) carries a pod's stdin, stdout, stderr and its error
 * channel. RFC 6455 framing is libwslay's; the handshake and the channels
 * are here, from the API server's wsstream package and client-go's
 * tools/remotecommand/websocket.go:
 *
 *   - the client offers "v5.channel.k8s.io, v4.channel.k8s.io" in
 *     Sec-WebSocket-Protocol and the server picks one (v5 since 1.30);
 *   - every binary message is one channel byte and its payload: 0 stdin,
 *     1 stdout, 2 stderr, 3 the error channel (a Status in JSON), 4 a
 *     terminal resize; the server opens with an empty message on each
 *     channel it writes, which says nothing and is skipped here;
 *   - v5 adds a close signal, the message {255, channel}: the client
 *     closes stdin with {255, 0}. v4 cannot close a channel.
 *
 * Memory is bounded: a message is KUBE_WS_MAX_MSG at most, and reading
 * stops while KUBE_WS_MAX_QUEUED bytes wait for the caller. One thread
 * uses a struct kube_ws at a time. */
#ifndef MCPSBX_KUBERNETES_KUBE_WS_H
#define MCPSBX_KUBERNETES_KUBE_WS_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/kubernetes/kube_api.h"
#include "base/buf.h"
#include "base/err.h"

#define KUBE_WS_PROTOCOLS "v5.channel.k8s.io, v4.channel.k8s.io"
/* The longest message taken (a kubelet sends output in pieces of 32 KiB
 * at most). */
#define KUBE_WS_MAX_MSG (1u * 1024u * 1024u)
/* Received bytes that may wait for the caller before reading stops. */
#define KUBE_WS_MAX_QUEUED (4u * 1024u * 1024u)
/* The longest answer head to the upgrade, and refusal body read. */
#define KUBE_WS_MAX_HEAD (16u * 1024u)

enum kube_ws_channel {
    KUBE_WS_STDIN = 0,
    KUBE_WS_STDOUT = 1,
    KUBE_WS_STDERR = 2,
    KUBE_WS_ERROR = 3,
    KUBE_WS_RESIZE = 4,
    KUBE_WS_CLOSE = 255, /* v5: the payload is the channel closed */
};

/* What an upgrade's answer head says. */
struct kube_ws_answer {
    long status;
    long long content_length; /* -1 when absent */
    bool v5;                  /* the server chose v5.channel.k8s.io */
};

/* Checks the answer head head[0..n) to an upgrade that sent key: a 101
 * must say Upgrade: websocket, Connection: Upgrade, the key's accept
 * value and one of the offered protocols (else ERR_PROTOCOL naming the
 * missing part). Any other status is returned with its content length,
 * for the caller to read its refusal. Pure. */
int kube_ws_check_answer(const char *head, size_t n, const char *key, struct kube_ws_answer *out,
                         struct err *err);

/* The Sec-WebSocket-Accept value for key (RFC 6455 4.2.2). */
void kube_ws_accept_value(const char *key, char out[29]);

struct kube_ws;

/* Opens path (the attach subresource with its query) as a WebSocket. A
 * refusal is kube_api_refusal's error (a pod not found is ERR_NOT_FOUND);
 * a server that offers neither protocol fails with ERR_PROTOCOL. */
int kube_ws_open(struct kube_api *a, const char *path, long timeout_ms, struct kube_ws **out,
                 struct err *err);

/* True when the server chose v5 (stdin can be closed). */
bool kube_ws_v5(const struct kube_ws *ws);

/* Sends one message on channel (waits up to timeout_ms to hand it over). */
int kube_ws_send(struct kube_ws *ws, unsigned channel, const void *data, size_t n, long timeout_ms,
                 struct err *err);

/* Closes stdin (v5's close signal); ERR_PROTOCOL on v4, which has none. */
int kube_ws_close_stdin(struct kube_ws *ws, long timeout_ms, struct err *err);

/* The next message: 1 with *channel and its payload in out (reset
 * first), 0 when the server has closed the stream, -1 on error
 * (ERR_TIMEOUT when nothing came within timeout_ms; 0 asks without
 * waiting). */
int kube_ws_recv(struct kube_ws *ws, unsigned *channel, struct buf *out, long timeout_ms,
                 struct err *err);

/* The connection's socket, for poll(2); read (kube_ws_recv) before
 * polling, as TLS keeps bytes poll cannot see. */
int kube_ws_fd(const struct kube_ws *ws);

/* True when received messages wait for kube_ws_recv. */
bool kube_ws_queued(const struct kube_ws *ws);

/* Sends a close frame (best effort) and frees. */
void kube_ws_close(struct kube_ws *ws);

#endif
