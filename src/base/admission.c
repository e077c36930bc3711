#include "base/admission.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/queue.h>

#include "base/threads.h"

/* The timer thread sleeps at most this long when nothing waits. */
#define IDLE_WAIT_MS 60000.0

struct admission {
    pthread_mutex_t lock;
    pthread_cond_t work;  /* for workers: a job is ready, or stopping */
    pthread_cond_t timer; /* for the timer: the queue changed, or stopping */
    /* Owners with jobs waiting, by round, then by when they joined it:
     * the first is served next. */
    TAILQ_HEAD(owner_ring, admission_owner) ring;
    struct admission_owner anonymous; /* of the jobs that name no owner */
    unsigned long long round;         /* of the job started last */
    /* Jobs given a slot, for the next worker to pick up: taking the slot
     * at once keeps `running` exact, so a job waits exactly when every
     * slot is taken, and the bounds count only jobs that really wait. */
    struct admission_jobs ready;
    size_t workers;
    size_t max_waiting;
    size_t max_waiting_per_owner;
    size_t waiting;
    size_t running; /* slots taken: jobs running, or ready and about to */
    size_t owners_waiting;
    bool stopping;
    pthread_t *threads;
    size_t n_threads;
    pthread_t timer_thread;
    bool timer_started;
};

static struct admission_owner *owner_of(struct admission *a, const struct admission_job *job)
{
    return job->owner ? job->owner : &a->anonymous;
}

static void ring_remove(struct admission *a, struct admission_owner *o)
{
    TAILQ_REMOVE(&a->ring, o, ring_link);
    o->in_ring = false;
    a->owners_waiting--;
}

/* Behind every owner of the same or an earlier round. Owners enter in
 * rounds at least the current one and leave from the front, so the scan
 * from the back is short. */
static void ring_insert(struct admission *a, struct admission_owner *o)
{
    struct admission_owner *after = TAILQ_LAST(&a->ring, owner_ring);
    while (after && after->round > o->round)
        after = TAILQ_PREV(after, owner_ring, ring_link);
    if (after)
        TAILQ_INSERT_AFTER(&a->ring, after, o, ring_link);
    else
        TAILQ_INSERT_HEAD(&a->ring, o, ring_link);
    o->in_ring = true;
    a->owners_waiting++;
}

static void unlink_locked(struct admission *a, struct admission_job *job)
{
    struct admission_owner *o = owner_of(a, job);
    TAILQ_REMOVE(&o->jobs, job, link);
    job->waiting = false;
    a->waiting--;
    if (--o->waiting == 0)
        ring_remove(a, o);
}

static void enqueue_locked(struct admission *a, struct admission_job *job)
{
    struct admission_owner *o = owner_of(a, job);
    if (o->waiting == 0) /* zeroed memory is an owner too: its queue starts here */
        TAILQ_INIT(&o->jobs);
    TAILQ_INSERT_TAIL(&o->jobs, job, link);
    job->waiting = true;
    a->waiting++;
    o->waiting++;
    if (!o->in_ring) {
        /* Rounds it sat out are not owed to it: it joins the current one
         * (or its own next, if it was served in this one already). */
        if (o->round < a->round)
            o->round = a->round;
        ring_insert(a, o);
    }
}

/* The first job of the owner served least recently; its owner moves on to
 * its next round. */
static struct admission_job *take_locked(struct admission *a)
{
    struct admission_owner *o = TAILQ_FIRST(&a->ring);
    struct admission_job *job = TAILQ_FIRST(&o->jobs);
    if (o->round > a->round)
        a->round = o->round;
    o->round++;
    unlink_locked(a, job);
    if (o->in_ring) {
        ring_remove(a, o);
        ring_insert(a, o);
    }
    return job;
}

/* Gives the free slots to the jobs next in turn. Afterwards either every
 * slot is taken or nothing waits. */
static void dispatch_locked(struct admission *a)
{
    while (a->running < a->workers && !TAILQ_EMPTY(&a->ring)) {
        /* Not inline: the macro reads its argument more than once. */
        struct admission_job *job = take_locked(a);
        TAILQ_INSERT_TAIL(&a->ready, job, link);
        a->running++;
        pthread_cond_signal(&a->work);
    }
}

static double deadline_of(const struct admission_job *job)
{
    return job->deadline_ms > 0 ? job->deadline_ms : INFINITY;
}

/* Set by admission_slot_done on the worker running a job: its slot went
 * back already. */
static __thread bool slot_returned;

void admission_slot_done(struct admission *a)
{
    if (slot_returned)
        return;
    slot_returned = true;
    pthread_mutex_lock(&a->lock);
    a->running--;
    dispatch_locked(a);
    pthread_mutex_unlock(&a->lock);
}

static void *worker_main(void *arg)
{
    struct admission *a = arg;
    pthread_mutex_lock(&a->lock);
    for (;;) {
        while (TAILQ_EMPTY(&a->ready) && !a->stopping)
            pthread_cond_wait(&a->work, &a->lock);
        struct admission_job *job = TAILQ_FIRST(&a->ready);
        if (!job)
            break; /* stopping; a job given a slot still runs */
        TAILQ_REMOVE(&a->ready, job, link);
        pthread_mutex_unlock(&a->lock);
        slot_returned = false;
        job->run(job); /* the job is not ours after this */
        pthread_mutex_lock(&a->lock);
        if (!slot_returned)
            a->running--;
        dispatch_locked(a);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* Takes the jobs whose deadline passed out of the queue, chained through
 * next; *next_deadline is the earliest deadline left. */
static struct admission_job *take_expired_locked(struct admission *a, double now,
                                                 double *next_deadline)
{
    struct admission_job *expired = NULL;
    for (struct admission_owner *o = TAILQ_FIRST(&a->ring), *onx; o; o = onx) {
        onx = TAILQ_NEXT(o, ring_link); /* o leaves the ring when its last job expires */
        for (struct admission_job *job = TAILQ_FIRST(&o->jobs), *nx; job; job = nx) {
            nx = TAILQ_NEXT(job, link);
            double d = deadline_of(job);
            if (d <= now) {
                unlink_locked(a, job);
                job->next = expired;
                expired = job;
            } else if (d < *next_deadline) {
                *next_deadline = d;
            }
        }
    }
    return expired;
}

/* Refuses each job of a chain taken off the queues, the lock released. */
static void refuse_chain(struct admission_job *chain, enum admission_refusal why)
{
    while (chain) {
        struct admission_job *job = chain;
        chain = job->next;
        job->next = NULL;
        job->refuse(job, why);
    }
}

/* Refuses jobs whose deadline passed while every worker was busy. */
static void *timer_main(void *arg)
{
    struct admission *a = arg;
    pthread_mutex_lock(&a->lock);
    while (!a->stopping) {
        double now = util_now_ms();
        double next = now + IDLE_WAIT_MS;
        struct admission_job *expired = take_expired_locked(a, now, &next);
        if (expired) {
            pthread_mutex_unlock(&a->lock);
            refuse_chain(expired, ADMISSION_EXPIRED);
            pthread_mutex_lock(&a->lock);
            continue;
        }
        util_cond_wait_ms(&a->timer, &a->lock, next - now + 1.0);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

struct admission *admission_new(size_t workers, size_t max_waiting, size_t max_waiting_per_owner,
                                struct err *err)
{
    struct admission *a = xcalloc(1, sizeof(*a));
    TAILQ_INIT(&a->ring);
    TAILQ_INIT(&a->ready);
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->work, NULL);
    util_cond_init_monotonic(&a->timer);
    a->workers = workers ? workers : 1;
    a->max_waiting = max_waiting;
    a->max_waiting_per_owner = max_waiting_per_owner;
    a->threads = xcalloc(a->workers, sizeof(pthread_t));
    if (threads_start(a->threads, a->workers, &a->n_threads, worker_main, a,
                      "the run worker threads", err) < 0 ||
        thread_start(&a->timer_thread, &a->timer_started, timer_main, a,
                     "the admission timer thread", err) < 0) {
        admission_free(a);
        return NULL;
    }
    return a;
}

void admission_free(struct admission *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->stopping = true;
    struct admission_job *left = NULL;
    while (!TAILQ_EMPTY(&a->ring)) {
        struct admission_job *job = TAILQ_FIRST(&TAILQ_FIRST(&a->ring)->jobs);
        unlink_locked(a, job);
        job->next = left;
        left = job;
    }
    pthread_cond_broadcast(&a->work);
    pthread_cond_broadcast(&a->timer);
    pthread_mutex_unlock(&a->lock);
    refuse_chain(left, ADMISSION_STOPPING);
    threads_join(a->threads, a->n_threads);
    thread_join(&a->timer_thread, &a->timer_started);
    free(a->threads);
    pthread_cond_destroy(&a->work);
    pthread_cond_destroy(&a->timer);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

enum admission_verdict admission_submit(struct admission *a, struct admission_job *job)
{
    enum admission_verdict v = ADMISSION_QUEUED;
    pthread_mutex_lock(&a->lock);
    /* With a slot free nothing waits (see dispatch_locked): the job starts. */
    bool must_wait = a->running >= a->workers;
    const struct admission_owner *o = owner_of(a, job);
    if (a->stopping)
        v = ADMISSION_STOPPED;
    else if (must_wait && a->waiting >= a->max_waiting)
        v = ADMISSION_FULL;
    else if (must_wait && o->waiting >= a->max_waiting_per_owner)
        v = ADMISSION_OWNER_FULL;
    if (v == ADMISSION_QUEUED) {
        enqueue_locked(a, job);
        dispatch_locked(a);
        pthread_cond_signal(&a->timer);
    }
    pthread_mutex_unlock(&a->lock);
    return v;
}

bool admission_withdraw(struct admission *a, struct admission_job *job)
{
    pthread_mutex_lock(&a->lock);
    bool was_waiting = job->waiting;
    if (was_waiting)
        unlink_locked(a, job);
    pthread_mutex_unlock(&a->lock);
    return was_waiting;
}

void admission_get_stats(struct admission *a, struct admission_stats *out)
{
    pthread_mutex_lock(&a->lock);
    out->workers = a->workers;
    out->max_waiting = a->max_waiting;
    out->max_waiting_per_owner = a->max_waiting_per_owner;
    out->running = a->running;
    out->waiting = a->waiting;
    out->owners_waiting = a->owners_waiting;
    pthread_mutex_unlock(&a->lock);
}
