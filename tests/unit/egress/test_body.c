/* egress/body.c: where a request's body ends. Content-Length counted
 * down; chunked bodies whole and a byte at a time, with extensions and
 * trailers, and what lies past their end left out; and the framings the
 * scanner refuses, each with its reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "egress/body.h"

static void test_none_and_length(void **state)
{
    (void)state;
    struct egress_body b;
    egress_body_init(&b, EGRESS_BODY_NONE, 0);
    assert_true(egress_body_done(&b));
    assert_int_equal(egress_body_take(&b, "GET", 3), 0);

    egress_body_init(&b, EGRESS_BODY_LENGTH, 0);
    assert_true(egress_body_done(&b));

    egress_body_init(&b, EGRESS_BODY_LENGTH, 5);
    assert_int_equal(egress_body_take(&b, "hel", 3), 3);
    assert_false(egress_body_done(&b));
    assert_int_equal(egress_body_take(&b, "lo world", 8), 2);
    assert_true(egress_body_done(&b));
    assert_int_equal(egress_body_take(&b, "more", 4), 0);
    assert_null(egress_body_error(&b));
}

/* text (a chunked body, then tail) is taken up to its end, at once and a
 * byte at a time. */
static void chunked_ok(const char *body, const char *tail)
{
    char text[512];
    size_t n = strlen(body);
    size_t all = n + strlen(tail);
    assert_true(all < sizeof(text));
    memcpy(text, body, n);
    memcpy(text + n, tail, strlen(tail));

    struct egress_body b;
    egress_body_init(&b, EGRESS_BODY_CHUNKED, 0);
    assert_int_equal(egress_body_take(&b, text, all), n);
    assert_true(egress_body_done(&b));

    egress_body_init(&b, EGRESS_BODY_CHUNKED, 0);
    size_t took = 0;
    for (size_t i = 0; i < all; i++) {
        size_t k = egress_body_take(&b, text + i, 1);
        assert_true(k <= 1);
        took += k;
        assert_true(egress_body_done(&b) == (i + 1 >= n));
    }
    assert_int_equal(took, n);
    assert_null(egress_body_error(&b));
}

static void test_chunked(void **state)
{
    (void)state;
    chunked_ok("0\r\n\r\n", "");
    chunked_ok("5\r\nhello\r\n6;a=b;c=\"d e\"\r\n world\r\n0\r\n\r\n", "GET / HTTP/1.1\r\n\r\n");
    chunked_ok("A\r\n0123456789\r\na\r\n0123456789\r\n000\r\nX-T: 1\r\nY: \t2\r\n\r\n", "junk");
    chunked_ok("00000000000000F\r\n0123456789abcde\r\n0\r\n\r\n", "");
}

static void chunked_bad(const char *text, const char *why)
{
    struct egress_body b;
    egress_body_init(&b, EGRESS_BODY_CHUNKED, 0);
    size_t n = strlen(text);
    size_t took = egress_body_take(&b, text, n);
    assert_true(took < n);
    assert_false(egress_body_done(&b));
    const char *got = egress_body_error(&b);
    if (!got || !strstr(got, why))
        fail_msg("'%s': error '%s' lacks '%s'", text, got ? got : "(none)", why);
    assert_int_equal(egress_body_take(&b, "0\r\n\r\n", 5), 0);
}

static void test_chunked_refused(void **state)
{
    (void)state;
    chunked_bad("5\nhello\r\n0\r\n\r\n", "other than ';' or CRLF");
    chunked_bad("5\r\r\nhello\r\n", "CR without LF");
    chunked_bad(";x\r\n", "does not begin with a hex digit");
    chunked_bad(" 5\r\nhello\r\n", "does not begin with a hex digit");
    chunked_bad("5 \r\nhello\r\n", "followed by something other");
    chunked_bad("0x5\r\nhello\r\n", "followed by something other");
    chunked_bad("1000000000000000\r\n", "more than 15 hex digits");
    chunked_bad("5;\x01\r\nhello\r\n", "control byte");
    chunked_bad("1\r\nab\r\n", "not followed by CRLF");
    chunked_bad("1\r\na\n0\r\n\r\n", "not followed by CRLF");
    chunked_bad("0\r\nX: 1\rY", "trailer line's CR without LF");
    chunked_bad("0\r\nX: \x7f\r\n\r\n", "control byte");

    char longer[EGRESS_CHUNK_LINE_MAX + 16];
    memset(longer, 'a', sizeof(longer));
    longer[0] = '1';
    longer[1] = ';';
    longer[sizeof(longer) - 1] = '\0';
    chunked_bad(longer, "longer than 4 KiB");
    longer[0] = '0';
    longer[1] = '\r';
    longer[2] = '\n';
    chunked_bad(longer, "trailer section is too long");
}

static void test_trailer_total(void **state)
{
    (void)state;
    /* Many short trailer lines, each fine, past the section's cap. */
    struct egress_body b;
    egress_body_init(&b, EGRESS_BODY_CHUNKED, 0);
    assert_int_equal(egress_body_take(&b, "0\r\n", 3), 3);
    static const char line[] = "X-Many: 0123456789012345678901234567890123456789\r\n";
    for (size_t i = 0; i < 2 * EGRESS_TRAILER_MAX / (sizeof(line) - 1); i++)
        egress_body_take(&b, line, sizeof(line) - 1);
    assert_non_null(egress_body_error(&b));
    assert_false(egress_body_done(&b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_none_and_length),
        cmocka_unit_test(test_chunked),
        cmocka_unit_test(test_chunked_refused),
        cmocka_unit_test(test_trailer_total),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
