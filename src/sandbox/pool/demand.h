/* How many ready sandboxes a pool profile should keep: a size between
 * the operator's bounds that follows the calls. Pure arithmetic on times
 * the caller passes (util_now_ms), so the tests drive it without clocks;
 * the pool calls it under its lock.
 *
 * The model: while one sandbox is being made (the refill time), the calls
 * that arrive in that time each take one, so about rate x refill must be
 * waiting for none of them to miss; DEMAND_HEADROOM more covers bursts.
 * The rate is the larger of two moving counts (DEMAND_TAU_PART)
 * (it halves in about 0.7 tau once calls stop), the refill time an
 * average of the last set-ups. A profile with no call for the idle time
 * (DEMAND_IDLE_MS unless set) shrinks to its minimum. */
#ifndef MCPSBX_POOL_DEMAND_H
#define MCPSBX_POOL_DEMAND_H

#include <stdbool.h>
#include <stddef.h>

/* No call this long: the target is the minimum (demand_set_idle changes
 * it). */
#define DEMAND_IDLE_MS 60000.0
/* The rate's time constants, as parts of the idle time. The slow one (20 s
 * of 60) carries a call every few seconds and holds the target through a
 * pause; the fast one (3 s) follows calls that start coming faster within
 * a few of them. The rate is the larger of the two: up fast, down slow. */
#define DEMAND_TAU_PART      3.0
#define DEMAND_FAST_TAU_PART 20.0
/* The refill time assumed before one was measured (a preloaded Python
 * sandbox here: about a second). */
#define DEMAND_REFILL_GUESS_MS 1000.0
/* The weight of a new set-up time in the average. */
#define DEMAND_REFILL_ALPHA 0.3
/* Ready sandboxes kept beyond rate x refill, as a factor. */
#define DEMAND_HEADROOM 1.5
/* Room for the why of a target. */
#define DEMAND_WHY_MAX 160

struct demand {
    size_t min, max;   /* the operator's bounds; min == max: a fixed size */
    double rate, fast; /* calls per second, decayed to last_call_ms: slow and fast */
    double last_call_ms;
    double idle_ms, tau_ms, fast_tau_ms;
    double refill_ms;  /* average set-up time */
    bool refill_known; /* refill_ms was measured */
    bool called;       /* any call yet */
};

void demand_init(struct demand *d, size_t min, size_t max);

/* Another idle time (> 0), and the rate's time constant with it. */
void demand_set_idle(struct demand *d, double idle_ms);

/* A run asked this profile for a sandbox at now (a hit or a miss). */
void demand_call(struct demand *d, double now_ms);

/* One sandbox of this profile with its preloads took setup_ms from create
 * to ready (the pool's set-ups without them, under pressure, are not what
 * it aims to keep up with). */
void demand_refilled(struct demand *d, double setup_ms);

/* The calls per second at now (the count decayed to now). */
double demand_rate(const struct demand *d, double now_ms);

/* Whether a refill of a profile with ready sandboxes waiting should skip
 * its preloads: at now's rate, more calls than ready come while one
 * sandbox with its preloads is made (rate x refill x DEMAND_HEADROOM, the
 * target's own margin, >= ready + 1), so the pool would run dry before
 * that one is done, and a set-up without them (several times quicker)
 * covers the next call instead. The margin matters because a filler
 * busy with a preloaded set-up cannot make a quick one meanwhile. */
bool demand_runs_dry(const struct demand *d, size_t ready, double now_ms);

/* The target at now, within [min, max]; why (may be NULL) says how it
 * came, e.g. "2.40 calls/s x 900 ms refill". */
size_t demand_target(const struct demand *d, double now_ms, char why[DEMAND_WHY_MAX]);

/* Fits targets[0..n) (each already within its profile's [mins[i], ...])
 * under cap in total: the largest above its minimum gives one up at a
 * time; minimums are kept even past cap (the operator asked for them).
 * Returns the total. */
size_t demand_share(size_t *targets, const size_t *mins, size_t n, size_t cap);

#endif
