/* A loopback HTTPS server in the test's own process, for the Kubernetes
 * API client's unit tests: the egress CA mints its certificate for
 * 127.0.0.1, and each connection, one at a time, is handed to the test's
 * handler after the TLS handshake. */
#ifndef MCPSBX_TEST_TLS_SERVER_H
#define MCPSBX_TEST_TLS_SERVER_H

#include <openssl/ssl.h>
#include <stddef.h>

#include "backend/kubernetes/kube_api.h"
#include "egress/tls.h"

typedef void (*tls_server_fn)(void *ctx, SSL *ssl);

struct tls_server;

/* Listens on 127.0.0.1 (a free port); NULL on failure. */
struct tls_server *tls_server_start(struct egress_tls_ca *ca, tls_server_fn fn, void *ctx);
int tls_server_port(const struct tls_server *s);
/* "https://127.0.0.1:PORT" */
const char *tls_server_url(const struct tls_server *s);
void tls_server_stop(struct tls_server *s);

/* A test group's CA in a fresh directory under /tmp (dir: 64 bytes),
 * with curl's global set-up; 0 or -1. */
int tls_ca_setup(char *dir, struct egress_tls_ca **ca);
/* Frees it, removes its directory and curl's global state. */
int tls_ca_teardown(char *dir, struct egress_tls_ca *ca);

/* A Kubernetes API client for s that trusts ca; token may be NULL. */
struct kube_api *tls_server_client(const struct tls_server *s, struct egress_tls_ca *ca,
                                   char *token);

void tls_put(SSL *ssl, const void *data, size_t n);
void tls_puts(SSL *ssl, const char *s);
/* One chunk of a chunked body. */
void tls_chunk(SSL *ssl, const char *s);
/* Reads a request's head and (by Content-Length) its body into buf,
 * NUL-terminated; returns the length. */
size_t tls_read_request(SSL *ssl, char *buf, size_t cap);
/* A request as tls_take_request read it. */
struct tls_request {
    char line[256];   /* its first line, e.g. "GET /api HTTP/1.1" (cut at the cap) */
    const char *head; /* the whole of it, in the caller's buffer */
    const char *body;
    size_t body_len;
};

/* tls_read_request into buf, split: -1 when no whole head came. */
int tls_take_request(SSL *ssl, char *buf, size_t cap, struct tls_request *r);

/* Answers status ("200 OK") with a JSON body. */
void tls_answer_json(SSL *ssl, const char *status, const char *body);

/* Reads until the client goes. */
void tls_drain(SSL *ssl);
/* Reads exactly n bytes; -1 when the client went first. */
int tls_read_full(SSL *ssl, void *buf, size_t n);

#endif
