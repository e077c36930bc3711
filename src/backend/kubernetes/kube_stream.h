/* A sandbox Pod's streams, the way a run uses a container's: its stdin
 * written, its stdout and stderr read as they come, over the Pod's attach
 * subresource (kube_ws). The functions have the shape of the backend's
 * stream operations (backend.h), which the Kubernetes backend's table
 * points at.
 *
 * The error channel carries a Status when the attach itself fails (the
 * container not running, say): that is an error of the read, with the
 * API's message; a Status of Success says nothing. */
#ifndef MCPSBX_KUBERNETES_KUBE_STREAM_H
#define MCPSBX_KUBERNETES_KUBE_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backend.h"
#include "backend/kubernetes/kube_api.h"
#include "base/err.h"

/* Stdin goes in messages of at most this size (a kubelet writes output in
 * pieces of this size too). */
#define KUBE_STREAM_PIECE (32u * 1024u)
/* Messages handed to the callback in one read, so one busy stream cannot
 * hold its reader. */
#define KUBE_STREAM_READ_BURST 64

struct kube_stream;

/* Attaches to container POD_CONTAINER of Pod pod in ns: stdin, stdout
 * and stderr, no terminal. */
int kube_stream_open(struct kube_api *a, const char *ns, const char *pod, long timeout_ms,
                     struct kube_stream **out, struct err *err);

int kube_stream_fd(const struct kube_stream *s);
bool kube_stream_pending(const struct kube_stream *s);
int kube_stream_send(struct kube_stream *s, const void *data, size_t n, long timeout_ms,
                     struct err *err);
/* backend_stream_read's contract: bytes handed over (>0), 0 at the end,
 * BACKEND_AGAIN, or -1 with err. */
long kube_stream_read(struct kube_stream *s, backend_output_cb cb, void *ctx, struct err *err);
void kube_stream_close(struct kube_stream *s);

#endif
