/* admission.c: FIFO order within an owner, owners served in turn, the
 * bounds (the queue's and one owner's), refusal at the deadline,
 * withdrawal, shutdown, and a many-thread stress in which every job is
 * accounted for exactly once (run under ASan and TSan by make test). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "base/admission.h"
#include "unit/threads.h"

/* A job that can be held inside run() until released. */
struct tjob {
    struct admission_job job;
    int no;
    atomic_int ran;
    atomic_int refused;
    int why;
    atomic_bool hold;
};

static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;
static int order[64];
static int n_order;

static struct tjob *of(struct admission_job *job)
{
    return (struct tjob *)(void *)((char *)job - offsetof(struct tjob, job));
}

static void t_run(struct admission_job *job)
{
    struct tjob *t = of(job);
    pthread_mutex_lock(&order_lock);
    if (n_order < (int)ARRAY_SIZE(order))
        order[n_order++] = t->no;
    pthread_mutex_unlock(&order_lock);
    while (atomic_load(&t->hold))
        usleep(1000);
    atomic_fetch_add(&t->ran, 1);
}

static void t_refuse(struct admission_job *job, enum admission_refusal why)
{
    struct tjob *t = of(job);
    t->why = (int)why;
    atomic_fetch_add(&t->refused, 1);
}

static void tjob_init(struct tjob *t, int no, bool hold, double deadline_ms)
{
    memset(t, 0, sizeof(*t));
    t->no = no;
    t->job.run = t_run;
    t->job.refuse = t_refuse;
    t->job.deadline_ms = deadline_ms;
    atomic_init(&t->hold, hold);
}

/* Waits up to 10 s for *v to reach want (nothing here is asserted on time). */
static void wait_for(atomic_int *v, int want)
{
    for (int i = 0; i < 10000 && atomic_load(v) < want; i++)
        usleep(1000);
    assert_int_equal(atomic_load(v), want);
}

static void wait_running(struct admission *a, size_t want)
{
    struct admission_stats st;
    for (int i = 0; i < 10000; i++) {
        admission_get_stats(a, &st);
        if (st.running == want)
            return;
        usleep(1000);
    }
    fail_msg("running %zu, want %zu", st.running, want);
}

/* An admission of this many workers and waiting places; it must start. */
static struct admission *new_admission(size_t workers, size_t max_waiting,
                                       size_t max_waiting_per_owner)
{
    struct err err = ERR_INIT;
    struct admission *a = admission_new(workers, max_waiting, max_waiting_per_owner, &err);
    if (!a)
        fail_msg("admission_new: %s", err_msg(&err));
    return a;
}

/* Submits job no for owner o (NULL: the pool's own), not held. */
static void submit_as(struct admission *a, struct tjob *t, int no, struct admission_owner *o)
{
    tjob_init(t, no, false, 0);
    t->job.owner = o;
    assert_int_equal(admission_submit(a, &t->job), ADMISSION_QUEUED);
}

/* Submits t (number no, owner o or none), which holds the one worker
 * until released, and waits until it runs. */
static void submit_busy(struct admission *a, struct tjob *t, int no, struct admission_owner *o)
{
    tjob_init(t, no, true, 0);
    t->job.owner = o;
    assert_int_equal(admission_submit(a, &t->job), ADMISSION_QUEUED);
    wait_running(a, 1);
}

/* One worker, busy with *busy (held), and *waiting in the queue. */
static struct admission *one_busy_one_waiting(struct tjob *busy, struct tjob *waiting)
{
    struct admission *a = new_admission(1, 4, 4);
    submit_busy(a, busy, 0, NULL);
    submit_as(a, waiting, 1, NULL);
    return a;
}

static void test_fifo_and_bounds(void **state)
{
    (void)state;
    struct admission *a = new_admission(1, 3, 3);
    n_order = 0;
    struct tjob j[6];
    submit_busy(a, &j[0], 0, NULL);
    for (int i = 1; i <= 3; i++)
        submit_as(a, &j[i], i, NULL);
    /* One running, three waiting: the fifth has no room. */
    tjob_init(&j[4], 4, false, 0);
    assert_int_equal(admission_submit(a, &j[4].job), -1);
    struct admission_stats st;
    admission_get_stats(a, &st);
    assert_int_equal(st.running, 1);
    assert_int_equal(st.waiting, 3);
    atomic_store(&j[0].hold, false);
    for (int i = 0; i <= 3; i++)
        wait_for(&j[i].ran, 1);
    assert_int_equal(n_order, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(order[i], i);
    assert_int_equal(atomic_load(&j[4].ran), 0);
    admission_free(a);
}

/* Waits up to 10 s until n runs have begun. */
static void wait_order(int n)
{
    int got = 0;
    for (int i = 0; i < 10000; i++) {
        pthread_mutex_lock(&order_lock);
        got = n_order;
        pthread_mutex_unlock(&order_lock);
        if (got >= n)
            return;
        usleep(1000);
    }
    fail_msg("%d runs began, want %d", got, n);
}

static void assert_order(const int *want, int n)
{
    pthread_mutex_lock(&order_lock);
    int got_n = n_order;
    int got[64];
    memcpy(got, order, sizeof(got));
    pthread_mutex_unlock(&order_lock);
    assert_int_equal(got_n, n);
    for (int i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("run %d was job %d, want %d", i, got[i], want[i]);
}

/* A's backlog does not hold B and C back: each waits for the run going on
 * only, then owners take turns, each owner's jobs in its own order. */
static void test_owners_take_turns(void **state)
{
    (void)state;
    struct admission *a = new_admission(1, 16, 16);
    struct admission_owner A = {0}, B = {0}, C = {0};
    n_order = 0;
    struct tjob j[8];
    submit_busy(a, &j[0], 0, &A);
    for (int i = 1; i <= 4; i++)
        submit_as(a, &j[i], i, &A); /* 1..4: A's backlog */
    submit_as(a, &j[5], 5, &B);
    submit_as(a, &j[6], 6, &C);
    submit_as(a, &j[7], 7, &B);
    struct admission_stats st;
    admission_get_stats(a, &st);
    assert_int_equal(st.waiting, 7);
    assert_int_equal(st.owners_waiting, 3);
    atomic_store(&j[0].hold, false);
    for (int i = 0; i < 8; i++)
        wait_for(&j[i].ran, 1);
    static const int want[] = {0, 5, 6, 1, 7, 2, 3, 4};
    assert_order(want, 8);
    admission_get_stats(a, &st);
    assert_int_equal(st.owners_waiting, 0);
    admission_free(a);
}

/* With several workers a newcomer takes the next slot that frees, ahead
 * of a backlog that was there before it. */
static void test_newcomer_gets_next_slot(void **state)
{
    (void)state;
    struct admission *a = new_admission(2, 16, 16);
    struct admission_owner A = {0}, B = {0};
    n_order = 0;
    struct tjob held[2], j[6];
    for (int i = 0; i < 2; i++) {
        tjob_init(&held[i], 100 + i, true, 0);
        held[i].job.owner = &A;
        assert_int_equal(admission_submit(a, &held[i].job), ADMISSION_QUEUED);
    }
    wait_running(a, 2);
    wait_order(2); /* both held runs have noted their start */
    for (int i = 0; i < 5; i++)
        submit_as(a, &j[i], i, &A);
    submit_as(a, &j[5], 5, &B);
    /* Hold the next run too, so that the order is the one taken. */
    atomic_store(&j[5].hold, true);
    atomic_store(&held[0].hold, false);
    wait_order(3);
    pthread_mutex_lock(&order_lock);
    int third = order[2], began = n_order;
    pthread_mutex_unlock(&order_lock); /* not held past a failed assert */
    assert_int_equal(began, 3);
    assert_int_equal(third, 5);
    atomic_store(&held[1].hold, false);
    atomic_store(&j[5].hold, false);
    for (int i = 0; i < 6; i++)
        wait_for(&j[i].ran, 1);
    admission_free(a);
}

/* One owner waits at most max_waiting_per_owner jobs; others still get in
 * until the queue itself is full. */
static void test_owner_cap(void **state)
{
    (void)state;
    struct admission *a = new_admission(1, 3, 2);
    struct admission_owner A = {0}, B = {0}, C = {0};
    struct tjob busy, j[5];
    submit_busy(a, &busy, 0, &A);
    submit_as(a, &j[0], 1, &A);
    submit_as(a, &j[1], 2, &A);
    tjob_init(&j[2], 3, false, 0);
    j[2].job.owner = &A;
    assert_int_equal(admission_submit(a, &j[2].job), ADMISSION_OWNER_FULL);
    submit_as(a, &j[3], 4, &B);
    tjob_init(&j[4], 5, false, 0);
    j[4].job.owner = &C;
    assert_int_equal(admission_submit(a, &j[4].job), ADMISSION_FULL);
    /* Refused jobs stay the caller's: they never run. */
    atomic_store(&busy.hold, false);
    wait_for(&j[0].ran, 1);
    wait_for(&j[1].ran, 1);
    wait_for(&j[3].ran, 1);
    assert_int_equal(atomic_load(&j[2].ran) + atomic_load(&j[2].refused), 0);
    assert_int_equal(atomic_load(&j[4].ran) + atomic_load(&j[4].refused), 0);
    admission_free(a);
}

/* Withdrawals and expiries take an owner out of turn when its last job
 * goes, and keep the others' order. */
static void test_owner_withdraw_and_expire(void **state)
{
    (void)state;
    struct admission *a = new_admission(1, 8, 8);
    struct admission_owner A = {0}, B = {0}, C = {0};
    n_order = 0;
    struct tjob busy, a1, a2, b1, c1, c2;
    submit_busy(a, &busy, 0, &C);
    submit_as(a, &a1, 1, &A);
    submit_as(a, &a2, 2, &A);
    tjob_init(&b1, 3, false, util_now_ms() + 50);
    b1.job.owner = &B;
    assert_int_equal(admission_submit(a, &b1.job), ADMISSION_QUEUED);
    submit_as(a, &c1, 4, &C);
    submit_as(a, &c2, 5, &C);
    assert_true(admission_withdraw(a, &a2.job));
    assert_true(admission_withdraw(a, &c1.job));
    wait_for(&b1.refused, 1);
    assert_int_equal(b1.why, ADMISSION_EXPIRED);
    struct admission_stats st;
    admission_get_stats(a, &st);
    assert_int_equal(st.waiting, 2);
    assert_int_equal(st.owners_waiting, 2);
    assert_true(admission_withdraw(a, &a1.job));
    admission_get_stats(a, &st);
    assert_int_equal(st.owners_waiting, 1);
    submit_as(a, &a2, 6, &A);
    atomic_store(&busy.hold, false);
    wait_for(&a2.ran, 1);
    wait_for(&c2.ran, 1);
    /* A (never served) goes before C, whose run was the one going on. */
    static const int want[] = {0, 6, 5};
    assert_order(want, 3);
    assert_int_equal(atomic_load(&a1.ran) + atomic_load(&c1.ran) + atomic_load(&b1.ran), 0);
    admission_free(a);
}

static void test_no_queue_takes_only_idle_workers(void **state)
{
    (void)state;
    struct admission *a = new_admission(2, 0, 0);
    struct tjob j[3];
    tjob_init(&j[0], 0, true, 0);
    tjob_init(&j[1], 1, true, 0);
    tjob_init(&j[2], 2, false, 0);
    assert_int_equal(admission_submit(a, &j[0].job), 0);
    assert_int_equal(admission_submit(a, &j[1].job), 0);
    wait_running(a, 2);
    assert_int_equal(admission_submit(a, &j[2].job), -1);
    atomic_store(&j[0].hold, false);
    atomic_store(&j[1].hold, false);
    wait_for(&j[0].ran, 1);
    wait_for(&j[1].ran, 1);
    wait_running(a, 0);
    assert_int_equal(admission_submit(a, &j[2].job), 0);
    wait_for(&j[2].ran, 1);
    admission_free(a);
}

/* A job that gives its slot back early (its work done, only its answer
 * left): the next job finds the slot free while the first is still in
 * run(), and the slot is given back once only. */
static struct admission *slot_pool;

static void t_run_give_back(struct admission_job *job)
{
    admission_slot_done(slot_pool);
    admission_slot_done(slot_pool); /* a second call changes nothing */
    t_run(job);
}

static void test_slot_given_back_early(void **state)
{
    (void)state;
    struct admission *a = new_admission(1, 0, 0);
    slot_pool = a;
    struct tjob j[3];
    tjob_init(&j[0], 0, true, 0);
    j[0].job.run = t_run_give_back;
    tjob_init(&j[1], 1, true, 0);
    tjob_init(&j[2], 2, false, 0);
    assert_int_equal(admission_submit(a, &j[0].job), 0);
    wait_running(a, 0); /* held in run(), its slot back */
    assert_int_equal(admission_submit(a, &j[1].job), 0);
    wait_running(a, 1);
    assert_int_equal(admission_submit(a, &j[2].job), -1); /* one slot, and it is j[1]'s */
    atomic_store(&j[0].hold, false);
    wait_for(&j[0].ran, 1);
    wait_running(a, 1); /* j[0]'s return gave nothing back twice */
    atomic_store(&j[1].hold, false);
    wait_for(&j[1].ran, 1);
    wait_running(a, 0);
    admission_free(a);
}

static void test_deadline_refuses(void **state)
{
    (void)state;
    struct admission *a = new_admission(1, 4, 4);
    struct tjob busy, late, patient;
    submit_busy(a, &busy, 0, NULL);
    tjob_init(&late, 1, false, util_now_ms() + 50);
    tjob_init(&patient, 2, false, util_now_ms() + 60000);
    assert_int_equal(admission_submit(a, &late.job), 0);
    assert_int_equal(admission_submit(a, &patient.job), 0);
    wait_for(&late.refused, 1);
    assert_int_equal(late.why, ADMISSION_EXPIRED);
    assert_int_equal(atomic_load(&late.ran), 0);
    /* Refused jobs leave the queue: the patient one runs next. */
    atomic_store(&busy.hold, false);
    wait_for(&patient.ran, 1);
    assert_int_equal(atomic_load(&patient.refused), 0);
    admission_free(a);
}

static void test_withdraw(void **state)
{
    (void)state;
    struct tjob busy, waiting;
    struct admission *a = one_busy_one_waiting(&busy, &waiting);
    assert_true(admission_withdraw(a, &waiting.job));
    assert_false(admission_withdraw(a, &waiting.job));
    assert_false(admission_withdraw(a, &busy.job)); /* running */
    atomic_store(&busy.hold, false);
    wait_for(&busy.ran, 1);
    wait_running(a, 0);
    assert_int_equal(atomic_load(&waiting.ran), 0);
    assert_int_equal(atomic_load(&waiting.refused), 0);
    admission_free(a);
}

static void test_free_refuses_waiting(void **state)
{
    (void)state;
    struct tjob busy, waiting;
    struct admission *a = one_busy_one_waiting(&busy, &waiting);
    atomic_store(&busy.hold, false); /* free waits for the running job */
    admission_free(a);
    assert_int_equal(atomic_load(&busy.ran), 1);
    assert_int_equal(atomic_load(&waiting.ran) + atomic_load(&waiting.refused), 1);
}

/* ---- stress: many submitters, withdrawals, deadlines ---------------------- */

#define STRESS_THREADS 8
#define STRESS_JOBS    2000

struct sjob {
    struct admission_job job;
    atomic_int *ran, *refused;
    atomic_int done; /* run, refuse or withdraw: exactly once */
};

static void s_run(struct admission_job *job)
{
    struct sjob *s = (struct sjob *)(void *)job;
    atomic_fetch_add(s->ran, 1);
    atomic_fetch_add(&s->done, 1);
}

static void s_refuse(struct admission_job *job, enum admission_refusal why)
{
    (void)why;
    struct sjob *s = (struct sjob *)(void *)job;
    atomic_fetch_add(s->refused, 1);
    atomic_fetch_add(&s->done, 1);
}

/* Shared by the submitters; the last slot is no owner at all. */
#define STRESS_OWNERS 5
static struct admission_owner stress_owners[STRESS_OWNERS];

struct stress {
    struct admission *a;
    struct sjob *jobs;
    atomic_int ran, refused, rejected, withdrawn;
    atomic_int max_threads;
};

static void *submitter(void *arg)
{
    struct stress *st = arg;
    for (int i = 0; i < STRESS_JOBS; i++) {
        struct sjob *s = &st->jobs[i];
        s->job.run = s_run;
        s->job.refuse = s_refuse;
        s->ran = &st->ran;
        s->refused = &st->refused;
        /* Some jobs must be refused at their deadline, some withdrawn. */
        s->job.deadline_ms = (i % 7 == 0) ? util_now_ms() + 0.5 : 0;
        s->job.owner = i % (STRESS_OWNERS + 1) < STRESS_OWNERS
                           ? &stress_owners[i % (STRESS_OWNERS + 1)]
                           : NULL;
        if (admission_submit(st->a, &s->job) < 0) {
            atomic_fetch_add(&st->rejected, 1);
            atomic_fetch_add(&s->done, 1);
            continue;
        }
        if (i % 5 == 0 && admission_withdraw(st->a, &s->job)) {
            atomic_fetch_add(&st->withdrawn, 1);
            atomic_fetch_add(&s->done, 1);
        }
        if (i % 200 == 0) {
            int n = count_threads();
            int cur = atomic_load(&st->max_threads);
            while (n > cur && !atomic_compare_exchange_weak(&st->max_threads, &cur, n))
                ;
        }
    }
    return NULL;
}

static void test_stress(void **state)
{
    (void)state;
    int before = count_threads();
    struct admission *a = new_admission(4, 16, 6);
    struct sjob *all = calloc(STRESS_THREADS * STRESS_JOBS, sizeof(*all));
    pthread_t th[STRESS_THREADS];
    struct stress *per = calloc(STRESS_THREADS, sizeof(*per)); /* counters summed below */
    for (int t = 0; t < STRESS_THREADS; t++) {
        per[t].a = a;
        per[t].jobs = all + (size_t)t * STRESS_JOBS;
        assert_int_equal(pthread_create(&th[t], NULL, submitter, &per[t]), 0);
    }
    for (int t = 0; t < STRESS_THREADS; t++)
        pthread_join(th[t], NULL);
    admission_free(a);
    int ran = 0, refused = 0, rejected = 0, withdrawn = 0, max_threads = 0;
    for (int t = 0; t < STRESS_THREADS; t++) {
        ran += atomic_load(&per[t].ran);
        refused += atomic_load(&per[t].refused);
        rejected += atomic_load(&per[t].rejected);
        withdrawn += atomic_load(&per[t].withdrawn);
        if (atomic_load(&per[t].max_threads) > max_threads)
            max_threads = atomic_load(&per[t].max_threads);
    }
    for (int i = 0; i < STRESS_THREADS * STRESS_JOBS; i++)
        if (atomic_load(&all[i].done) != 1)
            fail_msg("job %d finished %d times", i, atomic_load(&all[i].done));
    assert_int_equal(ran + refused + rejected + withdrawn, STRESS_THREADS * STRESS_JOBS);
    for (int o = 0; o < STRESS_OWNERS; o++) {
        assert_int_equal(stress_owners[o].waiting, 0);
        assert_false(stress_owners[o].in_ring);
        assert_true(TAILQ_EMPTY(&stress_owners[o].jobs));
    }
    /* The pool is 4 workers + 1 timer whatever is submitted. */
    assert_true(max_threads <= before + STRESS_THREADS + 5);
    free(per);
    free(all);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_and_bounds),
        cmocka_unit_test(test_owners_take_turns),
        cmocka_unit_test(test_newcomer_gets_next_slot),
        cmocka_unit_test(test_owner_cap),
        cmocka_unit_test(test_owner_withdraw_and_expire),
        cmocka_unit_test(test_no_queue_takes_only_idle_workers),
        cmocka_unit_test(test_slot_given_back_early),
        cmocka_unit_test(test_deadline_refuses),
        cmocka_unit_test(test_withdraw),
        cmocka_unit_test(test_free_refuses_waiting),
        cmocka_unit_test(test_stress),
    };
    return cmocka_run_group_tests_name("admission", tests, NULL, NULL);
}
