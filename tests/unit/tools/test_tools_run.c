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

#include "tools/environment.h"
#include "tools/session_tools.h"
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
    json_object *r = tools_call(&f->env, tools_find(tool), a, NULL, &feat);
    json_object_put(a);
    assert_non_null(r);
    return r;
}

static const struct tools_caller ALICE = {"0123456789abcdef0123456789abcdef", "stdio", false};
static const struct tools_caller BOB = {"fedcba9876543210fedcba9876543210", "stdio", false};

/* Calls tool for who with args (JSON text, printf-style); the caller puts
 * the result. */
__attribute__((format(printf, 4, 5))) static json_object *
call_as(struct fixture *f, const struct tools_caller *who, const char *tool, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *args = xvasprintf(fmt, ap);
    va_end(ap);
    json_object *a = json_tokener_parse(args);
    free(args);
    assert_non_null(a);
    const struct tools_features feat = {.annotations = true, .structured = true};
    json_object *r = tools_call(&f->env, tools_find(tool), a, who, &feat);
    json_object_put(a);
    assert_non_null(r);
    return r;
}

static const char *text_of(json_object *r)
{
    return json_object_get_string(get(json_object_array_get_idx(get(r, "content"), 0), "text"));
}

/* r is an error whose text holds needle. */
static void assert_refused(json_object *r, const char *needle)
{
    assert_true(json_object_get_boolean(get(r, "isError")));
    if (!strstr(text_of(r), needle))
        fail_msg("'%s' does not mention '%s'", text_of(r), needle);
    json_object_put(r);
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

/* A code session through the tools: created (one sandbox, the session's
 * memory), two calls in it (the second without a language), the
 * session's timeout for a call that gives none (interrupted, the session
 * lives), the checks on a call in it, listed for its owner only, the
 * environment's counts, closed; then an id that is not the caller's reads
 * the same however it came to be. */
static void test_session_calls(void **state)
{
    struct fixture *f = *state;
    struct fake_program p = {.session = true, .n_cells = 3};
    p.cells[2] = FAKE_CELL_UNTIL_INTERRUPT;
    fake_backend_set_program(f->g.fake, &p);
    json_object *r =
        call_as(f, &ALICE, "create_session",
                "{\"language\":\"py\",\"name\":\"work\",\"memory_mb\":256,\"timeout_ms\":500}");
    if (json_object_get_boolean(get(r, "isError")))
        fail_msg("create_session: %s", text_of(r));
    char id[64];
    snprintf(id, sizeof(id), "%s", field(r, "session_id"));
    assert_int_equal(strlen(id), 32);
    assert_string_equal(field(r, "language"), "python");
    assert_string_equal(field(r, "name"), "work");
    assert_string_equal(field(r, "persistence"), "process");
    assert_int_equal(json_object_get_int64(get(get(r, "structuredContent"), "idle_timeout_ms")),
                     f->g.cfg.code_session_idle_ms);
    const char *expires = field(r, "expires_at");
    assert_int_equal(strlen(expires), 24);
    assert_int_equal(expires[23], 'Z');
    json_object_put(r);

    r = call_as(f, &ALICE, "run_python_code", "{\"code\":\"first\",\"session_id\":\"%s\"}", id);
    assert_false(json_object_get_boolean(get(r, "isError")));
    assert_string_equal(field(r, "stdout"), "first");
    assert_string_equal(field(r, "session_id"), id);
    assert_false(json_object_object_get_ex(get(r, "structuredContent"), "session_lost", NULL));
    json_object_put(r);
    r = call_as(f, &ALICE, "execute_code",
                "{\"code\":\"second\",\"memory_mb\":256,\"session_id\":\"%s\"}", id);
    assert_false(json_object_get_boolean(get(r, "isError")));
    assert_string_equal(field(r, "stdout"), "second");
    assert_string_equal(field(r, "language"), "python");
    json_object_put(r);
    /* No timeout given: the session's 500 ms; interrupted, it lives on. */
    r = call_as(f, &ALICE, "execute_code",
                "{\"language\":\"python\",\"code\":\"sleep\",\"session_id\":\"%s\"}", id);
    assert_string_equal(field(r, "status"), "timeout");
    assert_false(json_object_object_get_ex(get(r, "structuredContent"), "session_lost", NULL));
    json_object_put(r);
    /* All in one sandbox, of the session's memory. */
    assert_int_equal(fake_backend_count(f->g.fake, FAKE_STEP_CREATE, NULL), 1);
    char sb[FAKE_BACKEND_ID_MAX + 1];
    struct fake_sandbox_info info;
    assert_true(fake_backend_last_id(f->g.fake, sb, sizeof(sb)));
    assert_true(fake_backend_info(f->g.fake, sb, &info));
    assert_int_equal(info.memory_bytes, 256LL << 20);

    /* The checks, in order, none reaching the sandbox. */
    assert_refused(call_as(f, &ALICE, "run_js_code", "{\"code\":\"x\",\"session_id\":\"%s\"}", id),
                   "run_js_code needs a javascript session; this one is python");
    assert_refused(call_as(f, &ALICE, "execute_code",
                           "{\"language\":\"js\",\"code\":\"x\",\"session_id\":\"%s\"}", id),
                   "this session is python");
    assert_refused(call_as(f, &ALICE, "execute_code",
                           "{\"code\":\"x\",\"memory_mb\":512,\"session_id\":\"%s\"}", id),
                   "memory_mb: this session has 256 MiB");
    assert_refused(call_as(f, &ALICE, "execute_code", "{\"code\":\"x\"}"),
                   "execute_code needs a language, or a session_id");
    /* Another daemon's handle: refused, naming that daemon. */
    assert_refused(
        call_as(f, &ALICE, "run_python_code", "{\"code\":\"x\",\"session_id\":\"beta.%s\"}", id),
        SESSIONS_ELSEWHERE ", \"beta\"");
    assert_refused(call_as(f, &ALICE, "close_session", "{\"session_id\":\"beta.%s\"}", id),
                   SESSIONS_ELSEWHERE ", \"beta\"");
    assert_refused(
        call_as(f, &ALICE, "create_session", "{\"language\":\"python\",\"name\":\"a\\nb\"}"),
        "control characters");

    /* Listed for its owner, counted in the environment. */
    r = call_as(f, &ALICE, "list_sessions", "{}");
    json_object *list = get(get(r, "structuredContent"), "sessions");
    assert_int_equal(json_object_array_length(list), 1);
    json_object *s0 = json_object_array_get_idx(list, 0);
    assert_string_equal(json_object_get_string(get(s0, "session_id")), id);
    assert_string_equal(json_object_get_string(get(s0, "name")), "work");
    assert_false(json_object_get_boolean(get(s0, "busy")));
    json_object_put(r);
    r = call_as(f, &BOB, "list_sessions", "{}");
    assert_int_equal(json_object_array_length(get(get(r, "structuredContent"), "sessions")), 0);
    json_object_put(r);
    json_object *env = tools_environment_json(&f->env, &BOB);
    json_object *cs = get(env, "code_sessions");
    assert_int_equal(json_object_get_int64(get(cs, "max")), f->g.cfg.max_code_sessions);
    assert_int_equal(json_object_get_int64(get(cs, "active")), 1);
    assert_int_equal(json_object_get_int64(get(cs, "yours")), 0);
    json_object_put(env);

    /* Another owner's id and a made-up one read the same, byte for byte. */
    json_object *theirs =
        call_as(f, &BOB, "run_python_code", "{\"code\":\"x\",\"session_id\":\"%s\"}", id);
    json_object *made_up =
        call_as(f, &BOB, "run_python_code", "{\"code\":\"x\",\"session_id\":\"%032d\"}", 7);
    json_object *malformed =
        call_as(f, &BOB, "run_python_code", "{\"code\":\"x\",\"session_id\":\"nope\"}");
    assert_string_equal(text_of(theirs), "no such session");
    assert_string_equal(json_object_to_json_string(theirs), json_object_to_json_string(made_up));
    assert_string_equal(json_object_to_json_string(theirs), json_object_to_json_string(malformed));
    json_object *close_theirs = call_as(f, &BOB, "close_session", "{\"session_id\":\"%s\"}", id);
    assert_string_equal(text_of(close_theirs), "no such session");
    assert_true(json_object_get_boolean(get(close_theirs, "isError")));

    r = call_as(f, &ALICE, "close_session", "{\"session_id\":\"%s\"}", id);
    assert_false(json_object_get_boolean(get(r, "isError")));
    assert_true(json_object_get_boolean(get(get(r, "structuredContent"), "closed")));
    json_object_put(r);
    assert_true(fake_backend_wait_removed(f->g.fake, sb, GUARD));
    /* Closed: its own owner now reads what everyone else did. */
    r = call_as(f, &ALICE, "run_python_code", "{\"code\":\"x\",\"session_id\":\"%s\"}", id);
    assert_string_equal(json_object_to_json_string(r), json_object_to_json_string(theirs));
    json_object_put(r);
    r = call_as(f, &ALICE, "close_session", "{\"session_id\":\"%s\"}", id);
    assert_string_equal(json_object_to_json_string(r), json_object_to_json_string(close_theirs));
    json_object_put(r);
    json_object_put(theirs);
    json_object_put(made_up);
    json_object_put(malformed);
    json_object_put(close_theirs);
    none_left(f);
}

/* A session whose sandbox ends while idle: its owner's next call says so
 * once (session_lost and why), then the id is no session at all; an
 * owner's end takes the rest. */
static void test_session_lost_and_owner_end(void **state)
{
    struct fixture *f = *state;
    struct fake_program p = {.session = true, .n_cells = 1, .exit_code = 3};
    p.cells[0] = FAKE_CELL_THEN_EXIT;
    fake_backend_set_program(f->g.fake, &p);
    json_object *r = call_as(f, &ALICE, "create_session", "{\"language\":\"python\"}");
    char id[64];
    snprintf(id, sizeof(id), "%s", field(r, "session_id"));
    assert_string_equal(field(r, "name"), "");
    json_object_put(r);
    r = call_as(f, &ALICE, "run_python_code", "{\"code\":\"bye\",\"session_id\":\"%s\"}", id);
    assert_string_equal(field(r, "stdout"), "bye");
    json_object_put(r);
    /* The watcher finds it gone: no longer listed. */
    size_t n = 1;
    for (int i = 0; i < GUARD / 10 && n > 0; i++) {
        r = call_as(f, &ALICE, "list_sessions", "{}");
        n = json_object_array_length(get(get(r, "structuredContent"), "sessions"));
        json_object_put(r);
        if (n)
            usleep(10000);
    }
    assert_int_equal(n, 0);
    r = call_as(f, &ALICE, "validate_code",
                "{\"language\":\"python\",\"code\":\"x\",\"session_id\":\"%s\"}", id);
    assert_true(json_object_get_boolean(get(r, "isError")));
    assert_non_null(strstr(text_of(r), "exited"));
    json_object_put(r);
    r = call_as(f, &ALICE, "run_python_code", "{\"code\":\"x\",\"session_id\":\"%s\"}", id);
    assert_refused(r, "no such session");
    none_left(f);

    /* Lost as a run tool reports it. */
    fake_backend_set_program(f->g.fake, &p);
    r = call_as(f, &ALICE, "create_session", "{\"language\":\"python\"}");
    snprintf(id, sizeof(id), "%s", field(r, "session_id"));
    json_object_put(r);
    r = call_as(f, &ALICE, "run_python_code", "{\"code\":\"bye\",\"session_id\":\"%s\"}", id);
    json_object_put(r);
    none_left(f);
    r = call_as(f, &ALICE, "run_python_code", "{\"code\":\"x\",\"session_id\":\"%s\"}", id);
    assert_true(json_object_get_boolean(get(r, "isError")));
    assert_string_equal(field(r, "status"), "error");
    assert_string_equal(field(r, "session_id"), id);
    assert_true(json_object_get_boolean(get(get(r, "structuredContent"), "session_lost")));
    assert_non_null(strstr(field(r, "message"), "exited"));
    json_object_put(r);

    /* The end of an MCP session ends its code sessions, and only its. */
    p = (struct fake_program){.session = true};
    fake_backend_set_program(f->g.fake, &p);
    json_object_put(call_as(f, &ALICE, "create_session", "{\"language\":\"bash\"}"));
    r = call_as(f, &BOB, "create_session", "{\"language\":\"python\"}");
    snprintf(id, sizeof(id), "%s", field(r, "session_id"));
    json_object_put(r);
    tools_sessions_end_owner(&f->env, &ALICE);
    r = call_as(f, &ALICE, "list_sessions", "{}");
    assert_int_equal(json_object_array_length(get(get(r, "structuredContent"), "sessions")), 0);
    json_object_put(r);
    r = call_as(f, &BOB, "close_session", "{\"session_id\":\"%s\"}", id);
    assert_false(json_object_get_boolean(get(r, "isError")));
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
        cmocka_unit_test_setup_teardown(test_session_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_lost_and_owner_end, setup, teardown),
    };
    return cmocka_run_group_tests_name("tools_run", tests, NULL, NULL);
}
