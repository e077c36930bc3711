/* libFuzzer harness for the attach-stream demultiplexer. The first four
 * input bytes seed the sizes of the pieces the rest is fed in (as reads
 * from a socket would cut it); the rest is the stream.
 *
 * Differential check: feeding in pieces must give exactly what feeding the
 * whole stream at once gives (the same bytes per stream, the same error,
 * the same boundary state), and that must match a plain reference parser
 * written here from the header format.
 *
 * Replay one input: build/fuzz/fuzz_engine_stream FILE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "backend/docker/engine_stream.h"

/* Payload collected per stream id (0..3); never more than the input. */
struct sink {
    unsigned char *bytes[4];
    size_t len[4];
    size_t cap;
    size_t calls;
};

static void sink_init(struct sink *k, size_t cap)
{
    memset(k, 0, sizeof(*k));
    k->cap = cap;
    for (int i = 0; i < 4; i++)
        k->bytes[i] = malloc(cap ? cap : 1);
}

static void sink_free(struct sink *k)
{
    for (int i = 0; i < 4; i++)
        free(k->bytes[i]);
}

static int on_payload(void *ctx, int stream, const char *p, size_t n, struct err *err)
{
    (void)err;
    struct sink *k = ctx;
    CHECK(stream >= 0 && stream <= 3);
    CHECK(n > 0);
    CHECK(k->len[stream] + n <= k->cap);
    memcpy(k->bytes[stream] + k->len[stream], p, n);
    k->len[stream] += n;
    k->calls++;
    return 0;
}

static void sink_equal(const struct sink *a, const struct sink *b)
{
    for (int i = 0; i < 4; i++) {
        CHECK(a->len[i] == b->len[i]);
        CHECK(a->len[i] == 0 || memcmp(a->bytes[i], b->bytes[i], a->len[i]) == 0);
    }
}

/* Reference: walk whole frames. Returns -1 at a malformed header. */
static int reference(const unsigned char *s, size_t n, struct sink *k, int *boundary)
{
    size_t off = 0;
    while (n - off >= 8) {
        const unsigned char *h = s + off;
        if (h[0] > 3 || h[1] || h[2] || h[3]) {
            *boundary = 0;
            return -1;
        }
        size_t len = (size_t)h[4] << 24 | (size_t)h[5] << 16 | (size_t)h[6] << 8 | h[7];
        off += 8;
        size_t take = len < n - off ? len : n - off;
        if (take)
            on_payload(k, h[0], (const char *)s + off, take, NULL);
        off += take;
        if (take < len) {
            *boundary = 0;
            return 0;
        }
    }
    *boundary = off == n;
    return 0;
}

static uint32_t next_rand(uint32_t *x)
{
    /* xorshift32: any seed but 0 */
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    uint32_t seed = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                    (uint32_t)data[3] << 24;
    if (seed == 0)
        seed = 1;
    const unsigned char *s = data + 4;
    size_t n = size - 4;

    /* Whole stream at once. */
    struct sink whole;
    sink_init(&whole, n);
    struct engine_stream es;
    engine_stream_init(&es);
    struct err err = ERR_INIT;
    int rc_whole = engine_stream_feed(&es, (const char *)s, n, on_payload, &whole, &err);
    CHECK(rc_whole == 0 || rc_whole == -1);
    CHECK((rc_whole == -1) == (err.msg != NULL));
    if (rc_whole < 0)
        CHECK(err.code == ERR_PROTOCOL);
    int boundary_whole = engine_stream_at_boundary(&es);
    err_clear(&err);

    /* The same stream in pieces of 0 to 2^k bytes. */
    struct sink pieces;
    sink_init(&pieces, n);
    engine_stream_init(&es);
    int rc_pieces = 0;
    size_t off = 0;
    while (off < n) {
        uint32_t r = next_rand(&seed);
        size_t want = r % 3 == 0 ? 0 : (size_t)(r >> 8) % ((size_t)1 << (r >> 2) % 13);
        if (want > n - off)
            want = n - off;
        int rc = engine_stream_feed(&es, (const char *)s + off, want, on_payload, &pieces, &err);
        off += want;
        if (rc < 0) {
            CHECK(rc == -1 && err.code == ERR_PROTOCOL);
            rc_pieces = rc;
            err_clear(&err);
            /* Once broken, it stays broken, even for an empty feed. */
            CHECK(engine_stream_feed(&es, (const char *)s, off < n ? 1 : 0, on_payload, &pieces,
                                     &err) == -1);
            CHECK(err.code == ERR_PROTOCOL);
            err_clear(&err);
            break;
        }
    }
    int boundary_pieces = engine_stream_at_boundary(&es);

    CHECK(rc_whole == rc_pieces);
    CHECK(boundary_whole == boundary_pieces);
    sink_equal(&whole, &pieces);

    struct sink ref;
    sink_init(&ref, n);
    int boundary_ref = 0;
    int rc_ref = reference(s, n, &ref, &boundary_ref);
    CHECK(rc_ref == rc_whole);
    CHECK(boundary_ref == boundary_whole);
    sink_equal(&ref, &whole);

    sink_free(&whole);
    sink_free(&pieces);
    sink_free(&ref);
    return 0;
}
