/* redact.c: every form of a secret is replaced, wherever the stream's
 * chunks happen to split it, and nothing else changes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "base/buf.h"
#include "base/util.h"
#include "sandbox/redact.h"

struct sink {
    struct buf out;
    int calls;
    int stop_after; /* 0: never */
};

static int to_buf(void *ctx, const char *data, size_t len)
{
    struct sink *k = ctx;
    if (buf_add(&k->out, data, len) < 0)
        return -1;
    k->calls++;
    return k->stop_after && k->calls >= k->stop_after ? 7 : 0;
}

/* The whole text through a fresh stream in chunks of `step` bytes. */
static char *run(const struct redactor *r, const char *text, size_t step)
{
    struct sink k = {0};
    buf_init(&k.out, 1 << 20);
    struct redact_stream s = {0};
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i += step) {
        size_t len = n - i < step ? n - i : step;
        assert_int_equal(redact_feed(r, &s, text + i, len, to_buf, &k), 0);
    }
    assert_int_equal(redact_flush(r, &s, to_buf, &k), 0);
    redact_stream_free(&s);
    assert_int_equal(buf_add(&k.out, "", 1), 0);
    return k.out.data;
}

static struct redactor *two_secrets(void)
{
    const char *names[] = {"API_KEY", "DB_PASS", "PIN"};
    const char *values[] = {"sk-live-1234/abcd+x", "p@ss word!", "123"};
    return redactor_new(names, values, 3);
}

static void expect(const struct redactor *r, const char *in, const char *want)
{
    for (size_t step = 1; step <= strlen(in) + 1; step++) {
        char *got = run(r, in, step);
        if (strcmp(got, want) != 0)
            fail_msg("chunks of %zu: got \"%s\", want \"%s\"", step, got, want);
        free(got);
    }
}

static void test_raw_value(void **state)
{
    (void)state;
    struct redactor *r = two_secrets();
    expect(r, "key=sk-live-1234/abcd+x\n", "key=[REDACTED:API_KEY]\n");
    expect(r, "sk-live-1234/abcd+xsk-live-1234/abcd+x", "[REDACTED:API_KEY][REDACTED:API_KEY]");
    expect(r, "pass: p@ss word! end", "pass: [REDACTED:DB_PASS] end");
    redactor_free(r);
}

/* Encoded forms: base64 (standard and URL-safe, no padding), hex, URL. */
static void test_encoded_forms(void **state)
{
    (void)state;
    const char *names[] = {"TOKEN"};
    const char *values[] = {"s3cr3t?/"};
    struct redactor *r = redactor_new(names, values, 1);
    expect(r, "czNjcjN0Py8=", "[REDACTED:TOKEN]=");    /* base64 */
    expect(r, "czNjcjN0Py8", "[REDACTED:TOKEN]");      /* no padding */
    expect(r, "s3cr3t%3F%2F", "[REDACTED:TOKEN]");     /* URL-encoded */
    expect(r, "7333637233743f2f", "[REDACTED:TOKEN]"); /* hex */
    expect(r, "7333637233743F2F", "[REDACTED:TOKEN]"); /* HEX */
    const char *v2[] = {"\xfb\xff\xfe\xfd"};           /* '+' and '/' in base64 */
    struct redactor *r2 = redactor_new(names, v2, 1);
    expect(r2, "x +//+/Q== x", "x [REDACTED:TOKEN]== x");
    expect(r2, "x -__-_Q x", "x [REDACTED:TOKEN] x");
    redactor_free(r2);
    redactor_free(r);
}

/* Other text is untouched: prefixes of a value that never complete, bytes
 * of every value, NULs; short values are not looked for. */
static void test_other_text_unchanged(void **state)
{
    (void)state;
    struct redactor *r = two_secrets();
    expect(r, "sk-live-1234/abcd+ sk-live p@ss word", "sk-live-1234/abcd+ sk-live p@ss word");
    expect(r, "PIN is 123, 1234", "PIN is 123, 1234");
    expect(r, "s", "s");
    expect(r, "", "");
    const char nul[] = "a\0b";
    struct sink k = {0};
    buf_init(&k.out, 1 << 20);
    struct redact_stream s = {0};
    assert_int_equal(redact_feed(r, &s, nul, 3, to_buf, &k), 0);
    assert_int_equal(redact_flush(r, &s, to_buf, &k), 0);
    assert_int_equal(k.out.len, 3);
    assert_memory_equal(k.out.data, nul, 3);
    buf_free(&k.out);
    redact_stream_free(&s);
    redactor_free(r);
}

/* Nothing long enough: no redactor, and feeding through NULL passes bytes. */
static void test_nothing_to_look_for(void **state)
{
    (void)state;
    const char *names[] = {"A", "B"};
    const char *values[] = {"", "abc"};
    assert_null(redactor_new(names, values, 2));
    assert_null(redactor_new(NULL, NULL, 0));
    char *got = run(NULL, "abc", 2);
    assert_string_equal(got, "abc");
    free(got);
}

/* A sink that says stop: its value comes back, and nothing more is sent. */
static void test_sink_stops(void **state)
{
    (void)state;
    struct redactor *r = two_secrets();
    struct sink k = {.stop_after = 1};
    buf_init(&k.out, 1 << 20);
    struct redact_stream s = {0};
    const char *in = "a sk-live-1234/abcd+x b";
    assert_int_equal(redact_feed(r, &s, in, strlen(in), to_buf, &k), 7);
    assert_int_equal(k.calls, 1);
    buf_free(&k.out);
    redact_stream_free(&s);
    redactor_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raw_value),
        cmocka_unit_test(test_encoded_forms),
        cmocka_unit_test(test_other_text_unchanged),
        cmocka_unit_test(test_nothing_to_look_for),
        cmocka_unit_test(test_sink_stops),
    };
    return cmocka_run_group_tests_name("redact", tests, NULL, NULL);
}
