/* A sandbox Pod's streams over its attach (kube_stream.h). */
#include "backend/kubernetes/kube_stream.h"

#include <stdio.h>
#include <string.h>

#include "backend/kubernetes/kube_ws.h"
#include "backend/kubernetes/pod_spec.h"
#include "base/json.h"
#include "base/util.h"

struct kube_stream {
    struct kube_ws *ws;
    struct buf msg; /* the message being handed over */
};

int kube_stream_open(struct kube_api *a, const char *ns, const char *pod, long timeout_ms,
                     struct kube_stream **out, struct err *err)
{
    *out = NULL;
    if (!pod_name_ok(ns, strlen(ns)) || !pod_name_ok(pod, strlen(pod)))
        return err_set(err, ERR_INVALID, "not a Kubernetes namespace and Pod name");
    char path[KUBE_API_MAX_PATH];
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/%s/pods/%s/attach?container=" POD_CONTAINER
             "&stdin=true&stdout=true&stderr=true&tty=false",
             ns, pod);
    struct kube_stream *s = xcalloc(1, sizeof(*s));
    if (kube_ws_open(a, path, timeout_ms, &s->ws, err) < 0) {
        free(s);
        return -1;
    }
    buf_init(&s->msg, KUBE_WS_MAX_MSG);
    *out = s;
    return 0;
}

int kube_stream_fd(const struct kube_stream *s)
{
    return kube_ws_fd(s->ws);
}

bool kube_stream_pending(const struct kube_stream *s)
{
    return kube_ws_queued(s->ws);
}

int kube_stream_send(struct kube_stream *s, const void *data, size_t n, long timeout_ms,
                     struct err *err)
{
    double deadline = util_now_ms() + (double)timeout_ms;
    const char *p = data;
    for (size_t off = 0; off < n;) {
        size_t piece = n - off < KUBE_STREAM_PIECE ? n - off : KUBE_STREAM_PIECE;
        long left = (long)(deadline - util_now_ms());
        if (left <= 0)
            return err_set(err, ERR_TIMEOUT, "the sandbox's stdin did not take its input in time");
        if (kube_ws_send(s->ws, KUBE_WS_STDIN, p + off, piece, left, err) < 0)
            return -1;
        off += piece;
    }
    return 0;
}

/* The error channel's Status: nothing for Success, else an error with the
 * API's message. */
static int error_channel(const struct buf *m, struct err *err)
{
    json_object *o = NULL;
    struct json_exact why;
    if (json_parse_exact(m->data, m->len, 16, 0, &o, &why) < 0 ||
        !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return err_set(err, ERR_PROTOCOL, "the attach's error channel holds no Status");
    }
    const char *status = json_get_string(o, "status", NULL);
    int rc = 0;
    if (!status || strcmp(status, "Success") != 0) {
        size_t ml = 0;
        const char *msg = json_get_string(o, "message", &ml);
        char *text = msg ? backend_text(msg, ml) : NULL;
        rc = err_set(err, ERR_ENGINE, "the Kubernetes attach failed: %s",
                     text && *text ? text : "no message");
        free(text);
    }
    json_object_put(o);
    return rc;
}

long kube_stream_read(struct kube_stream *s, backend_output_cb cb, void *ctx, struct err *err)
{
    long total = 0;
    for (int k = 0; k < KUBE_STREAM_READ_BURST; k++) {
        unsigned ch = 0;
        int r = kube_ws_recv(s->ws, &ch, &s->msg, 0, err);
        if (r < 0 && err->code == ERR_TIMEOUT) {
            err_clear(err);
            return total > 0 ? total : BACKEND_AGAIN;
        }
        if (r < 0)
            return -1;
        if (r == 0)
            return total > 0 ? total : 0;
        if (ch == KUBE_WS_ERROR) {
            if (error_channel(&s->msg, err) < 0)
                return -1;
            continue;
        }
        if (ch != KUBE_WS_STDOUT && ch != KUBE_WS_STDERR)
            continue; /* v5 close signals, resize: nothing to hand over */
        int stream = ch == KUBE_WS_STDOUT ? BACKEND_STDOUT : BACKEND_STDERR;
        int c = cb(ctx, stream, s->msg.data, s->msg.len, err);
        if (c < 0)
            return -1;
        total += (long)s->msg.len;
        if (c > 0)
            return total;
    }
    return total > 0 ? total : BACKEND_AGAIN;
}

void kube_stream_close(struct kube_stream *s)
{
    if (!s)
        return;
    kube_ws_close(s->ws);
    buf_free(&s->msg);
    free(s);
}
