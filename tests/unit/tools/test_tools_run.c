/* A tool call from its arguments to its CallToolResult, through the
 * sandbox layer, over the fake backend (tests/fake_backend): what the
 * backend is asked for, what comes back to the client, and that no
 * sandbox outlives its run, when the program ends well, fails, runs out
 * of time or memory, and when the backend is down or its stream breaks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "tools/tools.h"
#include "unit/server_rig.h"

#define GUARD 20000 /* ms: hang guards only */

struct fixture {
    struct rig g;
    struct tools_env env;
};

static int setup(void **state)
{
    struct fixture *f = xcalloc(1, sizeof(*f));
    struct err err = ERR_INIT;
    rig_init(&f->g, RIG_UP);
    rig_start(&f->g);
    if (tools_env_init(&f->env, &f->g.cfg, f->g.langs, f->g.exec, &err) < 0)
        fail_msg("tools_env_init: %s", err_msg(&err));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    tools_env_cleanup(&f->env);
    rig_fini(&f->g);
    free(f);
    return 0;
}

static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* Calls tool with args (JSON text); the caller puts the result. */
static json_object *call(struct fixture *f, const char *tool, const char *args)
{
    json_object *a = json_tokener_parse(args);
    assert_non_null(a);
    const struct tools_features feat = {.annotations = true, .structured = true};
    json_object *r = tools_call(&f->env, tools_find(tool), a, &feat);
    json_object_put(a);
    assert_non_null(r);
    return r;
}

static const char *field(json_object *r, const char *key)
{
    const char *v = json_object_get_string(get(get(r, "structuredContent"), key));
    if (!v)
        fail_msg("no structuredContent.%s in %s", key, json_object_to_json_string(r));
    return v;
}

/* Every sandbox the call made is gone once it answered. */
static void none_left(struct fixture *f)
{
    for (int i = 0; i < GUARD / 10 && fake_backend_live(f->g.fake) > 0; i++)
        usleep(10000);
    assert_int_equal(fake_backend_live(f->g.fake), 0);
}

static void test_run_ok(void **state)
{
    struct fixture *f = *state;
    const struct fake_program p = {.out = "hello\n", .out_len = 6, .err = "warn\n", .err_len = 5};
    fake_backend_set_program(f->g.fake, &p);
    json_object *r = call(f, "run_python_code", "{\"code\":\"print('hello')\"}");
    assert_false(json_object_get_boolean(get(r, "isError")));
    assert_string_equal(field(r, "status"), "ok");
    assert_string_equal(field(r, "stdout"), "hello\n");
    assert_string_equal(field(r, "stderr"), "warn\n");
    assert_int_equal(json_object_get_int(get(get(r, "structuredContent"), "exit_code")), 0);
    json_object_put(r);

    /* What the sandbox layer asked the backend for, in its own terms. */
    char id[FAKE_BACKEND_ID_MAX + 1];
    struct fake_sandbox_info in;
    assert_true(fake_backend_last_id(f->g.fake, id, sizeof(id)));
    assert_true(fake_backend_info(f->g.fake, id, &in));
    const struct langtable_lang *py = test_lang(f->g.langs, "python");
    assert_string_equal(in.image, py->image);
    assert_true(in.code_received);
    assert_string_equal(in.code, "print('hello')");
    assert_false(in.network);
    assert_int_equal(in.memory_bytes, f->g.cfg.memory_mb << 20);
    assert_true(in.uid > 0);
    assert_true(in.expires > 0);
    none_left(f);
}

static void test_run_fails(void **state)
{
    struct fixture *f = *state;
    const struct fake_program p = {.err = "Traceback\n", .err_len = 10, .exit_code = 1};
    fake_backend_set_program(f->g.fake, &p);
    json_object *r = call(f, "run_python_code", "{\"code\":\"1/0\"}");
    /* The program ran to its end: status ok, its failure in exit_code. */
    assert_true(json_object_get_boolean(get(r, "isError")));
    assert_string_equal(field(r, "status"), "ok");
    assert_string_equal(field(r, "stderr"), "Traceback\n");
    assert_int_equal(json_object_get_int(get(get(r, "structuredContent"), "exit_code")), 1);
    json_object_put(r);
    none_left(f);
}

static void test_run_out_of_time_and_memory(void **state)
{
    struct fixture *f = *state;
    struct fake_program p = {.out = "working\n", .out_len = 8, .run_ms = FAKE_RUN_FOREVER};
    fake_backend_set_program(f->g.fake, &p);
    json_object *r =
        call(f, "execute_code",
             "{\"language\":\"python\",\"code\":\"while True: pass\",\"timeout_ms\":300}");
    assert_string_equal(field(r, "status"), "timeout");
    json_object_put(r);
    none_left(f);

    p = (struct fake_program){.end = FAKE_END_EXIT, .exit_code = 137, .oom_killed = true};
    fake_backend_set_program(f->g.fake, &p);
    r = call(f, "run_python_code", "{\"code\":\"x = ' ' * 10**10\"}");
    assert_string_equal(field(r, "status"), "oom");
    json_object_put(r);
    none_left(f);
}

/* The backend's own words reach the client; nothing is left behind. */
static void test_backend_trouble(void **state)
{
    struct fixture *f = *state;
    fake_backend_set_outage(f->g.fake, true);
    json_object *r = call(f, "run_python_code", "{\"code\":\"print(1)\"}");
    fake_backend_set_outage(f->g.fake, false);
    assert_true(json_object_get_boolean(get(r, "isError")));
    assert_string_equal(field(r, "status"), "error");
    if (!strstr(field(r, "message"), "fake backend: down"))
        fail_msg("message: %s", field(r, "message"));
    json_object_put(r);

    const struct fake_program cut = {.out = "partial\n", .out_len = 8, .end = FAKE_END_CUT};
    fake_backend_set_program(f->g.fake, &cut);
    r = call(f, "run_python_code", "{\"code\":\"print(1)\"}");
    assert_true(json_object_get_boolean(get(r, "isError")));
    assert_string_equal(field(r, "status"), "error");
    if (!strstr(field(r, "message"), "middle of a frame"))
        fail_msg("message: %s", field(r, "message"));
    json_object_put(r);
    none_left(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_run_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_out_of_time_and_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backend_trouble, setup, teardown),
    };
    return cmocka_run_group_tests_name("tools_run", tests, NULL, NULL);
}
