/* egress/tls_ca.c and tls_io.c: the CA's files (modes, the bundle's
 * roots, no key anywhere), leaves a client verifies for their host and
 * no other, the upstream side verifying against the trust store and an
 * extra CA file, handshakes stopped and timed out, the leaf cache (one
 * leaf per host, the oldest evicted past the cap, many threads at once)
 * and ALPN (http/1.1 or nothing). Every peer is in this process, over a
 * socket pair; the "upstream" CA is a second egress_tls_ca. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "egress/gateway.h"
#include "egress/tls.h"

#define FAR_MS   60000.0
#define MSG_CAP  64
#define THREADS  8
#define PER_THR  48
#define HOSTS_MT 24

static char *read_all(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "re");
    assert_non_null(fp);
    char *buf = malloc(16 * 1024 * 1024);
    assert_non_null(buf);
    size_t n = fread(buf, 1, 16 * 1024 * 1024 - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "we");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static char *tmp_dir(void)
{
    char *d = strdup("/tmp/test_tls-XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

static void rm_dir(char *d)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
    free(d);
}

static struct egress_tls_ca *new_ca(const char *dir)
{
    struct egress_tls_ca *ca = NULL;
    struct err err = ERR_INIT;
    int rc = egress_tls_ca_new(dir, "", &ca, &err);
    if (rc < 0)
        fail_msg("%s", err_msg(&err));
    return ca;
}

static void pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
}

/* ---- the CA's files ---- */

static void assert_public_file(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
    char *text = read_all(path, NULL);
    assert_null(strstr(text, "PRIVATE KEY"));
    free(text);
}

static void test_ca_files(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    char *roots_path = NULL;
    assert_true(asprintf(&roots_path, "%s/roots.pem", dir) > 0);
    size_t nsys = 0;
    char *sys = read_all(EGRESS_TLS_SYSTEM_BUNDLE, &nsys);
    write_text(roots_path, sys);
    struct egress_tls_ca *ca = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(egress_tls_ca_new(dir, roots_path, &ca, &err), 0);
    const char *pem = egress_tls_ca_pem(ca);
    assert_non_null(strstr(pem, "-----BEGIN CERTIFICATE-----"));
    assert_public_file(egress_tls_ca_path(ca));
    assert_public_file(egress_tls_ca_bundle_path(ca));
    char *cafile = read_all(egress_tls_ca_path(ca), NULL);
    assert_string_equal(cafile, pem);
    size_t nb = 0;
    char *bundle = read_all(egress_tls_ca_bundle_path(ca), &nb);
    assert_memory_equal(bundle, sys, nsys);
    assert_string_equal(bundle + nb - strlen(pem), pem);
    /* Nothing else was left in the directory but the test's roots. */
    char *cmd = NULL;
    assert_true(asprintf(&cmd, "test $(ls -A '%s' | wc -l) -eq 3", dir) > 0);
    assert_int_equal(system(cmd), 0);
    char *ca_path = strdup(egress_tls_ca_path(ca));
    egress_tls_ca_free(ca);
    assert_int_equal(access(ca_path, F_OK), -1);
    free(ca_path);
    free(cmd);
    free(bundle);
    free(cafile);
    free(sys);
    free(roots_path);
    rm_dir(dir);
}

static void test_ca_dir_refused(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    assert_int_equal(chmod(dir, 0777), 0);
    struct egress_tls_ca *ca = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(egress_tls_ca_new(dir, "", &ca, &err), -1);
    assert_null(ca);
    assert_int_equal(err.code, ERR_IO);
    assert_non_null(strstr(err_msg(&err), "only it can write"));
    err_clear(&err);
    char *missing = NULL;
    assert_true(asprintf(&missing, "%s/none.pem", dir) > 0);
    assert_int_equal(chmod(dir, 0700), 0);
    assert_int_equal(egress_tls_ca_new(dir, missing, &ca, &err), -1);
    assert_non_null(strstr(err_msg(&err), "none.pem"));
    err_clear(&err);
    free(missing);
    rm_dir(dir);
}

/* ---- a client of the gateway's server side, OpenSSL in the test ---- */

struct client {
    int fd;
    const char *cafile;
    const char *name;
    const unsigned char *alpn; /* wire form, or NULL */
    unsigned alpn_len;
    int connected;
    long verify;
    char alpn_got[16];
    char reply[MSG_CAP];
    bool clean;
};

static void *client_main(void *arg)
{
    struct client *c = arg;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx, c->cafile, NULL);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (c->alpn)
        SSL_CTX_set_alpn_protos(ctx, c->alpn, c->alpn_len);
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, c->fd);
    char sni[64];
    snprintf(sni, sizeof(sni), "%s", c->name);
    SSL_set_tlsext_host_name(ssl, sni);
    SSL_set1_host(ssl, c->name);
    c->connected = SSL_connect(ssl) == 1;
    c->verify = SSL_get_verify_result(ssl);
    if (c->connected) {
        const unsigned char *p = NULL;
        unsigned n = 0;
        SSL_get0_alpn_selected(ssl, &p, &n);
        if (n > 0 && n < sizeof(c->alpn_got))
            memcpy(c->alpn_got, p, n);
        SSL_write(ssl, "ping", 4);
        int n2 = SSL_read(ssl, c->reply, sizeof(c->reply) - 1);
        if (n2 > 0)
            c->reply[n2] = '\0';
        /* Ours, then the gateway's close_notify awaited. */
        c->clean = SSL_shutdown(ssl) == 0 && SSL_shutdown(ssl) == 1;
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    close(c->fd);
    return NULL;
}

/* Reads until want bytes came, or the end; driving the waits as a
 * caller's poll loop would. */
static ssize_t read_some(struct egress_tls_conn *conn, int fd, char *buf, size_t cap)
{
    struct err err = ERR_INIT;
    for (;;) {
        ssize_t n = egress_tls_read(conn, buf, cap, &err);
        if (n == EGRESS_TLS_WANT_READ || n == EGRESS_TLS_WANT_WRITE) {
            struct pollfd p = {.fd = fd, .events = n == EGRESS_TLS_WANT_READ ? POLLIN : POLLOUT};
            assert_int_equal(poll(&p, 1, -1), 1);
            continue;
        }
        if (n < 0)
            fail_msg("%s", err_msg(&err));
        return n;
    }
}

static void write_all(struct egress_tls_conn *conn, int fd, const char *s)
{
    struct err err = ERR_INIT;
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = egress_tls_write(conn, s, n, &err);
        if (w == EGRESS_TLS_WANT_READ || w == EGRESS_TLS_WANT_WRITE) {
            struct pollfd p = {.fd = fd, .events = w == EGRESS_TLS_WANT_READ ? POLLIN : POLLOUT};
            assert_int_equal(poll(&p, 1, -1), 1);
            continue;
        }
        if (w <= 0)
            fail_msg("%s", err_msg(&err));
        s += w;
        n -= (size_t)w;
    }
}

/* The gateway's side of one client: accepts with a leaf for leaf_host;
 * on success answers "pong" to "ping" and reads to the clean end. */
static int serve_client(struct egress_tls_ca *ca, const char *leaf_host, struct client *c,
                        struct err *err)
{
    int sv[2];
    pair(sv);
    c->fd = sv[1];
    c->cafile = egress_tls_ca_path(ca);
    SSL_CTX *leaf = NULL;
    assert_int_equal(egress_tls_ca_leaf(ca, leaf_host, &leaf, err), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, client_main, c), 0);
    struct egress_tls_conn *conn = NULL;
    int rc = egress_tls_accept(leaf, sv[0], util_now_ms() + FAR_MS, -1, &conn, err);
    if (rc == 0) {
        char buf[MSG_CAP];
        assert_int_equal(read_some(conn, sv[0], buf, sizeof(buf)), 4);
        assert_memory_equal(buf, "ping", 4);
        write_all(conn, sv[0], "pong");
        assert_int_equal(read_some(conn, sv[0], buf, sizeof(buf)), 0);
        assert_int_equal(egress_tls_shutdown(conn, err), 0);
        if (c->alpn_len == 0 || strcmp(c->alpn_got, "") == 0)
            assert_null(egress_tls_alpn(conn));
        else
            assert_string_equal(egress_tls_alpn(conn), "http/1.1");
        egress_tls_free(conn);
    }
    assert_int_equal(pthread_join(t, NULL), 0);
    close(sv[0]);
    SSL_CTX_free(leaf);
    return rc;
}

static void test_leaf_verifies_for_its_host(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    struct egress_tls_ca *ca = new_ca(dir);
    struct err err = ERR_INIT;
    struct client ok = {.name = "api.test"};
    if (serve_client(ca, "api.test", &ok, &err) != 0)
        fail_msg("%s", err_msg(&err));
    assert_true(ok.connected);
    assert_true(ok.clean);
    assert_int_equal(ok.verify, X509_V_OK);
    assert_string_equal(ok.reply, "pong");

    struct client other = {.name = "other.test"};
    assert_int_equal(serve_client(ca, "api.test", &other, &err), -1);
    assert_false(other.connected);
    assert_int_equal(other.verify, X509_V_ERR_HOSTNAME_MISMATCH);
    assert_int_equal(err.code, ERR_PROTOCOL);
    assert_non_null(strstr(err_msg(&err), "the sandbox"));
    err_clear(&err);

    /* An IP literal gets an IP SAN; the client checks it as an address. */
    struct client ip = {.name = "127.0.0.1"};
    assert_int_equal(serve_client(ca, "127.0.0.1", &ip, &err), 0);
    assert_int_equal(ip.verify, X509_V_OK);
    egress_tls_ca_free(ca);
    rm_dir(dir);
}

static void test_alpn_http11_only(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    struct egress_tls_ca *ca = new_ca(dir);
    struct err err = ERR_INIT;
    static const unsigned char h2[] = "\x02h2";
    struct client c1 = {.name = "api.test", .alpn = h2, .alpn_len = sizeof(h2) - 1};
    assert_int_equal(serve_client(ca, "api.test", &c1, &err), 0);
    assert_true(c1.connected);
    assert_string_equal(c1.alpn_got, "");
    static const unsigned char both[] = "\x02h2\x08http/1.1";
    struct client c2 = {.name = "api.test", .alpn = both, .alpn_len = sizeof(both) - 1};
    assert_int_equal(serve_client(ca, "api.test", &c2, &err), 0);
    assert_string_equal(c2.alpn_got, "http/1.1");
    egress_tls_ca_free(ca);
    rm_dir(dir);
}

/* ---- the upstream side ---- */

struct upstream {
    int fd;
    SSL_CTX *ctx;
    bool rude; /* closes without close_notify */
    bool clean;
};

static void *upstream_main(void *arg)
{
    struct upstream *u = arg;
    SSL *ssl = SSL_new(u->ctx);
    SSL_set_fd(ssl, u->fd);
    if (SSL_accept(ssl) == 1) {
        char buf[MSG_CAP];
        int n = SSL_read(ssl, buf, sizeof(buf));
        if (n == 4 && memcmp(buf, "ping", 4) == 0)
            SSL_write(ssl, "pong", 4);
        if (!u->rude)
            u->clean = SSL_shutdown(ssl) == 0 && SSL_shutdown(ssl) == 1;
    }
    SSL_free(ssl);
    ERR_clear_error();
    close(u->fd);
    return NULL;
}

/* Connects to an upstream presenting a leaf of up_ca for leaf_host, as
 * host; on success, ping, pong and the upstream's close_notify. */
static int reach_as(SSL_CTX *client, struct egress_tls_ca *up_ca, const char *leaf_host,
                    const char *host, bool rude, struct err *err)
{
    int sv[2];
    pair(sv);
    struct upstream u = {.fd = sv[1], .rude = rude};
    assert_int_equal(egress_tls_ca_leaf(up_ca, leaf_host, &u.ctx, err), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, upstream_main, &u), 0);
    struct egress_tls_conn *conn = NULL;
    int rc = egress_tls_connect(client, sv[0], host, util_now_ms() + FAR_MS, -1, &conn, err);
    if (rc == 0) {
        assert_string_equal(egress_tls_alpn(conn), "http/1.1");
        write_all(conn, sv[0], "ping");
        char buf[MSG_CAP];
        /* Half a record read: the rest is buffered where poll cannot see. */
        assert_int_equal(read_some(conn, sv[0], buf, 2), 2);
        assert_true(egress_tls_pending(conn));
        assert_int_equal(read_some(conn, sv[0], buf + 2, sizeof(buf) - 2), 2);
        assert_memory_equal(buf, "pong", 4);
        if (u.rude) {
            struct err e2 = ERR_INIT;
            ssize_t n;
            while ((n = egress_tls_read(conn, buf, sizeof(buf), &e2)) == EGRESS_TLS_WANT_READ) {
                struct pollfd p = {.fd = sv[0], .events = POLLIN};
                assert_int_equal(poll(&p, 1, -1), 1);
            }
            assert_int_equal(n, EGRESS_TLS_TRUNCATED);
            assert_non_null(strstr(err_msg(&e2), "without TLS close_notify"));
            err_clear(&e2);
        } else {
            assert_int_equal(read_some(conn, sv[0], buf, sizeof(buf)), 0);
            assert_int_equal(egress_tls_shutdown(conn, err), 0);
        }
        egress_tls_free(conn);
    }
    /* A refused handshake leaves the upstream waiting for nothing more. */
    shutdown(sv[0], SHUT_RDWR);
    assert_int_equal(pthread_join(t, NULL), 0);
    close(sv[0]);
    SSL_CTX_free(u.ctx);
    if (rc == 0 && !rude)
        assert_true(u.clean);
    return rc;
}

static int reach(SSL_CTX *client, struct egress_tls_ca *up_ca, const char *leaf_host,
                 const char *host, struct err *err)
{
    return reach_as(client, up_ca, leaf_host, host, false, err);
}

static void test_upstream_verified(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    struct egress_tls_ca *up = new_ca(dir);
    struct err err = ERR_INIT;
    SSL_CTX *plain = NULL;
    assert_int_equal(egress_tls_client_new(NULL, &plain, &err), 0);
    assert_int_equal(reach(plain, up, "upstream.test", "upstream.test", &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    assert_non_null(strstr(err_msg(&err), "does not verify for upstream.test"));
    err_clear(&err);

    SSL_CTX *extra = NULL;
    assert_int_equal(egress_tls_client_new(egress_tls_ca_path(up), &extra, &err), 0);
    assert_int_equal(reach(extra, up, "upstream.test", "upstream.test", &err), 0);
    assert_int_equal(reach(extra, up, "upstream.test", "Upstream.TEST", &err), 0);
    assert_int_equal(reach(extra, up, "127.0.0.1", "127.0.0.1", &err), 0);
    assert_int_equal(reach_as(extra, up, "upstream.test", "upstream.test", true, &err), 0);

    assert_int_equal(reach(extra, up, "upstream.test", "other.test", &err), -1);
    assert_non_null(strstr(err_msg(&err), "does not verify for other.test: hostname mismatch"));
    err_clear(&err);
    assert_int_equal(reach(extra, up, "upstream.test", "127.0.0.1", &err), -1);
    assert_non_null(strstr(err_msg(&err), "does not verify for 127.0.0.1"));
    err_clear(&err);
    SSL_CTX_free(extra);
    SSL_CTX_free(plain);
    egress_tls_ca_free(up);
    rm_dir(dir);
}

static void test_extra_ca_file_checked(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    char *path = NULL;
    assert_true(asprintf(&path, "%s/extra.pem", dir) > 0);
    struct err err = ERR_INIT;
    SSL_CTX *ctx = NULL;
    assert_int_equal(egress_tls_client_new(path, &ctx, &err), -1);
    assert_int_equal(err.code, ERR_IO);
    err_clear(&err);
    write_text(path, "not a certificate\n");
    assert_int_equal(egress_tls_client_new(path, &ctx, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    assert_non_null(strstr(err_msg(&err), "holds no PEM certificate"));
    err_clear(&err);
    write_text(path, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    assert_int_equal(egress_tls_client_new(path, &ctx, &err), -1);
    assert_non_null(strstr(err_msg(&err), "certificate 1 does not parse"));
    err_clear(&err);
    assert_null(ctx);
    free(path);
    rm_dir(dir);
}

/* ---- stop and deadline ---- */

static void *fire_soon(void *arg)
{
    usleep(20 * 1000);
    egress_cancel_fire(arg);
    return NULL;
}

static void test_handshake_stopped_and_timed_out(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    struct egress_tls_ca *ca = new_ca(dir);
    struct err err = ERR_INIT;
    SSL_CTX *leaf = NULL;
    SSL_CTX *client = NULL;
    assert_int_equal(egress_tls_ca_leaf(ca, "api.test", &leaf, &err), 0);
    assert_int_equal(egress_tls_client_new(NULL, &client, &err), 0);
    for (int side = 0; side < 2; side++) {
        int sv[2];
        pair(sv); /* sv[1] never says anything */
        struct egress_cancel stop;
        assert_int_equal(egress_cancel_init(&stop, &err), 0);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, fire_soon, &stop), 0);
        struct egress_tls_conn *conn = NULL;
        double far = util_now_ms() + FAR_MS;
        int rc = side == 0
                     ? egress_tls_accept(leaf, sv[0], far, stop.fd, &conn, &err)
                     : egress_tls_connect(client, sv[0], "api.test", far, stop.fd, &conn, &err);
        assert_int_equal(rc, -1);
        assert_null(conn);
        assert_int_equal(err.code, ERR_CANCELLED);
        err_clear(&err);
        assert_int_equal(pthread_join(t, NULL), 0);
        double past = util_now_ms() - 1;
        rc = side == 0 ? egress_tls_accept(leaf, sv[0], past, -1, &conn, &err)
                       : egress_tls_connect(client, sv[0], "api.test", past, -1, &conn, &err);
        assert_int_equal(rc, -1);
        assert_int_equal(err.code, ERR_TIMEOUT);
        err_clear(&err);
        egress_cancel_destroy(&stop);
        close(sv[0]);
        close(sv[1]);
    }
    SSL_CTX_free(client);
    SSL_CTX_free(leaf);
    egress_tls_ca_free(ca);
    rm_dir(dir);
}

static void test_peer_closes_during_handshake(void **state)
{
    (void)state;
    SSL_CTX *client = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(egress_tls_client_new(NULL, &client, &err), 0);
    int sv[2];
    pair(sv);
    close(sv[1]);
    struct egress_tls_conn *conn = NULL;
    assert_int_equal(
        egress_tls_connect(client, sv[0], "api.test", util_now_ms() + FAR_MS, -1, &conn, &err), -1);
    assert_true(err.code == ERR_PROTOCOL || err.code == ERR_IO);
    assert_non_null(strstr(err_msg(&err), "the upstream api.test"));
    err_clear(&err);
    close(sv[0]);
    SSL_CTX_free(client);
}

/* ---- the leaf cache ---- */

static void test_leaf_cache(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    struct egress_tls_ca *ca = new_ca(dir);
    struct err err = ERR_INIT;
    SSL_CTX *first = NULL;
    SSL_CTX *again = NULL;
    assert_int_equal(egress_tls_ca_leaf(ca, "h0.test", &first, &err), 0);
    assert_int_equal(egress_tls_ca_leaf(ca, "H0.Test", &again, &err), 0);
    assert_ptr_equal(first, again);
    SSL_CTX_free(again);
    char host[32];
    for (int i = 1; i <= EGRESS_TLS_LEAF_CACHE; i++) {
        SSL_CTX *ctx = NULL;
        snprintf(host, sizeof(host), "h%d.test", i);
        assert_int_equal(egress_tls_ca_leaf(ca, host, &ctx, &err), 0);
        SSL_CTX_free(ctx);
    }
    assert_int_equal(egress_tls_ca_cached(ca), EGRESS_TLS_LEAF_CACHE);
    /* h0 went (the oldest); the last one stayed. */
    SSL_CTX *last1 = NULL;
    SSL_CTX *last2 = NULL;
    snprintf(host, sizeof(host), "h%d.test", EGRESS_TLS_LEAF_CACHE);
    assert_int_equal(egress_tls_ca_leaf(ca, host, &last1, &err), 0);
    assert_int_equal(egress_tls_ca_leaf(ca, "h0.test", &again, &err), 0);
    assert_ptr_not_equal(first, again);
    assert_int_equal(egress_tls_ca_leaf(ca, host, &last2, &err), 0);
    assert_ptr_equal(last1, last2);
    assert_int_equal(egress_tls_ca_cached(ca), EGRESS_TLS_LEAF_CACHE);
    SSL_CTX_free(last1);
    SSL_CTX_free(last2);
    SSL_CTX_free(again);
    SSL_CTX_free(first);
    const char *bad[] = {"", "a b.test", "a\n.test", "x/y"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(egress_tls_ca_leaf(ca, bad[i], &again, &err), -1);
        assert_int_equal(err.code, ERR_INVALID);
        assert_null(again);
        err_clear(&err);
    }
    char lng[EGRESS_TLS_HOST_MAX + 2];
    memset(lng, 'a', sizeof(lng) - 1);
    lng[sizeof(lng) - 1] = '\0';
    assert_int_equal(egress_tls_ca_leaf(ca, lng, &again, &err), -1);
    err_clear(&err);
    egress_tls_ca_free(ca);
    rm_dir(dir);
}

struct minter {
    struct egress_tls_ca *ca;
    int id;
    SSL_CTX *got[HOSTS_MT];
    int failed;
};

static void *mint_main(void *arg)
{
    struct minter *m = arg;
    for (int i = 0; i < PER_THR; i++) {
        int h = (i * 7 + m->id) % HOSTS_MT;
        char host[32];
        snprintf(host, sizeof(host), "mt%d.test", h);
        SSL_CTX *ctx = NULL;
        if (egress_tls_ca_leaf(m->ca, host, &ctx, NULL) < 0) {
            m->failed++;
            continue;
        }
        SSL_CTX_free(m->got[h]);
        m->got[h] = ctx;
    }
    return NULL;
}

static void test_leaf_cache_threads(void **state)
{
    (void)state;
    char *dir = tmp_dir();
    struct egress_tls_ca *ca = new_ca(dir);
    static struct minter m[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        m[i] = (struct minter){.ca = ca, .id = i};
        assert_int_equal(pthread_create(&t[i], NULL, mint_main, &m[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(egress_tls_ca_cached(ca), HOSTS_MT);
    /* Every thread that asked for a host got the one cached leaf. */
    for (int h = 0; h < HOSTS_MT; h++) {
        SSL_CTX *want = NULL;
        char host[32];
        snprintf(host, sizeof(host), "mt%d.test", h);
        assert_int_equal(egress_tls_ca_leaf(ca, host, &want, NULL), 0);
        for (int i = 0; i < THREADS; i++)
            if (m[i].got[h])
                assert_ptr_equal(m[i].got[h], want);
        SSL_CTX_free(want);
    }
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(m[i].failed, 0);
        for (int h = 0; h < HOSTS_MT; h++)
            SSL_CTX_free(m[i].got[h]);
    }
    egress_tls_ca_free(ca);
    rm_dir(dir);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ca_files),
        cmocka_unit_test(test_ca_dir_refused),
        cmocka_unit_test(test_leaf_verifies_for_its_host),
        cmocka_unit_test(test_alpn_http11_only),
        cmocka_unit_test(test_upstream_verified),
        cmocka_unit_test(test_extra_ca_file_checked),
        cmocka_unit_test(test_handshake_stopped_and_timed_out),
        cmocka_unit_test(test_peer_closes_during_handshake),
        cmocka_unit_test(test_leaf_cache),
        cmocka_unit_test(test_leaf_cache_threads),
    };
    return cmocka_run_group_tests_name("egress_tls", tests, NULL, NULL);
}
