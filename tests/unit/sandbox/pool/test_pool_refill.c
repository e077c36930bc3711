/* pool.c through exec against the fake backend (tests/fake_backend), the
 * pool over time: when it refills while a run holds the sandbox it took,
 * many runs taking, refilling and replacing at once while waiting
 * sandboxes get killed, every sandbox alive at once running as a uid of
 * its own, and the CPU weight a sandbox waits at and runs at. The pool's
 * other cases are test_pool.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "unit/sandbox/pool/pool_rig.h"

/* ---- refills and the run that took a sandbox ---------------------------------- */

struct bg_run {
    struct rig *g;
    struct run req;
    struct exec_cancel *cancel;
    struct exec_result res;
    int rc;
    pthread_t th;
};

static void *bg_main(void *arg)
{
    struct bg_run *b = arg;
    struct err err = ERR_INIT;
    b->req.cancel = b->cancel;
    b->rc = exec_run(b->g->exec, &b->req, &b->res, &err);
    err_clear(&err);
    return NULL;
}

/* Starts a Python run of code in the background; returns once its program
 * has the code (hang guard). */
static void bg_start(struct rig *g, struct bg_run *b, const char *code)
{
    *b = (struct bg_run){.g = g, .req = request(PY, code, g->cfg.memory_mb)};
    b->cancel = exec_cancel_new();
    exec_result_init(&b->res);
    assert_int_equal(pthread_create(&b->th, NULL, bg_main, b), 0);
    struct fake_sandbox_info info;
    for (int i = 0; i < GUARD / 5; i++) {
        if (count_ran(g, code, &info) > 0)
            return;
        usleep(5000);
    }
    exec_cancel(b->cancel);
    pthread_join(b->th, NULL);
    fail_msg("the run of \"%s\" never reached its program", code);
}

static void bg_stop(struct bg_run *b)
{
    exec_cancel(b->cancel);
    pthread_join(b->th, NULL);
    assert_int_equal(b->rc, 0);
    assert_int_equal(b->res.status, EXEC_CANCELLED);
    exec_result_free(&b->res);
    exec_cancel_free(b->cancel);
}

/* Opens the rig with this refill delay and programs that run until
 * cancelled, once the Python pool is full. */
static void open_endless(struct rig *g, long long refill_delay_ms)
{
    g->cfg.pool_refill_delay_ms = refill_delay_ms;
    struct fake_program p = {.run_ms = FAKE_RUN_FOREVER};
    fake_backend_set_program(g->fake, &p);
    rig_open(g);
    wait_ready(g, PY, 1);
}

/* While a run that took the waiting sandbox goes on, the pool does not
 * set up the next one (within --pool-refill-delay-ms, here an hour); it
 * does as soon as the run ends. The wait below can only hide a fault on a
 * slow machine, never invent one. */
static void test_refill_waits_for_run(void **state)
{
    struct rig *g = *state;
    open_endless(g, 3600 * 1000);
    wait_ready(g, JS, 1);
    int creates = fake_backend_count(g->fake, FAKE_STEP_CREATE, NULL);
    struct bg_run b;
    bg_start(g, &b, "while True: pass");
    usleep(300 * 1000);
    int during = fake_backend_count(g->fake, FAKE_STEP_CREATE, NULL);
    size_t ready = stats(g, PY).ready;
    bg_stop(&b); /* before any assert: the run must end either way */
    assert_int_equal(during, creates);
    assert_int_equal(ready, 0);
    wait_ready(g, PY, 1);
    assert_true(stats(g, PY).hits == 1);
    rig_close(g);
    assert_all_gone(g);
}

/* With a refill delay of 0 the pool refills while the run goes on. */
static void test_refill_at_once(void **state)
{
    struct rig *g = *state;
    open_endless(g, 0);
    struct bg_run b;
    bg_start(g, &b, "while True: pass");
    bool refilled = reached_ready(g, PY, 1);
    bg_stop(&b);
    assert_true(refilled);
    rig_close(g);
    assert_all_gone(g);
}

/* A run that finds the pool empty ends the wait: demand outruns the pool,
 * so it refills while the first run still goes on. */
static void test_miss_ends_refill_wait(void **state)
{
    struct rig *g = *state;
    open_endless(g, 3600 * 1000);
    struct bg_run first, second;
    bg_start(g, &first, "first");
    bg_start(g, &second, "second");
    unsigned long long misses = stats(g, PY).misses;
    bool refilled = reached_ready(g, PY, 1);
    bg_stop(&second);
    bg_stop(&first);
    assert_true(misses == 1);
    assert_true(refilled);
    rig_close(g);
    assert_all_gone(g);
}

/* ---- concurrency ------------------------------------------------------------ */

#define STRESS_THREADS 8
#define STRESS_RUNS    6

struct stress {
    struct rig *g;
    int index;
    atomic_int failures;
    atomic_bool stop;
};

static void *stress_runner(void *arg)
{
    struct stress *st = arg;
    struct rig *g = st->g;
    for (int i = 0; i < STRESS_RUNS; i++) {
        char code[64];
        snprintf(code, sizeof(code), "stress %d %d", st->index, i);
        const struct langtable_lang *lang = (i + st->index) % 2 ? JS : PY;
        struct run req = request(lang, code, g->cfg.memory_mb);
        struct exec_result res;
        exec_result_init(&res);
        struct err err = ERR_INIT;
        if (exec_run(g->exec, &req, &res, &err) < 0 || res.status != EXEC_OK || res.out.len != 3 ||
            memcmp(res.out.data, "ok\n", 3) != 0) {
            /* Said here: the assertion below only counts. */
            fprintf(stderr, "stress run %d/%d: status %s, %zu bytes out: %s\n", st->index, i,
                    exec_status_name(res.status), res.out.len,
                    res.message ? res.message : err_msg(&err));
            atomic_fetch_add(&st->failures, 1);
        }
        err_clear(&err);
        exec_result_free(&res);
    }
    return NULL;
}

/* Kills a waiting sandbox now and then, as an operator or the OOM killer
 * might, while runs take them. Checked and killed in one step: a kill that
 * lands after a run took the sandbox and sent its code would fail that
 * run (exit 137, no record), which no daemon can avoid. */
static void *stress_killer(void *arg)
{
    struct stress *st = arg;
    while (!atomic_load(&st->stop)) {
        fake_backend_kill_waiting(st->g->fake, NULL);
        usleep(2000);
    }
    return NULL;
}

/* Many runs at once take, refill and replace through one pool while
 * waiting sandboxes get killed: every run succeeds, nothing is left.
 * Under TSan and ASan this is the pool's race and leak check. */
static void test_concurrent_runs_and_kills(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_size = 2;
    struct fake_program p = {.out = "ok\n", .out_len = 3};
    fake_backend_set_program(g->fake, &p);
    rig_open(g);
    struct stress st[STRESS_THREADS];
    struct stress killer = {.g = g};
    pthread_t th[STRESS_THREADS], kth;
    assert_int_equal(pthread_create(&kth, NULL, stress_killer, &killer), 0);
    for (int i = 0; i < STRESS_THREADS; i++) {
        st[i] = (struct stress){.g = g, .index = i};
        assert_int_equal(pthread_create(&th[i], NULL, stress_runner, &st[i]), 0);
    }
    int failures = 0;
    for (int i = 0; i < STRESS_THREADS; i++) {
        pthread_join(th[i], NULL);
        failures += atomic_load(&st[i].failures);
    }
    atomic_store(&killer.stop, true);
    pthread_join(kth, NULL);
    assert_int_equal(failures, 0);
    struct exec_pool_stats py = stats(g, PY), js = stats(g, JS);
    assert_true(py.hits + py.misses + js.hits + js.misses >= STRESS_THREADS * STRESS_RUNS);
    rig_close(g);
    assert_all_gone(g);
}

/* ---- users -------------------------------------------------------------------- */

struct held_run {
    struct rig *g;
    struct run req;
    struct exec_cancel *cancel;
    pthread_t th;
};

static void *held_run_main(void *arg)
{
    struct held_run *h = arg;
    struct exec_result res;
    exec_result_init(&res);
    h->req.cancel = h->cancel;
    exec_run(h->g->exec, &h->req, &res, NULL);
    exec_result_free(&res);
    return NULL;
}

/* The users of the sandboxes alive now: each a uid of the range all its
 * own, its gid the same number. Returns how many there are. */
static size_t distinct_users(struct rig *g)
{
    enum { MAX_LIVE = 64 };
    unsigned long seen[MAX_LIVE];
    size_t k = 0;
    unsigned long first = (unsigned long)g->cfg.sandbox_uid_base;
    unsigned long last = first + (unsigned long)g->cfg.sandbox_uid_count - 1;
    size_t n = 0;
    struct fake_sandbox_info *all = fake_backend_all(g->fake, &n);
    for (size_t i = 0; i < n; i++) {
        if (all[i].removed)
            continue;
        unsigned long uid = all[i].uid, gid = all[i].gid;
        assert_int_equal(uid, gid);
        assert_in_range(uid, first, last);
        for (size_t j = 0; j < k; j++)
            if (seen[j] == uid)
                fail_msg("two live sandboxes run as uid %lu", uid);
        assert_true(k < MAX_LIVE);
        seen[k++] = uid;
    }
    free(all);
    return k;
}

/* Every sandbox alive at once, waiting in a pool or running pooled or on
 * demand, runs as a uid of its own (sandbox/pool/uids.h), so nproc counts
 * each apart. */
static void test_sandbox_users(void **state)
{
    struct rig *g = *state;
    assert_true(g->cfg.sandbox_uid_count > 0);
    g->cfg.pool_size = 2;
    struct fake_program p = {.run_ms = FAKE_RUN_FOREVER};
    fake_backend_set_program(g->fake, &p);
    rig_open(g);
    wait_ready(g, PY, 2);
    wait_ready(g, JS, 2);
    assert_int_equal(distinct_users(g), 4);
    /* Two pooled runs and one on demand (other limits), all at once. */
    struct held_run h[3];
    const char *codes[3] = {"held 0", "held 1", "held 2"};
    for (int i = 0; i < 3; i++) {
        h[i] = (struct held_run){.g = g, .cancel = exec_cancel_new()};
        h[i].req =
            request(i == 1 ? JS : PY, codes[i], i == 2 ? g->cfg.memory_mb * 2 : g->cfg.memory_mb);
        assert_int_equal(pthread_create(&h[i].th, NULL, held_run_main, &h[i]), 0);
    }
    bool all_running = false;
    struct fake_sandbox_info info;
    for (int t = 0; t < GUARD / 5 && !all_running; t++) {
        all_running = count_ran(g, codes[0], &info) == 1 && count_ran(g, codes[1], &info) == 1 &&
                      count_ran(g, codes[2], &info) == 1;
        if (!all_running)
            usleep(5000);
    }
    size_t live = all_running ? distinct_users(g) : 0;
    for (int i = 0; i < 3; i++) {
        exec_cancel(h[i].cancel);
        pthread_join(h[i].th, NULL);
        exec_cancel_free(h[i].cancel);
    }
    assert_true(all_running);
    assert_true(live >= 3);
    rig_close(g);
    assert_all_gone(g);
}

/* ---- CPU weights ---------------------------------------------------------------- */

/* A sandbox waits at the low weight and runs at the normal one, raised
 * within the take; where weights cannot be changed, the one set up at the
 * low weight is not kept, and the rest are made at the normal weight
 * without a failure counted. */
static void test_weight_hand_over(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "hi\n", .out_len = 3};
    fake_backend_set_program(g->fake, &p);
    rig_open(g);
    wait_ready(g, PY, 1);
    char id[FAKE_BACKEND_ID_MAX + 1];
    struct fake_sandbox_info info;
    assert_true(find_waiting(g, PY, id));
    assert_true(fake_backend_info(g->fake, id, &info));
    assert_int_equal(info.cpu_shares, BACKEND_CPU_SHARES_LOW);
    assert_int_equal(info.weight_now, BACKEND_CPU_SHARES_LOW);

    struct run req = request(PY, "print('hi')", g->cfg.memory_mb);
    run_ok(g, &req, "hi\n");
    sandbox_of(g, "print('hi')", &info);
    assert_string_equal(info.id, id);
    assert_int_equal(info.weight_now, 1024);

    fake_backend_refuse_weights(g->fake, true);
    req = request(PY, "print('hi') # 2", g->cfg.memory_mb);
    run_ok(g, &req, "hi\n");
    wait_ready(g, PY, 1);
    assert_true(find_waiting(g, PY, id));
    assert_true(fake_backend_info(g->fake, id, &info));
    assert_int_equal(info.cpu_shares, 0);
    assert_true(stats(g, PY).failed == 0);
    rig_close(g);
    assert_all_gone(g);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_refill_waits_for_run),      T(test_refill_at_once), T(test_miss_ends_refill_wait),
        T(test_concurrent_runs_and_kills), T(test_sandbox_users),  T(test_weight_hand_over),
    };
#undef T
    return cmocka_run_group_tests_name("pool_refill", tests, NULL, NULL);
}
