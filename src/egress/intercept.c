#include "egress/intercept.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "base/util.h"
#include "egress/body.h"
#include "egress/gateway.h"
#include "egress/proxy_req.h"
#include "egress/relay.h"
#include "egress/tls.h"

/* Room for the Host field's "host:port" ("[v6]:port"). */
#define HOST_PORT_CAP (EGRESS_HOST_CAP + 16)
/* A TLS record's first byte: a handshake. */
#define TLS_HANDSHAKE_BYTE 0x16
/* Operations one side tries before the loop polls again (fairness). */
#define STEP_OPS 8

/* What a step gives back: go on (progress made, or not), or an end. */
enum { GO_ON = -1 };

enum end {
    END_DONE,
    END_CLIENT_GONE,
    END_CAP_UP,
    END_CAP_DOWN,
    END_TIME,
    END_STOPPED,
    END_CUT, /* the reason is set already */
};

struct ic {
    const struct egress_intercept *a;
    struct egress_entry *e;
    struct egress_tls_conn *cs; /* the sandbox's side */
    struct egress_tls_conn *us; /* the upstream's side */
    bool plain;                 /* plain HTTP in the tunnel: no TLS on either side */
    short want[2];              /* poll events: client, upstream */
    bool progress;
    char host[HOST_PORT_CAP];
    size_t host_len;
    /* Toward the upstream. */
    bool in_body;
    unsigned requests;
    struct proxy_req req;
    struct egress_body body;
    const char *wp; /* the write under way: the head, or body bytes in `in` */
    size_t wlen;
    size_t woff;
    bool wsecret; /* wp is `head`, which holds a value: zero it once sent */
    bool up_capped;
    bool client_eof;
    size_t in_off;
    size_t in_len;
    char in[EGRESS_RELAY_BUF];
    char built[EGRESS_UPSTREAM_HEAD_MAX];
    char head[EGRESS_SECRETS_HEAD_MAX];
    /* Toward the sandbox. */
    bool down_capped;
    bool upstream_eof;
    bool upstream_truncated; /* it ended without close_notify: the sandbox must not see a clean end
                              */
    bool up_shut;            /* the sandbox's end was passed on to the upstream */
    size_t d_off;
    size_t d_len;
    char down[EGRESS_RELAY_BUF];
};

static void ATTR_PRINTF(2, 3) note(struct ic *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->e->reason, sizeof(c->e->reason), fmt, ap);
    va_end(ap);
}

/* Side 0 (the sandbox's) or 1 (the upstream's), TLS or plain, with
 * egress_tls_read's and egress_tls_write's results. */
static ssize_t io_read(struct ic *c, int side, void *buf, size_t cap, struct err *err)
{
    struct egress_tls_conn *t = side ? c->us : c->cs;
    if (t)
        return egress_tls_read(t, buf, cap, err);
    ssize_t n = recv(side ? c->a->upstream : c->a->client, buf, cap, 0);
    if (n >= 0)
        return n;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return EGRESS_TLS_WANT_READ;
    err_set(err, ERR_IO, "%s", strerror(errno));
    return EGRESS_TLS_FAILED;
}

static ssize_t io_write(struct ic *c, int side, const void *buf, size_t n, struct err *err)
{
    struct egress_tls_conn *t = side ? c->us : c->cs;
    if (t)
        return egress_tls_write(t, buf, n, err);
    ssize_t w = send(side ? c->a->upstream : c->a->client, buf, n, MSG_NOSIGNAL);
    if (w >= 0)
        return w;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return EGRESS_TLS_WANT_WRITE;
    err_set(err, ERR_IO, "%s", strerror(errno));
    return EGRESS_TLS_FAILED;
}

static double soon(const struct ic *c, long long ms)
{
    double d = util_now_ms() + (double)ms;
    return d < c->a->deadline ? d : c->a->deadline;
}

/* Writes all of data to the sandbox's TLS, waiting at most until
 * deadline: for the gateway's own answers. */
static void send_all(struct ic *c, const char *data, size_t n, double deadline)
{
    while (n > 0) {
        struct err err = ERR_INIT;
        ssize_t w = io_write(c, 0, data, n, &err);
        err_clear(&err);
        if (w > 0) {
            data += w;
            n -= (size_t)w;
            continue;
        }
        if (w != EGRESS_TLS_WANT_READ && w != EGRESS_TLS_WANT_WRITE)
            return;
        short ev = w == EGRESS_TLS_WANT_READ ? POLLIN : POLLOUT;
        if (egress_wait_fd(c->a->client, ev, c->a->stop_fd, deadline) != EGRESS_WAIT_READY)
            return;
    }
}

/* Answers status with the entry's reason inside the sandbox's TLS. */
static void answer(struct ic *c, int status)
{
    char out[EGRESS_ANSWER_CAP];
    size_t n = egress_answer_format(status, c->e->reason, out, sizeof(out));
    c->e->status = status;
    if (n > 0)
        send_all(c, out, n, soon(c, EGRESS_ANSWER_MS));
}

/* ---- the handshakes ----------------------------------------------------- */

/* Whether the client's first byte opens a TLS handshake; plain HTTP in
 * the tunnel (a client that tunnels http:// too) is served in the clear.
 * 0, or -1 when the connection ends here. */
static int peek(struct ic *c)
{
    const struct egress_intercept *a = c->a;
    enum egress_wait w = egress_wait_fd(a->client, POLLIN, a->stop_fd, soon(c, a->p->caps.head_ms));
    if (w != EGRESS_WAIT_READY) {
        note(c, w == EGRESS_WAIT_STOPPED ? "cut: the run ended"
                                         : "nothing came through the tunnel in time");
        return -1;
    }
    unsigned char b = 0;
    ssize_t n = recv(a->client, &b, 1, MSG_PEEK);
    if (n <= 0) {
        note(c, "the client closed the tunnel before sending anything");
        return -1;
    }
    c->plain = b != TLS_HANDSHAKE_BYTE;
    return 0;
}

static int handshakes(struct ic *c)
{
    const struct egress_intercept *a = c->a;
    SSL_CTX *leaf = NULL;
    struct err err = ERR_INIT;
    int rc = -1;
    if (peek(c) < 0)
        return -1;
    if (c->plain)
        return 0;
    if (egress_tls_ca_leaf(a->p->ca, a->host->text, &leaf, &err) < 0) {
        note(c, "no certificate for %s: %s", a->host->text, err_msg(&err));
        goto out;
    }
    if (egress_tls_accept(leaf, a->client, soon(c, a->p->caps.connect_ms), a->stop_fd, &c->cs,
                          &err) < 0) {
        note(c,
             "%s: the sandbox's TLS handshake failed (does its client trust the daemon's "
             "CA?): %s",
             err.code == ERR_CANCELLED ? "cut" : "refused", err_msg(&err));
        goto out;
    }
    err_clear(&err);
    if (egress_tls_connect(a->p->upstream_tls, a->upstream, a->host->text,
                           soon(c, a->p->caps.connect_ms), a->stop_fd, &c->us, &err) < 0) {
        note(c, "the upstream's TLS failed: %s", err_msg(&err));
        if (err.code != ERR_CANCELLED)
            answer(c, 502);
        goto out;
    }
    rc = 0;
out:
    err_clear(&err);
    SSL_CTX_free(leaf);
    return rc;
}

/* ---- toward the upstream ------------------------------------------------ */

/* A head just completed in c->req: written, secrets in, and taken from
 * the allowance, as the write under way. */
static int head_ready(struct ic *c)
{
    const struct egress_intercept *a = c->a;
    size_t n = proxy_req_upstream_head(&c->req, c->host, c->host_len,
                                       proxy_req_wants_close(&c->req), c->built, sizeof(c->built));
    if (n == 0) {
        note(c, "cut: a request's head is too large to pass on");
        return END_CUT;
    }
    size_t len = 0;
    struct err err = ERR_INIT;
    int count = egress_secrets_substitute_head(a->p->secrets, a->host->text, a->port, c->built, n,
                                               c->head, sizeof(c->head), &len, &err);
    if (count < 0) {
        note(c, "cut: %s", err_msg(&err));
        err_clear(&err);
        return END_CUT;
    }
    unsigned long long got = egress_usage_take(a->u, &a->p->caps, EGRESS_UP, len);
    if (got < len) {
        egress_usage_give_back(a->u, EGRESS_UP, got);
        explicit_bzero(c->head, len);
        return END_CAP_UP;
    }
    c->e->secrets += (unsigned)count;
    c->requests++;
    c->wp = c->head;
    c->wlen = len;
    c->woff = 0;
    c->wsecret = true;
    enum egress_body_kind kind = proxy_req_chunked(&c->req)              ? EGRESS_BODY_CHUNKED
                                 : proxy_req_has_content_length(&c->req) ? EGRESS_BODY_LENGTH
                                                                         : EGRESS_BODY_NONE;
    egress_body_init(&c->body, kind, proxy_req_content_length(&c->req));
    c->in_body = !egress_body_done(&c->body);
    if (!c->in_body)
        proxy_req_init_origin(&c->req, a->host, a->port);
    return GO_ON;
}

/* A head the parser refused: answered when nothing else is on its way
 * to the sandbox (the first request), else the connection is cut. */
static int head_refused(struct ic *c)
{
    note(c, "%s", proxy_req_reason(&c->req));
    if (c->requests == 0 && c->d_len == c->d_off)
        answer(c, proxy_req_status(&c->req));
    return END_CUT;
}

/* The unprocessed client bytes in c->in: the head's, or the body's. */
static int process(struct ic *c)
{
    const char *p = c->in + c->in_off;
    size_t n = c->in_len - c->in_off;
    if (!c->in_body) {
        size_t used = 0;
        enum proxy_req_state st = proxy_req_feed(&c->req, p, n, &used);
        c->in_off += used;
        if (st == PROXY_REQ_ERROR)
            return head_refused(c);
        return st == PROXY_REQ_DONE ? head_ready(c) : GO_ON;
    }
    size_t k = egress_body_take(&c->body, p, n);
    if (egress_body_error(&c->body)) {
        note(c, "cut: %s", egress_body_error(&c->body));
        return END_CUT;
    }
    unsigned long long got = egress_usage_take(c->a->u, &c->a->p->caps, EGRESS_UP, k);
    if (got < k)
        c->up_capped = true;
    c->wp = p;
    c->wlen = (size_t)got;
    c->woff = 0;
    c->wsecret = false;
    c->in_off += k;
    if (egress_body_done(&c->body)) {
        c->in_body = false;
        proxy_req_init_origin(&c->req, c->a->host, c->a->port);
    }
    return GO_ON;
}

/* Waits for what a TLS call asked: on side 0 (client) or 1 (upstream). */
static void wait_for(struct ic *c, int side, ssize_t io)
{
    c->want[side] |= io == EGRESS_TLS_WANT_READ ? POLLIN : POLLOUT;
}

static int write_up(struct ic *c)
{
    struct err err = ERR_INIT;
    ssize_t w = io_write(c, 1, c->wp + c->woff, c->wlen - c->woff, &err);
    if (w > 0) {
        c->woff += (size_t)w;
        c->e->up += (unsigned long long)w;
        c->progress = true;
        if (c->woff == c->wlen && c->wsecret) {
            explicit_bzero(c->head, c->wlen);
            c->wsecret = false;
        }
    } else if (w == EGRESS_TLS_WANT_READ || w == EGRESS_TLS_WANT_WRITE) {
        wait_for(c, 1, w);
    } else {
        note(c, "cut: writing to the upstream: %s", err_msg(&err));
        err_clear(&err);
        return END_CUT;
    }
    err_clear(&err);
    return w > 0 ? GO_ON : GO_ON - 1;
}

static int read_client(struct ic *c)
{
    struct err err = ERR_INIT;
    ssize_t n = io_read(c, 0, c->in, sizeof(c->in), &err);
    int rc = GO_ON;
    if (n > 0) {
        c->in_off = 0;
        c->in_len = (size_t)n;
        c->progress = true;
    } else if (n == 0 || n == EGRESS_TLS_TRUNCATED) {
        c->client_eof = true;
        c->progress = true;
    } else if (n == EGRESS_TLS_WANT_READ || n == EGRESS_TLS_WANT_WRITE) {
        wait_for(c, 0, n);
        rc = GO_ON - 1;
    } else {
        note(c, "the sandbox's TLS failed: %s", err_msg(&err));
        rc = END_CLIENT_GONE;
    }
    err_clear(&err);
    return rc;
}

/* Passes the sandbox's end on to the upstream, once: close_notify, or a
 * half-close in plain HTTP. GO_ON (blocked or done), or an end. */
static int shut_up(struct ic *c)
{
    if (c->up_shut)
        return GO_ON - 1;
    if (!c->us) {
        shutdown(c->a->upstream, SHUT_WR);
        c->up_shut = true;
        return GO_ON - 1;
    }
    struct err err = ERR_INIT;
    int rc = egress_tls_shutdown(c->us, &err);
    int ret = GO_ON - 1;
    if (rc == EGRESS_TLS_WANT_READ || rc == EGRESS_TLS_WANT_WRITE) {
        wait_for(c, 1, rc);
    } else if (rc < 0) {
        note(c, "cut: ending the upstream's TLS: %s", err_msg(&err));
        ret = END_CUT;
    } else {
        c->up_shut = true;
    }
    err_clear(&err);
    return ret;
}

/* Moves the client's bytes on until something blocks. GO_ON, or an end. */
static int step_up(struct ic *c)
{
    for (int ops = 0; ops < STEP_OPS; ops++) {
        int rc;
        if (c->woff < c->wlen)
            rc = write_up(c);
        else if (c->up_capped)
            return END_CAP_UP;
        else if (c->in_off < c->in_len)
            rc = process(c);
        else if (c->client_eof) {
            if (c->in_body || proxy_req_head_len(&c->req) > 0) {
                note(c, "the sandbox closed in the middle of a request");
                return END_CLIENT_GONE;
            }
            if (c->requests == 0)
                return END_DONE;
            /* Its answers may still be coming: the end is passed on (a
             * server then closes once it has answered) and the upstream
             * read to its own end. */
            rc = shut_up(c);
        } else
            rc = read_client(c);
        if (rc < GO_ON)
            return GO_ON; /* blocked */
        if (rc != GO_ON)
            return rc;
    }
    return GO_ON;
}

/* ---- toward the sandbox ------------------------------------------------- */

static int step_down(struct ic *c)
{
    struct err err = ERR_INIT;
    int rc = GO_ON;
    for (int ops = 0; ops < STEP_OPS && rc == GO_ON; ops++) {
        ssize_t n;
        if (c->d_off < c->d_len) {
            n = io_write(c, 0, c->down + c->d_off, c->d_len - c->d_off, &err);
            if (n > 0) {
                c->d_off += (size_t)n;
                c->e->down += (unsigned long long)n;
                c->progress = true;
                continue;
            }
            if (n != EGRESS_TLS_WANT_READ && n != EGRESS_TLS_WANT_WRITE) {
                note(c, "the sandbox closed before the end of an answer");
                rc = END_CLIENT_GONE;
            } else {
                wait_for(c, 0, n);
            }
            break;
        }
        if (c->down_capped)
            return END_CAP_DOWN;
        if (c->upstream_eof)
            return END_DONE;
        n = io_read(c, 1, c->down, sizeof(c->down), &err);
        if (n > 0) {
            unsigned long long got =
                egress_usage_take(c->a->u, &c->a->p->caps, EGRESS_DOWN, (unsigned long long)n);
            c->down_capped = got < (unsigned long long)n;
            c->d_off = 0;
            c->d_len = (size_t)got;
            c->progress = true;
        } else if (n == 0 || n == EGRESS_TLS_TRUNCATED) {
            c->upstream_eof = true;
            c->upstream_truncated = n == EGRESS_TLS_TRUNCATED;
            c->progress = true;
        } else if (n == EGRESS_TLS_WANT_READ || n == EGRESS_TLS_WANT_WRITE) {
            wait_for(c, 1, n);
            break;
        } else {
            note(c, "cut: reading from the upstream: %s", err_msg(&err));
            rc = END_CUT;
        }
    }
    err_clear(&err);
    return rc;
}

/* ---- the loop ----------------------------------------------------------- */

static int poll_timeout(const struct ic *c)
{
    if (c->progress)
        return 0;
    double left = c->a->deadline - util_now_ms();
    if (left <= 0)
        return 0;
    return left >= (double)INT_MAX ? INT_MAX : (int)left + 1;
}

static enum end run(struct ic *c)
{
    const struct egress_intercept *a = c->a;
    for (;;) {
        c->want[0] = c->want[1] = 0;
        c->progress = false;
        int rc = step_up(c);
        if (rc == GO_ON)
            rc = step_down(c);
        if (rc != GO_ON)
            return (enum end)rc;
        struct pollfd p[3] = {
            {.fd = c->want[0] ? a->client : -1, .events = c->want[0]},
            {.fd = c->want[1] ? a->upstream : -1, .events = c->want[1]},
            {.fd = a->stop_fd, .events = POLLIN},
        };
        if (util_now_ms() >= a->deadline)
            return END_TIME;
        int k = poll(p, 3, poll_timeout(c));
        if (k > 0 && p[2].revents)
            return END_STOPPED;
        if (k < 0 && errno != EINTR) {
            note(c, "cut: poll: %s", strerror(errno));
            return END_CUT;
        }
    }
}

static void ended(struct ic *c, enum end end)
{
    const struct egress_caps *caps = &c->a->p->caps;
    switch (end) {
    case END_DONE:
        /* A close-delimited answer cut short upstream must not read as
         * whole: no close_notify to the sandbox then. */
        if (c->cs && !c->upstream_truncated) {
            struct err err = ERR_INIT;
            (void)egress_tls_shutdown(c->cs, &err); /* best effort, never waited for */
            err_clear(&err);
        }
        break;
    case END_CLIENT_GONE:
    case END_CUT:
        break;
    case END_CAP_UP:
        note(c, "cut: the run's upload cap (%llu bytes) was reached", caps->bytes_up);
        break;
    case END_CAP_DOWN:
        note(c, "cut: the run's download cap (%llu bytes) was reached", caps->bytes_down);
        break;
    case END_TIME:
        note(c, "cut: the connection time cap (%lld ms) was reached", caps->conn_ms);
        break;
    case END_STOPPED:
        note(c, "cut: the run ended");
        break;
    }
}

/* The Host field's value: the port left out where the scheme implies it. */
static void name_host(struct ic *c)
{
    const struct egress_intercept *a = c->a;
    bool v6 = a->host->kind == EGRESS_HOST_IPV6;
    unsigned implied = c->plain ? EGRESS_PORT_HTTP : EGRESS_PORT_HTTPS;
    if (a->port == implied)
        snprintf(c->host, sizeof(c->host), "%s%s%s", v6 ? "[" : "", a->host->text, v6 ? "]" : "");
    else
        snprintf(c->host, sizeof(c->host), "%s%s%s:%u", v6 ? "[" : "", a->host->text, v6 ? "]" : "",
                 a->port);
    c->host_len = strlen(c->host);
}

void egress_intercept(const struct egress_intercept *a, struct egress_entry *e)
{
    struct ic *c = xcalloc(1, sizeof(*c));
    c->a = a;
    c->e = e;
    e->intercepted = true;
    proxy_req_init_origin(&c->req, a->host, a->port);
    if (handshakes(c) == 0) {
        name_host(c);
        ended(c, run(c));
    }
    egress_tls_free(c->us);
    egress_tls_free(c->cs);
    explicit_bzero(c->head, sizeof(c->head));
    explicit_bzero(c->down, sizeof(c->down));
    free(c);
}
