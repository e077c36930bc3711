/* The call's packages argument (tools/packages_arg.c) at admission: the
 * run tools' requirements parsed and normalized into run->packages with
 * their language's installer and rules, refused with words for the caller
 * (a language without an installer, a malformed or denied requirement, too
 * many); the definitions that carry it and those that must not; and
 * install_packages' arguments: the session's language, no code, the set
 * kept for the session. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "tools/packages_arg.h"
#include "tools/schema.h"
#include "tools/session_tools.h"
#include "tools/tooldef.h"
#include "tools/tools.h"
#include "unit/json_get.h"
#include "unit/options.h"
#include "unit/server_rig.h"

/* The built-in table with python's rules: a deny list and no allow list. */
static const char PY_RULES[] = "{\"languages\": [{\"name\": \"python\", \"packages\": "
                               "{\"deny\": [\"evil*\", \"Bad_Pkg\"]}}]}";

static struct config cfg;
static struct langtable *langs;
static struct tools_env ENV;
static const struct tools_features MODERN = {.annotations = true, .structured = true};

static int setup(void **state)
{
    (void)state;
    config_init(&cfg);
    langs = test_langs_text(&cfg, PY_RULES);
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

static int admit_in(const struct tools_env *env, const char *tool, const char *json,
                    struct tools_run_args *a, struct err *err)
{
    json_object *args = json_tokener_parse(json);
    assert_non_null(args);
    int rc = tools_parse_args(env, tools_find(tool), args, NULL, a, err);
    json_object_put(args);
    return rc;
}

/* The run's requirements as reqs_canonical writes them, "(none)" without
 * any; its installer when there are some. */
static void admitted(const char *tool, const char *json, const char *want,
                     enum reqs_installer installer)
{
    struct tools_run_args a;
    struct err err = ERR_INIT;
    if (admit_in(&ENV, tool, json, &a, &err) < 0)
        fail_msg("%s %s refused: %s", tool, json, err_msg(&err));
    assert_false(a.run.packages_stay);
    if (!a.run.packages) {
        assert_string_equal("(none)", want);
    } else {
        assert_true(a.run.packages->n > 0);
        assert_int_equal(a.run.packages->installer, installer);
        char *text = reqs_canonical(a.run.packages);
        assert_string_equal(text, want);
        free(text);
    }
    tools_run_args_release(&a);
}

static void refused_in(const struct tools_env *env, const char *tool, const char *json,
                       const char *needle)
{
    struct tools_run_args a;
    struct err err = ERR_INIT;
    assert_int_equal(admit_in(env, tool, json, &a, &err), -1);
    assert_true(err.code == ERR_INVALID || err.code == ERR_TOO_BIG);
    if (!strstr(err_msg(&err), needle))
        fail_msg("'%s' does not mention '%s'", err_msg(&err), needle);
    assert_null(a.run.packages);
    err_clear(&err);
    tools_run_args_release(&a);
}

static void refused(const char *tool, const char *json, const char *needle)
{
    refused_in(&ENV, tool, json, needle);
}

static void test_parsed(void **state)
{
    (void)state;
    /* pip's names normalized (PEP 503), the list sorted by name. */
    admitted("run_python_code", "{\"code\":\"x\",\"packages\":[\"tqdm\",\"HTTPX == 0.27.*\"]}",
             "httpx==0.27.*\ntqdm", REQS_PIP);
    admitted("execute_code",
             "{\"language\":\"py\",\"code\":\"x\",\"packages\":[\"Typing_Extensions>=4\"]}",
             "typing-extensions>=4", REQS_PIP);
    /* One name twice, the same once normalized: once. */
    admitted("run_python_code", "{\"code\":\"x\",\"packages\":[\"tqdm\",\"TQDM\"]}", "tqdm",
             REQS_PIP);
    admitted("run_js_code", "{\"code\":\"x\",\"packages\":[\"zod\",\"lodash@4\"]}", "lodash@4\nzod",
             REQS_NPM);
    admitted("execute_code",
             "{\"language\":\"typescript\",\"code\":\"x\",\"packages\":[\"@types/node@20\"]}",
             "@types/node@20", REQS_NPM);
    admitted("execute_code",
             "{\"language\":\"ruby\",\"code\":\"x\",\"packages\":[\"rack:~>2.2\",\"Rake\"]}",
             "rack:~> 2.2\nRake", REQS_GEM);
    /* None asked: none, whatever the language. */
    admitted("run_python_code", "{\"code\":\"x\"}", "(none)", REQS_PIP);
    admitted("run_python_code", "{\"code\":\"x\",\"packages\":null}", "(none)", REQS_PIP);
    admitted("run_python_code", "{\"code\":\"x\",\"packages\":[]}", "(none)", REQS_PIP);
    admitted("execute_code", "{\"language\":\"ruby\",\"code\":\"x\",\"packages\":[]}", "(none)",
             REQS_PIP);
    /* As many as the schema allows. */
    char many[2048] = "{\"code\":\"x\",\"packages\":[";
    for (int i = 0; i < REQS_MAX_COUNT; i++)
        sprintf(many + strlen(many), "%s\"p%d\"", i ? "," : "", i);
    strcat(many, "]}");
    struct tools_run_args a;
    struct err err = ERR_INIT;
    if (admit_in(&ENV, "run_python_code", many, &a, &err) < 0)
        fail_msg("%s", err_msg(&err));
    assert_int_equal(a.run.packages->n, REQS_MAX_COUNT);
    tools_run_args_release(&a);
}

/* The list is the run's own, and survives tools_prepare (which copies
 * what the run needs out of the request). */
static void test_prepared(void **state)
{
    (void)state;
    json_object *args = json_tokener_parse("{\"code\":\"x\",\"packages\":[\"httpx\"]}");
    struct tools_run_args a;
    json_object *bad = NULL;
    assert_int_equal(tools_prepare(&ENV, tools_find("run_python_code"), args, NULL, &a, &bad), 0);
    json_object_put(args);
    assert_non_null(a.run.packages);
    assert_int_equal(a.run.packages->n, 1);
    assert_string_equal(a.run.packages->v[0].name, "httpx");
    tools_run_args_release(&a);

    /* And a refusal is an isError result naming the argument. */
    args = json_tokener_parse("{\"language\":\"c\",\"code\":\"x\",\"packages\":[\"zlib\"]}");
    assert_int_equal(tools_prepare(&ENV, tools_find("execute_code"), args, NULL, &a, &bad), -1);
    json_object_put(args);
    assert_true(json_object_get_boolean(json_get(bad, "isError")));
    const char *text = json_object_get_string(
        json_get(json_object_array_get_idx(json_get(bad, "content"), 0), "text"));
    assert_string_equal(text, "Invalid arguments for execute_code: language c has no package "
                              "installer; list_languages says which do");
    json_object_put(bad);
}

static void test_refusals(void **state)
{
    (void)state;
    const char *none = "has no package installer; list_languages says which do";
    refused("execute_code", "{\"language\":\"php\",\"code\":\"x\",\"packages\":[\"a/b\"]}",
            "language php has no package installer");
    refused("execute_code", "{\"language\":\"bash\",\"code\":\"x\",\"packages\":[\"jq\"]}", none);
    /* reqs' words, naming the string. */
    refused("run_python_code",
            "{\"code\":\"x\",\"packages\":[\"tqdm\",\"requests @ https://example.com/r.whl\"]}",
            "packages[1]: ");
    refused("run_python_code", "{\"code\":\"x\",\"packages\":[\"--index-url=http://x\"]}",
            "packages[0]: ");
    refused("run_python_code", "{\"code\":\"x\",\"packages\":[\"\"]}", "packages[0]");
    refused("run_js_code", "{\"code\":\"x\",\"packages\":[\"git+https://github.com/a/b\"]}",
            "packages[0]: ");
    refused("run_js_code", "{\"code\":\"x\",\"packages\":[\"a/b\"]}", "packages[0]: ");
    /* A pip requirement is not npm's. */
    refused("run_js_code", "{\"code\":\"x\",\"packages\":[\"httpx==0.27\"]}", "packages[0]: ");
    /* One name twice, differently. */
    refused("run_python_code", "{\"code\":\"x\",\"packages\":[\"tqdm\",\"tqdm==4\"]}", "packages");
    /* The operator's deny list. */
    refused("run_python_code", "{\"code\":\"x\",\"packages\":[\"tqdm\",\"Evil-Thing\"]}",
            "packages[1]: package 'evil-thing' is refused by the deny list (rule 'evil*')");
    refused("execute_code", "{\"language\":\"python\",\"code\":\"x\",\"packages\":[\"bad.pkg\"]}",
            "refused by the deny list");
    /* The schema's: the argument's shape and caps. */
    refused("run_python_code", "{\"code\":\"x\",\"packages\":\"tqdm\"}", "packages");
    refused("run_python_code", "{\"code\":\"x\",\"packages\":[7]}", "packages[0]");
    char many[2048] = "{\"code\":\"x\",\"packages\":[";
    for (int i = 0; i <= REQS_MAX_COUNT; i++)
        sprintf(many + strlen(many), "%s\"p%d\"", i ? "," : "", i);
    strcat(many, "]}");
    refused("run_python_code", many, "packages");
    char long_one[512];
    snprintf(long_one, sizeof(long_one), "{\"code\":\"x\",\"packages\":[\"%0*d\"]}",
             REQS_MAX_LEN + 1, 0);
    refused("run_python_code", long_one, "packages[0]");
    /* Neither a syntax check nor a session's start takes packages. */
    refused("validate_code", "{\"language\":\"python\",\"code\":\"x\",\"packages\":[]}",
            "unknown argument 'packages'");
    refused("create_session", "{\"language\":\"python\",\"packages\":[\"tqdm\"]}",
            "unknown argument 'packages'");
}

/* packages_arg_parse alone: what the schema cannot say. */
static void test_direct(void **state)
{
    (void)state;
    struct run run;
    run_init(&run);
    run.language = test_lang(langs, "python");
    struct err err = ERR_INIT;
    json_object *args = json_tokener_parse("{\"packages\":[\"tqdm\"]}");
    run.check_only = true;
    assert_int_equal(packages_arg_parse(args, &run, &err), 0);
    assert_null(run.packages);
    run.check_only = false;
    run.packages_stay = true;
    assert_int_equal(packages_arg_parse(args, &run, &err), 0);
    assert_non_null(run.packages);
    assert_true(run.packages_stay);
    json_object_put(args);
    run_free(&run);

    run.language = test_lang(langs, "python");
    args = json_tokener_parse("{\"packages\":{\"tqdm\":1}}");
    assert_int_equal(packages_arg_parse(args, &run, &err), -1);
    assert_non_null(strstr(err_msg(&err), "argument 'packages' must be an array"));
    err_clear(&err);
    json_object_put(args);
    char *text = xstrdup("{\"packages\":[");
    for (int i = 0; i <= REQS_MAX_COUNT; i++) {
        char *more = xasprintf("%s%s\"p%d\"", text, i ? "," : "", i);
        free(text);
        text = more;
    }
    char *closed = xasprintf("%s]}", text);
    args = json_tokener_parse(closed);
    free(closed);
    free(text);
    assert_non_null(args);
    assert_int_equal(packages_arg_parse(args, &run, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    assert_null(run.packages);
    err_clear(&err);
    json_object_put(args);
    /* NUL inside a string: refused, not cut. */
    args = json_tokener_parse("{\"packages\":[\"tqdm\\u0000-e\"]}");
    assert_int_equal(packages_arg_parse(args, &run, &err), -1);
    assert_non_null(strstr(err_msg(&err), "packages[0]"));
    err_clear(&err);
    json_object_put(args);
    run_free(&run);
}

/* The definitions carry the argument with reqs.h's caps, all alike (the
 * caps are C, the definitions data); install_packages' needs one. */
static void test_schemas(void **state)
{
    (void)state;
    const char *with[] = {"run_python_code", "run_js_code", "execute_code", "install_packages"};
    json_object *first = NULL;
    for (size_t i = 0; i < ARRAY_SIZE(with); i++) {
        struct err err = ERR_INIT;
        json_object *def = registry_definition(tools_find(with[i]), langs, &err);
        assert_non_null(def);
        json_object *p = json_get(json_get(json_get(def, "inputSchema"), "properties"), "packages");
        assert_string_equal(json_object_get_string(json_get(p, "type")), "array");
        assert_int_equal(json_object_get_int(json_get(p, "maxItems")), REQS_MAX_COUNT);
        json_object *items = json_get(p, "items");
        assert_string_equal(json_object_get_string(json_get(items, "type")), "string");
        assert_int_equal(json_object_get_int(json_get(items, "maxLength")), REQS_MAX_LEN);
        const char *desc = json_object_get_string(json_get(p, "description"));
        assert_non_null(strstr(desc, "pip's for Python (\"tqdm\", \"httpx==0.27.*\")"));
        assert_non_null(strstr(desc, "npm's for JavaScript and TypeScript (\"lodash@4\""));
        bool install = strcmp(with[i], "install_packages") == 0;
        assert_int_equal(json_object_object_get_ex(p, "minItems", NULL), install);
        if (install)
            assert_int_equal(json_object_get_int(json_get(p, "minItems")), 1);
        if (!first)
            first = json_object_get(p);
        else if (!install && !json_object_equal(first, p))
            fail_msg("%s's packages differs from run_python_code's", with[i]);
        json_object_put(def);
    }
    json_object_put(first);
    const char *without[] = {"validate_code", "create_session", "list_languages", "list_sessions",
                             "close_session"};
    for (size_t i = 0; i < ARRAY_SIZE(without); i++) {
        struct err err = ERR_INIT;
        json_object *def = registry_definition(tools_find(without[i]), langs, &err);
        assert_false(json_object_object_get_ex(json_get(json_get(def, "inputSchema"), "properties"),
                                               "packages", NULL));
        json_object_put(def);
    }
    /* install_packages' result items are the runs' result items. */
    struct err err = ERR_INIT;
    json_object *inst = registry_definition(tools_find("install_packages"), langs, &err);
    json_object *runs = json_tokener_parse(tooldef_output_schema);
    assert_true(json_object_equal(
        json_get(json_get(json_get(json_get(inst, "outputSchema"), "properties"), "packages"),
                 "items"),
        json_get(json_get(json_get(runs, "properties"), "packages"), "items")));
    json_object *req = json_get(json_get(inst, "inputSchema"), "required");
    assert_int_equal(json_object_array_length(req), 2);
    json_object_put(inst);
    json_object_put(runs);
}

/* install_packages in tools/list: the languages that install, whether
 * offline; open to the world only when an install may reach an index. */
static void test_listed(void **state)
{
    (void)state;
    size_t len = 0;
    json_object *list = json_tokener_parse(tools_list_json(&ENV, &MODERN, &len));
    json_object *t = json_object_array_get_idx(list, REGISTRY_TOOLS - 1);
    assert_string_equal(json_object_get_string(json_get(t, "name")), "install_packages");
    assert_non_null(strstr(json_object_get_string(json_get(t, "description")),
                           "Languages that install packages here: python (pip), javascript "
                           "(npm), typescript (npm), ruby (gem)."));
    assert_true(json_object_get_boolean(json_get(json_get(t, "annotations"), "openWorldHint")));
    json_object_put(list);

    struct config off;
    config_init(&off);
    off.packages_offline = true;
    struct tools_env env;
    struct err err = ERR_INIT;
    assert_int_equal(tools_env_init(&env, &off, langs, NULL, &err), 0);
    list = json_tokener_parse(tools_list_json(&env, &MODERN, &len));
    t = json_object_array_get_idx(list, REGISTRY_TOOLS - 1);
    assert_non_null(strstr(json_object_get_string(json_get(t, "description")),
                           "offline: only sets already in the server's cache"));
    assert_false(json_object_get_boolean(json_get(json_get(t, "annotations"), "openWorldHint")));
    json_object_put(list);
    tools_env_cleanup(&env);
    config_free(&off);
}

/* A session of language's; its id (free it). */
static char *open_session(const struct tools_env *env, const char *language)
{
    char *json = xasprintf("{\"language\":\"%s\"}", language);
    json_object *args = json_tokener_parse(json);
    free(json);
    json_object *r = tools_call(env, tools_find("create_session"), args, NULL, &MODERN);
    json_object_put(args);
    if (json_object_get_boolean(json_get(r, "isError")))
        fail_msg("create_session: %s", json_object_to_json_string(r));
    char *id =
        xstrdup(json_object_get_string(json_get(json_get(r, "structuredContent"), "session_id")));
    json_object_put(r);
    return id;
}

static void close_session(const struct tools_env *env, const char *id)
{
    char *json = xasprintf("{\"session_id\":\"%s\"}", id);
    json_object *args = json_tokener_parse(json);
    json_object_put(tools_call(env, tools_find("close_session"), args, NULL, &MODERN));
    json_object_put(args);
    free(json);
}

/* install_packages' call as the tools layer admits it, and a run tool's
 * call in a session with packages, over the fake backend. */
static void test_in_a_session(void **state)
{
    (void)state;
    struct rig g;
    rig_init(&g, RIG_UP);
    rig_start(&g);
    struct tools_env env;
    struct err err = ERR_INIT;
    if (tools_env_init(&env, &g.cfg, g.langs, g.exec, &err) < 0)
        fail_msg("tools_env_init: %s", err_msg(&err));
    struct fake_program p = {.session = true};
    fake_backend_set_program(g.fake, &p);
    char *py = open_session(&env, "python");
    char *sh = open_session(&env, "bash");

    /* The session's language, no code, the set kept. */
    char *json = xasprintf("{\"session_id\":\"%s\",\"packages\":[\"tqdm\",\"HTTPX\"]}", py);
    struct tools_run_args a;
    if (admit_in(&env, "install_packages", json, &a, &err) < 0)
        fail_msg("install_packages: %s", err_msg(&err));
    free(json);
    assert_non_null(a.session);
    assert_ptr_equal(a.run.language, test_lang(g.langs, "python"));
    assert_int_equal(a.run.code_len, 0);
    assert_string_equal(a.run.code, "");
    assert_true(a.run.packages_stay);
    assert_int_equal(a.run.packages->n, 2);
    assert_int_equal(a.run.packages->installer, REQS_PIP);
    assert_string_equal(a.run.packages->v[0].text, "httpx");
    assert_false(a.run.check_only);
    assert_int_equal(a.run.timeout_ms, g.cfg.timeout_ms);
    tools_run_args_release(&a);

    /* A run tool's call in the session: for that call only. */
    json = xasprintf("{\"session_id\":\"%s\",\"code\":\"x\",\"packages\":[\"tqdm\"]}", py);
    assert_int_equal(admit_in(&env, "run_python_code", json, &a, &err), 0);
    free(json);
    assert_non_null(a.session);
    assert_int_equal(a.run.packages->n, 1);
    assert_false(a.run.packages_stay);
    tools_run_args_release(&a);

    /* Whatever the sandbox layer makes of it, the result is
     * install_packages' own, with the session's id. */
    json = xasprintf("{\"session_id\":\"%s\",\"packages\":[\"tqdm\"]}", py);
    json_object *args = json_tokener_parse(json);
    free(json);
    json_object *r = tools_call(&env, tools_find("install_packages"), args, NULL, &MODERN);
    json_object_put(args);
    json_object *sc = json_get(r, "structuredContent");
    assert_string_equal(json_object_get_string(json_get(sc, "session_id")), py);
    json_object *def = registry_definition(tools_find("install_packages"), g.langs, &err);
    if (schema_validate(json_get(def, "outputSchema"), sc, 0, &err) < 0)
        fail_msg("structuredContent: %s", err_msg(&err));
    json_object_put(def);
    json_object_put(r);

    /* Refusals: the schema's, the session's, the language's. */
    const char *tool = "install_packages";
    refused_in(&env, tool, "{\"packages\":[\"tqdm\"]}", "session_id");
    json = xasprintf("{\"session_id\":\"%s\"}", py);
    refused_in(&env, tool, json, "packages");
    free(json);
    json = xasprintf("{\"session_id\":\"%s\",\"packages\":[]}", py);
    refused_in(&env, tool, json, "packages");
    free(json);
    json = xasprintf("{\"session_id\":\"%s\",\"packages\":[\"tqdm\"],\"code\":\"x\"}", py);
    refused_in(&env, tool, json, "unknown argument 'code'");
    free(json);
    refused_in(&env, tool,
               "{\"session_id\":\"0123456789abcdef0123456789abcdef\",\"packages\":[\"tqdm\"]}",
               SESSIONS_NO_SUCH);
    json = xasprintf("{\"session_id\":\"%s\",\"packages\":[\"jq\"]}", sh);
    refused_in(&env, tool, json, "language bash has no package installer");
    free(json);
    json = xasprintf("{\"session_id\":\"%s\",\"packages\":[\"evil@1\"]}", py);
    refused_in(&env, tool, json, "packages[0]: ");
    free(json);
    /* An unknown session reads as any other's: the same words alone. */
    args = json_tokener_parse(
        "{\"session_id\":\"0123456789abcdef0123456789abcdef\",\"packages\":[\"tqdm\"]}");
    r = tools_call(&env, tools_find(tool), args, NULL, &MODERN);
    json_object_put(args);
    assert_true(json_object_get_boolean(json_get(r, "isError")));
    assert_string_equal(json_object_get_string(
                            json_get(json_object_array_get_idx(json_get(r, "content"), 0), "text")),
                        SESSIONS_NO_SUCH);
    json_object_put(r);

    close_session(&env, py);
    close_session(&env, sh);
    free(py);
    free(sh);
    tools_env_cleanup(&env);
    rig_fini(&g);
}

/* Without code sessions install_packages is not listed, and a call of it
 * is refused saying so. */
static void test_sessions_off(void **state)
{
    (void)state;
    struct config c;
    config_init(&c);
    c.max_code_sessions = 0;
    struct tools_env env;
    struct err err = ERR_INIT;
    assert_int_equal(tools_env_init(&env, &c, langs, NULL, &err), 0);
    size_t len = 0;
    assert_null(strstr(tools_list_json(&env, &MODERN, &len), "\"name\":\"install_packages\""));
    assert_non_null(strstr(tools_list_json(&env, &MODERN, &len), "\"name\":\"execute_code\""));
    refused_in(&env, "install_packages",
               "{\"session_id\":\"0123456789abcdef0123456789abcdef\",\"packages\":[\"tqdm\"]}",
               "code sessions are off");
    tools_env_cleanup(&env);
    config_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parsed),       cmocka_unit_test(test_prepared),
        cmocka_unit_test(test_refusals),     cmocka_unit_test(test_direct),
        cmocka_unit_test(test_schemas),      cmocka_unit_test(test_listed),
        cmocka_unit_test(test_in_a_session), cmocka_unit_test(test_sessions_off),
    };
    return cmocka_run_group_tests_name("packages_arg", tests, setup, teardown);
}
