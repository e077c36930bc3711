/* The loopback HTTPS server of tls_server.h. */
#include "fake_kube/tls_server.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct tls_server {
    int fd;
    int port;
    char url[48];
    SSL_CTX *ctx;
    tls_server_fn fn;
    void *arg;
    pthread_t thread;
};

static void *serve(void *arg)
{
    struct tls_server *s = arg;
    for (;;) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        SSL *ssl = SSL_new(s->ctx);
        SSL_set_fd(ssl, c);
        if (SSL_accept(ssl) == 1) {
            s->fn(s->arg, ssl);
            SSL_shutdown(ssl);
        }
        SSL_free(ssl);
        close(c);
    }
}

struct tls_server *tls_server_start(struct egress_tls_ca *ca, tls_server_fn fn, void *ctx)
{
    struct tls_server *s = calloc(1, sizeof(*s));
    struct err err = ERR_INIT;
    if (!s || egress_tls_ca_leaf(ca, "127.0.0.1", &s->ctx, &err) < 0) {
        fprintf(stderr, "tls_server: %s\n", err_msg(&err));
        err_clear(&err);
        free(s);
        return NULL;
    }
    s->fn = fn;
    s->arg = ctx;
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        getsockname(s->fd, (struct sockaddr *)&sa, &sl) < 0 || listen(s->fd, 8) < 0 ||
        pthread_create(&s->thread, NULL, serve, s) != 0) {
        if (s->fd >= 0)
            close(s->fd);
        SSL_CTX_free(s->ctx);
        free(s);
        return NULL;
    }
    s->port = ntohs(sa.sin_port);
    snprintf(s->url, sizeof(s->url), "https://127.0.0.1:%d", s->port);
    return s;
}

int tls_server_port(const struct tls_server *s)
{
    return s->port;
}

const char *tls_server_url(const struct tls_server *s)
{
    return s->url;
}

void tls_server_stop(struct tls_server *s)
{
    shutdown(s->fd, SHUT_RDWR);
    pthread_join(s->thread, NULL);
    close(s->fd);
    SSL_CTX_free(s->ctx);
    free(s);
}

int tls_ca_setup(char *dir, struct egress_tls_ca **ca)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct err err = ERR_INIT;
    snprintf(dir, 64, "/tmp/test_kube-XXXXXX");
    if (!mkdtemp(dir) || egress_tls_ca_new(dir, "", ca, &err) < 0) {
        fprintf(stderr, "tls_ca_setup: %s\n", err_msg(&err));
        err_clear(&err);
        return -1;
    }
    return 0;
}

int tls_ca_teardown(char *dir, struct egress_tls_ca *ca)
{
    egress_tls_ca_free(ca);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    int rc = system(cmd) == 0 ? 0 : -1;
    curl_global_cleanup();
    return rc;
}

struct kube_api *tls_server_client(const struct tls_server *s, struct egress_tls_ca *ca,
                                   char *token)
{
    char server[64], ca_file[256];
    snprintf(server, sizeof(server), "%s", s->url);
    snprintf(ca_file, sizeof(ca_file), "%s", egress_tls_ca_path(ca));
    struct kube_config cfg = {.server = server, .ca_file = ca_file, .token = token};
    struct kube_api *a = NULL;
    struct err err = ERR_INIT;
    if (kube_api_new(&cfg, &a, &err) < 0) {
        fprintf(stderr, "tls_server_client: %s\n", err_msg(&err));
        err_clear(&err);
    }
    return a;
}

void tls_put(SSL *ssl, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        int w = SSL_write(ssl, p, (int)n);
        if (w <= 0)
            return;
        p += w, n -= (size_t)w;
    }
}

void tls_puts(SSL *ssl, const char *s)
{
    tls_put(ssl, s, strlen(s));
}

void tls_chunk(SSL *ssl, const char *s)
{
    char size[32];
    snprintf(size, sizeof(size), "%zx\r\n", strlen(s));
    tls_puts(ssl, size);
    tls_puts(ssl, s);
    tls_puts(ssl, "\r\n");
}

size_t tls_read_request(SSL *ssl, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    while (len < cap - 1) {
        int r = SSL_read(ssl, buf + len, (int)(cap - 1 - len));
        if (r <= 0)
            break;
        len += (size_t)r;
        buf[len] = '\0';
        const char *end = strstr(buf, "\r\n\r\n");
        if (!end)
            continue;
        const char *cl = strcasestr(buf, "Content-Length:");
        size_t want = (size_t)(end + 4 - buf) + (cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0);
        if (len >= want)
            break;
    }
    return len;
}

int tls_take_request(SSL *ssl, char *buf, size_t cap, struct tls_request *r)
{
    size_t n = tls_read_request(ssl, buf, cap);
    const char *eol = strstr(buf, "\r\n");
    const char *end = strstr(buf, "\r\n\r\n");
    if (!eol || !end)
        return -1;
    size_t ll = (size_t)(eol - buf);
    if (ll >= sizeof(r->line))
        ll = sizeof(r->line) - 1;
    memcpy(r->line, buf, ll);
    r->line[ll] = '\0';
    r->head = buf;
    r->body = end + 4;
    r->body_len = n - (size_t)(r->body - buf);
    return 0;
}

void tls_answer_json(SSL *ssl, const char *status, const char *body)
{
    char head[256];
    snprintf(head, sizeof(head),
             "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", status,
             strlen(body));
    tls_puts(ssl, head);
    tls_puts(ssl, body);
}

void tls_drain(SSL *ssl)
{
    char b[256];
    while (SSL_read(ssl, b, sizeof(b)) > 0)
        ;
}

int tls_read_full(SSL *ssl, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        int r = SSL_read(ssl, p, (int)n);
        if (r <= 0)
            return -1;
        p += r, n -= (size_t)r;
    }
    return 0;
}
