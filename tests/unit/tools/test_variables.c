#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "tools/variables.h"

static void expect_refused(enum exec_language lang, const char *name, const char *why_part)
{
    const char *why = NULL;
    if (variables_name_ok(lang, name, &why))
        fail_msg("'%s' was allowed for %s", name, exec_language_name(lang));
    if (!strstr(why, why_part))
        fail_msg("'%s': '%s' does not mention '%s'", name, why, why_part);
}

static void expect_allowed(enum exec_language lang, const char *name)
{
    const char *why = NULL;
    if (!variables_name_ok(lang, name, &why))
        fail_msg("'%s' was refused for %s: %s", name, exec_language_name(lang), why);
}

static void test_python_names(void **state)
{
    (void)state;
    const char *ok[] = {"rows", "name", "_x",      "x1",    "df",   "match",
                        "case", "_",    "numbers", "email", "data", "constructor"};
    for (size_t i = 0; i < ARRAY_SIZE(ok); i++)
        expect_allowed(EXEC_PYTHON, ok[i]);
    expect_refused(EXEC_PYTHON, "$", "identifier");
    expect_refused(EXEC_PYTHON, "__import__", "two underscores");
    expect_refused(EXEC_PYTHON, "__builtins__", "two underscores");
    expect_refused(EXEC_PYTHON, "os", "loaded module");
    expect_refused(EXEC_PYTHON, "sys", "loaded module");
    expect_refused(EXEC_PYTHON, "print", "builtin");
    expect_refused(EXEC_PYTHON, "len", "builtin");
    expect_refused(EXEC_PYTHON, "type", "builtin");
    expect_refused(EXEC_PYTHON, "class", "keyword");
    expect_refused(EXEC_PYTHON, "None", "keyword");
    expect_refused(EXEC_PYTHON, "1abc", "identifier");
    expect_refused(EXEC_PYTHON, "a-b", "identifier");
    expect_refused(EXEC_PYTHON, "a b", "identifier");
    expect_refused(EXEC_PYTHON, "", "identifier");
    expect_refused(EXEC_PYTHON, "\xc3\xa9t\xc3\xa9", "ASCII");
    char long_name[VARIABLES_MAX_NAME + 2];
    memset(long_name, 'x', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    expect_refused(EXEC_PYTHON, long_name, "longer than 128 bytes");
    long_name[VARIABLES_MAX_NAME] = '\0';
    expect_allowed(EXEC_PYTHON, long_name);
}

static void test_javascript_names(void **state)
{
    (void)state;
    const char *ok[] = {"rows", "name", "_x", "$", "$el", "os", "fs", "data", "email", "numbers"};
    for (size_t i = 0; i < ARRAY_SIZE(ok); i++)
        expect_allowed(EXEC_JAVASCRIPT, ok[i]);
    const char *refused[] = {"constructor", "toString", "hasOwnProperty", "require",
                             "module",      "exports",  "process",        "console",
                             "setTimeout",  "Object",   "globalThis",     "class",
                             "let",         "yield",    "await",          "undefined",
                             "NaN",         "eval",     "arguments",      "null"};
    for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
        expect_refused(EXEC_JAVASCRIPT, refused[i], "would hide");
    expect_refused(EXEC_JAVASCRIPT, "__proto__", "two underscores");
    expect_refused(EXEC_JAVASCRIPT, "__dirname", "two underscores");
    expect_refused(EXEC_JAVASCRIPT, "1abc", "identifier");
    expect_refused(EXEC_JAVASCRIPT, "a.b", "identifier");
}

/* A comment line of the data files never matches a name. */
static void test_comments_are_not_names(void **state)
{
    (void)state;
    assert_non_null(strstr(variables_python_names, "\n# "));
    expect_refused(EXEC_PYTHON, "print", "builtin");
    expect_allowed(EXEC_PYTHON, "Generated");
    expect_allowed(EXEC_PYTHON, "per");
}

static void test_encode(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    char *json = NULL;
    size_t len = 0;
    json_object *v = json_tokener_parse("{\"rows\": [1, 2.5, \"x/y\", null, true], \"o\": {}}");
    assert_int_equal(variables_encode(v, EXEC_PYTHON, 1000, &json, &len, &err), 0);
    assert_string_equal(json, "{\"rows\":[1,2.5,\"x/y\",null,true],\"o\":{}}");
    assert_int_equal(len, strlen(json));
    free(json);
    /* The cap is on the compact text, inclusive. */
    assert_int_equal(variables_encode(v, EXEC_PYTHON, (long long)len, &json, &len, &err), 0);
    free(json);
    assert_int_equal(variables_encode(v, EXEC_PYTHON, (long long)len - 1, &json, &len, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    assert_null(json);
    assert_non_null(strstr(err_msg(&err), "the limit is"));
    err_clear(&err);
    json_object_put(v);

    v = json_tokener_parse("{\"ok\": 1, \"os\": 2}");
    assert_int_equal(variables_encode(v, EXEC_PYTHON, 1000, &json, &len, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    assert_string_equal(err_msg(&err), "variable 'os' would hide a Python keyword, builtin or "
                                       "loaded module");
    err_clear(&err);
    assert_int_equal(variables_encode(v, EXEC_JAVASCRIPT, 1000, &json, &len, &err), 0);
    free(json);
    json_object_put(v);

    v = json_tokener_parse("[1]");
    assert_int_equal(variables_encode(v, EXEC_PYTHON, 1000, &json, &len, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    err_clear(&err);
    json_object_put(v);
}

/* A refused name is quoted whole characters only, whatever its bytes. */
static void test_message_is_utf8(void **state)
{
    (void)state;
    char args[512] = "{\"a";
    for (int i = 0; i < 100; i++)
        strcat(args, "\xc3\xa9");
    strcat(args, "\": 1}");
    json_object *v = json_tokener_parse(args);
    assert_non_null(v);
    struct err err = ERR_INIT;
    char *json = NULL;
    size_t len = 0;
    assert_int_equal(variables_encode(v, EXEC_PYTHON, 1000, &json, &len, &err), -1);
    assert_non_null(strstr(err_msg(&err), "longer than 128 bytes"));
    assert_true(util_utf8_valid(err_msg(&err), strlen(err_msg(&err))));
    err_clear(&err);
    json_object_put(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python_names),           cmocka_unit_test(test_javascript_names),
        cmocka_unit_test(test_comments_are_not_names), cmocka_unit_test(test_encode),
        cmocka_unit_test(test_message_is_utf8),
    };
    return cmocka_run_group_tests_name("variables", tests, NULL, NULL);
}
