/* TLS for the egress gateway, on OpenSSL 3 (the library libcurl links
 * here): the daemon's own CA, whose leaves let the gateway terminate a
 * sandbox's TLS for a host, and the contexts and connections of both
 * sides. Engine-neutral; what is terminated, and why, is the gateway's
 * business.
 *
 * The CA (tls_ca.c) is made at start: a fresh EC P-256 key that lives in
 * this process's memory only and is never written anywhere, and a
 * self-signed certificate, written (public) to <dir>/egress-ca.pem, and
 * with the host's public roots to <dir>/egress-ca-bundle.pem, the file a
 * sandbox's SSL_CERT_FILE, REQUESTS_CA_BUNDLE and PIP_CERT name
 * (NODE_EXTRA_CA_CERTS, which adds to Node's roots, names egress-ca.pem).
 * Leaves are minted per host on demand, signed by the CA, all with one
 * second P-256 key, and kept in a bounded cache shared by every thread.
 *
 * The connections (tls_io.c) run over a connected non-blocking socket
 * the caller owns: the handshake is driven here with poll(2) on the
 * socket and a stop descriptor, under a deadline; after it, reads and
 * writes never block and say what they wait for, so a caller's poll loop
 * (relay.c's shape) drives both ways. Both sides speak TLS 1.2 or later
 * and offer or accept ALPN "http/1.1" only: a client never gets HTTP/2
 * from the gateway, which reads HTTP/1.1 heads inside. The upstream side
 * verifies the upstream's certificate against the host's trust store
 * (OpenSSL's default paths) and --egress-upstream-ca's certificates, and
 * checks it names the host (SNI sent for a name, never for a literal).
 *
 * Messages never hold a payload byte; a host in one is escaped. */
#ifndef MCPSBX_EGRESS_TLS_H
#define MCPSBX_EGRESS_TLS_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/err.h"

/* The files egress_tls_ca_new writes in its directory. */
#define EGRESS_TLS_CA_FILE     "egress-ca.pem"
#define EGRESS_TLS_BUNDLE_FILE "egress-ca-bundle.pem"
/* The host's public roots, Debian's and Ubuntu's place. */
#define EGRESS_TLS_SYSTEM_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
/* The longest system bundle read (Debian's is about 220 KiB). */
#define EGRESS_TLS_SYSTEM_BUNDLE_MAX (8 * 1024 * 1024)
/* The longest --egress-upstream-ca file read. */
#define EGRESS_TLS_EXTRA_CA_MAX (4 * 1024 * 1024)
/* The CA's life from its start; each leaf's (never past the CA's). Both
 * begin an hour back, for clocks a little behind. The CA outlives any
 * daemon run (its key is the run's, in memory only): a leaf minted late
 * in a long run must not be born expired. */
#define EGRESS_TLS_CA_DAYS   3650
#define EGRESS_TLS_LEAF_DAYS 7
/* A cached leaf is minted again once this old, well inside its life. */
#define EGRESS_TLS_LEAF_REUSE_S (24 * 3600)
/* Hosts whose leaves are kept; past it the oldest goes. */
#define EGRESS_TLS_LEAF_CACHE 256
/* The longest host a leaf is minted for (a DNS name's longest). */
#define EGRESS_TLS_HOST_MAX 253

struct egress_tls_ca;

/* Makes the CA and writes its two files in dir (made 0755 if missing;
 * it must be this uid's and writable by no one else: what is there is
 * what sandboxes trust), each 0644, written whole and renamed into place.
 * system_bundle: the host's roots to put first in the bundle; NULL for
 * EGRESS_TLS_SYSTEM_BUNDLE, skipped when that is missing; "" for none.
 * One directory per daemon: another daemon writing there replaces them. */
int egress_tls_ca_new(const char *dir, const char *system_bundle, struct egress_tls_ca **out,
                      struct err *err);

/* Frees the CA (its key wiped) and removes the two files it wrote. NULL
 * is a no-op. */
void egress_tls_ca_free(struct egress_tls_ca *ca);

const char *egress_tls_ca_path(const struct egress_tls_ca *ca);
const char *egress_tls_ca_bundle_path(const struct egress_tls_ca *ca);
/* The CA certificate as PEM text (public). */
const char *egress_tls_ca_pem(const struct egress_tls_ca *ca);

/* A server context presenting a leaf for host (a DNS name, or an IPv4 or
 * IPv6 literal without brackets: an IP SAN), from the cache or minted
 * now. The caller holds a reference: SSL_CTX_free it. Thread-safe.
 * ERR_INVALID for a host that is empty, too long or not printable. */
int egress_tls_ca_leaf(struct egress_tls_ca *ca, const char *host, SSL_CTX **out, struct err *err);

/* Hosts in the leaf cache now (for tests and logs). */
size_t egress_tls_ca_cached(struct egress_tls_ca *ca);

/* The upstream side's context: verification on, against OpenSSL's
 * default trust store plus, when extra_ca_file is not NULL, every
 * certificate in that PEM file (at least one, or ERR_INVALID). Shared
 * read-only by every connection; SSL_CTX_free it. */
int egress_tls_client_new(const char *extra_ca_file, SSL_CTX **out, struct err *err);

/* The reason of this thread's last OpenSSL error, for messages; never
 * NULL. */
const char *egress_tls_why(void);

/* One TLS connection over a socket the caller owns (never closed here). */
struct egress_tls_conn;

/* The sandbox's side: a server handshake with ctx (a leaf's) on the
 * connected non-blocking fd. The upstream's side: a client handshake with
 * ctx (egress_tls_client_new's) for host (as egress_tls_ca_leaf takes
 * it). Both wait at most until deadline (util_now_ms time) and stop at
 * once when stop_fd (-1: none) becomes readable. 0 and *out; or -1 with
 * err: ERR_CANCELLED (stop_fd), ERR_TIMEOUT (deadline), ERR_PROTOCOL (the
 * peer's TLS refused, the upstream's certificate not verified, the peer
 * closed), ERR_IO (the socket failed), ERR_INVALID (host). */
int egress_tls_accept(SSL_CTX *ctx, int fd, double deadline, int stop_fd,
                      struct egress_tls_conn **out, struct err *err);
int egress_tls_connect(SSL_CTX *ctx, int fd, const char *host, double deadline, int stop_fd,
                       struct egress_tls_conn **out, struct err *err);

/* What egress_tls_read, egress_tls_write and egress_tls_shutdown give
 * besides a count: wait for the socket to be readable (WANT_READ) or
 * writable (WANT_WRITE), then call again (a write with the same bytes);
 * the peer ended without close_notify (TRUNCATED: the stream may be cut
 * short; err says so); a failure (FAILED, with err). */
enum egress_tls_io {
    EGRESS_TLS_FAILED = -1,
    EGRESS_TLS_WANT_READ = -2,
    EGRESS_TLS_WANT_WRITE = -3,
    EGRESS_TLS_TRUNCATED = -4,
};

/* Up to cap bytes: the count; 0 when the peer closed with close_notify;
 * or an enum egress_tls_io. */
ssize_t egress_tls_read(struct egress_tls_conn *c, void *buf, size_t cap, struct err *err);

/* Writes some of buf[0..n) (n > 0): the count, or an enum egress_tls_io. */
ssize_t egress_tls_write(struct egress_tls_conn *c, const void *buf, size_t n, struct err *err);

/* True when a read may give bytes the socket's readiness will not show
 * (decrypted or received already): read before polling again. */
bool egress_tls_pending(const struct egress_tls_conn *c);

/* The ALPN protocol agreed ("http/1.1"), or NULL when none was. */
const char *egress_tls_alpn(const struct egress_tls_conn *c);

/* Sends close_notify (never waits for the peer's): 0 once sent, or when
 * the connection failed (nothing may follow a fatal error); WANT_WRITE or
 * WANT_READ to call again; or FAILED. */
int egress_tls_shutdown(struct egress_tls_conn *c, struct err *err);

/* Frees c (not its socket). NULL is a no-op. */
void egress_tls_free(struct egress_tls_conn *c);

#endif
