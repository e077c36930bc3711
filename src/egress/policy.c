#include "egress/policy.h"

#include <string.h>

void egress_caps_default(struct egress_caps *caps)
{
    caps->conns_open = EGRESS_CONNS_OPEN_DEFAULT;
    caps->conns_total = EGRESS_CONNS_TOTAL_DEFAULT;
    caps->bytes_up = EGRESS_BYTES_UP_DEFAULT;
    caps->bytes_down = EGRESS_BYTES_DOWN_DEFAULT;
    caps->conn_ms = EGRESS_CONN_MS_DEFAULT;
    caps->connect_ms = EGRESS_CONNECT_MS_DEFAULT;
    caps->head_ms = EGRESS_HEAD_MS_DEFAULT;
}

static int check_count(unsigned long long v, unsigned long long max, const char *what,
                       struct err *err)
{
    if (v < 1 || v > max)
        return err_set(err, ERR_INVALID, "egress cap %s is %llu: it must be from 1 to %llu", what,
                       v, max);
    return 0;
}

static int check_ms(long long v, const char *what, struct err *err)
{
    if (v < 1 || v > EGRESS_MS_CAP_MAX)
        return err_set(err, ERR_INVALID, "egress cap %s is %lld ms: it must be from 1 to %lld",
                       what, v, EGRESS_MS_CAP_MAX);
    return 0;
}

int egress_caps_check(const struct egress_caps *caps, struct err *err)
{
    if (check_count(caps->conns_open, EGRESS_CONNS_CAP_MAX, "connections open", err) < 0 ||
        check_count(caps->conns_total, EGRESS_CONNS_CAP_MAX, "connections made", err) < 0 ||
        check_count(caps->bytes_up, ~0ULL, "bytes up", err) < 0 ||
        check_count(caps->bytes_down, ~0ULL, "bytes down", err) < 0 ||
        check_ms(caps->conn_ms, "connection time", err) < 0 ||
        check_ms(caps->connect_ms, "connect time", err) < 0 ||
        check_ms(caps->head_ms, "request head time", err) < 0)
        return -1;
    return 0;
}

int egress_policy_init(struct egress_policy *p, const char *label,
                       const struct egress_patterns *patterns, const struct egress_pins *pins,
                       const struct egress_cidrs *allow, const struct egress_caps *caps,
                       struct err *err)
{
    memset(p, 0, sizeof(*p));
    if (label)
        util_escape(p->label, sizeof(p->label), label, strlen(label));
    if (patterns)
        p->patterns = *patterns;
    p->pins = pins;
    p->allow = allow;
    if (!caps) {
        egress_caps_default(&p->caps);
        return 0;
    }
    if (egress_caps_check(caps, err) < 0)
        return -1;
    p->caps = *caps;
    return 0;
}

void egress_usage_init(struct egress_usage *u)
{
    memset(u, 0, sizeof(*u));
    pthread_mutex_init(&u->lock, NULL);
    atomic_init(&u->bytes[EGRESS_UP], 0);
    atomic_init(&u->bytes[EGRESS_DOWN], 0);
}

void egress_usage_destroy(struct egress_usage *u)
{
    pthread_mutex_destroy(&u->lock);
}

enum egress_admit egress_usage_admit(struct egress_usage *u, const struct egress_caps *caps)
{
    enum egress_admit a = EGRESS_ADMITTED;
    pthread_mutex_lock(&u->lock);
    if (u->open >= caps->conns_open) {
        a = EGRESS_OVER_OPEN;
    } else if (u->total >= caps->conns_total) {
        a = EGRESS_OVER_TOTAL;
    } else {
        u->open++;
        u->total++;
    }
    pthread_mutex_unlock(&u->lock);
    return a;
}

void egress_usage_leave(struct egress_usage *u)
{
    pthread_mutex_lock(&u->lock);
    if (u->open > 0)
        u->open--;
    pthread_mutex_unlock(&u->lock);
}

unsigned long long egress_usage_take(struct egress_usage *u, const struct egress_caps *caps,
                                     enum egress_way way, unsigned long long n)
{
    unsigned long long cap = way == EGRESS_UP ? caps->bytes_up : caps->bytes_down;
    atomic_ullong *used = &u->bytes[way];
    unsigned long long cur = atomic_load(used);
    unsigned long long got = 0;
    do {
        got = cur >= cap ? 0 : cap - cur;
        if (got > n)
            got = n;
        if (got == 0)
            return 0;
    } while (!atomic_compare_exchange_weak(used, &cur, cur + got));
    return got;
}

void egress_usage_give_back(struct egress_usage *u, enum egress_way way, unsigned long long n)
{
    atomic_fetch_sub(&u->bytes[way], n);
}

unsigned long long egress_usage_bytes(struct egress_usage *u, enum egress_way way)
{
    return atomic_load(&u->bytes[way]);
}

void egress_usage_conns(struct egress_usage *u, unsigned *open, unsigned *total)
{
    pthread_mutex_lock(&u->lock);
    if (open)
        *open = u->open;
    if (total)
        *total = u->total;
    pthread_mutex_unlock(&u->lock);
}
