/* The pool following the calls (sandbox/pool/demand.h through pool.c):
 * a language's target grows with its calls up to its maximum, falls back
 * to its minimum once idle (its extra waiting sandboxes removed), and all
 * targets stay within --pool-max-total above the minimums; a pool that
 * would run dry refills without the preloads. bash (the
 * generic runner, whose warm command alone holds the argument "warm")
 * is the language that grows; where its set-ups must not finish, so that
 * the refill time stays the guessed one and the figures are exact, its
 * warm creates fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pool_rig.h"

static const struct langtable_lang *SH;

static void open_with_bash(struct rig *g, const char *languages_text)
{
    set_list(&g->cfg.languages, (const char *const[]){"python", "javascript", "bash"}, 3);
    g->cfg.pool_size = -1;
    g->languages_text = languages_text;
    struct fake_program p = {.out = "x\n", .out_len = 2};
    fake_backend_set_program(g->fake, &p);
    rig_open(g);
    SH = test_lang(g->langs, "bash");
}

static void calls(struct rig *g, int n)
{
    for (int i = 0; i < n; i++) {
        struct run req = request(SH, "echo x", g->cfg.memory_mb);
        run_ok(g, &req, "x\n");
    }
}

static void assert_why(struct rig *g, const char *needle)
{
    struct exec_pool_stats st = stats(g, SH);
    if (!strstr(st.why, needle))
        fail_msg("bash pool, size %zu: '%s' does not say '%s'", st.size, st.why, needle);
}

/* With the idle time of 60 s each call adds 1/3 call/s to the fast rate
 * (and 1/20 to the slow one); at the guessed refill of 1 s the target is
 * ceil(rate x 1.5). */
static void test_grows_with_calls(void **state)
{
    struct rig *g = *state;
    fake_backend_fail_create_if(g->fake, "\"warm\"", ERR_ENGINE);
    open_with_bash(g, "{\"languages\": [{\"name\": \"python\", \"pool_size\": 0},\n"
                      "  {\"name\": \"javascript\", \"pool_size\": 0},\n"
                      "  {\"name\": \"bash\", \"pool_size\": 0, \"pool_max\": 3}]}");
    struct exec_pool_stats st = stats(g, SH);
    assert_int_equal(st.min, 0);
    assert_int_equal(st.max, 3);
    assert_int_equal(st.size, 0);
    assert_why(g, "idle");
    calls(g, 1);
    assert_int_equal(stats(g, SH).size, 1);
    assert_why(g, "calls/s x 1000 ms refill (guessed)");
    calls(g, 2);
    assert_int_equal(stats(g, SH).size, 2);
    calls(g, 10);
    assert_int_equal(stats(g, SH).size, 3);
    assert_why(g, "held to the maximum");
    st = stats(g, SH);
    assert_true(st.misses >= 13);
    assert_int_equal(st.ready, 0);
    rig_close(g);
    assert_all_gone(g);
}

/* Idle for --pool-idle-ms, the pool is back at its minimum and the
 * sandbox it made for the calls is removed unused. */
static void test_shrinks_when_idle(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_idle_ms = 1000;
    open_with_bash(g, "{\"languages\": [{\"name\": \"python\", \"pool_size\": 0},\n"
                      "  {\"name\": \"javascript\", \"pool_size\": 0},\n"
                      "  {\"name\": \"bash\", \"pool_size\": 0, \"pool_max\": 2}]}");
    calls(g, 1);
    assert_true(stats(g, SH).size >= 1);
    wait_ready(g, SH, 1);
    /* No call since: down to none (hang guard). */
    assert_true(reached_ready(g, SH, 0));
    struct exec_pool_stats st = stats(g, SH);
    assert_int_equal(st.size, 0);
    assert_true(st.trimmed >= 1);
    assert_why(g, "idle");
    rig_close(g);
    assert_all_gone(g);
}

/* --pool-max-total 1: python's fixed 1 is kept, bash grows by one only. */
static void test_total_cap(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_max_total = 1;
    fake_backend_fail_create_if(g->fake, "\"warm\"", ERR_ENGINE);
    open_with_bash(g, "{\"languages\": [{\"name\": \"python\", \"pool_size\": 1, "
                      "\"pool_max\": 1},\n"
                      "  {\"name\": \"javascript\", \"pool_size\": 0},\n"
                      "  {\"name\": \"bash\", \"pool_size\": 0, \"pool_max\": 8}]}");
    calls(g, 60);
    assert_int_equal(stats(g, SH).size, 1);
    assert_why(g, "held by the pools' total");
    assert_int_equal(stats(g, PY).size, 1);
    rig_close(g);
    assert_all_gone(g);
}

/* A pool that would run dry before a set-up with the preloads is done
 * makes one without them first, before any call misses: python's
 * preloaded creates take 300 ms here, and with --pool-idle-ms 1000 (a
 * 50 ms fast tau) one call is a rate of about 20 a second. */
static void test_runs_dry_refills_lean(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_idle_ms = 1000;
    fake_backend_slow_create_if(g->fake, "numpy,pandas", 300);
    open_with_bash(g, "{\"languages\": [{\"name\": \"python\", \"pool_size\": 1, "
                      "\"pool_max\": 1},\n"
                      "  {\"name\": \"javascript\", \"pool_size\": 0},\n"
                      "  {\"name\": \"bash\", \"pool_size\": 0}]}");
    wait_ready(g, PY, 1);
    assert_int_equal(stats(g, PY).lean, 0);
    struct run req = request(PY, "print(1)", g->cfg.memory_mb);
    run_ok(g, &req, "x\n");
    wait_ready(g, PY, 1);
    struct exec_pool_stats st = stats(g, PY);
    assert_int_equal(st.lean, 1);
    assert_int_equal(st.misses, 0);
    assert_int_equal(st.hits, 1);
    rig_close(g);
    assert_all_gone(g);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_grows_with_calls),
        T(test_shrinks_when_idle),
        T(test_total_cap),
        T(test_runs_dry_refills_lean),
    };
#undef T
    return cmocka_run_group_tests_name("pool_demand", tests, NULL, NULL);
}
