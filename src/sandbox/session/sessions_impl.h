/* The registry's insides (sessions.h), shared by sessions.c (one session
 * at a time) and sessions_many.c (many at once: an owner's end, expiry).
 * Internal to session/. Everything here is under the registry's lock
 * unless said otherwise. */
#ifndef MCPSBX_SESSIONS_IMPL_H
#define MCPSBX_SESSIONS_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/queue.h>

#include "sandbox/session/sessions.h"

/* Lookup by id: a fixed table, as the sessions it holds are capped. */
#define BUCKETS 256u

enum state {
    STARTING, /* reserved, its sandbox being made */
    IDLE,
    BUSY,
    LOST,  /* tombstone: lost while IDLE, its sandbox already torn down */
    ENDED, /* out of the registry; only its holders' references keep it */
};

struct code_session {
    /* Fixed from reserve on. */
    char id[CODE_SESSION_ID_CAP];
    struct code_session_owner who;
    char language[CODE_SESSION_LANGUAGE_MAX + 1];
    char name[CODE_SESSION_NAME_MAX + 1];
    /* Set once: at open and at lose, under the lock. */
    void *handle;
    char reason[CODE_SESSION_REASON_MAX + 1];
    /* Under the registry's lock. */
    enum state state;
    bool closing; /* BUSY or STARTING, ended: it goes when its call or start ends */
    int refs;
    void *call; /* the running call's token, while BUSY */
    double created_mono, last_used_mono, lost_mono;
    long long created_wall, last_used_wall;
    TAILQ_ENTRY(code_session) order; /* r->all: opening order */
    LIST_ENTRY(code_session) bucket;
    struct code_session *next_free; /* on a list of sessions to free */
};

TAILQ_HEAD(session_order, code_session);
LIST_HEAD(session_bucket, code_session);

struct code_sessions {
    struct code_sessions_limits lim;
    pthread_mutex_t lock;
    struct session_order all; /* every session in the registry, tombstones too */
    struct session_bucket buckets[BUCKETS];
    size_t live;       /* STARTING, IDLE, BUSY: what the caps count */
    size_t tombstones; /* LOST */
};

static inline bool same_owner(const struct code_session_owner *a,
                              const struct code_session_owner *b)
{
    return strcmp(a->owner, b->owner) == 0 && strcmp(a->principal, b->principal) == 0;
}

/* Takes cs out of the registry (lock held): ENDED, off the caps. Its
 * reference from the registry is the caller's to move or drop. */
void reg_unlink_locked(struct code_sessions *r, struct code_session *cs);

/* reg_unlink_locked and the registry's reference dropped; a session whose
 * last reference that was goes on *to_free. */
void reg_drop_locked(struct code_sessions *r, struct code_session *cs,
                     struct code_session **to_free);

/* Frees the sessions of a to_free list (without the lock). */
void reg_free_list(const struct code_sessions *r, struct code_session *to_free);

/* When cs is due to end (an IDLE one) or to go (a LOST one), monotonic ms. */
double reg_deadline_of(const struct code_sessions *r, const struct code_session *cs);

#endif
