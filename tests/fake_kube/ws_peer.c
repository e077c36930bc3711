/* The hand-written WebSocket server side of ws_peer.h. */
#include "fake_kube/ws_peer.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_kube/tls_server.h"

void ws_frame_out(SSL *ssl, int b0, const void *data, size_t n)
{
    unsigned char h[10];
    size_t hl = 2;
    h[0] = (unsigned char)b0;
    if (n < 126) {
        h[1] = (unsigned char)n;
    } else if (n < 65536) {
        h[1] = 126, h[2] = (unsigned char)(n >> 8), h[3] = (unsigned char)n;
        hl = 4;
    } else {
        h[1] = 127;
        for (int i = 0; i < 8; i++)
            h[2 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
        hl = 10;
    }
    tls_put(ssl, h, hl);
    if (n)
        tls_put(ssl, data, n);
}

int ws_frame_in(SSL *ssl, struct ws_frame *f)
{
    unsigned char h[2], ext[8], mask[4] = {0};
    if (tls_read_full(ssl, h, 2) < 0)
        return -1;
    f->opcode = h[0] & 0x0F;
    f->masked = (h[1] & 0x80) != 0;
    uint64_t n = h[1] & 0x7F;
    if (n == 126 || n == 127) {
        size_t el = n == 126 ? 2 : 8;
        if (tls_read_full(ssl, ext, el) < 0)
            return -1;
        n = 0;
        for (size_t i = 0; i < el; i++)
            n = n << 8 | ext[i];
    }
    if (n > (1u << 24) || (f->masked && tls_read_full(ssl, mask, 4) < 0))
        return -1;
    unsigned char *p = malloc(n + 1);
    if (!p || (n && tls_read_full(ssl, p, n) < 0)) {
        free(p);
        return -1;
    }
    for (uint64_t i = 0; i < n; i++)
        p[i] ^= mask[i % 4];
    f->total = n;
    f->len = n < sizeof(f->data) ? n : sizeof(f->data);
    memcpy(f->data, p, f->len);
    free(p);
    return 0;
}

void ws_accept_of(const char *head, char out[64])
{
    char buf[128] = {0};
    const char *k = strcasestr(head, "Sec-WebSocket-Key: ");
    if (k) {
        k += 19;
        size_t kl = strcspn(k, "\r");
        if (kl < 64)
            memcpy(buf, k, kl);
    }
    strcat(buf, "258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    unsigned char d[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)buf, strlen(buf), d);
    EVP_EncodeBlock((unsigned char *)out, d, sizeof(d));
}

void ws_upgrade(SSL *ssl, const char *head, const char *protocol, bool bad_accept)
{
    char acc[64], out[512];
    ws_accept_of(head, acc);
    if (bad_accept)
        acc[0] = acc[0] == 'A' ? 'B' : 'A';
    snprintf(out, sizeof(out),
             "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Accept: %s\r\n%s%s%s\r\n",
             acc, protocol ? "Sec-WebSocket-Protocol: " : "", protocol ? protocol : "",
             protocol ? "\r\n" : "");
    tls_puts(ssl, out);
}
