/* The call's egress argument (tools/egress_arg.c) at admission: a run of
 * a language with an egress list gets a copy of it, narrowed by the call;
 * a widening, malformed or out-of-place pattern is refused with words for
 * the caller; in a code session the session's language decides. And the
 * lists as clients see them: the tools' schemas, their descriptions and
 * annotations, list_languages and the environment resource. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "tools/egress_arg.h"
#include "tools/environment.h"
#include "tools/schema.h"
#include "tools/tools.h"
#include "unit/json_get.h"
#include "unit/options.h"
#include "unit/server_rig.h"

#define PY_EGRESS "python=pypi.org, *.pythonhosted.org:443, 198.51.100.7:8443"

static struct config cfg;
static struct langtable *langs;
static struct tools_env ENV;
static const struct tools_features MODERN = {.annotations = true, .structured = true};

static int setup(void **state)
{
    (void)state;
    config_init(&cfg);
    set_list(&cfg.egress, (const char *const[]){PY_EGRESS}, 1);
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

/* tool's call with args (JSON text) admitted; *a released by the caller. */
static int admit(const char *tool, const char *json, struct tools_run_args *a, struct err *err)
{
    json_object *args = json_tokener_parse(json);
    assert_non_null(args);
    int rc = tools_parse_args(&ENV, tools_find(tool), args, NULL, a, err);
    json_object_put(args);
    return rc;
}

/* The run's list as text, "(none)" without one. */
static void admitted(const char *tool, const char *json, const char *want)
{
    struct tools_run_args a;
    struct err err = ERR_INIT;
    if (admit(tool, json, &a, &err) < 0)
        fail_msg("%s %s refused: %s", tool, json, err_msg(&err));
    if (!a.run.egress) {
        assert_string_equal("(none)", want);
    } else {
        assert_true(a.run.egress->n > 0);
        assert_ptr_not_equal(a.run.egress, a.run.language->egress);
        char *text = egress_patterns_format(a.run.egress);
        assert_string_equal(text, want);
        free(text);
    }
    tools_run_args_release(&a);
}

static void refused(const char *tool, const char *json, const char *needle)
{
    struct tools_run_args a;
    struct err err = ERR_INIT;
    assert_int_equal(admit(tool, json, &a, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    if (!strstr(err_msg(&err), needle))
        fail_msg("'%s' does not mention '%s'", err_msg(&err), needle);
    assert_null(a.run.egress);
    err_clear(&err);
    tools_run_args_release(&a);
}

static void test_narrowing(void **state)
{
    (void)state;
    const char *all = "pypi.org,*.pythonhosted.org:443,198.51.100.7:8443";
    admitted("run_python_code", "{\"code\":\"x\"}", all);
    admitted("run_python_code", "{\"code\":\"x\",\"egress\":null}", all);
    admitted("execute_code", "{\"language\":\"py\",\"code\":\"x\"}", all);
    admitted("run_python_code", "{\"code\":\"x\",\"egress\":[\"files.pythonhosted.org:443\"]}",
             "files.pythonhosted.org:443");
    admitted("execute_code",
             "{\"language\":\"python3\",\"code\":\"x\",\"egress\":[\"PyPI.org:80\","
             "\"*.a.pythonhosted.org:443\",\"198.51.100.7:8443\"]}",
             "pypi.org:80,*.a.pythonhosted.org:443,198.51.100.7:8443");
    /* Asking for no host is asking for no egress. */
    admitted("run_python_code", "{\"code\":\"x\",\"egress\":[]}", "(none)");
}

static void test_refusals(void **state)
{
    (void)state;
    const char *widen = "a call may only narrow its language's egress list, never widen it";
    refused("run_python_code", "{\"code\":\"x\",\"egress\":[\"example.com\"]}", widen);
    refused("run_python_code", "{\"code\":\"x\",\"egress\":[\"pypi.org:8080\"]}",
            "argument 'egress': egress pattern 'pypi.org:8080' is not allowed");
    /* No port is 443 and 80: more than the list's :443. */
    refused("run_python_code", "{\"code\":\"x\",\"egress\":[\"*.pythonhosted.org\"]}", widen);
    refused("run_python_code", "{\"code\":\"x\",\"egress\":[\"pythonhosted.org:443\"]}", widen);
    refused("run_python_code", "{\"code\":\"x\",\"egress\":[\"*.org\"]}", widen);
    refused("execute_code",
            "{\"language\":\"python\",\"code\":\"x\",\"egress\":[\"pypi.org\",\"a..b\"]}",
            "argument 'egress[1]': egress pattern 'a..b'");
    refused("run_python_code", "{\"code\":\"x\",\"egress\":[\"pypi.org,x.org\"]}",
            "argument 'egress[0]'");
    refused("run_python_code", "{\"code\":\"x\",\"egress\":[\"\"]}", "cannot be empty");
    /* The schema's: the shape of the argument. */
    refused("run_python_code", "{\"code\":\"x\",\"egress\":\"pypi.org\"}", "egress");
    refused("run_python_code", "{\"code\":\"x\",\"egress\":[443]}", "egress[0]");
    char many[2048] = "{\"code\":\"x\",\"egress\":[";
    for (int i = 0; i <= EGRESS_PATTERNS_MAX; i++)
        strcat(many, i ? ",\"pypi.org\"" : "\"pypi.org\"");
    strcat(many, "]}");
    refused("run_python_code", many, "egress");
}

/* A language without a list: no egress, and patterns for it are refused;
 * validate_code runs nothing and takes no egress argument at all. */
static void test_language_without_a_list(void **state)
{
    (void)state;
    admitted("run_js_code", "{\"code\":\"x\"}", "(none)");
    admitted("run_js_code", "{\"code\":\"x\",\"egress\":[]}", "(none)");
    refused("run_js_code", "{\"code\":\"x\",\"egress\":[\"registry.npmjs.org\"]}",
            "javascript has no egress allow-list here; the operator sets one with --egress");
    refused("execute_code", "{\"language\":\"ruby\",\"code\":\"x\",\"egress\":[\"a.org\"]}",
            "ruby has no egress allow-list here");
    admitted("validate_code", "{\"language\":\"python\",\"code\":\"x\"}", "(none)");
    refused("validate_code", "{\"language\":\"python\",\"code\":\"x\",\"egress\":[]}",
            "unknown argument 'egress'");
    refused("create_session", "{\"language\":\"python\",\"egress\":[]}",
            "unknown argument 'egress'");
}

/* The definitions hold the list's caps (they are data, the caps C). */
static void test_schemas(void **state)
{
    (void)state;
    const char *with[] = {"run_python_code", "run_js_code", "execute_code"};
    for (size_t i = 0; i < ARRAY_SIZE(with); i++) {
        struct err err = ERR_INIT;
        json_object *def = registry_definition(tools_find(with[i]), langs, &err);
        assert_non_null(def);
        json_object *e = json_get(json_get(json_get(def, "inputSchema"), "properties"), "egress");
        assert_string_equal(json_object_get_string(json_get(e, "type")), "array");
        assert_int_equal(json_object_get_int(json_get(e, "maxItems")), EGRESS_PATTERNS_MAX);
        assert_int_equal(json_object_get_int(json_get(json_get(e, "items"), "maxLength")),
                         EGRESS_PATTERN_TEXT_MAX);
        assert_non_null(strstr(json_object_get_string(json_get(e, "description")), "never widen"));
        json_object_put(def);
    }
}

/* list_languages and the environment resource show each language's list
 * (as the patterns read back), [] without one; the run tools say so. */
static void test_shown(void **state)
{
    (void)state;
    json_object *r = tools_call(&ENV, tools_find("list_languages"), NULL, NULL, &MODERN);
    json_object *sc = json_get(r, "structuredContent");
    struct err err = ERR_INIT;
    struct tools_env *e = &ENV;
    json_object *def = registry_definition(tools_find("list_languages"), e->langs, &err);
    if (schema_validate(json_get(def, "outputSchema"), sc, 0, &err) < 0)
        fail_msg("structuredContent: %s", err_msg(&err));
    json_object_put(def);
    json_object *py = json_object_array_get_idx(json_get(sc, "languages"), 0);
    json_object *js = json_object_array_get_idx(json_get(sc, "languages"), 1);
    assert_string_equal(json_object_to_json_string_ext(json_get(py, "egress"), 0),
                        "[\"pypi.org\",\"*.pythonhosted.org:443\",\"198.51.100.7:8443\"]");
    assert_string_equal(json_object_to_json_string_ext(json_get(js, "egress"), 0), "[]");
    assert_string_equal(json_object_get_string(json_get(py, "network")), "none");
    json_object *lim = json_get(sc, "limits");
    assert_int_equal(json_object_get_int64(json_get(lim, "egress_max_connections")), 16);
    assert_int_equal(json_object_get_int64(json_get(lim, "egress_connection_timeout_ms")), 600000);
    json_object_put(r);

    json_object *env = tools_environment_json(&ENV, NULL);
    json_object *eg = json_get(env, "egress");
    assert_int_equal(json_object_object_length(eg), 8);
    assert_int_equal(json_object_array_length(json_get(eg, "python")), 3);
    assert_int_equal(json_object_array_length(json_get(eg, "ruby")), 0);
    json_object_put(env);

    size_t len = 0;
    json_object *list = json_tokener_parse(tools_list_json(&ENV, &MODERN, &len));
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *t = json_object_array_get_idx(list, i);
        const char *name = json_object_get_string(json_get(t, "name"));
        bool runs = strcmp(name, "run_python_code") == 0 || strcmp(name, "execute_code") == 0 ||
                    strcmp(name, "run_js_code") == 0;
        /* install_packages reaches the package indexes. */
        assert_int_equal(
            json_object_get_boolean(json_get(json_get(t, "annotations"), "openWorldHint")),
            runs || strcmp(name, "install_packages") == 0);
        if (runs)
            assert_non_null(strstr(json_object_get_string(json_get(t, "description")),
                                   "No network access but through the daemon's HTTP proxy, to "
                                   "the hosts of the egress allow-list list_languages shows for "
                                   "python; a call can narrow that list (egress), never widen it"));
    }
    json_object_put(list);
}

/* In a code session the session's language is the one whose list the
 * call narrows. */
static void test_in_a_session(void **state)
{
    (void)state;
    struct rig g;
    rig_init(&g, RIG_UP);
    set_list(&g.cfg.egress, (const char *const[]){PY_EGRESS}, 1);
    rig_start(&g);
    struct tools_env env;
    struct err err = ERR_INIT;
    if (tools_env_init(&env, &g.cfg, g.langs, g.exec, &err) < 0)
        fail_msg("tools_env_init: %s", err_msg(&err));
    struct fake_program p = {.session = true};
    fake_backend_set_program(g.fake, &p);
    json_object *args = json_tokener_parse("{\"language\":\"python\"}");
    json_object *r = tools_call(&env, tools_find("create_session"), args, NULL, &MODERN);
    json_object_put(args);
    if (json_object_get_boolean(json_get(r, "isError")))
        fail_msg("create_session: %s", json_object_to_json_string(r));
    char *id =
        xstrdup(json_object_get_string(json_get(json_get(r, "structuredContent"), "session_id")));
    json_object_put(r);

    char *json =
        xasprintf("{\"code\":\"x\",\"session_id\":\"%s\",\"egress\":[\"pypi.org:443\"]}", id);
    args = json_tokener_parse(json);
    struct tools_run_args a;
    assert_int_equal(tools_parse_args(&env, tools_find("execute_code"), args, NULL, &a, &err), 0);
    assert_non_null(a.run.egress);
    assert_int_equal(a.run.egress->n, 1);
    tools_run_args_release(&a);
    json_object_put(args);
    free(json);

    json = xasprintf("{\"code\":\"x\",\"session_id\":\"%s\",\"egress\":[\"example.com\"]}", id);
    args = json_tokener_parse(json);
    assert_int_equal(tools_parse_args(&env, tools_find("run_python_code"), args, NULL, &a, &err),
                     -1);
    assert_non_null(strstr(err_msg(&err), "never widen it"));
    err_clear(&err);
    tools_run_args_release(&a);
    json_object_put(args);
    free(json);

    json = xasprintf("{\"session_id\":\"%s\"}", id);
    args = json_tokener_parse(json);
    json_object_put(tools_call(&env, tools_find("close_session"), args, NULL, &MODERN));
    json_object_put(args);
    free(json);
    free(id);
    tools_env_cleanup(&env);
    rig_fini(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_narrowing),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_language_without_a_list),
        cmocka_unit_test(test_schemas),
        cmocka_unit_test(test_shown),
        cmocka_unit_test(test_in_a_session),
    };
    return cmocka_run_group_tests_name("egress_arg", tests, setup, teardown);
}
