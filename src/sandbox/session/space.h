/* The insides shared by the code sessions' files (code_session.h): the
 * sandbox each session keeps, the context's registry and its watcher, and
 * the one way a kept sandbox is torn down. Internal to session/. */
#ifndef MCPSBX_SPACE_H
#define MCPSBX_SPACE_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/queue.h>

#include "sandbox/run/attempt.h"
#include "sandbox/run/exec_ctx.h"
#include "sandbox/run/packages_run.h"
#include "sandbox/session/code_session.h"

/* A session's sandbox: the registry's handle for it (code_session_handle),
 * freed with the session's last reference, so whoever holds the session
 * may take its lock. */
struct kept {
    pthread_mutex_t lock;    /* over the stream's use and the fields below */
    struct sandbox sb;       /* id and stream NULL once torn down */
    bool busy;               /* a call owns the stream (from begin_call to its end) */
    struct code_session *cs; /* not a reference: it outlives this */
    enum runner_session_mode mode;
    long long memory_mb;  /* fixed at open: every call's */
    long long timeout_ms; /* fixed at open: a call's unless it gives one */
    /* The session's --secret placeholders, made at open for all its calls
     * (a value kept in the interpreter stays valid); NULL: none. */
    struct egress_run_secrets *secrets;
    /* The package sets its calls added, released at teardown. */
    struct packages_held held;
    /* Under the space's lock: */
    LIST_ENTRY(kept) watched; /* holds a reference to cs while linked */
    bool linked, torn;
};

LIST_HEAD(kept_list, kept);

struct code_space {
    struct exec_ctx *ctx;
    struct code_sessions *reg;
    struct code_sessions_limits lim;
    /* Whether a pooled sandbox's label outlives a session's whole life. */
    bool pool_fits;
    /* The watcher (watch.c). */
    pthread_mutex_t lock;
    struct kept_list watched; /* open sessions' sandboxes */
    size_t n_watched;
    int wake_fd; /* eventfd: a session changed, or stop */
    bool stopping;
    pthread_t thread;
    bool started;
};

/* Closes the stream and sends the container to the reaper (killed first
 * when kill: it may still run), once; takes it off the watcher's list. */
void space_teardown(struct code_space *sp, struct kept *k, bool kill);

/* Tears down and puts every session of a set the registry handed over. */
void space_teardown_set(struct code_space *sp, struct code_session_set *set);

/* The watcher: started and stopped with the space; add a newly open
 * session's sandbox (unless it was torn down meanwhile); wake it to look
 * again (a session went busy or idle). */
int watch_start(struct code_space *sp, struct err *err);
void watch_stop(struct code_space *sp);
void watch_add(struct code_space *sp, struct kept *k);
void watch_wake(struct code_space *sp);

#endif
