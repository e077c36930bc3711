#include "sandbox/pool/reaper.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/threads.h"

/* Retry backoff for a removal the engine did not confirm: short at first,
 * since some refusals last a moment (Podman's while the container stops),
 * then RETRY_MAX_MS apart while the engine stays away. */
#define RETRY_FIRST_MS 50.0
#define RETRY_MAX_MS   2000.0
/* A removal still failing this long after it was asked for is worth a
 * warning; refusals that end sooner are not. */
#define RETRY_WARN_AFTER_MS 1000.0
/* During the stop, refusals are retried this often at most, within
 * REAPER_STOP_RETRY_MS. */
#define RETRY_STOP_MAX_MS 250.0

/* Containers removed while a sweep is under way, remembered for it. More
 * than this (a sweep's list is short), and that sweep queues nothing. */
#define GONE_MAX 1024

/* A sweep's list call: short, because stopping the daemon waits for it and
 * the next sweep comes soon anyway. */
#define LIST_TIMEOUT_MS 2000L

struct reap_item {
    char *id;
    long long uid;    /* the sandbox uid to give back once it is gone; -1: none */
    double queued_at; /* util_now_ms() */
    double next_try;  /* 0: now */
    unsigned attempts;
    bool warned;
    bool busy;          /* a worker is removing it now */
    bool tried_at_stop; /* reaper_free's first try, due whatever next_try says */
    struct reap_item *next;
};

/* A container a run holds, with its sandbox uid (-1: none). */
struct held {
    char *id;
    long long uid;
};

struct reaper {
    struct backend *backend;
    struct uids *uids; /* may be NULL */
    char *instance;
    char owner[REAPER_OWNER_MAX];
    long long legacy_max_age_s;
    long sweep_ms;

    pthread_mutex_t lock;
    pthread_cond_t cond; /* items changed, or stopping: the workers' */
    /* The sweeper's own wake-up, so removals coming and going do not wake it. */
    pthread_cond_t sweep_cond;
    struct reap_item *head, *tail;
    size_t pending;
    /* Removals confirmed since the oldest sweep under way asked for its
     * list: that list may still show them (see reaper_sweep). */
    char **gone;
    size_t n_gone;
    unsigned sweeps_running;
    bool gone_overflow;
    bool stopping;   /* the workers' last tries */
    double stop_by;  /* util_now_ms(): no try starts later, once stopping */
    bool sweep_stop; /* the sweeper's end */
    bool sweeping;
    /* The sweeper's first sweep is over (done or failed); swept_cond says so. */
    bool first_sweep_over;
    pthread_cond_t swept_cond;
    /* containers runs hold, and creates under way (see reaper_create_begin) */
    struct held *held;
    size_t n_held, cap_held;
    unsigned long creates_begun;
    size_t creates_in_flight;
    pthread_t workers[REAPER_THREADS];
    size_t n_workers;
    pthread_t sweeper;
};

/* ---- removals ------------------------------------------------------------ */

static struct reap_item *find_locked(struct reaper *r, const char *id)
{
    for (struct reap_item *it = r->head; it; it = it->next)
        if (strcmp(it->id, id) == 0)
            return it;
    return NULL;
}

static void unlink_locked(struct reaper *r, struct reap_item *item)
{
    struct reap_item **pp = &r->head;
    struct reap_item *prev = NULL;
    while (*pp && *pp != item) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return;
    *pp = item->next;
    if (r->tail == item)
        r->tail = prev;
    r->pending--;
}

/* Queues id, first tried at not_before (util_now_ms(); 0: now), unless it
 * is queued already; returns true when it was new. uid: as reap_item's. */
static bool enqueue_locked(struct reaper *r, const char *id, long long uid, double not_before)
{
    struct reap_item *queued = find_locked(r, id);
    if (queued) {
        /* Queued by the sweep (which knows no uid) before its holder let
         * go: the uid comes back with this removal, never twice. */
        if (queued->uid < 0)
            queued->uid = uid;
        return false;
    }
    struct reap_item *it = xcalloc(1, sizeof(*it));
    it->id = xstrdup(id);
    it->uid = uid;
    it->queued_at = util_now_ms();
    it->next_try = not_before;
    if (r->tail)
        r->tail->next = it;
    else
        r->head = it;
    r->tail = it;
    r->pending++;
    pthread_cond_broadcast(&r->cond);
    return true;
}

/* Takes id (allocated). */
static void remember_gone_locked(struct reaper *r, char *id)
{
    if (r->sweeps_running == 0 || r->n_gone == GONE_MAX) {
        if (r->sweeps_running > 0)
            r->gone_overflow = true;
        free(id);
        return;
    }
    if (!r->gone)
        r->gone = xcalloc(GONE_MAX, sizeof(char *));
    r->gone[r->n_gone++] = id;
}

static bool gone_locked(const struct reaper *r, const char *id)
{
    if (r->gone_overflow)
        return true;
    for (size_t i = 0; i < r->n_gone; i++)
        if (strcmp(r->gone[i], id) == 0)
            return true;
    return false;
}

static void sweep_end_locked(struct reaper *r)
{
    if (--r->sweeps_running > 0)
        return;
    for (size_t i = 0; i < r->n_gone; i++)
        free(r->gone[i]);
    r->n_gone = 0;
    r->gone_overflow = false;
}

static ssize_t held_index_locked(const struct reaper *r, const char *id)
{
    for (size_t i = 0; i < r->n_held; i++)
        if (strcmp(r->held[i].id, id) == 0)
            return (ssize_t)i;
    return -1;
}

void reaper_create_begin(struct reaper *r)
{
    pthread_mutex_lock(&r->lock);
    r->creates_begun++;
    r->creates_in_flight++;
    pthread_mutex_unlock(&r->lock);
}

void reaper_create_end(struct reaper *r, const char *id, long long uid)
{
    pthread_mutex_lock(&r->lock);
    r->creates_in_flight--;
    if (id) {
        if (r->n_held == r->cap_held) {
            r->cap_held = r->cap_held ? 2 * r->cap_held : 16;
            r->held = xrealloc(r->held, r->cap_held * sizeof(*r->held));
        }
        r->held[r->n_held++] = (struct held){.id = xstrdup(id), .uid = uid};
    }
    pthread_mutex_unlock(&r->lock);
}

void reaper_remove_after(struct reaper *r, const char *id, long delay_ms)
{
    double not_before = delay_ms > 0 ? util_now_ms() + (double)delay_ms : 0;
    long long uid = -1;
    pthread_mutex_lock(&r->lock);
    ssize_t i = held_index_locked(r, id);
    if (i >= 0) {
        uid = r->held[i].uid;
        free(r->held[i].id);
        r->held[i] = r->held[--r->n_held];
    }
    enqueue_locked(r, id, uid, not_before);
    pthread_mutex_unlock(&r->lock);
}

void reaper_remove(struct reaper *r, const char *id)
{
    reaper_remove_after(r, id, 0);
}

size_t reaper_pending(struct reaper *r)
{
    pthread_mutex_lock(&r->lock);
    size_t n = r->pending;
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* The next item a worker may take, or NULL with *wait_ms until one is due
 * (negative once stopping and none will be: the worker may end). */
static struct reap_item *next_due_locked(struct reaper *r, double now, double *wait_ms)
{
    *wait_ms = r->stopping ? -1.0 : 60000.0;
    for (struct reap_item *it = r->head; it; it = it->next) {
        if (it->busy)
            continue;
        if (r->stopping) {
            if (!it->tried_at_stop)
                return it;
            if (now >= r->stop_by)
                continue;
        }
        if (it->next_try <= now)
            return it;
        double until = it->next_try - now;
        if (r->stopping && r->stop_by - now < until)
            until = r->stop_by - now;
        if (*wait_ms < 0 || until < *wait_ms)
            *wait_ms = until;
    }
    return NULL;
}

static void *worker_main(void *arg)
{
    struct reaper *r = arg;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        double wait_ms = 0;
        struct reap_item *it = next_due_locked(r, util_now_ms(), &wait_ms);
        if (!it) {
            if (wait_ms < 0)
                break;
            util_cond_wait_ms(&r->cond, &r->lock, wait_ms);
            continue;
        }
        it->busy = true;
        if (r->stopping)
            it->tried_at_stop = true;
        pthread_mutex_unlock(&r->lock);

        struct err err = ERR_INIT;
        /* DELETE with force kills and removes in one request; a container
         * already gone counts as removed. */
        int rc = backend_remove(r->backend, it->id, &err);

        pthread_mutex_lock(&r->lock);
        it->busy = false;
        if (rc == 0) {
            log_debug("removed container %.12s", it->id);
            unlink_locked(r, it);
            /* Nothing runs as its uid any more: another sandbox may. */
            if (r->uids && it->uid >= 0)
                uids_give_back(r->uids, (uid_t)it->uid);
            remember_gone_locked(r, it->id);
            free(it);
        } else {
            it->attempts++;
            double now = util_now_ms();
            double backoff = RETRY_FIRST_MS;
            double cap = r->stopping ? RETRY_STOP_MAX_MS : RETRY_MAX_MS;
            for (unsigned i = 1; i < it->attempts && backoff < cap; i++)
                backoff *= 2;
            it->next_try = now + (backoff < cap ? backoff : cap);
            if (!it->warned && now - it->queued_at >= RETRY_WARN_AFTER_MS) {
                it->warned = true;
                log_warn("could not remove container %.12s (will retry until it is gone): %s",
                         it->id, err_msg(&err));
            } else {
                log_debug("removing container %.12s, try %u: %s", it->id, it->attempts,
                          err_msg(&err));
            }
        }
        err_clear(&err);
        pthread_cond_broadcast(&r->cond);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* ---- the sweep ----------------------------------------------------------- */

/* True when no create was under way from before the list was asked for
 * until now: then every container of ours that no run holds was given up
 * on, and none can be a run's whose create answer is still on its way. */
static bool quiet_since_locked(const struct reaper *r, unsigned long begun_before,
                               size_t in_flight_before)
{
    return in_flight_before == 0 && r->creates_in_flight == 0 && r->creates_begun == begun_before;
}

/* Tells the sandbox uids which of them the listed containers of others
 * (other daemons, or this one's killed predecessor) run as. */
static void note_foreign_uids(struct reaper *r, const struct backend_container *list, size_t n)
{
    if (!r->uids)
        return;
    uid_t *seen = xcalloc(n ? n : 1, sizeof(*seen));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool own = list[i].instance && strcmp(list[i].instance, r->instance) == 0;
        if (!own && list[i].uid >= 0)
            seen[k++] = (uid_t)list[i].uid;
    }
    uids_seen(r->uids, seen, k);
    free(seen);
}

/* The list shows the engine as it was when it answered: a removal this
 * daemon finished since may be in it, and must not be taken for a
 * container left behind. Those are remembered until the sweep ends. */
int reaper_sweep(struct reaper *r, struct err *err)
{
    struct backend_container *list = NULL;
    size_t n = 0;
    pthread_mutex_lock(&r->lock);
    unsigned long begun_before = r->creates_begun;
    size_t in_flight_before = r->creates_in_flight;
    r->sweeps_running++;
    pthread_mutex_unlock(&r->lock);
    if (backend_list(r->backend, LIST_TIMEOUT_MS, &list, &n, err) < 0) {
        pthread_mutex_lock(&r->lock);
        sweep_end_locked(r);
        pthread_mutex_unlock(&r->lock);
        return -1;
    }
    note_foreign_uids(r, list, n);
    long long now = (long long)time(NULL);
    int queued = 0;
    for (size_t i = 0; i < n; i++) {
        const struct backend_container *c = &list[i];
        bool own = c->instance && strcmp(c->instance, r->instance) == 0;
        const char *why = NULL;
        if (c->expires > 0 && c->expires <= now) {
            why = "expired";
        } else if (own) {
            pthread_mutex_lock(&r->lock);
            bool abandoned = held_index_locked(r, c->id) < 0 && !find_locked(r, c->id) &&
                             quiet_since_locked(r, begun_before, in_flight_before);
            pthread_mutex_unlock(&r->lock);
            if (!abandoned)
                continue; /* a run holds it and removes it when done */
            why = "its run gave up waiting for the engine to create it";
        } else if (c->owner && reaper_owner_alive(c->owner, r->owner) == 0)
            why = "the daemon that made it is gone";
        else if (c->expires == 0 && now - c->created >= r->legacy_max_age_s)
            why = "stale";
        if (!why)
            continue;
        pthread_mutex_lock(&r->lock);
        bool fresh = !gone_locked(r, c->id) && enqueue_locked(r, c->id, -1, 0);
        pthread_mutex_unlock(&r->lock);
        if (fresh) {
            log_info("removing container %.12s left behind (%s)", c->id, why);
            queued++;
        }
    }
    pthread_mutex_lock(&r->lock);
    sweep_end_locked(r);
    pthread_mutex_unlock(&r->lock);
    backend_container_list_free(list, n);
    return queued;
}

static void *sweeper_main(void *arg)
{
    struct reaper *r = arg;
    bool reported = false;
    pthread_mutex_lock(&r->lock);
    while (!r->sweep_stop) {
        pthread_mutex_unlock(&r->lock);
        struct err err = ERR_INIT;
        if (reaper_sweep(r, &err) < 0) {
            /* Said once per outage: the engine may be down for a while. */
            if (!reported)
                log_debug("container sweep skipped: %s", err_msg(&err));
            reported = true;
        } else {
            reported = false;
        }
        err_clear(&err);
        pthread_mutex_lock(&r->lock);
        if (!r->first_sweep_over) {
            r->first_sweep_over = true;
            pthread_cond_broadcast(&r->swept_cond);
        }
        double next = util_now_ms() + (double)r->sweep_ms;
        double left = (double)r->sweep_ms;
        while (!r->sweep_stop && left > 0) {
            util_cond_wait_ms(&r->sweep_cond, &r->lock, left);
            left = next - util_now_ms();
        }
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

bool reaper_wait_first_sweep(struct reaper *r, long timeout_ms)
{
    double end = util_now_ms() + (double)timeout_ms;
    pthread_mutex_lock(&r->lock);
    while (r->sweep_ms > 0 && !r->first_sweep_over && !r->sweep_stop && util_now_ms() < end)
        util_cond_wait_ms(&r->swept_cond, &r->lock, end - util_now_ms());
    bool over = r->sweep_ms <= 0 || r->first_sweep_over;
    pthread_mutex_unlock(&r->lock);
    return over;
}

/* ---- life ---------------------------------------------------------------- */

struct reaper *reaper_new(struct backend *backend, const char *instance, long long legacy_max_age_s,
                          long sweep_ms, struct uids *uids, struct err *err)
{
    struct reaper *r = xcalloc(1, sizeof(*r));
    r->backend = backend;
    r->uids = uids;
    r->instance = xstrdup(instance);
    r->legacy_max_age_s = legacy_max_age_s;
    r->sweep_ms = sweep_ms;
    pthread_mutex_init(&r->lock, NULL);
    util_cond_init_monotonic(&r->cond);
    util_cond_init_monotonic(&r->sweep_cond);
    util_cond_init_monotonic(&r->swept_cond);
    if (reaper_owner_self(r->owner, err) < 0 ||
        threads_start(r->workers, REAPER_THREADS, &r->n_workers, worker_main, r,
                      "the container removal threads", err) < 0)
        goto fail;
    if (sweep_ms > 0 && thread_start(&r->sweeper, &r->sweeping, sweeper_main, r,
                                     "the container sweep thread", err) < 0)
        goto fail;
    return r;
fail:
    reaper_free(r);
    return NULL;
}

void reaper_free(struct reaper *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->sweep_stop = true;
    pthread_cond_broadcast(&r->sweep_cond);
    pthread_cond_broadcast(&r->swept_cond);
    pthread_mutex_unlock(&r->lock);
    thread_join(&r->sweeper, &r->sweeping);
    /* The sweeper has ended, so nothing queues removals any more (a sweep
     * under way at the stop could): only now do workers give every pending
     * one its last tries before they end. */
    pthread_mutex_lock(&r->lock);
    r->stopping = true;
    r->stop_by = util_now_ms() + REAPER_STOP_RETRY_MS;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    threads_join(r->workers, r->n_workers);
    for (size_t i = 0; i < r->n_held; i++)
        free(r->held[i].id);
    free(r->held);
    while (r->head) {
        struct reap_item *it = r->head;
        r->head = it->next;
        if (r->n_workers)
            log_warn("container %.12s could not be removed before exit; a later daemon's sweep "
                     "removes it",
                     it->id);
        free(it->id);
        free(it);
    }
    for (size_t i = 0; i < r->n_gone; i++)
        free(r->gone[i]);
    free(r->gone);
    pthread_cond_destroy(&r->sweep_cond);
    pthread_cond_destroy(&r->swept_cond);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
    free(r->instance);
    free(r);
}

const char *reaper_owner(const struct reaper *r)
{
    return r->owner;
}
