/* egress/summary.c: entries stored up to EGRESS_SUMMARY_MAX and counted
 * past it, totals over all, hosts and reasons escaped, and appends from
 * several threads at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/summary.h"

static struct egress_summary s;
static struct egress_report *r;

static int setup(void **state)
{
    (void)state;
    egress_summary_init(&s);
    r = calloc(1, sizeof(*r));
    return r ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    egress_summary_destroy(&s);
    free(r);
    return 0;
}

static void add(const char *host, bool allowed, unsigned long long up, unsigned long long down)
{
    struct egress_entry e = {.port = 443, .allowed = allowed, .up = up, .down = down};
    snprintf(e.host, sizeof(e.host), "%s", host);
    snprintf(e.reason, sizeof(e.reason), "%s", allowed ? "" : "not in the list");
    e.status = allowed ? 200 : 403;
    egress_summary_add(&s, &e);
}

static void test_cap(void **state)
{
    (void)state;
    egress_summary_copy(&s, r);
    assert_int_equal(r->n + r->more + r->allowed + r->refused, 0);
    for (int i = 0; i < EGRESS_SUMMARY_MAX + 6; i++)
        add("a.test", i % 2 == 0, 10, 100);
    egress_summary_copy(&s, r);
    assert_int_equal(r->n, EGRESS_SUMMARY_MAX);
    assert_int_equal(r->more, 6);
    assert_int_equal(r->allowed, (EGRESS_SUMMARY_MAX + 6) / 2);
    assert_int_equal(r->refused, (EGRESS_SUMMARY_MAX + 6) / 2);
    assert_int_equal(r->up, 10 * (EGRESS_SUMMARY_MAX + 6));
    assert_int_equal(r->down, 100 * (EGRESS_SUMMARY_MAX + 6));
    assert_string_equal(r->entries[1].reason, "not in the list");
    assert_int_equal(r->entries[1].status, 403);
}

static void test_escaped(void **state)
{
    (void)state;
    struct egress_entry e = {.port = 80};
    snprintf(e.host, sizeof(e.host), "evil\n\x1b[2J.test");
    snprintf(e.reason, sizeof(e.reason), "why\r\nforged: line");
    egress_summary_add(&s, &e);
    egress_summary_copy(&s, r);
    assert_string_equal(r->entries[0].host, "evil\\n\\x1b[2J.test");
    assert_string_equal(r->entries[0].reason, "why\\r\\nforged: line");

    /* A host that fills its room is cut, still terminated. */
    memset(e.host, 'h', sizeof(e.host));
    egress_summary_add(&s, &e);
    egress_summary_copy(&s, r);
    assert_true(strlen(r->entries[1].host) < sizeof(r->entries[1].host));
}

#define ADDERS 4
#define ADDS   50

static void *adder_main(void *arg)
{
    (void)arg;
    for (int i = 0; i < ADDS; i++)
        add("t.test", true, 1, 2);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t t[ADDERS];
    for (int i = 0; i < ADDERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, adder_main, NULL), 0);
    for (int i = 0; i < ADDERS; i++)
        pthread_join(t[i], NULL);
    egress_summary_copy(&s, r);
    assert_int_equal(r->n + r->more, ADDERS * ADDS);
    assert_int_equal(r->allowed, ADDERS * ADDS);
    assert_int_equal(r->up, ADDERS * ADDS);
    assert_int_equal(r->down, 2 * ADDERS * ADDS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escaped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
