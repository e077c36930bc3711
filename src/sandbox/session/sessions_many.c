/* The code sessions' registry (sessions.h), many sessions at once: an
 * owner's end, expiry, and the sets they hand over. */
#include <stdlib.h>

#include "sandbox/session/sessions_impl.h"

/* Moves an IDLE session out of the registry into out, with the registry's
 * reference (lock held). out->v has room for every session counted now. */
static void hand_over_locked(struct code_sessions *r, struct code_session *cs,
                             struct code_session_set *out)
{
    if (!out->v)
        out->v = xcalloc(r->live, sizeof(struct code_session *));
    reg_unlink_locked(r, cs);
    out->v[out->n++] = cs;
}

size_t code_sessions_end_owner(struct code_sessions *r, const struct code_session_owner *who,
                               struct code_session_set *out)
{
    struct code_session *to_free = NULL, *cs, *next;
    pthread_mutex_lock(&r->lock);
    *out = (struct code_session_set){NULL, 0};
    for (cs = TAILQ_FIRST(&r->all); cs; cs = next) {
        next = TAILQ_NEXT(cs, order);
        if (who && !same_owner(&cs->who, who))
            continue;
        switch (cs->state) {
        case LOST:
            reg_drop_locked(r, cs, &to_free);
            break;
        case IDLE:
            hand_over_locked(r, cs, out);
            break;
        case BUSY:
            if (!cs->closing && r->lim.cancel_call && cs->call)
                r->lim.cancel_call(cs->call);
            cs->closing = true;
            break;
        case STARTING:
            cs->closing = true;
            break;
        case ENDED:
            break;
        }
    }
    pthread_mutex_unlock(&r->lock);
    reg_free_list(r, to_free);
    return out->n;
}

size_t code_sessions_expire(struct code_sessions *r, double now_ms, struct code_session_set *out,
                            double *next_ms)
{
    struct code_session *to_free = NULL, *cs, *next;
    double soonest = -1;
    pthread_mutex_lock(&r->lock);
    *out = (struct code_session_set){NULL, 0};
    for (cs = TAILQ_FIRST(&r->all); cs; cs = next) {
        next = TAILQ_NEXT(cs, order);
        if (cs->state != IDLE && cs->state != LOST)
            continue;
        double due = reg_deadline_of(r, cs);
        if (due > now_ms) {
            if (soonest < 0 || due < soonest)
                soonest = due;
        } else if (cs->state == LOST) {
            reg_drop_locked(r, cs, &to_free);
        } else {
            hand_over_locked(r, cs, out);
        }
    }
    pthread_mutex_unlock(&r->lock);
    reg_free_list(r, to_free);
    if (next_ms)
        *next_ms = soonest;
    return out->n;
}

void code_sessions_set_put(struct code_sessions *r, struct code_session_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        code_sessions_put(r, set->v[i]);
    free(set->v);
    set->v = NULL;
    set->n = 0;
}
