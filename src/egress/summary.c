#include "egress/summary.h"

#include <string.h>

void egress_summary_init(struct egress_summary *s)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->lock, NULL);
}

void egress_summary_destroy(struct egress_summary *s)
{
    pthread_mutex_destroy(&s->lock);
}

void egress_summary_add(struct egress_summary *s, const struct egress_entry *e)
{
    struct egress_entry clean = *e;
    util_escape(clean.host, sizeof(clean.host), e->host, strnlen(e->host, sizeof(e->host)));
    util_escape(clean.reason, sizeof(clean.reason), e->reason,
                strnlen(e->reason, sizeof(e->reason)));

    pthread_mutex_lock(&s->lock);
    struct egress_report *r = &s->r;
    if (e->allowed)
        r->allowed++;
    else
        r->refused++;
    r->up += e->up;
    r->down += e->down;
    if (r->n < EGRESS_SUMMARY_MAX)
        r->entries[r->n++] = clean;
    else
        r->more++;
    pthread_mutex_unlock(&s->lock);
}

void egress_summary_copy(struct egress_summary *s, struct egress_report *out)
{
    pthread_mutex_lock(&s->lock);
    *out = s->r;
    pthread_mutex_unlock(&s->lock);
}
