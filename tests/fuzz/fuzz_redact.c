/* libFuzzer harness for the redaction of secrets in program output (the
 * program controls every byte). Input: byte 0 is how many split points
 * follow (0..15), then that many bytes each giving the size of the next
 * piece; the rest is the output stream, fed in those pieces.
 *
 * Checks src/sandbox/redact.h's contract for two fixed secrets:
 *   - how the stream is cut into pieces changes nothing;
 *   - no secret, nor any of its encoded forms, is left in what comes out;
 *   - a stream holding no byte that starts a form comes out unchanged.
 *
 * Replay one input: build/fuzz/fuzz_redact FILE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sandbox/redact.h"

/* Their forms, computed by hand: base64 (+ URL-safe), hex, HEX, URL. */
static const char *const forms[] = {
    "ab/c+d=e",       "YWIvYytkPWU", "YWIvYytkPWU", "61622f632b643d65", "61622F632B643D65",
    "ab%2Fc%2Bd%3De", "zzzz",        "enp6eg",      "7a7a7a7a",         "7A7A7A7A",
};

struct out {
    char *bytes;
    size_t len, cap;
};

static int sink(void *ctx, const char *p, size_t n)
{
    struct out *o = ctx;
    if (o->len + n > o->cap) {
        o->cap = 2 * (o->len + n) + 64;
        o->bytes = realloc(o->bytes, o->cap);
        CHECK(o->bytes != NULL);
    }
    if (n)
        memcpy(o->bytes + o->len, p, n);
    o->len += n;
    return 0;
}

static void feed(const struct redactor *r, const uint8_t *data, size_t size, const size_t *cuts,
                 size_t ncuts, struct out *o)
{
    struct redact_stream s = {0};
    size_t off = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t n = cuts && i < ncuts ? cuts[i] : size - off;
        if (n > size - off)
            n = size - off;
        CHECK(redact_feed(r, &s, (const char *)data + off, n, sink, o) == 0);
        off += n;
    }
    CHECK(redact_flush(r, &s, sink, o) == 0);
    redact_stream_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct redactor *r;
    if (!r) {
        const char *names[] = {"A", "B"};
        const char *values[] = {"ab/c+d=e", "zzzz"};
        r = redactor_new(names, values, 2);
        CHECK(r != NULL);
    }
    if (size == 0)
        return 0;
    size_t ncuts = data[0] & 15;
    if (size < 1 + ncuts)
        return 0;
    size_t cuts[15];
    for (size_t i = 0; i < ncuts; i++)
        cuts[i] = data[1 + i];
    const uint8_t *stream = data + 1 + ncuts;
    size_t n = size - 1 - ncuts;

    struct out whole = {0}, pieces = {0};
    feed(r, stream, n, NULL, 0, &whole);
    feed(r, stream, n, cuts, ncuts, &pieces);
    CHECK(whole.len == pieces.len);
    CHECK(whole.len == 0 || memcmp(whole.bytes, pieces.bytes, whole.len) == 0);
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
        CHECK(whole.len == 0 || !memmem(whole.bytes, whole.len, forms[i], strlen(forms[i])));
    /* No byte a form starts with: nothing to replace. */
    if (!memchr(stream, 'a', n) && !memchr(stream, 'Y', n) && !memchr(stream, '6', n) &&
        !memchr(stream, 'z', n) && !memchr(stream, 'e', n) && !memchr(stream, '7', n)) {
        CHECK(whole.len == n);
        CHECK(n == 0 || memcmp(whole.bytes, stream, n) == 0);
    }
    free(whole.bytes);
    free(pieces.bytes);
    return 0;
}
