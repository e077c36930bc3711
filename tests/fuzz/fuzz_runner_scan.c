/* libFuzzer harness for the completion-record scanner that reads the
 * program's stdout. Input: byte 0 is how many split points follow (0..15),
 * then that many bytes each giving the size of the next piece; the rest is
 * the stdout stream, scanned for the record of a fixed nonce.
 *
 * Checks the contract in src/runner.h against a plain reference (memmem
 * for the marker, then the record up to '\n'):
 *   - without a complete marker, every byte comes out, in order (after
 *     runner_scan_flush), and the scan is not done;
 *   - with a marker, exactly the bytes before it come out; once the record
 *     line is complete (and within RUNNER_MAX_RECORD) the scan is done and
 *     runner_scan_result either parses it or fails with a message;
 *   - how the stream is cut into pieces changes nothing;
 *   - with byte 0's top bit set the stream is a warm runner's: it must
 *     start with RUNNER_GO, which is dropped (then as above on the rest);
 *     anything else there is an error with no output, a part of it is
 *     no output and not started.
 *
 * Replay one input: build/fuzz/fuzz_runner_scan FILE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sandbox/runner.h"

#define NONCE "0123456789abcdef0123456789abcdef"

struct out {
    char *bytes;
    size_t len;
    size_t cap;
};

static int emit(void *ctx, const char *p, size_t n)
{
    struct out *o = ctx;
    CHECK(o->len + n <= o->cap);
    if (n)
        memcpy(o->bytes + o->len, p, n);
    o->len += n;
    return 0;
}

struct scan_outcome {
    struct out out;
    int rc; /* first negative feed result, else 0 */
    bool done;
    bool in_record;
    bool started;
};

/* Scans s[0..n) cut at the given piece sizes (the rest in one piece). */
static void scan(const char *s, size_t n, const unsigned char *cuts, size_t ncuts, bool warm,
                 struct scan_outcome *res)
{
    memset(res, 0, sizeof(*res));
    res->out.cap = n;
    res->out.bytes = malloc(n ? n : 1);
    struct runner_scan sc;
    runner_scan_init(&sc, NONCE);
    if (warm)
        runner_scan_expect_go(&sc);
    struct err err = ERR_INIT;
    size_t off = 0;
    for (size_t i = 0; i <= ncuts && res->rc == 0; i++) {
        size_t want = i < ncuts ? cuts[i] : n - off;
        if (want > n - off)
            want = n - off;
        int rc = runner_scan_feed(&sc, s + off, want, emit, &res->out, &err);
        off += want;
        if (rc < 0) {
            CHECK(err.msg != NULL);
            err_clear(&err);
            res->rc = rc;
        }
    }
    if (res->rc == 0)
        CHECK(runner_scan_flush(&sc, emit, &res->out) == 0);
    res->done = sc.done;
    res->in_record = sc.in_record;
    res->started = runner_scan_started(&sc);
    if (sc.done) {
        struct runner_done d = {0};
        if (runner_scan_result(&sc, &d, &err) < 0) {
            CHECK(err.msg != NULL);
            CHECK(d.check.message == NULL);
            err_clear(&err);
        }
        /* A failed check has a message; a passed one has none. */
        CHECK(!d.check.present || d.check.ok == (d.check.message == NULL));
        CHECK(d.check.line >= 0 && d.check.column >= 0);
        runner_done_free(&d);
    }
    runner_scan_free(&sc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t ncuts = data[0] % 16;
    if (size < 1 + ncuts)
        return 0;
    const unsigned char *cuts = data + 1;
    const char *s = (const char *)data + 1 + ncuts;
    size_t n = size - 1 - ncuts;

    bool warm = (data[0] & 0x80) != 0;

    struct scan_outcome whole, pieces;
    scan(s, n, cuts, 0, warm, &whole);
    scan(s, n, cuts, ncuts, warm, &pieces);
    CHECK(whole.started == pieces.started);
    if (warm) {
        bool has_go = n >= RUNNER_GO_LEN && memcmp(s, RUNNER_GO, RUNNER_GO_LEN) == 0;
        if (!has_go) {
            bool part = n < RUNNER_GO_LEN && memcmp(s, RUNNER_GO, n) == 0;
            CHECK(!whole.started && !pieces.started);
            CHECK(whole.out.len == 0 && pieces.out.len == 0);
            CHECK(!whole.done && !pieces.done);
            CHECK(part ? whole.rc == 0 && pieces.rc == 0 : whole.rc < 0 && pieces.rc < 0);
            free(whole.out.bytes);
            free(pieces.out.bytes);
            return 0;
        }
        /* The same as a cold scan of what follows the mark. */
        struct scan_outcome cold;
        scan(s + RUNNER_GO_LEN, n - RUNNER_GO_LEN, cuts, 0, false, &cold);
        CHECK(whole.started && cold.rc == whole.rc && cold.done == whole.done);
        CHECK(cold.out.len == whole.out.len);
        CHECK(cold.out.len == 0 || memcmp(cold.out.bytes, whole.out.bytes, cold.out.len) == 0);
        free(cold.out.bytes);
        s += RUNNER_GO_LEN;
        n -= RUNNER_GO_LEN;
    }

    /* The cut does not matter. */
    CHECK(whole.rc == pieces.rc);
    CHECK(whole.done == pieces.done);
    CHECK(whole.out.len == pieces.out.len);
    CHECK(whole.out.len == 0 || memcmp(whole.out.bytes, pieces.out.bytes, whole.out.len) == 0);

    /* Reference. */
    static const char marker[] = RUNNER_RECORD_PREFIX NONCE ":";
    const size_t mlen = sizeof(marker) - 1;
    CHECK(mlen == RUNNER_RECORD_PREFIX_LEN + RUNNER_NONCE_HEX_LEN + 1);
    const char *m = memmem(s, n, marker, mlen);
    if (!m) {
        CHECK(whole.rc == 0);
        CHECK(!whole.done);
        CHECK(whole.out.len == n);
        CHECK(n == 0 || memcmp(whole.out.bytes, s, n) == 0);
    } else {
        size_t before = (size_t)(m - s);
        /* Program output before the marker always comes out whole. */
        CHECK(whole.out.len >= before || whole.rc < 0);
        if (whole.rc == 0) {
            CHECK(whole.out.len == before);
            CHECK(before == 0 || memcmp(whole.out.bytes, s, before) == 0);
        }
        const char *rec = m + mlen;
        const char *nl = memchr(rec, '\n', n - before - mlen);
        if (nl && (size_t)(nl - rec) < RUNNER_MAX_RECORD / 2)
            CHECK(whole.done);
        if (!nl)
            CHECK(!whole.done);
    }

    free(whole.out.bytes);
    free(pieces.out.bytes);
    return 0;
}
