/* libFuzzer harness for the completion-record scanner that reads the
 * program's stdout. Input: byte 0 is how many split points follow (0..15),
 * then that many bytes each giving the size of the next piece; the rest is
 * the stdout stream, scanned for the record of a fixed nonce.
 *
 * Checks the contract in src/sandbox/runner/runner.h against a plain reference (memmem
 * for the marker, then the record up to '\n'):
 *   - without a complete marker, every byte comes out, in order (after
 *     runner_scan_flush), and the scan is not done;
 *   - with a marker, exactly the bytes before it come out; a line after it
 *     that starts with F, D, E or L is a file frame, handed whole to the
 *     frame callback, and the scan goes on after it; any other complete
 *     line (within RUNNER_MAX_RECORD) is the record: the scan is done and
 *     runner_scan_result either parses it or fails with a message;
 *   - how the stream is cut into pieces changes nothing;
 *   - a record's session account is one of the three modes (or none) and
 *     an ended text that is short and holds no control character;
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
#include "sandbox/runner/runner.h"

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
    struct out frames; /* each frame line, then '\n' */
    int rc;            /* first negative feed result, else 0 */
    bool done;
    bool in_record;
    bool started;
};

static int on_frame(void *ctx, const char *line, size_t len, struct err *err)
{
    (void)err;
    struct out *o = ctx;
    CHECK(len > 0 && memchr("FDEL", line[0], 4));
    CHECK(memchr(line, '\n', len) == NULL);
    CHECK(emit(o, line, len) == 0);
    return emit(o, "\n", 1);
}

/* Scans s[0..n) cut at the given piece sizes (the rest in one piece). */
static void scan(const char *s, size_t n, const unsigned char *cuts, size_t ncuts, bool warm,
                 struct scan_outcome *res)
{
    memset(res, 0, sizeof(*res));
    res->out.cap = n;
    res->out.bytes = malloc(n ? n : 1);
    res->frames.cap = n;
    res->frames.bytes = malloc(n ? n : 1);
    struct runner_scan sc;
    runner_scan_init(&sc, NONCE);
    sc.on_frame = on_frame;
    sc.on_frame_ctx = &res->frames;
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
        /* A session's account is one of its words and a short, escaped text. */
        CHECK(d.session.mode >= RUNNER_SESSION_MODE_NONE &&
              d.session.mode <= RUNNER_SESSION_MODE_PROCESS);
        CHECK(d.session.present || (d.session.mode == RUNNER_SESSION_MODE_NONE &&
                                    !d.session.ended && !d.session.interrupted));
        size_t why = strnlen(d.session.ended_why, sizeof(d.session.ended_why));
        CHECK(why <= RUNNER_SESSION_ENDED_MAX);
        for (size_t i = 0; i < why; i++)
            CHECK((unsigned char)d.session.ended_why[i] >= 0x20 && d.session.ended_why[i] != 0x7f);
        CHECK(d.session.ended || why == 0);
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
            free(whole.frames.bytes);
            free(pieces.frames.bytes);
            return 0;
        }
        /* The same as a cold scan of what follows the mark. */
        struct scan_outcome cold;
        scan(s + RUNNER_GO_LEN, n - RUNNER_GO_LEN, cuts, 0, false, &cold);
        CHECK(whole.started && cold.rc == whole.rc && cold.done == whole.done);
        CHECK(cold.out.len == whole.out.len);
        CHECK(cold.out.len == 0 || memcmp(cold.out.bytes, whole.out.bytes, cold.out.len) == 0);
        CHECK(cold.frames.len == whole.frames.len);
        free(cold.out.bytes);
        free(cold.frames.bytes);
        s += RUNNER_GO_LEN;
        n -= RUNNER_GO_LEN;
    }

    /* The cut does not matter. */
    CHECK(whole.rc == pieces.rc);
    CHECK(whole.done == pieces.done);
    CHECK(whole.out.len == pieces.out.len);
    CHECK(whole.out.len == 0 || memcmp(whole.out.bytes, pieces.out.bytes, whole.out.len) == 0);

    CHECK(whole.frames.len == pieces.frames.len);
    CHECK(whole.frames.len == 0 ||
          memcmp(whole.frames.bytes, pieces.frames.bytes, whole.frames.len) == 0);

    /* Reference: output and frames up to the record. */
    static const char marker[] = RUNNER_RECORD_PREFIX NONCE ":";
    const size_t mlen = sizeof(marker) - 1;
    CHECK(mlen == RUNNER_RECORD_PREFIX_LEN + RUNNER_NONCE_HEX_LEN + 1);
    struct out ref_out = {malloc(n ? n : 1), 0, n};
    struct out ref_frames = {malloc(n ? n : 1), 0, n};
    bool ref_done = false;
    bool too_long = false;
    const char *p = s;
    size_t left = n;
    for (;;) {
        const char *m = memmem(p, left, marker, mlen);
        if (!m) {
            CHECK(emit(&ref_out, p, left) == 0);
            break;
        }
        CHECK(emit(&ref_out, p, (size_t)(m - p)) == 0);
        const char *line = m + mlen;
        size_t rest = left - (size_t)(line - p);
        const char *nl = memchr(line, '\n', rest);
        size_t llen = nl ? (size_t)(nl - line) : rest;
        if (llen > RUNNER_MAX_RECORD) {
            too_long = true;
            break;
        }
        if (!nl)
            break;
        if (llen && memchr("FDEL", line[0], 4)) {
            CHECK(emit(&ref_frames, line, llen) == 0 && emit(&ref_frames, "\n", 1) == 0);
            p = nl + 1;
            left = rest - llen - 1;
            continue;
        }
        ref_done = true;
        break;
    }
    if (too_long) {
        CHECK(whole.rc < 0 && !whole.done);
    } else {
        CHECK(whole.rc == 0);
        CHECK(whole.done == ref_done);
        /* A record cut off at the end is not output: the scan held it. */
        CHECK(whole.out.len == ref_out.len);
        CHECK(ref_out.len == 0 || memcmp(whole.out.bytes, ref_out.bytes, ref_out.len) == 0);
        CHECK(whole.frames.len == ref_frames.len);
        CHECK(ref_frames.len == 0 ||
              memcmp(whole.frames.bytes, ref_frames.bytes, ref_frames.len) == 0);
    }
    free(ref_out.bytes);
    free(ref_frames.bytes);

    free(whole.out.bytes);
    free(pieces.out.bytes);
    free(whole.frames.bytes);
    free(pieces.frames.bytes);
    return 0;
}
