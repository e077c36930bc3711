#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "tools/schema.h"
#include "tools/tools.h"
#include "unit/langs.h"
#include "unit/json_get.h"
#include "unit/options.h"

static struct config cfg;
/* The built-in table, configured by cfg (as main makes it). */
static struct langtable *langs;
static const struct langtable_lang *PY, *JS;
/* The tools over cfg and langs. */
static struct tools_env ENV;

static int setup(void **state)
{
    (void)state;
    config_init(&cfg);
    cfg.max_timeout_ms = 60000;
    cfg.max_memory_mb = 1024;
    cfg.max_code_bytes = 100;
    langs = test_langs(&cfg);
    PY = test_lang(langs, "python");
    JS = test_lang(langs, "javascript");
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

static int parse_in(const struct tools_env *e, const char *tool, const char *json,
                    struct tools_run_args *a, struct err *err)
{
    json_object *args = json ? json_tokener_parse(json) : NULL;
    const tools_tool *t = tools_find(tool);
    assert_non_null(t);
    int rc = tools_parse_args(e, t, args, NULL, a, err);
    json_object_put(args);
    return rc;
}

/* The same with the tools over another table t (and cfg). */
static int parse_table(const struct langtable *t, const char *tool, const char *json,
                       struct tools_run_args *a, struct err *err)
{
    struct tools_env e;
    struct err init = ERR_INIT;
    if (tools_env_init(&e, &cfg, t, NULL, &init) < 0)
        fail_msg("tools_env_init: %s", err_msg(&init));
    int rc = parse_in(&e, tool, json, a, err);
    tools_env_cleanup(&e);
    return rc;
}

static int parse(const char *tool, const char *json, struct tools_run_args *a, struct err *err)
{
    return parse_in(&ENV, tool, json, a, err);
}

static void expect_invalid(const char *tool, const char *json, const char *needle)
{
    struct tools_run_args a;
    struct err err = ERR_INIT;
    assert_int_equal(parse(tool, json, &a, &err), -1);
    if (!strstr(err_msg(&err), needle))
        fail_msg("'%s' does not mention '%s'", err_msg(&err), needle);
    err_clear(&err);
}

static void test_fixed_language_tools(void **state)
{
    (void)state;
    struct tools_run_args a;
    struct err err = ERR_INIT;
    assert_int_equal(parse("run_python_code", "{\"code\":\"print(1)\"}", &a, &err), 0);
    assert_ptr_equal(a.run.language, PY);
    assert_int_equal(a.run.code_len, 8);
    assert_int_equal(a.run.timeout_ms, cfg.timeout_ms);
    assert_int_equal(a.run.memory_mb, cfg.memory_mb);
    assert_null(a.run.stdin_data);
    assert_int_equal(parse("run_js_code", "{\"code\":\"\"}", &a, &err), 0);
    assert_ptr_equal(a.run.language, JS);
    expect_invalid("run_python_code", NULL, "missing required argument 'code'");
    expect_invalid("run_python_code", "{}", "missing required argument 'code'");
    expect_invalid("run_python_code", "{\"code\":1}", "must be a string");
    expect_invalid("run_python_code", "{\"code\":\"x\",\"stdin\":\"y\"}",
                   "unknown argument 'stdin'");
    expect_invalid("run_python_code", "[1]", "must be an object");
    assert_null(tools_find("nope"));
}

static void test_execute_code(void **state)
{
    (void)state;
    struct tools_run_args a;
    struct err err = ERR_INIT;
    assert_int_equal(parse("execute_code",
                           "{\"language\":\"javascript\",\"code\":\"x\",\"stdin\":\"in\","
                           "\"timeout_ms\":5000,\"memory_mb\":64}",
                           &a, &err),
                     0);
    assert_ptr_equal(a.run.language, JS);
    assert_int_equal(a.run.stdin_len, 2);
    assert_int_equal(a.run.timeout_ms, 5000);
    assert_int_equal(a.run.memory_mb, 64);
    /* Callers never raise limits past the operator's maximums. */
    assert_int_equal(parse("execute_code",
                           "{\"language\":\"python\",\"code\":\"x\",\"timeout_ms\":1e9,"
                           "\"memory_mb\":1000000}",
                           &a, &err),
                     0);
    assert_int_equal(a.run.timeout_ms, 60000);
    assert_int_equal(a.run.memory_mb, 1024);
    /* A task's run may ask for longer, up to --task-max-timeout-ms. */
    json_object *args = json_tokener_parse("{\"language\":\"python\",\"code\":\"x\","
                                           "\"timeout_ms\":1e9}");
    struct tools_caller task = {.owner = "o", .principal = "p", .task = true};
    assert_int_equal(tools_parse_args(&ENV, tools_find("execute_code"), args, &task, &a, &err), 0);
    assert_int_equal(a.run.timeout_ms, cfg.task_max_timeout_ms);
    assert_true(cfg.task_max_timeout_ms > 60000);
    tools_run_args_release(&a);
    json_object_put(args);
    assert_int_equal(parse("execute_code",
                           "{\"language\":\"python\",\"code\":\"x\",\"timeout_ms\":2000.0}", &a,
                           &err),
                     0);
    assert_int_equal(a.run.timeout_ms, 2000);
    expect_invalid("execute_code", "{\"code\":\"x\"}",
                   "execute_code needs a language, or a session_id");
    expect_invalid("execute_code", "{\"language\":\"cobol\",\"code\":\"x\"}", "\"cobol\"");
    expect_invalid("execute_code", "{\"language\":\"python\",\"code\":\"x\",\"timeout_ms\":0}",
                   "at least 1");
    expect_invalid("execute_code", "{\"language\":\"python\",\"code\":\"x\",\"timeout_ms\":1.5}",
                   "integer");
    expect_invalid("execute_code", "{\"language\":\"python\",\"code\":\"x\",\"timeout_ms\":\"9\"}",
                   "integer");
    expect_invalid("execute_code", "{\"language\":\"python\",\"code\":\"x\",\"memory_mb\":5}",
                   "at least 16");
    expect_invalid("execute_code", "{\"language\":\"python\",\"code\":\"x\",\"network\":true}",
                   "unknown argument 'network'");
    char big[300];
    snprintf(big, sizeof(big), "{\"language\":\"python\",\"code\":\"%0150d\"}", 0);
    expect_invalid("execute_code", big, "limit is 100 bytes");
}

/* The variables argument: checked for the tool's language, kept as JSON
 * text the caller releases. */
static void test_variables_argument(void **state)
{
    (void)state;
    struct tools_run_args a;
    struct err err = ERR_INIT;
    assert_int_equal(
        parse("run_python_code", "{\"code\":\"x\",\"variables\":{\"n\":[1,{}]}}", &a, &err), 0);
    assert_string_equal(a.run.variables, "{\"n\":[1,{}]}");
    assert_int_equal(a.run.variables_len, strlen(a.run.variables));
    tools_run_args_release(&a);
    assert_int_equal(parse("run_js_code", "{\"code\":\"x\",\"variables\":null}", &a, &err), 0);
    assert_null(a.run.variables);
    tools_run_args_release(&a);
    /* os is Python's, not JavaScript's. */
    assert_int_equal(parse("execute_code",
                           "{\"language\":\"javascript\",\"code\":\"x\",\"variables\":{\"os\":1}}",
                           &a, &err),
                     0);
    tools_run_args_release(&a);
    expect_invalid("execute_code",
                   "{\"language\":\"python\",\"code\":\"x\",\"variables\":{\"os\":1}}",
                   "variable 'os' would hide");
    expect_invalid("run_js_code", "{\"code\":\"x\",\"variables\":{\"constructor\":1}}",
                   "variable 'constructor' would hide");
    expect_invalid("run_python_code", "{\"code\":\"x\",\"variables\":{\"1abc\":1}}",
                   "not an ASCII Python identifier");
    expect_invalid("run_python_code", "{\"code\":\"x\",\"variables\":[1]}", "object");
    cfg.max_variables_bytes = 10;
    expect_invalid("run_python_code", "{\"code\":\"x\",\"variables\":{\"abcdefgh\":1}}",
                   "the limit is 10 bytes");
    cfg.max_variables_bytes = 1 << 20;
}

/* An invalid-arguments result quoting the client's bytes is valid UTF-8
 * even when those bytes were not (json-c does not check). */
static void test_invalid_result_is_utf8(void **state)
{
    (void)state;
    json_object *args = json_tokener_parse("{\"code\":\"x\",\"variables\":{\"\xff\xfe\":1}}");
    assert_non_null(args);
    struct tools_run_args a;
    json_object *bad = NULL;
    assert_int_equal(tools_prepare(&ENV, tools_find("run_python_code"), args, NULL, &a, &bad), -1);
    assert_non_null(bad);
    size_t len = 0;
    const char *text = json_object_to_json_string_length(bad, JSON_C_TO_STRING_PLAIN, &len);
    assert_true(util_utf8_valid(text, len));
    assert_non_null(strstr(text, "not an ASCII Python identifier"));
    json_object_put(bad);
    json_object_put(args);
}

/* Clients send null for optional arguments they leave out. */
static void test_null_arguments(void **state)
{
    (void)state;
    struct tools_run_args a;
    struct err err = ERR_INIT;
    assert_int_equal(parse("execute_code",
                           "{\"language\":\"python\",\"code\":\"x\",\"stdin\":null,"
                           "\"timeout_ms\":null,\"memory_mb\":null}",
                           &a, &err),
                     0);
    assert_null(a.run.stdin_data);
    assert_int_equal(a.run.timeout_ms, cfg.timeout_ms);
    assert_int_equal(a.run.memory_mb, cfg.memory_mb);
    expect_invalid("run_python_code", "{\"code\":null}", "missing required argument 'code'");
    expect_invalid("execute_code", "{\"language\":null,\"code\":\"x\"}",
                   "execute_code needs a language, or a session_id");
    expect_invalid("run_python_code", "{\"code\":\"x\",\"stdin\":null}",
                   "unknown argument 'stdin'");
}

/* Admission makes the whole run: copies out of the request, the
 * operator's output caps, a cancel handle; the caller adds the rest. */
static void test_prepare_makes_the_run(void **state)
{
    (void)state;
    json_object *args =
        json_tokener_parse("{\"language\":\"python\",\"code\":\"print(1)\",\"stdin\":\"in\","
                           "\"output_files\":[\"*.txt\"]}");
    struct tools_run_args a;
    json_object *bad = NULL;
    assert_int_equal(tools_prepare(&ENV, tools_find("execute_code"), args, NULL, &a, &bad), 0);
    assert_null(bad);
    json_object_put(args); /* the run holds copies */
    const struct run *run = &a.run;
    assert_string_equal(run->code, "print(1)");
    assert_string_equal(run->stdin_data, "in");
    assert_non_null(run->cancel);
    assert_null(run->on_output);
    assert_true(run->returns);
    assert_ptr_equal(run_outputs(run), &run->outputs);
    const struct runner_outputs *o = &run->outputs;
    assert_int_equal(o->n_patterns, 1);
    assert_string_equal(o->patterns[0], "*.txt");
    assert_int_equal(o->max_files, cfg.max_files_out);
    assert_int_equal(o->max_file_bytes, cfg.max_file_out_bytes);
    assert_int_equal(o->max_total_bytes, cfg.max_files_out_bytes);
    assert_int_equal(o->max_plots, cfg.max_plots);
    assert_int_equal(o->max_plot_bytes, cfg.max_plot_bytes);
    tools_run_args_release(&a);
    assert_null(a.run.cancel);

    args = json_tokener_parse("{\"language\":\"python\",\"code\":\"x\"}");
    assert_int_equal(tools_prepare(&ENV, tools_find("validate_code"), args, NULL, &a, &bad), 0);
    json_object_put(args);
    assert_null(run_outputs(&a.run)); /* a check returns no files */
    tools_run_args_release(&a);
}

static void test_result_shape(void **state)
{
    (void)state;
    struct exec_result res;
    exec_result_init(&res);
    buf_init(&res.out, 1024);
    buf_init(&res.err, 1024);
    assert_int_equal(buf_add(&res.out, "hi\xff\n", 4), 0);
    res.status = EXEC_OK;
    res.has_exit_code = true;
    res.exit_code = 0;
    res.duration_ms = 12.345;
    struct tools_features modern = {.annotations = true, .structured = true};
    json_object *r = tools_result(&res, PY, &modern, NULL);
    assert_false(json_object_get_boolean(json_get(r, "isError")));
    json_object *sc = json_get(r, "structuredContent");
    assert_string_equal(json_object_get_string(json_get(sc, "status")), "ok");
    assert_int_equal(json_object_get_int(json_get(sc, "exit_code")), 0);
    /* Invalid UTF-8 from the program never reaches the wire. */
    assert_string_equal(json_object_get_string(json_get(sc, "stdout")), "hi\xef\xbf\xbd\n");
    assert_string_equal(json_object_get_string(json_get(sc, "language")), "python");
    assert_true(json_object_get_double(json_get(sc, "duration_ms")) > 12.2);
    json_object *text = json_get(json_object_array_get_idx(json_get(r, "content"), 0), "text");
    assert_string_equal(json_object_get_string(text), "hi\xef\xbf\xbd\n");
    json_object_put(r);

    /* Old protocol versions get no structuredContent. */
    struct tools_features old = {0};
    r = tools_result(&res, PY, &old, NULL);
    assert_false(json_object_object_get_ex(r, "structuredContent", NULL));
    json_object_put(r);

    res.status = EXEC_TIMEOUT;
    res.has_exit_code = false;
    res.message = xstrdup("stopped after 100 ms");
    assert_int_equal(buf_add(&res.err, "warn", 4), 0);
    r = tools_result(&res, JS, &modern, NULL);
    assert_true(json_object_get_boolean(json_get(r, "isError")));
    sc = json_get(r, "structuredContent");
    assert_true(json_object_is_type(json_get(sc, "exit_code"), json_type_null));
    assert_string_equal(json_object_get_string(json_get(sc, "status")), "timeout");
    assert_string_equal(json_object_get_string(json_get(sc, "message")), "stopped after 100 ms");
    text = json_get(json_object_array_get_idx(json_get(r, "content"), 0), "text");
    assert_non_null(strstr(json_object_get_string(text), "--- stderr ---\nwarn"));
    assert_non_null(strstr(json_object_get_string(text), "status: timeout"));
    json_object_put(r);

    /* A non-zero exit is an error even though the run finished. */
    res.status = EXEC_OK;
    res.has_exit_code = true;
    res.exit_code = 3;
    r = tools_result(&res, PY, &modern, NULL);
    assert_true(json_object_get_boolean(json_get(r, "isError")));
    json_object_put(r);
    exec_result_free(&res);
}

/* Parses the serialized tool list for f. */
static json_object *list_of(const struct tools_env *env, const struct tools_features *f)
{
    size_t len = 0;
    const char *text = tools_list_json(env, f, &len);
    assert_int_equal(strlen(text), len);
    json_object *l = json_tokener_parse(text);
    assert_non_null(l);
    return l;
}

/* The tool named name in the list for f (borrowed from l). */
static json_object *tool_in(json_object *l, const char *name)
{
    for (size_t i = 0; i < json_object_array_length(l); i++) {
        json_object *t = json_object_array_get_idx(l, i);
        if (strcmp(json_object_get_string(json_get(t, "name")), name) == 0)
            return t;
    }
    fail_msg("no tool %s", name);
    return NULL;
}

/* The served outputSchema of the first tool, for f (structured). */
static json_object *output_schema(const struct tools_env *env, const struct tools_features *f)
{
    json_object *l = list_of(env, f);
    json_object *schema =
        json_object_get(json_get(json_object_array_get_idx(l, 0), "outputSchema"));
    json_object_put(l);
    return schema;
}

/* Every result's structuredContent matches the outputSchema served. */
static void test_result_matches_output_schema(void **state)
{
    (void)state;
    struct tools_env env;
    struct err err = ERR_INIT;
    assert_int_equal(tools_env_init(&env, &cfg, NULL, NULL, &err), 0);
    struct tools_features modern = {.annotations = true, .structured = true};
    json_object *schema = output_schema(&env, &modern);
    struct exec_result res;
    exec_result_init(&res);
    const struct {
        enum exec_status status;
        bool has_exit_code;
        const char *message;
    } cases[] = {
        {EXEC_OK, true, NULL},
        {EXEC_TIMEOUT, false, "stopped"},
        {EXEC_ERROR, false, "engine unreachable"},
        {EXEC_COMPILE_ERROR, true, "the compile step failed"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        res.status = cases[i].status;
        res.has_exit_code = cases[i].has_exit_code;
        free(res.message);
        res.message = cases[i].message ? xstrdup(cases[i].message) : NULL;
        json_object *r = tools_result(&res, JS, &modern, NULL);
        if (schema_validate(schema, json_get(r, "structuredContent"), 0, &err) < 0)
            fail_msg("case %zu: %s", i, err_msg(&err));
        json_object_put(r);
    }
    /* Whatever language of the table ran it. */
    res.status = EXEC_OK;
    res.has_exit_code = true;
    for (size_t i = 0; i < langtable_count(env.langs); i++) {
        const struct langtable_lang *l = langtable_get(env.langs, i);
        json_object *r = tools_result(&res, l, &modern, NULL);
        json_object *sc = json_get(r, "structuredContent");
        assert_string_equal(json_object_get_string(json_get(sc, "language")), l->name);
        if (schema_validate(schema, sc, 0, &err) < 0)
            fail_msg("language %s: %s", l->name, err_msg(&err));
        json_object_put(r);
    }
    struct tools_run_args a = {.run = {.language = PY}};
    json_object *r = tools_busy_result(&a, &modern, "every run slot is taken", 12.5);
    if (schema_validate(schema, json_get(r, "structuredContent"), 0, &err) < 0)
        fail_msg("busy: %s", err_msg(&err));
    json_object_put(r);
    exec_result_free(&res);
    json_object_put(schema);
    tools_env_cleanup(&env);
}

/* Each language execute_code's schema offers is one the daemon runs, and
 * no served schema uses a type array (portable to single-type dialects). */
static void test_schema_and_code_agree(void **state)
{
    (void)state;
    struct tools_env env;
    struct err err = ERR_INIT;
    assert_int_equal(tools_env_init(&env, &cfg, NULL, NULL, &err), 0);
    struct tools_features modern = {.annotations = true, .structured = true};
    size_t len = 0;
    assert_null(strstr(tools_list_json(&env, &modern, &len), "\"type\":["));
    json_object *l = list_of(&env, &modern);
    json_object *exec = json_object_array_get_idx(l, 2);
    assert_string_equal(json_object_get_string(json_get(exec, "name")), "execute_code");
    json_object *names = json_get(
        json_get(json_get(json_get(exec, "inputSchema"), "properties"), "language"), "enum");
    size_t n_aliases = 0;
    for (size_t i = 0; i < langtable_count(langs); i++)
        n_aliases += langtable_get(langs, i)->aliases.n;
    assert_int_equal(json_object_array_length(names), langtable_count(langs) + n_aliases);
    for (size_t i = 0; i < json_object_array_length(names); i++) {
        const char *lang = json_object_get_string(json_object_array_get_idx(names, i));
        char *args = xasprintf("{\"language\":\"%s\",\"code\":\"x\"}", lang);
        struct tools_run_args a;
        if (parse("execute_code", args, &a, &err) < 0)
            fail_msg("%s: %s", lang, err_msg(&err));
        assert_ptr_equal(a.run.language, langtable_find(langs, lang));
        tools_run_args_release(&a);
        free(args);
    }
    json_object_put(l);
    tools_env_cleanup(&env);
}

/* execute_code's language enum in tools/list: the table's names in its
 * order, then every alias. */
static void test_list_language_enum(void **state)
{
    (void)state;
    struct tools_env env;
    struct err err = ERR_INIT;
    assert_int_equal(tools_env_init(&env, &cfg, langs, NULL, &err), 0);
    assert_ptr_equal(env.langs, langs);
    static const char *const want[] = {
        "python", "javascript", "typescript", "bash", "c",  "cpp",   "ruby", "php", "py", "python3",
        "js",     "node",       "nodejs",     "ts",   "sh", "shell", "c++",  "cxx", "rb"};
    struct tools_features variants[] = {{0}, {.annotations = true, .structured = true}};
    for (size_t v = 0; v < ARRAY_SIZE(variants); v++) {
        json_object *l = list_of(&env, &variants[v]);
        json_object *exec = tool_in(l, "execute_code");
        json_object *names = json_get(
            json_get(json_get(json_get(exec, "inputSchema"), "properties"), "language"), "enum");
        assert_int_equal(json_object_array_length(names), ARRAY_SIZE(want));
        for (size_t i = 0; i < ARRAY_SIZE(want); i++)
            assert_string_equal(json_object_get_string(json_object_array_get_idx(names, i)),
                                want[i]);
        /* validate_code parses with the in-process runners: python and
         * javascript only. */
        json_object *vnames = json_get(
            json_get(json_get(json_get(tool_in(l, "validate_code"), "inputSchema"), "properties"),
                     "language"),
            "enum");
        assert_int_equal(json_object_array_length(vnames), 2);
        json_object_put(l);
    }
    tools_env_cleanup(&env);

    /* A subset (--languages): its names and aliases only. */
    struct config sub;
    char *argv[] = {"d", "--languages", "bash,python", NULL};
    options_load(&sub, argv);
    assert_int_equal(tools_env_init(&env, &sub, NULL, NULL, &err), 0);
    assert_int_equal(langtable_count(env.langs), 2);
    struct tools_features modern = {.annotations = true, .structured = true};
    json_object *l = list_of(&env, &modern);
    json_object *names = json_get(
        json_get(json_get(json_get(tool_in(l, "execute_code"), "inputSchema"), "properties"),
                 "language"),
        "enum");
    static const char *const want_sub[] = {"python", "bash", "py", "python3", "sh", "shell"};
    assert_int_equal(json_object_array_length(names), ARRAY_SIZE(want_sub));
    for (size_t i = 0; i < ARRAY_SIZE(want_sub); i++)
        assert_string_equal(json_object_get_string(json_object_array_get_idx(names, i)),
                            want_sub[i]);
    json_object_put(l);
    /* What the subset lacks is refused, by the schema or by name. */
    struct tools_run_args a;
    assert_int_equal(
        parse_in(&env, "execute_code", "{\"language\":\"ruby\",\"code\":\"x\"}", &a, &err), -1);
    assert_non_null(strstr(err_msg(&err), "\"ruby\""));
    err_clear(&err);
    assert_int_equal(parse_in(&env, "run_js_code", "{\"code\":\"x\"}", &a, &err), -1);
    assert_non_null(strstr(err_msg(&err), "'javascript' is not enabled"));
    err_clear(&err);
    assert_int_equal(
        parse_in(&env, "execute_code", "{\"language\":\"sh\",\"code\":\"x\"}", &a, &err), 0);
    assert_string_equal(a.run.language->name, "bash");
    tools_run_args_release(&a);
    tools_env_cleanup(&env);
    config_free(&sub);

    /* Without a table or an exec, tools_env_init configures the built-in
     * one with cfg: options it refuses fail the init. */
    char *bad[] = {"d", "--languages", "python,cobol", NULL};
    options_load(&sub, bad);
    assert_int_equal(tools_env_init(&env, &sub, NULL, NULL, &err), -1);
    assert_non_null(strstr(err_msg(&err), "--languages"));
    assert_non_null(strstr(err_msg(&err), "cobol"));
    assert_null(env.own_langs);
    err_clear(&err);
    config_free(&sub);
}

/* Which tools take a language is the table's runner and the tool's own
 * language, never a name in code: a second python-runner language gets
 * validate_code but not run_python_code, a "python" the file made
 * generic neither. */
static void test_tools_by_runner(void **state)
{
    (void)state;
    struct langtable *t = test_langs_text(
        &cfg, "{\"languages\": [{\"name\": \"python\", \"runner\": \"generic\",\n"
              "  \"preload\": [], \"run\": [\"python3\", \"{source}\"]},\n"
              " {\"name\": \"py2\", \"image\": \"p:2\", \"source_file\": \"main.py\",\n"
              "  \"runner\": \"python\", \"run\": [\"python2\"], \"plots\": true}]}");
    const struct langtable_lang *py = test_lang(t, "python");
    const struct langtable_lang *py2 = test_lang(t, "py2");
    const struct registry_entry *run_py = registry_find("run_python_code");
    const struct registry_entry *validate = registry_find("validate_code");
    assert_false(registry_takes(run_py, py));
    assert_false(registry_takes(run_py, py2));
    assert_false(registry_takes(validate, py));
    assert_true(registry_takes(validate, py2));
    assert_true(registry_takes(validate, test_lang(t, "js")));
    assert_null(registry_own_tool(py));
    assert_null(registry_own_tool(py2));
    assert_ptr_equal(registry_own_tool(test_lang(t, "js")), registry_find("run_js_code"));
    assert_true(py2->plots);
    assert_false(py->plots);
    /* validate_code's enum: the in-process runners' names, in and out. */
    struct err err = ERR_INIT;
    json_object *def = registry_definition(validate, t, &err);
    assert_non_null(def);
    const char *where[] = {"inputSchema", "outputSchema"};
    for (size_t i = 0; i < 2; i++) {
        json_object *e =
            json_get(json_get(json_get(json_get(def, where[i]), "properties"), "language"), "enum");
        assert_int_equal(json_object_array_length(e), 2);
        assert_string_equal(json_object_get_string(json_object_array_get_idx(e, 0)), "javascript");
        assert_string_equal(json_object_get_string(json_object_array_get_idx(e, 1)), "py2");
    }
    json_object_put(def);
    struct tools_run_args a;
    assert_int_equal(
        parse_table(t, "validate_code", "{\"language\":\"py2\",\"code\":\"x\"}", &a, &err), 0);
    assert_ptr_equal(a.run.language, py2);
    tools_run_args_release(&a);
    assert_int_equal(parse_table(t, "run_python_code", "{\"code\":\"x\"}", &a, &err), -1);
    assert_non_null(strstr(err_msg(&err), "run_python_code needs the python runner, and this "
                                          "server runs python with the generic runner"));
    err_clear(&err);
    langtable_free(t);

    /* No in-process language: the definition's own enum, and a call
     * naming one is refused by name. */
    struct config sub;
    char *argv[] = {"d", "--languages", "bash", NULL};
    options_load(&sub, argv);
    t = test_langs(&sub);
    def = registry_definition(validate, t, &err);
    json_object *e = json_get(
        json_get(json_get(json_get(def, "inputSchema"), "properties"), "language"), "enum");
    assert_int_equal(json_object_array_length(e), 2);
    json_object_put(def);
    assert_int_equal(
        parse_table(t, "validate_code", "{\"language\":\"python\",\"code\":\"x\"}", &a, &err), -1);
    assert_non_null(strstr(err_msg(&err), "'python' is not enabled"));
    err_clear(&err);
    langtable_free(t);
    config_free(&sub);
}

/* Aliases resolve to the table's language; others are the schema's enum
 * error; fail_on_type_errors is typecheck_blocks. */
static void test_execute_code_languages(void **state)
{
    (void)state;
    struct tools_run_args a;
    struct err err = ERR_INIT;
    static const char *const pairs[][2] = {
        {"ts", "typescript"},
        {"c++", "cpp"},
        {"sh", "bash"},
        {"cxx", "cpp"},
        {"rb", "ruby"},
        {"c", "c"},
        {"php", "php"},
        {"node", "javascript"},
        {"py", "python"},
        {"shell", "bash"},
        {"typescript", "typescript"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(pairs); i++) {
        char *args = xasprintf("{\"language\":\"%s\",\"code\":\"x\"}", pairs[i][0]);
        if (parse("execute_code", args, &a, &err) < 0)
            fail_msg("%s: %s", pairs[i][0], err_msg(&err));
        assert_ptr_equal(a.run.language, test_lang(langs, pairs[i][1]));
        assert_string_equal(a.run.language->name, pairs[i][1]);
        assert_false(a.run.typecheck_blocks);
        assert_false(a.run.check_only);
        tools_run_args_release(&a);
        free(args);
    }
    /* Not a language of the table: the schema's enum error. */
    assert_int_equal(parse("execute_code", "{\"language\":\"cobol\",\"code\":\"x\"}", &a, &err),
                     -1);
    assert_int_equal(err.code, ERR_INVALID);
    const char *msg = err_msg(&err);
    if (!strstr(msg, "'language'") || !strstr(msg, "must be") || !strstr(msg, "\"cobol\"") ||
        !strstr(msg, "\"typescript\""))
        fail_msg("'%s' is not the enum's error", msg);
    err_clear(&err);
    /* The enum is exact: the table's lookups ignore case, the schema not. */
    expect_invalid("execute_code", "{\"language\":\"Python\",\"code\":\"x\"}", "\"Python\"");

    assert_int_equal(parse("execute_code",
                           "{\"language\":\"ts\",\"code\":\"x\",\"fail_on_type_errors\":true}", &a,
                           &err),
                     0);
    assert_true(a.run.typecheck_blocks);
    assert_string_equal(a.run.language->name, "typescript");
    tools_run_args_release(&a);
    assert_int_equal(parse("execute_code",
                           "{\"language\":\"typescript\",\"code\":\"x\","
                           "\"fail_on_type_errors\":false}",
                           &a, &err),
                     0);
    assert_false(a.run.typecheck_blocks);
    tools_run_args_release(&a);
    assert_int_equal(parse("execute_code",
                           "{\"language\":\"ts\",\"code\":\"x\",\"fail_on_type_errors\":null}", &a,
                           &err),
                     0);
    assert_false(a.run.typecheck_blocks);
    tools_run_args_release(&a);
    expect_invalid("execute_code", "{\"language\":\"ts\",\"code\":\"x\",\"fail_on_type_errors\":1}",
                   "boolean");
    /* Only execute_code takes it. */
    expect_invalid("run_js_code", "{\"code\":\"x\",\"fail_on_type_errors\":true}",
                   "unknown argument 'fail_on_type_errors'");
    /* validate_code parses with python's or node's own runner. */
    expect_invalid("validate_code", "{\"language\":\"ts\",\"code\":\"x\"}", "\"ts\"");
    /* Variables of a generic language are environment names. */
    assert_int_equal(parse("execute_code",
                           "{\"language\":\"sh\",\"code\":\"x\",\"variables\":{\"MY_VAR\":1}}", &a,
                           &err),
                     0);
    assert_string_equal(a.run.variables, "{\"MY_VAR\":1}");
    tools_run_args_release(&a);
    expect_invalid("execute_code",
                   "{\"language\":\"c\",\"code\":\"x\",\"variables\":{\"LD_PRELOAD\":\"x\"}}",
                   "variable 'LD_PRELOAD' is an environment variable");
    expect_invalid("execute_code",
                   "{\"language\":\"bash\",\"code\":\"x\",\"variables\":{\"a-b\":1}}",
                   "not an environment variable name");
}

/* A failed compile: an error result whose status says so, with the
 * compiler's exit code and the message. */
static void test_compile_error_result(void **state)
{
    (void)state;
    struct exec_result res;
    exec_result_init(&res);
    buf_init(&res.out, 1024);
    buf_init(&res.err, 1024);
    assert_int_equal(buf_add(&res.err, "main.c:1:1: error: expected ';'\n", 32), 0);
    res.status = EXEC_COMPILE_ERROR;
    res.has_exit_code = true;
    res.exit_code = 1;
    res.message = xstrdup("the compile step failed (exit code 1, its output on stderr); the "
                          "program did not run");
    struct tools_features modern = {.annotations = true, .structured = true};
    const struct langtable_lang *c = test_lang(langs, "c");
    json_object *r = tools_result(&res, c, &modern, NULL);
    assert_true(json_object_get_boolean(json_get(r, "isError")));
    json_object *sc = json_get(r, "structuredContent");
    assert_string_equal(json_object_get_string(json_get(sc, "status")), "compile_error");
    assert_int_equal(json_object_get_int(json_get(sc, "exit_code")), 1);
    assert_string_equal(json_object_get_string(json_get(sc, "language")), "c");
    assert_non_null(strstr(json_object_get_string(json_get(sc, "message")), "compile step failed"));
    assert_non_null(strstr(json_object_get_string(json_get(sc, "stderr")), "expected ';'"));
    const char *text = json_object_get_string(
        json_get(json_object_array_get_idx(json_get(r, "content"), 0), "text"));
    assert_non_null(strstr(text, "compile_error"));
    assert_non_null(strstr(text, "expected ';'"));
    json_object_put(r);
    assert_string_equal(exec_status_name(EXEC_COMPILE_ERROR), "compile_error");
    /* Even with exit code 0 (a blocking typecheck that says nothing). */
    res.exit_code = 0;
    r = tools_result(&res, test_lang(langs, "typescript"), &modern, NULL);
    assert_true(json_object_get_boolean(json_get(r, "isError")));
    json_object_put(r);
    exec_result_free(&res);
}

static void test_list(void **state)
{
    (void)state;
    struct tools_env env;
    struct err err = ERR_INIT;
    assert_int_equal(tools_env_init(&env, &cfg, NULL, NULL, &err), 0);
    struct tools_features modern = {.annotations = true, .structured = true};
    json_object *l = list_of(&env, &modern);
    assert_int_equal(json_object_array_length(l), REGISTRY_TOOLS);
    for (size_t i = 0; i < REGISTRY_TOOLS; i++) {
        json_object *t = json_object_array_get_idx(l, i);
        assert_non_null(tools_find(json_object_get_string(json_get(t, "name"))));
        assert_non_null(json_get(t, "description"));
        assert_string_equal(json_object_get_string(json_get(json_get(t, "inputSchema"), "type")),
                            "object");
        assert_non_null(json_get(t, "outputSchema"));
        assert_non_null(json_get(t, "title"));
    }
    json_object_put(l);
    struct tools_features old = {0};
    l = list_of(&env, &old);
    json_object *t = json_object_array_get_idx(l, 0);
    assert_false(json_object_object_get_ex(t, "outputSchema", NULL));
    assert_false(json_object_object_get_ex(t, "title", NULL));
    assert_false(json_object_object_get_ex(t, "annotations", NULL));
    json_object_put(l);
    tools_env_cleanup(&env);
}

/* The code sessions' tools: listed while sessions are on, with their own
 * output schemas and honest hints; the run tools take a session_id; with
 * --max-code-sessions 0 the three are not listed and a session_id, or a
 * call of one of them, is refused saying so. */
static void test_session_tools_listed(void **state)
{
    (void)state;
    struct tools_env env;
    struct err err = ERR_INIT;
    assert_int_equal(tools_env_init(&env, &cfg, NULL, NULL, &err), 0);
    struct tools_features modern = {.annotations = true, .structured = true};
    json_object *l = list_of(&env, &modern);
    static const struct {
        const char *name;
        bool read_only, destructive, idempotent, open;
        const char *output_field;
    } want[] = {
        {"create_session", false, false, false, false, "persistence"},
        {"list_sessions", true, false, true, false, "sessions"},
        {"close_session", false, true, false, false, "closed"},
        /* It reaches the languages' package indexes. */
        {"install_packages", false, false, true, true, "packages"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
        json_object *t = tool_in(l, want[i].name);
        json_object *a = json_get(t, "annotations");
        assert_int_equal(json_object_get_boolean(json_get(a, "readOnlyHint")), want[i].read_only);
        assert_int_equal(json_object_get_boolean(json_get(a, "destructiveHint")),
                         want[i].destructive);
        assert_int_equal(json_object_get_boolean(json_get(a, "idempotentHint")),
                         want[i].idempotent);
        assert_int_equal(json_object_get_boolean(json_get(a, "openWorldHint")), want[i].open);
        assert_non_null(
            json_get(json_get(json_get(t, "outputSchema"), "properties"), want[i].output_field));
    }
    /* create_session takes the table's names and aliases, and says the
     * operator's session limits. */
    json_object *create = tool_in(l, "create_session");
    json_object *names = json_get(
        json_get(json_get(json_get(create, "inputSchema"), "properties"), "language"), "enum");
    assert_int_equal(
        json_object_array_length(names),
        json_object_array_length(json_get(
            json_get(json_get(json_get(tool_in(l, "execute_code"), "inputSchema"), "properties"),
                     "language"),
            "enum")));
    assert_non_null(strstr(json_object_get_string(json_get(create, "description")),
                           "At most 4 open sessions per client"));
    const char *runs[] = {"run_python_code", "run_js_code", "execute_code", "validate_code"};
    for (size_t i = 0; i < ARRAY_SIZE(runs); i++) {
        json_object *sid = json_get(
            json_get(json_get(tool_in(l, runs[i]), "inputSchema"), "properties"), "session_id");
        assert_int_equal(json_object_get_int(json_get(sid, "maxLength")), 64);
    }
    json_object *req = json_get(json_get(tool_in(l, "execute_code"), "inputSchema"), "required");
    assert_int_equal(json_object_array_length(req), 1);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(req, 0)), "code");
    json_object_put(l);
    tools_env_cleanup(&env);

    /* Off. */
    cfg.max_code_sessions = 0;
    assert_int_equal(tools_env_init(&env, &cfg, NULL, NULL, &err), 0);
    l = list_of(&env, &modern);
    assert_int_equal(json_object_array_length(l), REGISTRY_TOOLS - 4);
    for (size_t i = 0; i < json_object_array_length(l); i++)
        assert_null(strstr(
            json_object_get_string(json_get(json_object_array_get_idx(l, i), "name")), "session"));
    json_object_put(l);
    struct tools_run_args a;
    json_object *args =
        json_tokener_parse("{\"code\":\"x\",\"session_id\":\"0123456789abcdef0123456789abcdef\"}");
    assert_int_equal(tools_parse_args(&env, tools_find("run_python_code"), args, NULL, &a, &err),
                     -1);
    assert_non_null(strstr(err_msg(&err), "code sessions are off"));
    err_clear(&err);
    tools_run_args_release(&a);
    json_object *r = tools_call(&env, tools_find("list_sessions"), NULL, NULL, &modern);
    assert_true(json_object_get_boolean(json_get(r, "isError")));
    assert_non_null(strstr(json_object_get_string(json_get(
                               json_object_array_get_idx(json_get(r, "content"), 0), "text")),
                           "code sessions are off"));
    json_object_put(r);
    json_object_put(args);
    args = json_tokener_parse("{\"language\":\"python\"}");
    r = tools_call(&env, tools_find("create_session"), args, NULL, &modern);
    assert_true(json_object_get_boolean(json_get(r, "isError")));
    json_object_put(r);
    json_object_put(args);
    tools_env_cleanup(&env);
    cfg.max_code_sessions = 16;
}

static void test_validate_code_arguments(void **state)
{
    (void)state;
    struct tools_run_args a;
    struct err err = ERR_INIT;
    assert_int_equal(
        parse("validate_code", "{\"language\":\"javascript\",\"code\":\"let x = (;\"}", &a, &err),
        0);
    assert_true(a.run.check_only);
    assert_ptr_equal(a.run.language, JS);
    assert_int_equal(a.run.code_len, 10);
    /* It takes a sandbox like a run, with the defaults' limits. */
    assert_int_equal(a.run.timeout_ms, cfg.timeout_ms);
    assert_int_equal(a.run.memory_mb, cfg.memory_mb);
    assert_int_equal(parse("execute_code", "{\"language\":\"python\",\"code\":\"x\"}", &a, &err),
                     0);
    assert_false(a.run.check_only);
    expect_invalid("validate_code", "{\"code\":\"x\"}", "'language'");
    expect_invalid("validate_code", "{\"language\":\"python\",\"code\":\"x\",\"stdin\":\"\"}",
                   "unknown argument 'stdin'");
}

/* Every validate_code result matches its own served outputSchema; a
 * check that was made is never isError, one that was not always is. */
static void test_check_result(void **state)
{
    (void)state;
    struct tools_env env;
    struct err err = ERR_INIT;
    assert_int_equal(tools_env_init(&env, &cfg, NULL, NULL, &err), 0);
    struct tools_features modern = {.annotations = true, .structured = true};
    json_object *l = list_of(&env, &modern);
    json_object *t = tool_in(l, "validate_code");
    json_object *schema = json_get(t, "outputSchema");
    json_object *ann = json_get(t, "annotations");
    assert_true(json_object_get_boolean(json_get(ann, "readOnlyHint")));
    assert_true(json_object_get_boolean(json_get(ann, "idempotentHint")));
    assert_false(json_object_get_boolean(json_get(ann, "openWorldHint")));
    /* Not a run: no limits in its description. */
    assert_null(strstr(json_object_get_string(json_get(t, "description")), "Default limits"));
    assert_non_null(
        strstr(json_object_get_string(json_get(tool_in(l, "execute_code"), "description")),
               "Default limits"));

    struct exec_result res;
    exec_result_init(&res);
    res.status = EXEC_OK;
    res.duration_ms = 3.21;
    res.check.present = true;
    res.check.ok = true;
    json_object *r = tools_check_result(&res, PY, &modern);
    json_object *sc = json_get(r, "structuredContent");
    if (schema_validate(schema, sc, 0, &err) < 0)
        fail_msg("valid: %s", err_msg(&err));
    assert_true(json_object_get_boolean(json_get(sc, "valid")));
    assert_true(json_object_is_type(json_get(sc, "error"), json_type_null));
    assert_false(json_object_get_boolean(json_get(r, "isError")));
    json_object_put(r);

    res.check.ok = false;
    res.check.message = xstrdup("SyntaxError: Unexpected token ';' \xff");
    res.check.line = 2;
    res.check.column = 10;
    r = tools_check_result(&res, JS, &modern);
    sc = json_get(r, "structuredContent");
    if (schema_validate(schema, sc, 0, &err) < 0)
        fail_msg("invalid: %s", err_msg(&err));
    assert_false(json_object_get_boolean(json_get(sc, "valid")));
    assert_int_equal(json_object_get_int(json_get(json_get(sc, "error"), "line")), 2);
    assert_int_equal(json_object_get_int(json_get(json_get(sc, "error"), "column")), 10);
    assert_string_equal(json_object_get_string(json_get(json_get(sc, "error"), "message")),
                        "SyntaxError: Unexpected token ';' \xef\xbf\xbd");
    assert_false(json_object_get_boolean(json_get(r, "isError")));
    json_object *text = json_get(json_object_array_get_idx(json_get(r, "content"), 0), "text");
    assert_string_equal(json_object_get_string(text),
                        "invalid javascript: line 2, column 10: SyntaxError: Unexpected token ';' "
                        "\xef\xbf\xbd");
    json_object_put(r);

    res.check.line = 0;
    res.check.column = 0;
    r = tools_check_result(&res, PY, &modern);
    sc = json_get(r, "structuredContent");
    if (schema_validate(schema, sc, 0, &err) < 0)
        fail_msg("no position: %s", err_msg(&err));
    assert_true(json_object_is_type(json_get(json_get(sc, "error"), "line"), json_type_null));
    json_object_put(r);

    /* Old protocol versions: the text only. */
    struct tools_features old = {0};
    r = tools_check_result(&res, PY, &old);
    assert_false(json_object_object_get_ex(r, "structuredContent", NULL));
    json_object_put(r);

    /* No answer from the sandbox: a failed call, no structuredContent. */
    exec_result_free(&res);
    exec_result_init(&res);
    res.status = EXEC_ERROR;
    res.message = xstrdup("engine unreachable");
    r = tools_check_result(&res, PY, &modern);
    assert_true(json_object_get_boolean(json_get(r, "isError")));
    assert_false(json_object_object_get_ex(r, "structuredContent", NULL));
    text = json_get(json_object_array_get_idx(json_get(r, "content"), 0), "text");
    assert_string_equal(json_object_get_string(text),
                        "could not check the code (error): engine unreachable");
    json_object_put(r);
    struct tools_run_args a = {.run = {.language = PY, .check_only = true}};
    r = tools_busy_result(&a, &modern, "every run slot is taken", 1.0);
    assert_true(json_object_get_boolean(json_get(r, "isError")));
    assert_false(json_object_object_get_ex(r, "structuredContent", NULL));
    json_object_put(r);
    exec_result_free(&res);
    json_object_put(l);
    tools_env_cleanup(&env);
}

/* list_languages: answered without a run, for every protocol version; the
 * same JSON as text and as structuredContent, valid against its own
 * outputSchema; no arguments taken. */
static void test_list_languages(void **state)
{
    (void)state;
    struct tools_env env;
    struct err err = ERR_INIT;
    assert_int_equal(tools_env_init(&env, &cfg, NULL, NULL, &err), 0);
    assert_true(tools_answers_at_once(tools_find("list_languages")));
    assert_false(tools_answers_at_once(tools_find("validate_code")));
    assert_false(tools_answers_at_once(tools_find("nope")));
    struct tools_features modern = {.annotations = true, .structured = true};
    json_object *l = list_of(&env, &modern);
    json_object *t = tool_in(l, "list_languages");
    json_object *a = json_get(t, "annotations");
    assert_true(json_object_get_boolean(json_get(a, "readOnlyHint")));
    assert_true(json_object_get_boolean(json_get(a, "idempotentHint")));
    assert_false(json_object_get_boolean(json_get(a, "openWorldHint")));
    assert_false(json_object_get_boolean(json_get(a, "destructiveHint")));
    assert_null(strstr(json_object_get_string(json_get(t, "description")), "Default limits"));
    json_object *schema = json_get(t, "outputSchema");

    json_object *r = tools_call(&env, tools_find("list_languages"), NULL, NULL, &modern);
    assert_false(json_object_get_boolean(json_get(r, "isError")));
    json_object *sc = json_get(r, "structuredContent");
    if (schema_validate(schema, sc, 0, &err) < 0)
        fail_msg("structuredContent: %s", err_msg(&err));
    json_object *text = json_get(json_object_array_get_idx(json_get(r, "content"), 0), "text");
    json_object *again = json_tokener_parse(json_object_get_string(text));
    assert_true(json_object_equal(again, sc));
    json_object_put(again);
    json_object *py = json_object_array_get_idx(json_get(sc, "languages"), 0);
    assert_string_equal(json_object_get_string(json_get(py, "language")), "python");
    assert_true(json_object_is_type(json_get(py, "version"), json_type_null));
    assert_string_equal(json_object_get_string(json_get(py, "version_error")),
                        "no sandbox backend to read it from");
    assert_string_equal(json_object_get_string(json_get(py, "network")), "none");
    json_object *tools = json_get(py, "tools");
    assert_int_equal(json_object_array_length(tools), 5);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(tools, 0)),
                        "run_python_code");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(tools, 3)),
                        "create_session");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(tools, 4)),
                        "install_packages");
    assert_int_equal(json_object_get_int64(json_get(json_get(sc, "limits"), "timeout_ms")),
                     cfg.timeout_ms);
    json_object_put(r);

    /* Older clients: the same JSON, as text only. */
    struct tools_features old = {0};
    r = tools_answer(&env, tools_find("list_languages"), NULL, NULL, &old);
    assert_false(json_object_get_boolean(json_get(r, "isError")));
    assert_false(json_object_object_get_ex(r, "structuredContent", NULL));
    text = json_get(json_object_array_get_idx(json_get(r, "content"), 0), "text");
    again = json_tokener_parse(json_object_get_string(text));
    if (schema_validate(schema, again, 0, &err) < 0)
        fail_msg("text: %s", err_msg(&err));
    json_object_put(again);
    json_object_put(r);

    /* {} and null arguments are none; anything else is refused. */
    json_object *args = json_tokener_parse("{}");
    r = tools_answer(&env, tools_find("list_languages"), args, NULL, &modern);
    assert_false(json_object_get_boolean(json_get(r, "isError")));
    json_object_put(r);
    json_object_put(args);
    args = json_tokener_parse("{\"language\":\"python\"}");
    r = tools_answer(&env, tools_find("list_languages"), args, NULL, &modern);
    assert_true(json_object_get_boolean(json_get(r, "isError")));
    assert_string_equal(json_object_get_string(
                            json_get(json_object_array_get_idx(json_get(r, "content"), 0), "text")),
                        "Invalid arguments for list_languages: unknown argument 'language'");
    json_object_put(r);
    json_object_put(args);

    /* It runs nothing, so it never becomes a run. */
    struct tools_run_args ra;
    assert_int_equal(parse("list_languages", "{}", &ra, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    err_clear(&err);
    tools_run_args_release(&ra);
    json_object *bad = NULL;
    assert_int_equal(tools_prepare(&ENV, tools_find("list_languages"), NULL, NULL, &ra, &bad), -1);
    assert_true(json_object_get_boolean(json_get(bad, "isError")));
    json_object_put(bad);
    json_object_put(l);
    tools_env_cleanup(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_language_tools),
        cmocka_unit_test(test_execute_code),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_prepare_makes_the_run),
        cmocka_unit_test(test_variables_argument),
        cmocka_unit_test(test_invalid_result_is_utf8),
        cmocka_unit_test(test_result_shape),
        cmocka_unit_test(test_result_matches_output_schema),
        cmocka_unit_test(test_schema_and_code_agree),
        cmocka_unit_test(test_list_language_enum),
        cmocka_unit_test(test_tools_by_runner),
        cmocka_unit_test(test_execute_code_languages),
        cmocka_unit_test(test_compile_error_result),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_validate_code_arguments),
        cmocka_unit_test(test_check_result),
        cmocka_unit_test(test_list_languages),
        cmocka_unit_test(test_session_tools_listed),
    };
    return cmocka_run_group_tests_name("tools", tests, setup, teardown);
}
