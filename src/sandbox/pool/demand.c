#include "sandbox/pool/demand.h"

#include <math.h>
#include <stdio.h>

void demand_init(struct demand *d, size_t min, size_t max)
{
    *d = (struct demand){
        .min = min,
        .max = max < min ? min : max,
        .refill_ms = DEMAND_REFILL_GUESS_MS,
    };
    demand_set_idle(d, DEMAND_IDLE_MS);
}

void demand_set_idle(struct demand *d, double idle_ms)
{
    d->idle_ms = idle_ms;
    d->tau_ms = idle_ms / DEMAND_TAU_PART;
    d->fast_tau_ms = idle_ms / DEMAND_FAST_TAU_PART;
}

/* A count decayed over dt with time constant tau. */
static double decayed(double count, double dt, double tau)
{
    return dt <= 0 ? count : count * exp(-dt / tau);
}

double demand_rate(const struct demand *d, double now_ms)
{
    if (!d->called)
        return 0.0;
    double dt = now_ms - d->last_call_ms;
    double slow = decayed(d->rate, dt, d->tau_ms), fast = decayed(d->fast, dt, d->fast_tau_ms);
    return fast > slow ? fast : slow;
}

void demand_call(struct demand *d, double now_ms)
{
    /* Decaying counts: each call adds 1/tau, so a steady r calls per
     * second settles at r. */
    double dt = d->called ? now_ms - d->last_call_ms : 0;
    d->rate = decayed(d->rate, dt, d->tau_ms) + 1000.0 / d->tau_ms;
    d->fast = decayed(d->fast, dt, d->fast_tau_ms) + 1000.0 / d->fast_tau_ms;
    if (!d->called || now_ms > d->last_call_ms)
        d->last_call_ms = now_ms;
    d->called = true;
}

void demand_refilled(struct demand *d, double setup_ms)
{
    if (setup_ms < 0)
        return;
    d->refill_ms = d->refill_known
                       ? (1.0 - DEMAND_REFILL_ALPHA) * d->refill_ms + DEMAND_REFILL_ALPHA * setup_ms
                       : setup_ms;
    d->refill_known = true;
}

bool demand_runs_dry(const struct demand *d, size_t ready, double now_ms)
{
    if (!d->called || now_ms - d->last_call_ms >= d->idle_ms)
        return false;
    return demand_rate(d, now_ms) * (d->refill_ms / 1000.0) * DEMAND_HEADROOM >=
           (double)ready + 1.0;
}

/* x as a whole number within [0, cap] (for the why's figures). */
static long long bounded(double x, long long cap)
{
    return x <= 0 ? 0 : x >= (double)cap ? cap : llround(x);
}

size_t demand_target(const struct demand *d, double now_ms, char why[DEMAND_WHY_MAX])
{
    char own[DEMAND_WHY_MAX];
    if (!why)
        why = own;
    const size_t why_len = DEMAND_WHY_MAX;
    if (d->min == d->max) {
        snprintf(why, why_len, "fixed size");
        return d->min;
    }
    if (!d->called || now_ms - d->last_call_ms >= d->idle_ms) {
        snprintf(why, why_len, "idle: the minimum");
        return d->min;
    }
    double rate = demand_rate(d, now_ms);
    double need = rate * (d->refill_ms / 1000.0) * DEMAND_HEADROOM;
    /* Calls came lately: at least one waits. */
    size_t t = need < 1.0 ? 1 : (size_t)ceil(need);
    const char *bound = "";
    if (t < d->min) {
        t = d->min;
        bound = ", raised to the minimum";
    } else if (t > d->max) {
        t = d->max;
        bound = ", held to the maximum";
    }
    long long r100 = bounded(rate * 100.0, 99999999LL);
    snprintf(why, why_len, "%lld.%02lld calls/s x %lld ms refill%s%s", r100 / 100, r100 % 100,
             bounded(d->refill_ms, 99999999LL), d->refill_known ? "" : " (guessed)", bound);
    return t;
}

size_t demand_share(size_t *targets, const size_t *mins, size_t n, size_t cap)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += targets[i];
    while (total > cap) {
        size_t pick = n;
        for (size_t i = 0; i < n; i++)
            if (targets[i] > mins[i] && (pick == n || targets[i] > targets[pick]))
                pick = i;
        if (pick == n)
            break; /* every profile at its minimum */
        targets[pick]--;
        total--;
    }
    return total;
}
