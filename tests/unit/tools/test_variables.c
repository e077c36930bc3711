#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "tools/variables.h"
#include "unit/langs.h"

/* The built-in table's languages (group setup). */
static struct config cfg;
static struct langtable *langs;
static const struct langtable_lang *PY, *JS, *BASH, *C, *TS;

static int group_setup(void **state)
{
    (void)state;
    config_init(&cfg);
    langs = test_langs(&cfg);
    PY = test_lang(langs, "python");
    JS = test_lang(langs, "javascript");
    BASH = test_lang(langs, "bash");
    C = test_lang(langs, "c");
    TS = test_lang(langs, "typescript");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    langtable_free(langs);
    config_free(&cfg);
    return 0;
}

static void expect_refused(const struct langtable_lang *lang, const char *name,
                           const char *why_part)
{
    const char *why = NULL;
    if (variables_name_ok(lang, name, &why))
        fail_msg("'%s' was allowed for %s", name, lang->name);
    if (!strstr(why, why_part))
        fail_msg("'%s': '%s' does not mention '%s'", name, why, why_part);
}

static void expect_allowed(const struct langtable_lang *lang, const char *name)
{
    const char *why = NULL;
    if (!variables_name_ok(lang, name, &why))
        fail_msg("'%s' was refused for %s: %s", name, lang->name, why);
}

/* A name of letter c one byte over VARIABLES_MAX_NAME is refused; one
 * of exactly VARIABLES_MAX_NAME is allowed. */
static void expect_length_cap(const struct langtable_lang *lang, char c)
{
    char name[VARIABLES_MAX_NAME + 2];
    memset(name, c, sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    expect_refused(lang, name, "longer than 128 bytes");
    name[VARIABLES_MAX_NAME] = '\0';
    expect_allowed(lang, name);
}

struct refusal {
    const char *name, *why_part;
};

static void expect_refusals(const struct langtable_lang *lang, const struct refusal *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        expect_refused(lang, r[i].name, r[i].why_part);
}

static void test_python_names(void **state)
{
    (void)state;
    const char *ok[] = {"rows", "name", "_x",      "x1",    "df",   "match",
                        "case", "_",    "numbers", "email", "data", "constructor"};
    for (size_t i = 0; i < ARRAY_SIZE(ok); i++)
        expect_allowed(PY, ok[i]);
    static const struct refusal refused[] = {
        {"$", "identifier"},
        {"__import__", "two underscores"},
        {"__builtins__", "two underscores"},
        {"os", "loaded module"},
        {"sys", "loaded module"},
        {"print", "builtin"},
        {"len", "builtin"},
        {"type", "builtin"},
        {"class", "keyword"},
        {"None", "keyword"},
        {"1abc", "identifier"},
        {"a-b", "identifier"},
        {"a b", "identifier"},
        {"", "identifier"},
        {"\xc3\xa9t\xc3\xa9", "ASCII"},
    };
    expect_refusals(PY, refused, ARRAY_SIZE(refused));
    expect_length_cap(PY, 'x');
}

static void test_javascript_names(void **state)
{
    (void)state;
    const char *ok[] = {"rows", "name", "_x", "$", "$el", "os", "fs", "data", "email", "numbers"};
    for (size_t i = 0; i < ARRAY_SIZE(ok); i++)
        expect_allowed(JS, ok[i]);
    const char *refused[] = {"constructor", "toString", "hasOwnProperty", "require",
                             "module",      "exports",  "process",        "console",
                             "setTimeout",  "Object",   "globalThis",     "class",
                             "let",         "yield",    "await",          "undefined",
                             "NaN",         "eval",     "arguments",      "null"};
    for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
        expect_refused(JS, refused[i], "would hide");
    expect_refused(JS, "__proto__", "two underscores");
    expect_refused(JS, "__dirname", "two underscores");
    expect_refused(JS, "1abc", "identifier");
    expect_refused(JS, "a.b", "identifier");
}

/* A language of the generic runner gets scalar variables as environment
 * variables: environment variable names, minus those the sandbox, the
 * loader, the shell and the toolchains read. */
static void test_environment_names(void **state)
{
    (void)state;
    const struct langtable_lang *generic[] = {BASH, C, TS, test_lang(langs, "ruby")};
    for (size_t k = 0; k < ARRAY_SIZE(generic); k++) {
        const struct langtable_lang *l = generic[k];
        const char *ok[] = {"MY_VAR", "rows", "x", "_x", "x1", "Name", "path", "home",
                            /* names other languages keep to themselves */
                            "os", "print", "constructor", "require", "class", "LD", "LDX", "BASH",
                            "MCPSBX"};
        for (size_t i = 0; i < ARRAY_SIZE(ok); i++)
            expect_allowed(l, ok[i]);
        /* By list (environment.names). */
        const char *listed[] = {"PATH",
                                "HOME",
                                "IFS",
                                "ENV",
                                "SHELLOPTS",
                                "BASHOPTS",
                                "CDPATH",
                                "PYTHONPATH",
                                "NODE_OPTIONS",
                                "RUBYOPT",
                                "PERL5OPT",
                                "TMPDIR",
                                "GCONV_PATH",
                                "MALLOC_CHECK_",
                                "C_INCLUDE_PATH",
                                "CPLUS_INCLUDE_PATH",
                                "TZ",
                                "LC_ALL"};
        for (size_t i = 0; i < ARRAY_SIZE(listed); i++)
            expect_refused(l, listed[i], "environment variable the sandbox");
        /* By rule: LD_*, MCPSBX_*, BASH_*. */
        const char *ruled[] = {"LD_PRELOAD",       "LD_LIBRARY_PATH", "LD_",         "MCPSBX_X",
                               "MCPSBX_VARIABLES", "BASH_ENV",        "BASH_FUNC_x", "BASH_"};
        for (size_t i = 0; i < ARRAY_SIZE(ruled); i++)
            expect_refused(l, ruled[i], "environment variable the sandbox");
        static const struct refusal malformed[] = {
            {"a-b", "not an environment variable name"},
            {"1abc", "not an environment variable name"},
            {"$x", "not an environment variable name"},
            {"a=b", "not an environment variable name"},
            {"", "not an environment variable name"},
            {"__x", "two underscores"},
        };
        expect_refusals(l, malformed, ARRAY_SIZE(malformed));
        expect_length_cap(l, 'X');
    }
    /* The rules are the environment's, not Python's or JavaScript's. */
    expect_allowed(PY, "PATH");
    expect_allowed(JS, "LD_PRELOAD");
    expect_allowed(PY, "MCPSBX_X");
}

/* Every name of the data file is refused (comments are not names). */
static void test_environment_list_whole(void **state)
{
    (void)state;
    const char *p = variables_environment_names;
    size_t names = 0;
    while (*p) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len && *p != '#') {
            char *name = xstrndup(p, len);
            expect_refused(BASH, name, "environment variable");
            free(name);
            names++;
        }
        p += len + (end ? 1 : 0);
    }
    assert_true(names >= 40);
    expect_allowed(BASH, "Names");
    expect_allowed(BASH, "rule");
}

/* A comment line of the data files never matches a name. */
static void test_comments_are_not_names(void **state)
{
    (void)state;
    assert_non_null(strstr(variables_python_names, "\n# "));
    expect_refused(PY, "print", "builtin");
    expect_allowed(PY, "Generated");
    expect_allowed(PY, "per");
}

static void test_encode(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    char *json = NULL;
    size_t len = 0;
    json_object *v = json_tokener_parse("{\"rows\": [1, 2.5, \"x/y\", null, true], \"o\": {}}");
    assert_int_equal(variables_encode(v, PY, 1000, &json, &len, &err), 0);
    assert_string_equal(json, "{\"rows\":[1,2.5,\"x/y\",null,true],\"o\":{}}");
    assert_int_equal(len, strlen(json));
    free(json);
    /* The cap is on the compact text, inclusive. */
    assert_int_equal(variables_encode(v, PY, (long long)len, &json, &len, &err), 0);
    free(json);
    assert_int_equal(variables_encode(v, PY, (long long)len - 1, &json, &len, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    assert_null(json);
    assert_non_null(strstr(err_msg(&err), "the limit is"));
    err_clear(&err);
    json_object_put(v);

    v = json_tokener_parse("{\"ok\": 1, \"os\": 2}");
    assert_int_equal(variables_encode(v, PY, 1000, &json, &len, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    assert_string_equal(err_msg(&err), "variable 'os' would hide a Python keyword, builtin or "
                                       "loaded module");
    err_clear(&err);
    assert_int_equal(variables_encode(v, JS, 1000, &json, &len, &err), 0);
    free(json);
    json_object_put(v);

    /* A generic language: environment names. */
    v = json_tokener_parse("{\"MY_VAR\": \"x\", \"n\": 2, \"list\": [1]}");
    assert_int_equal(variables_encode(v, BASH, 1000, &json, &len, &err), 0);
    assert_string_equal(json, "{\"MY_VAR\":\"x\",\"n\":2,\"list\":[1]}");
    free(json);
    json_object_put(v);
    v = json_tokener_parse("{\"ok\": 1, \"LD_PRELOAD\": \"/tmp/x.so\"}");
    assert_int_equal(variables_encode(v, C, 1000, &json, &len, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    assert_non_null(strstr(err_msg(&err), "variable 'LD_PRELOAD' is an environment variable"));
    assert_null(json);
    err_clear(&err);
    assert_int_equal(variables_encode(v, PY, 1000, &json, &len, &err), 0);
    free(json);
    json_object_put(v);

    v = json_tokener_parse("[1]");
    assert_int_equal(variables_encode(v, PY, 1000, &json, &len, &err), -1);
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
    assert_int_equal(variables_encode(v, PY, 1000, &json, &len, &err), -1);
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
        cmocka_unit_test(test_message_is_utf8),        cmocka_unit_test(test_environment_names),
        cmocka_unit_test(test_environment_list_whole),
    };
    return cmocka_run_group_tests_name("variables", tests, group_setup, group_teardown);
}
