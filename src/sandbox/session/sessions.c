#include "sandbox/session/sessions.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/queue.h>

#include "sandbox/session/session_check.h"
#include "sandbox/session/sessions_impl.h"

/* Tries for an id no session has (a clash of 128 random bits never comes). */
#define ID_TRIES 4

/* Compares in a time that does not depend on where ids differ, so timing a
 * guess tells nothing of an id. Both are well-formed. */
static bool same_id(const char *a, const char *b)
{
    return handle_equal(a, b);
}

/* From the random part: the daemon's name is the same in every id. */
static unsigned bucket_of(const char *handle)
{
    const char *id = handle_tail(handle);
    unsigned h = 0;
    for (int i = 0; i < 8; i++)
        h = h << 4 | (unsigned)(id[i] <= '9' ? id[i] - '0' : id[i] - 'a' + 10);
    return h % BUCKETS;
}

/* ---- the registry ---------------------------------------------------------- */

static void free_session(const struct code_sessions *r, struct code_session *cs)
{
    if (cs->handle && r->lim.free_handle)
        r->lim.free_handle(cs->handle);
    free(cs);
}

struct code_sessions *code_sessions_new(const struct code_sessions_limits *lim, struct err *err)
{
    if (lim->max_sessions < 1 || lim->max_sessions > CODE_SESSIONS_MAX || lim->max_per_owner < 1 ||
        lim->idle_ms < 1 || lim->idle_ms > CODE_SESSIONS_MAX_MS || lim->max_age_ms < 1 ||
        lim->max_age_ms > CODE_SESSIONS_MAX_MS) {
        err_set(err, ERR_INVALID,
                "code session limits out of range: %d sessions (1..%d), %d per owner (1..), "
                "idle %lld ms and age %lld ms (1..%lld)",
                lim->max_sessions, CODE_SESSIONS_MAX, lim->max_per_owner, lim->idle_ms,
                lim->max_age_ms, CODE_SESSIONS_MAX_MS);
        return NULL;
    }
    struct code_sessions *r = xcalloc(1, sizeof(*r));
    r->lim = *lim;
    if (!r->lim.now_ms)
        r->lim.now_ms = util_now_ms;
    if (!r->lim.wall_ms)
        r->lim.wall_ms = util_wall_ms;
    pthread_mutex_init(&r->lock, NULL);
    TAILQ_INIT(&r->all);
    for (unsigned i = 0; i < BUCKETS; i++)
        LIST_INIT(&r->buckets[i]);
    return r;
}

void code_sessions_free(struct code_sessions *r)
{
    if (!r)
        return;
    struct code_session *cs;
    while ((cs = TAILQ_FIRST(&r->all))) {
        TAILQ_REMOVE(&r->all, cs, order);
        free_session(r, cs);
    }
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* Takes cs out of the registry (lock held): ENDED, off the caps. Its
 * reference from the registry is the caller's to move or drop. */
void reg_unlink_locked(struct code_sessions *r, struct code_session *cs)
{
    if (cs->state == ENDED)
        return;
    if (cs->state == LOST)
        r->tombstones--;
    else
        r->live--;
    TAILQ_REMOVE(&r->all, cs, order);
    LIST_REMOVE(cs, bucket);
    cs->state = ENDED;
    cs->closing = false;
    cs->call = NULL;
}

/* reg_unlink_locked and the registry's reference dropped; a session whose
 * last reference that was goes on *to_free. */
void reg_drop_locked(struct code_sessions *r, struct code_session *cs,
                     struct code_session **to_free)
{
    reg_unlink_locked(r, cs);
    if (--cs->refs == 0) {
        cs->next_free = *to_free;
        *to_free = cs;
    }
}

void reg_free_list(const struct code_sessions *r, struct code_session *to_free)
{
    while (to_free) {
        struct code_session *next = to_free->next_free;
        free_session(r, to_free);
        to_free = next;
    }
}

double reg_deadline_of(const struct code_sessions *r, const struct code_session *cs)
{
    if (cs->state == LOST)
        return cs->lost_mono + (double)r->lim.idle_ms;
    double idle = cs->last_used_mono + (double)r->lim.idle_ms;
    double age = cs->created_mono + (double)r->lim.max_age_ms;
    return idle < age ? idle : age;
}

static size_t live_of(const struct code_sessions *r, const struct code_session_owner *who)
{
    size_t n = 0;
    const struct code_session *cs;
    for (cs = TAILQ_FIRST(&r->all); cs; cs = TAILQ_NEXT(cs, order))
        if (cs->state != LOST && same_owner(&cs->who, who))
            n++;
    return n;
}

/* ---- a session's life ------------------------------------------------------- */

static int new_id(char id[CODE_SESSION_ID_CAP], struct err *err)
{
    if (handle_new(id) < 0)
        return err_set(err, ERR_INTERNAL, "no random bytes for a session id");
    return 0;
}

static struct code_session *find_locked(struct code_sessions *r, const char *id)
{
    struct code_session *cs;
    for (cs = LIST_FIRST(&r->buckets[bucket_of(id)]); cs; cs = LIST_NEXT(cs, bucket))
        if (same_id(cs->id, id))
            return cs;
    return NULL;
}

/* Places cs in the registry (lock held) under a fresh id; -1 when no id
 * comes free or the caps are reached. */
static int insert_locked(struct code_sessions *r, struct code_session *cs, struct err *err)
{
    if (r->live >= (size_t)r->lim.max_sessions)
        return err_set(err, ERR_TOO_BIG, "too many code sessions (--max-code-sessions %d)",
                       r->lim.max_sessions);
    if (live_of(r, &cs->who) >= (size_t)r->lim.max_per_owner)
        return err_set(err, ERR_TOO_BIG,
                       "too many code sessions per owner (--max-code-sessions-per-owner %d)",
                       r->lim.max_per_owner);
    for (int i = 0; i < ID_TRIES; i++) {
        if (new_id(cs->id, err) < 0)
            return -1;
        if (find_locked(r, cs->id))
            continue;
        cs->state = STARTING;
        cs->refs = 2; /* the registry's and the caller's */
        TAILQ_INSERT_TAIL(&r->all, cs, order);
        LIST_INSERT_HEAD(&r->buckets[bucket_of(cs->id)], cs, bucket);
        r->live++;
        return 0;
    }
    return err_set(err, ERR_INTERNAL, "no unused session id in %d tries", ID_TRIES);
}

struct code_session *code_sessions_reserve(struct code_sessions *r,
                                           const struct code_session_owner *who,
                                           const char *language, const char *name, struct err *err)
{
    if (!session_check_owner(who)) {
        err_set(err, ERR_INVALID, "code session owner: not a valid owner and principal");
        return NULL;
    }
    if (!name)
        name = "";
    if (session_check_language(language, err) < 0 || session_check_name(name, err) < 0)
        return NULL;
    struct code_session *cs = xcalloc(1, sizeof(*cs));
    cs->who = *who;
    memcpy(cs->language, language, strlen(language) + 1);
    memcpy(cs->name, name, strlen(name) + 1);
    pthread_mutex_lock(&r->lock);
    int rc = insert_locked(r, cs, err);
    pthread_mutex_unlock(&r->lock);
    if (rc < 0) {
        free(cs);
        return NULL;
    }
    return cs;
}

int code_sessions_open(struct code_sessions *r, struct code_session *cs, void *handle,
                       struct err *err)
{
    struct code_session *to_free = NULL;
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    if (cs->state != STARTING) {
        rc = err_set(err, ERR_INTERNAL, "code session %.8s: opened twice", handle_tail(cs->id));
    } else if (cs->closing) {
        reg_drop_locked(r, cs, &to_free);
        rc = err_set(err, ERR_CANCELLED, "the session was ended while it started");
    } else {
        cs->state = IDLE;
        cs->handle = handle;
        cs->created_mono = cs->last_used_mono = r->lim.now_ms();
        cs->created_wall = cs->last_used_wall = r->lim.wall_ms();
        /* list shows sessions in the order they opened. */
        TAILQ_REMOVE(&r->all, cs, order);
        TAILQ_INSERT_TAIL(&r->all, cs, order);
    }
    pthread_mutex_unlock(&r->lock);
    reg_free_list(r, to_free);
    return rc;
}

void code_sessions_abandon(struct code_sessions *r, struct code_session *cs)
{
    struct code_session *to_free = NULL;
    pthread_mutex_lock(&r->lock);
    if (cs->state == STARTING)
        reg_drop_locked(r, cs, &to_free);
    pthread_mutex_unlock(&r->lock);
    reg_free_list(r, to_free);
}

/* A session its owner may reach (lock held): open, not ending, not past
 * its time (the next expire may not have come yet). */
static bool reachable_locked(struct code_sessions *r, const struct code_session *cs)
{
    if (cs->closing)
        return false;
    if (cs->state == BUSY)
        return true;
    return cs->state == IDLE && reg_deadline_of(r, cs) > r->lim.now_ms();
}

struct code_session *code_sessions_get(struct code_sessions *r, const char *id,
                                       const struct code_session_owner *who, bool *lost)
{
    if (lost)
        *lost = false;
    if (!session_check_id(id) || !session_check_owner(who))
        return NULL;
    pthread_mutex_lock(&r->lock);
    struct code_session *cs = find_locked(r, id);
    if (cs && !same_owner(&cs->who, who))
        cs = NULL;
    if (cs && cs->state == LOST) {
        /* Shown once: the registry's reference becomes the caller's. */
        reg_unlink_locked(r, cs);
        if (lost)
            *lost = true;
    } else if (cs && reachable_locked(r, cs)) {
        cs->refs++;
    } else {
        cs = NULL;
    }
    pthread_mutex_unlock(&r->lock);
    return cs;
}

void code_sessions_ref(struct code_sessions *r, struct code_session *cs)
{
    pthread_mutex_lock(&r->lock);
    cs->refs++;
    pthread_mutex_unlock(&r->lock);
}

void code_sessions_put(struct code_sessions *r, struct code_session *cs)
{
    if (!cs)
        return;
    pthread_mutex_lock(&r->lock);
    bool last = --cs->refs == 0;
    pthread_mutex_unlock(&r->lock);
    if (last)
        free_session(r, cs);
}

int code_sessions_begin_call(struct code_sessions *r, struct code_session *cs, void *call,
                             bool *lost, struct err *err)
{
    struct code_session *to_free = NULL;
    int rc = 0;
    if (lost)
        *lost = false;
    pthread_mutex_lock(&r->lock);
    if (cs->state == BUSY && !cs->closing) {
        rc = err_set(err, ERR_INVALID, "the session is busy with another call");
    } else if (cs->state == LOST) {
        reg_drop_locked(r, cs, &to_free);
        if (lost)
            *lost = true;
        rc = err_set(err, ERR_NOT_FOUND, "the session was lost: %s", cs->reason);
    } else if (cs->state != IDLE || !reachable_locked(r, cs)) {
        rc = err_set(err, ERR_NOT_FOUND, "no such session");
    } else {
        cs->state = BUSY;
        cs->call = call;
    }
    pthread_mutex_unlock(&r->lock);
    reg_free_list(r, to_free);
    return rc;
}

bool code_sessions_end_call(struct code_sessions *r, struct code_session *cs)
{
    struct code_session *to_free = NULL;
    bool ended = false;
    pthread_mutex_lock(&r->lock);
    if (cs->state == BUSY && cs->closing) {
        reg_drop_locked(r, cs, &to_free);
        ended = true;
    } else if (cs->state == BUSY) {
        cs->state = IDLE;
        cs->call = NULL;
        cs->last_used_mono = r->lim.now_ms();
        cs->last_used_wall = r->lim.wall_ms();
    }
    pthread_mutex_unlock(&r->lock);
    reg_free_list(r, to_free);
    return ended;
}

/* Makes room for one more of who's tombstones (lock held): the oldest of
 * who's past CODE_SESSION_TOMBSTONES_PER_OWNER, the oldest of all past
 * CODE_SESSION_TOMBSTONES_MAX. */
static void trim_tombstones_locked(struct code_sessions *r, const struct code_session_owner *who,
                                   struct code_session **to_free)
{
    struct code_session *cs, *oldest = NULL, *oldest_mine = NULL;
    size_t mine = 0;
    for (cs = TAILQ_FIRST(&r->all); cs; cs = TAILQ_NEXT(cs, order)) {
        if (cs->state != LOST)
            continue;
        if (!oldest || cs->lost_mono < oldest->lost_mono)
            oldest = cs;
        if (same_owner(&cs->who, who)) {
            mine++;
            if (!oldest_mine || cs->lost_mono < oldest_mine->lost_mono)
                oldest_mine = cs;
        }
    }
    if (oldest_mine && mine >= CODE_SESSION_TOMBSTONES_PER_OWNER)
        reg_drop_locked(r, oldest_mine, to_free);
    else if (oldest && r->tombstones >= CODE_SESSION_TOMBSTONES_MAX)
        reg_drop_locked(r, oldest, to_free);
}

bool code_sessions_lose(struct code_sessions *r, struct code_session *cs, const char *reason)
{
    struct code_session *to_free = NULL;
    pthread_mutex_lock(&r->lock);
    bool found = cs->state == IDLE || cs->state == BUSY || cs->state == STARTING;
    if (cs->state == IDLE) {
        trim_tombstones_locked(r, &cs->who, &to_free);
        int n = util_utf8_prefix(reason ? reason : "", CODE_SESSION_REASON_MAX);
        memcpy(cs->reason, reason ? reason : "", (size_t)n);
        cs->reason[n] = '\0';
        cs->state = LOST;
        cs->lost_mono = r->lim.now_ms();
        r->live--;
        r->tombstones++;
    } else if (cs->state == BUSY || cs->state == STARTING) {
        reg_drop_locked(r, cs, &to_free);
    }
    pthread_mutex_unlock(&r->lock);
    reg_free_list(r, to_free);
    return found;
}

enum code_session_closed code_sessions_close(struct code_sessions *r, struct code_session *cs)
{
    struct code_session *to_free = NULL;
    enum code_session_closed what = CODE_SESSION_GONE;
    pthread_mutex_lock(&r->lock);
    if (cs->state == IDLE) {
        reg_drop_locked(r, cs, &to_free);
        what = CODE_SESSION_CLOSED;
    } else if (cs->state == BUSY && !cs->closing) {
        cs->closing = true;
        if (r->lim.cancel_call && cs->call)
            r->lim.cancel_call(cs->call);
        what = CODE_SESSION_CLOSING;
    }
    pthread_mutex_unlock(&r->lock);
    reg_free_list(r, to_free);
    return what;
}

/* ---- what is there ------------------------------------------------------------ */

static void info_locked(const struct code_sessions *r, const struct code_session *cs,
                        struct code_session_info *out)
{
    memset(out, 0, sizeof(*out));
    memcpy(out->session_id, cs->id, sizeof(out->session_id));
    memcpy(out->language, cs->language, sizeof(out->language));
    memcpy(out->name, cs->name, sizeof(out->name));
    out->created_at = cs->created_wall;
    out->last_used_at = cs->last_used_wall;
    out->busy = cs->state == BUSY;
    out->idle_timeout_ms = r->lim.idle_ms;
    long long idle = cs->last_used_wall + r->lim.idle_ms;
    long long age = cs->created_wall + r->lim.max_age_ms;
    out->expires_at = idle < age ? idle : age;
}

size_t code_sessions_list(struct code_sessions *r, const struct code_session_owner *who,
                          struct code_session_info **out)
{
    *out = NULL;
    if (!session_check_owner(who))
        return 0;
    size_t n = 0;
    const struct code_session *cs;
    pthread_mutex_lock(&r->lock);
    size_t cap = live_of(r, who);
    if (cap)
        *out = xcalloc(cap, sizeof(**out));
    for (cs = TAILQ_FIRST(&r->all); cs; cs = TAILQ_NEXT(cs, order))
        if (n < cap && same_owner(&cs->who, who) && reachable_locked(r, cs))
            info_locked(r, cs, &(*out)[n++]);
    pthread_mutex_unlock(&r->lock);
    if (n == 0) {
        free(*out);
        *out = NULL;
    }
    return n;
}

void code_sessions_info(struct code_sessions *r, const struct code_session *cs,
                        struct code_session_info *out)
{
    pthread_mutex_lock(&r->lock);
    info_locked(r, cs, out);
    pthread_mutex_unlock(&r->lock);
}

struct code_sessions_counts code_sessions_counts(struct code_sessions *r,
                                                 const struct code_session_owner *who)
{
    struct code_sessions_counts c = {0};
    pthread_mutex_lock(&r->lock);
    c.active = r->live;
    if (session_check_owner(who))
        c.yours = live_of(r, who);
    pthread_mutex_unlock(&r->lock);
    return c;
}

const char *code_session_id(const struct code_session *cs)
{
    return cs->id;
}

const char *code_session_tag(const struct code_session *cs)
{
    return handle_tail(cs->id);
}

const char *code_session_language(const struct code_session *cs)
{
    return cs->language;
}

const char *code_session_name(const struct code_session *cs)
{
    return cs->name;
}

const struct code_session_owner *code_session_owner(const struct code_session *cs)
{
    return &cs->who;
}

void *code_session_handle(const struct code_session *cs)
{
    return cs->handle;
}

const char *code_session_lost_reason(const struct code_session *cs)
{
    return cs->reason;
}
