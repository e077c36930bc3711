/* base/threads.c: every thread asked for runs and is joined, and a
 * thread's flag says whether it is there to join. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "base/threads.h"

static void *count_main(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    return NULL;
}

static void test_start_and_join(void **state)
{
    (void)state;
    atomic_int ran = 0;
    pthread_t many[5];
    size_t started = 99;
    struct err err = ERR_INIT;
    assert_int_equal(threads_start(many, 5, &started, count_main, &ran, "counters", &err), 0);
    assert_int_equal(started, 5);
    pthread_t one;
    bool one_started = false;
    assert_int_equal(thread_start(&one, &one_started, count_main, &ran, "a counter", &err), 0);
    assert_true(one_started);
    threads_join(many, started);
    thread_join(&one, &one_started);
    assert_false(one_started);
    assert_int_equal(atomic_load(&ran), 6);
    thread_join(&one, &one_started); /* joined once only */
    assert_int_equal(err.code, ERR_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_and_join),
    };
    return cmocka_run_group_tests_name("threads", tests, NULL, NULL);
}
