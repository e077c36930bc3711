/* base/handle.c: handles name the daemon that made them, and a handle is
 * read back as this daemon's, another's, or none at all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "base/handle.h"

#define HEX32 "0123456789abcdef0123456789abcdef"

static void test_daemon_names(void **state)
{
    (void)state;
    assert_true(handle_daemon_valid("a"));
    assert_true(handle_daemon_valid("sandbox-0"));
    assert_true(handle_daemon_valid("0abc"));
    char longest[HANDLE_DAEMON_MAX + 2];
    memset(longest, 'x', HANDLE_DAEMON_MAX);
    longest[HANDLE_DAEMON_MAX] = '\0';
    assert_true(handle_daemon_valid(longest));
    longest[HANDLE_DAEMON_MAX] = 'x';
    longest[HANDLE_DAEMON_MAX + 1] = '\0';
    assert_false(handle_daemon_valid(longest));
    const char *bad[] = {"", "-a", "a-", "A", "a.b", "a_b", "a b", "é", "a\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(handle_daemon_valid(bad[i]));
    assert_false(handle_daemon_valid(NULL));
    struct err err = ERR_INIT;
    assert_int_equal(handle_set_daemon("Bad.Name", &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    err_clear(&err);
}

/* Unset, as in most unit tests: bare hex, and every bare id is this
 * daemon's form. */
static void test_unset(void **state)
{
    (void)state;
    assert_string_equal(handle_daemon(), "");
    char h[HANDLE_MAX + 1];
    assert_int_equal(handle_new(h), 0);
    assert_int_equal(strlen(h), HANDLE_RANDOM_LEN);
    assert_int_equal(handle_parse(h, NULL), HANDLE_MINE);
    assert_ptr_equal(handle_tail(h), h);
    char d[HANDLE_DAEMON_MAX + 1] = "?";
    assert_int_equal(handle_parse("other." HEX32, d), HANDLE_OTHER);
    assert_string_equal(d, "other");
}

static void test_named(void **state)
{
    (void)state;
    assert_int_equal(handle_set_daemon("alpha-1", NULL), 0);
    assert_string_equal(handle_daemon(), "alpha-1");
    char h[HANDLE_MAX + 1], h2[HANDLE_MAX + 1];
    assert_int_equal(handle_new(h), 0);
    assert_int_equal(handle_new(h2), 0);
    assert_int_equal(strncmp(h, "alpha-1.", 8), 0);
    assert_int_equal(strlen(h), 8 + HANDLE_RANDOM_LEN);
    assert_string_equal(handle_tail(h), h + 8);
    assert_string_not_equal(h, h2);
    assert_int_equal(handle_parse(h, NULL), HANDLE_MINE);
    assert_true(handle_equal(h, h));
    assert_false(handle_equal(h, h2));

    char d[HANDLE_DAEMON_MAX + 1] = "";
    assert_int_equal(handle_parse("beta." HEX32, d), HANDLE_OTHER);
    assert_string_equal(d, "beta");
    /* A prefix of this daemon's name is another daemon. */
    assert_int_equal(handle_parse("alpha." HEX32, d), HANDLE_OTHER);
    assert_string_equal(d, "alpha");
    /* A bare id names no daemon, and every daemon now has a name. */
    assert_int_equal(handle_parse(HEX32, d), HANDLE_BAD);

    const char *bad[] = {
        NULL,
        "",
        "alpha-1.",
        "alpha-1." HEX32 "0",
        "alpha-1.0123456789abcdef0123456789abcde",
        "alpha-1.0123456789ABCDEF0123456789abcdef",
        "alpha-1..0123456789abcdef0123456789abcdef",
        "Alpha-1." HEX32,
        "-a." HEX32,
        "a/b." HEX32,
        "." HEX32,
        "a.b." HEX32,
        "alpha-1." HEX32 "\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(handle_parse(bad[i], d), HANDLE_BAD);
    char huge[HANDLE_DAEMON_MAX + 40];
    memset(huge, 'a', HANDLE_DAEMON_MAX + 1);
    memcpy(huge + HANDLE_DAEMON_MAX + 1, "." HEX32, 34);
    assert_int_equal(handle_parse(huge, d), HANDLE_BAD);
}

/* "" picks a random name, new at each start. */
static void test_random_name(void **state)
{
    (void)state;
    assert_int_equal(handle_set_daemon("", NULL), 0);
    const char *n = handle_daemon();
    assert_int_equal(strlen(n), 8);
    assert_true(handle_daemon_valid(n));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_daemon_names),
        cmocka_unit_test(test_unset),
        cmocka_unit_test(test_named),
        cmocka_unit_test(test_random_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
