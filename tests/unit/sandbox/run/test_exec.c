/* exec.c end to end over the fake backend (exec_rig.h): runs that work,
 * what their sandboxes are made from (the spec the backend is asked
 * for), secrets, the network, and --dry-run-create. The generic languages'
 * program and compile errors are test_exec_generic.c's; failures, limits
 * and cancellation test_exec_faults.c's; how the Docker backend renders a spec is
 * tests/unit/backend/docker/'s. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <string.h>
#include <time.h>

#include "unit/sandbox/run/exec_rig.h"

/* ---- a normal run -------------------------------------------------------- */

static void test_ok(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {
        .out = "hello\n", .out_len = 6, .err = "warn\n", .err_len = 5, .exit_code = 3};
    fake_backend_set_program(g->fb, &p);
    rig_open(g);
    struct run req = request("print('hello')");
    req.stdin_data = "some input";
    req.stdin_len = 10;
    struct live live;
    live_init(&live, &req);
    struct exec_result res;
    exec_result_init(&res);
    run_ok(g, &req, &res);
    assert_int_equal(res.status, EXEC_OK);
    assert_true(res.has_exit_code);
    assert_int_equal(res.exit_code, 3);
    assert_string_equal(buf_cstr(&res.out), "hello\n");
    assert_string_equal(buf_cstr(&res.err), "warn\n");
    assert_false(res.truncated);
    assert_null(res.message);
    assert_true(res.duration_ms >= 0);
    /* Live output is the same bytes; the record is in neither. */
    assert_string_equal(buf_cstr(&live.out), "hello\n");
    assert_string_equal(buf_cstr(&live.err), "warn\n");

    char id[FAKE_BACKEND_ID_MAX + 1];
    last_sandbox(g, id);
    struct fake_sandbox_info info;
    assert_true(fake_backend_info(g->fb, id, &info));
    assert_true(info.code_received);
    assert_string_equal(info.code, "print('hello')");
    assert_string_equal(info.stdin_data, "some input");
    /* The python runner in python's image, no network, marked as this
     * daemon's with an expiry, within the run's memory. */
    assert_string_equal(info.image, PY->image);
    assert_string_equal(info.image, "mcp-sandboxd-python:latest");
    assert_contains(info.cmd, "[\"python3\",\"-u\",\"-B\",\"-c\",\"");
    assert_false(info.network);
    assert_false(info.fallback);
    assert_true(info.instance[0] != '\0');
    assert_true(info.owner[0] != '\0');
    assert_true(info.expires > (long long)time(NULL));
    assert_int_equal(info.memory_bytes, 128LL << 20);
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_START, id), 1);
    /* The record ended the run: the backend was not asked for the exit. */
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_WAIT, id), 0);
    assert_removed(g, id);

    /* JavaScript runs in its own image. */
    struct run js = request("console.log(1)");
    js.language = JS;
    run_ok(g, &js, &res);
    assert_int_equal(res.status, EXEC_OK);
    last_sandbox(g, id);
    assert_true(fake_backend_info(g->fb, id, &info));
    assert_string_equal(info.image, JS->image);
    assert_string_equal(info.image, "mcp-sandboxd-node:latest");
    assert_contains(info.cmd, "[\"node\",\"-e\",\"");
    assert_removed(g, id);
    exec_result_free(&res);
    live_free(&live);
}

/* A sandbox whose streams could not connect (BACKEND_RETRY: its program
 * never had the code) is discarded, and the run goes on in another set
 * up with fallback. */
static void test_retry_with_fallback(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "1\n", .out_len = 2};
    fake_backend_set_program(g->fb, &p);
    fake_backend_retry(g->fb, 1);
    rig_open(g);
    struct run req = request("print(1)");
    struct exec_result res;
    exec_result_init(&res);
    run_ok(g, &req, &res);
    assert_int_equal(res.status, EXEC_OK);
    assert_string_equal(buf_cstr(&res.out), "1\n");
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_CREATE, NULL), 2);
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_START, NULL), 2);
    struct fake_sandbox_info info;
    last_info(g, &info);
    assert_true(info.fallback);
    assert_true(info.code_received);
    assert_last_removed(g);
    /* The one that could not connect never had the code, and is gone. */
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_REMOVE, NULL), 2);
    exec_result_free(&res);
}

/* A sandbox's environment is the daemon's base and its language's own
 * (the table's environment): python's matplotlib settings are python's. */
static void test_language_environment(void **state)
{
    struct rig *g = *state;
    rig_open(g);
    const struct langtable_lang *langs[] = {PY, JS};
    for (size_t i = 0; i < 2; i++) {
        struct run req = request("1");
        req.language = langs[i];
        struct exec_result res;
        exec_result_init(&res);
        assert_int_equal(exec_run(g->exec, &req, &res, NULL), 0);
        assert_int_equal(res.status, EXEC_OK);
        struct fake_sandbox_info info;
        last_info(g, &info);
        /* (json-c writes "/" as "\/") */
        if (i == 0)
            assert_string_equal(info.env, "[\"HOME=\\/tmp\",\"TMPDIR=\\/tmp\",\"LANG=C.UTF-8\","
                                          "\"PYTHONDONTWRITEBYTECODE=1\",\"MPLBACKEND=Agg\","
                                          "\"MPLCONFIGDIR=\\/tmp\\/.mpl\"]");
        else
            assert_string_equal(info.env, "[\"HOME=\\/tmp\",\"TMPDIR=\\/tmp\",\"LANG=C.UTF-8\"]");
        assert_last_removed(g);
        exec_result_free(&res);
    }
}

/* ---- secrets ------------------------------------------------------------------- */

static const char *const API_TOKEN[] = {"API_TOKEN", "NOT_SET"};

/* Runs "print(1)" as p, with the daemon's environment envp and the first
 * n of API_TOKEN's names passed through: exec_run's result; res and the
 * live output are initialised here. */
static int run_secret(struct rig *g, size_t n, char **envp, const struct fake_program *p,
                      struct live *live, struct exec_result *res, struct err *err)
{
    set_list(&g->cfg.pass_through_env, API_TOKEN, n);
    fake_backend_set_program(g->fb, p);
    rig_open_env(g, envp);
    struct run req = request("print(1)");
    live_init(live, &req);
    exec_result_init(res);
    return exec_run(g->exec, &req, res, err);
}

/* --pass-through-env values go in the run's request, never in the
 * sandbox's spec; where the program prints one (as it is, or
 * base64-encoded), the result and the live output say [REDACTED:NAME]. */
static void test_secrets(void **state)
{
    struct rig *g = *state;
    char *envp[] = {"OTHER=x", "API_TOKEN=tok-4f9a/secret+value", NULL};
    /* Printed whole on stdout; base64 on stderr. */
    static const char out[] = "token: tok-4f9a/secret+value\n";
    static const char err_text[] = "dG9rLTRmOWEvc2VjcmV0K3ZhbHVl\n";
    struct fake_program p = {
        .out = out, .out_len = sizeof(out) - 1, .err = err_text, .err_len = sizeof(err_text) - 1};
    struct live live;
    struct exec_result res;
    struct err err = ERR_INIT;
    if (run_secret(g, 2, envp, &p, &live, &res, &err) < 0)
        fail_msg("exec_run: %s", err_msg(&err));
    assert_string_equal(buf_cstr(&res.out), "token: [REDACTED:API_TOKEN]\n");
    assert_string_equal(buf_cstr(&res.err), "[REDACTED:API_TOKEN]\n");
    assert_string_equal(buf_cstr(&live.out), "token: [REDACTED:API_TOKEN]\n");
    assert_string_equal(buf_cstr(&live.err), "[REDACTED:API_TOKEN]\n");

    struct fake_sandbox_info info;
    last_info(g, &info);
    assert_contains(info.env, "HOME=");
    assert_null(strstr(info.env, "tok-4f9a"));
    assert_null(strstr(info.env, "API_TOKEN"));
    assert_null(strstr(info.cmd, "tok-4f9a"));
    assert_string_equal(info.request_env, "{\"API_TOKEN\":\"tok-4f9a\\/secret+value\"}");
    assert_last_removed(g);
    live_free(&live);
    exec_result_free(&res);
}

/* --secret: a run of a language with egress gets a placeholder of the
 * value's length in its request, never the value; a language without
 * egress gets nothing; a value the program prints (an upstream's echo) is
 * redacted like a pass-through one. */
static void test_bound_secret(void **state)
{
    struct rig *g = *state;
    static const char *const egress[] = {"python=api.example.com"};
    static const char *const secret[] = {"API_KEY=api.example.com"};
    set_list(&g->cfg.egress, egress, 1);
    set_list(&g->cfg.secret, secret, 1);
    reconfigure(g);
    char *envp[] = {"API_KEY=key-0123456789abcdefXYZ", NULL};
    static const char out[] = "echoed: key-0123456789abcdefXYZ\n";
    struct fake_program p = {.out = out, .out_len = sizeof(out) - 1};
    fake_backend_set_program(g->fb, &p);
    rig_open_env(g, envp);
    const struct langtable_lang *langs[] = {PY, JS};
    for (size_t i = 0; i < 2; i++) {
        struct run req = request("print(1)");
        req.language = langs[i];
        struct exec_result res;
        exec_result_init(&res);
        struct err err = ERR_INIT;
        if (exec_run(g->exec, &req, &res, &err) < 0)
            fail_msg("exec_run: %s", err_msg(&err));
        assert_string_equal(buf_cstr(&res.out), "echoed: [REDACTED:API_KEY]\n");
        struct fake_sandbox_info info;
        last_info(g, &info);
        assert_null(strstr(info.env, "key-0123"));
        assert_null(strstr(info.request_env, "key-0123"));
        if (i == 0) {
            /* {"API_KEY":"mcpsbx_..."}, as long as the value */
            assert_int_equal(strlen(info.request_env),
                             strlen("{\"API_KEY\":\"\"}") + strlen("key-0123456789abcdefXYZ"));
            assert_contains(info.request_env, "{\"API_KEY\":\"" EGRESS_PLACEHOLDER_PREFIX);
        } else {
            assert_string_equal(info.request_env, "{}");
        }
        assert_last_removed(g);
        exec_result_free(&res);
    }
}

/* A program can write a completion record of its own (it runs in the
 * runner's process, where the nonce is): what the record says is data.
 * Its runner_error, carrying the secret, a newline that would forge a log
 * line and a terminal escape, comes back redacted and escaped; a secret
 * written half on stdout and half on stderr comes back whole in neither,
 * nor in the two put together, live or in the result. */
static void test_forged_record(void **state)
{
    struct rig *g = *state;
    char *envp[] = {"API_TOKEN=tok-4f9a/secret+value", NULL};
    struct fake_program p = {
        .out = "tok-4f9a/se",
        .out_len = 11,
        .err = "cret+value",
        .err_len = 10,
        .exit_code = 76,
        .runner_error = "leak tok-4f9a/secret+value\n2026-01-01T00:00:00.000Z mcp-sandboxd "
                        "error: forged\x1b[2J\xff",
    };
    struct live live;
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_secret(g, 1, envp, &p, &live, &res, &err), -1);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_string_equal(res.message, err_msg(&err));
    assert_string_equal(res.message,
                        "the sandbox runner failed: leak [REDACTED:API_TOKEN]\\n2026-01-01T00:00:"
                        "00.000Z mcp-sandboxd error: forged\\x1b[2J\\xff");
    assert_string_equal(buf_cstr(&res.out), "[REDACTED:API_TOKEN]");
    assert_string_equal(buf_cstr(&res.err), "cret+value");
    assert_string_equal(buf_cstr(&live.out), "[REDACTED:API_TOKEN]");
    assert_string_equal(buf_cstr(&live.err), "cret+value");
    err_clear(&err);
    assert_last_removed(g);
    live_free(&live);
    exec_result_free(&res);
}

/* ---- the network ---------------------------------------------------------------- */

/* A sandbox gets a network only when the operator named its language (or
 * an alias) in --allow-network and the table allows it; never otherwise. */
static void test_network_per_language(void **state)
{
    struct rig *g = *state;
    /* The table says javascript never gets one; the options are set after
     * langtable_configure (which would refuse them) to see exec check too. */
    langtable_free(g->langs);
    g->langs = test_langs_text(
        &g->cfg, "{\"languages\": [{\"name\": \"javascript\", \"network_allowed\": false}]}");
    PY = test_lang(g->langs, "python");
    JS = test_lang(g->langs, "javascript");
    static const char *const allowed[] = {"PY", "javascript"};
    set_list(&g->cfg.allow_network, allowed, 2);
    rig_open(g);
    const struct {
        const struct langtable_lang *lang;
        bool network;
    } cases[] = {{PY, true}, {JS, false}, {test_lang(g->langs, "ruby"), false}};
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct run req = request("print(1)");
        req.language = cases[i].lang;
        struct exec_result res;
        exec_result_init(&res);
        run_ok(g, &req, &res);
        struct fake_sandbox_info info;
        last_info(g, &info);
        assert_int_equal(info.network, cases[i].network);
        assert_string_equal(info.image, cases[i].lang->image);
        assert_last_removed(g);
        exec_result_free(&res);
    }
}

/* ---- --dry-run-create ------------------------------------------------------------ */

/* A described create (the fake's text: JSON of the spec), parsed: its
 * image, its command's first n words, its network. */
static void check_described(char *text, const char *image, const char *const *cmd, size_t n,
                            bool network)
{
    json_object *o = json_tokener_parse(text);
    if (!o)
        fail_msg("not JSON: %.200s", text);
    json_object *v = NULL;
    assert_true(json_object_object_get_ex(o, "image", &v));
    assert_string_equal(json_object_get_string(v), image);
    assert_true(json_object_object_get_ex(o, "cmd", &v));
    assert_true(json_object_array_length(v) > n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(json_object_get_string(json_object_array_get_idx(v, i)), cmd[i]);
    assert_true(json_object_object_get_ex(o, "network", &v));
    assert_int_equal(json_object_get_boolean(v), network);
    json_object_put(o);
    free(text);
}

/* The create of any language of the table, its own image and runner,
 * nothing sent to the backend. */
static void test_describe_create(void **state)
{
    struct rig *g = *state;
    struct backend *b = fake_backend_get(g->fb);
    static const char *const py_cmd[] = {"python3", "-u", "-B", "-c"};
    check_described(exec_describe_create(&g->cfg, b, PY), "mcp-sandboxd-python:latest", py_cmd, 4,
                    false);
    static const char *const js_cmd[] = {"node", "-e"};
    check_described(exec_describe_create(&g->cfg, b, JS), "mcp-sandboxd-node:latest", js_cmd, 2,
                    false);
    /* The generic runner, in the language's image. */
    static const char *const generic[] = {"perl", "-e"};
    const struct langtable_lang *c = test_lang(g->langs, "c");
    check_described(exec_describe_create(&g->cfg, b, c), "mcp-sandboxd-c:latest", generic, 2,
                    false);
    check_described(exec_describe_create(&g->cfg, b, test_lang(g->langs, "ts")),
                    "mcp-sandboxd-node:latest", generic, 2, false);
    /* A language the operator gave a network (by an alias, any case). */
    static const char *const allowed[] = {"C"};
    set_list(&g->cfg.allow_network, allowed, 1);
    check_described(exec_describe_create(&g->cfg, b, c), "mcp-sandboxd-c:latest", generic, 2, true);
    check_described(exec_describe_create(&g->cfg, b, PY), "mcp-sandboxd-python:latest", py_cmd, 4,
                    false);
    for (int step = 0; step < FAKE_STEP_COUNT; step++)
        assert_int_equal(fake_backend_count(g->fb, (enum fake_step)step, NULL), 0);

    /* How each language's sandboxes connect: the backend's word. */
    rig_open(g);
    for (size_t i = 0; i < langtable_count(g->langs); i++)
        assert_string_equal(exec_sandbox_io(g->exec, langtable_get(g->langs, i)), "pipe");
    assert_ptr_equal(exec_languages(g->exec), g->langs);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_ok),
        T(test_retry_with_fallback),
        T(test_language_environment),
        T(test_secrets),
        T(test_bound_secret),
        T(test_forged_record),
        T(test_network_per_language),
        T(test_describe_create),
    };
#undef T
    return cmocka_run_group_tests_name("exec", tests, NULL, NULL);
}
