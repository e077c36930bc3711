/* pool.c through exec against the fake backend (tests/fake_backend):
 * warm sandboxes are made ahead as warm runners, each serves one run and
 * is removed, dead or aged ones are replaced and never handed out, runs
 * with other limits go on demand, a pool that cannot fill leaves runs on
 * demand, the sizes per language, and nothing is left after shutdown.
 * Refills and concurrency are test_pool_refill.c's; how the Docker
 * backend carries a waiting sandbox's streams (socket or attach) is
 * tests/unit/backend/docker/test_sandbox_io.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "sandbox/runner/runner.h"
#include "unit/sandbox/pool/pool_rig.h"

/* ---- warm runs ------------------------------------------------------------ */

/* A run takes the waiting sandbox: no create or start on its path; the
 * sandbox was a warm runner with the pool's limits, ran this one program
 * only, and is removed; the pool makes a new one. */
static void test_warm_run_single_use(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "hi\n", .out_len = 3};
    fake_backend_set_program(g->fake, &p);
    rig_open(g);
    wait_ready(g, PY, 1);
    wait_ready(g, JS, 1);
    char warm[FAKE_BACKEND_ID_MAX + 1];
    assert_true(find_waiting(g, PY, warm));

    struct run req = request(PY, "print('hi')", g->cfg.memory_mb);
    run_ok(g, &req, "hi\n");
    struct fake_sandbox_info used;
    sandbox_of(g, "print('hi')", &used);
    assert_true(used.warm);
    assert_string_equal(used.image, PY->image);
    assert_true(used.memory_bytes == g->cfg.memory_mb << 20);
    assert_string_equal(used.pool, PY->name);
    assert_true(fake_backend_wait_removed(g->fake, used.id, GUARD));
    /* Made before the run, not for it: the one that was waiting. */
    assert_int_equal(fake_backend_count(g->fake, FAKE_STEP_START, used.id), 1);
    assert_string_equal(used.id, warm);

    /* Refilled with a new sandbox; the next run gets a fresh one. */
    wait_ready(g, PY, 1);
    req = request(PY, "print('hi') # 2", g->cfg.memory_mb);
    run_ok(g, &req, "hi\n");
    struct fake_sandbox_info second;
    sandbox_of(g, "print('hi') # 2", &second);
    assert_string_not_equal(used.id, second.id);
    assert_true(second.warm);

    struct exec_pool_stats st = stats(g, PY);
    assert_true(st.hits == 2);
    assert_true(st.misses == 0);
    assert_int_equal(st.size, 1);
    rig_close(g);
    assert_all_gone(g);
}

/* The warm runner gets the configured preload list as its argument. */
static void test_preload_argument(void **state)
{
    struct rig *g = *state;
    free(g->cfg.python_preload);
    g->cfg.python_preload = xstrdup("json,decimal");
    free(g->cfg.js_preload);
    g->cfg.js_preload = xstrdup("zlib");
    rig_open(g);
    wait_ready(g, PY, 1);
    wait_ready(g, JS, 1);
    bool py = false, js = false;
    size_t n = 0;
    struct fake_sandbox_info *all = fake_backend_all(g->fake, &n);
    for (size_t i = 0; i < n; i++) {
        assert_true(all[i].warm);
        if (strcmp(all[i].image, PY->image) == 0) {
            assert_string_equal(all[i].preload, "json,decimal");
            py = true;
        } else {
            assert_string_equal(all[i].preload, "zlib");
            js = true;
        }
    }
    free(all);
    assert_true(py && js);
    rig_close(g);
    assert_all_gone(g);
}

/* ---- limits ---------------------------------------------------------------- */

/* Other memory than the pool's: a sandbox of its own, made for the run
 * with exactly that limit; the pool is not touched. */
static void test_other_limits_on_demand(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "big\n", .out_len = 4};
    fake_backend_set_program(g->fake, &p);
    rig_open(g);
    wait_ready(g, PY, 1);
    struct run req = request(PY, "bigger", g->cfg.memory_mb * 2);
    run_ok(g, &req, "big\n");
    struct fake_sandbox_info used;
    sandbox_of(g, "bigger", &used);
    assert_false(used.warm);
    assert_string_equal(used.pool, "");
    assert_true(used.memory_bytes == (g->cfg.memory_mb * 2) << 20);
    req = request(PY, "smaller", 64);
    run_ok(g, &req, "big\n");
    sandbox_of(g, "smaller", &used);
    assert_false(used.warm);
    assert_true(used.memory_bytes == 64LL << 20);
    struct exec_pool_stats st = stats(g, PY);
    assert_true(st.hits == 0 && st.misses == 0);
    assert_int_equal(st.ready, 1);
    rig_close(g);
    assert_all_gone(g);
}

/* ---- health ---------------------------------------------------------------- */

/* A waiting sandbox killed from outside is replaced and never runs a
 * program; the run goes to a healthy one. */
static void test_killed_waiting_replaced(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "ok\n", .out_len = 3};
    fake_backend_set_program(g->fake, &p);
    rig_open(g);
    wait_ready(g, PY, 1);
    char killed[FAKE_BACKEND_ID_MAX + 1];
    assert_true(find_waiting(g, PY, killed));
    struct err err = ERR_INIT;
    if (backend_kill(fake_backend_get(g->fake), killed, &err) < 0)
        fail_msg("kill: %s", err_msg(&err));
    /* The watcher sees it die, removes it and the fillers make another. */
    assert_true(fake_backend_wait_removed(g->fake, killed, GUARD));
    wait_ready(g, PY, 1);
    assert_true(stats(g, PY).replaced >= 1);

    struct run req = request(PY, "after kill", g->cfg.memory_mb);
    run_ok(g, &req, "ok\n");
    struct fake_sandbox_info used, info;
    sandbox_of(g, "after kill", &used);
    assert_string_not_equal(used.id, killed);
    assert_true(fake_backend_info(g->fake, killed, &info));
    assert_false(info.code_received);
    rig_close(g);
    assert_all_gone(g);
}

/* Killed just before a run takes it: whoever notices first (the watcher or
 * the take), the run never gets the dead one. */
static void test_killed_just_before_take(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_size = 2;
    struct fake_program p = {.out = "ok\n", .out_len = 3};
    fake_backend_set_program(g->fake, &p);
    rig_open(g);
    wait_ready(g, PY, 2);
    char victim[FAKE_BACKEND_ID_MAX + 1];
    assert_true(find_waiting(g, PY, victim));
    struct err err = ERR_INIT;
    assert_int_equal(backend_kill(fake_backend_get(g->fake), victim, &err), 0);
    struct run req = request(PY, "racing", g->cfg.memory_mb);
    run_ok(g, &req, "ok\n");
    struct fake_sandbox_info used;
    sandbox_of(g, "racing", &used);
    assert_string_not_equal(used.id, victim);
    rig_close(g);
    assert_all_gone(g);
}

/* A pooled sandbox that dies once it has the request but before its
 * runner said so: the code never ran there, so the run goes to another
 * sandbox (here on demand, the pool being empty) and succeeds. */
static void test_dies_before_go_retried(void **state)
{
    struct rig *g = *state;
    struct fake_program dying = {.warm_dies = true};
    fake_backend_set_program(g->fake, &dying);
    rig_open(g);
    wait_ready(g, PY, 1);
    char doomed[FAKE_BACKEND_ID_MAX + 1];
    assert_true(find_waiting(g, PY, doomed));
    struct fake_program fine = {.out = "fine\n", .out_len = 5};
    fake_backend_set_program(g->fake, &fine);
    struct run req = request(PY, "once", g->cfg.memory_mb);
    run_ok(g, &req, "fine\n");
    struct fake_sandbox_info info;
    assert_true(fake_backend_info(g->fake, doomed, &info));
    assert_true(info.code_received);
    assert_true(fake_backend_wait_removed(g->fake, doomed, GUARD));
    assert_true(stats(g, PY).replaced >= 1);
    rig_close(g);
    assert_all_gone(g);
}

/* Past the age limit a waiting sandbox is replaced unused. */
static void test_max_age_recycles(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_max_age_ms = 1000;
    rig_open(g);
    wait_ready(g, PY, 1);
    char first[FAKE_BACKEND_ID_MAX + 1];
    assert_true(find_waiting(g, NULL, first));
    assert_true(fake_backend_wait_removed(g->fake, first, GUARD));
    struct fake_sandbox_info info;
    assert_true(fake_backend_info(g->fake, first, &info));
    assert_false(info.code_received);
    wait_ready(g, PY, 1);
    assert_true(stats(g, PY).recycled >= 1);
    rig_close(g);
    assert_all_gone(g);
}

/* ---- a pool that cannot fill ------------------------------------------------ */

/* Every create that asks for numpy (a Python warm runner's preloads)
 * fails; the others are served. */
static void fail_preloaded_creates(struct rig *g)
{
    fake_backend_fail_create_if(g->fake, "numpy", ERR_ENGINE);
}

static void test_cannot_fill_runs_on_demand(void **state)
{
    struct rig *g = *state;
    fail_preloaded_creates(g);
    struct fake_program p = {.out = "cold\n", .out_len = 5};
    fake_backend_set_program(g->fake, &p);
    rig_open(g);
    for (int i = 0; i < GUARD / 5 && stats(g, PY).failed == 0; i++)
        usleep(5000);
    struct exec_pool_stats st = stats(g, PY);
    assert_true(st.failed >= 1);
    assert_non_null(strstr(st.last_error, "injected create failure"));
    assert_int_equal(st.ready, 0);

    struct run req = request(PY, "cold run", g->cfg.memory_mb);
    run_ok(g, &req, "cold\n");
    struct fake_sandbox_info used;
    sandbox_of(g, "cold run", &used);
    assert_false(used.warm);
    assert_true(stats(g, PY).misses == 1);
    rig_close(g);
    assert_all_gone(g);
}

/* A run that found the pool empty puts it under pressure: refills skip the
 * preloads for a while (here only those could succeed). */
static void test_pressure_refills_lean(void **state)
{
    struct rig *g = *state;
    fail_preloaded_creates(g);
    rig_open(g);
    for (int i = 0; i < GUARD / 5 && stats(g, PY).failed == 0; i++)
        usleep(5000);
    struct run req = request(PY, "missed", g->cfg.memory_mb);
    run_ok(g, &req, "");
    assert_true(stats(g, PY).misses == 1);
    wait_ready(g, PY, 1);
    assert_true(stats(g, PY).lean >= 1);
    char id[FAKE_BACKEND_ID_MAX + 1];
    assert_true(find_waiting(g, PY, id));
    struct fake_sandbox_info info;
    assert_true(fake_backend_info(g->fake, id, &info));
    assert_string_equal(info.preload, "");
    rig_close(g);
    assert_all_gone(g);
}

/* ---- start and stop ---------------------------------------------------------- */

/* Filling waits for the start-up sweep: when the backend is asked for its
 * list of sandboxes (held here), nothing was created yet. */
static void test_sweep_before_fill(void **state)
{
    struct rig *g = *state;
    fake_backend_stall(g->fake, FAKE_STEP_LIST, 1);
    rig_open(g);
    bool held = fake_backend_wait_held(g->fake, 1, GUARD);
    int early = fake_backend_count(g->fake, FAKE_STEP_CREATE, NULL);
    fake_backend_release(g->fake);
    assert_true(held);
    assert_int_equal(early, 0);
    wait_ready(g, PY, 1);
    rig_close(g);
    assert_all_gone(g);
}

/* Shutdown removes every waiting sandbox, and those being made. */
static void test_shutdown_removes_waiting(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_size = 3;
    rig_open(g);
    wait_ready(g, PY, 3);
    rig_close(g);
    assert_all_gone(g);
}

/* ---- sizes and languages ------------------------------------------------------ */

/* --pool-size 0: no pool, every run on demand. */
static void test_size_zero(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_size = 0;
    struct fake_program p = {.out = "x\n", .out_len = 2};
    fake_backend_set_program(g->fake, &p);
    rig_open(g);
    struct exec_pool_stats st;
    assert_false(exec_pool_stats(g->exec, PY, &st));
    struct run req = request(JS, "console.log('x')", g->cfg.memory_mb);
    run_ok(g, &req, "x\n");
    assert_int_equal(fake_backend_count(g->fake, FAKE_STEP_CREATE, NULL), 1);
    struct fake_sandbox_info used;
    sandbox_of(g, "console.log('x')", &used);
    assert_false(used.warm);
    rig_close(g);
    assert_all_gone(g);
}

/* Sizes per language (the table's pool_size, --pool-size not given): only
 * python keeps a pool here, so javascript's runs go on demand and no warm
 * javascript sandbox is ever made. */
static void test_per_language_sizes(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_size = -1;
    g->languages_text = "{\"languages\": [{\"name\": \"python\", \"pool_size\": 1},\n"
                        "  {\"name\": \"javascript\", \"pool_size\": 0}]}";
    struct fake_program p = {.out = "x\n", .out_len = 2};
    fake_backend_set_program(g->fake, &p);
    rig_open(g);
    assert_int_equal(PY->pool_size, 1);
    assert_int_equal(JS->pool_size, 0);
    wait_ready(g, PY, 1);
    struct exec_pool_stats st;
    /* The daemon keeps a pool (python's); javascript's is empty. */
    assert_true(exec_pool_stats(g->exec, JS, &st));
    assert_int_equal(st.size, 0);
    assert_int_equal(st.ready, 0);
    assert_int_equal(stats(g, PY).size, 1);

    struct run js = request(JS, "console.log('x')", g->cfg.memory_mb);
    run_ok(g, &js, "x\n");
    struct fake_sandbox_info used;
    sandbox_of(g, "console.log('x')", &used);
    assert_false(used.warm);
    assert_string_equal(used.image, JS->image);
    assert_int_equal(fake_backend_count(g->fake, FAKE_STEP_START, used.id), 1);
    st = stats(g, JS);
    assert_true(st.hits == 0);

    struct run py = request(PY, "print('x')", g->cfg.memory_mb);
    run_ok(g, &py, "x\n");
    sandbox_of(g, "print('x')", &used);
    assert_true(used.warm);
    assert_true(stats(g, PY).hits == 1);

    /* Every warm sandbox ever made was python's. */
    wait_ready(g, PY, 1);
    size_t n = 0;
    struct fake_sandbox_info *all = fake_backend_all(g->fake, &n);
    for (size_t i = 0; i < n; i++)
        if (all[i].warm)
            assert_string_equal(all[i].image, PY->image);
    free(all);
    rig_close(g);
    assert_all_gone(g);
}

/* The argv after a generic warm runner's "warm" in its command (JSON
 * text): that of the newest such sandbox, once one is ready. */
static void generic_warm_args(struct rig *g, const struct langtable_lang *lang, char *out, size_t n)
{
    wait_ready(g, lang, 1);
    size_t k = 0;
    struct fake_sandbox_info *all = fake_backend_all(g->fake, &k);
    bool found = false;
    for (size_t i = k; i-- > 0 && !found;) {
        if (all[i].warm && strcmp(all[i].preload, "warm") == 0) {
            assert_true(strlen(all[i].warm_args) < n);
            memcpy(out, all[i].warm_args, strlen(all[i].warm_args) + 1);
            found = true;
        }
    }
    free(all);
    if (!found)
        fail_msg("no warm %s sandbox was made", lang->name);
}

/* A warm TypeScript sandbox keeps the daemon's checker ready: node running
 * runner_tscheck_src with the typecheck's options (not "tsc", not the
 * source file); without typecheck_warm the warm runner starts none. */
static void test_typescript_warm_checker(void **state)
{
    struct rig *g = *state;
    set_list(&g->cfg.languages, (const char *const[]){"python", "javascript", "typescript"}, 3);
    rig_open(g);
    const struct langtable_lang *ts = test_lang(g->langs, "typescript");
    char args[8192];
    generic_warm_args(g, ts, args, sizeof(args));
    json_object *a = json_tokener_parse(args);
    assert_non_null(a);
    size_t n = json_object_array_length(a);
    assert_int_equal(n, 4 + ts->typecheck.n - 2);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(a, 0)), "node");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(a, 1)), "-e");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(a, 2)),
                        runner_tscheck_src);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(a, 3)), "--");
    for (size_t i = 4, k = 1; i < n; i++, k++) {
        if (strcmp(ts->typecheck.v[k], ts->source_file) == 0)
            k++;
        assert_string_equal(json_object_get_string(json_object_array_get_idx(a, i)),
                            ts->typecheck.v[k]);
    }
    json_object_put(a);
    rig_close(g);
    assert_all_gone(g);

    g->languages_text = "{\"languages\": [{\"name\": \"typescript\", \"typecheck_warm\": null}]}";
    rig_open(g);
    generic_warm_args(g, test_lang(g->langs, "typescript"), args, sizeof(args));
    assert_string_equal(args, "[]");
    rig_close(g);
    assert_all_gone(g);
}

/* --pool-size, when given, is every language's, over the table's. */
static void test_pool_size_option_wins(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_size = 2;
    g->languages_text = "{\"languages\": [{\"name\": \"javascript\", \"pool_size\": 0}]}";
    rig_open(g);
    assert_int_equal(JS->pool_size, 2);
    wait_ready(g, PY, 2);
    wait_ready(g, JS, 2);
    assert_int_equal(stats(g, JS).size, 2);
    rig_close(g);
    assert_all_gone(g);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_warm_run_single_use),      T(test_preload_argument),
        T(test_other_limits_on_demand),   T(test_killed_waiting_replaced),
        T(test_killed_just_before_take),  T(test_dies_before_go_retried),
        T(test_max_age_recycles),         T(test_cannot_fill_runs_on_demand),
        T(test_pressure_refills_lean),    T(test_sweep_before_fill),
        T(test_shutdown_removes_waiting), T(test_size_zero),
        T(test_per_language_sizes),       T(test_typescript_warm_checker),
        T(test_pool_size_option_wins),
    };
#undef T
    return cmocka_run_group_tests_name("pool", tests, NULL, NULL);
}
