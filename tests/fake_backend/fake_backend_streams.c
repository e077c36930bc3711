#include "fake_backend/fake_backend_model.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/util.h"

#define FRAME_MAX  65536u
#define READ_CHUNK 65536u

/* ---- the program's side of the streams ------------------------------------- */

static bool send_raw(const struct sandbox *s, const void *data, size_t n)
{
    return fake_send_all(s->prog_fd, data, n, s->wake_fd, -1);
}

static bool frame_head(const struct sandbox *s, int stream, uint32_t len)
{
    const unsigned char h[FRAME_HEAD] = {(unsigned char)stream, (unsigned char)(len >> 24),
                                         (unsigned char)(len >> 16), (unsigned char)(len >> 8),
                                         (unsigned char)len};
    return send_raw(s, h, sizeof(h));
}

static bool io_send(void *ctx, int stream, const char *data, size_t n)
{
    const struct sandbox *s = ((const struct program_ctx *)ctx)->s;
    for (size_t off = 0; off < n;) {
        uint32_t take = (uint32_t)(n - off < FRAME_MAX ? n - off : FRAME_MAX);
        if (!frame_head(s, stream, take) || !send_raw(s, data + off, take))
            return false;
        off += take;
    }
    return true;
}

static bool io_read(void *ctx, char *out, size_t n)
{
    const struct sandbox *s = ((const struct program_ctx *)ctx)->s;
    return fake_recv_all(s->prog_fd, out, n, s->wake_fd, -1);
}

static void io_cut(void *ctx)
{
    const struct sandbox *s = ((const struct program_ctx *)ctx)->s;
    if (frame_head(s, BACKEND_STDOUT, 64)) /* 64 promised, 10 come */
        send_raw(s, "cut short!", 10);
}

static void io_pause(void *ctx, long ms)
{
    const struct sandbox *s = ((const struct program_ctx *)ctx)->s;
    fake_wait_fd(-1, 0, s->wake_fd, -1, ms < 0 ? -1 : (int)ms);
}

void fb_copy_cut(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

static void io_received(void *ctx, const struct fake_received *r)
{
    const struct program_ctx *x = ctx;
    pthread_mutex_lock(&x->fb->mu);
    struct fake_sandbox_info *in = &x->s->info;
    fb_copy_cut(in->code, sizeof(in->code), r->code);
    fb_copy_cut(in->stdin_data, sizeof(in->stdin_data), r->stdin_data);
    fb_copy_cut(in->request_env, sizeof(in->request_env), r->env);
    fb_copy_cut(in->program, sizeof(in->program), r->program);
    in->code_received = true;
    pthread_cond_broadcast(&x->fb->cond);
    pthread_mutex_unlock(&x->fb->mu);
}

static bool io_killed(void *ctx)
{
    const struct sandbox *s = ((const struct program_ctx *)ctx)->s;
    struct pollfd p = {.fd = s->wake_fd, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
}

static void *program_main(void *arg)
{
    struct program_ctx x = *(struct program_ctx *)arg;
    free(arg);
    struct sandbox *s = x.s;
    const struct fake_io io = {.ctx = &x,
                               .send = io_send,
                               .read = io_read,
                               .cut = io_cut,
                               .pause = io_pause,
                               .killed = io_killed,
                               .received = io_received};
    struct fake_exit ex = fake_program_run(&s->prog, s->info.warm, &io);
    /* The exit is known before the stream ends, as with a real engine. */
    pthread_mutex_lock(&x.fb->mu);
    bool killed = s->info.killed;
    fb_exit_locked(x.fb, s, killed ? 137 : ex.code, killed ? false : ex.oom_killed);
    pthread_mutex_unlock(&x.fb->mu);
    close(s->prog_fd);
    return NULL;
}

static struct backend_stream *stream_new(int fd)
{
    struct fake_stream *st = xcalloc(1, sizeof(*st));
    st->base.ops = &fake_backend_ops;
    st->fd = fd;
    st->chunk = xmalloc(READ_CHUNK);
    return &st->base;
}

int fb_launch_locked(struct fake_backend *fb, struct sandbox *s, struct backend_stream **out,
                     struct err *err)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
        return err_set(err, ERR_IO, "fake backend: socketpair: %s", strerror(errno));
    struct program_ctx *x = xmalloc(sizeof(*x));
    *x = (struct program_ctx){.fb = fb, .s = s};
    s->prog_fd = sv[1];
    if (pthread_create(&s->th, NULL, program_main, x) != 0) {
        free(x);
        close(sv[0]);
        close(sv[1]);
        s->prog_fd = -1;
        return err_set(err, ERR_INTERNAL, "fake backend: cannot start a program thread");
    }
    s->has_thread = true;
    s->info.started = s->info.running = true;
    *out = stream_new(sv[0]);
    pthread_cond_broadcast(&fb->cond);
    return 0;
}

/* ---- the daemon's side of the streams ---------------------------------------- */

static struct fake_stream *st_of(struct backend_stream *s)
{
    return (struct fake_stream *)s;
}

int fb_stream_fd(const struct backend_stream *s)
{
    return ((const struct fake_stream *)s)->fd;
}

bool fb_stream_pending(const struct backend_stream *s)
{
    (void)s;
    return false; /* every byte read is handed on at once */
}

int fb_stream_send(struct backend_stream *bs, const void *data, size_t n, long timeout_ms,
                   struct err *err)
{
    struct fake_stream *s = st_of(bs);
    const char *p = data;
    double deadline = util_now_ms() + (double)timeout_ms;
    while (n) {
        struct pollfd pf = {.fd = s->fd, .events = POLLOUT};
        double left = deadline - util_now_ms();
        if (left <= 0)
            return err_set(err, ERR_TIMEOUT, "fake backend: stdin not taken in %ld ms", timeout_ms);
        if (poll(&pf, 1, (int)left + 1) < 0 && errno != EINTR)
            return err_set(err, ERR_IO, "fake backend: poll: %s", strerror(errno));
        ssize_t w = send(s->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (w <= 0)
            return err_set(err, ERR_IO, "fake backend: the sandbox's stdin is closed");
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Hands the frames' payloads in buf to cb. A positive answer from cb drops
 * the rest of this read. */
static int demux(struct fake_stream *s, const char *buf, size_t n, backend_output_cb cb, void *ctx,
                 struct err *err)
{
    while (n) {
        if (s->left == 0) {
            size_t take = FRAME_HEAD - s->head_have < n ? FRAME_HEAD - s->head_have : n;
            memcpy(s->head + s->head_have, buf, take);
            s->head_have += take;
            buf += take;
            n -= take;
            if (s->head_have < FRAME_HEAD)
                return 0;
            s->left = (uint32_t)s->head[1] << 24 | (uint32_t)s->head[2] << 16 |
                      (uint32_t)s->head[3] << 8 | s->head[4];
            if (s->head[0] != BACKEND_STDOUT && s->head[0] != BACKEND_STDERR)
                return err_set(err, ERR_PROTOCOL, "fake backend: a frame of stream %u", s->head[0]);
            continue;
        }
        size_t take = s->left < n ? s->left : n;
        int rc = cb(ctx, s->head[0], buf, take, err);
        s->left -= (uint32_t)take;
        if (s->left == 0)
            s->head_have = 0;
        buf += take;
        n -= take;
        if (rc != 0)
            return rc < 0 ? -1 : 0;
    }
    return 0;
}

long fb_stream_read(struct backend_stream *bs, backend_output_cb cb, void *ctx, struct err *err)
{
    struct fake_stream *s = st_of(bs);
    ssize_t n = recv(s->fd, s->chunk, READ_CHUNK, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return BACKEND_AGAIN;
    if (n < 0)
        return err_set(err, ERR_IO, "fake backend: reading the streams: %s", strerror(errno));
    if (n == 0 && (s->left || s->head_have))
        return err_set(err, ERR_PROTOCOL,
                       "fake backend: the stream ended in the middle of a frame");
    if (n == 0)
        return 0;
    if (demux(s, s->chunk, (size_t)n, cb, ctx, err) < 0)
        return -1;
    return (long)n;
}

void fb_stream_close(struct backend_stream *bs)
{
    struct fake_stream *s = st_of(bs);
    close(s->fd);
    free(s->chunk);
    free(s);
}
