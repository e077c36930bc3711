/* HTTPS to the Kubernetes API server with libcurl: plain requests, whose
 * refusals (the API's Status objects) become errors, and watches, whose
 * events arrive a line at a time.
 *
 * The server's certificate is always verified, against the cluster's CA
 * when the configuration names one, else the host's roots; redirects are
 * never followed and nothing but https is spoken. The credential is a
 * bearer token or a client certificate; it never appears in a message or
 * a log line. A token read from a file (a pod's service account, whose
 * token the kubelet rotates) is read again once KUBE_API_TOKEN_REREAD_S
 * old, as client-go does; where that read fails the old token is kept.
 *
 * Thread-safe: one curl easy handle per request; the struct is read-only
 * after kube_api_new but for the token, which a mutex guards. */
#ifndef MCPSBX_KUBERNETES_KUBE_API_H
#define MCPSBX_KUBERNETES_KUBE_API_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "backend/kubernetes/kube_config.h"
#include "base/buf.h"
#include "base/err.h"

/* The longest answer read: a pod is a few KiB, a list of every pod of a
 * daemon's (the sweep's) a few MiB at the most. */
#define KUBE_API_MAX_RESPONSE (8u * 1024u * 1024u)
/* The longest watch event: one pod's JSON. */
#define KUBE_API_MAX_EVENT (1u * 1024u * 1024u)
/* The longest path (with its query) a request names. */
#define KUBE_API_MAX_PATH 2048u
/* A token file is read again once this old (client-go: one minute). */
#define KUBE_API_TOKEN_REREAD_S 60

struct kube_api;

/* Takes what it needs of cfg (copies; cfg stays the caller's); a token
 * with a token_file is read again from it as it ages. Fails with
 * ERR_INVALID when cfg has no https server. */
int kube_api_new(const struct kube_config *cfg, struct kube_api **out, struct err *err);
void kube_api_free(struct kube_api *a);

/* How old a token read from its file may get (KUBE_API_TOKEN_REREAD_S
 * unless set; the tests set 0). */
void kube_api_set_token_reread_ms(struct kube_api *a, double ms);

/* The server, "https://host:port", for messages. */
const char *kube_api_server(const struct kube_api *a);

/* Sends METHOD path (from "/api/..." with its query) with an optional
 * JSON body. On transport success returns 0 and sets *status and resp
 * (capped at KUBE_API_MAX_RESPONSE); the caller judges the status
 * (kube_api_refusal). Fails with ERR_ENGINE (naming the server) when it
 * cannot be reached or its certificate does not verify, ERR_TIMEOUT past
 * timeout_ms, ERR_TOO_BIG over the cap. */
int kube_api_request(struct kube_api *a, const char *method, const char *path, const char *body,
                     size_t body_len, long timeout_ms, long *status, struct buf *resp,
                     struct err *err);

/* Called with each event line of a watch (without its newline); a
 * non-zero return ends the watch, which then returns 0. */
typedef int (*kube_api_event_fn)(void *ctx, const char *line, size_t n);

/* A watch: GET path (which carries watch=1) streams events until the
 * server ends it, on_event asks to stop, *stop becomes true (checked at
 * least once a second) or timeout_ms passes, which is the normal end of a
 * watch and returns 0 with *timed_out set. A refused watch fails with
 * kube_api_refusal's error; an event over KUBE_API_MAX_EVENT with
 * ERR_TOO_BIG. */
int kube_api_watch(struct kube_api *a, const char *path, long timeout_ms,
                   kube_api_event_fn on_event, void *ctx, const atomic_bool *stop, bool *timed_out,
                   struct err *err);

/* The error a refusal (status >= 400) carries: the Status object's
 * reason and message (backend_text), or the body's start: 404 is
 * ERR_NOT_FOUND, 408 and 504 ERR_TIMEOUT, 413 ERR_TOO_BIG, the rest
 * ERR_ENGINE (callers that care about one, 409 say, test the status).
 * what names the request ("creating pod x"). Always -1. */
int kube_api_refusal(long status, const char *body, size_t len, const char *what, struct err *err);

/* An upgraded connection (an attach's WebSocket): after the answer head
 * the TLS stream carries raw bytes. */
struct kube_api_conn;

/* Sends GET path with the credential and headers (complete lines, each
 * ending "\r\n": the upgrade's own), and reads the answer's head into
 * head (its cap bounds it), which the caller judges; bytes read past the
 * head are kept and returned first by kube_api_conn_recv. Only HTTP/1.1
 * is offered. */
int kube_api_upgrade(struct kube_api *a, const char *path, const char *headers, long timeout_ms,
                     struct buf *head, struct kube_api_conn **out, struct err *err);

/* The socket, for poll(). TLS keeps decrypted bytes poll() cannot see:
 * read until -2 before polling. */
int kube_api_conn_fd(const struct kube_api_conn *c);

/* Non-blocking write: bytes taken (>0), -2 when none can be now (poll
 * the fd for POLLOUT), -1 on error. */
long kube_api_conn_write(struct kube_api_conn *c, const void *data, size_t n, struct err *err);

/* Non-blocking read: bytes read (>0), 0 at the end of the stream, -2
 * when nothing is there now, -1 on error. */
long kube_api_conn_recv(struct kube_api_conn *c, void *data, size_t n, struct err *err);

void kube_api_conn_close(struct kube_api_conn *c);

/* Polls fd for events until deadline (a util_now_ms() time): 0 when it is
 * ready (or poll failed, which the next read or write reports), -1 past
 * the deadline. */
int kube_api_wait_fd(int fd, short events, double deadline);

#endif
