/* Admission for runs: a fixed pool of worker threads behind a bounded
 * queue. At most `workers` jobs run at once and at most `max_waiting` wait;
 * a waiting job not started by its deadline is refused. No thread is
 * created per job, so the daemon's thread count does not depend on what
 * clients send.
 *
 * Fair shares: every job has an owner (a client, opaque here). A job that
 * finds a slot free starts at once; jobs wait only while every slot is
 * taken, each owner's in a FIFO of its own, and owners take turns
 * (start-time fair queueing, each job costing one round): an owner's
 * waiting jobs take the rounds after that of its last start, or, for an
 * owner that sat rounds out, from the round the queue is in now; a freed
 * slot goes to the job of the lowest round, owners of one round in the
 * order they joined it. So one owner's hundred waiting jobs delay another
 * owner's single job by the runs already going on only: it takes the next
 * slot that frees. One owner also waits at most `max_waiting_per_owner`
 * jobs, so it cannot fill the whole queue either.
 *
 * Cost: submit and every start are O(owners with waiting jobs), withdraw
 * O(1), the deadline timer O(waiting jobs); no allocation.
 *
 * Ownership: a submitted job belongs to the pool until exactly one of
 * run(), refuse() or a successful admission_withdraw() hands it back. */
#ifndef MCPSBX_ADMISSION_H
#define MCPSBX_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/queue.h>

#include "base/err.h"

enum admission_refusal {
    ADMISSION_EXPIRED,  /* waited until its deadline */
    ADMISSION_STOPPING, /* the pool is shutting down */
};

/* What admission_submit did with a job. Anything but ADMISSION_QUEUED
 * leaves the job the caller's. */
enum admission_verdict {
    ADMISSION_QUEUED = 0,
    ADMISSION_FULL = -1,       /* every worker busy and max_waiting wait */
    ADMISSION_OWNER_FULL = -2, /* its owner has max_waiting_per_owner waiting */
    ADMISSION_STOPPED = -3,    /* the pool is shutting down */
};

/* One client's place in the queue, kept in the client's own memory so that
 * its turn survives the moments it has nothing waiting. Zeroed memory is a
 * ready owner; it must outlive every job of its own that the pool holds.
 * All fields are the pool's, under its lock. */
struct admission_owner {
    /* Its waiting jobs, oldest first (set up by the pool when the first
     * one comes, so zeroed memory will do). */
    TAILQ_HEAD(admission_jobs, admission_job) jobs;
    TAILQ_ENTRY(admission_owner) ring_link; /* in the ring of owners with jobs waiting */
    unsigned long long round;               /* of its first waiting job, or of its next */
    size_t waiting;
    bool in_ring;
};

struct admission_job {
    /* On a worker thread. */
    void (*run)(struct admission_job *job);
    /* The job will never run: on the pool's timer thread, or in
     * admission_free's caller. Never called with the pool's lock held. */
    void (*refuse)(struct admission_job *job, enum admission_refusal why);
    double deadline_ms; /* util_now_ms() time it must have started by */
    /* Whose job; NULL jobs share one owner of the pool's. */
    struct admission_owner *owner;

    /* the pool's own */
    TAILQ_ENTRY(admission_job) link; /* in its owner's queue, or the pool's ready queue */
    struct admission_job *next;      /* in a chain of jobs being refused */
    bool waiting;
};

struct admission;

struct admission *admission_new(size_t workers, size_t max_waiting, size_t max_waiting_per_owner,
                                struct err *err);

/* Refuses the waiting jobs (ADMISSION_STOPPING), waits for the ones given
 * a slot to run and return, joins the threads and frees. */
void admission_free(struct admission *a);

/* Starts job on a free slot, else queues it in its owner's turn; the
 * bounds apply only to a job that has to wait. */
enum admission_verdict admission_submit(struct admission *a, struct admission_job *job);

/* From a job's run(), on its worker: the job's slot is free from now on
 * (its work is done and only its answer is left to give), so the next
 * job may start and a caller told the answer finds the slot free. At
 * most once a run; the worker gives the slot back itself otherwise. */
void admission_slot_done(struct admission *a);

/* Takes a job back that has not started: true when it was still waiting
 * (it will neither run nor be refused), false when it is running, done or
 * being refused. */
bool admission_withdraw(struct admission *a, struct admission_job *job);

struct admission_stats {
    size_t workers;
    size_t max_waiting;
    size_t max_waiting_per_owner;
    size_t running;        /* slots taken: jobs running or about to start */
    size_t waiting;        /* jobs waiting for a slot (only when none is free) */
    size_t owners_waiting; /* owners with at least one job waiting */
};

void admission_get_stats(struct admission *a, struct admission_stats *out);

#endif
