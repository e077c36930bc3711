/* HTTP to the engine over its unix socket with libcurl: plain requests, and
 * connections upgraded for a container's attach stream, which then carry
 * raw bytes. Every libcurl call of the daemon is in this file, so curl's
 * model of errors and timeouts stays in one place; that is why it runs
 * past 600 lines. */
#include "backend/docker/engine_http.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/log.h"

/* Caps for the hijack: the answer head, and the body of a refusal (which
 * only ever carries a short JSON error). */
#define ENGINE_HTTP_MAX_HEAD       (16u * 1024u)
#define ENGINE_HTTP_MAX_ERROR_BODY (64u * 1024u)
#define ENGINE_HTTP_MAX_MESSAGE    300u

struct engine_http_conn {
    CURL *curl;
    int fd;
    char *pending; /* stream bytes read together with the answer head */
    size_t pending_len;
    size_t pending_off;
};

int engine_http_global_init(struct err *err)
{
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK)
        return err_set(err, ERR_INTERNAL, "curl_global_init: %s", curl_easy_strerror(rc));
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    if (!(v->features & CURL_VERSION_UNIX_SOCKETS)) {
        curl_global_cleanup();
        return err_set(err, ERR_INTERNAL, "libcurl %s was built without unix socket support",
                       v->version);
    }
    return 0;
}

void engine_http_global_cleanup(void)
{
    curl_global_cleanup();
}

/* The path without its query, for messages: queries are long and add
 * nothing a reader needs. */
static int path_len_for_msg(const char *path)
{
    const char *q = strchr(path, '?');
    size_t n = q ? (size_t)(q - path) : strlen(path);
    return n > 200 ? 200 : (int)n;
}

static void os_error_text(long os_errno, char *out, size_t n)
{
    if (os_errno <= 0) {
        out[0] = '\0';
        return;
    }
    char tmp[128];
    const char *s = strerror_r((int)os_errno, tmp, sizeof(tmp));
    snprintf(out, n, "%s", s);
}

static int connect_error(const char *socket_path, CURLcode rc, long os_errno, struct err *err)
{
    char os[128];
    os_error_text(os_errno, os, sizeof(os));
    const char *hint = "is Docker or Podman running?";
    if (os_errno == EACCES || os_errno == EPERM)
        hint = "does this user have access to the socket?";
    return err_set(err, ERR_ENGINE, "cannot reach the container engine at unix://%s: %s (%s%s%s)",
                   socket_path, curl_easy_strerror(rc), os, os[0] ? "; " : "", hint);
}

int engine_http_gone(const char *socket_path, struct err *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(socket_path) >= sizeof(sa.sun_path))
        return 0;
    memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return 0;
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    int e = rc < 0 ? errno : 0;
    close(fd);
    if (e != ECONNREFUSED && e != ENOENT)
        return 0;
    err_set(err, ERR_ENGINE, "the container engine at unix://%s is gone: %s", socket_path,
            strerror(e));
    return 1;
}

static CURL *new_handle(const char *socket_path, const char *path, long timeout_ms, char *errbuf,
                        struct err *err)
{
    /* curl reads 0 as "no timeout": every engine request must have one. */
    if (timeout_ms <= 0) {
        err_set(err, ERR_INTERNAL, "engine request without a timeout");
        return NULL;
    }
    if (path[0] != '/') {
        err_set(err, ERR_INTERNAL, "engine path must start with '/'");
        return NULL;
    }
    CURL *c = curl_easy_init();
    if (!c) {
        err_set(err, ERR_INTERNAL, "curl_easy_init failed");
        return NULL;
    }
    cleanup_free char *url = xasprintf("http://localhost%s", path);
    errbuf[0] = '\0';
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, socket_path);
    /* Timeouts must not use SIGALRM: the daemon is multi-threaded. */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    return c;
}

struct sink {
    struct buf *b;
    bool too_big;
};

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    struct sink *s = ud;
    size_t n = size * nmemb;
    if (n > ENGINE_HTTP_MAX_RESPONSE - s->b->len || buf_add(s->b, p, n) < 0) {
        s->too_big = true;
        return 0; /* makes curl stop with CURLE_WRITE_ERROR */
    }
    return n;
}

int engine_http_request(const char *socket_path, const char *method, const char *path,
                        const char *body, size_t body_len, long timeout_ms, long *status,
                        struct buf *resp, struct err *err)
{
    char errbuf[CURL_ERROR_SIZE];
    CURL *c = new_handle(socket_path, path, timeout_ms, errbuf, err);
    if (!c)
        return -1;

    int ret = -1;
    struct curl_slist *hdrs = NULL;
    struct sink sink = {resp, false};
    double t0 = 0;
    buf_reset(resp);

    /* "Expect:" disables 100-continue (the engine answers at once); a bare
     * "Content-Type:" drops curl's form type on a bodiless POST. */
    const char *hv[] = {"Expect:", body ? "Content-Type: application/json" : "Content-Type:"};
    for (size_t i = 0; i < ARRAY_SIZE(hv); i++) {
        struct curl_slist *t = curl_slist_append(hdrs, hv[i]);
        if (!t) {
            err_set(err, ERR_INTERNAL, "curl_slist_append failed");
            goto out;
        }
        hdrs = t;
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);

    bool is_post = strcmp(method, "POST") == 0;
    if (body || is_post) {
        /* A bodiless POST still sends Content-Length: 0, which engines
         * expect. */
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body_len : 0));
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
    }
    if (!is_post && (body || strcmp(method, "GET") != 0))
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);

    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);

    t0 = util_now_ms();
    CURLcode rc = curl_easy_perform(c);
    int plen = path_len_for_msg(path);
    if (rc == CURLE_COULDNT_CONNECT) {
        long os_errno = 0;
        curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
        connect_error(socket_path, rc, os_errno, err);
        goto out;
    }
    if (rc == CURLE_OPERATION_TIMEDOUT) {
        err_set(err, ERR_TIMEOUT,
                "the container engine at unix://%s did not answer %s %.*s within %ld ms",
                socket_path, method, plen, path, timeout_ms);
        goto out;
    }
    if (rc == CURLE_WRITE_ERROR && sink.too_big) {
        err_set(err, ERR_TOO_BIG,
                "the container engine's answer to %s %.*s is over the %u-byte cap", method, plen,
                path, ENGINE_HTTP_MAX_RESPONSE);
        goto out;
    }
    if (rc != CURLE_OK) {
        err_set(err, ERR_ENGINE, "container engine at unix://%s: %s %.*s failed: %s", socket_path,
                method, plen, path, errbuf[0] ? errbuf : curl_easy_strerror(rc));
        goto out;
    }

    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    log_debug("engine %s %.*s -> %ld (%.1f ms)", method, plen, path, *status, util_now_ms() - t0);
    ret = 0;
out:
    /* A request that failed on the way (a timeout, a dead engine) is
     * otherwise silent in the log until its caller reports it, if ever. */
    if (ret < 0 && t0 > 0)
        log_debug("engine %s %.*s failed (%.1f ms): %s", method, path_len_for_msg(path), path,
                  util_now_ms() - t0, err_msg(err));
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    return ret;
}

/* Copies engine text with controls (and NULs) flattened to spaces, capped
 * on a UTF-8 boundary and trimmed. NULL when nothing is left. */
static char *clean_text(const char *s, size_t n)
{
    while (n > 0 && ((unsigned char)s[0] <= ' '))
        s++, n--;
    if (n > ENGINE_HTTP_MAX_MESSAGE) {
        n = ENGINE_HTTP_MAX_MESSAGE;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    while (n > 0 && ((unsigned char)s[n - 1] <= ' '))
        n--;
    if (n == 0)
        return NULL;
    char *out = xmalloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        /* Engine text ends up in logs and tool results: no controls. */
        out[i] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
    }
    out[n] = '\0';
    return out;
}

char *engine_http_message(const char *body, size_t len)
{
    if (!body || len == 0)
        return NULL;
    json_tokener *tok = json_tokener_new_ex(8);
    if (!tok)
        return NULL;
    json_object *root = json_tokener_parse_ex(tok, body, (int)(len > INT32_MAX ? INT32_MAX : len));
    json_tokener_free(tok);
    json_object *m = NULL;
    char *out = NULL;
    if (json_object_is_type(root, json_type_object)) {
        if (json_object_object_get_ex(root, "message", &m) &&
            json_object_is_type(m, json_type_string))
            out = clean_text(json_object_get_string(m), (size_t)json_object_get_string_len(m));
    } else {
        /* Not a JSON object: Docker answers a failed attach in plain text,
         * Go's router "404 page not found". */
        out = clean_text(body, len);
    }
    json_object_put(root);
    return out;
}

/* ---- hijacked connections ---------------------------------------------- */

/* Waits until fd is ready for events or the deadline passes. Returns 0
 * when ready (including errors, which the next send/recv reports), -1 on
 * timeout. */
static int wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - util_now_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, (int)left + 1);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return 0;
    }
}

static int send_all(CURL *curl, int fd, const void *data, size_t n, double deadline,
                    struct err *err)
{
    const char *p = data;
    size_t off = 0;
    while (off < n) {
        size_t sent = 0;
        CURLcode rc = curl_easy_send(curl, p + off, n - off, &sent);
        if (rc == CURLE_AGAIN) {
            if (wait_fd(fd, POLLOUT, deadline) < 0)
                return err_set(err, ERR_TIMEOUT, "sending to the container engine timed out");
            continue;
        }
        if (rc != CURLE_OK)
            return err_set(err, ERR_ENGINE, "sending to the container engine: %s",
                           curl_easy_strerror(rc));
        off += sent;
    }
    return 0;
}

/* Reads into b (up to its cap) until done() is true, EOF, or the deadline.
 * Returns 1 when done, 0 at EOF, -1 on error or timeout. */
static int recv_until(CURL *curl, int fd, struct buf *b, double deadline,
                      int (*done)(const struct buf *, void *), void *ctx, struct err *err)
{
    char chunk[4096];
    while (!done(b, ctx)) {
        size_t room = b->max - b->len;
        if (room == 0)
            return err_set(err, ERR_TOO_BIG, "the container engine's answer head is over %zu bytes",
                           b->max);
        size_t want = room < sizeof(chunk) ? room : sizeof(chunk);
        size_t got = 0;
        CURLcode rc = curl_easy_recv(curl, chunk, want, &got);
        if (rc == CURLE_AGAIN) {
            if (wait_fd(fd, POLLIN, deadline) < 0)
                return err_set(err, ERR_TIMEOUT, "the container engine did not answer in time");
            continue;
        }
        if (rc != CURLE_OK)
            return err_set(err, ERR_ENGINE, "reading from the container engine: %s",
                           curl_easy_strerror(rc));
        if (got == 0)
            return 0;
        if (buf_add(b, chunk, got) < 0)
            return err_set(err, ERR_INTERNAL, "buffer cap mismatch");
    }
    return 1;
}

static const char *find_bytes(const char *hay, size_t n, const char *needle, size_t m)
{
    if (!hay || n < m)
        return NULL;
    return memmem(hay, n, needle, m);
}

static int head_done(const struct buf *b, void *ctx)
{
    (void)ctx;
    return find_bytes(b->data, b->len, "\r\n\r\n", 4) != NULL;
}

struct body_want {
    size_t head_len;
    long long content_length; /* -1 when absent */
    bool chunked;
};

static int body_done(const struct buf *b, void *ctx)
{
    const struct body_want *w = ctx;
    size_t have = b->len - w->head_len;
    if (w->content_length >= 0)
        return (long long)have >= w->content_length;
    if (w->chunked)
        return have >= 5 && memcmp(b->data + b->len - 5, "0\r\n\r\n", 5) == 0;
    return 0; /* until EOF */
}

/* Case-insensitive match of a header line's name (line is not
 * NUL-terminated). Returns the value start or NULL. */
static const char *header_value(const char *line, size_t len, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    if (len <= nl || line[nl] != ':')
        return NULL;
    for (size_t i = 0; i < nl; i++)
        if (tolower((unsigned char)line[i]) != name[i])
            return NULL;
    size_t i = nl + 1;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    size_t end = len;
    while (end > i && (line[end - 1] == ' ' || line[end - 1] == '\t'))
        end--;
    *vlen = end - i;
    return line + i;
}

static bool value_is(const char *v, size_t n, const char *want)
{
    size_t wn = strlen(want);
    if (n != wn)
        return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)v[i]) != want[i])
            return false;
    return true;
}

int engine_http_parse_head(const char *head, size_t n, long *status, long long *content_length,
                           bool *chunked, struct err *err)
{
    const char *eol = find_bytes(head, n, "\r\n", 2);
    size_t l0 = eol ? (size_t)(eol - head) : 0;
    if (l0 < 12 || memcmp(head, "HTTP/1.", 7) != 0 || head[8] != ' ' ||
        !isdigit((unsigned char)head[9]) || !isdigit((unsigned char)head[10]) ||
        !isdigit((unsigned char)head[11]) || (l0 > 12 && head[12] != ' '))
        return err_set(err, ERR_PROTOCOL, "the container engine sent a malformed status line");
    *status = (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');

    *content_length = -1;
    *chunked = false;
    const char *p = eol + 2;
    const char *end = head + n;
    while (p < end) {
        const char *e = find_bytes(p, (size_t)(end - p), "\r\n", 2);
        if (!e || e == p)
            break;
        size_t len = (size_t)(e - p), vlen = 0;
        const char *v;
        if ((v = header_value(p, len, "content-length", &vlen))) {
            long long cl = 0;
            for (size_t i = 0; i < vlen; i++) {
                if (!isdigit((unsigned char)v[i]) || cl > (1LL << 40))
                    return err_set(err, ERR_PROTOCOL,
                                   "the container engine sent a bad Content-Length");
                cl = cl * 10 + (v[i] - '0');
            }
            *content_length = cl;
        } else if ((v = header_value(p, len, "transfer-encoding", &vlen))) {
            *chunked = value_is(v, vlen, "chunked");
        }
        p = e + 2;
    }
    return 0;
}

size_t engine_http_dechunk(char *b, size_t n)
{
    size_t in = 0, out = 0;
    while (in < n) {
        size_t sz = 0, i = in;
        while (i < n && isxdigit((unsigned char)b[i]) && sz < ENGINE_HTTP_MAX_ERROR_BODY) {
            int c = tolower((unsigned char)b[i]);
            sz = sz * 16 + (size_t)(c <= '9' ? c - '0' : c - 'a' + 10);
            i++;
        }
        const char *e = find_bytes(b + i, n - i, "\r\n", 2);
        if (i == in || !e || sz == 0)
            break;
        i = (size_t)(e - b) + 2;
        if (sz > n - i)
            sz = n - i;
        memmove(b + out, b + i, sz);
        out += sz;
        in = i + sz + 2;
    }
    return out;
}

static size_t refusal_body(CURL *curl, int fd, struct buf *b, size_t head_len, struct body_want *w,
                           double deadline)
{
    /* Read the (short) error body for the engine's message; a failure
     * here only loses the message. */
    w->head_len = head_len;
    double soon = util_now_ms() + 2000.0;
    if (soon < deadline)
        deadline = soon;
    b->max = head_len + ENGINE_HTTP_MAX_ERROR_BODY;
    struct err ignore = ERR_INIT;
    if (recv_until(curl, fd, b, deadline, body_done, w, &ignore) < 0)
        err_clear(&ignore);
    size_t blen = b->len - head_len;
    if (w->content_length >= 0 && (long long)blen > w->content_length)
        blen = (size_t)w->content_length;
    if (w->chunked)
        blen = engine_http_dechunk(b->data + head_len, blen);
    return blen;
}

/* Connects with curl and returns the handle and its socket. */
static CURL *connect_only(const char *socket_path, const char *path, long timeout_ms, int *fd,
                          struct err *err)
{
    char errbuf[CURL_ERROR_SIZE];
    CURL *curl = new_handle(socket_path, path, timeout_ms, errbuf, err);
    if (!curl)
        return NULL;
    /* CONNECT_ONLY makes curl open the socket and stop: we speak the
     * upgrade ourselves because curl would not hand over the raw stream. */
    curl_easy_setopt(curl, CURLOPT_CONNECT_ONLY, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    CURLcode rc = curl_easy_perform(curl);
    if (rc == CURLE_OPERATION_TIMEDOUT) {
        err_set(err, ERR_TIMEOUT, "connecting to the container engine at unix://%s timed out",
                socket_path);
        goto fail;
    }
    if (rc != CURLE_OK) {
        long os_errno = 0;
        curl_easy_getinfo(curl, CURLINFO_OS_ERRNO, &os_errno);
        connect_error(socket_path, rc, os_errno, err);
        goto fail;
    }
    curl_socket_t sock = CURL_SOCKET_BAD;
    rc = curl_easy_getinfo(curl, CURLINFO_ACTIVESOCKET, &sock);
    if (rc != CURLE_OK || sock == CURL_SOCKET_BAD) {
        err_set(err, ERR_INTERNAL, "no socket from curl after connecting to the engine");
        goto fail;
    }
    /* errbuf lives on this stack frame; the handle outlives it. */
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, NULL);
    *fd = (int)sock;
    return curl;
fail:
    curl_easy_cleanup(curl);
    return NULL;
}

int engine_http_upgrade(const char *socket_path, const char *path, long timeout_ms,
                        struct engine_http_conn **out, struct err *err)
{
    int ret = -1, fd = -1;
    char *req = NULL, *msg = NULL;
    struct buf b;
    buf_init(&b, ENGINE_HTTP_MAX_HEAD);
    double t0 = util_now_ms();
    double deadline = t0 + (double)timeout_ms;
    int plen = path_len_for_msg(path);

    CURL *curl = connect_only(socket_path, path, timeout_ms, &fd, err);
    if (!curl)
        goto out;

    req = xasprintf("POST %s HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\n"
                    "Upgrade: tcp\r\nContent-Length: 0\r\n\r\n",
                    path);
    if (send_all(curl, fd, req, strlen(req), deadline, err) < 0)
        goto wrap;

    int r = recv_until(curl, fd, &b, deadline, head_done, NULL, err);
    if (r < 0)
        goto wrap;
    if (r == 0) {
        err_set(err, ERR_ENGINE, "the container engine closed the connection without an answer");
        goto wrap;
    }

    const char *hend = find_bytes(b.data, b.len, "\r\n\r\n", 4);
    size_t head_len = (size_t)(hend - b.data) + 4;
    long status = 0;
    struct body_want w;
    if (engine_http_parse_head(b.data, head_len, &status, &w.content_length, &w.chunked, err) < 0)
        goto wrap;

    if (status != 101 && status != 200) {
        size_t blen = refusal_body(curl, fd, &b, head_len, &w, deadline);
        msg = engine_http_message(b.data + head_len, blen);
        err_set(err, status == 404 ? ERR_NOT_FOUND : ERR_ENGINE,
                "the container engine at unix://%s refused POST %.*s (HTTP %ld): %s", socket_path,
                plen, path, status, msg ? msg : "no message");
        goto out;
    }
    if (w.chunked || w.content_length > 0) {
        /* A framed body instead of a raw stream would corrupt the
         * demultiplexer; no supported engine does this. */
        err_set(err, ERR_PROTOCOL, "the container engine answered the attach with a framed body");
        goto wrap;
    }

    struct engine_http_conn *c = xcalloc(1, sizeof(*c));
    c->curl = curl;
    c->fd = fd;
    c->pending_len = b.len - head_len;
    if (c->pending_len) {
        c->pending = xmalloc(c->pending_len);
        memcpy(c->pending, b.data + head_len, c->pending_len);
    }
    log_debug("engine upgrade %.*s -> %ld (%.1f ms, %zu bytes early)", plen, path, status,
              util_now_ms() - t0, c->pending_len);
    curl = NULL;
    *out = c;
    ret = 0;
    goto out;

wrap:
    err_wrap(err, "attach POST %.*s on unix://%s", plen, path, socket_path);
out:
    free(req);
    free(msg);
    buf_free(&b);
    if (curl)
        curl_easy_cleanup(curl);
    return ret;
}

int engine_http_conn_fd(const struct engine_http_conn *c)
{
    return c->fd;
}

int engine_http_conn_send(struct engine_http_conn *c, const void *data, size_t n, long timeout_ms,
                          struct err *err)
{
    return send_all(c->curl, c->fd, data, n, util_now_ms() + (double)timeout_ms, err);
}

long engine_http_conn_recv(struct engine_http_conn *c, void *data, size_t n, struct err *err)
{
    if (n == 0)
        return -2;
    if (c->pending_off < c->pending_len) {
        size_t take = c->pending_len - c->pending_off;
        if (take > n)
            take = n;
        memcpy(data, c->pending + c->pending_off, take);
        c->pending_off += take;
        if (c->pending_off == c->pending_len) {
            free(c->pending);
            c->pending = NULL;
            c->pending_len = c->pending_off = 0;
        }
        return (long)take;
    }
    size_t got = 0;
    CURLcode rc = curl_easy_recv(c->curl, data, n, &got);
    if (rc == CURLE_AGAIN)
        return -2;
    if (rc != CURLE_OK)
        return err_set(err, ERR_ENGINE, "reading the attach stream: %s", curl_easy_strerror(rc));
    return (long)got;
}

int engine_http_conn_pending(const struct engine_http_conn *c)
{
    return c->pending_off < c->pending_len;
}

void engine_http_conn_close(struct engine_http_conn *c)
{
    if (!c)
        return;
    curl_easy_cleanup(c->curl);
    free(c->pending);
    free(c);
}
