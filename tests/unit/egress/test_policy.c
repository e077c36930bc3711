/* egress/policy.c: the caps' defaults and checks, a policy's label, and
 * the run's usage: connection admission against both caps, bytes taken
 * up to a cap and given back, and exactly the cap granted to threads that
 * take at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "egress/policy.h"

static void caps_bad(const struct egress_caps *caps, const char *want)
{
    struct err err = ERR_INIT;
    assert_int_equal(egress_caps_check(caps, &err), -1);
    if (!strstr(err_msg(&err), want))
        fail_msg("'%s' lacks '%s'", err_msg(&err), want);
    err_clear(&err);
}

static void test_caps(void **state)
{
    (void)state;
    struct egress_caps caps;
    egress_caps_default(&caps);
    assert_int_equal(egress_caps_check(&caps, NULL), 0);
    assert_int_equal(caps.conns_open, EGRESS_CONNS_OPEN_DEFAULT);
    assert_int_equal(caps.connect_ms, EGRESS_CONNECT_MS_DEFAULT);

    struct egress_caps bad = caps;
    bad.conns_open = 0;
    caps_bad(&bad, "connections open is 0");
    bad = caps;
    bad.conns_total = EGRESS_CONNS_CAP_MAX + 1;
    caps_bad(&bad, "connections made");
    bad = caps;
    bad.bytes_down = 0;
    caps_bad(&bad, "bytes down");
    bad = caps;
    bad.conn_ms = -5;
    caps_bad(&bad, "connection time is -5 ms");
    bad = caps;
    bad.head_ms = EGRESS_MS_CAP_MAX + 1;
    caps_bad(&bad, "request head time");

    struct egress_policy *p = calloc(1, sizeof(*p));
    assert_non_null(p);
    struct err err = ERR_INIT;
    assert_int_equal(egress_policy_init(p, "run\n7", NULL, NULL, NULL, NULL, &err), 0);
    assert_string_equal(p->label, "run\\n7");
    assert_int_equal(p->caps.bytes_up, EGRESS_BYTES_UP_DEFAULT);
    assert_int_equal(p->patterns.n, 0);
    bad = caps;
    bad.connect_ms = 0;
    assert_int_equal(egress_policy_init(p, NULL, NULL, NULL, NULL, &bad, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    err_clear(&err);
    free(p);
}

static void test_admission(void **state)
{
    (void)state;
    struct egress_caps caps;
    egress_caps_default(&caps);
    caps.conns_open = 2;
    caps.conns_total = 3;
    struct egress_usage u;
    egress_usage_init(&u);
    assert_int_equal(egress_usage_admit(&u, &caps), EGRESS_ADMITTED);
    assert_int_equal(egress_usage_admit(&u, &caps), EGRESS_ADMITTED);
    assert_int_equal(egress_usage_admit(&u, &caps), EGRESS_OVER_OPEN);
    egress_usage_leave(&u);
    assert_int_equal(egress_usage_admit(&u, &caps), EGRESS_ADMITTED);
    egress_usage_leave(&u);
    egress_usage_leave(&u);
    assert_int_equal(egress_usage_admit(&u, &caps), EGRESS_OVER_TOTAL);
    unsigned open = 9;
    unsigned total = 0;
    egress_usage_conns(&u, &open, &total);
    assert_int_equal(open, 0);
    assert_int_equal(total, 3);
    egress_usage_destroy(&u);
}

static void test_bytes(void **state)
{
    (void)state;
    struct egress_caps caps;
    egress_caps_default(&caps);
    caps.bytes_up = 100;
    caps.bytes_down = 7;
    struct egress_usage u;
    egress_usage_init(&u);
    assert_int_equal(egress_usage_take(&u, &caps, EGRESS_UP, 60), 60);
    assert_int_equal(egress_usage_take(&u, &caps, EGRESS_UP, 60), 40);
    assert_int_equal(egress_usage_take(&u, &caps, EGRESS_UP, 1), 0);
    egress_usage_give_back(&u, EGRESS_UP, 10);
    assert_int_equal(egress_usage_take(&u, &caps, EGRESS_UP, 20), 10);
    assert_int_equal(egress_usage_bytes(&u, EGRESS_UP), 100);
    assert_int_equal(egress_usage_take(&u, &caps, EGRESS_DOWN, 5), 5);
    assert_int_equal(egress_usage_take(&u, &caps, EGRESS_DOWN, 5), 2);
    assert_int_equal(egress_usage_bytes(&u, EGRESS_DOWN), 7);
    egress_usage_destroy(&u);
}

#define TAKERS 8
#define TAKES  5000

struct taker {
    struct egress_usage *u;
    const struct egress_caps *caps;
    unsigned long long got;
};

static void *taker_main(void *arg)
{
    struct taker *t = arg;
    for (int i = 0; i < TAKES; i++)
        t->got += egress_usage_take(t->u, t->caps, EGRESS_UP, 3);
    return NULL;
}

static void test_bytes_threads(void **state)
{
    (void)state;
    struct egress_caps caps;
    egress_caps_default(&caps);
    caps.bytes_up = TAKERS * TAKES; /* a third of what they ask */
    struct egress_usage u;
    egress_usage_init(&u);
    pthread_t t[TAKERS];
    struct taker tk[TAKERS];
    for (int i = 0; i < TAKERS; i++) {
        tk[i] = (struct taker){.u = &u, .caps = &caps};
        assert_int_equal(pthread_create(&t[i], NULL, taker_main, &tk[i]), 0);
    }
    unsigned long long sum = 0;
    for (int i = 0; i < TAKERS; i++) {
        pthread_join(t[i], NULL);
        sum += tk[i].got;
    }
    assert_int_equal(sum, caps.bytes_up);
    assert_int_equal(egress_usage_bytes(&u, EGRESS_UP), caps.bytes_up);
    egress_usage_destroy(&u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_admission),
        cmocka_unit_test(test_bytes),
        cmocka_unit_test(test_bytes_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
