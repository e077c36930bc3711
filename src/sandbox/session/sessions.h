/* The code sessions' registry: which sessions exist, whose each is, what
 * state each is in and when each expires. A code session is one sandbox
 * kept between calls for one owner; making it, running calls in it and
 * watching it between calls are the rest of this folder's job. What it is
 * given (owner, language, name, id) is checked by session_check.h.
 *
 * Bookkeeping only: the registry never makes, reads or removes a sandbox;
 * it holds an owner's opaque handle for it (code_session_handle). Whoever
 * ends a session's use of its sandbox tears the sandbox down, so that each
 * is torn down once and never under a running call:
 * - IDLE, ended by close, end_owner or expire: their caller;
 * - BUSY, ended by close or end_owner: the call running in it, which
 *   end_call tells so;
 * - lost (its sandbox died or would not stop): lose's caller, who found it;
 * - ended while STARTING: the one making it, whom open tells so.
 *
 * States: STARTING (reserve: it counts against the caps while its sandbox
 * is made) -> IDLE (open) <-> BUSY (begin_call, end_call) -> gone. A session
 * lost while IDLE stays as a LOST tombstone, without its sandbox, so that
 * its owner's next get learns why, once; tombstones expire with the idle
 * timer, at most CODE_SESSION_TOMBSTONES_PER_OWNER per owner.
 *
 * Ownership: a session answers to the owner (the MCP session's random hex)
 * and the principal (whom the transport authenticated) that made it, both.
 * For anyone else, an id never made and a session gone, get returns the same
 * NULL, so a caller cannot tell them apart ("no such session").
 *
 * References: each session handed out is a held reference, dropped with
 * code_sessions_put; the registry holds one of its own while the session is
 * in it. A session that ends while a caller holds it stays readable (its id,
 * language, name, handle) until that caller's put.
 *
 * Time: timers run on the monotonic clock; the times reported
 * (code_session_info) are wall-clock ms. Both clocks are hooks for tests.
 *
 * Thread-safe: one lock over the registry and every session's state. */
#ifndef MCPSBX_SESSIONS_H
#define MCPSBX_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/handle.h"

/* The most sessions a registry can be made for (--max-code-sessions). */
#define CODE_SESSIONS_MAX 1024
/* An id is a handle (base/handle.h): the daemon's name, a dot, and
 * CODE_SESSION_ID_LEN lowercase hex digits of random bytes. */
#define CODE_SESSION_ID_LEN HANDLE_RANDOM_LEN
#define CODE_SESSION_ID_CAP (HANDLE_MAX + 1)
/* A session's name, in bytes (UTF-8, no control characters). */
#define CODE_SESSION_NAME_MAX 64
/* A language's name, in bytes (printable ASCII). */
#define CODE_SESSION_LANGUAGE_MAX 32
/* Why a session was lost, in bytes; longer text is cut. */
#define CODE_SESSION_REASON_MAX 256
/* LOST tombstones kept per owner and in all; past either the oldest goes. */
#define CODE_SESSION_TOMBSTONES_PER_OWNER 16
#define CODE_SESSION_TOMBSTONES_MAX       256
/* The longest idle time and age a registry takes: a week. */
#define CODE_SESSIONS_MAX_MS (7LL * 24 * 3600 * 1000)

/* Who a session answers to: owner is the MCP session's random hex (at most
 * 32 characters), principal whom its transport authenticated ("stdio",
 * "token:<16 hex>", "anonymous"; at most 23). Printable ASCII, not empty. */
struct code_session_owner {
    char owner[33];
    char principal[24];
};

struct code_sessions_limits {
    int max_sessions;     /* daemon-wide, 1..CODE_SESSIONS_MAX */
    int max_per_owner;    /* 1.. */
    long long idle_ms;    /* since the last call ended, 1..CODE_SESSIONS_MAX_MS */
    long long max_age_ms; /* since it opened, 1..CODE_SESSIONS_MAX_MS */
    /* Monotonic ms for the timers; NULL: util_now_ms. */
    double (*now_ms)(void);
    /* Wall-clock ms for the times reported; NULL: util_wall_ms. */
    long long (*wall_ms)(void);
    /* Asks the call running in a session to stop (the token begin_call was
     * given), when close or end_owner ends a BUSY session; may be NULL.
     * Called under the registry's lock: it must be quick and must not call
     * into the registry (exec_cancel, which writes an eventfd, is). */
    void (*cancel_call)(void *call);
    /* Frees a session's handle (what open was given) when the session's
     * last reference goes, outside the lock; may be NULL. So a handle
     * outlives every holder of its session. */
    void (*free_handle)(void *handle);
};

struct code_sessions;
struct code_session;

/* What close did. */
enum code_session_closed {
    CODE_SESSION_CLOSED,  /* it was IDLE and is gone: tear its sandbox down */
    CODE_SESSION_CLOSING, /* BUSY: its call was asked to stop, and tears down */
    CODE_SESSION_GONE,    /* already gone, lost or ending: nothing to do */
};

/* Sessions handed to a caller to tear down, each a held reference (v is
 * NULL when n is 0). */
struct code_session_set {
    struct code_session **v;
    size_t n;
};

/* One session as list_sessions shows it: plain data, no reference held. */
struct code_session_info {
    char session_id[CODE_SESSION_ID_CAP];
    char language[CODE_SESSION_LANGUAGE_MAX + 1];
    char name[CODE_SESSION_NAME_MAX + 1];
    long long created_at;   /* wall ms: when it opened */
    long long last_used_at; /* wall ms: when its last call ended, else created_at */
    bool busy;              /* a call runs in it */
    long long idle_timeout_ms;
    long long expires_at; /* wall ms: min(last_used_at + idle, created_at + max age) */
};

struct code_sessions_counts {
    size_t active; /* every owner's sessions, STARTING and ending ones too */
    size_t yours;  /* the same for one owner */
};

/* A registry with lim (checked: ERR_INVALID when out of range), or NULL. */
struct code_sessions *code_sessions_new(const struct code_sessions_limits *lim, struct err *err);

/* Frees the registry and what it still holds. Call it after every session
 * was ended (end_owner with NULL), torn down and put. NULL is fine. */
void code_sessions_free(struct code_sessions *r);

/* A new session of who's in STARTING, with a fresh random id: a held
 * reference, for open or abandon. language: printable ASCII, at most
 * CODE_SESSION_LANGUAGE_MAX bytes; name: NULL or UTF-8 of at most
 * CODE_SESSION_NAME_MAX bytes with no control characters; either wrong, or
 * who not a valid owner, is ERR_INVALID. Past --max-code-sessions, or past
 * --max-code-sessions-per-owner for who, it is ERR_TOO_BIG, saying which.
 * NULL on failure. */
struct code_session *code_sessions_reserve(struct code_sessions *r,
                                           const struct code_session_owner *who,
                                           const char *language, const char *name, struct err *err);

/* STARTING -> IDLE with its sandbox's handle: its idle and age timers start
 * now. -1 with ERR_CANCELLED when the session was ended while it started
 * (end_owner): it is gone, and the caller tears the sandbox down. */
int code_sessions_open(struct code_sessions *r, struct code_session *cs, void *handle,
                       struct err *err);

/* A STARTING session whose sandbox could not be made: gone, its place in
 * the caps free again. The caller still puts its reference. */
void code_sessions_abandon(struct code_sessions *r, struct code_session *cs);

/* The session id names, as a held reference, if it is who's and IDLE or
 * BUSY (and not past its idle time or age); otherwise NULL, alike for an id
 * never made, malformed, gone or another owner's. A LOST tombstone of
 * who's is returned once, with *lost set (may be NULL when the caller does
 * not care): it is then gone, and code_session_lost_reason says why. */
struct code_session *code_sessions_get(struct code_sessions *r, const char *id,
                                       const struct code_session_owner *who, bool *lost);

/* One more reference to a session the caller holds one of. */
void code_sessions_ref(struct code_sessions *r, struct code_session *cs);

/* Drops a reference (NULL is fine); the last one frees the session. */
void code_sessions_put(struct code_sessions *r, struct code_session *cs);

/* IDLE -> BUSY for one call; call is the token cancel_call gets if the
 * session is closed meanwhile (may be NULL). -1 with: ERR_INVALID when a
 * call already runs in it; ERR_NOT_FOUND when it is gone or ending, or was
 * lost (*lost set, the tombstone now gone, as a get would have shown it). */
int code_sessions_begin_call(struct code_sessions *r, struct code_session *cs, void *call,
                             bool *lost, struct err *err);

/* BUSY -> IDLE after the call, its idle timer restarted. True when the
 * session was closed or its owner ended during the call: it is gone, and the
 * caller tears the sandbox down. Not after lose. */
bool code_sessions_end_call(struct code_sessions *r, struct code_session *cs);

/* The session's sandbox is dead or was killed (reason, cut to
 * CODE_SESSION_REASON_MAX, says why). An IDLE session becomes a tombstone
 * for its owner's next get; a BUSY one is simply gone, as the call that
 * lost it reports that itself (a STARTING one too, as abandon). True when
 * it was one of those: the caller tears the sandbox down; false when it
 * had ended already (whoever ended it tears down). */
bool code_sessions_lose(struct code_sessions *r, struct code_session *cs, const char *reason);

/* Ends the session for close_session (see enum code_session_closed). */
enum code_session_closed code_sessions_close(struct code_sessions *r, struct code_session *cs);

/* Ends every session of who (of every owner when who is NULL, at shutdown):
 * the IDLE ones go into *out for the caller to tear down and put
 * (code_sessions_set_put); BUSY ones have their calls asked to stop and
 * end after them; STARTING ones fail their open. who's tombstones go too.
 * Returns out->n. */
size_t code_sessions_end_owner(struct code_sessions *r, const struct code_session_owner *who,
                               struct code_session_set *out);

/* Ends the IDLE sessions past their idle time or age at monotonic now_ms,
 * into *out as end_owner does, and drops the tombstones past their time.
 * A BUSY session ends only after its call: the first expire after
 * end_call. *next_ms (may be NULL) gets the monotonic time of the next
 * deadline of an IDLE session or tombstone, or -1 when there is none.
 * Returns out->n. */
size_t code_sessions_expire(struct code_sessions *r, double now_ms, struct code_session_set *out,
                            double *next_ms);

/* Puts every session of a set and frees its array. */
void code_sessions_set_put(struct code_sessions *r, struct code_session_set *set);

/* who's IDLE and BUSY sessions in the order they opened, oldest first, as an
 * allocated array in *out (the caller frees it; NULL when there are none).
 * Returns how many. */
size_t code_sessions_list(struct code_sessions *r, const struct code_session_owner *who,
                          struct code_session_info **out);

/* One session's snapshot, as list shows it. */
void code_sessions_info(struct code_sessions *r, const struct code_session *cs,
                        struct code_session_info *out);

/* Sessions counted against the caps, in all and who's (who may be NULL). */
struct code_sessions_counts code_sessions_counts(struct code_sessions *r,
                                                 const struct code_session_owner *who);

/* What stays fixed over a session's life, readable from a held reference
 * without the lock. */
const char *code_session_id(const struct code_session *cs);
/* The id's random part, for log lines: they show its first 8 digits,
 * never the whole id, which is a bearer secret without auth. */
const char *code_session_tag(const struct code_session *cs);
const char *code_session_language(const struct code_session *cs);
const char *code_session_name(const struct code_session *cs); /* "" when none */
const struct code_session_owner *code_session_owner(const struct code_session *cs);
/* The handle open was given (NULL before). */
void *code_session_handle(const struct code_session *cs);
/* Why it was lost, once get or begin_call said it was; "" before. */
const char *code_session_lost_reason(const struct code_session *cs);

#endif
