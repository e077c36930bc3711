/* A run's packages in its result (tools/packages_result.c): the
 * structured "packages" array (each item with the report's source and
 * milliseconds, a missing version null) and the text's line, cached or
 * installed, valid against the served outputSchema; and install_packages'
 * result (tools/session_tools.c): the set on success, the installer's
 * words on failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "tools/packages_result.h"
#include "tools/schema.h"
#include "tools/session_tools.h"
#include "tools/tools.h"
#include "unit/json_get.h"
#include "unit/langs.h"

static struct config cfg;
static struct langtable *langs;
static struct tools_env ENV;
static const struct tools_features MODERN = {.annotations = true, .structured = true};

static int setup(void **state)
{
    (void)state;
    config_init(&cfg);
    langs = test_langs(&cfg);
    struct err err = ERR_INIT;
    return tools_env_init(&ENV, &cfg, langs, NULL, &err);
}

static int teardown(void **state)
{
    (void)state;
    tools_env_cleanup(&ENV);
    langtable_free(langs);
    config_free(&cfg);
    return 0;
}

/* A report of n items named and versioned by pairs (a NULL version:
 * none), for res (exec_result_free frees it). */
static struct packages_report *report(const char *const *pairs, size_t n, bool cached, double ms)
{
    struct packages_report *r = xcalloc(1, sizeof(*r));
    r->items = xcalloc(n ? n : 1, sizeof(*r->items));
    for (size_t i = 0; i < n; i++) {
        r->items[i].name = xstrdup(pairs[2 * i]);
        r->items[i].version = pairs[2 * i + 1] ? xstrdup(pairs[2 * i + 1]) : NULL;
    }
    r->n = n;
    r->cached = cached;
    r->ms = ms;
    return r;
}

static const char *text_of(json_object *r)
{
    return json_object_get_string(
        json_get(json_object_array_get_idx(json_get(r, "content"), 0), "text"));
}

/* The outputSchema tools/list serves for tool. */
static json_object *served_schema(const char *tool)
{
    size_t len = 0;
    json_object *l = json_tokener_parse(tools_list_json(&ENV, &MODERN, &len));
    json_object *schema = NULL;
    for (size_t i = 0; i < json_object_array_length(l); i++) {
        json_object *t = json_object_array_get_idx(l, i);
        if (strcmp(json_object_get_string(json_get(t, "name")), tool) == 0)
            schema = json_object_get(json_get(t, "outputSchema"));
    }
    json_object_put(l);
    assert_non_null(schema);
    return schema;
}

static void valid(json_object *schema, json_object *r)
{
    struct err err = ERR_INIT;
    if (schema_validate(schema, json_get(r, "structuredContent"), 0, &err) < 0)
        fail_msg("structuredContent: %s", err_msg(&err));
}

static void test_installed(void **state)
{
    (void)state;
    json_object *schema = served_schema("run_python_code");
    struct exec_result res;
    exec_result_init(&res);
    res.status = EXEC_OK;
    res.has_exit_code = true;
    buf_init(&res.out, 64);
    assert_int_equal(buf_add(&res.out, "ok", 2), 0);
    res.packages =
        report((const char *const[]){"tqdm", "4.66.1", "httpx", "0.27.0"}, 2, false, 5321.04);
    json_object *r = tools_result(&res, test_lang(langs, "python"), &MODERN, NULL);
    valid(schema, r);
    assert_false(json_object_get_boolean(json_get(r, "isError")));
    json_object *p = json_get(json_get(r, "structuredContent"), "packages");
    assert_int_equal(json_object_array_length(p), 2);
    json_object *first = json_object_array_get_idx(p, 0);
    assert_string_equal(json_object_get_string(json_get(first, "name")), "tqdm");
    assert_string_equal(json_object_get_string(json_get(first, "version")), "4.66.1");
    assert_string_equal(json_object_get_string(json_get(first, "source")), "installed");
    assert_string_equal(json_object_to_json_string(json_get(first, "ms")), "5321.0");
    assert_string_equal(json_object_get_string(json_get(json_object_array_get_idx(p, 1), "source")),
                        "installed");
    assert_string_equal(text_of(r),
                        "ok\n--- packages: tqdm 4.66.1, httpx 0.27.0 (installed in 5321 ms) ---");
    json_object_put(r);
    exec_result_free(&res);
    json_object_put(schema);
}

static void test_cached_and_unknown_version(void **state)
{
    (void)state;
    json_object *schema = served_schema("execute_code");
    struct exec_result res;
    exec_result_init(&res);
    res.status = EXEC_OK;
    res.has_exit_code = true;
    /* A version the set does not say; and one an installer wrote badly
     * (not UTF-8): made valid. */
    res.packages = report((const char *const[]){"lodash", NULL, "zod", "3.\xff"}, 2, true, 3.04);
    json_object *r = tools_result(&res, test_lang(langs, "javascript"), &MODERN, NULL);
    valid(schema, r);
    json_object *p = json_get(json_get(r, "structuredContent"), "packages");
    json_object *first = json_object_array_get_idx(p, 0);
    assert_true(json_object_is_type(json_get(first, "version"), json_type_null));
    assert_string_equal(json_object_get_string(json_get(first, "source")), "cached");
    assert_string_equal(json_object_to_json_string(json_get(first, "ms")), "3.0");
    assert_string_equal(
        json_object_get_string(json_get(json_object_array_get_idx(p, 1), "version")),
        "3.\xef\xbf\xbd");
    /* No output: the line alone. */
    assert_string_equal(text_of(r), "--- packages: lodash, zod 3.\xef\xbf\xbd (cached, 3 ms) ---");
    json_object_put(r);

    /* With a failed run, the line comes before the status. */
    res.status = EXEC_ERROR;
    res.has_exit_code = true;
    res.exit_code = 1;
    r = tools_result(&res, test_lang(langs, "javascript"), &MODERN, NULL);
    valid(schema, r);
    assert_non_null(strstr(text_of(r), "(cached, 3 ms) ---\n--- status: error, exit code 1"));
    json_object_put(r);
    exec_result_free(&res);

    /* A run that asked for none: no member, no line. */
    exec_result_init(&res);
    res.status = EXEC_OK;
    res.has_exit_code = true;
    r = tools_result(&res, test_lang(langs, "javascript"), &MODERN, NULL);
    assert_false(json_object_object_get_ex(json_get(r, "structuredContent"), "packages", NULL));
    assert_null(strstr(text_of(r), "packages"));
    json_object_put(r);
    exec_result_free(&res);
    json_object_put(schema);
}

/* The module alone: [] for no report, no line for no item, the text's
 * cap holds the most it writes. */
static void test_module(void **state)
{
    (void)state;
    json_object *a = packages_result_json(NULL);
    assert_int_equal(json_object_array_length(a), 0);
    json_object_put(a);
    struct buf text;
    buf_init(&text, PACKAGES_RESULT_TEXT_MAX);
    assert_int_equal(packages_result_text(NULL, &text), 0);
    assert_int_equal(text.len, 0);
    /* Every item at its longest, and more than the text names. */
    size_t n = PACKAGES_RESULT_TEXT_ITEMS + 2;
    struct packages_report *r = report(NULL, 0, false, 1e15);
    free(r->items);
    r->items = xcalloc(n, sizeof(*r->items));
    r->n = n;
    for (size_t i = 0; i < n; i++) {
        r->items[i].name = xmalloc(REQS_NAME_MAX + 8);
        memset(r->items[i].name, 'n', REQS_NAME_MAX + 7);
        r->items[i].name[REQS_NAME_MAX + 7] = '\0';
        r->items[i].version = xmalloc(PACKAGES_VERSION_MAX + 8);
        memset(r->items[i].version, '9', PACKAGES_VERSION_MAX + 7);
        r->items[i].version[PACKAGES_VERSION_MAX + 7] = '\0';
    }
    assert_int_equal(packages_result_text(r, &text), 0);
    assert_non_null(strstr(buf_cstr(&text), ", 2 more (installed in 1000000000000 ms) ---"));
    a = packages_result_json(r);
    assert_int_equal(json_object_array_length(a), n);
    json_object *x = json_object_array_get_idx(a, 0);
    assert_int_equal(json_object_get_string_len(json_get(x, "name")), REQS_NAME_MAX);
    assert_int_equal(json_object_get_string_len(json_get(x, "version")), PACKAGES_VERSION_MAX);
    json_object_put(a);
    packages_report_free(r);
    buf_free(&text);
}

/* install_packages' result: the set, or why not. */
static void test_install_result(void **state)
{
    (void)state;
    json_object *schema = served_schema("install_packages");
    const char *id = "0123456789abcdef0123456789abcdef";
    struct exec_result res;
    exec_result_init(&res);
    res.status = EXEC_OK;
    res.has_exit_code = true;
    res.packages = report((const char *const[]){"tqdm", "4.66.1"}, 1, false, 812.0);
    json_object *r = sessions_install_result(&res, id, &MODERN);
    valid(schema, r);
    assert_false(json_object_get_boolean(json_get(r, "isError")));
    json_object *sc = json_get(r, "structuredContent");
    assert_string_equal(json_object_get_string(json_get(sc, "session_id")), id);
    assert_int_equal(json_object_array_length(json_get(sc, "packages")), 1);
    assert_false(json_object_object_get_ex(sc, "message", NULL));
    assert_string_equal(text_of(r), "--- packages: tqdm 4.66.1 (installed in 812 ms) ---");
    json_object_put(r);
    exec_result_free(&res);

    /* A failed install: the message names the package and quotes the
     * installer; still the tool's own shape. */
    exec_result_init(&res);
    res.status = EXEC_ERROR;
    res.message = xstrdup("installing nosuchpkg failed: ERROR: No matching distribution found "
                          "for nosuchpkg");
    r = sessions_install_result(&res, id, &MODERN);
    valid(schema, r);
    assert_true(json_object_get_boolean(json_get(r, "isError")));
    assert_string_equal(text_of(r), "could not install the packages: installing nosuchpkg "
                                    "failed: ERROR: No matching distribution found for nosuchpkg");
    sc = json_get(r, "structuredContent");
    assert_non_null(strstr(json_object_get_string(json_get(sc, "message")), "nosuchpkg"));
    assert_int_equal(json_object_array_length(json_get(sc, "packages")), 0);
    assert_false(json_object_object_get_ex(sc, "session_lost", NULL));
    json_object_put(r);

    /* The session lost on the way. */
    res.session_lost = true;
    res.lost_reason = xstrdup("the sandbox exited");
    r = sessions_install_result(&res, id, &MODERN);
    valid(schema, r);
    assert_true(
        json_object_get_boolean(json_get(json_get(r, "structuredContent"), "session_lost")));
    assert_non_null(strstr(text_of(r), "; the session was lost: the sandbox exited"));
    json_object_put(r);
    exec_result_free(&res);

    /* Busy: its words only, as create_session's. */
    struct tools_run_args a = {.kind = TOOL_INSTALL_PACKAGES,
                               .run = {.language = test_lang(langs, "python")}};
    r = tools_busy_result(&a, &MODERN, "every run slot is taken", 12.5);
    assert_true(json_object_get_boolean(json_get(r, "isError")));
    assert_false(json_object_object_get_ex(r, "structuredContent", NULL));
    assert_string_equal(text_of(r), "every run slot is taken");
    json_object_put(r);
    json_object_put(schema);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_installed),
        cmocka_unit_test(test_cached_and_unknown_version),
        cmocka_unit_test(test_module),
        cmocka_unit_test(test_install_result),
    };
    return cmocka_run_group_tests_name("packages_result", tests, setup, teardown);
}
