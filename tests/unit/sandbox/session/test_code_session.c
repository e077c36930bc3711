/* Code sessions end to end over the fake backend (exec_rig.h), its
 * sandboxes running the fake program's session mode: opening from the
 * pool and on demand, calls in order in one sandbox, interrupts honoured
 * and ignored, a sandbox that ends while idle, the idle timer, close and
 * an owner's end, one --secret placeholder for a session's every call.
 * The registry's own rules are test_sessions.c's. Every
 * test ends with no sandbox left (the rig's teardown). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/sandbox.h"
#include "unit/sandbox/run/exec_rig.h"

static const struct code_session_owner ALICE = {.owner = "a1", .principal = "stdio"};
static const struct code_session_owner BOB = {.owner = "b2", .principal = "stdio"};

/* The sessions' monotonic clock: moved by the tests only. */
static atomic_llong clock_ms;

static double test_now(void)
{
    return (double)atomic_load(&clock_ms);
}

/* The rig's context with sessions on, the daemon's environment envp:
 * idle 10 s and age 60 s on the test's clock. */
static void open_sessions_env(struct rig *g, char **envp)
{
    g->cfg.max_code_sessions = 0; /* started here, on the test's clock */
    rig_open_env(g, envp);
    atomic_store(&clock_ms, 1000000);
    struct code_sessions_limits lim = {.max_sessions = 4,
                                       .max_per_owner = 2,
                                       .idle_ms = 10000,
                                       .max_age_ms = 60000,
                                       .now_ms = test_now};
    struct err err = ERR_INIT;
    if (code_sessions_start(g->exec, &lim, &err) < 0)
        fail_msg("code_sessions_start: %s", err_msg(&err));
}

static void open_sessions(struct rig *g)
{
    open_sessions_env(g, NULL);
}

/* The fake's sandboxes answer as session runners, cells as script says. */
static void script(struct rig *g, const enum fake_cell *cells, size_t n)
{
    struct fake_program p = {.session = true, .n_cells = n};
    if (n)
        memcpy(p.cells, cells, n * sizeof(*cells));
    fake_backend_set_program(g->fb, &p);
}

static struct code_session *open_ok(struct rig *g, const struct code_session_owner *who)
{
    struct run req = request("");
    struct err err = ERR_INIT;
    enum runner_session_mode mode = RUNNER_SESSION_MODE_NONE;
    struct code_session *cs = code_session_open(g->exec, &req, "work", who, &mode, &err);
    if (!cs)
        fail_msg("code_session_open: %s", err_msg(&err));
    assert_int_equal(mode, RUNNER_SESSION_MODE_PROCESS);
    return cs;
}

/* Runs code in cs; the call itself must not fail. */
static void cell(struct rig *g, struct code_session *cs, struct run *req, struct exec_result *res)
{
    struct err err = ERR_INIT;
    if (code_session_run(g->exec, cs, req, res, &err) < 0)
        fail_msg("code_session_run: %s", err_msg(&err));
}

static void cell_echo(struct rig *g, struct code_session *cs, const char *code)
{
    struct run req = request(code);
    struct exec_result res;
    exec_result_init(&res);
    cell(g, cs, &req, &res);
    assert_int_equal(res.status, EXEC_OK);
    assert_int_equal(res.exit_code, 0);
    assert_string_equal(buf_cstr(&res.out), code);
    assert_false(res.session_lost);
    exec_result_free(&res);
}

/* The session's sandbox: the one sandbox created. */
static void only_sandbox(struct rig *g, char id[FAKE_BACKEND_ID_MAX + 1])
{
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_CREATE, NULL), 1);
    last_sandbox(g, id);
}

/* ---- opening and calls ------------------------------------------------------- */

static void test_on_demand_two_cells(void **state)
{
    struct rig *g = *state;
    script(g, NULL, 0);
    open_sessions(g);
    struct code_session *cs = open_ok(g, &ALICE);
    assert_string_equal(code_session_language(cs), "python");
    assert_string_equal(code_session_name(cs), "work");
    cell_echo(g, cs, "first");
    cell_echo(g, cs, "second");
    /* Both in the one sandbox, started once, never killed. */
    char id[FAKE_BACKEND_ID_MAX + 1];
    only_sandbox(g, id);
    struct fake_sandbox_info info;
    assert_true(fake_backend_info(g->fb, id, &info));
    assert_string_equal(info.code, "second");
    assert_false(info.warm);
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_START, id), 1);
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_KILL, id), 0);
    /* Its label outlives the session's age, not only one call. */
    assert_true(info.expires > (long long)time(NULL) + 60);

    struct code_session_info *list = NULL;
    assert_int_equal(code_session_list(g->exec, &ALICE, &list), 1);
    assert_string_equal(list[0].session_id, code_session_id(cs));
    assert_false(list[0].busy);
    free(list);
    assert_int_equal(code_session_list(g->exec, &BOB, &list), 0);
    assert_null(code_session_get(g->exec, code_session_id(cs), &BOB, NULL));

    assert_int_equal(code_session_close(g->exec, cs), CODE_SESSION_CLOSED);
    assert_removed(g, id);
    assert_int_equal(code_session_close(g->exec, cs), CODE_SESSION_GONE);
    assert_null(code_session_get(g->exec, code_session_id(cs), &ALICE, NULL));
    code_session_put(g->exec, cs);
    assert_int_equal(code_session_counts(g->exec, &ALICE).active, 0);
}

/* A session's --secret placeholder is made at its open and sent with its
 * begin request and every call's: a value kept in the interpreter stays
 * the one the gateway knows. */
static void test_placeholder_per_session(void **state)
{
    struct rig *g = *state;
    static const char *const egress[] = {"python=api.example.com"};
    static const char *const secret[] = {"API_KEY=api.example.com"};
    set_list(&g->cfg.egress, egress, 1);
    set_list(&g->cfg.secret, secret, 1);
    reconfigure(g);
    char *envp[] = {"API_KEY=key-0123456789abcdefXYZ", NULL};
    script(g, NULL, 0);
    open_sessions_env(g, envp);
    struct code_session *cs = open_ok(g, &ALICE);
    char id[FAKE_BACKEND_ID_MAX + 1];
    only_sandbox(g, id);
    struct fake_sandbox_info info;
    assert_true(fake_backend_info(g->fb, id, &info));
    char begun[sizeof(info.request_env)];
    snprintf(begun, sizeof(begun), "%s", info.request_env);
    assert_non_null(strstr(begun, "\"API_KEY\":\"" EGRESS_PLACEHOLDER_PREFIX));
    assert_null(strstr(begun, "key-0123"));
    cell_echo(g, cs, "first");
    cell_echo(g, cs, "second");
    assert_true(fake_backend_info(g->fb, id, &info));
    assert_string_equal(info.code, "second");
    assert_string_equal(info.request_env, begun);
    assert_int_equal(code_session_close(g->exec, cs), CODE_SESSION_CLOSED);
    code_session_put(g->exec, cs);
}

static bool pool_ready(struct rig *g)
{
    for (int i = 0; i < GUARD / 5; i++) {
        struct exec_pool_stats st;
        if (exec_pool_stats(g->exec, PY, &st) && st.ready == 1)
            return true;
        usleep(5000);
    }
    return false;
}

static void test_from_pool(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_size = 1;
    set_list(&g->cfg.languages, (const char *const[]){"python", "javascript"}, 2);
    reconfigure(g);
    script(g, NULL, 0);
    open_sessions(g);
    assert_true(pool_ready(g));
    struct run req = request("");
    req.memory_mb = g->cfg.memory_mb; /* the pool's limits */
    struct err err = ERR_INIT;
    struct code_session *cs = code_session_open(g->exec, &req, NULL, &ALICE, NULL, &err);
    if (!cs)
        fail_msg("code_session_open: %s", err_msg(&err));
    cell_echo(g, cs, "pooled");
    /* The cell ran in a sandbox the pool made (which then made another). */
    size_t n = 0;
    struct fake_sandbox_info *all = fake_backend_all(g->fb, &n), *used = NULL;
    for (size_t i = 0; i < n; i++)
        if (all[i].code_received && strcmp(all[i].code, "pooled") == 0) {
            assert_null(used);
            used = &all[i];
        }
    if (!used)
        fail_msg("no sandbox ran the cell");
    assert_true(used->warm);
    assert_string_equal(used->pool, "python");
    assert_int_equal(code_session_close(g->exec, cs), CODE_SESSION_CLOSED);
    assert_true(fake_backend_wait_removed(g->fb, used->id, GUARD));
    code_session_put(g->exec, cs);
    free(all);
}

static void test_not_a_session_runner(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.exit_code = 0}; /* a one-shot runner */
    fake_backend_set_program(g->fb, &p);
    open_sessions(g);
    struct run req = request("");
    struct err err = ERR_INIT;
    assert_null(code_session_open(g->exec, &req, NULL, &ALICE, NULL, &err));
    assert_int_equal(err.code, ERR_PROTOCOL);
    assert_int_equal(code_session_counts(g->exec, &ALICE).active, 0);
    assert_last_removed(g);
    err_clear(&err);
}

/* ---- interrupts ------------------------------------------------------------- */

static void test_interrupt_honoured(void **state)
{
    struct rig *g = *state;
    script(g, (enum fake_cell[]){FAKE_CELL_UNTIL_INTERRUPT}, 1);
    open_sessions(g);
    struct code_session *cs = open_ok(g, &ALICE);
    struct run req = request("loop");
    req.timeout_ms = 50;
    struct exec_result res;
    exec_result_init(&res);
    cell(g, cs, &req, &res);
    assert_int_equal(res.status, EXEC_TIMEOUT);
    assert_int_equal(res.exit_code, 130);
    assert_false(res.session_lost);
    assert_contains(res.message, "timeout");
    exec_result_free(&res);
    /* The session lives on in the same sandbox. */
    cell_echo(g, cs, "after");
    char id[FAKE_BACKEND_ID_MAX + 1];
    only_sandbox(g, id);
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_KILL, id), 0);
    code_session_put(g->exec, cs);
}

static void test_interrupt_ignored(void **state)
{
    struct rig *g = *state;
    script(g, (enum fake_cell[]){FAKE_CELL_IGNORE_INTERRUPT}, 1);
    open_sessions(g);
    struct code_session *cs = open_ok(g, &ALICE);
    struct run req = request("trap");
    req.timeout_ms = 50;
    struct exec_result res;
    exec_result_init(&res);
    cell(g, cs, &req, &res);
    assert_int_equal(res.status, EXEC_TIMEOUT);
    assert_true(res.session_lost);
    assert_contains(res.lost_reason, "did not stop");
    exec_result_free(&res);
    char id[FAKE_BACKEND_ID_MAX + 1];
    only_sandbox(g, id);
    assert_true(fake_backend_count(g->fb, FAKE_STEP_KILL, id) >= 1);
    assert_removed(g, id);
    /* Lost during a call: the call said so, the session is simply gone. */
    assert_null(code_session_get(g->exec, code_session_id(cs), &ALICE, NULL));
    assert_int_equal(code_session_counts(g->exec, &ALICE).active, 0);
    struct err err = ERR_INIT;
    assert_int_equal(code_session_run(g->exec, cs, &req, &res, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    exec_result_free(&res);
    err_clear(&err);
    code_session_put(g->exec, cs);
}

static void test_exit_during_call(void **state)
{
    struct rig *g = *state;
    script(g, (enum fake_cell[]){FAKE_CELL_EXIT}, 1);
    open_sessions(g);
    struct code_session *cs = open_ok(g, &ALICE);
    struct run req = request("os._exit(3)");
    struct exec_result res;
    exec_result_init(&res);
    cell(g, cs, &req, &res);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_true(res.session_lost);
    assert_contains(res.lost_reason, "exited");
    exec_result_free(&res);
    assert_last_removed(g);
    code_session_put(g->exec, cs);
}

static void test_warm_dies_replaced(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_size = 1;
    set_list(&g->cfg.languages, (const char *const[]){"python", "javascript"}, 2);
    reconfigure(g);
    struct fake_program dying = {.session = true, .warm_dies = true};
    fake_backend_set_program(g->fb, &dying);
    open_sessions(g);
    assert_true(pool_ready(g));
    script(g, NULL, 0);
    struct run req = request("");
    req.memory_mb = g->cfg.memory_mb;
    struct err err = ERR_INIT;
    struct code_session *cs = code_session_open(g->exec, &req, NULL, &ALICE, NULL, &err);
    if (!cs)
        fail_msg("code_session_open: %s", err_msg(&err));
    /* The pooled one died before its runner went ahead: another took over. */
    cell_echo(g, cs, "on another");
    size_t n = 0;
    struct fake_sandbox_info *all = fake_backend_all(g->fb, &n);
    int dead = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(all[i].image, PY->image) == 0 && all[i].exited && all[i].exit_code == 137) {
            dead++;
            assert_true(fake_backend_wait_removed(g->fb, all[i].id, GUARD));
        }
    assert_true(dead >= 1);
    free(all);
    code_session_put(g->exec, cs);
}

static void test_output_limit_keeps_session(void **state)
{
    struct rig *g = *state;
    g->cfg.max_output_bytes = 16;
    script(g, NULL, 0);
    open_sessions(g);
    struct code_session *cs = open_ok(g, &ALICE);
    static const char big[] = "0123456789abcdef0123456789abcdef0123456789abcdef";
    struct run req = request(big);
    struct exec_result res;
    exec_result_init(&res);
    cell(g, cs, &req, &res);
    assert_int_equal(res.status, EXEC_OUTPUT_LIMIT);
    assert_true(res.truncated);
    assert_int_equal(res.out.len, 16);
    assert_false(res.session_lost);
    exec_result_free(&res);
    cell_echo(g, cs, "small");
    char id[FAKE_BACKEND_ID_MAX + 1];
    only_sandbox(g, id);
    code_session_put(g->exec, cs);
}

static void test_oom_during_call(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.session = true,
                             .cells = {FAKE_CELL_EXIT},
                             .n_cells = 1,
                             .exit_code = 137,
                             .oom_killed = true};
    fake_backend_set_program(g->fb, &p);
    open_sessions(g);
    struct code_session *cs = open_ok(g, &ALICE);
    struct run req = request("x = bytearray(1 << 40)");
    struct exec_result res;
    exec_result_init(&res);
    cell(g, cs, &req, &res);
    assert_int_equal(res.status, EXEC_OOM);
    assert_true(res.session_lost);
    assert_contains(res.lost_reason, "memory");
    exec_result_free(&res);
    assert_last_removed(g);
    code_session_put(g->exec, cs);
}

/* A call on another thread (close_while_busy). */
struct bg_call {
    struct rig *g;
    struct code_session *cs;
    struct run req;
    struct exec_result res;
    int rc;
    pthread_t th;
};

static void *bg_main(void *arg)
{
    struct bg_call *b = arg;
    b->rc = code_session_run(b->g->exec, b->cs, &b->req, &b->res, NULL);
    return NULL;
}

/* Whether the session's sandbox got a cell of this code (hang guard). */
static bool got_code(struct rig *g, const char *code)
{
    char id[FAKE_BACKEND_ID_MAX + 1];
    last_sandbox(g, id);
    for (int i = 0; i < GUARD / 5; i++) {
        struct fake_sandbox_info info;
        if (fake_backend_info(g->fb, id, &info) && strcmp(info.code, code) == 0)
            return true;
        usleep(5000);
    }
    return false;
}

static void test_close_while_busy(void **state)
{
    struct rig *g = *state;
    script(g, (enum fake_cell[]){FAKE_CELL_UNTIL_INTERRUPT}, 1);
    open_sessions(g);
    struct bg_call b = {.g = g, .cs = open_ok(g, &ALICE), .req = request("loop")};
    b.req.cancel = exec_cancel_new();
    exec_result_init(&b.res);
    assert_int_equal(pthread_create(&b.th, NULL, bg_main, &b), 0);
    assert_true(got_code(g, "loop"));
    struct code_session_info *list = NULL;
    assert_int_equal(code_session_list(g->exec, &ALICE, &list), 1);
    assert_true(list[0].busy);
    free(list);
    /* The call is cancelled; the session goes when it ends. */
    assert_int_equal(code_session_close(g->exec, b.cs), CODE_SESSION_CLOSING);
    pthread_join(b.th, NULL);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.res.status, EXEC_CANCELLED);
    assert_int_equal(b.res.exit_code, 130);
    assert_last_removed(g);
    assert_null(code_session_get(g->exec, code_session_id(b.cs), &ALICE, NULL));
    exec_result_free(&b.res);
    exec_cancel_free(b.req.cancel);
    code_session_put(g->exec, b.cs);
}

/* ---- between calls ---------------------------------------------------------- */

static void test_idle_exit_tombstone(void **state)
{
    struct rig *g = *state;
    script(g, (enum fake_cell[]){FAKE_CELL_THEN_EXIT}, 1);
    open_sessions(g);
    struct code_session *cs = open_ok(g, &ALICE);
    char id[CODE_SESSION_ID_LEN + 1];
    memcpy(id, code_session_id(cs), sizeof(id));
    cell_echo(g, cs, "bye");
    code_session_put(g->exec, cs);
    /* The watcher sees the end of its stream and removes it. */
    assert_last_removed(g);
    bool lost = false;
    cs = code_session_get(g->exec, id, &ALICE, &lost);
    assert_non_null(cs);
    assert_true(lost);
    assert_contains(code_session_lost_reason(cs), "exited while the session was idle");
    code_session_put(g->exec, cs);
    /* Once only; never to another. */
    assert_null(code_session_get(g->exec, id, &ALICE, &lost));
    assert_false(lost);
}

/* Output while idle is read and dropped: the watcher reads past it to
 * the end of the stream. */
static void test_idle_stray_output(void **state)
{
    struct rig *g = *state;
    script(g, (enum fake_cell[]){FAKE_CELL_THEN_STRAY}, 1);
    open_sessions(g);
    struct code_session *cs = open_ok(g, &ALICE);
    char id[CODE_SESSION_ID_LEN + 1];
    memcpy(id, code_session_id(cs), sizeof(id));
    cell_echo(g, cs, "then noise");
    code_session_put(g->exec, cs);
    assert_last_removed(g);
    bool lost = false;
    cs = code_session_get(g->exec, id, &ALICE, &lost);
    assert_true(lost);
    assert_contains(code_session_lost_reason(cs), "exited while the session was idle");
    code_session_put(g->exec, cs);
}

static void test_idle_expiry(void **state)
{
    struct rig *g = *state;
    script(g, NULL, 0);
    open_sessions(g);
    struct code_session *cs = open_ok(g, &ALICE);
    cell_echo(g, cs, "x");
    char id[FAKE_BACKEND_ID_MAX + 1];
    only_sandbox(g, id);
    atomic_fetch_add(&clock_ms, 10001);
    assert_removed(g, id);
    assert_null(code_session_get(g->exec, code_session_id(cs), &ALICE, NULL));
    assert_int_equal(code_session_counts(g->exec, NULL).active, 0);
    code_session_put(g->exec, cs);
}

static void test_end_owner(void **state)
{
    struct rig *g = *state;
    script(g, NULL, 0);
    open_sessions(g);
    struct code_session *a1 = open_ok(g, &ALICE);
    struct code_session *a2 = open_ok(g, &ALICE);
    struct code_session *b = open_ok(g, &BOB);
    struct run req = request("");
    struct err err = ERR_INIT;
    /* Alice's cap is 2. */
    assert_null(code_session_open(g->exec, &req, NULL, &ALICE, NULL, &err));
    assert_int_equal(err.code, ERR_TOO_BIG);
    err_clear(&err);
    assert_int_equal(code_session_counts(g->exec, &ALICE).yours, 2);
    assert_int_equal(code_session_end_owner(g->exec, &ALICE), 2);
    assert_int_equal(code_session_counts(g->exec, &ALICE).yours, 0);
    assert_int_equal(code_session_counts(g->exec, NULL).active, 1);
    cell_echo(g, b, "still here");
    /* Bob's goes at shutdown (the rig's teardown finds nothing left). */
    code_session_put(g->exec, a1);
    code_session_put(g->exec, a2);
    code_session_put(g->exec, b);
    for (int i = 0; i < GUARD / 5 && fake_backend_live(g->fb) != 1; i++)
        usleep(5000);
    assert_int_equal(fake_backend_live(g->fb), 1);
}

/* Stress: calls back to back in two sessions at once, each going busy and
 * idle 300 times while the watcher polls the idle streams between them;
 * every call answers and no session is lost. */
#define STRESS_CALLS 300

struct stresser {
    struct rig *g;
    struct code_session *cs;
    atomic_int *bad;
};

static void *stress_main(void *arg)
{
    struct stresser *t = arg;
    for (int i = 0; i < STRESS_CALLS; i++) {
        struct run req = request("x");
        struct exec_result res;
        exec_result_init(&res);
        struct err err = ERR_INIT;
        if (code_session_run(t->g->exec, t->cs, &req, &res, &err) < 0 || res.status != EXEC_OK ||
            res.session_lost)
            atomic_fetch_add(t->bad, 1);
        err_clear(&err);
        exec_result_free(&res);
    }
    return NULL;
}

static void test_back_to_back_calls_stay(void **state)
{
    struct rig *g = *state;
    script(g, NULL, 0);
    open_sessions(g);
    atomic_int bad = 0;
    struct stresser t[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        t[i] = (struct stresser){.g = g, .cs = open_ok(g, &ALICE), .bad = &bad};
        assert_int_equal(pthread_create(&th[i], NULL, stress_main, &t[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&bad), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(code_session_close(g->exec, t[i].cs), CODE_SESSION_CLOSED);
        code_session_put(g->exec, t[i].cs);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_on_demand_two_cells, setup, teardown),
        cmocka_unit_test_setup_teardown(test_placeholder_per_session, setup, teardown),
        cmocka_unit_test_setup_teardown(test_from_pool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_warm_dies_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_session_runner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_honoured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_limit_keeps_session, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_during_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oom_during_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_while_busy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_exit_tombstone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_stray_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_end_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_back_to_back_calls_stay, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
