#include "backend/backend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"

void backend_free(struct backend *b)
{
    if (b)
        b->ops->free(b);
}

const char *backend_kind(const struct backend *b)
{
    return b->ops->kind;
}

const char *backend_address(const struct backend *b)
{
    return b->ops->address(b);
}

const char *backend_address_source(const struct backend *b)
{
    return b->ops->address_source ? b->ops->address_source(b) : "";
}

int backend_ping(struct backend *b, struct err *err)
{
    return b->ops->ping(b, err);
}

int backend_gone(struct backend *b, struct err *err)
{
    return b->ops->gone ? b->ops->gone(b, err) : 0;
}

int backend_egress_check(struct backend *b, const struct backend_spec *spec, struct err *err)
{
    if (!spec->egress)
        return 0;
    if (!b->ops->egress_check)
        return err_set(err, ERR_INVALID, "the %s backend has no egress", b->ops->kind);
    return b->ops->egress_check(b, spec, err);
}

int backend_network_check(struct backend *b, const struct backend_spec *spec, struct err *err)
{
    if (spec->network && !b->ops->network)
        return err_set(err, ERR_INVALID, "the %s backend gives sandboxes no network", b->ops->kind);
    return backend_egress_check(b, spec, err);
}

int backend_version(struct backend *b, char **name, char **version, struct err *err)
{
    return b->ops->version(b, name, version, err);
}

char *backend_describe_create(const struct backend *b, const struct backend_spec *spec)
{
    return b->ops->describe_create(b, spec);
}

int backend_create(struct backend *b, const struct backend_spec *spec, bool fallback,
                   double deadline_ms, char **id, struct backend_pending **pending, struct err *err)
{
    *pending = NULL;
    return b->ops->create(b, spec, fallback, deadline_ms, id, pending, err);
}

int backend_start(struct backend *b, const char *id, struct backend_pending *pending,
                  double deadline_ms, int stop_fd, struct backend_stream **out, struct err *err)
{
    *out = NULL;
    return b->ops->start(b, id, pending, deadline_ms, stop_fd, out, err);
}

void backend_pending_free(struct backend *b, struct backend_pending *pending)
{
    if (pending)
        b->ops->pending_free(pending);
}

const char *backend_io_name(struct backend *b, const struct backend_spec *spec)
{
    return b->ops->io_name(b, spec);
}

int backend_wait(struct backend *b, const char *id, long timeout_ms, struct backend_state *st,
                 struct err *err)
{
    return b->ops->wait(b, id, timeout_ms, st, err);
}

int backend_kill(struct backend *b, const char *id, struct err *err)
{
    return b->ops->kill(b, id, err);
}

int backend_remove(struct backend *b, const char *id, struct err *err)
{
    return b->ops->remove(b, id, err);
}

int backend_inspect(struct backend *b, const char *id, struct backend_state *st, struct err *err)
{
    return b->ops->inspect(b, id, st, err);
}

int backend_weight_open(struct backend *b, const char *id, struct backend_weight *out,
                        struct err *err)
{
    *out = (struct backend_weight)BACKEND_WEIGHT_NONE;
    if (!b->ops->weight_open)
        return err_set(err, ERR_IO, "the %s backend cannot change CPU weights", b->ops->kind);
    return b->ops->weight_open(b, id, out, err);
}

bool backend_weights_possible(const struct backend *b)
{
    return b->ops->weight_open != NULL;
}

bool backend_host_dirs_possible(const struct backend *b)
{
    return b->ops->host_dirs;
}

/* All of text to fd, or -1 with errno (0: a short write). */
static int write_text(int fd, const char *text)
{
    size_t n = strlen(text);
    ssize_t r;
    do
        r = write(fd, text, n);
    while (r < 0 && errno == EINTR);
    if (r == (ssize_t)n)
        return 0;
    if (r >= 0)
        errno = 0;
    return -1;
}

void backend_weight_idle(struct backend_weight *w)
{
    if (w->idle_fd >= 0 && write_text(w->idle_fd, "1") < 0) {
        close(w->idle_fd);
        w->idle_fd = -1;
    }
}

int backend_weight_raise(const struct backend_weight *w, struct err *err)
{
    if (w->fd < 0)
        return err_set(err, ERR_INVALID, "no CPU weight is open");
    /* The flag first: the kernel refuses a weight for an idle group, and
     * clearing the flag gives the group the default weight already. */
    if ((w->idle_fd >= 0 && write_text(w->idle_fd, "0") < 0) || write_text(w->fd, w->normal) < 0)
        return err_set(err, ERR_IO, "cannot set the sandbox's CPU weight: %s",
                       errno ? strerror(errno) : "short write");
    return 0;
}

void backend_weight_close(struct backend_weight *w)
{
    if (w->fd >= 0)
        close(w->fd);
    if (w->idle_fd >= 0)
        close(w->idle_fd);
    w->fd = -1;
    w->idle_fd = -1;
}

int backend_list(struct backend *b, long timeout_ms, struct backend_container **out, size_t *n,
                 struct err *err)
{
    return b->ops->list(b, timeout_ms, out, n, err);
}

void backend_container_list_free(struct backend_container *list, size_t n)
{
    if (!list)
        return;
    for (size_t i = 0; i < n; i++) {
        free(list[i].id);
        free(list[i].instance);
        free(list[i].owner);
    }
    free(list);
}

char *backend_text(const char *s, size_t n)
{
    if (n > BACKEND_TEXT_MAX)
        n = BACKEND_TEXT_MAX;
    char *out = xmalloc(n + 1);
    util_printable_ascii(out, n + 1, s, n, true);
    return out;
}

/* Labels are anyone's to set: only plain decimal seconds count. */
static long long mark_unix_time(const char *s, size_t n)
{
    if (n == 0 || n > 12)
        return 0;
    long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* The same rule for a uid (at most 10 digits, below 2^32); -1 otherwise. */
static long long mark_uid(const char *s, size_t n)
{
    if (n == 0 || n > 10)
        return -1;
    long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v <= 0xffffffffLL ? v : -1;
}

void backend_container_marks(struct backend_container *c, const struct backend_marks *m)
{
    c->instance = m->instance ? backend_text(m->instance, m->instance_len) : NULL;
    c->owner = m->owner ? backend_text(m->owner, m->owner_len) : NULL;
    c->expires = m->expires ? mark_unix_time(m->expires, m->expires_len) : 0;
    c->uid = m->uid ? mark_uid(m->uid, m->uid_len) : -1;
}

int backend_stream_fd(const struct backend_stream *s)
{
    return s->ops->stream_fd(s);
}

bool backend_stream_pending(const struct backend_stream *s)
{
    return s->ops->stream_pending(s);
}

int backend_stream_send(struct backend_stream *s, const void *data, size_t n, long timeout_ms,
                        struct err *err)
{
    return s->ops->stream_send(s, data, n, timeout_ms, err);
}

long backend_stream_read(struct backend_stream *s, backend_output_cb cb, void *ctx, struct err *err)
{
    return s->ops->stream_read(s, cb, ctx, err);
}

void backend_stream_close(struct backend_stream *s)
{
    if (s)
        s->ops->stream_close(s);
}

int backend_stream_egress_fd(const struct backend_stream *s)
{
    return s->ops->stream_egress_fd ? s->ops->stream_egress_fd(s) : -1;
}

int backend_stream_egress_accept(struct backend_stream *s, int *fd, struct err *err)
{
    *fd = -1;
    return s->ops->stream_egress_accept ? s->ops->stream_egress_accept(s, fd, err) : 0;
}
