/* The pure parsers of request header values (transport/http_headers.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "transport/http_headers.h"

static void test_media_type(void **state)
{
    (void)state;
    assert_true(http_media_type_is("application/json", "application/json"));
    assert_true(http_media_type_is(" Application/JSON ; charset=utf-8", "application/json"));
    assert_false(http_media_type_is("application/jsonx", "application/json"));
    assert_false(http_media_type_is("text/plain", "application/json"));
    assert_false(http_media_type_is("", "application/json"));
    assert_false(http_media_type_is(NULL, "application/json"));
}

static void test_accept(void **state)
{
    (void)state;
    static const struct {
        const char *accept;
        bool json;
        bool sse;
    } cases[] = {
        {"application/json, text/event-stream", true, true},
        {"text/event-stream", false, true},
        {"*/*", true, true},
        {"application/*", true, false},
        {"text/*;q=0.1", false, true},
        {"TEXT/EVENT-STREAM", false, true},
        {"text/event-stream;q=0", false, false},
        {"text/event-stream; Q=0.0, */*;q=0", false, false},
        {"text/event-stream;charset=utf-8;q=0.5", false, true},
        {"text/event-stream;q=", false, true}, /* no number: not zero */
        {"text/html, application/xhtml+xml", false, false},
        {"application/json-seq", false, false},
        {"", false, false},
        {" , ,application/json", true, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (http_accept_lists(cases[i].accept, "application/json") != cases[i].json ||
            http_accept_lists(cases[i].accept, "text/event-stream") != cases[i].sse)
            fail_msg("Accept: %s", cases[i].accept);
    }
    assert_false(http_accept_lists(NULL, "application/json"));
}

static void test_host(void **state)
{
    (void)state;
    struct http_host h;
    assert_true(http_parse_host("localhost", 9, &h));
    assert_int_equal(h.name_len, 9);
    assert_false(h.has_port);
    assert_true(http_parse_host("localhost:8080", 14, &h));
    assert_int_equal(h.name_len, 9);
    assert_true(h.has_port);
    assert_int_equal(h.port, 8080);
    assert_true(http_parse_host("[::1]:9", 7, &h));
    assert_int_equal(h.name_len, 5);
    assert_int_equal(h.port, 9);
    assert_true(http_parse_host("[::1]", 5, &h));
    assert_false(h.has_port);
    /* Only len bytes count. */
    assert_true(http_parse_host("example.com:80junk", 14, &h));
    assert_int_equal(h.port, 80);

    static const char *const bad[] = {
        "",       ":80",    "host:", "host:123456", "host:8a", "[::1",
        "[::1]x", "[::1]:", "a:1:2", "[]x:1",       "host:-1", "host: 80"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (http_parse_host(bad[i], strlen(bad[i]), &h))
            fail_msg("Host accepted: '%s'", bad[i]);

    assert_true(http_is_loopback_name("LocalHost", 9));
    assert_true(http_is_loopback_name("127.0.0.1", 9));
    assert_true(http_is_loopback_name("[::1]", 5));
    assert_false(http_is_loopback_name("localhost.evil", 14));
    assert_false(http_is_loopback_name("127.0.0.2", 9));
    assert_true(http_token_is("ABC", 3, "abc"));
    assert_false(http_token_is("ABC", 2, "abc"));
}

static void test_origin(void **state)
{
    (void)state;
    struct http_host h;
    assert_true(http_parse_origin("http://localhost:3000", &h));
    assert_int_equal(h.name_len, 9);
    assert_int_equal(h.port, 3000);
    assert_true(http_parse_origin("HTTPS://[::1]", &h));
    assert_int_equal(h.name_len, 5);
    assert_false(h.has_port);
    assert_false(http_parse_origin("null", &h));
    assert_false(http_parse_origin("file://localhost", &h));
    /* The name is not validated: the allow-list decides. */
    assert_true(http_parse_origin("http://localhost/path", &h));
    assert_false(http_is_loopback_name(h.name, h.name_len));
    assert_false(http_parse_origin("http://", &h));
}

static void test_bearer(void **state)
{
    (void)state;
    size_t len = 0;
    const char *tok = http_bearer_token("Bearer abc123", &len);
    assert_non_null(tok);
    assert_int_equal(len, 6);
    assert_memory_equal(tok, "abc123", 6);
    tok = http_bearer_token("bearer \t s3cret \t", &len);
    assert_non_null(tok);
    assert_int_equal(len, 6);
    assert_memory_equal(tok, "s3cret", 6);
    tok = http_bearer_token("Bearer ", &len);
    assert_non_null(tok);
    assert_int_equal(len, 0);
    assert_null(http_bearer_token("Basic dXNlcjpwYXNz", &len));
    assert_null(http_bearer_token("Bearer", &len));
    assert_null(http_bearer_token(NULL, &len));
}

static void test_content_length(void **state)
{
    (void)state;
    assert_false(http_content_length_over(NULL, 10));
    assert_false(http_content_length_over("10", 10));
    assert_true(http_content_length_over("11", 10));
    assert_false(http_content_length_over("junk", 10));
    assert_true(http_content_length_over("99999999999999999999999", 10));
}

static void test_event_id(void **state)
{
    (void)state;
    unsigned long no = 0;
    unsigned long seq = 0;
    assert_true(http_parse_event_id("3-17", &no, &seq));
    assert_int_equal(no, 3);
    assert_int_equal(seq, 17);
    assert_true(http_parse_event_id("1-0", &no, &seq));
    assert_int_equal(seq, 0);
    static const char *const bad[] = {"",
                                      "0-1",
                                      "-1",
                                      "1-",
                                      "1-x",
                                      "1--2",
                                      " 1-2",
                                      "1- 2",
                                      "1-2 ",
                                      "a-1",
                                      "1_2",
                                      "1-+2",
                                      "1-18446744073709551615"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (http_parse_event_id(bad[i], &no, &seq))
            fail_msg("Last-Event-ID accepted: '%s'", bad[i]);
}

static void test_protocol_version(void **state)
{
    (void)state;
    assert_true(http_protocol_version_ok(NULL));
    assert_true(http_protocol_version_ok("2025-11-25"));
    assert_true(http_protocol_version_ok("2025-06-18"));
    assert_true(http_protocol_version_ok("2025-03-26"));
    assert_true(http_protocol_version_ok("2024-11-05"));
    assert_false(http_protocol_version_ok("1999-01-01"));
    assert_false(http_protocol_version_ok(""));
    assert_false(http_protocol_version_ok("2025-06-18 "));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_media_type), cmocka_unit_test(test_accept),
        cmocka_unit_test(test_host),       cmocka_unit_test(test_origin),
        cmocka_unit_test(test_bearer),     cmocka_unit_test(test_content_length),
        cmocka_unit_test(test_event_id),   cmocka_unit_test(test_protocol_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
