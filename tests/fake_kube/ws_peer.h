/* The server side of RFC 6455 written out by hand for the Kubernetes
 * stream tests (so libwslay, which the daemon uses, is checked against
 * other code): frames out unmasked, frames in unmasked here, and the
 * handshake's accept value computed with OpenSSL. */
#ifndef MCPSBX_TEST_WS_PEER_H
#define MCPSBX_TEST_WS_PEER_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>

/* A frame a client sent, its payload's first bytes kept. */
struct ws_frame {
    int opcode;
    unsigned char data[64];
    size_t len;   /* kept in data */
    size_t total; /* the payload's whole length */
    bool masked;
};

/* Sends one frame: b0 is FIN and the opcode (0x82: a whole binary one). */
void ws_frame_out(SSL *ssl, int b0, const void *data, size_t n);

/* Reads one frame; -1 when the client went first. */
int ws_frame_in(SSL *ssl, struct ws_frame *f);

/* The Sec-WebSocket-Accept value for the request head's key (out: 29+). */
void ws_accept_of(const char *head, char out[64]);

/* Answers the upgrade in head with 101, choosing protocol (NULL: none),
 * accept spoiled on purpose when bad_accept. */
void ws_upgrade(SSL *ssl, const char *head, const char *protocol, bool bad_accept);

#endif
