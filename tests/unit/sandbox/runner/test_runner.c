/* Unit tests for src/sandbox/runner/runner.c: request framing, the
 * completion-record scanner (fed split at every byte boundary), record
 * parsing, and an end-to-end run of the embedded runner scripts when
 * python3/node exist. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "sandbox/runner/runner.h"

#define NONCE  "0123456789abcdef0123456789abcdef"
#define OTHER  "fedcba9876543210fedcba9876543210"
#define PREFIX "\0\036mcpsbx-done:"
#define MARK   PREFIX NONCE ":"
#define REC    "{\"exit_code\":3,\"memory_error\":false}"
#define LIT(s) s, sizeof(s) - 1
#define END    ((const char *)NULL) /* ends cat()'s list */

/* ---- helpers ---------------------------------------------------------- */

struct sink {
    struct buf out;
    int calls;
    int fail_at; /* emit returns -7 on this call (1-based); 0: never */
};

static void sink_init(struct sink *k)
{
    memset(k, 0, sizeof(*k));
    buf_init(&k->out, 1 << 24);
}

static int sink_emit(void *ctx, const char *data, size_t len)
{
    struct sink *k = ctx;
    assert_true(len > 0);
    if (++k->calls == k->fail_at)
        return -7;
    assert_int_equal(buf_add(&k->out, data, len), 0);
    return 0;
}

struct outcome {
    struct sink sink;
    struct buf frames; /* each frame line, then '|' */
    bool done;
    int feed_rc;
    enum err_code code;
    struct buf record;
};

static int frame_collect(void *ctx, const char *line, size_t len, struct err *err)
{
    struct buf *b = ctx;
    if (len >= 4 && memcmp(line, "Fbad", 4) == 0)
        return err_set(err, ERR_PROTOCOL, "a refused frame");
    assert_int_equal(buf_add(b, line, len), 0);
    assert_int_equal(buf_add(b, "|", 1), 0);
    return 0;
}

/* Feeds stream[0..len) cut at the given offsets (ascending), then flushes. */
static void scan_cuts(const char *stream, size_t len, const size_t *cuts, size_t ncuts,
                      struct outcome *o)
{
    struct runner_scan s;
    struct err err = ERR_INIT;
    runner_scan_init(&s, NONCE);
    sink_init(&o->sink);
    buf_init(&o->frames, 1 << 20);
    s.on_frame = frame_collect;
    s.on_frame_ctx = &o->frames;
    o->feed_rc = 0;
    size_t at = 0;
    for (size_t c = 0; c <= ncuts && o->feed_rc == 0; c++) {
        size_t end = c < ncuts ? cuts[c] : len;
        o->feed_rc = runner_scan_feed(&s, stream + at, end - at, sink_emit, &o->sink, &err);
        at = end;
    }
    if (o->feed_rc == 0)
        assert_int_equal(runner_scan_flush(&s, sink_emit, &o->sink), 0);
    o->done = s.done;
    o->code = err.code;
    buf_init(&o->record, RUNNER_MAX_RECORD);
    assert_int_equal(buf_add(&o->record, s.record.data, s.record.len), 0);
    err_clear(&err);
    runner_scan_free(&s);
}

static void outcome_free(struct outcome *o)
{
    buf_free(&o->frames);
    buf_free(&o->sink.out);
    buf_free(&o->record);
}

static void assert_bytes(const char *got, size_t got_len, const char *want, size_t want_len)
{
    if (got_len != want_len || (want_len && memcmp(got, want, want_len) != 0)) {
        fail_msg("bytes differ: got %zu bytes, want %zu", got_len, want_len);
    }
}

static void check_outcome(const struct outcome *o, const char *out, size_t out_len,
                          const char *record)
{
    assert_int_equal(o->feed_rc, 0);
    assert_bytes(o->sink.out.data, o->sink.out.len, out, out_len);
    assert_int_equal(o->done, record != NULL);
    if (record)
        assert_bytes(o->record.data, o->record.len, record, strlen(record));
}

/* Every split into two pieces, every split into three pieces (short
 * streams), and one byte at a time must give the same result. */
static void check_all_splits(const char *stream, size_t len, const char *out, size_t out_len,
                             const char *record)
{
    struct outcome o;
    scan_cuts(stream, len, NULL, 0, &o);
    check_outcome(&o, out, out_len, record);
    outcome_free(&o);
    for (size_t k = 0; k <= len; k++) {
        size_t cut[1] = {k};
        scan_cuts(stream, len, cut, 1, &o);
        check_outcome(&o, out, out_len, record);
        outcome_free(&o);
    }
    if (len <= 200) {
        for (size_t a = 0; a <= len; a++) {
            for (size_t b = a; b <= len; b++) {
                size_t cut[2] = {a, b};
                scan_cuts(stream, len, cut, 2, &o);
                check_outcome(&o, out, out_len, record);
                outcome_free(&o);
            }
        }
    }
    size_t *every = malloc((len + 1) * sizeof(size_t));
    assert_non_null(every);
    for (size_t k = 0; k < len; k++)
        every[k] = k + 1;
    scan_cuts(stream, len, every, len ? len - 1 : 0, &o);
    check_outcome(&o, out, out_len, record);
    outcome_free(&o);
    free(every);
}

/* Concatenates byte strings given as (pointer, length) pairs, NULL-ended. */
static size_t cat(struct buf *b, ...)
{
    va_list ap;
    va_start(ap, b);
    buf_init(b, 1 << 20);
    for (;;) {
        const char *p = va_arg(ap, const char *);
        if (!p)
            break;
        size_t n = va_arg(ap, size_t);
        assert_int_equal(buf_add(b, p, n), 0);
    }
    va_end(ap);
    return b->len;
}

/* ---- scanner ---------------------------------------------------------- */

static void test_scan_plain_output(void **state)
{
    (void)state;
    check_all_splits(LIT("hello\nworld\n"), LIT("hello\nworld\n"), NULL);
    check_all_splits("", 0, "", 0, NULL);
}

static void test_scan_record_after_output(void **state)
{
    (void)state;
    struct buf in, out;
    cat(&in, LIT("out1\n"), LIT(MARK), LIT(REC "\n"), LIT("ignored after the record"), END);
    cat(&out, LIT("out1\n"), END);
    check_all_splits(in.data, in.len, out.data, out.len, REC);
    buf_free(&in);
    buf_free(&out);
}

static void test_scan_record_first(void **state)
{
    (void)state;
    check_all_splits(LIT(MARK REC "\n"), "", 0, REC);
}

static void test_scan_decoy_wrong_nonce(void **state)
{
    (void)state;
    struct buf in, out;
    cat(&in, LIT("a"), LIT(PREFIX OTHER ":{\"exit_code\":9}\n"), LIT("b"), LIT(MARK), LIT(REC "\n"),
        END);
    cat(&out, LIT("a"), LIT(PREFIX OTHER ":{\"exit_code\":9}\n"), LIT("b"), END);
    check_all_splits(in.data, in.len, out.data, out.len, REC);
    buf_free(&in);
    buf_free(&out);
}

static void test_scan_partial_prefix_at_end(void **state)
{
    (void)state;
    /* Held back while it could be the marker, emitted by flush. */
    check_all_splits(LIT("x\0\036mcpsbx-do"), LIT("x\0\036mcpsbx-do"), NULL);
    check_all_splits(LIT("x" PREFIX "0123456789abcdef0123456789abcde"),
                     LIT("x" PREFIX "0123456789abcdef0123456789abcde"), NULL);
    check_all_splits(LIT("\0"), LIT("\0"), NULL);
}

static void test_scan_partial_prefix_then_more(void **state)
{
    (void)state;
    struct buf in, out;
    cat(&in, LIT("x\0\036mcps"), LIT("more output\n"), LIT(MARK), LIT(REC "\n"), END);
    cat(&out, LIT("x\0\036mcps"), LIT("more output\n"), END);
    check_all_splits(in.data, in.len, out.data, out.len, REC);
    buf_free(&in);
    buf_free(&out);
}

static void test_scan_prefix_bytes_in_output(void **state)
{
    (void)state;
    /* NULs and prefix fragments, a marker with a truncated nonce, and a
     * mismatch on the very last byte (missing ':'): a new NUL restarts. */
    struct buf in, out;
    cat(&in, LIT("\0\0\0\036\0\036m\0\036mcpsbx-done:0123\0"), LIT(PREFIX "01234567"),
        LIT(PREFIX NONCE "X"), LIT(PREFIX NONCE), LIT(PREFIX "0123456789abcdef0123456789abcdeX:"),
        LIT(MARK), LIT(REC "\n"), END);
    cat(&out, LIT("\0\0\0\036\0\036m\0\036mcpsbx-done:0123\0"), LIT(PREFIX "01234567"),
        LIT(PREFIX NONCE "X"), LIT(PREFIX NONCE), LIT(PREFIX "0123456789abcdef0123456789abcdeX:"),
        END);
    check_all_splits(in.data, in.len, out.data, out.len, REC);
    buf_free(&in);
    buf_free(&out);
}

static void test_scan_binary_output(void **state)
{
    (void)state;
    char bin[1024];
    for (size_t i = 0; i < sizeof(bin); i++)
        bin[i] = (char)(i * 7 % 256);
    struct buf in;
    cat(&in, bin, sizeof(bin), LIT(MARK), LIT(REC "\n"), END);
    check_all_splits(in.data, in.len, bin, sizeof(bin), REC);
    buf_free(&in);
}

static void test_scan_record_cut_off(void **state)
{
    (void)state;
    /* The stream ends inside the record: no record, and the runner's bytes
     * are not program output either. */
    check_all_splits(LIT("out" MARK "{\"exit_co"), LIT("out"), NULL);
}

static void test_scan_oversize_record(void **state)
{
    (void)state;
    char big[RUNNER_MAX_RECORD + 2];
    memset(big, 'a', sizeof(big));
    big[0] = '{'; /* a record, not a frame */
    struct buf in;
    cat(&in, LIT("x" MARK), big, sizeof(big), LIT("\n"), END);
    for (size_t k = 0; k <= in.len; k += 97) {
        size_t cut[1] = {k};
        struct outcome o;
        scan_cuts(in.data, in.len, cut, 1, &o);
        assert_int_equal(o.feed_rc, -1);
        assert_int_equal(o.code, ERR_PROTOCOL);
        assert_false(o.done);
        outcome_free(&o);
    }
    buf_free(&in);

    /* Exactly at the cap is fine; one more byte is not. */
    for (size_t n = RUNNER_MAX_RECORD; n <= RUNNER_MAX_RECORD + 1; n++) {
        cat(&in, LIT(MARK), big, n, LIT("\n"), END);
        struct outcome o;
        size_t cut[1] = {in.len / 2};
        scan_cuts(in.data, in.len, cut, 1, &o);
        assert_int_equal(o.feed_rc, n == RUNNER_MAX_RECORD ? 0 : -1);
        assert_int_equal(o.done, n == RUNNER_MAX_RECORD);
        if (o.done)
            assert_int_equal(o.record.len, RUNNER_MAX_RECORD);
        outcome_free(&o);
        buf_free(&in);
    }
}

/* File frames before the record: passed to the callback whole, however
 * the stream is cut; output between them is output. */
static void test_scan_frames(void **state)
{
    (void)state;
    static const char stream[] = "a" MARK "F{\"path\":\"x\"}\n"
                                 "b\0c" MARK "DAAA=\n" MARK "E00\n" MARK REC "\n"
                                 "after";
    static const char frames[] = "F{\"path\":\"x\"}|DAAA=|E00|";
    struct outcome o;
    for (size_t k = 0; k <= sizeof(stream) - 1; k++) {
        size_t cut[1] = {k};
        scan_cuts(stream, sizeof(stream) - 1, cut, 1, &o);
        check_outcome(&o, LIT("ab\0c"), REC);
        assert_bytes(o.frames.data, o.frames.len, LIT(frames));
        outcome_free(&o);
    }
    /* One byte at a time. */
    size_t cuts[sizeof(stream)];
    for (size_t k = 0; k < sizeof(stream) - 1; k++)
        cuts[k] = k + 1;
    scan_cuts(stream, sizeof(stream) - 1, cuts, sizeof(stream) - 2, &o);
    check_outcome(&o, LIT("ab\0c"), REC);
    assert_bytes(o.frames.data, o.frames.len, LIT(frames));
    outcome_free(&o);

    /* The callback's refusal stops the scan. */
    scan_cuts(LIT("x" MARK "Fbad\n" MARK REC "\n"), NULL, 0, &o);
    assert_int_equal(o.feed_rc, -1);
    assert_int_equal(o.code, ERR_PROTOCOL);
    assert_false(o.done);
    outcome_free(&o);

    /* Without a callback (stderr) a frame is a protocol error. */
    struct runner_scan s;
    struct err err = ERR_INIT;
    runner_scan_init(&s, NONCE);
    assert_int_equal(runner_scan_feed(&s, LIT(MARK "DAAAA\n"), NULL, NULL, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    err_clear(&err);
    runner_scan_free(&s);
}

static void test_scan_emit_error_propagates(void **state)
{
    (void)state;
    struct runner_scan s;
    struct sink k;
    struct err err = ERR_INIT;
    runner_scan_init(&s, NONCE);
    sink_init(&k);
    k.fail_at = 2;
    assert_int_equal(runner_scan_feed(&s, LIT("one"), sink_emit, &k, &err), 0);
    assert_int_equal(runner_scan_feed(&s, LIT("two"), sink_emit, &k, &err), -7);
    buf_free(&k.out);
    runner_scan_free(&s);

    /* Also when the pending output is emitted just before the marker. */
    runner_scan_init(&s, NONCE);
    sink_init(&k);
    k.fail_at = 1;
    assert_int_equal(runner_scan_feed(&s, LIT("x" MARK REC "\n"), sink_emit, &k, &err), -7);
    buf_free(&k.out);
    runner_scan_free(&s);
}

static void test_scan_after_done_ignored(void **state)
{
    (void)state;
    struct runner_scan s;
    struct sink k;
    runner_scan_init(&s, NONCE);
    sink_init(&k);
    assert_int_equal(runner_scan_feed(&s, LIT(MARK REC "\n"), sink_emit, &k, NULL), 0);
    assert_true(s.done);
    assert_int_equal(runner_scan_feed(&s, LIT("more\0\036"), sink_emit, &k, NULL), 0);
    assert_int_equal(runner_scan_feed(&s, LIT(MARK "{}\n"), sink_emit, &k, NULL), 0);
    assert_int_equal(runner_scan_flush(&s, sink_emit, &k), 0);
    assert_int_equal(k.calls, 0);
    assert_bytes(s.record.data, s.record.len, LIT(REC));
    buf_free(&k.out);
    runner_scan_free(&s);
}

/* ---- record parsing ---------------------------------------------------- */

static int parse_record(const char *rec, size_t len, struct runner_done *d, enum err_code *code)
{
    struct runner_scan s;
    struct err err = ERR_INIT;
    runner_scan_init(&s, NONCE);
    assert_int_equal(runner_scan_feed(&s, LIT(MARK), NULL, NULL, NULL), 0);
    assert_int_equal(runner_scan_feed(&s, rec, len, NULL, NULL, NULL), 0);
    assert_int_equal(runner_scan_feed(&s, LIT("\n"), NULL, NULL, NULL), 0);
    assert_true(s.done);
    int rc = runner_scan_result(&s, d, &err);
    *code = err.code;
    if (rc < 0)
        assert_non_null(err_msg(&err));
    err_clear(&err);
    runner_scan_free(&s);
    return rc;
}

/* Each record is refused as a protocol error, and nothing of it is kept. */
static void assert_records_refused(const char *const *bad, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct runner_done d;
        enum err_code code;
        if (parse_record(bad[i], strlen(bad[i]), &d, &code) != -1)
            fail_msg("record %zu was accepted: %s", i, bad[i]);
        assert_int_equal(code, ERR_PROTOCOL);
        assert_null(d.runner_error);
        assert_null(d.check.message);
        assert_false(d.session.present);
        runner_done_free(&d);
    }
}

static void test_result_valid(void **state)
{
    (void)state;
    struct runner_done d;
    enum err_code code;
    assert_int_equal(parse_record(LIT("{\"exit_code\":0,\"memory_error\":false}"), &d, &code), 0);
    assert_int_equal(d.exit_code, 0);
    assert_false(d.memory_error);
    assert_null(d.runner_error);

    assert_int_equal(parse_record(LIT("{\"exit_code\":1,\"memory_error\":true}"), &d, &code), 0);
    assert_int_equal(d.exit_code, 1);
    assert_true(d.memory_error);

    assert_int_equal(parse_record(LIT("{\"exit_code\":76,\"memory_error\":false,"
                                      "\"runner_error\":\"bad \\u00e9 frame\",\"future\":[1,2]}"),
                                  &d, &code),
                     0);
    assert_int_equal(d.exit_code, 76);
    assert_string_equal(d.runner_error, "bad \xc3\xa9 frame");
    free(d.runner_error);

    /* memory_error is optional; only a real true counts. */
    assert_int_equal(parse_record(LIT(" {\"memory_error\":1,\"exit_code\":255} "), &d, &code), 0);
    assert_int_equal(d.exit_code, 255);
    assert_false(d.memory_error);
}

static void test_result_files(void **state)
{
    (void)state;
    struct runner_done d;
    enum err_code code;
    assert_int_equal(parse_record(LIT("{\"exit_code\":0,\"files\":{\"sent\":2,\"left_out\":9,"
                                      "\"walk_stopped\":20000,\"cwd_gone\":true}}"),
                                  &d, &code),
                     0);
    assert_true(d.files.present);
    assert_int_equal(d.files.sent, 2);
    assert_int_equal(d.files.left_out, 9);
    assert_int_equal(d.files.walk_stopped, 20000);
    assert_true(d.files.cwd_gone);
    runner_done_free(&d);
    assert_int_equal(parse_record(LIT("{\"exit_code\":0}"), &d, &code), 0);
    assert_false(d.files.present);
    static const char *const bad[] = {
        "{\"exit_code\":0,\"files\":[]}",
        "{\"exit_code\":0,\"files\":{\"sent\":-1}}",
        "{\"exit_code\":0,\"files\":{\"sent\":\"2\"}}",
        "{\"exit_code\":0,\"files\":{\"left_out\":1.5}}",
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        assert_int_equal(parse_record(bad[i], strlen(bad[i]), &d, &code), -1);
        assert_int_equal(code, ERR_PROTOCOL);
        runner_done_free(&d);
    }
}

static void test_result_invalid(void **state)
{
    (void)state;
    static const struct {
        const char *rec;
        size_t len;
    } bad[] = {
        {LIT("")},
        {LIT("{")},
        {LIT("[1]")},
        {LIT("\"x\"")},
        {LIT("{\"memory_error\":true}")},
        {LIT("{\"exit_code\":\"1\"}")},
        {LIT("{\"exit_code\":1.5}")},
        {LIT("{\"exit_code\":99999999999}")},
        {LIT("{\"exit_code\":1} trailing")},
        {LIT("{\"exit_code\":1}\0hidden")},
        {LIT("{\"exit_code\":1,\"a\":{\"b\":{\"c\":{\"d\":{}}}}}")},
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        struct runner_done d;
        enum err_code code;
        if (parse_record(bad[i].rec, bad[i].len, &d, &code) != -1)
            fail_msg("record %zu was accepted", i);
        assert_int_equal(code, ERR_PROTOCOL);
        assert_null(d.runner_error);
    }
}

/* Which checker did the typecheck: "warm" or "cold"; anything else (or
 * nothing) is none, never a broken record. */
static void test_result_typecheck_by(void **state)
{
    (void)state;
    static const struct {
        const char *rec;
        enum runner_typecheck_by want;
    } cases[] = {
        {"{\"exit_code\":0}", RUNNER_TYPECHECK_NONE},
        {"{\"exit_code\":0,\"typecheck_by\":\"warm\"}", RUNNER_TYPECHECK_WARM},
        {"{\"exit_code\":0,\"typecheck_by\":\"cold\"}", RUNNER_TYPECHECK_COLD},
        {"{\"exit_code\":0,\"typecheck_by\":\"WARM\"}", RUNNER_TYPECHECK_NONE},
        {"{\"exit_code\":0,\"typecheck_by\":\"warmer\"}", RUNNER_TYPECHECK_NONE},
        {"{\"exit_code\":0,\"typecheck_by\":1}", RUNNER_TYPECHECK_NONE},
        {"{\"exit_code\":0,\"typecheck_by\":null}", RUNNER_TYPECHECK_NONE},
        {"{\"exit_code\":2,\"compile_error\":{\"exit_code\":2},\"typecheck_by\":\"warm\"}",
         RUNNER_TYPECHECK_WARM},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct runner_done d;
        enum err_code code;
        if (parse_record(cases[i].rec, strlen(cases[i].rec), &d, &code) != 0)
            fail_msg("record %zu was refused", i);
        assert_int_equal(d.typecheck_by, cases[i].want);
        runner_done_free(&d);
    }
}

/* The generic runner's failed compile step: exit code and whether its own
 * limit stopped it; anything else in its place breaks the protocol. */
static void test_result_compile_error(void **state)
{
    (void)state;
    struct runner_done d;
    enum err_code code;
    assert_int_equal(parse_record(LIT("{\"exit_code\":0,\"memory_error\":false}"), &d, &code), 0);
    assert_false(d.compile_error.present);
    assert_int_equal(parse_record(LIT("{\"exit_code\":1,\"memory_error\":false,"
                                      "\"compile_error\":{\"exit_code\":1,\"timed_out\":false}}"),
                                  &d, &code),
                     0);
    assert_true(d.compile_error.present);
    assert_int_equal(d.compile_error.exit_code, 1);
    assert_false(d.compile_error.timed_out);
    assert_int_equal(d.exit_code, 1);
    runner_done_free(&d);
    assert_int_equal(parse_record(LIT("{\"exit_code\":137,\"compile_error\":{\"exit_code\":-9,"
                                      "\"timed_out\":true,\"future\":1}}"),
                                  &d, &code),
                     0);
    assert_true(d.compile_error.present);
    assert_int_equal(d.compile_error.exit_code, -9);
    assert_true(d.compile_error.timed_out);
    runner_done_free(&d);
    /* timed_out is optional; only a real true counts. */
    assert_int_equal(
        parse_record(LIT("{\"exit_code\":2,\"compile_error\":{\"exit_code\":2}}"), &d, &code), 0);
    assert_true(d.compile_error.present);
    assert_false(d.compile_error.timed_out);
    runner_done_free(&d);
    assert_int_equal(parse_record(LIT("{\"exit_code\":2,\"compile_error\":{\"exit_code\":2,"
                                      "\"timed_out\":\"yes\"}}"),
                                  &d, &code),
                     0);
    assert_false(d.compile_error.timed_out);
    runner_done_free(&d);
    /* With a runner_error too: both read (exec takes the runner's failure). */
    assert_int_equal(parse_record(LIT("{\"exit_code\":76,\"runner_error\":\"x\","
                                      "\"compile_error\":{\"exit_code\":1}}"),
                                  &d, &code),
                     0);
    assert_string_equal(d.runner_error, "x");
    assert_true(d.compile_error.present);
    runner_done_free(&d);

    static const char *const bad[] = {
        "{\"exit_code\":1,\"compile_error\":true}",
        "{\"exit_code\":1,\"compile_error\":null}",
        "{\"exit_code\":1,\"compile_error\":[1]}",
        "{\"exit_code\":1,\"compile_error\":{}}",
        "{\"exit_code\":1,\"compile_error\":{\"timed_out\":true}}",
        "{\"exit_code\":1,\"compile_error\":{\"exit_code\":\"1\"}}",
        "{\"exit_code\":1,\"compile_error\":{\"exit_code\":1.5}}",
        "{\"exit_code\":1,\"compile_error\":{\"exit_code\":99999999999}}",
        "{\"exit_code\":1,\"compile_error\":{\"exit_code\":-99999999999}}",
        /* The error is the record's: nothing else of it survives. */
        "{\"exit_code\":76,\"runner_error\":\"x\",\"compile_error\":{}}",
        "{\"exit_code\":0,\"check\":{\"ok\":false,\"message\":\"m\"},\"compile_error\":1}",
    };
    assert_records_refused(bad, ARRAY_SIZE(bad));
    /* The message says what was wrong. */
    struct runner_scan sc;
    struct err err = ERR_INIT;
    runner_scan_init(&sc, NONCE);
    assert_int_equal(runner_scan_feed(&sc, LIT(MARK), NULL, NULL, NULL), 0);
    assert_int_equal(
        runner_scan_feed(&sc, LIT("{\"exit_code\":1,\"compile_error\":7}\n"), NULL, NULL, NULL), 0);
    assert_int_equal(runner_scan_result(&sc, &d, &err), -1);
    assert_non_null(strstr(err_msg(&err), "malformed compile_error"));
    err_clear(&err);
    runner_scan_free(&sc);
}

/* A check-only run's answer; whatever the sandbox wrote is checked. */
static void test_result_check(void **state)
{
    (void)state;
    struct runner_done d;
    enum err_code code;
    assert_int_equal(parse_record(LIT("{\"exit_code\":0}"), &d, &code), 0);
    assert_false(d.check.present);
    assert_int_equal(parse_record(LIT("{\"exit_code\":0,\"check\":{\"ok\":true}}"), &d, &code), 0);
    assert_true(d.check.present);
    assert_true(d.check.ok);
    assert_null(d.check.message);
    assert_int_equal(parse_record(LIT("{\"exit_code\":0,\"check\":{\"ok\":false,\"message\":"
                                      "\"SyntaxError: x\",\"line\":2,\"column\":10}}"),
                                  &d, &code),
                     0);
    assert_false(d.check.ok);
    assert_string_equal(d.check.message, "SyntaxError: x");
    assert_int_equal(d.check.line, 2);
    assert_int_equal(d.check.column, 10);
    runner_done_free(&d);
    assert_null(d.check.message);
    assert_int_equal(parse_record(LIT("{\"exit_code\":0,\"check\":{\"ok\":false,\"message\":"
                                      "\"ValueError: nul\",\"line\":null}}"),
                                  &d, &code),
                     0);
    assert_int_equal(d.check.line, 0);
    assert_int_equal(d.check.column, 0);
    runner_done_free(&d);

    static const char *const bad[] = {
        "{\"exit_code\":0,\"check\":true}",
        "{\"exit_code\":0,\"check\":{}}",
        "{\"exit_code\":0,\"check\":{\"ok\":1}}",
        "{\"exit_code\":0,\"check\":{\"ok\":false}}",
        "{\"exit_code\":0,\"check\":{\"ok\":false,\"message\":\"m\",\"line\":0}}",
        "{\"exit_code\":0,\"check\":{\"ok\":false,\"message\":\"m\",\"line\":-1}}",
        "{\"exit_code\":0,\"check\":{\"ok\":false,\"message\":\"m\",\"column\":\"3\"}}",
        "{\"exit_code\":0,\"check\":{\"ok\":false,\"message\":\"m\",\"line\":3000000000}}",
        "{\"exit_code\":0,\"runner_error\":\"x\",\"check\":{\"ok\":false,\"message\":7}}",
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        if (parse_record(bad[i], strlen(bad[i]), &d, &code) != -1)
            fail_msg("record %zu was accepted", i);
        assert_int_equal(code, ERR_PROTOCOL);
        assert_null(d.runner_error);
        assert_null(d.check.message);
    }
}

/* A session record's "session": the mode is one of three words, interrupted
 * only a real true, ended a text kept escaped and cut; a malformed one
 * breaks the record as a malformed files account does. */
static void test_result_session(void **state)
{
    (void)state;
    static const struct {
        const char *rec;
        enum runner_session_mode mode;
        bool interrupted;
        bool ended;
        const char *why;
    } good[] = {
        {"{\"exit_code\":0,\"session\":{\"mode\":\"process\"}}", RUNNER_SESSION_MODE_PROCESS, false,
         false, ""},
        {"{\"exit_code\":0,\"session\":{\"mode\":\"interpreter\"}}",
         RUNNER_SESSION_MODE_INTERPRETER, false, false, ""},
        {"{\"exit_code\":0,\"session\":{\"mode\":\"shell\",\"future\":[1]}}",
         RUNNER_SESSION_MODE_SHELL, false, false, ""},
        {"{\"exit_code\":130,\"session\":{\"interrupted\":true}}", RUNNER_SESSION_MODE_NONE, true,
         false, ""},
        {"{\"exit_code\":130,\"session\":{\"interrupted\":1}}", RUNNER_SESSION_MODE_NONE, false,
         false, ""},
        {"{\"exit_code\":130,\"session\":{\"interrupted\":\"yes\"}}", RUNNER_SESSION_MODE_NONE,
         false, false, ""},
        {"{\"exit_code\":0,\"session\":{}}", RUNNER_SESSION_MODE_NONE, false, false, ""},
        {"{\"exit_code\":0,\"session\":{\"ended\":\"exit() called\"}}", RUNNER_SESSION_MODE_NONE,
         false, true, "exit() called"},
        {"{\"exit_code\":0,\"session\":{\"ended\":\"a\\nb\\u001b[31m\\u0000\"}}",
         RUNNER_SESSION_MODE_NONE, false, true, "a\\nb\\x1b[31m\\x00"},
        {"{\"exit_code\":0,\"session\":{\"ended\":\"\"}}", RUNNER_SESSION_MODE_NONE, false, true,
         ""},
    };
    for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
        struct runner_done d;
        enum err_code code;
        if (parse_record(good[i].rec, strlen(good[i].rec), &d, &code) != 0)
            fail_msg("record %zu was refused: %s", i, good[i].rec);
        assert_true(d.session.present);
        assert_int_equal(d.session.mode, good[i].mode);
        assert_int_equal(d.session.interrupted, good[i].interrupted);
        assert_int_equal(d.session.ended, good[i].ended);
        assert_string_equal(d.session.ended_why, good[i].why);
        runner_done_free(&d);
    }

    struct runner_done d;
    enum err_code code;
    assert_int_equal(parse_record(LIT("{\"exit_code\":0}"), &d, &code), 0);
    assert_false(d.session.present);
    assert_int_equal(d.session.mode, RUNNER_SESSION_MODE_NONE);

    /* A long reason is cut, never past its room. */
    char rec[2048];
    char why[1000];
    memset(why, 'w', sizeof(why) - 1);
    why[sizeof(why) - 1] = '\0';
    snprintf(rec, sizeof(rec), "{\"exit_code\":0,\"session\":{\"ended\":\"%s\"}}", why);
    assert_int_equal(parse_record(rec, strlen(rec), &d, &code), 0);
    assert_true(d.session.ended);
    assert_true(strlen(d.session.ended_why) <= RUNNER_SESSION_ENDED_MAX);
    assert_non_null(strstr(d.session.ended_why, "..."));

    static const char *const bad[] = {
        "{\"exit_code\":0,\"session\":true}",
        "{\"exit_code\":0,\"session\":null}",
        "{\"exit_code\":0,\"session\":[\"process\"]}",
        "{\"exit_code\":0,\"session\":\"process\"}",
        "{\"exit_code\":0,\"session\":{\"mode\":\"kernel\"}}",
        "{\"exit_code\":0,\"session\":{\"mode\":\"Process\"}}",
        "{\"exit_code\":0,\"session\":{\"mode\":\"process \"}}",
        "{\"exit_code\":0,\"session\":{\"mode\":\"process\\u0000x\"}}",
        "{\"exit_code\":0,\"session\":{\"mode\":1}}",
        "{\"exit_code\":0,\"session\":{\"mode\":null}}",
        "{\"exit_code\":0,\"session\":{\"ended\":true}}",
        "{\"exit_code\":0,\"session\":{\"ended\":{\"why\":\"x\"}}}",
        /* The error is the record's: nothing else of it survives. */
        "{\"exit_code\":76,\"runner_error\":\"x\",\"session\":{\"mode\":\"x\"}}",
        "{\"exit_code\":0,\"check\":{\"ok\":false,\"message\":\"m\"},\"session\":7}",
        "{\"exit_code\":0,\"session\":{\"mode\":\"process\"},\"files\":[]}",
    };
    assert_records_refused(bad, ARRAY_SIZE(bad));
}

static void test_result_requires_done(void **state)
{
    (void)state;
    struct runner_scan s;
    struct runner_done d;
    struct err err = ERR_INIT;
    runner_scan_init(&s, NONCE);
    assert_int_equal(runner_scan_feed(&s, LIT("x" MARK "{\"exit_code\":0}"), NULL, NULL, NULL), 0);
    assert_int_equal(runner_scan_result(&s, &d, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    err_clear(&err);
    runner_scan_free(&s);
}

/* ---- nonce and request encoding ---------------------------------------- */

static void test_nonce(void **state)
{
    (void)state;
    char a[RUNNER_NONCE_HEX_LEN + 1], b[RUNNER_NONCE_HEX_LEN + 1];
    memset(a, 'X', sizeof(a));
    assert_int_equal(runner_new_nonce(a, NULL), 0);
    assert_int_equal(runner_new_nonce(b, NULL), 0);
    assert_int_equal(strlen(a), RUNNER_NONCE_HEX_LEN);
    assert_int_equal(strspn(a, "0123456789abcdef"), RUNNER_NONCE_HEX_LEN);
    assert_string_not_equal(a, b);
}

/* Splits "mcpsbx/1 <n>\n<json>" and returns the parsed JSON. */
static json_object *decode_request(const char *data, size_t len)
{
    const char *nl = memchr(data, '\n', len);
    assert_non_null(nl);
    size_t hlen = (size_t)(nl - data);
    char header[64];
    assert_true(hlen < sizeof(header));
    memcpy(header, data, hlen);
    header[hlen] = '\0';
    assert_memory_equal(header, "mcpsbx/1 ", 9);
    char *end = NULL;
    errno = 0;
    unsigned long long body_len = strtoull(header + 9, &end, 10);
    assert_int_equal(errno, 0);
    assert_true(end == header + hlen && end > header + 9);
    assert_int_equal(body_len, len - hlen - 1);
    struct json_tokener *tok = json_tokener_new();
    json_object *obj = json_tokener_parse_ex(tok, nl + 1, (int)body_len);
    assert_non_null(obj);
    assert_int_equal(json_tokener_get_parse_end(tok), body_len);
    json_tokener_free(tok);
    return obj;
}

static void assert_json_bytes(json_object *obj, const char *key, const char *want, size_t len)
{
    json_object *v;
    assert_true(json_object_object_get_ex(obj, key, &v));
    assert_true(json_object_is_type(v, json_type_string));
    assert_bytes(json_object_get_string(v), (size_t)json_object_get_string_len(v), want, len);
}

static void test_encode_basic(void **state)
{
    (void)state;
    struct buf out;
    buf_init(&out, 1 << 20);
    struct runner_request req = {.nonce_hex = NONCE, .code = "print('hi')\n", .code_len = 12};
    assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
    assert_memory_equal(out.data, "mcpsbx/1 ", 9);
    json_object *obj = decode_request(out.data, out.len);
    assert_json_bytes(obj, "nonce", LIT(NONCE));
    assert_json_bytes(obj, "code", LIT("print('hi')\n"));
    assert_json_bytes(obj, "stdin", "", 0);
    json_object *env = json_object_object_get(obj, "env");
    assert_true(json_object_is_type(env, json_type_object));
    assert_int_equal(json_object_object_length(env), 0);
    json_object_put(obj);
    buf_free(&out);
}

/* The generic runner's program: source file, compile step and its limit,
 * typecheck and whether it blocks, and the run; only what is there. */
static void test_encode_program(void **state)
{
    (void)state;
    struct buf out;
    buf_init(&out, 1 << 20);
    char *compile[] = {"esbuild", "main.ts", "--outfile=main.js", NULL};
    char *typecheck[] = {"tsc", "--noEmit", "main.ts", NULL};
    char *run[] = {"node", "main.js", NULL};
    struct runner_program pg = {.source_file = "main.ts",
                                .compile = compile,
                                .compile_timeout_ms = 20000,
                                .typecheck = typecheck,
                                .typecheck_blocks = true,
                                .run = run};
    struct runner_request req = {
        .nonce_hex = NONCE, .code = "let x = 1", .code_len = 9, .program = &pg};
    assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
    json_object *obj = decode_request(out.data, out.len);
    json_object *p = json_object_object_get(obj, "program");
    assert_true(json_object_is_type(p, json_type_object));
    assert_int_equal(json_object_object_length(p), 6);
    assert_string_equal(json_object_get_string(json_object_object_get(p, "source_file")),
                        "main.ts");
    const struct {
        const char *key;
        char **want;
    } argvs[] = {{"compile", compile}, {"typecheck", typecheck}, {"run", run}};
    for (size_t k = 0; k < ARRAY_SIZE(argvs); k++) {
        json_object *a = json_object_object_get(p, argvs[k].key);
        assert_true(json_object_is_type(a, json_type_array));
        size_t n = 0;
        while (argvs[k].want[n])
            n++;
        assert_int_equal(json_object_array_length(a), n);
        for (size_t i = 0; i < n; i++)
            assert_string_equal(json_object_get_string(json_object_array_get_idx(a, i)),
                                argvs[k].want[i]);
    }
    json_object *t = json_object_object_get(p, "compile_timeout_ms");
    assert_true(json_object_is_type(t, json_type_int));
    assert_int_equal(json_object_get_int64(t), 20000);
    assert_true(json_object_get_boolean(json_object_object_get(p, "typecheck_blocks")));
    assert_json_bytes(obj, "code", LIT("let x = 1"));
    json_object_put(obj);

    /* No compile step, no typecheck (NULL or empty argvs): run only. */
    char *none[] = {NULL};
    char *bash[] = {"bash", "main.sh", NULL};
    struct runner_program sh = {.source_file = "main.sh",
                                .compile = none,
                                .compile_timeout_ms = 0,
                                .typecheck = NULL,
                                .typecheck_blocks = true,
                                .run = bash};
    req.program = &sh;
    buf_reset(&out);
    assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
    obj = decode_request(out.data, out.len);
    p = json_object_object_get(obj, "program");
    assert_int_equal(json_object_object_length(p), 2);
    assert_false(json_object_object_get_ex(p, "compile", NULL));
    assert_false(json_object_object_get_ex(p, "compile_timeout_ms", NULL));
    assert_false(json_object_object_get_ex(p, "typecheck", NULL));
    assert_false(json_object_object_get_ex(p, "typecheck_blocks", NULL));
    json_object *r = json_object_object_get(p, "run");
    assert_int_equal(json_object_array_length(r), 2);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(r, 1)), "main.sh");
    json_object_put(obj);

    /* Arguments with any bytes JSON can carry, as they are. */
    char *odd[] = {"sh", "-c", "echo \"$1\" \\ \xc3\xa9\t/x", NULL};
    struct runner_program o = {.source_file = "main.sh", .run = odd};
    req.program = &o;
    buf_reset(&out);
    assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
    obj = decode_request(out.data, out.len);
    r = json_object_object_get(json_object_object_get(obj, "program"), "run");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(r, 2)),
                        "echo \"$1\" \\ \xc3\xa9\t/x");
    json_object_put(obj);

    /* The in-process runners' requests have none. */
    req.program = NULL;
    buf_reset(&out);
    assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
    obj = decode_request(out.data, out.len);
    assert_false(json_object_object_get_ex(obj, "program", NULL));
    json_object_put(obj);
    buf_free(&out);
}

/* The secrets for the program's environment travel in the request. */
static void test_encode_env(void **state)
{
    (void)state;
    struct buf out;
    buf_init(&out, 1 << 20);
    char *names[] = {"API_KEY", "B"};
    char *values[] = {"k\"ey\u00fc", ""};
    struct runner_request req = {.nonce_hex = NONCE,
                                 .code = "x",
                                 .code_len = 1,
                                 .env_names = names,
                                 .env_values = values,
                                 .n_env = 2};
    assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
    json_object *obj = decode_request(out.data, out.len);
    json_object *env = json_object_object_get(obj, "env");
    assert_int_equal(json_object_object_length(env), 2);
    assert_string_equal(json_object_get_string(json_object_object_get(env, "API_KEY")),
                        "k\"ey\u00fc");
    assert_string_equal(json_object_get_string(json_object_object_get(env, "B")), "");
    json_object_put(obj);
    buf_free(&out);
}

/* The variables travel as JSON in the request; no absent key when none. */
static void test_encode_files(void **state)
{
    (void)state;
    struct buf out;
    buf_init(&out, 1 << 20);
    struct runner_file files[] = {
        {.path = "data/in.csv", .content = "a\0,b", .content_len = 4},
        {.path = "raw.bin", .content = "AP8=", .content_len = 4, .base64 = true},
    };
    char *patterns[] = {"*.png", "out/**"};
    struct runner_outputs outs = {.patterns = patterns,
                                  .n_patterns = 2,
                                  .max_files = 5,
                                  .max_file_bytes = 100,
                                  .max_total_bytes = 200,
                                  .plots = true,
                                  .max_plots = 3,
                                  .max_plot_bytes = 50};
    struct runner_request req = {.nonce_hex = NONCE,
                                 .code = "x",
                                 .code_len = 1,
                                 .files = files,
                                 .n_files = 2,
                                 .outputs = &outs};
    assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
    json_object *obj = decode_request(out.data, out.len);
    assert_string_equal(
        json_object_to_json_string_ext(json_object_object_get(obj, "files"),
                                       JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
        "[{\"path\":\"data/in.csv\",\"content\":\"a\\u0000,b\",\"encoding\":\"utf-8\"},"
        "{\"path\":\"raw.bin\",\"content\":\"AP8=\",\"encoding\":\"base64\"}]");
    assert_string_equal(
        json_object_to_json_string_ext(json_object_object_get(obj, "outputs"),
                                       JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
        "{\"paths\":[\"*.png\",\"out/**\"],\"plots\":true,\"max_files\":5,"
        "\"max_file_bytes\":100,\"max_total_bytes\":200,\"max_plots\":3,\"max_plot_bytes\":50}");
    json_object_put(obj);
    /* Neither, when not asked. */
    out.len = 0;
    req.n_files = 0;
    req.outputs = NULL;
    assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
    obj = decode_request(out.data, out.len);
    assert_null(json_object_object_get(obj, "files"));
    assert_null(json_object_object_get(obj, "outputs"));
    json_object_put(obj);
    buf_free(&out);
}

static void test_encode_variables(void **state)
{
    (void)state;
    struct buf out;
    buf_init(&out, 1 << 20);
    static const char vars[] = "{\"rows\":[1,2.5,null],\"s\":\"a\\u0000b\"}";
    struct runner_request req = {.nonce_hex = NONCE,
                                 .code = "x",
                                 .code_len = 1,
                                 .variables = vars,
                                 .variables_len = strlen(vars)};
    assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
    json_object *obj = decode_request(out.data, out.len);
    json_object *v = json_object_object_get(obj, "variables");
    assert_true(json_object_is_type(v, json_type_object));
    assert_string_equal(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), vars);
    /* The generic runner's forms are not in an in-process runner's request. */
    assert_false(json_object_object_get_ex(obj, "variables_file", NULL));
    assert_false(json_object_object_get_ex(obj, "variables_env", NULL));
    json_object_put(obj);

    /* Not one JSON object: refused, nothing appended. */
    const char *bad[] = {"[1]", "{\"a\":1} x", "{", "1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct err err = ERR_INIT;
        size_t before = out.len;
        req.variables = bad[i];
        req.variables_len = strlen(bad[i]);
        assert_int_equal(runner_encode_request(&req, &out, &err), -1);
        assert_int_equal(err.code, ERR_INVALID);
        assert_int_equal(out.len, before);
        err_clear(&err);
    }
    buf_free(&out);
}

/* The generic runner gets the variables ready-made: the file's text and
 * the environment's strings, numbers as sent; never "variables". */
static void test_encode_generic_variables(void **state)
{
    (void)state;
    static const char vars[] =
        "{\"s\":\"h\xc3\xa9llo \xf0\x9f\x98\x80\\nx\",\"i\":-42,\"big\":12345678901234567890,"
        "\"e\":1e+300,\"f\":2.50,\"t\":true,\"fa\":false,\"n\":null,\"arr\":[1,\"two\",[3.5]],"
        "\"obj\":{\"a\":{\"b\":[false]}},\"empty\":\"\",\"nul\":\"a\\u0000b\",\"q\":\"\\\"/\\\\\"}";
    char *run[] = {"bash", "main.sh", NULL};
    struct runner_program prog = {.source_file = "main.sh", .run = run};
    struct runner_request req = {.nonce_hex = NONCE,
                                 .code = "x",
                                 .code_len = 1,
                                 .variables = vars,
                                 .variables_len = strlen(vars),
                                 .program = &prog};
    struct buf out;
    buf_init(&out, 1 << 20);
    assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
    /* Non-ASCII goes raw (as json-c writes it), twice: file and env. */
    size_t raw = 0;
    for (const char *at = out.data, *end = out.data + out.len;
         (at = memmem(at, (size_t)(end - at), "h\xc3\xa9llo \xf0\x9f\x98\x80", 11)) != NULL; at++)
        raw++;
    assert_int_equal(raw, 2);
    json_object *obj = decode_request(out.data, out.len);
    assert_false(json_object_object_get_ex(obj, "variables", NULL));

    /* The file: the object's compact text, numbers as they came. */
    json_object *file = json_object_object_get(obj, "variables_file");
    assert_true(json_object_is_type(file, json_type_string));
    assert_int_equal(json_object_get_string_len(file), strlen(vars));
    assert_memory_equal(json_object_get_string(file), vars, strlen(vars));

    /* The environment: strings as they are, numbers' text, booleans as
     * words; null, arrays, objects and a string with a NUL only in the file. */
    static const struct {
        const char *name, *value;
    } want[] = {{"s", "h\xc3\xa9llo \xf0\x9f\x98\x80\nx"},
                {"i", "-42"},
                {"big", "12345678901234567890"},
                {"e", "1e+300"},
                {"f", "2.50"},
                {"t", "true"},
                {"fa", "false"},
                {"empty", ""},
                {"q", "\"/\\"}};
    json_object *env = json_object_object_get(obj, "variables_env");
    assert_true(json_object_is_type(env, json_type_object));
    assert_int_equal(json_object_object_length(env), ARRAY_SIZE(want));
    for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
        json_object *e = NULL;
        assert_true(json_object_object_get_ex(env, want[i].name, &e));
        assert_true(json_object_is_type(e, json_type_string));
        assert_int_equal(json_object_get_string_len(e), strlen(want[i].value));
        assert_string_equal(json_object_get_string(e), want[i].value);
    }
    static const char *const file_only[] = {"n", "arr", "obj", "nul"};
    for (size_t i = 0; i < ARRAY_SIZE(file_only); i++)
        assert_false(json_object_object_get_ex(env, file_only[i], NULL));
    json_object_put(obj);

    /* An empty object: an empty file object and no environment entries. */
    req.variables = "{}";
    req.variables_len = 2;
    buf_reset(&out);
    assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
    obj = decode_request(out.data, out.len);
    assert_string_equal(json_object_get_string(json_object_object_get(obj, "variables_file")),
                        "{}");
    assert_int_equal(json_object_object_length(json_object_object_get(obj, "variables_env")), 0);
    json_object_put(obj);

    /* No variables: neither member. */
    req.variables = NULL;
    req.variables_len = 0;
    buf_reset(&out);
    assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
    obj = decode_request(out.data, out.len);
    assert_false(json_object_object_get_ex(obj, "variables_file", NULL));
    assert_false(json_object_object_get_ex(obj, "variables_env", NULL));
    json_object_put(obj);

    /* Not one JSON object: refused as for the other runners. */
    const char *bad[] = {"[1]", "{\"a\":1} x", "\"s\""};
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        struct err err = ERR_INIT;
        size_t before = out.len;
        req.variables = bad[i];
        req.variables_len = strlen(bad[i]);
        assert_int_equal(runner_encode_request(&req, &out, &err), -1);
        assert_int_equal(err.code, ERR_INVALID);
        assert_int_equal(out.len, before);
        err_clear(&err);
    }
    buf_free(&out);
}

static void test_encode_special_bytes(void **state)
{
    (void)state;
    static const char code[] = "a\0b\"c\\d/e\x01\x1f\x7f\t\r\n\xc3\xa9\xe2\x98\x83\xf0\x9f\x98\x80"
                               "</script>\0";
    static const char in[] = "\0\0line\n\xe2\x80\xa8\xef\xbb\xbf";
    struct buf out;
    buf_init(&out, 1 << 20);
    assert_int_equal(buf_add(&out, LIT("kept")), 0);
    struct runner_request req = {.nonce_hex = NONCE,
                                 .code = code,
                                 .code_len = sizeof(code) - 1,
                                 .stdin_data = in,
                                 .stdin_len = sizeof(in) - 1};
    assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
    assert_memory_equal(out.data, "kept", 4);
    /* Plain JSON on one line: no raw control bytes, '/' left alone. */
    for (size_t i = 4; i < out.len - 1; i++)
        if ((unsigned char)out.data[i] < 0x20 && out.data[i] != '\n')
            fail_msg("raw control byte at %zu", i);
    assert_non_null(memmem(out.data, out.len, "</script>", 9));
    json_object *obj = decode_request(out.data + 4, out.len - 4);
    assert_json_bytes(obj, "code", code, sizeof(code) - 1);
    assert_json_bytes(obj, "stdin", in, sizeof(in) - 1);
    json_object_put(obj);
    buf_free(&out);
}

static void test_encode_random_round_trip(void **state)
{
    (void)state;
    unsigned seed = 12345;
    char code[300], in[300];
    for (int iter = 0; iter < 500; iter++) {
        size_t cl = (size_t)(rand_r(&seed) % (int)sizeof(code));
        size_t il = (size_t)(rand_r(&seed) % (int)sizeof(in));
        /* Any bytes at all, even invalid UTF-8, come back unchanged. */
        for (size_t i = 0; i < cl; i++)
            code[i] = (char)(rand_r(&seed) % 256);
        for (size_t i = 0; i < il; i++)
            in[i] = (char)(rand_r(&seed) % 256);
        struct buf out;
        buf_init(&out, 1 << 20);
        struct runner_request req = {
            .nonce_hex = NONCE, .code = code, .code_len = cl, .stdin_data = in, .stdin_len = il};
        assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
        json_object *obj = decode_request(out.data, out.len);
        assert_json_bytes(obj, "code", code, cl);
        assert_json_bytes(obj, "stdin", in, il);
        json_object_put(obj);
        buf_free(&out);
    }
}

static void test_encode_rejects(void **state)
{
    (void)state;
    static const char *const bad_nonces[] = {NULL,
                                             "",
                                             "0123",
                                             "0123456789ABCDEF0123456789abcdef",
                                             "0123456789abcdef0123456789abcdef0",
                                             "0123456789abcdef0123456789abcdeg"};
    struct buf out;
    buf_init(&out, 1 << 20);
    assert_int_equal(buf_add(&out, LIT("kept")), 0);
    for (size_t i = 0; i < ARRAY_SIZE(bad_nonces); i++) {
        struct err err = ERR_INIT;
        struct runner_request req = {.nonce_hex = bad_nonces[i], .code = "x", .code_len = 1};
        assert_int_equal(runner_encode_request(&req, &out, &err), -1);
        assert_int_equal(err.code, ERR_INVALID);
        err_clear(&err);
    }
    struct err err = ERR_INIT;
    struct runner_request huge = {.nonce_hex = NONCE, .code = "x", .code_len = (64u << 20) + 1};
    assert_int_equal(runner_encode_request(&huge, &out, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    err_clear(&err);
    assert_int_equal(out.len, 4);
    buf_free(&out);

    /* Over the output buffer's cap: all or nothing. */
    struct buf small;
    buf_init(&small, 40);
    assert_int_equal(buf_add(&small, LIT("kept")), 0);
    struct runner_request req = {.nonce_hex = NONCE, .code = "print(1)", .code_len = 8};
    assert_int_equal(runner_encode_request(&req, &small, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    err_clear(&err);
    assert_int_equal(small.len, 4);
    assert_string_equal(buf_cstr(&small), "kept");
    buf_free(&small);
}

/* The session kinds: a "session" object saying begin or cell, and none
 * in a one-shot request. */
static void test_encode_session(void **state)
{
    (void)state;
    static const struct {
        enum runner_session_kind kind;
        const char *key;
    } cases[] = {
        {RUNNER_SESSION_NONE, NULL},
        {RUNNER_SESSION_BEGIN, "begin"},
        {RUNNER_SESSION_CELL, "cell"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct buf out;
        buf_init(&out, 1 << 20);
        struct runner_request req = {
            .nonce_hex = NONCE, .session = cases[i].kind, .code = "x", .code_len = 1};
        assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
        json_object *obj = decode_request(out.data, out.len);
        json_object *session = NULL;
        bool has = json_object_object_get_ex(obj, "session", &session);
        if (!cases[i].key) {
            assert_false(has);
        } else {
            assert_true(has);
            assert_true(json_object_is_type(session, json_type_object));
            assert_int_equal(json_object_object_length(session), 1);
            json_object *flag = NULL;
            assert_true(json_object_object_get_ex(session, cases[i].key, &flag));
            assert_true(json_object_is_type(flag, json_type_boolean));
            assert_true(json_object_get_boolean(flag));
        }
        json_object_put(obj);
        buf_free(&out);
    }
}

/* A begin request's session "source" goes with it as given; a cell, or a
 * one-shot run, never carries it. */
static void test_encode_session_source(void **state)
{
    (void)state;
    static const enum runner_session_kind kinds[] = {RUNNER_SESSION_NONE, RUNNER_SESSION_BEGIN,
                                                     RUNNER_SESSION_CELL};
    static const char source[] = "def interpreter_main(h):\n    \"\u00e9\\\x01\"\n";
    for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
        struct buf out;
        buf_init(&out, 1 << 20);
        struct runner_request req = {.nonce_hex = NONCE,
                                     .session = kinds[i],
                                     .session_source = source,
                                     .code = "",
                                     .code_len = 0};
        assert_int_equal(runner_encode_request(&req, &out, NULL), 0);
        json_object *obj = decode_request(out.data, out.len);
        json_object *session = NULL, *src = NULL;
        bool has = json_object_object_get_ex(obj, "session", &session);
        assert_int_equal(has, kinds[i] != RUNNER_SESSION_NONE);
        bool has_src = has && json_object_object_get_ex(session, "source", &src);
        assert_int_equal(has_src, kinds[i] == RUNNER_SESSION_BEGIN);
        if (has_src) {
            assert_true(json_object_is_type(src, json_type_string));
            assert_string_equal(json_object_get_string(src), source);
            assert_int_equal(json_object_object_length(session), 2);
        }
        json_object_put(obj);
        buf_free(&out);
    }
}

/* The control frame: a header alone, the nonce checked, all or nothing. */
static void test_encode_interrupt(void **state)
{
    (void)state;
    struct buf out;
    buf_init(&out, 1 << 20);
    assert_int_equal(buf_add(&out, LIT("kept")), 0);
    assert_int_equal(runner_encode_interrupt(NONCE, &out, NULL), 0);
    assert_bytes(out.data, out.len, LIT("keptmcpsbx/1 interrupt " NONCE "\n"));
    assert_true(out.len - 4 <= RUNNER_MAX_CONTROL);
    static const char *const bad[] = {NULL,
                                      "",
                                      "0123",
                                      "0123456789ABCDEF0123456789abcdef",
                                      "0123456789abcdef0123456789abcdef0",
                                      "0123456789abcdef0123456789abcde\n"};
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        struct err err = ERR_INIT;
        assert_int_equal(runner_encode_interrupt(bad[i], &out, &err), -1);
        assert_int_equal(err.code, ERR_INVALID);
        err_clear(&err);
    }
    assert_int_equal(out.len, 4 + sizeof("mcpsbx/1 interrupt " NONCE "\n") - 1);
    buf_free(&out);

    struct buf small;
    buf_init(&small, 40);
    assert_int_equal(buf_add(&small, LIT("kept")), 0);
    struct err err = ERR_INIT;
    assert_int_equal(runner_encode_interrupt(NONCE, &small, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    err_clear(&err);
    assert_string_equal(buf_cstr(&small), "kept");
    buf_free(&small);
}

/* ---- end to end: C framing -> embedded runner script -> C scanner ------ */

struct e2e {
    struct buf out;
    struct buf err;
    int status;
};

/* Removes dir and the files the runners write into it. */
static void rm_run_dir(const char *dir)
{
    static const char *const names[] = {"main.py", "main.js", "main.mjs", ".mcpsbx-stdin"};
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        if (unlinkat(fd, names[i], 0) < 0 && errno != ENOENT)
            fail_msg("cannot remove %s/%s", dir, names[i]);
    close(fd);
    assert_int_equal(rmdir(dir), 0);
}

/* Runs argv in a fresh temp dir with `request` on stdin; 77 when the
 * interpreter is missing. */
static int run_child(const char *const args[], const struct buf *request, struct e2e *r)
{
    char dir[] = "/tmp/mcpsbx-unit-XXXXXX";
    assert_non_null(mkdtemp(dir));
    int in[2], out[2], errp[2];
    assert_int_equal(pipe(in), 0);
    assert_int_equal(pipe(out), 0);
    assert_int_equal(pipe(errp), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (chdir(dir) < 0)
            _exit(126);
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(errp[1], 2);
        close(in[1]);
        close(out[0]);
        close(errp[0]);
        char *argv[8] = {0};
        for (int i = 0; i < 7 && args[i]; i++)
            argv[i] = xstrdup(args[i]);
        execvp(argv[0], argv);
        _exit(errno == ENOENT ? 77 : 126);
    }
    close(in[0]);
    close(out[1]);
    close(errp[1]);
    signal(SIGPIPE, SIG_IGN);
    assert_int_equal(util_write_all(in[1], request->data, request->len), 0);
    close(in[1]);
    buf_init(&r->out, 1 << 24);
    buf_init(&r->err, 1 << 24);
    /* Small outputs: draining stdout then stderr cannot deadlock here. */
    int fds[2] = {out[0], errp[0]};
    struct buf *bufs[2] = {&r->out, &r->err};
    for (int i = 0; i < 2; i++) {
        char chunk[4096];
        ssize_t n;
        while ((n = read(fds[i], chunk, sizeof(chunk))) > 0)
            assert_int_equal(buf_add(bufs[i], chunk, (size_t)n), 0);
        close(fds[i]);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    rm_run_dir(dir);
    return r->status;
}

static void e2e_run(const char *interp_flag, const char *src, const char *code, const char *in,
                    const char *want_out, size_t want_out_len, const char *want_err_start,
                    int want_status)
{
    char nonce[RUNNER_NONCE_HEX_LEN + 1];
    assert_int_equal(runner_new_nonce(nonce, NULL), 0);
    struct buf request;
    buf_init(&request, 1 << 20);
    struct runner_request req = {.nonce_hex = nonce,
                                 .code = code,
                                 .code_len = strlen(code),
                                 .stdin_data = in,
                                 .stdin_len = strlen(in)};
    assert_int_equal(runner_encode_request(&req, &request, NULL), 0);
    const char *py[] = {"python3", "-u", "-c", src, NULL};
    const char *js[] = {"node", "-e", src, NULL};
    const char *const *argv = strcmp(interp_flag, "-c") == 0 ? py : js;
    struct e2e r;
    if (run_child(argv, &request, &r) == 77) {
        buf_free(&request);
        buf_free(&r.out);
        buf_free(&r.err);
        skip();
    }
    assert_int_equal(r.status, want_status);

    /* Both streams carry the record; feed them in uneven pieces. */
    struct buf *streams[2] = {&r.out, &r.err};
    struct sink sinks[2];
    for (int i = 0; i < 2; i++) {
        struct runner_scan s;
        struct err err = ERR_INIT;
        runner_scan_init(&s, nonce);
        sink_init(&sinks[i]);
        for (size_t at = 0, step = 1; at < streams[i]->len; at += step, step = step * 3 % 17 + 1) {
            size_t n = streams[i]->len - at < step ? streams[i]->len - at : step;
            assert_int_equal(
                runner_scan_feed(&s, streams[i]->data + at, n, sink_emit, &sinks[i], &err), 0);
        }
        assert_int_equal(runner_scan_flush(&s, sink_emit, &sinks[i]), 0);
        assert_true(s.done);
        struct runner_done d;
        assert_int_equal(runner_scan_result(&s, &d, &err), 0);
        assert_int_equal(d.exit_code, want_status);
        assert_false(d.memory_error);
        assert_null(d.runner_error);
        runner_scan_free(&s);
    }
    assert_bytes(sinks[0].out.data, sinks[0].out.len, want_out, want_out_len);
    if (strncmp(buf_cstr(&sinks[1].out), want_err_start, strlen(want_err_start)) != 0)
        fail_msg("stderr: %s", buf_cstr(&sinks[1].out));
    for (int i = 0; i < 2; i++)
        buf_free(&sinks[i].out);
    buf_free(&r.out);
    buf_free(&r.err);
    buf_free(&request);
}

static void test_e2e_python(void **state)
{
    (void)state;
    e2e_run("-c", runner_python_src,
            "import sys\n"
            "print('got ' + sys.stdin.read())\n"
            "sys.stdout.write('\\x00\\x1emcpsbx-done:' + 'f' * 32 + ':{}\\n')\n"
            "print('warn', file=sys.stderr)\n"
            "sys.exit(3)\n",
            "\xc3\xa9 in",
            LIT("got \xc3\xa9 in\n\0\036mcpsbx-done:ffffffffffffffffffffffffffffffff:{}\n"),
            "warn\n", 3);
}

static void test_e2e_node(void **state)
{
    (void)state;
    e2e_run("-e", runner_node_src,
            "const fs = require('fs');\n"
            "console.log('got ' + fs.readFileSync(0, 'utf8'));\n"
            "console.error('warn');\n"
            "setTimeout(() => { console.log('later'); process.exitCode = 4; }, 5);\n",
            "\xc3\xa9 in", LIT("got \xc3\xa9 in\nlater\n"), "warn\n", 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_plain_output),
        cmocka_unit_test(test_scan_record_after_output),
        cmocka_unit_test(test_scan_record_first),
        cmocka_unit_test(test_scan_decoy_wrong_nonce),
        cmocka_unit_test(test_scan_partial_prefix_at_end),
        cmocka_unit_test(test_scan_partial_prefix_then_more),
        cmocka_unit_test(test_scan_prefix_bytes_in_output),
        cmocka_unit_test(test_scan_binary_output),
        cmocka_unit_test(test_scan_record_cut_off),
        cmocka_unit_test(test_scan_oversize_record),
        cmocka_unit_test(test_scan_frames),
        cmocka_unit_test(test_scan_emit_error_propagates),
        cmocka_unit_test(test_scan_after_done_ignored),
        cmocka_unit_test(test_result_valid),
        cmocka_unit_test(test_result_files),
        cmocka_unit_test(test_result_invalid),
        cmocka_unit_test(test_result_check),
        cmocka_unit_test(test_result_compile_error),
        cmocka_unit_test(test_result_typecheck_by),
        cmocka_unit_test(test_result_session),
        cmocka_unit_test(test_result_requires_done),
        cmocka_unit_test(test_nonce),
        cmocka_unit_test(test_encode_basic),
        cmocka_unit_test(test_encode_special_bytes),
        cmocka_unit_test(test_encode_files),
        cmocka_unit_test(test_encode_variables),
        cmocka_unit_test(test_encode_generic_variables),
        cmocka_unit_test(test_encode_env),
        cmocka_unit_test(test_encode_program),
        cmocka_unit_test(test_encode_random_round_trip),
        cmocka_unit_test(test_encode_rejects),
        cmocka_unit_test(test_encode_session),
        cmocka_unit_test(test_encode_session_source),
        cmocka_unit_test(test_encode_interrupt),
        cmocka_unit_test(test_e2e_python),
        cmocka_unit_test(test_e2e_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
