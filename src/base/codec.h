/* Base64 (RFC 4648, standard alphabet, padded) and SHA-256, through
 * Nettle: the encodings file contents travel in (MCP blobs, the runner's
 * file frames) and the digest the results report. */
#ifndef MCPSBX_CODEC_H
#define MCPSBX_CODEC_H

#include <stdbool.h>
#include <stddef.h>

#include <nettle/sha2.h>

#include "base/buf.h"

#define CODEC_SHA256_HEX_LEN 64

/* Bytes that n base64 characters decode to at most. */
#define CODEC_BASE64_DECODED_MAX(n) ((n) / 4 * 3 + 3)
/* Characters that n bytes encode to, padded (unpadded is no longer). */
#define CODEC_BASE64_LEN(n) (((n) + 2) / 3 * 4)

/* Appends the base64 of data[0..n) to out. -1 when out's cap is reached
 * (out is then as it was). */
int codec_base64_encode(const void *data, size_t n, struct buf *out);

/* The same in either alphabet (RFC 4648 section 4 or 5), with or without
 * the '=' padding. */
enum codec_alphabet { CODEC_BASE64, CODEC_BASE64URL };
int codec_base64_encode_as(const void *data, size_t n, enum codec_alphabet alphabet, bool pad,
                           struct buf *out);

/* Appends data[0..n) percent-encoded (uppercase %XX) to out: RFC 3986's
 * unreserved characters and those in keep (may be "") stay as they are.
 * -1 when out's cap is reached (out is then as it was). */
int codec_percent_encode(const void *data, size_t n, const char *keep, struct buf *out);

/* Decodes strict base64: the standard alphabet, '=' padding only at the
 * end, no whitespace, a length that is a multiple of 4. Appends to out
 * (nothing on failure). Returns the number of bytes added, or -1 when the
 * text is not base64 or out's cap is reached. out may be NULL to only
 * check and count. */
long long codec_base64_decode(const char *text, size_t n, struct buf *out);

/* SHA-256 of data[0..n) as CODEC_SHA256_HEX_LEN lowercase hex digits and
 * a NUL. */
void codec_sha256_hex(const void *data, size_t n, char out[CODEC_SHA256_HEX_LEN + 1]);

/* Incremental SHA-256. */
struct codec_sha256 {
    struct sha256_ctx ctx;
};
void codec_sha256_init(struct codec_sha256 *h);
void codec_sha256_update(struct codec_sha256 *h, const void *data, size_t n);
void codec_sha256_hex_final(struct codec_sha256 *h, char out[CODEC_SHA256_HEX_LEN + 1]);

#endif
