#include "egress/gateway.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "egress/body.h"
#include "egress/intercept.h"
#include "egress/proxy_req.h"
#include "egress/relay.h"
#include "egress/resolve.h"
#include "egress/secrets.h"

/* Room for "host:port" ("[v6]:port"). */
#define HOST_PORT_CAP (EGRESS_HOST_CAP + 16)

/* One client connection: everything egress_serve holds (large: it is
 * allocated). */
struct conn {
    const struct egress_policy *p;
    struct egress_usage *u;
    struct egress_summary *s;
    int stop_fd;
    int client;
    int upstream;
    double deadline; /* the connection time cap's */
    bool admitted;
    bool have_head;
    struct egress_entry e;           /* the summary's entry, raw */
    char target[HOST_PORT_CAP];      /* host:port, once the head names it */
    char addr[EGRESS_ADDR_TEXT_CAP]; /* the upstream's address, once connected */
    size_t early;                    /* in[early..early + early_len): past the head */
    size_t early_len;
    struct proxy_req req;
    struct egress_addrs addrs;
    struct egress_body body;
    struct egress_relay relay;
    char in[EGRESS_RELAY_BUF];
    char head[EGRESS_UPSTREAM_HEAD_MAX];
};

/* ---- the run's stop ----------------------------------------------------- */

int egress_cancel_init(struct egress_cancel *c, struct err *err)
{
    atomic_init(&c->fired, false);
    c->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c->fd < 0)
        return err_set(err, ERR_INTERNAL, "eventfd for the egress gateway's stop: %s",
                       strerror(errno));
    return 0;
}

void egress_cancel_fire(struct egress_cancel *c)
{
    atomic_store(&c->fired, true);
    uint64_t one = 1;
    ssize_t w = write(c->fd, &one, sizeof(one));
    (void)w;
}

bool egress_cancel_fired(const struct egress_cancel *c)
{
    return atomic_load(&c->fired);
}

void egress_cancel_destroy(struct egress_cancel *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* ---- answers ------------------------------------------------------------ */

const char *egress_status_text(int status)
{
    switch (status) {
    case 200:
        return "Connection established";
    case 400:
        return "Bad Request";
    case 403:
        return "Forbidden";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 414:
        return "URI Too Long";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 501:
        return "Not Implemented";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Bad Gateway";
    }
}

size_t egress_answer_format(int status, const char *reason, char *out, size_t cap)
{
    char body[EGRESS_SUMMARY_REASON_CAP + 32];
    int bn = snprintf(body, sizeof(body), "mcp-sandboxd egress: %s\n", reason);
    if (bn < 0 || (size_t)bn >= sizeof(body))
        return 0;
    int n = snprintf(out, cap,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
                     status, egress_status_text(status), bn, body);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

static double answer_deadline(const struct conn *c)
{
    double d = util_now_ms() + EGRESS_ANSWER_MS;
    return d < c->deadline ? d : c->deadline;
}

/* The summary's reason for c (a sentence, no answer sent). */
static void ATTR_PRINTF(2, 3) note(struct conn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->e.reason, sizeof(c->e.reason), fmt, ap);
    va_end(ap);
}

/* Refuses with status and a one-line reason (which the summary keeps). */
static void ATTR_PRINTF(3, 4) answer(struct conn *c, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->e.reason, sizeof(c->e.reason), fmt, ap);
    va_end(ap);
    c->e.status = status;
    char out[EGRESS_ANSWER_CAP];
    size_t n = egress_answer_format(status, c->e.reason, out, sizeof(out));
    if (n > 0)
        (void)egress_send_all(c->client, out, n, c->stop_fd, answer_deadline(c));
}

/* ---- the request's head --------------------------------------------------- */

static void name_target(struct conn *c)
{
    const struct egress_host *h = proxy_req_host(&c->req);
    unsigned port = proxy_req_port(&c->req);
    bool v6 = h->kind == EGRESS_HOST_IPV6;
    snprintf(c->target, sizeof(c->target), "%s%s%s:%u", v6 ? "[" : "", h->text, v6 ? "]" : "",
             port);
    snprintf(c->e.host, sizeof(c->e.host), "%s", h->text);
    c->e.port = port;
}

/* Reads the head within the head time cap. 0 once it is complete; -1
 * when the connection ends here (answered, or gone). */
static int read_head(struct conn *c)
{
    double start = util_now_ms();
    double deadline = c->deadline;
    double head_end = start + (double)c->p->caps.head_ms;
    if (head_end < deadline)
        deadline = head_end;
    proxy_req_init(&c->req);
    for (;;) {
        enum egress_wait w = egress_wait_fd(c->client, POLLIN, c->stop_fd, deadline);
        if (w == EGRESS_WAIT_STOPPED) {
            note(c, "the run ended before the request's head arrived");
            return -1;
        }
        if (w == EGRESS_WAIT_TIMEOUT) {
            answer(c, 408, "the request's head did not arrive within %.0f ms", deadline - start);
            return -1;
        }
        ssize_t n = recv(c->client, c->in, sizeof(c->in), 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            continue;
        if (n <= 0) {
            note(c, "the client closed before sending a request");
            return -1;
        }
        size_t used = 0;
        enum proxy_req_state st = proxy_req_feed(&c->req, c->in, (size_t)n, &used);
        if (st == PROXY_REQ_ERROR) {
            answer(c, proxy_req_status(&c->req), "%s", proxy_req_reason(&c->req));
            return -1;
        }
        if (st == PROXY_REQ_DONE) {
            c->have_head = true;
            c->early = used;
            c->early_len = (size_t)n - used;
            name_target(c);
            return 0;
        }
    }
}

/* ---- the decision ------------------------------------------------------- */

/* 0 when the run's caps and policy allow the request (c->addrs holds
 * where to connect); -1 when it was refused. */
static int decide(struct conn *c, enum egress_admit admit)
{
    const struct egress_caps *caps = &c->p->caps;
    if (admit == EGRESS_OVER_OPEN) {
        answer(c, 429, "this run has %u connections open, its cap; %s must wait", caps->conns_open,
               c->target);
        return -1;
    }
    if (admit == EGRESS_OVER_TOTAL) {
        answer(c, 429, "this run has made %u connections, its cap; %s is refused",
               caps->conns_total, c->target);
        return -1;
    }
    if (egress_patterns_match(&c->p->patterns, c->e.host, c->e.port) < 0) {
        answer(c, 403, "%s is not in this run's egress list", c->target);
        return -1;
    }
    /* From here the list allows it; the resolver may still refuse where
     * the name leads (403), or find nothing (502). */
    c->e.allowed = true;
    struct err err = ERR_INIT;
    if (egress_resolve(c->e.host, c->e.port, c->p->pins, c->p->allow, &c->addrs, &err) < 0) {
        c->e.allowed = err.code != ERR_INVALID;
        answer(c, c->e.allowed ? 502 : 403, "%s", err_msg(&err));
        err_clear(&err);
        return -1;
    }
    return 0;
}

/* ---- reaching the upstream ------------------------------------------------ */

static int set_nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* A connection to ss by the deadline: its descriptor, or -1 with errno
 * (ETIMEDOUT past the deadline, ECANCELED when stopped). */
static int connect_one(const struct conn *c, const struct sockaddr_storage *ss, double deadline)
{
    socklen_t len =
        ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int rc = connect(fd, (const struct sockaddr *)ss, len);
    if (rc < 0 && errno == EINPROGRESS) {
        enum egress_wait w = egress_wait_fd(fd, POLLOUT, c->stop_fd, deadline);
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (w == EGRESS_WAIT_READY && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
            soerr = errno;
        errno = w == EGRESS_WAIT_STOPPED ? ECANCELED : w == EGRESS_WAIT_TIMEOUT ? ETIMEDOUT : soerr;
        rc = errno ? -1 : 0;
    }
    if (rc < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* Connects to c->addrs in order, each given an equal share of what is
 * left of the connect time cap. 0, or -1 when the connection ends here. */
static int connect_upstream(struct conn *c)
{
    double end = util_now_ms() + (double)c->p->caps.connect_ms;
    if (end > c->deadline)
        end = c->deadline;
    int last = 0;
    for (size_t i = 0; i < c->addrs.n; i++) {
        const struct sockaddr_storage *ss = &c->addrs.items[i];
        double share = (end - util_now_ms()) / (double)(c->addrs.n - i);
        c->upstream = connect_one(c, ss, util_now_ms() + share);
        egress_addr_format((const struct sockaddr *)ss, c->addr, sizeof(c->addr));
        if (c->upstream >= 0)
            return 0;
        last = errno;
        if (last == ECANCELED) {
            note(c, "cut: the run ended while connecting to %s", c->target);
            return -1;
        }
    }
    if (last == ETIMEDOUT)
        answer(c, 504, "%s (%s) did not answer within %lld ms", c->target, c->addr,
               c->p->caps.connect_ms);
    else
        answer(c, 502, "cannot connect to %s (%s): %s", c->target, c->addr, strerror(last));
    return -1;
}

/* ---- the request upstream ------------------------------------------------- */

/* The head to send upstream, in c->head; its length, or 0 when it does
 * not fit (it always should: it is at most the client's, plus a little). */
static size_t upstream_head(struct conn *c)
{
    /* c->target without ":80", the port a Host field implies. */
    size_t host_len = strlen(c->target);
    if (c->e.port == EGRESS_PORT_HTTP)
        host_len = (size_t)(strrchr(c->target, ':') - c->target);
    return proxy_req_upstream_head(&c->req, c->target, host_len, true, c->head, sizeof(c->head));
}

/* Sends head[0..len) upstream, counted against the upload cap. 0, or -1
 * when the connection ends here. */
static int send_upstream(struct conn *c, const char *head, size_t len)
{
    unsigned long long got = egress_usage_take(c->u, &c->p->caps, EGRESS_UP, len);
    if (got < len) {
        egress_usage_give_back(c->u, EGRESS_UP, got);
        answer(c, 429, "this run's upload cap (%llu bytes) is used up", c->p->caps.bytes_up);
        return -1;
    }
    int rc = egress_send_all(c->upstream, head, len, c->stop_fd, c->deadline);
    if (rc == 0) {
        c->e.up += len;
        return 0;
    }
    if (rc == EGRESS_WAIT_STOPPED)
        note(c, "cut: the run ended");
    else if (rc == EGRESS_WAIT_TIMEOUT)
        note(c, "cut: the connection time cap (%lld ms) was reached", c->p->caps.conn_ms);
    else
        answer(c, 502, "cannot send the request to %s (%s): %s", c->target, c->addr,
               strerror(errno));
    return -1;
}

/* The head with the run's --secret values in place of their placeholders
 * for this host and port (egress/secrets.h): in *out (allocated, zero it
 * before freeing: it may hold a value) when any was put in, else *out is
 * NULL and the head goes as the client's. Its length, or 0 when it is
 * refused (answered). */
static size_t insert_secrets(struct conn *c, size_t len, char **out)
{
    *out = NULL;
    if (!c->p->secrets)
        return len;
    char *buf = xmalloc(EGRESS_SECRETS_HEAD_MAX);
    size_t n = 0;
    struct err err = ERR_INIT;
    int count = egress_secrets_substitute_head(c->p->secrets, c->e.host, c->e.port, c->head, len,
                                               buf, EGRESS_SECRETS_HEAD_MAX, &n, &err);
    if (count <= 0) {
        free(buf); /* no value in it: none was put in, or it was zeroed */
        if (count < 0)
            answer(c, 431, "%s", err_msg(&err));
        err_clear(&err);
        return count < 0 ? 0 : len;
    }
    c->e.secrets = (unsigned)count;
    *out = buf;
    return n;
}

/* Sends the head upstream. 0, or -1 when the connection ends here. */
static int send_head(struct conn *c)
{
    size_t len = upstream_head(c);
    if (len == 0) {
        answer(c, 431, "the request's head is too large to pass on");
        return -1;
    }
    char *with_secrets = NULL;
    len = insert_secrets(c, len, &with_secrets);
    if (len == 0)
        return -1;
    const char *head = with_secrets ? with_secrets : c->head;
    int rc = send_upstream(c, head, len);
    if (with_secrets) {
        explicit_bzero(with_secrets, len);
        free(with_secrets);
    }
    return rc;
}

/* ---- relaying ----------------------------------------------------------- */

static void relay_ended(struct conn *c, enum egress_relay_end end)
{
    const struct egress_relay *r = &c->relay;
    const struct egress_caps *caps = &c->p->caps;
    c->e.up += r->up;
    c->e.down += r->down;
    switch (end) {
    case EGRESS_RELAY_DONE:
        break;
    case EGRESS_RELAY_CLIENT_GONE:
        if (r->body)
            note(c, "%s", r->why);
        break;
    case EGRESS_RELAY_CAP_UP:
        note(c, "cut: the run's upload cap (%llu bytes) was reached", caps->bytes_up);
        break;
    case EGRESS_RELAY_CAP_DOWN:
        note(c, "cut: the run's download cap (%llu bytes) was reached", caps->bytes_down);
        break;
    case EGRESS_RELAY_TIME:
        note(c, "cut: the connection time cap (%lld ms) was reached", caps->conn_ms);
        break;
    case EGRESS_RELAY_STOPPED:
        note(c, "cut: the run ended");
        break;
    case EGRESS_RELAY_BAD_BODY:
        note(c, "cut: %s", r->why);
        break;
    case EGRESS_RELAY_ERROR:
        note(c, "cut: %s: %s", r->why, strerror(r->err_no));
        break;
    }
}

static void relay(struct conn *c, struct egress_body *body)
{
    egress_relay_init(&c->relay, c->client, c->upstream, c->stop_fd, c->deadline, c->u, &c->p->caps,
                      body);
    enum egress_relay_end end = egress_relay_run(&c->relay, c->in + c->early, c->early_len);
    relay_ended(c, end);
}

/* Whether the tunnel's TLS is terminated here: its host and port are
 * bound to one of the run's secrets (and the daemon has its CA). */
static bool intercepts(const struct conn *c)
{
    return c->p->ca && c->p->upstream_tls &&
           egress_secrets_bound(c->p->secrets, c->e.host, c->e.port);
}

/* A tunnel to any host no secret is bound to is relayed untouched: a
 * placeholder in it stays one. One to a bound host is served by
 * egress/intercept.h, which puts the values in inside its TLS. */
static void serve_tunnel(struct conn *c)
{
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    c->e.status = 200;
    bool intercept = intercepts(c);
    if (intercept && c->early_len > 0) {
        /* The handshake reads the socket: bytes already taken from it
         * would be lost. Clients wait for the answer. */
        answer(c, 400, "bytes sent before the tunnel was established");
        return;
    }
    if (egress_send_all(c->client, ok, sizeof(ok) - 1, c->stop_fd, answer_deadline(c)) != 0) {
        note(c, "the client did not take the gateway's answer");
        return;
    }
    if (!intercept) {
        relay(c, NULL);
        return;
    }
    struct egress_intercept ic = {
        .p = c->p,
        .u = c->u,
        .stop_fd = c->stop_fd,
        .client = c->client,
        .upstream = c->upstream,
        .deadline = c->deadline,
        .host = proxy_req_host(&c->req),
        .port = c->e.port,
    };
    egress_intercept(&ic, &c->e);
}

static void serve_request(struct conn *c)
{
    if (send_head(c) < 0)
        return;
    const struct proxy_req *r = &c->req;
    enum egress_body_kind kind = proxy_req_chunked(r)              ? EGRESS_BODY_CHUNKED
                                 : proxy_req_has_content_length(r) ? EGRESS_BODY_LENGTH
                                                                   : EGRESS_BODY_NONE;
    egress_body_init(&c->body, kind, proxy_req_content_length(r));
    relay(c, &c->body);
}

/* ---- one connection ------------------------------------------------------ */

/* "; N secret(s) inserted" into buf, or "" (a count: never a name's
 * value). */
static const char *secrets_note(const struct conn *c, char *buf, size_t cap)
{
    if (!c->e.secrets)
        return "";
    snprintf(buf, cap, "; %u secret%s inserted", c->e.secrets, c->e.secrets == 1 ? "" : "s");
    return buf;
}

/* The summary's entry and the log line. */
static void record(struct conn *c)
{
    egress_summary_add(c->s, &c->e);
    const char *sep = *c->p->label ? " " : "";
    const char *label = c->p->label;
    char status[16] = "";
    char inserted[48];
    if (c->e.status >= 400)
        snprintf(status, sizeof(status), " (%d)", c->e.status);
    if (!c->have_head) {
        log_info("egress%s%s: no request%s: %s", sep, label, status, LOG_FIELD(c->e.reason));
        return;
    }
    const char *method = proxy_method_name(proxy_req_method(&c->req));
    if (!c->e.allowed || c->e.status >= 400)
        log_info("egress%s%s: %s %s %s%s: %s", sep, label, method, LOG_FIELD(c->target),
                 c->e.allowed ? "failed" : "refused", status, LOG_FIELD(c->e.reason));
    else
        log_info("egress%s%s: %s %s allowed via %s%s: %llu bytes up, %llu down%s%s%s", sep, label,
                 method, LOG_FIELD(c->target), c->addr, c->e.intercepted ? ", intercepted" : "",
                 c->e.up, c->e.down, secrets_note(c, inserted, sizeof(inserted)),
                 *c->e.reason ? "; " : "", LOG_FIELD(c->e.reason));
}

void egress_serve(const struct egress_policy *p, struct egress_usage *u, struct egress_summary *s,
                  int client_fd, const struct egress_cancel *stop)
{
    struct conn *c = xcalloc(1, sizeof(*c));
    c->p = p;
    c->u = u;
    c->s = s;
    c->stop_fd = stop ? stop->fd : -1;
    c->client = client_fd;
    c->upstream = -1;
    c->deadline = util_now_ms() + (double)p->caps.conn_ms;
    enum egress_admit admit = egress_usage_admit(u, &p->caps);
    c->admitted = admit == EGRESS_ADMITTED;
    if (set_nonblocking(client_fd) < 0)
        note(c, "the client's socket: %s", strerror(errno));
    else if (read_head(c) == 0 && decide(c, admit) == 0 && connect_upstream(c) == 0) {
        log_debug("egress%s%s: %s connected via %s", *p->label ? " " : "", p->label,
                  LOG_FIELD(c->target), c->addr);
        if (proxy_req_method(&c->req) == PROXY_CONNECT)
            serve_tunnel(c);
        else
            serve_request(c);
    }
    record(c);
    if (c->upstream >= 0)
        close(c->upstream);
    close(client_fd);
    if (c->admitted)
        egress_usage_leave(u);
    free(c);
}
