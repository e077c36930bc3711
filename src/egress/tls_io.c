/* The egress gateway's TLS connections and the upstream side's context
 * (tls.h). OpenSSL's socket BIO writes with write(2): a peer gone raises
 * SIGPIPE, which the daemon ignores (main.c), as the tests do. */
#include "egress/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "egress/relay.h"

/* ALPN's wire form of the one protocol offered. */
static const unsigned char alpn_http11[] = "\x08http/1.1";
/* The most certificates one --egress-upstream-ca file may hold. */
#define EXTRA_CA_CERTS_MAX 1000
/* Room for a host escaped for a message. */
#define HOST_TEXT_CAP (EGRESS_TLS_HOST_MAX + 1)

struct egress_tls_conn {
    SSL *ssl;
    int fd;
    bool broken; /* a fatal error: no close_notify may follow */
};

static int ssl_failed(struct err *err, enum err_code code, const char *what)
{
    err_set(err, code, "%s: %s", what, egress_tls_why());
    ERR_clear_error();
    return -1;
}

static bool unexpected_eof(void)
{
    unsigned long e = ERR_peek_last_error();
    return ERR_GET_LIB(e) == ERR_LIB_SSL && ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
}

/* Every certificate of file into ctx's store: at least one. */
static int add_extra_cas(SSL_CTX *ctx, const char *file, struct err *err)
{
    struct stat st;
    if (stat(file, &st) < 0)
        return err_set(err, ERR_IO, "cannot open %s: %s", file, strerror(errno));
    if (st.st_size > EGRESS_TLS_EXTRA_CA_MAX)
        return err_set(err, ERR_TOO_BIG, "%s is over %d bytes", file, EGRESS_TLS_EXTRA_CA_MAX);
    BIO *bio = BIO_new_file(file, "r");
    if (!bio)
        return ssl_failed(err, ERR_IO, file);
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    int n = 0;
    int rc = -1;
    for (X509 *x; n < EXTRA_CA_CERTS_MAX && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)); n++) {
        int ok = X509_STORE_add_cert(store, x);
        X509_free(x);
        if (ok != 1) {
            ssl_failed(err, ERR_INVALID, file);
            goto out;
        }
    }
    unsigned long e = ERR_peek_last_error();
    if (n < EXTRA_CA_CERTS_MAX && e &&
        !(ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)) {
        err_set(err, ERR_INVALID, "%s: certificate %d does not parse: %s", file, n + 1,
                egress_tls_why());
        goto out;
    }
    if (n == 0) {
        err_set(err, ERR_INVALID, "%s holds no PEM certificate", file);
        goto out;
    }
    rc = 0;
out:
    ERR_clear_error();
    BIO_free(bio);
    return rc;
}

int egress_tls_client_new(const char *extra_ca_file, SSL_CTX **out, struct err *err)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    int rc = -1;
    *out = NULL;
    if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
        SSL_CTX_set_default_verify_paths(ctx) != 1 ||
        SSL_CTX_set_alpn_protos(ctx, alpn_http11, sizeof(alpn_http11) - 1) != 0) {
        ssl_failed(err, ERR_INTERNAL, "cannot make the egress gateway's TLS client");
        goto out;
    }
    if (extra_ca_file && add_extra_cas(ctx, extra_ca_file, err) < 0)
        goto out;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    *out = ctx;
    ctx = NULL;
    rc = 0;
out:
    SSL_CTX_free(ctx);
    return rc;
}

static struct egress_tls_conn *conn_new(SSL_CTX *ctx, int fd, struct err *err)
{
    struct egress_tls_conn *c = xcalloc(1, sizeof(*c));
    c->fd = fd;
    c->ssl = SSL_new(ctx);
    if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
        ssl_failed(err, ERR_INTERNAL, "cannot set up a TLS connection");
        egress_tls_free(c);
        return NULL;
    }
    /* Either context's: a write may take part of its bytes. */
    SSL_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    return c;
}

/* Why the handshake with who (for host: NULL on the sandbox's side)
 * failed, OpenSSL's error e. */
static int handshake_failed(struct egress_tls_conn *c, int e, const char *who, const char *host,
                            struct err *err)
{
    int saved = errno;
    c->broken = true;
    long v = host ? SSL_get_verify_result(c->ssl) : X509_V_OK;
    if (e == SSL_ERROR_SSL && v != X509_V_OK)
        err_set(err, ERR_PROTOCOL, "the upstream's certificate does not verify for %s: %s", host,
                X509_verify_cert_error_string(v));
    else if (e == SSL_ERROR_SYSCALL && saved != 0)
        err_set(err, ERR_IO, "the connection to %s failed during the TLS handshake: %s", who,
                strerror(saved));
    else if (e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL || unexpected_eof())
        err_set(err, ERR_PROTOCOL, "%s closed the connection during the TLS handshake", who);
    else
        err_set(err, ERR_PROTOCOL, "the TLS handshake with %s failed: %s", who, egress_tls_why());
    ERR_clear_error();
    return -1;
}

static int handshake(struct egress_tls_conn *c, double deadline, int stop_fd, const char *who,
                     const char *host, struct err *err)
{
    for (;;) {
        ERR_clear_error();
        errno = 0;
        int r = SSL_do_handshake(c->ssl);
        if (r == 1)
            return 0;
        int e = SSL_get_error(c->ssl, r);
        short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
        if (!ev)
            return handshake_failed(c, e, who, host, err);
        switch (egress_wait_fd(c->fd, ev, stop_fd, deadline)) {
        case EGRESS_WAIT_READY:
            break;
        case EGRESS_WAIT_TIMEOUT:
            c->broken = true;
            return err_set(err, ERR_TIMEOUT, "the TLS handshake with %s did not end in time", who);
        case EGRESS_WAIT_STOPPED:
            c->broken = true;
            return err_set(err, ERR_CANCELLED, "the TLS handshake with %s was stopped", who);
        }
    }
}

int egress_tls_accept(SSL_CTX *ctx, int fd, double deadline, int stop_fd,
                      struct egress_tls_conn **out, struct err *err)
{
    *out = NULL;
    struct egress_tls_conn *c = conn_new(ctx, fd, err);
    if (!c)
        return -1;
    SSL_set_accept_state(c->ssl);
    if (handshake(c, deadline, stop_fd, "the sandbox", NULL, err) < 0) {
        egress_tls_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

/* Sets what the upstream's certificate must name: host, a name (sent as
 * SNI) or an address (never sent: SNI holds names only). */
static int expect_host(SSL *ssl, const char *host)
{
    unsigned char addr[16];
    if (inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1)
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 ? 0 : -1;
    /* SSL_set_tlsext_host_name's macro casts const away: give it a copy. */
    char name[EGRESS_TLS_HOST_MAX + 1];
    snprintf(name, sizeof(name), "%s", host);
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (SSL_set_tlsext_host_name(ssl, name) != 1 || SSL_set1_host(ssl, host) != 1)
        return -1;
    return 0;
}

int egress_tls_connect(SSL_CTX *ctx, int fd, const char *host, double deadline, int stop_fd,
                       struct egress_tls_conn **out, struct err *err)
{
    char text[HOST_TEXT_CAP];
    size_t n = strnlen(host, EGRESS_TLS_HOST_MAX + 1);
    *out = NULL;
    if (n == 0 || n > EGRESS_TLS_HOST_MAX)
        return err_set(err, ERR_INVALID, "a TLS host must be 1 to %d bytes", EGRESS_TLS_HOST_MAX);
    util_printable_ascii(text, sizeof(text), host, n, false);
    struct egress_tls_conn *c = conn_new(ctx, fd, err);
    if (!c)
        return -1;
    if (expect_host(c->ssl, host) < 0) {
        err_set(err, ERR_INVALID, "cannot check TLS certificates for %s: %s", text,
                egress_tls_why());
        ERR_clear_error();
        goto fail;
    }
    SSL_set_connect_state(c->ssl);
    char who[HOST_TEXT_CAP + 16];
    snprintf(who, sizeof(who), "the upstream %s", text);
    if (handshake(c, deadline, stop_fd, who, text, err) < 0)
        goto fail;
    *out = c;
    return 0;
fail:
    egress_tls_free(c);
    return -1;
}

/* What a failed SSL_read_ex, SSL_write_ex or SSL_shutdown (r) means. */
static ssize_t io_result(struct egress_tls_conn *c, int r, const char *doing, struct err *err)
{
    int saved = errno;
    int e = SSL_get_error(c->ssl, r);
    ssize_t rc = EGRESS_TLS_FAILED;
    if (e == SSL_ERROR_WANT_READ)
        return EGRESS_TLS_WANT_READ;
    if (e == SSL_ERROR_WANT_WRITE)
        return EGRESS_TLS_WANT_WRITE;
    c->broken = e != SSL_ERROR_ZERO_RETURN;
    if (e == SSL_ERROR_ZERO_RETURN) {
        rc = 0;
        if (strcmp(doing, "reading") != 0)
            rc = err_set(err, ERR_PROTOCOL, "the peer closed the TLS connection");
    } else if (e == SSL_ERROR_SYSCALL && saved != 0) {
        err_set(err, ERR_IO, "the connection failed while %s: %s", doing, strerror(saved));
    } else if (e == SSL_ERROR_SYSCALL || unexpected_eof()) {
        err_set(err, ERR_PROTOCOL, "the peer closed the connection without TLS close_notify");
        rc = EGRESS_TLS_TRUNCATED;
    } else {
        err_set(err, ERR_PROTOCOL, "TLS failed while %s: %s", doing, egress_tls_why());
    }
    ERR_clear_error();
    return rc;
}

ssize_t egress_tls_read(struct egress_tls_conn *c, void *buf, size_t cap, struct err *err)
{
    size_t got = 0;
    ERR_clear_error();
    errno = 0;
    int r = SSL_read_ex(c->ssl, buf, cap, &got);
    if (r == 1)
        return (ssize_t)got;
    return io_result(c, r, "reading", err);
}

ssize_t egress_tls_write(struct egress_tls_conn *c, const void *buf, size_t n, struct err *err)
{
    size_t put = 0;
    ERR_clear_error();
    errno = 0;
    int r = SSL_write_ex(c->ssl, buf, n, &put);
    if (r == 1)
        return (ssize_t)put;
    return io_result(c, r, "writing", err);
}

bool egress_tls_pending(const struct egress_tls_conn *c)
{
    return SSL_pending(c->ssl) > 0 || SSL_has_pending(c->ssl) == 1;
}

const char *egress_tls_alpn(const struct egress_tls_conn *c)
{
    const unsigned char *p = NULL;
    unsigned int n = 0;
    SSL_get0_alpn_selected(c->ssl, &p, &n);
    if (n == sizeof(alpn_http11) - 2 && memcmp(p, alpn_http11 + 1, n) == 0)
        return "http/1.1";
    return NULL;
}

int egress_tls_shutdown(struct egress_tls_conn *c, struct err *err)
{
    if (c->broken)
        return 0;
    ERR_clear_error();
    errno = 0;
    int r = SSL_shutdown(c->ssl);
    if (r >= 0)
        return 0;
    return (int)io_result(c, r, "closing", err);
}

void egress_tls_free(struct egress_tls_conn *c)
{
    if (!c)
        return;
    SSL_free(c->ssl);
    free(c);
}
