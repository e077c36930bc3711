/* demand.c: a fixed size stays fixed; targets stay within the bounds;
 * a steady rate grows the target as rate x refill (with headroom) and the
 * measured refill time moves it; a profile with no calls shrinks to its
 * minimum; a pool runs dry when rate x refill (with the margin) reaches its ready ones
 * and one more; the daemon-wide cap trims the largest first and keeps the
 * minimums. Times are the test's own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "sandbox/pool/demand.h"

/* Calls every period_ms from t0 for n calls; returns the last call's time. */
static double steady(struct demand *d, double t0, double period_ms, int n)
{
    double t = t0;
    for (int i = 0; i < n; i++, t += period_ms)
        demand_call(d, t);
    return t - period_ms;
}

static void test_fixed(void **state)
{
    (void)state;
    struct demand d;
    demand_init(&d, 2, 2);
    char why[DEMAND_WHY_MAX];
    assert_int_equal(demand_target(&d, 0, why), 2);
    assert_string_equal(why, "fixed size");
    double t = steady(&d, 0, 100, 200);
    assert_int_equal(demand_target(&d, t, NULL), 2);
    /* A max below the min is the min. */
    demand_init(&d, 3, 1);
    assert_int_equal(demand_target(&d, 0, NULL), 3);
}

static void test_rate_settles(void **state)
{
    (void)state;
    struct demand d;
    demand_init(&d, 0, 16);
    assert_true(demand_rate(&d, 0) == 0.0);
    /* Three calls a second for two minutes: about 3/s. */
    double t = steady(&d, 0, 1000.0 / 3.0, 360);
    assert_true(fabs(demand_rate(&d, t) - 3.0) < 0.3);
    /* It decays once calls stop: about e^-1 after tau. */
    double later = demand_rate(&d, t + DEMAND_IDLE_MS / DEMAND_TAU_PART);
    assert_true(later > 0.9 && later < 1.3);
}

static void test_grows_with_rate_and_refill(void **state)
{
    (void)state;
    struct demand d;
    demand_init(&d, 1, 8);
    char why[DEMAND_WHY_MAX];
    /* A call every 3 s with a guessed 1 s refill: 1 is enough. */
    double t = steady(&d, 0, 3000, 40);
    assert_int_equal(demand_target(&d, t, why), 1);
    assert_non_null(strstr(why, "(guessed)"));
    /* Three a second, 1 s refill: 3 x 1 x 1.5 = 4.5 -> 5. */
    t = steady(&d, t + 333, 1000.0 / 3.0, 360);
    demand_refilled(&d, 1000);
    assert_int_equal(demand_target(&d, t, why), 5);
    assert_null(strstr(why, "(guessed)"));
    /* Refills get slower (2 s): more must wait, up to the maximum. */
    for (int i = 0; i < 20; i++)
        demand_refilled(&d, 2000);
    assert_int_equal(demand_target(&d, t, why), 8);
    assert_non_null(strstr(why, "held to the maximum"));
    /* Faster ones (300 ms): fewer. */
    for (int i = 0; i < 20; i++)
        demand_refilled(&d, 300);
    size_t n = demand_target(&d, t, NULL);
    assert_true(n >= 1 && n <= 2);
    /* A negative time is ignored. */
    double before = d.refill_ms;
    demand_refilled(&d, -5);
    assert_true(d.refill_ms == before);
}

static void test_idle_shrinks_to_min(void **state)
{
    (void)state;
    struct demand d;
    demand_init(&d, 0, 8);
    char why[DEMAND_WHY_MAX];
    assert_int_equal(demand_target(&d, 0, why), 0);
    assert_string_equal(why, "idle: the minimum");
    double t = steady(&d, 0, 200, 300);
    demand_refilled(&d, 1000);
    assert_true(demand_target(&d, t, NULL) > 2);
    /* Decaying, then idle. */
    assert_true(demand_target(&d, t + 30000, NULL) <= 2);
    assert_int_equal(demand_target(&d, t + DEMAND_IDLE_MS, why), 0);
    assert_string_equal(why, "idle: the minimum");
    /* With a minimum, idle keeps it, and a lone call keeps at least one. */
    demand_init(&d, 2, 8);
    assert_int_equal(demand_target(&d, 0, NULL), 2);
    demand_init(&d, 0, 8);
    demand_call(&d, 0);
    assert_int_equal(demand_target(&d, 1000, why), 1);
    /* A maximum of 0 holds even a busy profile to none. */
    demand_init(&d, 0, 0);
    t = steady(&d, 0, 100, 100);
    assert_int_equal(demand_target(&d, t, NULL), 0);
}

static void test_runs_dry(void **state)
{
    (void)state;
    struct demand d;
    demand_init(&d, 1, 8);
    /* No calls: every refill takes its preloads. */
    assert_false(demand_runs_dry(&d, 0, 0));
    /* Three a second with 800 ms refills: about 2.4 calls come while one is
     * made, 3.6 with the margin, so with 2 ready the pool runs dry first,
     * with 3 it does not. */
    double t = steady(&d, 0, 1000.0 / 3.0, 360);
    demand_refilled(&d, 800);
    assert_true(demand_runs_dry(&d, 0, t));
    assert_true(demand_runs_dry(&d, 2, t));
    assert_false(demand_runs_dry(&d, 3, t));
    /* One a second with 500 ms refills: even an empty pool is refilled
     * before the next call (the rate just after a call is about 1.18, so
     * 0.88 with the margin). */
    demand_init(&d, 1, 8);
    t = steady(&d, 0, 1000.0, 120);
    demand_refilled(&d, 500);
    assert_false(demand_runs_dry(&d, 0, t));
    /* A fixed size runs dry too (it decides how a refill is made, not how
     * many): four a second with the guessed 1 s refill. */
    demand_init(&d, 2, 2);
    t = steady(&d, 0, 250, 200);
    assert_true(demand_runs_dry(&d, 2, t));
    /* Idle: never. */
    assert_false(demand_runs_dry(&d, 0, t + DEMAND_IDLE_MS));
}

static void test_share_under_cap(void **state)
{
    (void)state;
    size_t t[4] = {6, 2, 1, 3}, mins[4] = {1, 2, 0, 0};
    assert_int_equal(demand_share(t, mins, 4, 8), 8);
    /* The largest gave first: 6 -> 3, then 3s in turn. */
    assert_int_equal(t[0] + t[1] + t[2] + t[3], 8);
    assert_true(t[0] <= 3 && t[3] <= 3);
    assert_int_equal(t[1], 2);
    /* Minimums are kept past the cap. */
    size_t u[3] = {3, 2, 4}, umins[3] = {3, 2, 1};
    assert_int_equal(demand_share(u, umins, 3, 2), 6);
    assert_int_equal(u[0], 3);
    assert_int_equal(u[1], 2);
    assert_int_equal(u[2], 1);
    /* Under the cap: untouched. */
    size_t v[2] = {1, 1}, vmins[2] = {0, 0};
    assert_int_equal(demand_share(v, vmins, 2, 10), 2);
    assert_int_equal(v[0], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed),
        cmocka_unit_test(test_rate_settles),
        cmocka_unit_test(test_grows_with_rate_and_refill),
        cmocka_unit_test(test_idle_shrinks_to_min),
        cmocka_unit_test(test_runs_dry),
        cmocka_unit_test(test_share_under_cap),
    };
    return cmocka_run_group_tests_name("demand", tests, NULL, NULL);
}
