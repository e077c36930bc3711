/* Admission for runs: a fixed pool of worker threads behind a bounded FIFO
 * queue. At most `workers` jobs run at once and at most `max_waiting` wait,
 * in arrival order; a waiting job not started by its deadline is refused.
 * No thread is created per job, so the daemon's thread count does not
 * depend on what clients send.
 *
 * Ownership: a submitted job belongs to the pool until exactly one of
 * run(), refuse() or a successful admission_withdraw() hands it back. */
#ifndef MCPSBX_ADMISSION_H
#define MCPSBX_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

enum admission_refusal {
    ADMISSION_EXPIRED,  /* waited until its deadline */
    ADMISSION_STOPPING, /* the pool is shutting down */
};

struct admission_job {
    /* On a worker thread. */
    void (*run)(struct admission_job *job);
    /* The job will never run: on the pool's timer thread, or in
     * admission_free's caller. Never called with the pool's lock held. */
    void (*refuse)(struct admission_job *job, enum admission_refusal why);
    double deadline_ms; /* util_now_ms() time it must have started by */

    /* the pool's own */
    struct admission_job *prev, *next;
    bool waiting;
};

struct admission;

struct admission *admission_new(size_t workers, size_t max_waiting, struct err *err);

/* Refuses the waiting jobs (ADMISSION_STOPPING), waits for the running
 * ones to return, joins the threads and frees. */
void admission_free(struct admission *a);

/* Queues job. Returns 0, or -1 when it can neither start now nor wait
 * (max_waiting are waiting already, or the pool is stopping); the job is
 * then still the caller's. */
int admission_submit(struct admission *a, struct admission_job *job);

/* Takes a job back that has not started: true when it was still waiting
 * (it will neither run nor be refused), false when it is running, done or
 * being refused. */
bool admission_withdraw(struct admission *a, struct admission_job *job);

struct admission_stats {
    size_t workers;
    size_t max_waiting;
    size_t running;
    size_t waiting;
};

void admission_get_stats(struct admission *a, struct admission_stats *out);

#endif
