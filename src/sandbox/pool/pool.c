#include "sandbox/pool/pool.h"
#include "sandbox/pool/pool_impl.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/threads.h"
#include "base/util.h"
#include "sandbox/run/launch.h"
#include "sandbox/runner/runner.h"

/* The first sweep clears what an earlier daemon left before the pool adds
 * containers; an engine too slow to list them does not hold filling up. */
#define FIRST_SWEEP_WAIT_MS 10000
/* After a failed set-up: 250 ms, doubling, at most 10 s. */
#define BACKOFF_FIRST_MS 250.0
#define BACKOFF_MAX_MS   10000.0

static void poke(int fd)
{
    uint64_t one = 1;
    ssize_t w = write(fd, &one, sizeof(one));
    (void)w;
}

static void drain(int fd)
{
    uint64_t v;
    ssize_t r = read(fd, &v, sizeof(v));
    (void)r;
}

/* Anything at all on a waiting runner's stream means it is no longer
 * waiting: it exited (EOF), was removed (EOF or error), or wrote out of
 * turn. Called with the stream's owner's lock held, or by its owner. */
static bool stream_stirred(struct backend_stream *s)
{
    if (backend_stream_pending(s))
        return true;
    struct pollfd pfd = {.fd = backend_stream_fd(s), .events = POLLIN | POLLRDHUP};
    return poll(&pfd, 1, 0) != 0;
}

static void waiting_discard(struct pool *p, struct waiting *w)
{
    backend_weight_close(&w->weight);
    backend_stream_close(w->stream);
    reaper_remove(p->reaper, w->id);
    free(w->id);
    pool_dir_drop(w->dirs, w->dir);
    *w = (struct waiting){.weight = BACKEND_WEIGHT_NONE};
}

/* ---- targets ---------------------------------------------------------------- */

/* Each slot's target at now: its demand's, then all of them shared under
 * the daemon's total above the minimums. */
static void retarget_locked(struct pool *p, double now)
{
    size_t cap = p->max_total;
    for (size_t i = 0; i < p->n; i++) {
        struct slot *s = &p->slots[i];
        /* s->target holds the slot's own target until the share is known,
         * so a trimmed one can say so. */
        s->target = demand_target(&s->demand, now, s->why);
        p->targets[i] = s->target;
        p->mins[i] = s->prof.min;
        cap += s->prof.min;
    }
    demand_share(p->targets, p->mins, p->n, cap);
    for (size_t i = 0; i < p->n; i++) {
        struct slot *s = &p->slots[i];
        if (p->targets[i] < s->target) {
            size_t len = strlen(s->why);
            snprintf(s->why + len, sizeof(s->why) - len, ", held by the pools' total");
        }
        s->target = p->targets[i];
    }
}

/* ---- fillers ---------------------------------------------------------------- */

/* The slot furthest below its size that may try now, or -1 with *wait_ms
 * until one may (-1: nothing to do until something changes). */
static ssize_t next_slot_locked(struct pool *p, double *wait_ms)
{
    ssize_t best = -1;
    double best_fill = 2.0;
    double now = util_now_ms();
    retarget_locked(p, now);
    *wait_ms = -1;
    bool others_short = false;
    for (size_t i = 0; i < p->n && !others_short; i++) {
        const struct slot *s = &p->slots[i];
        others_short = !s->prof.later && s->n + s->starting < s->target;
    }
    for (size_t i = 0; i < p->n; i++) {
        const struct slot *s = &p->slots[i];
        size_t have = s->n + s->starting;
        if (have >= s->target || (s->prof.later && others_short))
            continue;
        if (s->retry_at_ms > now) {
            double w = s->retry_at_ms - now;
            if (*wait_ms < 0 || w < *wait_ms)
                *wait_ms = w;
            continue;
        }
        double fill = (double)have / (double)s->target;
        if (fill < best_fill) {
            best_fill = fill;
            best = (ssize_t)i;
        }
    }
    return best;
}

static void *filler_main(void *arg)
{
    struct pool *p = arg;
    if (!reaper_wait_first_sweep(p->reaper, FIRST_SWEEP_WAIT_MS))
        log_debug("pool: filling before the first sweep ended");
    pthread_mutex_lock(&p->lock);
    while (!p->stopping) {
        double quiet_ms = p->quiet_until_ms - util_now_ms();
        if (quiet_ms > 0) {
            util_cond_wait_ms(&p->cond, &p->lock, quiet_ms);
            continue;
        }
        double wait_ms;
        ssize_t i = next_slot_locked(p, &wait_ms);
        if (i < 0) {
            if (wait_ms < 0)
                pthread_cond_wait(&p->cond, &p->lock);
            else
                util_cond_wait_ms(&p->cond, &p->lock, wait_ms);
            continue;
        }
        struct slot *s = &p->slots[i];
        s->starting++;
        double now = util_now_ms();
        bool lean = s->prof.lean.cmd &&
                    (now < s->pressed_until_ms || demand_runs_dry(&s->demand, s->n, now));
        if (lean)
            s->lean++;
        pthread_mutex_unlock(&p->lock);

        struct waiting w = {.weight = BACKEND_WEIGHT_NONE};
        struct err err = ERR_INIT;
        double t0 = util_now_ms();
        int rc = pool_fill_one(p, s, lean, &w, &err);

        pthread_mutex_lock(&p->lock);
        s->starting--;
        if (rc == 0 && !lean)
            demand_refilled(&s->demand, util_now_ms() - t0);
        if (rc == 0 && !p->stopping) {
            if (s->n == s->cap) {
                s->cap = s->cap ? 2 * s->cap : 4;
                s->items = xrealloc(s->items, s->cap * sizeof(*s->items));
            }
            s->items[s->n++] = w;
            s->failures_in_row = 0;
            s->last_error[0] = '\0';
            poke(p->wake_fd);
        } else if (rc == 0) {
            pthread_mutex_unlock(&p->lock);
            waiting_discard(p, &w);
            pthread_mutex_lock(&p->lock);
        } else if (!p->stopping) {
            s->failed++;
            double backoff = BACKOFF_FIRST_MS;
            for (unsigned k = 0; k < s->failures_in_row && backoff < BACKOFF_MAX_MS; k++)
                backoff *= 2;
            if (backoff > BACKOFF_MAX_MS)
                backoff = BACKOFF_MAX_MS;
            s->retry_at_ms = util_now_ms() + backoff;
            snprintf(s->last_error, sizeof(s->last_error), "%s", err_msg(&err));
            /* Said once per streak: an engine that is down fails every try. */
            if (s->failures_in_row++ == 0)
                log_warn("pool: could not prepare a %s sandbox (runs go on demand meanwhile; "
                         "retrying): %s",
                         s->prof.name, err_msg(&err));
            else
                log_debug("pool: %s sandbox, try %u: %s", s->prof.name, s->failures_in_row,
                          err_msg(&err));
        }
        err_clear(&err);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* ---- the watcher -------------------------------------------------------- */

/* Takes out of their lists the waiting containers that stirred or aged,
 * into *bad (caller frees the array and discards them). */
static size_t collect_unfit_locked(struct pool *p, struct waiting **bad)
{
    size_t nbad = 0, cap = 0;
    double now = util_now_ms();
    retarget_locked(p, now);
    for (size_t i = 0; i < p->n; i++) {
        struct slot *s = &p->slots[i];
        size_t k = 0;
        for (size_t j = 0; j < s->n; j++) {
            struct waiting *w = &s->items[j];
            bool aged = now - w->born_ms >= (double)p->max_age_ms;
            bool stirred = !aged && stream_stirred(w->stream);
            if (!aged && !stirred) {
                s->items[k++] = *w;
                continue;
            }
            if (aged) {
                s->recycled++;
                log_debug("pool: %s sandbox %.12s reached its age limit", s->prof.name, w->id);
            } else {
                s->replaced++;
                log_info("pool: waiting %s sandbox %.12s died or misbehaved; replacing it",
                         s->prof.name, w->id);
            }
            if (nbad == cap) {
                cap = cap ? 2 * cap : 4;
                *bad = xrealloc(*bad, cap * sizeof(**bad));
            }
            (*bad)[nbad++] = *w;
        }
        s->n = k;
        /* Above a fallen target, once calls paused: the oldest go. */
        while (s->n > 0 && s->n + s->starting > s->target &&
               (!s->demand.called || now - s->demand.last_call_ms >= p->shrink_quiet_ms)) {
            if (nbad == cap) {
                cap = cap ? 2 * cap : 4;
                *bad = xrealloc(*bad, cap * sizeof(**bad));
            }
            (*bad)[nbad++] = s->items[0];
            memmove(s->items, s->items + 1, (s->n - 1) * sizeof(*s->items));
            s->n--;
            s->trimmed++;
            log_debug("pool: %s pool down to %zu (%s)", s->prof.name, s->target, s->why);
        }
    }
    if (nbad)
        pthread_cond_broadcast(&p->cond);
    return nbad;
}

static void *watcher_main(void *arg)
{
    struct pool *p = arg;
    size_t pfd_cap = 8;
    struct pollfd *pfd = xcalloc(pfd_cap, sizeof(*pfd));
    pthread_mutex_lock(&p->lock);
    while (!p->stopping) {
        size_t total = 2;
        for (size_t i = 0; i < p->n; i++)
            total += p->slots[i].n;
        if (total > pfd_cap) {
            pfd_cap = total * 2;
            pfd = xrealloc(pfd, pfd_cap * sizeof(*pfd));
        }
        pfd[0] = (struct pollfd){.fd = p->wake_fd, .events = POLLIN};
        pfd[1] = (struct pollfd){.fd = p->stop_fd, .events = POLLIN};
        size_t k = 2;
        double now = util_now_ms();
        double timeout = -1;
        for (size_t i = 0; i < p->n; i++) {
            const struct slot *s = &p->slots[i];
            if (s->n > s->prof.min && (timeout < 0 || timeout > p->check_ms))
                timeout = p->check_ms;
            for (size_t j = 0; j < s->n; j++) {
                pfd[k++] = (struct pollfd){.fd = backend_stream_fd(s->items[j].stream),
                                           .events = POLLIN | POLLRDHUP};
                double left = s->items[j].born_ms + (double)p->max_age_ms - now;
                if (left < 0)
                    left = 0;
                if (timeout < 0 || left < timeout)
                    timeout = left;
            }
        }
        pthread_mutex_unlock(&p->lock);
        /* The fds may be taken (and closed) meanwhile: poll only tells the
         * watcher to look again, under the lock, at what is still waiting. */
        int pr = poll(pfd, k, timeout < 0 ? -1 : (int)timeout + 1);
        if (pr > 0 && pfd[0].revents)
            drain(p->wake_fd);
        struct waiting *bad = NULL;
        pthread_mutex_lock(&p->lock);
        size_t nbad = p->stopping ? 0 : collect_unfit_locked(p, &bad);
        pthread_mutex_unlock(&p->lock);
        for (size_t i = 0; i < nbad; i++)
            waiting_discard(p, &bad[i]);
        free(bad);
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    free(pfd);
    return NULL;
}

/* ---- interface ------------------------------------------------------------ */

struct pool *pool_new(struct backend *backend, struct reaper *reaper, struct launcher *launcher,
                      const struct pool_profile *profiles, size_t n,
                      const struct pool_timing *timing, struct err *err)
{
    struct pool *p = xcalloc(1, sizeof(*p));
    p->backend = backend;
    p->reaper = reaper;
    p->launcher = launcher;
    p->max_age_ms = timing->max_age_ms;
    p->expiry_extra_s = timing->expiry_extra_s;
    p->refill_delay_ms = timing->refill_delay_ms;
    p->max_total = timing->max_total;
    double idle_ms = timing->idle_ms > 0 ? (double)timing->idle_ms : DEMAND_IDLE_MS;
    p->shrink_quiet_ms = idle_ms / POOL_SHRINK_QUIET_PART;
    p->check_ms =
        p->shrink_quiet_ms < POOL_SHRINK_CHECK_MS ? p->shrink_quiet_ms : POOL_SHRINK_CHECK_MS;
    p->weights = backend_weights_possible(backend);
    if (!p->weights)
        snprintf(p->weights_off, sizeof(p->weights_off), "the %s backend cannot change them",
                 backend_kind(backend));
    p->slots = xcalloc(n ? n : 1, sizeof(*p->slots));
    p->targets = xcalloc(n ? n : 1, sizeof(*p->targets));
    p->mins = xcalloc(n ? n : 1, sizeof(*p->mins));
    p->n = n;
    for (size_t i = 0; i < n; i++) {
        struct slot *s = &p->slots[i];
        s->prof = profiles[i];
        demand_init(&s->demand, s->prof.min, s->prof.max);
        demand_set_idle(&s->demand, idle_ms);
    }
    retarget_locked(p, util_now_ms());
    pthread_mutex_init(&p->lock, NULL);
    util_cond_init_monotonic(&p->cond);
    p->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    p->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->wake_fd < 0 || p->stop_fd < 0) {
        err_set(err, ERR_INTERNAL, "eventfd for the pool: %s", strerror(errno));
        goto fail;
    }
    if (thread_start(&p->watcher, &p->watching, watcher_main, p, "the pool's watcher", err) < 0)
        goto fail;
    if (threads_start(p->fillers, POOL_FILLERS, &p->n_fillers, filler_main, p,
                      "the pool's filler threads", err) < 0)
        goto fail;
    return p;
fail:
    pool_free(p);
    return NULL;
}

void pool_free(struct pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    if (p->stop_fd >= 0)
        poke(p->stop_fd);
    threads_join(p->fillers, p->n_fillers);
    thread_join(&p->watcher, &p->watching);
    size_t removed = 0;
    for (size_t i = 0; i < p->n; i++) {
        struct slot *s = &p->slots[i];
        for (size_t j = 0; j < s->n; j++, removed++)
            waiting_discard(p, &s->items[j]);
        free(s->items);
    }
    if (removed)
        log_debug("pool: removing %zu waiting sandboxes", removed);
    if (p->wake_fd >= 0)
        close(p->wake_fd);
    if (p->stop_fd >= 0)
        close(p->stop_fd);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    free(p->slots);
    free(p->targets);
    free(p->mins);
    free(p);
}

bool pool_take(struct pool *p, size_t i, unsigned *tries, struct pool_entry *out)
{
    if (!p || i >= p->n)
        return false;
    struct waiting unfit[2];
    size_t nunfit = 0;
    bool got = false;
    struct backend_weight weight = BACKEND_WEIGHT_NONE;
    struct slot *s = &p->slots[i];
    pthread_mutex_lock(&p->lock);
    /* The fillers retarget when the broadcast below wakes them. */
    demand_call(&s->demand, util_now_ms());
    while (*tries > 0 && s->n > 0 && !got) {
        struct waiting w = s->items[0];
        memmove(s->items, s->items + 1, (s->n - 1) * sizeof(*s->items));
        s->n--;
        (*tries)--;
        if (util_now_ms() - w.born_ms >= (double)p->max_age_ms) {
            s->recycled++;
        } else if (stream_stirred(w.stream)) {
            s->replaced++;
            log_info("pool: waiting %s sandbox %.12s died or misbehaved; not using it",
                     s->prof.name, w.id);
        } else {
            *out = (struct pool_entry){.id = w.id, .stream = w.stream, .dir = w.dir};
            weight = w.weight;
            s->hits++;
            got = true;
            p->running++;
            double now = util_now_ms();
            if (p->refill_delay_ms > 0 && now + (double)p->refill_delay_ms > p->quiet_until_ms)
                p->quiet_until_ms = now + (double)p->refill_delay_ms;
            continue;
        }
        if (nunfit < ARRAY_SIZE(unfit))
            unfit[nunfit++] = w;
        else
            waiting_discard(p, &w); /* unreachable: tries is small */
    }
    if (!got) {
        s->misses++;
        s->pressed_until_ms = util_now_ms() + POOL_PRESSURE_MS;
        /* Demand outruns the pool: refilling matters more now. */
        p->quiet_until_ms = 0;
    }
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    /* Before the run's request goes: the run gets the CPUs a set-up wants. A
     * failure means its cgroup is gone, so the container too, which the run
     * finds out at once (and a run that had not begun is retried). */
    struct err err = ERR_INIT;
    if (weight.fd >= 0 && backend_weight_raise(&weight, &err) < 0)
        log_debug("pool: %s sandbox %.12s: %s", s->prof.name, out->id, err_msg(&err));
    err_clear(&err);
    backend_weight_close(&weight);
    poke(p->wake_fd);
    for (size_t k = 0; k < nunfit; k++)
        waiting_discard(p, &unfit[k]);
    return got;
}

/* One taken container's run is over; called with the lock held. */
static void run_end_locked(struct pool *p, double grace_ms)
{
    if (p->running > 0)
        p->running--;
    if (p->running == 0) {
        double until = util_now_ms() + grace_ms;
        if (until < p->quiet_until_ms)
            p->quiet_until_ms = until;
    }
    pthread_cond_broadcast(&p->cond);
}

void pool_entry_discard(struct pool *p, size_t i, struct pool_entry *e)
{
    struct waiting w = {
        .id = e->id, .stream = e->stream, .weight = BACKEND_WEIGHT_NONE, .dir = e->dir};
    pthread_mutex_lock(&p->lock);
    if (i < p->n) {
        p->slots[i].replaced++;
        w.dirs = &p->slots[i].prof.dirs;
    }
    run_end_locked(p, 0);
    pthread_mutex_unlock(&p->lock);
    waiting_discard(p, &w);
    *e = (struct pool_entry){0};
}

void pool_run_end(struct pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    double grace = POOL_AFTER_RUN_MS < (double)p->refill_delay_ms ? POOL_AFTER_RUN_MS
                                                                  : (double)p->refill_delay_ms;
    run_end_locked(p, grace);
    pthread_mutex_unlock(&p->lock);
}

void pool_stats(struct pool *p, size_t i, struct pool_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!p || i >= p->n)
        return;
    pthread_mutex_lock(&p->lock);
    retarget_locked(p, util_now_ms());
    const struct slot *s = &p->slots[i];
    out->size = s->target;
    out->min = s->prof.min;
    out->max = s->prof.max;
    snprintf(out->why, sizeof(out->why), "%s", s->why);
    out->trimmed = s->trimmed;
    out->ready = s->n;
    out->starting = s->starting;
    out->hits = s->hits;
    out->misses = s->misses;
    out->replaced = s->replaced;
    out->recycled = s->recycled;
    out->failed = s->failed;
    out->lean = s->lean;
    snprintf(out->last_error, sizeof(out->last_error), "%s", s->last_error);
    pthread_mutex_unlock(&p->lock);
}

bool pool_weights(struct pool *p, char *why, size_t why_max)
{
    if (!p) {
        snprintf(why, why_max, "no pool");
        return false;
    }
    pthread_mutex_lock(&p->lock);
    bool on = p->weights;
    snprintf(why, why_max, "%s", on ? "" : p->weights_off);
    pthread_mutex_unlock(&p->lock);
    return on;
}
