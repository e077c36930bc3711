/* sandbox/output/workpath.c: the path rules for files in, output_files patterns
 * and files out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "sandbox/output/workpath.h"

static void check_ok(int (*fn)(const char *, size_t, char **, struct err *), const char *in,
                     size_t len, const char *want)
{
    char *out = NULL;
    struct err err = ERR_INIT;
    if (fn(in, len, &out, &err) != 0)
        fail_msg("'%s' refused: %s", in, err_msg(&err));
    assert_string_equal(out, want);
    free(out);
}

static void check_bad(int (*fn)(const char *, size_t, char **, struct err *), const char *in,
                      size_t len, const char *mention)
{
    char *out = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(fn(in, len, &out, &err), -1);
    assert_null(out);
    assert_int_equal(err.code, ERR_INVALID);
    if (!strstr(err_msg(&err), mention))
        fail_msg("'%.40s': '%s' does not mention '%s'", in, err_msg(&err), mention);
    err_clear(&err);
}

#define S(s) s, sizeof(s) - 1

static void test_normalize(void **state)
{
    (void)state;
    check_ok(workpath_normalize, S("data/input.csv"), "data/input.csv");
    check_ok(workpath_normalize, S("./a//b/./c"), "a/b/c");
    check_ok(workpath_normalize, S("d\xc3\xa9j\xc3\xa0 vu.txt"), "d\xc3\xa9j\xc3\xa0 vu.txt");
    check_ok(workpath_normalize, S("..a/b..c/.hidden"), "..a/b..c/.hidden");
    check_ok(workpath_normalize, S("sub/main.py"), "sub/main.py"); /* only the top one is taken */
    check_bad(workpath_normalize, S(""), "empty");
    check_bad(workpath_normalize, S("/etc/passwd"), "absolute");
    check_bad(workpath_normalize, S("a/../../b"), "'..'");
    check_bad(workpath_normalize, S(".."), "'..'");
    check_bad(workpath_normalize, S("a\0b"), "control");
    check_bad(workpath_normalize, S("a\nb"), "control");
    check_bad(workpath_normalize, S("a\x7f"), "control");
    check_bad(workpath_normalize, S("a\xff"), "UTF-8");
    check_bad(workpath_normalize, S("dir/"), "slash");
    check_bad(workpath_normalize, S("./."), "working directory itself");
    check_bad(workpath_normalize, S("main.py"), "runner's own");
    check_bad(workpath_normalize, S("./main.mjs"), "runner's own");
    check_bad(workpath_normalize, S(".mcpsbx-stdin"), "runner's own");
    /* Every language's source file and what its compile step makes. */
    check_bad(workpath_normalize, S("main"),
              "the program's or the runner's own (main, main.* and "
              ".mcpsbx* are taken)");
    check_bad(workpath_normalize, S("main.c"), "program's");
    check_bad(workpath_normalize, S("main.cpp"), "program's");
    check_bad(workpath_normalize, S("main.ts"), "program's");
    check_bad(workpath_normalize, S("./main.js"), "program's");
    check_bad(workpath_normalize, S("main.sh"), "program's");
    check_bad(workpath_normalize, S("main.x.y"), "program's");
    /* "main." names nothing of a program's (reserved() wants a suffix). */
    check_ok(workpath_normalize, S("main./x"), "main./x");
    check_bad(workpath_normalize, S("main/data.csv"), "program's");
    check_bad(workpath_normalize, S(".mcpsbx"), "runner's own");
    check_ok(workpath_normalize, S("main_"), "main_");
    check_ok(workpath_normalize, S("mainly.txt"), "mainly.txt");
    check_ok(workpath_normalize, S("Main.c"), "Main.c");
    check_ok(workpath_normalize, S("src/main.c"), "src/main.c");
    check_ok(workpath_normalize, S("src/main"), "src/main");
    check_ok(workpath_normalize, S(".mcpsb"), ".mcpsb");
    char name[WORKPATH_MAX_COMPONENT + 2];
    memset(name, 'n', sizeof(name));
    check_bad(workpath_normalize, name, sizeof(name), "name over 255");
    name[WORKPATH_MAX_COMPONENT] = '\0';
    check_ok(workpath_normalize, name, WORKPATH_MAX_COMPONENT, name);
}

static void test_normalize_lengths(void **state)
{
    (void)state;
    /* 1024 bytes is the cap, counted before and after normalizing. */
    char long_path[WORKPATH_MAX_BYTES + 1];
    for (size_t i = 0; i < sizeof(long_path); i++)
        long_path[i] = i % 2 ? '/' : 'a';
    char *out = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(workpath_normalize(long_path, WORKPATH_MAX_BYTES - 1, &out, &err), 0);
    assert_int_equal(strlen(out), WORKPATH_MAX_BYTES - 1);
    free(out);
    check_bad(workpath_normalize, long_path, WORKPATH_MAX_BYTES + 1, "over 1024");
}

static void test_pattern_and_output(void **state)
{
    (void)state;
    check_ok(workpath_pattern, S("**/*.png"), "**/*.png");
    check_ok(workpath_pattern, S("./out//[ab]?.csv"), "out/[ab]?.csv");
    check_ok(workpath_pattern, S("main.py"), "main.py");
    check_bad(workpath_pattern, S("a**b"), "'**'");
    check_bad(workpath_pattern, S("../*"), "'..'");
    check_bad(workpath_pattern, S("/tmp/*"), "absolute");
    check_ok(workpath_output, S("main.py"), "main.py");
    check_ok(workpath_output, S("a**b"), "a**b");
    check_bad(workpath_output, S("a/../b"), "'..'");
}

static void test_prefix(void **state)
{
    (void)state;
    assert_true(workpath_is_prefix("a", "a"));
    assert_true(workpath_is_prefix("a", "a/b"));
    assert_false(workpath_is_prefix("a", "ab"));
    assert_false(workpath_is_prefix("a/b", "a"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_normalize_lengths),
        cmocka_unit_test(test_pattern_and_output),
        cmocka_unit_test(test_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
