/* The warm pool: per profile (one create spec: image, runtime, limits,
 * environment, warm runner command with its preload list), containers
 * created, connected and started ahead of need, whose runner has imported
 * its modules, said it is ready, and waits for its request on stdin. A run
 * takes one with its stream already open, so it pays neither create,
 * connecting, start nor imports. Single use: a taken container is the
 * taker's, who removes it after its one run; the pool never sees it again.
 *
 * Health: a waiting container whose stream shows anything (it died, was
 * OOM-killed or removed, or printed out of turn) is removed and replaced,
 * never handed out; so is one older than max_age_ms. Every pooled
 * container carries an expiry label past its age limit plus the longest
 * run, so a sweep removes it if this daemon dies.
 *
 * CPU: a container is set up at the least CPU weight and raised to the
 * normal one within the take (backend_weight_open), so setting one up
 * runs on CPU time no run wants; where the backend cannot change weights
 * here, containers are made at the normal weight.
 *
 * Size: each profile's target follows its calls between its bounds
 * (demand.h), recomputed as calls come and fillers look; waiting
 * containers above a lowered target are removed, oldest first, once no
 * call came for a twelfth of the idle time (POOL_SHRINK_QUIET_PART).
 *
 * Threads: POOL_FILLERS filler threads (create, connect, start, wait for
 * ready; at most that many engine setups at once, so refilling cannot
 * starve runs of the engine) and one watcher (polls every waiting
 * container's stream, and recycles by age). The waiting containers and
 * the counters belong to the pool under its lock; a taken entry belongs to
 * the taker. No json-c object is involved. */
#ifndef MCPSBX_POOL_H
#define MCPSBX_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backend.h"
#include "base/err.h"
#include "sandbox/pool/demand.h"
#include "sandbox/pool/reaper.h"

struct launcher;

#define POOL_FILLERS 2
/* How long a new container may take from create to ready (imports included). */
#define POOL_READY_TIMEOUT_MS 60000
/* After a run found the pool empty, refills skip the preloads this long. */
#define POOL_PRESSURE_MS 5000
/* Once the pooled runs have ended, refills wait this much longer (at most
 * the refill delay), so the last run's answer leaves first. */
#define POOL_AFTER_RUN_MS 25

/* A profile shrinks only after this part of the idle time without a call
 * (5 s of 60): a container removed at once would cost a set-up when the
 * next call comes. */
#define POOL_SHRINK_QUIET_PART 12
/* The watcher looks at the targets at least this often while some
 * profile holds more than its minimum. */
#define POOL_SHRINK_CHECK_MS 1000

/* A host directory of its own for each container of a profile (an
 * installer's target): made before its create and bound as the spec's
 * install_dir; dropped with a container the pool removes, handed to the
 * taker with one it takes (pool_entry.dir). */
struct pool_dirs {
    int (*make)(void *arg, char **path, struct err *err); /* *path allocated */
    void (*drop)(void *arg, const char *path);            /* removes it; the pool frees path */
    void *arg;
};

struct pool_profile {
    const char *name; /* for logs and stats, e.g. "python" */
    /* The create spec; its pointers are borrowed and must outlive the pool.
     * expires is set per container. */
    struct backend_spec spec;
    /* The same without the preloads (cmd only differs), or cmd NULL. While
     * runs find the pool empty, refills use it: a preload costs about a
     * second of CPU per container, which sustained demand cannot afford. */
    struct backend_spec lean;
    /* Containers kept waiting: the least (also while no call comes) and
     * the most; in between the number follows the calls (demand.h).
     * Equal: a fixed size. */
    size_t min, max;
    struct pool_dirs dirs; /* make NULL: none */
    /* Filled only while every profile without it is full: a ready
     * installer waits for the sandboxes runs take. */
    bool later;
};

struct pool;

struct pool_timing {
    long long max_age_ms;     /* a waiting container older than this is replaced */
    long long expiry_extra_s; /* how long past its age limit a container may still be in
                                 use by a run (the longest run and its margins) */
    /* While a run that took a pooled container goes on, refills wait, at
     * most this long after the take, unless runs find the pool empty: on
     * a small machine the engine setting up the next container (and its
     * preloads) would take the CPUs from the run. 0: refill at once. */
    long long refill_delay_ms;
    /* All profiles together keep at most this many above their minimums:
     * past it the largest targets give way (demand_share). */
    size_t max_total;
    /* No call this long: a profile's target is its minimum (demand.h). */
    long long idle_ms;
};

/* Starts filling once the reaper's first sweep is over; sandboxes are set
 * up through launcher (sandbox/run/launch.h). profiles (n of
 * them) are copied, not what they point to. Returns NULL with err when
 * threads cannot start. */
struct pool *pool_new(struct backend *backend, struct reaper *reaper, struct launcher *launcher,
                      const struct pool_profile *profiles, size_t n,
                      const struct pool_timing *timing, struct err *err);

/* Stops filling, then removes every waiting container (through the reaper,
 * which must outlive this call). NULL is fine. */
void pool_free(struct pool *p);

/* A taken container: the id, its open stream (the runner waits for its
 * request) and its directory (pool_dirs; NULL when its profile has none).
 * The taker owns all three. */
struct pool_entry {
    char *id;
    struct backend_stream *stream;
    char *dir;
};

/* Takes a healthy waiting container of profile i, checking at most *tries
 * of them (each one checked counts; unhealthy ones are removed and
 * replaced). Returns true with *out filled, false when none was there. */
bool pool_take(struct pool *p, size_t i, unsigned *tries, struct pool_entry *out);

/* For a container taken from profile i that failed before its run began:
 * closes the stream, removes the container and its directory, counts it
 * as replaced. The taker's run is over as far as refilling goes
 * (pool_run_end is not called for it). */
void pool_entry_discard(struct pool *p, size_t i, struct pool_entry *e);

/* The run that took a container (pool_take) has ended: refills need not
 * wait for it any more. Once per successful take not discarded. */
void pool_run_end(struct pool *p);

struct pool_stats {
    size_t size;                 /* the target now */
    size_t min, max;             /* its bounds */
    char why[DEMAND_WHY_MAX];    /* how the target came */
    size_t ready;                /* waiting now */
    size_t starting;             /* being set up now */
    unsigned long long hits;     /* runs that got a pooled container */
    unsigned long long misses;   /* runs of this profile that found none fit */
    unsigned long long replaced; /* found dead or misbehaving, removed */
    unsigned long long recycled; /* reached the age limit unused */
    unsigned long long failed;   /* set-ups that failed */
    unsigned long long lean;     /* made without the preloads, under pressure */
    unsigned long long trimmed;  /* removed unused when the target fell */
    char last_error[256];        /* why the last set-up failed; "" if none since */
};

/* Profile i's figures at this moment. */
void pool_stats(struct pool *p, size_t i, struct pool_stats *out);

/* Whether waiting containers sit at the low CPU weight; when not, why
 * (why_max bytes, at least 1). */
bool pool_weights(struct pool *p, char *why, size_t why_max);

#endif
