/* HTTPS to the Kubernetes API server with libcurl (kube_api.h). curl's
 * model of errors and timeouts for the cluster stays in this file, as
 * engine_http.c keeps it for the Docker engine; that is why it runs
 * past 600 lines. */
#include "backend/kubernetes/kube_api.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "base/log.h"
#include "base/util.h"

/* The most of a refused watch's body kept (a Status is a few hundred
 * bytes). */
#define KUBE_API_MAX_REFUSAL (64u * 1024u)

struct kube_api {
    char *server;       /* "https://host:port" and any path prefix (a proxy's) */
    char *authority;    /* "host:port", an upgrade's Host */
    const char *prefix; /* the path prefix, "" or "/a/b", in server */
    char *ca_file, *ca_pem;
    char *cert_file, *key_file, *cert_pem, *key_pem;
    pthread_mutex_t mu; /* guards the token's three fields */
    char *token, *token_file;
    double token_read_ms, token_reread_ms;
};

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

/* The server's address goes into URLs and, for an upgrade, into the Host
 * line of a request written by hand: only an authority of host (a name,
 * an IPv4 or a bracketed IPv6 address) and port, and a path of visible
 * characters, no user part, query or fragment. */
static bool server_ok(const char *s)
{
    if (strncmp(s, "https://", 8) != 0 || strlen(s) > KUBE_API_MAX_PATH)
        return false;
    const char *auth = s + 8;
    size_t alen = strcspn(auth, "/");
    if (alen == 0)
        return false;
    for (size_t i = 0; i < alen; i++)
        if (!isalnum((unsigned char)auth[i]) && !strchr(".-:[]", auth[i]))
            return false;
    for (const char *p = auth + alen; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || strchr("?#%\\", *p))
            return false;
    return true;
}

int kube_api_new(const struct kube_config *cfg, struct kube_api **out, struct err *err)
{
    *out = NULL;
    if (!cfg->server || !server_ok(cfg->server))
        return err_set(err, ERR_INVALID,
                       "the Kubernetes API server must be an https:// address (host, port and "
                       "path only)");
    struct kube_api *a = xcalloc(1, sizeof(*a));
    a->server = xstrdup(cfg->server);
    /* "https://host:6443/" and "https://host:6443" name the same API. */
    size_t n = strlen(a->server);
    while (n > 8 && a->server[n - 1] == '/')
        a->server[--n] = '\0';
    const char *slash = strchr(a->server + 8, '/');
    a->prefix = slash ? slash : "";
    a->authority = xstrndup(a->server + 8, slash ? (size_t)(slash - a->server - 8) : n - 8);
    a->ca_file = dup_or_null(cfg->ca_file);
    a->ca_pem = dup_or_null(cfg->ca_pem);
    a->cert_file = dup_or_null(cfg->cert_file);
    a->key_file = dup_or_null(cfg->key_file);
    a->cert_pem = dup_or_null(cfg->cert_pem);
    a->key_pem = dup_or_null(cfg->key_pem);
    a->token = dup_or_null(cfg->token);
    a->token_file = dup_or_null(cfg->token_file);
    a->token_read_ms = util_now_ms();
    a->token_reread_ms = KUBE_API_TOKEN_REREAD_S * 1e3;
    pthread_mutex_init(&a->mu, NULL);
    *out = a;
    return 0;
}

/* Secrets leave memory wiped. */
static void free_secret(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

void kube_api_free(struct kube_api *a)
{
    if (!a)
        return;
    free(a->server);
    free(a->authority);
    free(a->ca_file);
    free(a->ca_pem);
    free(a->cert_file);
    free(a->key_file);
    free(a->cert_pem);
    free_secret(a->key_pem);
    free_secret(a->token);
    free(a->token_file);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

void kube_api_set_token_reread_ms(struct kube_api *a, double ms)
{
    pthread_mutex_lock(&a->mu);
    a->token_reread_ms = ms;
    pthread_mutex_unlock(&a->mu);
}

const char *kube_api_server(const struct kube_api *a)
{
    return a->server;
}

/* A copy of the token for one request (NULL: none), read again from its
 * file once it has aged; the file is read outside the lock. */
static char *token_copy(struct kube_api *a)
{
    pthread_mutex_lock(&a->mu);
    bool stale = a->token_file && util_now_ms() - a->token_read_ms >= a->token_reread_ms;
    char *path = stale ? xstrdup(a->token_file) : NULL;
    if (stale)
        a->token_read_ms = util_now_ms(); /* one reader at a time rereads */
    pthread_mutex_unlock(&a->mu);
    if (path) {
        struct err err = ERR_INIT;
        char *fresh = kube_config_read_token(path, "the token file", &err);
        if (!fresh)
            log_warn("Kubernetes API: keeping the token read before: %s", err.msg);
        err_clear(&err);
        free(path);
        if (fresh) {
            pthread_mutex_lock(&a->mu);
            char *old = a->token;
            a->token = fresh;
            pthread_mutex_unlock(&a->mu);
            free_secret(old);
        }
    }
    pthread_mutex_lock(&a->mu);
    char *t = dup_or_null(a->token);
    pthread_mutex_unlock(&a->mu);
    return t;
}

static void set_blob(CURL *c, CURLoption opt, char *pem)
{
    struct curl_blob b = {.data = pem, .len = strlen(pem), .flags = CURL_BLOB_COPY};
    curl_easy_setopt(c, opt, &b);
}

/* A handle for path with the server's trust and the daemon's credential
 * set; token stays the caller's and must outlive the transfer. */
static CURL *new_handle(const struct kube_api *a, const char *path, long timeout_ms,
                        const char *token, char *errbuf, struct err *err)
{
    /* curl reads 0 as "no timeout": every request must have one. */
    if (timeout_ms <= 0) {
        err_set(err, ERR_INTERNAL, "Kubernetes API request without a timeout");
        return NULL;
    }
    if (path[0] != '/' || strlen(path) > KUBE_API_MAX_PATH) {
        err_set(err, ERR_INTERNAL, "Kubernetes API path must start with '/' and be short");
        return NULL;
    }
    CURL *c = curl_easy_init();
    if (!c) {
        err_set(err, ERR_INTERNAL, "curl_easy_init failed");
        return NULL;
    }
    cleanup_free char *url = xasprintf("%s%s", a->server, path);
    errbuf[0] = '\0';
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    /* Timeouts must not use SIGALRM: the daemon is multi-threaded. */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    if (a->ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, a->ca_file);
    else if (a->ca_pem)
        set_blob(c, CURLOPT_CAINFO_BLOB, a->ca_pem);
    if (a->cert_file)
        curl_easy_setopt(c, CURLOPT_SSLCERT, a->cert_file);
    else if (a->cert_pem)
        set_blob(c, CURLOPT_SSLCERT_BLOB, a->cert_pem);
    if (a->key_file)
        curl_easy_setopt(c, CURLOPT_SSLKEY, a->key_file);
    else if (a->key_pem)
        set_blob(c, CURLOPT_SSLKEY_BLOB, a->key_pem);
    if (token) {
        /* One method named: curl sends it with the first request. */
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
        curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, token);
    }
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    return c;
}

static struct curl_slist *json_headers(bool body, struct err *err)
{
    /* "Expect:" disables 100-continue; a bare "Content-Type:" drops
     * curl's form type on a bodiless POST. */
    const char *hv[] = {"Accept: application/json",
                        "Expect:", body ? "Content-Type: application/json" : "Content-Type:"};
    struct curl_slist *hdrs = NULL;
    for (size_t i = 0; i < ARRAY_SIZE(hv); i++) {
        struct curl_slist *t = curl_slist_append(hdrs, hv[i]);
        if (!t) {
            curl_slist_free_all(hdrs);
            err_set(err, ERR_INTERNAL, "curl_slist_append failed");
            return NULL;
        }
        hdrs = t;
    }
    return hdrs;
}

/* The path without its query, for messages: a label selector adds
 * nothing a reader needs. */
static int path_len_for_msg(const char *path)
{
    const char *q = strchr(path, '?');
    return (int)(q ? (size_t)(q - path) : strlen(path));
}

static int transport_error(const struct kube_api *a, CURLcode rc, const char *method,
                           const char *path, long timeout_ms, const char *errbuf, struct err *err)
{
    int plen = path_len_for_msg(path);
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return err_set(err, ERR_TIMEOUT,
                       "the Kubernetes API at %s did not answer %s %.*s within %ld ms", a->server,
                       method, plen, path, timeout_ms);
    const char *hint = "";
    if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE)
        hint = " (its certificate does not verify against the configured CA)";
    else if (rc == CURLE_SSL_CERTPROBLEM)
        hint = " (the client certificate or its key cannot be used)";
    return err_set(err, ERR_ENGINE, "cannot reach the Kubernetes API at %s: %s %.*s: %s%s",
                   a->server, method, plen, path, errbuf[0] ? errbuf : curl_easy_strerror(rc),
                   hint);
}

struct sink {
    struct buf *b;
    bool too_big;
};

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    struct sink *s = ud;
    size_t n = size * nmemb;
    if (n > KUBE_API_MAX_RESPONSE - s->b->len || buf_add(s->b, p, n) < 0) {
        s->too_big = true;
        return 0; /* makes curl stop with CURLE_WRITE_ERROR */
    }
    return n;
}

int kube_api_request(struct kube_api *a, const char *method, const char *path, const char *body,
                     size_t body_len, long timeout_ms, long *status, struct buf *resp,
                     struct err *err)
{
    char errbuf[CURL_ERROR_SIZE];
    char *token = token_copy(a);
    struct curl_slist *hdrs = NULL;
    int ret = -1;
    CURL *c = new_handle(a, path, timeout_ms, token, errbuf, err);
    if (!c)
        goto out;
    hdrs = json_headers(body != NULL, err);
    if (!hdrs)
        goto out;
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    bool is_post = strcmp(method, "POST") == 0;
    if (body || is_post) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body_len : 0));
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
    }
    if (!is_post && (body || strcmp(method, "GET") != 0))
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    struct sink sink = {resp, false};
    buf_reset(resp);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);

    double t0 = util_now_ms();
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_WRITE_ERROR && sink.too_big) {
        err_set(err, ERR_TOO_BIG, "the Kubernetes API's answer to %s %.*s is over the %u-byte cap",
                method, path_len_for_msg(path), path, KUBE_API_MAX_RESPONSE);
        goto out;
    }
    if (rc != CURLE_OK) {
        transport_error(a, rc, method, path, timeout_ms, errbuf, err);
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    log_debug("kube %s %.*s -> %ld (%.1f ms)", method, path_len_for_msg(path), path, *status,
              util_now_ms() - t0);
    ret = 0;
out:
    curl_slist_free_all(hdrs);
    if (c)
        curl_easy_cleanup(c);
    free_secret(token);
    return ret;
}

/* A watch's state: events are cut at newlines; a refusal's body is kept
 * whole (capped) for kube_api_refusal. */
struct watch {
    CURL *curl;
    struct buf line;
    kube_api_event_fn on_event;
    void *ctx;
    const atomic_bool *stop;
    bool refused, too_big, done;
};

static size_t on_watch(char *p, size_t size, size_t nmemb, void *ud)
{
    struct watch *w = ud;
    size_t n = size * nmemb;
    if (!w->refused) {
        long status = 0;
        curl_easy_getinfo(w->curl, CURLINFO_RESPONSE_CODE, &status);
        w->refused = status >= 300;
    }
    if (w->refused) {
        size_t room = KUBE_API_MAX_REFUSAL - w->line.len;
        if (buf_add(&w->line, p, n < room ? n : room) < 0)
            return 0;
        return n;
    }
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(p + i, '\n', n - i);
        size_t seg = nl ? (size_t)(nl - (p + i)) : n - i;
        if (buf_add(&w->line, p + i, seg) < 0) {
            w->too_big = true;
            return 0;
        }
        i += seg;
        if (!nl)
            break;
        i++;
        if (w->line.len > 0 && w->on_event(w->ctx, w->line.data, w->line.len) != 0) {
            w->done = true;
            return 0;
        }
        buf_reset(&w->line);
    }
    return n;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    const struct watch *w = ud;
    return w->stop && atomic_load(w->stop) ? 1 : 0;
}

int kube_api_watch(struct kube_api *a, const char *path, long timeout_ms,
                   kube_api_event_fn on_event, void *ctx, const atomic_bool *stop, bool *timed_out,
                   struct err *err)
{
    char errbuf[CURL_ERROR_SIZE];
    char *token = token_copy(a);
    struct curl_slist *hdrs = NULL;
    struct watch w = {.on_event = on_event, .ctx = ctx, .stop = stop};
    buf_init(&w.line, KUBE_API_MAX_EVENT);
    int ret = -1;
    *timed_out = false;
    w.curl = new_handle(a, path, timeout_ms, token, errbuf, err);
    if (!w.curl)
        goto out;
    hdrs = json_headers(false, err);
    if (!hdrs)
        goto out;
    curl_easy_setopt(w.curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(w.curl, CURLOPT_WRITEFUNCTION, on_watch);
    curl_easy_setopt(w.curl, CURLOPT_WRITEDATA, &w);
    curl_easy_setopt(w.curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(w.curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(w.curl, CURLOPT_XFERINFODATA, &w);

    CURLcode rc = curl_easy_perform(w.curl);
    long status = 0;
    curl_easy_getinfo(w.curl, CURLINFO_RESPONSE_CODE, &status);
    if (w.refused) {
        kube_api_refusal(status, w.line.data, w.line.len, "watching", err);
        goto out;
    }
    if (w.too_big) {
        err_set(err, ERR_TOO_BIG, "a Kubernetes watch event on %.*s is over the %u-byte cap",
                path_len_for_msg(path), path, KUBE_API_MAX_EVENT);
        goto out;
    }
    if (rc == CURLE_OPERATION_TIMEDOUT && status == 200) {
        *timed_out = true;
        ret = 0;
        goto out;
    }
    if (rc == CURLE_OK || w.done || rc == CURLE_ABORTED_BY_CALLBACK) {
        ret = 0;
        goto out;
    }
    transport_error(a, rc, "GET", path, timeout_ms, errbuf, err);
out:
    curl_slist_free_all(hdrs);
    if (w.curl)
        curl_easy_cleanup(w.curl);
    buf_free(&w.line);
    free_secret(token);
    return ret;
}

static enum err_code refusal_code(long status)
{
    switch (status) {
    case 404:
        return ERR_NOT_FOUND;
    case 408:
    case 504:
        return ERR_TIMEOUT;
    case 413:
        return ERR_TOO_BIG;
    default:
        return ERR_ENGINE;
    }
}

int kube_api_refusal(long status, const char *body, size_t len, const char *what, struct err *err)
{
    cleanup_free char *reason = NULL;
    cleanup_free char *message = NULL;
    json_object *o = NULL;
    if (body && len > 0 && len <= KUBE_API_MAX_RESPONSE) {
        json_tokener *tok = json_tokener_new();
        if (tok) {
            o = json_tokener_parse_ex(tok, body, (int)len);
            json_tokener_free(tok);
        }
    }
    json_object *kind = NULL, *v = NULL;
    if (o && json_object_object_get_ex(o, "kind", &kind) &&
        json_object_is_type(kind, json_type_string) &&
        strcmp(json_object_get_string(kind), "Status") == 0) {
        if (json_object_object_get_ex(o, "reason", &v) && json_object_is_type(v, json_type_string))
            reason = backend_text(json_object_get_string(v), (size_t)json_object_get_string_len(v));
        if (json_object_object_get_ex(o, "message", &v) && json_object_is_type(v, json_type_string))
            message =
                backend_text(json_object_get_string(v), (size_t)json_object_get_string_len(v));
    } else if (body && len > 0) {
        message = backend_text(body, len);
    }
    json_object_put(o);
    return err_set(err, refusal_code(status), "the Kubernetes API refused %s: %ld%s%s%s%s", what,
                   status, reason ? " " : "", reason ? reason : "", message ? ": " : "",
                   message ? message : "");
}

/* ---- upgraded connections ------------------------------------------- */

struct kube_api_conn {
    CURL *curl;
    int fd;
    char *pending; /* stream bytes read together with the answer head */
    size_t pending_len, pending_off;
};

int kube_api_wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - util_now_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, (int)left + 1);
        if (r > 0 || (r < 0 && errno != EINTR))
            return 0;
    }
}

static int send_all(CURL *curl, int fd, const void *data, size_t n, double deadline,
                    struct err *err)
{
    const char *p = data;
    for (size_t off = 0; off < n;) {
        size_t sent = 0;
        CURLcode rc = curl_easy_send(curl, p + off, n - off, &sent);
        if (rc == CURLE_AGAIN) {
            if (kube_api_wait_fd(fd, POLLOUT, deadline) < 0)
                return err_set(err, ERR_TIMEOUT, "sending to the Kubernetes API timed out");
            continue;
        }
        if (rc != CURLE_OK)
            return err_set(err, ERR_ENGINE, "sending to the Kubernetes API: %s",
                           curl_easy_strerror(rc));
        off += sent;
    }
    return 0;
}

/* A TLS connection to the server, nothing sent yet. */
static CURL *connect_only(struct kube_api *a, const char *path, long timeout_ms, int *fd,
                          struct err *err)
{
    char errbuf[CURL_ERROR_SIZE];
    CURL *curl = new_handle(a, path, timeout_ms, NULL, errbuf, err);
    if (!curl)
        return NULL;
    /* curl would not hand over the raw stream of an upgrade: it opens the
     * connection (TLS included) and stops, and the upgrade is ours. HTTP/2
     * has no upgrade, so only http/1.1 is offered in ALPN. */
    curl_easy_setopt(curl, CURLOPT_CONNECT_ONLY, 1L);
    curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    CURLcode rc = curl_easy_perform(curl);
    if (rc != CURLE_OK) {
        transport_error(a, rc, "GET", path, timeout_ms, errbuf, err);
        goto fail;
    }
    curl_socket_t sock = CURL_SOCKET_BAD;
    rc = curl_easy_getinfo(curl, CURLINFO_ACTIVESOCKET, &sock);
    if (rc != CURLE_OK || sock == CURL_SOCKET_BAD) {
        err_set(err, ERR_INTERNAL, "no socket from curl after connecting to the Kubernetes API");
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

/* Reads into b until it holds "\r\n\r\n", EOF, or the deadline. Returns
 * the head's length, 0 at EOF before the head ends, -1 on error. */
static long recv_head(CURL *curl, int fd, struct buf *b, double deadline, struct err *err)
{
    char chunk[16384]; /* a TLS record's most */
    for (;;) {
        const char *end = b->len >= 4 ? memmem(b->data, b->len, "\r\n\r\n", 4) : NULL;
        if (end)
            return (long)(end + 4 - b->data);
        size_t room = b->max - b->len, got = 0;
        if (room == 0)
            return err_set(err, ERR_TOO_BIG, "the Kubernetes API's answer head is over %zu bytes",
                           b->max);
        CURLcode rc =
            curl_easy_recv(curl, chunk, room < sizeof(chunk) ? room : sizeof(chunk), &got);
        if (rc == CURLE_AGAIN) {
            if (kube_api_wait_fd(fd, POLLIN, deadline) < 0)
                return err_set(err, ERR_TIMEOUT, "the Kubernetes API did not answer in time");
            continue;
        }
        if (rc != CURLE_OK)
            return err_set(err, ERR_ENGINE, "reading from the Kubernetes API: %s",
                           curl_easy_strerror(rc));
        if (got == 0)
            return 0;
        if (buf_add(b, chunk, got) < 0)
            return err_set(err, ERR_INTERNAL, "buffer cap mismatch");
    }
}

int kube_api_upgrade(struct kube_api *a, const char *path, const char *headers, long timeout_ms,
                     struct buf *head, struct kube_api_conn **out, struct err *err)
{
    *out = NULL;
    int fd = -1, ret = -1;
    double deadline = util_now_ms() + (double)timeout_ms;
    char *token = token_copy(a);
    char *req = NULL;
    CURL *curl = connect_only(a, path, timeout_ms, &fd, err);
    if (!curl)
        goto out;
    req = xasprintf("GET %s%s HTTP/1.1\r\nHost: %s\r\n%s%s%s%s\r\n", a->prefix, path, a->authority,
                    token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "",
                    headers);
    int rc = send_all(curl, fd, req, strlen(req), deadline, err);
    explicit_bzero(req, strlen(req));
    if (rc < 0)
        goto out;
    buf_reset(head);
    long head_len = recv_head(curl, fd, head, deadline, err);
    if (head_len < 0)
        goto out;
    if (head_len == 0) {
        err_set(err, ERR_ENGINE, "the Kubernetes API at %s closed the connection without an answer",
                a->server);
        goto out;
    }
    struct kube_api_conn *c = xcalloc(1, sizeof(*c));
    c->curl = curl;
    c->fd = fd;
    c->pending_len = head->len - (size_t)head_len;
    if (c->pending_len > 0) {
        c->pending = xmalloc(c->pending_len);
        memcpy(c->pending, head->data + head_len, c->pending_len);
    }
    head->len = (size_t)head_len;
    curl = NULL;
    *out = c;
    ret = 0;
out:
    free(req);
    free_secret(token);
    if (curl)
        curl_easy_cleanup(curl);
    return ret;
}

int kube_api_conn_fd(const struct kube_api_conn *c)
{
    return c->fd;
}

long kube_api_conn_write(struct kube_api_conn *c, const void *data, size_t n, struct err *err)
{
    size_t sent = 0;
    CURLcode rc = curl_easy_send(c->curl, data, n, &sent);
    if (rc == CURLE_AGAIN)
        return -2;
    if (rc != CURLE_OK)
        return err_set(err, ERR_ENGINE, "writing the Kubernetes API's stream: %s",
                       curl_easy_strerror(rc));
    return (long)sent;
}

long kube_api_conn_recv(struct kube_api_conn *c, void *data, size_t n, struct err *err)
{
    if (n == 0)
        return -2;
    if (c->pending_off < c->pending_len) {
        size_t take = c->pending_len - c->pending_off;
        take = take < n ? take : n;
        memcpy(data, c->pending + c->pending_off, take);
        c->pending_off += take;
        return (long)take;
    }
    size_t got = 0;
    CURLcode rc = curl_easy_recv(c->curl, data, n, &got);
    if (rc == CURLE_AGAIN)
        return -2;
    if (rc != CURLE_OK)
        return err_set(err, ERR_ENGINE, "reading the Kubernetes API's stream: %s",
                       curl_easy_strerror(rc));
    return (long)got;
}

void kube_api_conn_close(struct kube_api_conn *c)
{
    if (!c)
        return;
    curl_easy_cleanup(c->curl);
    free(c->pending);
    free(c);
}
