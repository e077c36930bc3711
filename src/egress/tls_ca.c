/* The egress gateway's CA and its leaves (tls.h). The certificates are
 * built with OpenSSL's X509 calls and signed with ECDSA P-256 / SHA-256;
 * the CA carries the subject key identifier and each leaf the authority
 * key identifier, which strict verifiers (Python 3.13's default context)
 * demand. */
#include "egress/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

/* The random part of the CA's name: 8 bytes, in hex. */
#define CA_TAG_BYTES 8
/* A serial's random bits (positive, under 20 octets). */
#define SERIAL_BITS 127

struct leaf_slot {
    char host[EGRESS_TLS_HOST_MAX + 1];
    SSL_CTX *ctx; /* NULL: free */
    time_t made;
    unsigned long long seq; /* when it came in: the smallest goes first */
};

struct egress_tls_ca {
    EVP_PKEY *key;      /* the CA's: memory only */
    EVP_PKEY *leaf_key; /* every leaf's */
    X509 *cert;
    time_t until; /* the CA's notAfter */
    char *pem;
    char *path;
    char *bundle_path;
    pthread_mutex_t lock; /* guards the cache */
    struct leaf_slot slots[EGRESS_TLS_LEAF_CACHE];
    unsigned long long seq;
};

const char *egress_tls_why(void)
{
    const char *r = ERR_reason_error_string(ERR_peek_last_error());
    return r ? r : "unknown OpenSSL error";
}

static int ssl_failed(struct err *err, enum err_code code, const char *what)
{
    err_set(err, code, "%s: %s", what, egress_tls_why());
    ERR_clear_error();
    return -1;
}

static EVP_PKEY *p256_key(void)
{
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

static int set_serial(X509 *x)
{
    BIGNUM *bn = BN_new();
    int ok = bn && BN_rand(bn, SERIAL_BITS, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
             BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
    BN_free(bn);
    return ok ? 0 : -1;
}

/* One extension in OpenSSL's config syntax; value is always a constant
 * of this file, never outside text. */
static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX v3;
    X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    int ok = ext && X509_add_ext(x, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok ? 0 : -1;
}

static int set_cn(X509_NAME *name, const char *cn)
{
    return X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                      0) == 1
               ? 0
               : -1;
}

/* The fields every certificate here has: version 3, a random serial, the
 * subject's key, its life from an hour back to until. */
static int base_fields(X509 *x, EVP_PKEY *key, time_t until)
{
    time_t now = time(NULL);
    if (X509_set_version(x, X509_VERSION_3) != 1 || set_serial(x) < 0 ||
        X509_set_pubkey(x, key) != 1)
        return -1;
    if (!ASN1_TIME_set(X509_getm_notBefore(x), now - 3600) ||
        !ASN1_TIME_set(X509_getm_notAfter(x), until))
        return -1;
    return 0;
}

static X509 *make_ca_cert(EVP_PKEY *key, time_t until)
{
    unsigned char tag[CA_TAG_BYTES];
    char hex[2 * CA_TAG_BYTES + 1];
    char cn[64];
    X509 *x = X509_new();
    if (!x || util_random_bytes(tag, sizeof(tag)) < 0)
        goto fail;
    util_hex(tag, sizeof(tag), hex);
    snprintf(cn, sizeof(cn), "mcp-sandboxd egress CA %s", hex);
    if (base_fields(x, key, until) < 0 || set_cn(X509_get_subject_name(x), cn) < 0 ||
        X509_set_issuer_name(x, X509_get_subject_name(x)) != 1)
        goto fail;
    if (add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
        add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
        add_ext(x, x, NID_subject_key_identifier, "hash") < 0 ||
        X509_sign(x, key, EVP_sha256()) <= 0)
        goto fail;
    return x;
fail:
    X509_free(x);
    return NULL;
}

static char *pem_of(X509 *x)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *out = NULL;
    char *data = NULL;
    if (b && PEM_write_bio_X509(b, x) == 1) {
        long n = BIO_get_mem_data(b, &data);
        if (n > 0)
            out = xstrndup(data, (size_t)n);
    }
    BIO_free(b);
    return out;
}

/* Writes a[0..an) then b[0..bn) to dir/name, 0644, whole or not at all. */
static char *write_public(const char *dir, const char *name, const char *a, size_t an,
                          const char *b, size_t bn, struct err *err)
{
    char *path = xasprintf("%s/%s", dir, name);
    cleanup_free char *tmp = xasprintf("%s/.%s-XXXXXX", dir, name);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        err_set(err, ERR_IO, "cannot write %s: %s", path, strerror(errno));
        goto fail;
    }
    if (fchmod(fd, 0644) < 0 || util_write_all(fd, a, an) < 0 || util_write_all(fd, b, bn) < 0 ||
        fsync(fd) < 0 || rename(tmp, path) < 0) {
        err_set(err, ERR_IO, "cannot write %s: %s", path, strerror(errno));
        close(fd);
        unlink(tmp);
        goto fail;
    }
    close(fd);
    return path;
fail:
    free(path);
    return NULL;
}

/* The whole file at path, at most cap bytes, NUL-terminated. */
static char *read_capped(const char *path, size_t cap, size_t *len, struct err *err)
{
    FILE *fp = fopen(path, "re");
    if (!fp) {
        err_set(err, ERR_IO, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = xmalloc(cap + 1);
    size_t n = fread(buf, 1, cap + 1, fp);
    int bad = ferror(fp);
    fclose(fp);
    if (bad || n > cap) {
        err_set(err, bad ? ERR_IO : ERR_TOO_BIG, bad ? "cannot read %s" : "%s is over %zu bytes",
                path, cap);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int write_files(struct egress_tls_ca *ca, const char *dir, const char *system_bundle,
                       struct err *err)
{
    int rc = -1;
    char *roots = NULL;
    size_t nroots = 0;
    const char *from = system_bundle ? system_bundle : EGRESS_TLS_SYSTEM_BUNDLE;
    int own = util_own_dir(dir, 0755, NULL);
    if (own < 0)
        return err_set(err, ERR_IO, "%s must be a directory of uid %u that only it can write: %s",
                       dir, (unsigned)geteuid(),
                       own == UTIL_DIR_NOT_OURS ? "it is not" : strerror(errno));
    if (*from && (system_bundle || access(from, F_OK) == 0)) {
        roots = read_capped(from, EGRESS_TLS_SYSTEM_BUNDLE_MAX, &nroots, err);
        if (!roots)
            goto out;
    }
    size_t npem = strlen(ca->pem);
    ca->path = write_public(dir, EGRESS_TLS_CA_FILE, ca->pem, npem, "", 0, err);
    if (!ca->path)
        goto out;
    /* The roots first, then a newline when they lack a last one. */
    if (nroots > 0 && roots[nroots - 1] != '\n')
        roots[nroots++] = '\n';
    ca->bundle_path =
        write_public(dir, EGRESS_TLS_BUNDLE_FILE, roots ? roots : "", nroots, ca->pem, npem, err);
    rc = ca->bundle_path ? 0 : -1;
out:
    free(roots);
    return rc;
}

int egress_tls_ca_new(const char *dir, const char *system_bundle, struct egress_tls_ca **out,
                      struct err *err)
{
    struct egress_tls_ca *ca = xcalloc(1, sizeof(*ca));
    int rc = -1;
    *out = NULL;
    pthread_mutex_init(&ca->lock, NULL);
    ca->until = time(NULL) + (time_t)EGRESS_TLS_CA_DAYS * 24 * 3600;
    ca->key = p256_key();
    ca->leaf_key = p256_key();
    if (!ca->key || !ca->leaf_key) {
        ssl_failed(err, ERR_INTERNAL, "cannot make the egress CA's keys");
        goto out;
    }
    ca->cert = make_ca_cert(ca->key, ca->until);
    ca->pem = ca->cert ? pem_of(ca->cert) : NULL;
    if (!ca->pem) {
        ssl_failed(err, ERR_INTERNAL, "cannot make the egress CA's certificate");
        goto out;
    }
    if (write_files(ca, dir, system_bundle, err) < 0) {
        err_wrap(err, "the egress CA");
        goto out;
    }
    *out = ca;
    ca = NULL;
    rc = 0;
out:
    egress_tls_ca_free(ca);
    return rc;
}

void egress_tls_ca_free(struct egress_tls_ca *ca)
{
    if (!ca)
        return;
    for (size_t i = 0; i < EGRESS_TLS_LEAF_CACHE; i++)
        SSL_CTX_free(ca->slots[i].ctx);
    if (ca->path)
        unlink(ca->path);
    if (ca->bundle_path)
        unlink(ca->bundle_path);
    EVP_PKEY_free(ca->key); /* OpenSSL wipes a key's secret as it frees it */
    EVP_PKEY_free(ca->leaf_key);
    X509_free(ca->cert);
    free(ca->pem);
    free(ca->path);
    free(ca->bundle_path);
    pthread_mutex_destroy(&ca->lock);
    free(ca);
}

const char *egress_tls_ca_path(const struct egress_tls_ca *ca)
{
    return ca->path;
}

const char *egress_tls_ca_bundle_path(const struct egress_tls_ca *ca)
{
    return ca->bundle_path;
}

const char *egress_tls_ca_pem(const struct egress_tls_ca *ca)
{
    return ca->pem;
}

/* The leaves. */

/* host, checked, in lower case as the cache keys it. */
static int host_key(const char *host, char key[EGRESS_TLS_HOST_MAX + 1], struct err *err)
{
    size_t n = strnlen(host, EGRESS_TLS_HOST_MAX + 1);
    if (n == 0 || n > EGRESS_TLS_HOST_MAX)
        return err_set(err, ERR_INVALID, "a TLS host must be 1 to %d bytes", EGRESS_TLS_HOST_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)host[i];
        if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') &&
            !strchr(".-_:", c))
            return err_set(err, ERR_INVALID, "a TLS host has a byte 0x%02x a host cannot have", c);
        key[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    key[n] = '\0';
    return 0;
}

/* host as the leaf's one subject alternative name: an IP address for a
 * literal, else a DNS name. */
static int add_san(X509 *x, const char *host)
{
    unsigned char addr[16];
    bool ip = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
    GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
    GENERAL_NAME *gn = GENERAL_NAME_new();
    ASN1_STRING *value = ip ? a2i_IPADDRESS(host) : ASN1_IA5STRING_new();
    int rc = -1;
    if (!names || !gn || !value || (!ip && ASN1_STRING_set(value, host, -1) != 1))
        goto out;
    GENERAL_NAME_set0_value(gn, ip ? GEN_IPADD : GEN_DNS, value);
    value = NULL;
    if (!sk_GENERAL_NAME_push(names, gn))
        goto out;
    gn = NULL;
    if (X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT) == 1)
        rc = 0;
out:
    ASN1_STRING_free(value);
    GENERAL_NAME_free(gn);
    GENERAL_NAMES_free(names);
    return rc;
}

static X509 *mint_cert(const struct egress_tls_ca *ca, const char *host)
{
    time_t until = time(NULL) + (time_t)EGRESS_TLS_LEAF_DAYS * 24 * 3600;
    X509 *x = X509_new();
    if (until > ca->until)
        until = ca->until;
    /* A CN holds 64 characters at most; the SAN is what clients check. */
    const char *cn = strlen(host) <= 64 ? host : "mcp-sandboxd egress leaf";
    if (!x || base_fields(x, ca->leaf_key, until) < 0 || set_cn(X509_get_subject_name(x), cn) < 0 ||
        X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) != 1)
        goto fail;
    if (add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
        add_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") < 0 ||
        add_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") < 0 ||
        add_ext(x, ca->cert, NID_subject_key_identifier, "hash") < 0 ||
        add_ext(x, ca->cert, NID_authority_key_identifier, "keyid:always") < 0 ||
        add_san(x, host) < 0 || X509_sign(x, ca->key, EVP_sha256()) <= 0)
        goto fail;
    return x;
fail:
    X509_free(x);
    return NULL;
}

/* ALPN: "http/1.1" when the client offers it, else none at all (a client
 * offering only h2 gets no h2, and speaks HTTP/1.1 or gives up). */
static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    static const unsigned char ours[] = "\x08http/1.1";
    unsigned char *sel = NULL;
    (void)ssl;
    (void)arg;
    if (SSL_select_next_proto(&sel, outlen, ours, sizeof(ours) - 1, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

static SSL_CTX *server_ctx(X509 *leaf, EVP_PKEY *key)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
        SSL_CTX_use_certificate(ctx, leaf) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_alpn_select_cb(ctx, select_alpn, NULL);
    return ctx;
}

static SSL_CTX *mint(const struct egress_tls_ca *ca, const char *host, struct err *err)
{
    X509 *leaf = mint_cert(ca, host);
    SSL_CTX *ctx = leaf ? server_ctx(leaf, ca->leaf_key) : NULL;
    X509_free(leaf);
    if (!ctx)
        ssl_failed(err, ERR_INTERNAL, "cannot make a TLS certificate for the egress gateway");
    return ctx;
}

/* Under the lock: host's slot, or NULL. */
static struct leaf_slot *slot_of(struct egress_tls_ca *ca, const char *host)
{
    for (size_t i = 0; i < EGRESS_TLS_LEAF_CACHE; i++)
        if (ca->slots[i].ctx && strcmp(ca->slots[i].host, host) == 0)
            return &ca->slots[i];
    return NULL;
}

/* Under the lock: a free slot, else the oldest one's, emptied. */
static struct leaf_slot *slot_new(struct egress_tls_ca *ca)
{
    struct leaf_slot *oldest = &ca->slots[0];
    for (size_t i = 0; i < EGRESS_TLS_LEAF_CACHE; i++) {
        if (!ca->slots[i].ctx)
            return &ca->slots[i];
        if (ca->slots[i].seq < oldest->seq)
            oldest = &ca->slots[i];
    }
    SSL_CTX_free(oldest->ctx);
    oldest->ctx = NULL;
    return oldest;
}

static bool fresh(const struct leaf_slot *s, time_t now)
{
    return now - s->made < EGRESS_TLS_LEAF_REUSE_S;
}

/* Under the lock: keeps ctx (the cache takes the caller's reference)
 * unless another thread minted host's first; the context to use, with a
 * reference for the caller. */
static SSL_CTX *keep(struct egress_tls_ca *ca, const char *host, SSL_CTX *ctx, time_t now)
{
    struct leaf_slot *s = slot_of(ca, host);
    if (s && fresh(s, now)) {
        SSL_CTX_free(ctx);
        SSL_CTX_up_ref(s->ctx);
        return s->ctx;
    }
    if (s) {
        SSL_CTX_free(s->ctx);
        s->ctx = NULL;
    } else {
        s = slot_new(ca);
    }
    snprintf(s->host, sizeof(s->host), "%s", host);
    s->ctx = ctx;
    s->made = now;
    s->seq = ++ca->seq;
    SSL_CTX_up_ref(ctx);
    return ctx;
}

int egress_tls_ca_leaf(struct egress_tls_ca *ca, const char *host, SSL_CTX **out, struct err *err)
{
    char key[EGRESS_TLS_HOST_MAX + 1];
    *out = NULL;
    if (host_key(host, key, err) < 0)
        return -1;
    time_t now = time(NULL);
    pthread_mutex_lock(&ca->lock);
    struct leaf_slot *s = slot_of(ca, key);
    SSL_CTX *hit = s && fresh(s, now) ? s->ctx : NULL;
    if (hit)
        SSL_CTX_up_ref(hit);
    pthread_mutex_unlock(&ca->lock);
    if (hit) {
        *out = hit;
        return 0;
    }
    /* Minted outside the lock: other hosts' threads need not wait. */
    SSL_CTX *ctx = mint(ca, key, err);
    if (!ctx)
        return -1;
    pthread_mutex_lock(&ca->lock);
    *out = keep(ca, key, ctx, now);
    pthread_mutex_unlock(&ca->lock);
    return 0;
}

size_t egress_tls_ca_cached(struct egress_tls_ca *ca)
{
    size_t n = 0;
    pthread_mutex_lock(&ca->lock);
    for (size_t i = 0; i < EGRESS_TLS_LEAF_CACHE; i++)
        n += ca->slots[i].ctx != NULL;
    pthread_mutex_unlock(&ca->lock);
    return n;
}
