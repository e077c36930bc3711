/* egress/intercept.c through egress_serve: a tunnel to a host bound to a
 * --secret has its TLS terminated with the daemon's CA, and the upstream
 * (a loopback TLS server whose certificate a second, "upstream" CA signs,
 * trusted as --egress-upstream-ca would be) receives the real value in a
 * header and in the query of two requests on one keep-alive connection;
 * a tunnel to an unbound host stays raw (the client sees the upstream's
 * own certificate); an upstream whose certificate does not verify gets
 * the sandbox a 502 and the summary a reason; a client that does not
 * trust the daemon's CA fails its handshake; the run's stop ends an
 * intercepted connection at once. Nothing is timed. */
#include "gateway_rig.h"

#include <openssl/err.h>
#include <signal.h>
#include <openssl/ssl.h>

#include "egress/tls.h"

#define VALUE     "s3cr3t-Value-0123456789"
#define RESP      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
#define GOT_CAP   (16 * 1024)
#define ANSWER_SZ 4096

static char *dir;
static struct egress_tls_ca *ca;    /* the daemon's */
static struct egress_tls_ca *up_ca; /* signs the upstream's certificate */
static SSL_CTX *upstream_tls;       /* trusts up_ca */
static struct egress_secrets *table;
static struct egress_run_secrets *rs;

static int ic_setup(void **state)
{
    if (setup(state) < 0)
        return -1;
    dir = strdup("/tmp/test_intercept-XXXXXX");
    if (!dir || !mkdtemp(dir))
        return -1;
    char sub[256];
    snprintf(sub, sizeof(sub), "%s/up", dir);
    struct err err = ERR_INIT;
    if (egress_tls_ca_new(dir, "", &ca, &err) < 0 || egress_tls_ca_new(sub, "", &up_ca, &err) < 0 ||
        egress_tls_client_new(egress_tls_ca_path(up_ca), &upstream_tls, &err) < 0)
        return -1;
    policy->ca = ca;
    policy->upstream_tls = upstream_tls;
    return 0;
}

static int ic_teardown(void **state)
{
    egress_run_secrets_free(rs);
    egress_secrets_free(table);
    rs = NULL;
    table = NULL;
    SSL_CTX_free(upstream_tls);
    egress_tls_ca_free(up_ca);
    egress_tls_ca_free(ca);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
    return teardown(state);
}

/* TOKEN bound to up.test:port. */
static void bind_secret(unsigned port)
{
    char item[64];
    snprintf(item, sizeof(item), "TOKEN=up.test:%u", port);
    char *items[] = {item};
    char *env[] = {"TOKEN=" VALUE, NULL};
    struct err err = ERR_INIT;
    assert_int_equal(egress_secrets_new(items, 1, env, NULL, &table, &err), 0);
    assert_int_equal(egress_run_secrets_new(table, &rs, &err), 0);
    policy->secrets = rs;
}

/* ---- the TLS upstream ---------------------------------------------------- */

struct tls_up {
    int lfd;
    unsigned port;
    pthread_t t;
    bool handshake_ok;
    size_t got_len;
    char got[GOT_CAP];
};

/* Answers RESP to every request head, until the end. */
static void *tls_up_main(void *arg)
{
    struct tls_up *up = arg;
    int fd = accept(up->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    SSL_CTX *ctx = NULL;
    struct err err = ERR_INIT;
    if (egress_tls_ca_leaf(up_ca, "up.test", &ctx, &err) < 0) {
        close(fd);
        return NULL;
    }
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    up->handshake_ok = SSL_accept(ssl) == 1;
    size_t answered = 0;
    while (up->handshake_ok) {
        int n = SSL_read(ssl, up->got + up->got_len, (int)(GOT_CAP - 1 - up->got_len));
        if (n <= 0)
            break;
        up->got_len += (size_t)n;
        up->got[up->got_len] = '\0';
        size_t heads = 0;
        for (const char *p = up->got; (p = strstr(p, "\r\n\r\n")) != NULL; p += 4)
            heads++;
        for (; answered < heads; answered++)
            SSL_write(ssl, RESP, (int)strlen(RESP));
    }
    if (up->handshake_ok)
        SSL_shutdown(ssl); /* a clean end, which the gateway passes on */
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    close(fd);
    return NULL;
}

static struct tls_up *tls_up_start(void)
{
    struct tls_up *up = calloc(1, sizeof(*up));
    assert_non_null(up);
    up->lfd = loopback_socket(&up->port);
    assert_int_equal(listen(up->lfd, 8), 0);
    assert_int_equal(pthread_create(&up->t, NULL, tls_up_main, up), 0);
    allow_pattern("up.test", up->port);
    return up;
}

/* Waits for the upstream's connection to end. */
static void tls_up_wait(struct tls_up *up)
{
    if (up->lfd < 0)
        return;
    pthread_join(up->t, NULL);
    close(up->lfd);
    up->lfd = -1;
}

static void tls_up_join(struct tls_up *up)
{
    tls_up_wait(up);
    free(up);
}

/* ---- the sandbox's client --------------------------------------------- */

/* A TLS client for up.test over fd, trusting cafile (NULL: the system's
 * store). NULL when its handshake fails. */
static SSL *client_tls(int fd, const char *cafile, SSL_CTX **ctx_out)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (cafile)
        SSL_CTX_load_verify_locations(ctx, cafile, NULL);
    else
        SSL_CTX_set_default_verify_paths(ctx);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    SSL_set_tlsext_host_name(ssl, "up.test");
    SSL_set1_host(ssl, "up.test");
    *ctx_out = ctx;
    if (SSL_connect(ssl) != 1) {
        SSL_free(ssl);
        ERR_clear_error();
        return NULL;
    }
    return ssl;
}

static void client_close(SSL *ssl, SSL_CTX *ctx, int fd)
{
    if (ssl) {
        SSL_shutdown(ssl);
        SSL_free(ssl);
    }
    SSL_CTX_free(ctx);
    ERR_clear_error();
    close(fd);
}

static void tls_send(SSL *ssl, const char *s)
{
    assert_int_equal(SSL_write(ssl, s, (int)strlen(s)), (int)strlen(s));
}

/* Reads until want is in buf, or the end; NUL-terminated. */
static size_t tls_read_until(SSL *ssl, char *buf, size_t cap, const char *want)
{
    size_t got = 0;
    buf[0] = '\0';
    while (!strstr(buf, want) && got < cap - 1) {
        int n = SSL_read(ssl, buf + got, (int)(cap - 1 - got));
        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = '\0';
    }
    return got;
}

static size_t count(const char *s, const char *what)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

/* ---- the tests ---------------------------------------------------------- */

static void test_bound_host_gets_values_keep_alive(void **state)
{
    (void)state;
    struct tls_up *up = tls_up_start();
    bind_secret(up->port);
    const char *ph = rs->placeholders[0];
    struct serving sv;
    int fd = tunnel(&sv, up->port, "");
    SSL_CTX *ctx = NULL;
    SSL *ssl = client_tls(fd, egress_tls_ca_path(ca), &ctx);
    assert_non_null(ssl);
    char req[1024];
    char answer[ANSWER_SZ];
    for (int i = 0; i < 2; i++) {
        snprintf(req, sizeof(req),
                 "GET /v1/thing?n=%d&key=%s HTTP/1.1\r\nHost: up.test\r\nAuthorization: Bearer "
                 "%s\r\n\r\n",
                 i, ph, ph);
        tls_send(ssl, req);
        tls_read_until(ssl, answer, sizeof(answer), "\r\n\r\nok");
        assert_non_null(strstr(answer, "200 OK"));
    }
    client_close(ssl, ctx, fd);
    pthread_join(sv.t, NULL);
    tls_up_wait(up); /* what the upstream saw is read once its thread ended */
    assert_true(up->handshake_ok);
    assert_int_equal(count(up->got, "Authorization: Bearer " VALUE "\r\n"), 2);
    assert_int_equal(count(up->got, "&key=" VALUE " HTTP/1.1"), 2);
    assert_non_null(strstr(up->got, "GET /v1/thing?n=0&"));
    assert_non_null(strstr(up->got, "GET /v1/thing?n=1&"));
    assert_null(strstr(up->got, ph));
    assert_null(strstr(up->got, "Connection: close"));
    const struct egress_entry *e = entry(0);
    assert_true(e->allowed && e->intercepted);
    assert_int_equal(e->status, 200);
    assert_int_equal(e->secrets, 4);
    assert_string_equal(e->reason, "");
    assert_null(strstr(e->reason, VALUE));
    tls_up_join(up);
}

/* A tunnel to a port no secret is bound to: raw TLS end to end, the
 * upstream's own certificate (signed by up_ca) seen by the client. */
static void test_unbound_host_stays_a_tunnel(void **state)
{
    (void)state;
    struct tls_up *up = tls_up_start();
    bind_secret(up->port == 65535 ? 1 : up->port + 1);
    struct serving sv;
    int fd = tunnel(&sv, up->port, "");
    SSL_CTX *ctx = NULL;
    SSL *ssl = client_tls(fd, egress_tls_ca_path(up_ca), &ctx);
    assert_non_null(ssl);
    char req[256];
    snprintf(req, sizeof(req), "GET /?k=%s HTTP/1.1\r\nHost: up.test\r\n\r\n", rs->placeholders[0]);
    tls_send(ssl, req);
    char answer[ANSWER_SZ];
    tls_read_until(ssl, answer, sizeof(answer), "\r\n\r\nok");
    assert_non_null(strstr(answer, "200 OK"));
    client_close(ssl, ctx, fd);
    pthread_join(sv.t, NULL);
    /* The placeholder went as it was. */
    assert_non_null(strstr(up->got, rs->placeholders[0]));
    assert_null(strstr(up->got, VALUE));
    const struct egress_entry *e = entry(0);
    assert_false(e->intercepted);
    assert_int_equal(e->secrets, 0);
    tls_up_join(up);
}

/* An upstream whose certificate the gateway cannot verify: the client
 * gets a 502 inside the daemon's TLS, the summary the reason. */
static void test_upstream_not_verified(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    SSL_CTX *system_only = NULL;
    assert_int_equal(egress_tls_client_new(NULL, &system_only, &err), 0);
    policy->upstream_tls = system_only;
    struct tls_up *up = tls_up_start();
    bind_secret(up->port);
    struct serving sv;
    int fd = tunnel(&sv, up->port, "");
    SSL_CTX *ctx = NULL;
    SSL *ssl = client_tls(fd, egress_tls_ca_path(ca), &ctx);
    assert_non_null(ssl);
    char answer[ANSWER_SZ];
    tls_read_until(ssl, answer, sizeof(answer), "\n\n");
    assert_non_null(strstr(answer, "HTTP/1.1 502 Bad Gateway\r\n"));
    assert_non_null(strstr(answer, "the upstream's TLS failed"));
    client_close(ssl, ctx, fd);
    pthread_join(sv.t, NULL);
    const struct egress_entry *e = entry(0);
    assert_true(e->intercepted);
    assert_int_equal(e->status, 502);
    assert_non_null(strstr(e->reason, "the upstream's TLS failed"));
    assert_int_equal(e->secrets, 0);
    tls_up_wait(up);
    assert_false(up->handshake_ok);
    tls_up_join(up);
    SSL_CTX_free(system_only);
}

/* A client that trusts only the system's roots refuses the daemon's
 * leaf; the summary says why. */
static void test_client_without_the_ca(void **state)
{
    (void)state;
    struct tls_up *up = tls_up_start();
    bind_secret(up->port);
    struct serving sv;
    int fd = tunnel(&sv, up->port, "");
    SSL_CTX *ctx = NULL;
    SSL *ssl = client_tls(fd, NULL, &ctx);
    assert_null(ssl);
    client_close(NULL, ctx, fd);
    pthread_join(sv.t, NULL);
    const struct egress_entry *e = entry(0);
    assert_true(e->intercepted);
    assert_non_null(strstr(e->reason, "TLS handshake failed"));
    /* The gateway never reached the upstream's TLS: its thread ends when
     * the connection closes. */
    tls_up_wait(up);
    assert_false(up->handshake_ok);
    tls_up_join(up);
}

/* The run's stop cuts an intercepted connection that waits for the
 * sandbox's next request. */
static void test_stop_ends_interception(void **state)
{
    (void)state;
    struct tls_up *up = tls_up_start();
    bind_secret(up->port);
    struct serving sv;
    int fd = tunnel(&sv, up->port, "");
    SSL_CTX *ctx = NULL;
    SSL *ssl = client_tls(fd, egress_tls_ca_path(ca), &ctx);
    assert_non_null(ssl);
    tls_send(ssl, "GET / HTTP/1.1\r\nHost: up.test\r\n\r\n");
    char answer[ANSWER_SZ];
    tls_read_until(ssl, answer, sizeof(answer), "\r\n\r\nok");
    assert_non_null(strstr(answer, "200 OK"));
    egress_cancel_fire(&stop);
    pthread_join(sv.t, NULL);
    const struct egress_entry *e = entry(0);
    assert_true(e->intercepted);
    assert_string_equal(e->reason, "cut: the run ended");
    client_close(ssl, ctx, fd);
    tls_up_join(up);
}

/* A tunnel to a TLS upstream bound to the secret, the sandbox's TLS
 * session inside it open. */
struct inside {
    struct tls_up *up;
    struct serving sv;
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
};

static void inside_open(struct inside *in)
{
    in->up = tls_up_start();
    bind_secret(in->up->port);
    in->fd = tunnel(&in->sv, in->up->port, "");
    in->ctx = NULL;
    in->ssl = client_tls(in->fd, egress_tls_ca_path(ca), &in->ctx);
    assert_non_null(in->ssl);
}

/* request, sent inside, is answered there with a 400 whose log entry
 * gives reason, and nothing of it goes upstream. */
static void inside_refused(struct inside *in, const char *request, const char *reason)
{
    tls_send(in->ssl, request);
    char answer[ANSWER_SZ];
    tls_read_until(in->ssl, answer, sizeof(answer), "\n\n");
    assert_non_null(strstr(answer, "HTTP/1.1 400 Bad Request\r\n"));
    client_close(in->ssl, in->ctx, in->fd);
    pthread_join(in->sv.t, NULL);
    const struct egress_entry *e = entry(0);
    assert_int_equal(e->status, 400);
    assert_non_null(strstr(e->reason, reason));
    tls_up_wait(in->up);
    assert_int_equal(in->up->got_len, 0);
    tls_up_join(in->up);
}

/* A malformed first request inside the tunnel is answered inside it. */
static void test_bad_inner_head_answered(void **state)
{
    (void)state;
    struct inside in;
    inside_open(&in);
    inside_refused(&in, "GET http://elsewhere.test/ HTTP/1.1\r\n\r\n", "target must be a path");
}

/* A Connection field that names Content-Length would have the gateway
 * frame the body by it and the upstream not: the body would reach the
 * upstream as a request of its own (any Host), whose own length swallows
 * the next request with the value in it. Refused before anything goes
 * upstream. */
static void test_connection_naming_framing_refused(void **state)
{
    (void)state;
    struct inside in;
    inside_open(&in);
    const char *smug = "POST /collect HTTP/1.1\r\nHost: other.test\r\nContent-Length: 120\r\n\r\n";
    char req[1024];
    snprintf(req, sizeof(req),
             "POST /a HTTP/1.1\r\nHost: up.test\r\nConnection: keep-alive, Content-Length\r\n"
             "Content-Length: %zu\r\n\r\n%sGET /v HTTP/1.1\r\nHost: up.test\r\nX-Key: %s\r\n\r\n",
             strlen(smug), smug, rs->placeholders[0]);
    inside_refused(&in, req, "a Connection field names Content-Length");
}

/* A sandbox that ends its side after its request still gets the answer:
 * its end goes on to the upstream, which answers and closes. */
static void test_half_close_gets_answer(void **state)
{
    (void)state;
    struct upstream *up = upstream_start(UP_HTTP, 1);
    up->until = "\r\n\r\n";
    up->reply = RESP;
    bind_secret(up->port);
    struct serving sv;
    int fd = tunnel(&sv, up->port, "");
    send_str(fd, "GET /p HTTP/1.1\r\nHost: up.test\r\n\r\n");
    assert_int_equal(shutdown(fd, SHUT_WR), 0);
    char answer[ANSWER_SZ];
    recv_all(fd, answer, sizeof(answer));
    close(fd);
    pthread_join(sv.t, NULL);
    upstream_join(up);
    assert_non_null(strstr(answer, "200 OK"));
    assert_string_equal(entry(0)->reason, "");
}

/* Plain HTTP in a tunnel to a bound host (Node's fetch tunnels http://
 * too) is served in the clear, the value put in. */
static void test_plain_http_in_a_bound_tunnel(void **state)
{
    (void)state;
    struct upstream *up = upstream_start(UP_HTTP, 1);
    up->until = "\r\n\r\n";
    up->reply = RESP;
    bind_secret(up->port);
    struct serving sv;
    int fd = tunnel(&sv, up->port, "");
    char req[256];
    snprintf(req, sizeof(req), "GET /p?k=%s HTTP/1.1\r\nHost: up.test\r\nX-Key: %s\r\n\r\n",
             rs->placeholders[0], rs->placeholders[0]);
    send_str(fd, req);
    char answer[ANSWER_SZ];
    recv_all(fd, answer, sizeof(answer));
    close(fd);
    pthread_join(sv.t, NULL);
    assert_non_null(strstr(answer, "200 OK"));
    const char *got = up->conns[0].got;
    char host[64];
    snprintf(host, sizeof(host), "Host: up.test:%u\r\n", up->port);
    assert_non_null(strstr(got, host));
    assert_non_null(strstr(got, "GET /p?k=" VALUE " HTTP/1.1\r\n"));
    assert_non_null(strstr(got, "X-Key: " VALUE "\r\n"));
    const struct egress_entry *e = entry(0);
    assert_true(e->intercepted);
    assert_int_equal(e->secrets, 2);
    upstream_join(up);
}

int main(void)
{
    log_set_threshold(LOG_LVL_WARN);
    signal(SIGPIPE, SIG_IGN); /* as the daemon does: a peer gone is an error, not a death */
#define T(f) cmocka_unit_test_setup_teardown(f, ic_setup, ic_teardown)
    const struct CMUnitTest tests[] = {
        T(test_bound_host_gets_values_keep_alive),
        T(test_unbound_host_stays_a_tunnel),
        T(test_upstream_not_verified),
        T(test_client_without_the_ca),
        T(test_stop_ends_interception),
        T(test_bad_inner_head_answered),
        T(test_plain_http_in_a_bound_tunnel),
        T(test_connection_naming_framing_refused),
        T(test_half_close_gets_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
