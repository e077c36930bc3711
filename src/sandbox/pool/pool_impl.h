/* What pool.c (the waiting lists, fillers, watcher, takes) and
 * pool_setup.c (one container, from create to ready) share: the pool's
 * state. Every field below the lock is read and written with it held. */
#ifndef MCPSBX_POOL_IMPL_H
#define MCPSBX_POOL_IMPL_H

#include <pthread.h>
#include <stdbool.h>

#include "sandbox/pool/pool.h"

struct waiting {
    char *id;
    struct backend_stream *stream;
    double born_ms;               /* created */
    struct backend_weight weight; /* low while it waits; fd -1: made at the normal weight */
    char *dir;                    /* its profile's pool_dirs, or NULL */
    const struct pool_dirs *dirs;
};

struct slot {
    struct pool_profile prof;
    struct waiting *items; /* oldest first */
    size_t n, cap;
    size_t starting;
    unsigned failures_in_row;
    double retry_at_ms;
    double pressed_until_ms; /* a run found none waiting: refill lean until then */
    unsigned long long hits, misses, replaced, recycled, failed, lean, trimmed;
    char last_error[256];
    struct demand demand;
    size_t target;            /* demand's, shared under max_total */
    char why[DEMAND_WHY_MAX]; /* how target came */
};

struct pool {
    struct backend *backend;
    struct reaper *reaper;
    struct launcher *launcher;
    struct slot *slots;
    size_t n;
    long long max_age_ms;
    long long expiry_extra_s;
    long long refill_delay_ms;
    size_t max_total;
    double shrink_quiet_ms; /* no call this long: a profile above its target shrinks */
    double check_ms;        /* the watcher's look at the targets, while any is above its minimum */
    size_t *targets, *mins; /* scratch for retargeting, n each */
    size_t running;         /* taken containers whose run goes on */
    /* Sandboxes are set up at a low CPU weight, raised when a run takes
     * one; off for good once the backend cannot change weights here. */
    bool weights;
    char weights_off[160]; /* why they are off; "" while on */
    double quiet_until_ms; /* fillers start nothing before this */

    pthread_mutex_t lock;
    pthread_cond_t cond; /* the fillers': a slot may need one, or stopping */
    int wake_fd;         /* eventfd: the watcher re-reads the waiting lists */
    int stop_fd;         /* eventfd: readable once stopping, never drained */
    bool stopping;
    pthread_t fillers[POOL_FILLERS];
    size_t n_fillers;
    pthread_t watcher;
    bool watching;
};

/* Drops dir through dirs (either may be NULL) and frees it. */
void pool_dir_drop(const struct pool_dirs *dirs, char *dir);

/* Sets one sandbox of s up (lean: without its preloads) into *out: 0, or
 * -1 with err (nothing of it left). Called by a filler, without the lock. */
int pool_fill_one(struct pool *p, const struct slot *s, bool lean, struct waiting *out,
                  struct err *err);

#endif
