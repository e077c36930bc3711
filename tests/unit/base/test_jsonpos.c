#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonpos.h"

static const char text[] = "{\n"                              /* 1 */
                           "  \"languages\": [\n"             /* 2 */
                           "    {\"name\": \"perl\",\n"       /* 3 */
                           "     \"run\": [\"perl\", 1,\n"    /* 4 */
                           "             true]},\n"           /* 5 */
                           "    {\n"                          /* 6 */
                           "      \"n\\u0061me\": \"x\",\n"   /* 7 */
                           "      \"list\": [[], {}, null]\n" /* 8 */
                           "    }\n"                          /* 9 */
                           "  ],\n"                           /* 10 */
                           "  \"other\": \"a\\\"b\"\n"        /* 11 */
                           "}\n";

/* A key path walked from the root, each step's line. */
static void test_paths(void **state)
{
    (void)state;
    struct jsonpos *p = jsonpos_scan(text, strlen(text));
    assert_int_equal(jsonpos_line(p, JSONPOS_ROOT), 1);
    assert_int_equal(jsonpos_count(p, JSONPOS_ROOT), 2);
    size_t langs = jsonpos_member(p, JSONPOS_ROOT, "languages");
    assert_int_equal(jsonpos_line(p, langs), 2);
    assert_int_equal(jsonpos_count(p, langs), 2);
    size_t e0 = jsonpos_element(p, langs, 0);
    size_t e1 = jsonpos_element(p, langs, 1);
    assert_int_equal(jsonpos_line(p, e0), 3);
    assert_int_equal(jsonpos_line(p, e1), 6);
    assert_int_equal(jsonpos_element(p, langs, 2), JSONPOS_NONE);
    assert_int_equal(jsonpos_line(p, jsonpos_member(p, e0, "name")), 3);
    size_t run = jsonpos_member(p, e0, "run");
    assert_int_equal(jsonpos_line(p, run), 4);
    assert_int_equal(jsonpos_count(p, run), 3);
    assert_int_equal(jsonpos_line(p, jsonpos_element(p, run, 1)), 4);
    assert_int_equal(jsonpos_line(p, jsonpos_element(p, run, 2)), 5);
    /* Keys as decoded. */
    assert_int_equal(jsonpos_line(p, jsonpos_member(p, e1, "name")), 7);
    size_t list = jsonpos_member(p, e1, "list");
    assert_int_equal(jsonpos_count(p, list), 3);
    assert_int_equal(jsonpos_count(p, jsonpos_element(p, list, 0)), 0);
    assert_int_equal(jsonpos_line(p, jsonpos_member(p, JSONPOS_ROOT, "other")), 11);
    /* What is not there, and walks from it. */
    assert_int_equal(jsonpos_member(p, e0, "image"), JSONPOS_NONE);
    assert_int_equal(jsonpos_member(p, langs, "name"), JSONPOS_NONE);
    assert_int_equal(jsonpos_element(p, e0, 0), JSONPOS_NONE);
    assert_int_equal(jsonpos_line(p, JSONPOS_NONE), 0);
    assert_int_equal(jsonpos_count(p, JSONPOS_NONE), 0);
    assert_int_equal(jsonpos_member(p, JSONPOS_NONE, "x"), JSONPOS_NONE);
    assert_int_equal(jsonpos_repeated(p, e0), JSONPOS_NONE);
    jsonpos_free(p);
}

/* The first key that repeats an earlier one, in the text's order,
 * whatever its spelling. */
static void test_repeated(void **state)
{
    (void)state;
    const char *t = "{\"b\": 1,\n\"a\": 2,\n\"c\": 3,\n\"a\": 4,\n\"b\": 5,\n\"\\u0063\": 6}";
    struct jsonpos *p = jsonpos_scan(t, strlen(t));
    size_t r = jsonpos_repeated(p, JSONPOS_ROOT);
    assert_int_equal(jsonpos_line(p, r), 4);
    assert_int_equal(jsonpos_count(p, JSONPOS_ROOT), 6);
    /* The first of a repeated key is the one a lookup finds. */
    assert_int_equal(jsonpos_line(p, jsonpos_member(p, JSONPOS_ROOT, "a")), 2);
    jsonpos_free(p);

    t = "{\"x\": {\"k\": 1, \"k\": 2}, \"y\": [1, 1]}";
    p = jsonpos_scan(t, strlen(t));
    assert_int_equal(jsonpos_repeated(p, JSONPOS_ROOT), JSONPOS_NONE);
    assert_int_not_equal(jsonpos_repeated(p, jsonpos_member(p, JSONPOS_ROOT, "x")), JSONPOS_NONE);
    assert_int_equal(jsonpos_repeated(p, jsonpos_member(p, JSONPOS_ROOT, "y")), JSONPOS_NONE);
    jsonpos_free(p);
}

/* Scalars, an empty text, and text the walk does not know end it
 * cleanly. */
static void test_odd_texts(void **state)
{
    (void)state;
    const char *texts[] = {"",       "42",          "\"s\"",        "[",
                           "{\"a\"", "[1, NaN, 2]", "{\"a\": 1}}}", "\"unterminated"};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        struct jsonpos *p = jsonpos_scan(texts[i], strlen(texts[i]));
        (void)jsonpos_line(p, JSONPOS_ROOT);
        (void)jsonpos_repeated(p, JSONPOS_ROOT);
        jsonpos_free(p);
    }
    struct jsonpos *p = jsonpos_scan("[1, NaN, 2]", 11);
    assert_int_equal(jsonpos_count(p, JSONPOS_ROOT), 1);
    jsonpos_free(p);
    p = jsonpos_scan(NULL, 5);
    assert_int_equal(jsonpos_line(p, JSONPOS_ROOT), 0);
    jsonpos_free(p);
    jsonpos_free(NULL);
}

static void test_where(void **state)
{
    (void)state;
    int line = 0, col = 0;
    jsonpos_where("ab\ncd\n", 6, 0, &line, &col);
    assert_int_equal(line, 1);
    assert_int_equal(col, 1);
    jsonpos_where("ab\ncd\n", 6, 4, &line, &col);
    assert_int_equal(line, 2);
    assert_int_equal(col, 2);
    jsonpos_where("ab\ncd\n", 6, 99, &line, NULL);
    assert_int_equal(line, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_repeated),
        cmocka_unit_test(test_odd_texts),
        cmocka_unit_test(test_where),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
