/* The engine's answer to an attach upgrade: response head parsing and the
 * chunked decoding of a refusal's body (backend/docker/engine_http.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/docker/engine_http.h"
#include "base/util.h"

static int parse(const char *head, long *status, long long *cl, bool *chunked)
{
    struct err err = ERR_INIT;
    int rc = engine_http_parse_head(head, strlen(head), status, cl, chunked, &err);
    if (rc < 0) {
        assert_int_equal(err.code, ERR_PROTOCOL);
        assert_non_null(err.msg);
        err_clear(&err);
    }
    return rc;
}

static void test_parse_head(void **state)
{
    (void)state;
    long status = 0;
    long long cl = 0;
    bool chunked = true;
    assert_int_equal(parse("HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n",
                           &status, &cl, &chunked),
                     0);
    assert_int_equal(status, 101);
    assert_int_equal(cl, -1);
    assert_false(chunked);

    assert_int_equal(parse("HTTP/1.0 404\r\ncontent-LENGTH:\t 46 \r\n\r\n", &status, &cl, &chunked),
                     0);
    assert_int_equal(status, 404);
    assert_int_equal(cl, 46);

    assert_int_equal(
        parse("HTTP/1.1 500 Oops\r\nTransfer-Encoding: Chunked\r\n\r\n", &status, &cl, &chunked),
        0);
    assert_int_equal(status, 500);
    assert_true(chunked);
    assert_int_equal(parse("HTTP/1.1 500 Oops\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", &status,
                           &cl, &chunked),
                     0);
    assert_false(chunked);
    /* Headers after the blank line are body, not head. */
    assert_int_equal(parse("HTTP/1.1 200 OK\r\n\r\nContent-Length: 5\r\n", &status, &cl, &chunked),
                     0);
    assert_int_equal(cl, -1);

    static const char *const bad[] = {
        "",
        "HTTP/1.1 200 OK",          /* no CRLF at all */
        "HTTP/2 200 OK\r\n\r\n",    /* not HTTP/1.x */
        "HTTP/1.1 20 OK\r\n\r\n",   /* two digits */
        "HTTP/1.1 2000 OK\r\n\r\n", /* four digits */
        "HTTP/1.1  200\r\n\r\n",
        "http/1.1 200 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (parse(bad[i], &status, &cl, &chunked) == 0)
            fail_msg("head accepted: '%s'", bad[i]);
}

static size_t dechunk(char *out, size_t cap, const char *in)
{
    size_t n = strlen(in);
    assert_true(n < cap);
    memcpy(out, in, n + 1);
    return engine_http_dechunk(out, n);
}

static void test_dechunk(void **state)
{
    (void)state;
    static const struct {
        const char *in, *want; /* what decoding keeps */
    } cases[] = {
        {"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world"},
        /* Extensions are skipped; sizes are hex in either case. */
        {"0A;name=v\r\n0123456789\r\nb\r\nabcdefghijk\r\n0\r\n\r\n", "0123456789abcdefghijk"},
        /* A short last chunk gives what is there. */
        {"5\r\nhello\r\nff\r\npartial", "hellopartial"},
        /* Irregularities stop decoding, keeping what came before. */
        {"3\r\nabc\r\nzz\r\nxyz\r\n", "abc"},
        {"3\r\nabc\r\n4", "abc"},
        {"not chunked", ""},
        {"", ""},
    };
    char b[256];
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        size_t n = dechunk(b, sizeof(b), cases[i].in);
        if (n != strlen(cases[i].want) || memcmp(b, cases[i].want, n) != 0)
            fail_msg("case %zu: %zu bytes '%.*s', not '%s'", i, n, (int)n, b, cases[i].want);
    }
    assert_int_equal(engine_http_dechunk(NULL, 0), 0);
}

/* Gone: no socket file, or a file nothing listens on; a listener that
 * never answers (a stalled engine) is not gone. */
static void test_gone(void **state)
{
    (void)state;
    char path[64];
    snprintf(path, sizeof(path), "/tmp/mcpsbx-gone-test.%ld.sock", (long)getpid());
    unlink(path);
    struct err err = ERR_INIT;
    assert_int_equal(engine_http_gone(path, &err), 1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err_msg(&err), path));
    err_clear(&err);

    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, path, strlen(path) + 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    /* Bound, not listening: what a killed engine leaves behind. */
    assert_int_equal(engine_http_gone(path, &err), 1);
    err_clear(&err);
    assert_int_equal(listen(fd, 4), 0);
    assert_int_equal(engine_http_gone(path, &err), 0);
    assert_null(err.msg);
    close(fd);
    assert_int_equal(engine_http_gone(path, &err), 1);
    err_clear(&err);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_head),
        cmocka_unit_test(test_gone),
        cmocka_unit_test(test_dechunk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
