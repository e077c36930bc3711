#include "base/admission.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

/* The timer thread sleeps at most this long when nothing waits. */
#define IDLE_WAIT_MS 60000.0

struct admission {
    pthread_mutex_t lock;
    pthread_cond_t work;  /* for workers: a job waits, or stopping */
    pthread_cond_t timer; /* for the timer: the queue changed, or stopping */
    struct admission_job *head, *tail;
    size_t workers;
    size_t max_waiting;
    size_t waiting;
    size_t running;
    bool stopping;
    pthread_t *threads;
    size_t n_threads;
    pthread_t timer_thread;
    bool timer_started;
};

static void unlink_locked(struct admission *a, struct admission_job *job)
{
    if (job->prev)
        job->prev->next = job->next;
    else
        a->head = job->next;
    if (job->next)
        job->next->prev = job->prev;
    else
        a->tail = job->prev;
    job->prev = job->next = NULL;
    job->waiting = false;
    a->waiting--;
}

static double deadline_of(const struct admission_job *job)
{
    return job->deadline_ms > 0 ? job->deadline_ms : INFINITY;
}

static void *worker_main(void *arg)
{
    struct admission *a = arg;
    pthread_mutex_lock(&a->lock);
    for (;;) {
        while (!a->head && !a->stopping)
            pthread_cond_wait(&a->work, &a->lock);
        if (a->stopping)
            break;
        struct admission_job *job = a->head;
        unlink_locked(a, job);
        a->running++;
        pthread_cond_signal(&a->timer);
        pthread_mutex_unlock(&a->lock);
        job->run(job); /* the job is not ours after this */
        pthread_mutex_lock(&a->lock);
        a->running--;
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* Refuses jobs whose deadline passed while every worker was busy. */
static void *timer_main(void *arg)
{
    struct admission *a = arg;
    pthread_mutex_lock(&a->lock);
    while (!a->stopping) {
        double now = util_now_ms();
        double next = now + IDLE_WAIT_MS;
        struct admission_job *expired = NULL;
        for (struct admission_job *job = a->head, *nx; job; job = nx) {
            nx = job->next;
            double d = deadline_of(job);
            if (d <= now) {
                unlink_locked(a, job);
                job->next = expired;
                expired = job;
            } else if (d < next) {
                next = d;
            }
        }
        if (expired) {
            pthread_mutex_unlock(&a->lock);
            while (expired) {
                struct admission_job *job = expired;
                expired = job->next;
                job->next = NULL;
                job->refuse(job, ADMISSION_EXPIRED);
            }
            pthread_mutex_lock(&a->lock);
            continue;
        }
        util_cond_wait_ms(&a->timer, &a->lock, next - now + 1.0);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

struct admission *admission_new(size_t workers, size_t max_waiting, struct err *err)
{
    struct admission *a = xcalloc(1, sizeof(*a));
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->work, NULL);
    util_cond_init_monotonic(&a->timer);
    a->workers = workers ? workers : 1;
    a->max_waiting = max_waiting;
    a->threads = xcalloc(a->workers, sizeof(pthread_t));
    for (size_t i = 0; i < a->workers; i++) {
        if (pthread_create(&a->threads[i], NULL, worker_main, a) != 0) {
            err_set(err, ERR_INTERNAL, "cannot start run worker thread %zu of %zu", i + 1,
                    a->workers);
            admission_free(a);
            return NULL;
        }
        a->n_threads++;
    }
    if (pthread_create(&a->timer_thread, NULL, timer_main, a) != 0) {
        err_set(err, ERR_INTERNAL, "cannot start the admission timer thread");
        admission_free(a);
        return NULL;
    }
    a->timer_started = true;
    return a;
}

void admission_free(struct admission *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->stopping = true;
    struct admission_job *left = a->head;
    for (struct admission_job *job = left; job; job = job->next)
        job->waiting = false;
    a->head = a->tail = NULL;
    a->waiting = 0;
    pthread_cond_broadcast(&a->work);
    pthread_cond_broadcast(&a->timer);
    pthread_mutex_unlock(&a->lock);
    while (left) {
        struct admission_job *job = left;
        left = job->next;
        job->prev = job->next = NULL;
        job->refuse(job, ADMISSION_STOPPING);
    }
    for (size_t i = 0; i < a->n_threads; i++)
        pthread_join(a->threads[i], NULL);
    if (a->timer_started)
        pthread_join(a->timer_thread, NULL);
    free(a->threads);
    pthread_cond_destroy(&a->work);
    pthread_cond_destroy(&a->timer);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

int admission_submit(struct admission *a, struct admission_job *job)
{
    pthread_mutex_lock(&a->lock);
    size_t idle = a->workers - a->running;
    /* Jobs in the queue beyond the idle workers are the ones that wait. */
    if (a->stopping || a->waiting >= idle + a->max_waiting) {
        pthread_mutex_unlock(&a->lock);
        return -1;
    }
    job->next = NULL;
    job->prev = a->tail;
    if (a->tail)
        a->tail->next = job;
    else
        a->head = job;
    a->tail = job;
    job->waiting = true;
    a->waiting++;
    pthread_cond_signal(&a->work);
    pthread_cond_signal(&a->timer);
    pthread_mutex_unlock(&a->lock);
    return 0;
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
    out->running = a->running;
    out->waiting = a->waiting;
    pthread_mutex_unlock(&a->lock);
}
