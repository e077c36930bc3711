#include "backend/docker/channel.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backend/docker/peer.h"
#include "backend/docker/sock_dir.h"
#include "base/util.h"

#define READ_CHUNK (64 * 1024)
/* How many connections may wait: the connector makes two. */
#define CHANNEL_BACKLOG 2

struct channel {
    struct sock_dir sd; /* its directory and socket, until accept ends */
    uid_t uid;
    unsigned accepted; /* connections taken, good or not */
};

struct channel_stream {
    struct backend_stream base;
    int io_fd;  /* the sandbox's stdin and stdout */
    int err_fd; /* its stderr */
    int ep;     /* epoll over the open ones: what poll(2) waits on */
    bool io_eof, err_eof;
    char *chunk;
    struct egress_sock *egress; /* NULL: the sandbox has no egress */
};

static const struct backend_ops channel_stream_ops;

/* ---- the place to connect to -------------------------------------------- */

int channel_open(const char *base_dir, uid_t uid, gid_t gid, struct channel **out, struct err *err)
{
    *out = NULL;
    struct channel *c = xcalloc(1, sizeof(*c));
    if (sock_dir_open(base_dir, CHANNEL_SOCKET_NAME, uid, gid, CHANNEL_BACKLOG, &c->sd, err) < 0) {
        free(c);
        return -1;
    }
    c->uid = uid;
    *out = c;
    return 0;
}

const char *channel_dir(const struct channel *c)
{
    return c->sd.dir;
}

unsigned channel_accepted(const struct channel *c)
{
    return c->accepted;
}

void channel_close(struct channel *c)
{
    if (!c)
        return;
    sock_dir_remove(&c->sd);
    free(c);
}

/* Reads the tag byte a new connection starts with: the connector writes
 * it as it connects, so it gets CHANNEL_TAG_MS at most. Returns 1 when
 * stop_fd became readable. */
static int read_tag(int fd, double deadline_ms, int stop_fd, char *tag, struct err *err)
{
    double by = util_now_ms() + CHANNEL_TAG_MS;
    if (deadline_ms < by)
        by = deadline_ms;
    for (;;) {
        ssize_t n = recv(fd, tag, 1, MSG_DONTWAIT);
        if (n == 1)
            return 0;
        if (n == 0)
            return err_set(err, ERR_PROTOCOL, "a sandbox I/O connection closed before its tag");
        if (errno != EAGAIN && errno != EINTR)
            return err_set(err, ERR_IO, "reading a sandbox I/O connection: %s", strerror(errno));
        double left = by - util_now_ms();
        if (left <= 0)
            return err_set(err, ERR_PROTOCOL, "a sandbox I/O connection sent no tag in time");
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = stop_fd, .events = POLLIN}};
        if (poll(p, 2, (int)left + 1) < 0 && errno != EINTR)
            return err_set(err, ERR_IO, "poll: %s", strerror(errno));
        if (stop_fd >= 0 && p[1].revents)
            return 1;
    }
}

/* One connection in, checked and tagged; *fd for its tag's place.
 * Returns 0, 1 when stop_fd became readable, or -1. */
static int take_one(struct channel *c, const char *container_id, double deadline_ms, int stop_fd,
                    int *io_fd, int *err_fd, struct err *err)
{
    int fd = accept4(c->sd.fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
        if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
            return 0;
        return err_set(err, ERR_IO, "accept on the sandbox I/O socket: %s", strerror(errno));
    }
    c->accepted++;
    if (peer_check(fd, c->uid, container_id, "its I/O socket", err) < 0) {
        close(fd);
        return -1;
    }
    char tag = 0;
    int rc = read_tag(fd, deadline_ms, stop_fd, &tag, err);
    if (rc != 0) {
        close(fd);
        return rc;
    }
    int *slot = tag == CHANNEL_TAG_IO ? io_fd : tag == CHANNEL_TAG_ERR ? err_fd : NULL;
    if (!slot || *slot >= 0) {
        close(fd);
        return err_set(err, ERR_PROTOCOL, "unexpected tag 0x%02x on the sandbox I/O socket",
                       (unsigned char)tag);
    }
    *slot = fd;
    return 0;
}

static struct backend_stream *stream_new(int io_fd, int err_fd, struct err *err)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) {
        err_set(err, ERR_IO, "epoll_create1: %s", strerror(errno));
        return NULL;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP};
    ev.data.fd = io_fd;
    int a = epoll_ctl(ep, EPOLL_CTL_ADD, io_fd, &ev);
    ev.data.fd = err_fd;
    if (a < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, err_fd, &ev) < 0) {
        err_set(err, ERR_IO, "epoll_ctl: %s", strerror(errno));
        close(ep);
        return NULL;
    }
    struct channel_stream *s = xcalloc(1, sizeof(*s));
    s->base.ops = &channel_stream_ops;
    s->io_fd = io_fd;
    s->err_fd = err_fd;
    s->ep = ep;
    s->chunk = xmalloc(READ_CHUNK);
    return &s->base;
}

int channel_accept(struct channel *c, const char *container_id, double deadline_ms, int stop_fd,
                   channel_alive_fn alive, void *alive_ctx, struct backend_stream **out,
                   struct err *err)
{
    *out = NULL;
    int io_fd = -1, err_fd = -1;
    int rc = -1;
    while (io_fd < 0 || err_fd < 0) {
        double left = deadline_ms - util_now_ms();
        if (left <= 0) {
            err_set(err, ERR_TIMEOUT, "the sandbox did not connect to its I/O socket in time");
            goto out;
        }
        int wait_ms = left < CHANNEL_CHECK_MS ? (int)left + 1 : CHANNEL_CHECK_MS;
        struct pollfd p[2] = {{.fd = c->sd.fd, .events = POLLIN},
                              {.fd = stop_fd, .events = POLLIN}};
        int pr = poll(p, 2, wait_ms);
        if (pr < 0 && errno != EINTR) {
            err_set(err, ERR_IO, "poll on the sandbox I/O socket: %s", strerror(errno));
            goto out;
        }
        if (stop_fd >= 0 && p[1].revents) {
            rc = 1;
            goto out;
        }
        if (pr == 0) {
            if (alive && alive(alive_ctx, err) < 0) {
                /* It may have connected just before it ended: take that. */
                struct pollfd q = {.fd = c->sd.fd, .events = POLLIN};
                if (poll(&q, 1, 0) > 0) {
                    err_clear(err);
                    continue;
                }
                err_wrap(err, "the sandbox ended before it connected to its I/O socket");
                goto out;
            }
            continue;
        }
        int took =
            pr > 0 ? take_one(c, container_id, deadline_ms, stop_fd, &io_fd, &err_fd, err) : 0;
        if (took != 0) {
            rc = took > 0 ? 1 : -1;
            goto out;
        }
    }
    *out = stream_new(io_fd, err_fd, err);
    if (*out) {
        io_fd = err_fd = -1;
        rc = 0;
    }
out:
    sock_dir_remove(&c->sd);
    if (io_fd >= 0)
        close(io_fd);
    if (err_fd >= 0)
        close(err_fd);
    return rc;
}

/* ---- the stream ------------------------------------------------------------ */

static struct channel_stream *cs(struct backend_stream *s)
{
    return (struct channel_stream *)s;
}

static int cs_fd(const struct backend_stream *s)
{
    return ((const struct channel_stream *)s)->ep;
}

static bool cs_pending(const struct backend_stream *s)
{
    (void)s;
    return false; /* nothing is buffered here: poll sees everything */
}

static int cs_send(struct backend_stream *bs, const void *data, size_t n, long timeout_ms,
                   struct err *err)
{
    struct channel_stream *s = cs(bs);
    const char *p = data;
    double deadline = util_now_ms() + (double)timeout_ms;
    while (n > 0) {
        ssize_t w = send(s->io_fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR)
            return err_set(err, ERR_IO, "writing to the sandbox: %s", strerror(errno));
        double left = deadline - util_now_ms();
        if (left <= 0)
            return err_set(err, ERR_TIMEOUT, "the sandbox did not read its input in time");
        struct pollfd pfd = {.fd = s->io_fd, .events = POLLOUT};
        if (poll(&pfd, 1, (int)left + 1) < 0 && errno != EINTR)
            return err_set(err, ERR_IO, "poll: %s", strerror(errno));
    }
    return 0;
}

/* One read from fd: >0 bytes handed to cb (or cb's stop or failure as
 * *stop / -1), 0 at its end, BACKEND_AGAIN when nothing was there. */
static long read_side(struct channel_stream *s, int fd, bool *eof, int stream, backend_output_cb cb,
                      void *ctx, int *cb_rc, struct err *err)
{
    if (*eof)
        return BACKEND_AGAIN;
    ssize_t n = recv(fd, s->chunk, READ_CHUNK, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return BACKEND_AGAIN;
    if (n <= 0) {
        /* A reset is the sandbox gone, as an end is. */
        if (n < 0 && errno != ECONNRESET)
            return err_set(err, ERR_IO, "reading from the sandbox: %s", strerror(errno));
        *eof = true;
        epoll_ctl(s->ep, EPOLL_CTL_DEL, fd, NULL);
        return 0;
    }
    *cb_rc = cb(ctx, stream, s->chunk, (size_t)n, err);
    return n;
}

static long cs_read(struct backend_stream *bs, backend_output_cb cb, void *ctx, struct err *err)
{
    struct channel_stream *s = cs(bs);
    long total = 0;
    int cb_rc = 0;
    long n = read_side(s, s->io_fd, &s->io_eof, BACKEND_STDOUT, cb, ctx, &cb_rc, err);
    if (n < 0 && n != BACKEND_AGAIN)
        return -1;
    if (cb_rc < 0)
        return -1;
    if (n > 0)
        total += n;
    if (cb_rc > 0)
        return total;
    n = read_side(s, s->err_fd, &s->err_eof, BACKEND_STDERR, cb, ctx, &cb_rc, err);
    if ((n < 0 && n != BACKEND_AGAIN) || cb_rc < 0)
        return -1;
    if (n > 0)
        total += n;
    if (total > 0)
        return total;
    return s->io_eof && s->err_eof ? 0 : BACKEND_AGAIN;
}

static void cs_close(struct backend_stream *bs)
{
    struct channel_stream *s = cs(bs);
    close(s->io_fd);
    close(s->err_fd);
    close(s->ep);
    free(s->chunk);
    egress_sock_close(s->egress);
    free(s);
}

void channel_stream_set_egress(struct backend_stream *bs, struct egress_sock *egress)
{
    cs(bs)->egress = egress;
}

static int cs_egress_fd(const struct backend_stream *s)
{
    const struct channel_stream *c = (const struct channel_stream *)s;
    return c->egress ? egress_sock_fd(c->egress) : -1;
}

static int cs_egress_accept(struct backend_stream *bs, int *fd, struct err *err)
{
    struct channel_stream *s = cs(bs);
    *fd = -1;
    return s->egress ? egress_sock_accept(s->egress, fd, err) : 0;
}

/* Only the stream operations: a channel is not a backend. */
static const struct backend_ops channel_stream_ops = {
    .kind = "channel",
    .stream_fd = cs_fd,
    .stream_pending = cs_pending,
    .stream_send = cs_send,
    .stream_read = cs_read,
    .stream_close = cs_close,
    .stream_egress_fd = cs_egress_fd,
    .stream_egress_accept = cs_egress_accept,
};
