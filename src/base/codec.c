#include "base/codec.h"

#include <string.h>

#include <nettle/base64.h>

#include "base/util.h"

/* Input bytes per encoding step: a multiple of 3, so only the last step pads. */
#define ENCODE_STEP 3072

static int undo(struct buf *out, size_t old_len)
{
    out->len = old_len;
    if (out->data)
        out->data[old_len] = '\0';
    return -1;
}

int codec_base64_encode_as(const void *data, size_t n, enum codec_alphabet alphabet, bool pad,
                           struct buf *out)
{
    const uint8_t *p = data;
    size_t old_len = out->len;
    struct base64_encode_ctx ctx;
    if (alphabet == CODEC_BASE64URL)
        base64url_encode_init(&ctx);
    else
        base64_encode_init(&ctx);
    char chunk[BASE64_ENCODE_LENGTH(ENCODE_STEP) + BASE64_ENCODE_FINAL_LENGTH];
    while (n) {
        size_t take = n < ENCODE_STEP ? n : ENCODE_STEP;
        size_t k = base64_encode_update(&ctx, chunk, take, p);
        if (buf_add(out, chunk, k) < 0)
            return undo(out, old_len);
        p += take;
        n -= take;
    }
    size_t k = base64_encode_final(&ctx, chunk);
    while (!pad && k && chunk[k - 1] == '=')
        k--;
    if (k && buf_add(out, chunk, k) < 0)
        return undo(out, old_len);
    return 0;
}

int codec_base64_encode(const void *data, size_t n, struct buf *out)
{
    return codec_base64_encode_as(data, n, CODEC_BASE64, true, out);
}

int codec_percent_encode(const void *data, size_t n, const char *keep, struct buf *out)
{
    static const char digits[] = "0123456789ABCDEF";
    const unsigned char *p = data;
    size_t old_len = out->len;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '.' || c == '_' || c == '~' || (c && strchr(keep, c));
        char esc[3] = {'%', digits[c >> 4], digits[c & 15]};
        if (buf_add(out, plain ? (const char *)&p[i] : esc, plain ? 1 : 3) < 0)
            return undo(out, old_len);
    }
    return 0;
}

static bool base64_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

/* Strict form, which Nettle alone does not check (it skips whitespace). */
static bool base64_strict(const char *text, size_t n)
{
    if (n % 4)
        return false;
    size_t pad = 0;
    if (n && text[n - 1] == '=')
        pad = n >= 2 && text[n - 2] == '=' ? 2 : 1;
    for (size_t i = 0; i < n - pad; i++)
        if (!base64_char(text[i]))
            return false;
    return true;
}

long long codec_base64_decode(const char *text, size_t n, struct buf *out)
{
    if (!base64_strict(text, n))
        return -1;
    size_t pad = n && text[n - 1] == '=' ? (n >= 2 && text[n - 2] == '=' ? 2 : 1) : 0;
    long long total = (long long)(n / 4 * 3 - pad);
    if (!out)
        return total;
    size_t old_len = out->len;
    struct base64_decode_ctx ctx;
    base64_decode_init(&ctx);
    uint8_t chunk[BASE64_DECODE_LENGTH(4096)];
    while (n) {
        size_t take = n < 4096 ? n : 4096;
        size_t got = sizeof(chunk);
        if (!base64_decode_update(&ctx, &got, chunk, take, text) || buf_add(out, chunk, got) < 0)
            goto fail;
        text += take;
        n -= take;
    }
    if (!base64_decode_final(&ctx) || out->len - old_len != (size_t)total)
        goto fail;
    return total;
fail:
    return undo(out, old_len);
}

void codec_sha256_init(struct codec_sha256 *h)
{
    sha256_init(&h->ctx);
}

void codec_sha256_update(struct codec_sha256 *h, const void *data, size_t n)
{
    sha256_update(&h->ctx, n, data);
}

void codec_sha256_hex_final(struct codec_sha256 *h, char out[CODEC_SHA256_HEX_LEN + 1])
{
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_digest(&h->ctx, sizeof(digest), digest);
    util_hex(digest, sizeof(digest), out);
}

void codec_sha256_hex(const void *data, size_t n, char out[CODEC_SHA256_HEX_LEN + 1])
{
    struct codec_sha256 h;
    codec_sha256_init(&h);
    codec_sha256_update(&h, data, n);
    codec_sha256_hex_final(&h, out);
}
