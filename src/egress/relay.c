#include "egress/relay.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

/* Poll's timeout for a deadline: at least 0, at most INT_MAX ms. */
static int timeout_ms(double deadline)
{
    double left = deadline - util_now_ms();
    if (left <= 0)
        return 0;
    if (left >= (double)INT_MAX)
        return INT_MAX;
    return (int)left + 1;
}

enum egress_wait egress_wait_fd(int fd, short events, int stop_fd, double deadline)
{
    for (;;) {
        struct pollfd p[2] = {{.fd = fd, .events = events}, {.fd = stop_fd, .events = POLLIN}};
        if (util_now_ms() >= deadline)
            return EGRESS_WAIT_TIMEOUT;
        int n = poll(p, stop_fd >= 0 ? 2 : 1, timeout_ms(deadline));
        if (n < 0 && errno != EINTR)
            return EGRESS_WAIT_READY; /* the caller's next call reports it */
        if (n <= 0)
            continue;
        if (stop_fd >= 0 && p[1].revents)
            return EGRESS_WAIT_STOPPED;
        if (p[0].revents)
            return EGRESS_WAIT_READY;
    }
}

int egress_send_all(int fd, const void *data, size_t n, int stop_fd, double deadline)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        enum egress_wait got = egress_wait_fd(fd, POLLOUT, stop_fd, deadline);
        if (got != EGRESS_WAIT_READY)
            return (int)got;
    }
    return 0;
}

void egress_relay_init(struct egress_relay *r, int client, int upstream, int stop_fd,
                       double deadline, struct egress_usage *usage, const struct egress_caps *caps,
                       struct egress_body *body)
{
    memset(r, 0, offsetof(struct egress_relay, w));
    r->client = client;
    r->upstream = upstream;
    r->stop_fd = stop_fd;
    r->deadline = deadline;
    r->usage = usage;
    r->caps = caps;
    r->body = body;
    for (int i = 0; i < 2; i++) {
        struct egress_relay_way *w = &r->w[i];
        w->way = (enum egress_way)i;
        w->from = i == EGRESS_UP ? client : upstream;
        w->to = i == EGRESS_UP ? upstream : client;
        w->off = w->len = 0;
        w->eof = w->shut = w->capped = false;
    }
    if (body && egress_body_done(body))
        r->w[EGRESS_UP].eof = true;
}

static int failed(struct egress_relay *r, const char *why, int err_no)
{
    r->why = why;
    r->err_no = err_no;
    return EGRESS_RELAY_ERROR;
}

/* w->buf[0..n) was just read: keeps the body's part of it and what the
 * run's allowance grants. -1 to go on, or how the connection ends. */
static int admit_read(struct egress_relay *r, struct egress_relay_way *w, size_t n)
{
    if (w->way == EGRESS_UP && r->body) {
        n = egress_body_take(r->body, w->buf, n);
        if (egress_body_error(r->body)) {
            r->why = egress_body_error(r->body);
            return EGRESS_RELAY_BAD_BODY;
        }
        if (egress_body_done(r->body))
            w->eof = true;
    }
    unsigned long long got = egress_usage_take(r->usage, r->caps, w->way, n);
    if (got < n)
        w->capped = true;
    w->off = 0;
    w->len = (size_t)got;
    return -1;
}

static int pump_read(struct egress_relay *r, struct egress_relay_way *w)
{
    ssize_t n = recv(w->from, w->buf, sizeof(w->buf), 0);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return -1;
        if (w->way == EGRESS_UP) {
            r->why = "the client's connection failed";
            r->err_no = errno;
            return EGRESS_RELAY_CLIENT_GONE;
        }
        return failed(r, "reading from the upstream", errno);
    }
    if (n == 0) {
        w->eof = true;
        if (w->way == EGRESS_UP && r->body && !egress_body_done(r->body)) {
            r->why = "the client closed before the end of the request's body";
            return EGRESS_RELAY_CLIENT_GONE;
        }
        return -1;
    }
    return admit_read(r, w, (size_t)n);
}

static int pump_write(struct egress_relay *r, struct egress_relay_way *w)
{
    ssize_t n = send(w->to, w->buf + w->off, w->len - w->off, MSG_NOSIGNAL);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return -1;
        if (w->way == EGRESS_DOWN) {
            r->why = "the client closed before the end of the answer";
            r->err_no = errno;
            return EGRESS_RELAY_CLIENT_GONE;
        }
        return failed(r, "writing to the upstream", errno);
    }
    w->off += (size_t)n;
    if (w->way == EGRESS_UP)
        r->up += (unsigned long long)n;
    else
        r->down += (unsigned long long)n;
    return -1;
}

static bool drained(const struct egress_relay_way *w)
{
    return w->off == w->len;
}

/* How the connection ends now, or -1 while it goes on; passes a tunnel's
 * ended way on as a half-close. */
static int settle(struct egress_relay *r)
{
    for (int i = 0; i < 2; i++) {
        struct egress_relay_way *w = &r->w[i];
        if (w->capped && drained(w))
            return i == EGRESS_UP ? EGRESS_RELAY_CAP_UP : EGRESS_RELAY_CAP_DOWN;
        if (!r->body && w->eof && drained(w) && !w->shut) {
            shutdown(w->to, SHUT_WR);
            w->shut = true;
        }
    }
    const struct egress_relay_way *down = &r->w[EGRESS_DOWN];
    if (r->body)
        return down->eof && drained(down) ? EGRESS_RELAY_DONE : -1;
    return r->w[EGRESS_UP].shut && down->shut ? EGRESS_RELAY_DONE : -1;
}

/* What to poll each socket for. */
static void events(const struct egress_relay *r, struct pollfd *p)
{
    const struct egress_relay_way *up = &r->w[EGRESS_UP];
    const struct egress_relay_way *down = &r->w[EGRESS_DOWN];
    short c = 0;
    short u = 0;
    if (!up->eof && !up->capped && drained(up))
        c |= POLLIN;
    if (!drained(down))
        c |= POLLOUT;
    if (!down->eof && !down->capped && drained(down))
        u |= POLLIN;
    if (!drained(up))
        u |= POLLOUT;
    /* The client stays polled with no events: its hang-up says it has
     * gone, and nothing the upstream sends could reach it. The upstream's
     * hang-up is read in its turn, after the bytes before it. */
    p[0] = (struct pollfd){.fd = r->client, .events = c};
    p[1] = (struct pollfd){.fd = u ? r->upstream : -1, .events = u};
    p[2] = (struct pollfd){.fd = r->stop_fd, .events = POLLIN};
}

/* Acts on what poll found for the socket at index i (0 client, 1
 * upstream). -1 to go on, or how the connection ends. */
static int serve_fd(struct egress_relay *r, const struct pollfd *p, int i)
{
    struct egress_relay_way *reader = &r->w[i == 0 ? EGRESS_UP : EGRESS_DOWN];
    struct egress_relay_way *writer = &r->w[i == 0 ? EGRESS_DOWN : EGRESS_UP];
    short bad = POLLHUP | POLLERR;
    if (p->revents & POLLNVAL)
        return failed(r, i == 0 ? "the client's socket is not open" : "the upstream's socket",
                      EBADF);
    if (i == 0 && p->events == 0 && (p->revents & bad)) {
        r->why = "the client closed the connection";
        return r->body ? EGRESS_RELAY_CLIENT_GONE : EGRESS_RELAY_DONE;
    }
    int end = -1;
    if ((p->events & POLLOUT) && (p->revents & (POLLOUT | bad)))
        end = pump_write(r, writer);
    if (end < 0 && (p->events & POLLIN) && (p->revents & (POLLIN | bad)))
        end = pump_read(r, reader);
    return end;
}

enum egress_relay_end egress_relay_run(struct egress_relay *r, const void *early, size_t n)
{
    struct egress_relay_way *up = &r->w[EGRESS_UP];
    int end = -1;
    if (n > sizeof(up->buf))
        n = sizeof(up->buf);
    if (n > 0 && !up->eof) {
        memcpy(up->buf, early, n);
        end = admit_read(r, up, n);
    }
    while (end < 0 && (end = settle(r)) < 0) {
        struct pollfd p[3];
        events(r, p);
        if (util_now_ms() >= r->deadline)
            return EGRESS_RELAY_TIME;
        int k = poll(p, r->stop_fd >= 0 ? 3 : 2, timeout_ms(r->deadline));
        if (k < 0 && errno != EINTR)
            return (enum egress_relay_end)failed(r, "poll", errno);
        if (k <= 0)
            continue;
        if (r->stop_fd >= 0 && p[2].revents)
            return EGRESS_RELAY_STOPPED;
        end = serve_fd(r, &p[0], 0);
        if (end < 0)
            end = serve_fd(r, &p[1], 1);
    }
    return (enum egress_relay_end)end;
}
