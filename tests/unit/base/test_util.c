/* base/util.c: UTF-8 checks and repair, hex, write_all and write_line, the monotonic
 * timed wait, decimal numbers, a directory of this process's own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

static void test_utf8(void **state)
{
    (void)state;
    assert_true(util_utf8_valid("", 0));
    assert_true(util_utf8_valid("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", 15));
    assert_true(util_utf8_valid("a\0b", 3)); /* NUL is valid UTF-8 */
    static const char *const bad[] = {
        "\xc3",             /* cut short */
        "\xc0\xaf",         /* overlong */
        "\xed\xa0\x80",     /* surrogate */
        "\xf4\x90\x80\x80", /* past U+10FFFF */
        "\xff",
        "\x80",
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
        assert_false(util_utf8_valid(bad[i], strlen(bad[i])));

    size_t n = 0;
    char *s = util_utf8_sanitize("a\xff"
                                 "b\xc3",
                                 4, &n);
    /* Each bad byte becomes U+FFFD; the rest is kept as it was. */
    assert_int_equal(n, 8);
    assert_memory_equal(s,
                        "a\xef\xbf\xbd"
                        "b\xef\xbf\xbd",
                        8);
    assert_true(util_utf8_valid(s, n));
    free(s);
    s = util_utf8_sanitize("ok\0ok", 5, &n);
    assert_int_equal(n, 5);
    assert_memory_equal(s, "ok\0ok", 5);
    free(s);
}

static void test_utf8_prefix(void **state)
{
    (void)state;
    /* "a" + U+20AC (3 bytes) + "b": a cut inside the euro sign keeps "a". */
    const char *s = "a\xe2\x82\xac"
                    "b";
    assert_int_equal(util_utf8_prefix(s, 0), 0);
    assert_int_equal(util_utf8_prefix(s, 1), 1);
    assert_int_equal(util_utf8_prefix(s, 2), 1);
    assert_int_equal(util_utf8_prefix(s, 3), 1);
    assert_int_equal(util_utf8_prefix(s, 4), 4);
    assert_int_equal(util_utf8_prefix(s, 5), 5);
    assert_int_equal(util_utf8_prefix(s, 500), 5);
    /* Every cut of a mixed string is valid UTF-8. */
    const char *mix = "h\xc3\xa9llo \xf0\x9f\x98\x80!";
    for (size_t max = 0; max <= strlen(mix) + 1; max++)
        assert_true(util_utf8_valid(mix, (size_t)util_utf8_prefix(mix, max)));
}

static void test_hex_and_strings(void **state)
{
    (void)state;
    char out[9];
    util_hex((const unsigned char *)"\x00\x9f\xff\x10", 4, out);
    assert_string_equal(out, "009fff10");
    assert_true(util_ascii_word("a-b_c.d:1", 9, 9));
    assert_false(util_ascii_word("a-b_c.d:1", 9, 8));
    assert_false(util_ascii_word("", 0, 8));
    assert_false(util_ascii_word("a b", 3, 8));
    assert_false(util_ascii_word("a\x7f", 2, 8));
    assert_false(util_ascii_word("\xc3\xa9", 2, 8));
    assert_false(util_ascii_word("a\0b", 3, 8));
    char *p = xasprintf("%s-%d", "x", 42);
    assert_string_equal(p, "x-42");
    free(p);
    p = xstrndup("abcdef", 3);
    assert_string_equal(p, "abc");
    free(p);
    unsigned char r1[16] = {0}, r2[16] = {0};
    assert_int_equal(util_random_bytes(r1, sizeof(r1)), 0);
    assert_int_equal(util_random_bytes(r2, sizeof(r2)), 0);
    assert_memory_not_equal(r1, r2, sizeof(r1));
}

/* The wall clock as RFC 3339 with milliseconds: UTC, zero-padded, a leap
 * day, the first and last times it shows, and nothing outside them. */
static void test_rfc3339_ms(void **state)
{
    (void)state;
    char buf[UTIL_RFC3339_CAP];
    assert_int_equal(util_rfc3339_ms(buf, 1795770900123LL), 24);
    assert_string_equal(buf, "2026-11-27T09:15:00.123Z");
    assert_int_equal(util_rfc3339_ms(buf, 0), 24);
    assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
    assert_int_equal(util_rfc3339_ms(buf, 1709251199999LL), 24);
    assert_string_equal(buf, "2024-02-29T23:59:59.999Z");
    assert_int_equal(util_rfc3339_ms(buf, 253402300799999LL), 24);
    assert_string_equal(buf, "9999-12-31T23:59:59.999Z");
    assert_int_equal(util_rfc3339_ms(buf, 253402300799999LL + 1), -1);
    assert_string_equal(buf, "");
    assert_int_equal(util_rfc3339_ms(buf, -1), -1);
    assert_string_equal(buf, "");
    /* The wall clock: after this test was written (2023-11-14 here), and
     * shown as a time of this century. */
    long long now = util_wall_ms();
    assert_true(now > 1700000000000LL);
    assert_int_equal(util_rfc3339_ms(buf, now), 24);
    assert_memory_equal(buf, "20", 2);
}

/* Makes the pipe fds, writes text into it with write_fn, and checks that one
 * read gives want, whole. The pipe stays open. */
static void write_and_read(int (*write_fn)(int, const void *, size_t), const char *text,
                           const char *want, int fds[2])
{
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write_fn(fds[1], text, strlen(text)), 0);
    char buf[64] = {0};
    assert_int_equal(read(fds[0], buf, sizeof(buf) - 1), strlen(want));
    assert_string_equal(buf, want);
}

static void test_write_all(void **state)
{
    (void)state;
    int fds[2];
    write_and_read(util_write_all, "hello", "hello", fds);
    close(fds[0]);
    /* A reader that went away is an error, not a crash (SIGPIPE ignored). */
    signal(SIGPIPE, SIG_IGN);
    assert_int_equal(util_write_all(fds[1], "x", 1), -1);
    close(fds[1]);
}

struct line_writer {
    int fd;
    const char *buf;
    size_t n;
    int rc;
};

static void *line_writer_main(void *arg)
{
    struct line_writer *w = arg;
    w->rc = util_write_line(w->fd, w->buf, w->n);
    close(w->fd);
    return NULL;
}

/* One line, whole: the text and its newline, also when the pipe takes
 * only part of it at a time (a reader draining a nearly full pipe). */
static void test_write_line(void **state)
{
    (void)state;
    int fds[2];
    write_and_read(util_write_line, "{\"a\":1}", "{\"a\":1}\n", fds);

    /* Larger than the pipe: short writes inside the text. */
    size_t n = (size_t)fcntl(fds[1], F_GETPIPE_SZ) * 3 + 11;
    char *big = xmalloc(n);
    memset(big, 'x', n);
    struct line_writer w = {.fd = fds[1], .buf = big, .n = n, .rc = -2};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, line_writer_main, &w), 0);
    size_t got = 0;
    char last = 0;
    for (;;) {
        char chunk[4096];
        ssize_t r = read(fds[0], chunk, sizeof(chunk));
        if (r <= 0)
            break;
        got += (size_t)r;
        last = chunk[r - 1];
    }
    pthread_join(th, NULL);
    assert_int_equal(w.rc, 0);
    assert_int_equal(got, n + 1);
    assert_int_equal(last, '\n');
    close(fds[0]);
    free(big);
}

static void test_cond_wait_ms(void **state)
{
    (void)state;
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond;
    util_cond_init_monotonic(&cond);
    pthread_mutex_lock(&lock);
    double t0 = util_now_ms();
    util_cond_wait_ms(&cond, &lock, 30.5);
    double took = util_now_ms() - t0;
    /* Only that it waited and came back: no upper bound on a busy machine. */
    assert_true(took >= 25.0);
    util_cond_wait_ms(&cond, &lock, -5); /* a past deadline returns at once */
    pthread_mutex_unlock(&lock);
    pthread_cond_destroy(&cond);
}

static void test_printable_ascii(void **state)
{
    (void)state;
    char out[8];
    assert_int_equal(util_printable_ascii(out, sizeof(out), "a b\n\x7f\xc3\xa9", 7, true), 7);
    assert_string_equal(out, "a b????");
    assert_int_equal(util_printable_ascii(out, sizeof(out), "a b", 3, false), 3);
    assert_string_equal(out, "a?b");
    /* A NUL inside is one more odd byte; the copy is cut to fit. */
    assert_int_equal(util_printable_ascii(out, sizeof(out), "x\0y", 3, true), 3);
    assert_string_equal(out, "x?y");
    assert_int_equal(util_printable_ascii(out, 4, "abcdef", 6, true), 3);
    assert_string_equal(out, "abc");
    assert_int_equal(util_printable_ascii(out, sizeof(out), NULL, 5, true), 0);
    assert_string_equal(out, "");
}

static const char *esc(char *out, size_t cap, const char *s, size_t n)
{
    size_t k = util_escape(out, cap, s, n);
    assert_int_equal(k, strlen(out));
    assert_true(k < cap);
    return out;
}

/* Control characters, C1, line separators, bidi controls and invalid
 * UTF-8 become escapes; other text stays; a cut never splits an escape
 * or a character and says so. */
static void test_escape(void **state)
{
    (void)state;
    char out[256];
    assert_string_equal(esc(out, sizeof(out), "plain é ☃ \\ text", strlen("plain é ☃ \\ text")),
                        "plain é ☃ \\ text");
    static const char ctl[] = "a\nb\rc\td\x1b[2J\x7f\x01";
    assert_string_equal(esc(out, sizeof(out), ctl, sizeof(ctl) - 1),
                        "a\\nb\\rc\\td\\x1b[2J\\x7f\\x01");
    static const char nul[] = "x\0y";
    assert_string_equal(esc(out, sizeof(out), nul, 3), "x\\x00y");
    /* U+0085 (NEL), U+2028, U+2029, U+202E, U+2066: shown as code points. */
    static const char uni[] =
        "\xc2\x85|\xe2\x80\xa8|\xe2\x80\xa9|\xe2\x80\xae|\xe2\x81\xa6|\xc2\xa0";
    assert_string_equal(esc(out, sizeof(out), uni, sizeof(uni) - 1),
                        "\\u0085|\\u2028|\\u2029|\\u202e|\\u2066|\xc2\xa0");
    /* Invalid UTF-8: every byte of it, overlong forms and surrogates too. */
    static const char bad[] = "\xff\xc3(\xc0\xaf\xed\xa0\x80\xe2\x80";
    assert_string_equal(esc(out, sizeof(out), bad, sizeof(bad) - 1),
                        "\\xff\\xc3(\\xc0\\xaf\\xed\\xa0\\x80\\xe2\\x80");
    /* Cut: room for "..." kept, nothing split. */
    assert_string_equal(esc(out, 12, "0123456789abc", 13), "01234567...");
    assert_string_equal(esc(out, 12, "012345\n\n\n", 9), "012345\\n...");
    assert_string_equal(esc(out, 10, "abc☃☃☃", 12), "abc☃...");
    assert_string_equal(esc(out, 12, "0123456789a", 11), "0123456789a");
    assert_string_equal(esc(out, 3, "abcdef", 6), "..");
    assert_string_equal(esc(out, 1, "abcdef", 6), "");
    assert_int_equal(util_escape(out, 0, "abc", 3), 0);
    /* Escaped text escapes to itself. */
    char again[256];
    esc(out, sizeof(out), ctl, sizeof(ctl) - 1);
    assert_string_equal(esc(again, sizeof(again), out, strlen(out)), out);
}

static void test_env_entry(void **state)
{
    (void)state;
    char *envp[] = {"AB=1", "A=2", "A=3", "B", NULL};
    assert_string_equal(util_env_entry(envp, "A"), "A=2");
    assert_string_equal(util_env_entry(envp, "AB"), "AB=1");
    assert_null(util_env_entry(envp, "B"));
    assert_null(util_env_entry(envp, "C"));
    assert_null(util_env_entry(NULL, "A"));
}

static void test_parse_decimal(void **state)
{
    (void)state;
    unsigned long long v = 7;
    assert_true(util_parse_decimal("0", 1, 0, &v));
    assert_int_equal(v, 0);
    assert_true(util_parse_decimal("12345:", 5, ULLONG_MAX, &v));
    assert_int_equal(v, 12345);
    assert_true(util_parse_decimal("18446744073709551615", 20, ULLONG_MAX, &v));
    assert_true(v == ULLONG_MAX);
    v = 7;
    static const char *const bad[] = {
        "", "-1", "1a", " 1", "18446744073709551616", "000000000000000000001"};
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
        assert_false(util_parse_decimal(bad[i], strlen(bad[i]), ULLONG_MAX, &v));
    assert_false(util_parse_decimal("101", 3, 100, &v));
    assert_int_equal(v, 7); /* untouched */
}

static void test_own_dir(void **state)
{
    (void)state;
    char base[] = "/tmp/util_own_dir.XXXXXX";
    assert_non_null(mkdtemp(base));
    char *dir = xasprintf("%s/d", base), *link = xasprintf("%s/l", base);
    struct stat st;
    assert_int_equal(util_own_dir(dir, 0711, &st), 0); /* made */
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(util_own_dir(dir, 0711, NULL), 0); /* there */
    assert_int_equal(chmod(dir, 0777), 0);
    assert_int_equal(util_own_dir(dir, 0711, NULL), UTIL_DIR_NOT_OURS);
    assert_int_equal(symlink(base, link), 0);
    assert_int_equal(util_own_dir(link, 0711, NULL), UTIL_DIR_NOT_OURS);
    char *below = xasprintf("%s/missing/d", base);
    errno = 0;
    assert_int_equal(util_own_dir(below, 0711, NULL), -1);
    assert_int_equal(errno, ENOENT);
    unlink(link);
    rmdir(dir);
    rmdir(base);
    free(below);
    free(link);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_entry),       cmocka_unit_test(test_escape),
        cmocka_unit_test(test_printable_ascii), cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_utf8_prefix),     cmocka_unit_test(test_hex_and_strings),
        cmocka_unit_test(test_write_all),       cmocka_unit_test(test_write_line),
        cmocka_unit_test(test_cond_wait_ms),    cmocka_unit_test(test_parse_decimal),
        cmocka_unit_test(test_own_dir),         cmocka_unit_test(test_rfc3339_ms),
    };
    return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
