/* The code sessions' watcher (code_session.h): one thread per context. It
 * polls the idle sessions' streams (stray output is read and dropped; the
 * end of a stream loses the session, with the engine's word on why) and
 * ends the sessions past their idle time or age. It reads a stream only
 * under its session's lock while the session is idle, so a call, which
 * takes the session busy under that lock, is the stream's only reader
 * while it runs. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/log.h"
#include "base/threads.h"
#include "sandbox/run/follow.h"
#include "sandbox/session/space.h"

/* The longest the watcher sleeps without a wake or a timer due. */
#define WATCH_MAX_WAIT_MS 1000
/* What the log line about a session lost while idle quotes of its reason. */
#define WATCH_REASON_MAX CODE_SESSION_REASON_MAX

void watch_wake(struct code_space *sp)
{
    if (sp->wake_fd < 0)
        return;
    uint64_t one = 1;
    ssize_t w = write(sp->wake_fd, &one, sizeof(one));
    (void)w;
}

void watch_add(struct code_space *sp, struct kept *k)
{
    pthread_mutex_lock(&sp->lock);
    bool add = !k->torn && !k->linked && !sp->stopping;
    if (add) {
        LIST_INSERT_HEAD(&sp->watched, k, watched);
        sp->n_watched++;
        k->linked = true;
        /* The list's reference: k lives while it is on it. */
        code_sessions_ref(sp->reg, k->cs);
    }
    pthread_mutex_unlock(&sp->lock);
    watch_wake(sp);
}

/* Stray output of an idle session: read and dropped. */
static int drop_output(void *ctx, int stream, const char *data, size_t len, struct err *err)
{
    (void)stream;
    (void)data;
    (void)err;
    *(size_t *)ctx += len;
    return 0;
}

/* The idle session's stream ended (or broke): why, as the engine says. */
static char *why_ended(struct code_space *sp, struct kept *k, long n, const struct err *read_err)
{
    if (n < 0)
        return xasprintf("the session's sandbox stream broke while it was idle: %s",
                         err_msg(read_err));
    struct backend_state st = {0};
    struct err err = ERR_INIT;
    char *why;
    if (backend_wait(sp->ctx->backend, k->sb.id, FOLLOW_WAIT_AFTER_EOF_MS, &st, &err) < 0)
        why = xasprintf("the session's sandbox ended while it was idle: %s", err_msg(&err));
    else if (st.oom_killed)
        why = xasprintf("the sandbox was killed for using more than %lld MiB of memory while "
                        "the session was idle",
                        k->memory_mb);
    else
        why = xasprintf("the sandbox's process exited while the session was idle (code %d)",
                        st.exit_code);
    err_clear(&err);
    return why;
}

/* Reads what the idle session k's stream has; at its end the session is
 * lost and its sandbox torn down. */
static void check_one(struct code_space *sp, struct kept *k)
{
    pthread_mutex_lock(&k->lock);
    if (k->busy || !k->sb.stream) {
        pthread_mutex_unlock(&k->lock);
        return;
    }
    size_t dropped = 0;
    struct err err = ERR_INIT;
    long n = backend_stream_read(k->sb.stream, drop_output, &dropped, &err);
    if (dropped)
        log_debug("code session %.8s: %zu bytes of output while idle, dropped",
                  code_session_tag(k->cs), dropped);
    char *why = NULL;
    bool gone = false;
    /* BACKEND_AGAIN: what poll saw was a call's output, read by that call
     * before this lock was taken. */
    if (n == 0 || n == -1) {
        why = why_ended(sp, k, n, &err);
        gone = code_sessions_lose(sp->reg, k->cs, why);
    }
    pthread_mutex_unlock(&k->lock);
    err_clear(&err);
    if (gone) {
        log_info("code session %.8s lost while idle: %.*s", code_session_tag(k->cs),
                 WATCH_REASON_MAX, why);
        space_teardown(sp, k, false);
    }
    free(why);
}

/* The sessions to poll now, each with a reference held: the idle ones with
 * a stream. Returns how many (at most cap). */
static size_t snapshot(struct code_space *sp, struct kept **ks, struct pollfd *pfd, size_t cap)
{
    size_t n = 0;
    pthread_mutex_lock(&sp->lock);
    for (struct kept *k = LIST_FIRST(&sp->watched); k && n < cap; k = LIST_NEXT(k, watched)) {
        pthread_mutex_lock(&k->lock);
        if (!k->busy && k->sb.stream) {
            pfd[n] = (struct pollfd){.fd = backend_stream_fd(k->sb.stream), .events = POLLIN};
            ks[n++] = k;
            code_sessions_ref(sp->reg, k->cs);
        }
        pthread_mutex_unlock(&k->lock);
    }
    pthread_mutex_unlock(&sp->lock);
    return n;
}

/* Ends the sessions past their time; returns how long to sleep at most. */
static int expire(struct code_space *sp)
{
    struct code_session_set set;
    double next = -1;
    double now = sp->lim.now_ms();
    if (code_sessions_expire(sp->reg, now, &set, &next) > 0)
        log_info("%zu code session(s) ended: idle or age limit", set.n);
    space_teardown_set(sp, &set);
    if (next < 0 || next - now >= WATCH_MAX_WAIT_MS)
        return WATCH_MAX_WAIT_MS;
    return (int)(next - now) + 1;
}

static void *watch_main(void *arg)
{
    struct code_space *sp = arg;
    size_t cap = (size_t)sp->lim.max_sessions;
    struct kept **ks = xcalloc(cap, sizeof(struct kept *));
    struct pollfd *pfd = xcalloc(cap + 1, sizeof(*pfd));
    for (;;) {
        pthread_mutex_lock(&sp->lock);
        bool stop = sp->stopping;
        pthread_mutex_unlock(&sp->lock);
        if (stop)
            break;
        int wait_ms = expire(sp);
        size_t n = snapshot(sp, ks, pfd, cap);
        pfd[n] = (struct pollfd){.fd = sp->wake_fd, .events = POLLIN};
        int pr = poll(pfd, n + 1, wait_ms);
        if (pr < 0 && errno != EINTR)
            log_warn("code sessions' watcher: poll: %s", strerror(errno));
        if (pr > 0 && (pfd[n].revents & POLLIN)) {
            uint64_t v;
            ssize_t r = read(sp->wake_fd, &v, sizeof(v));
            (void)r;
        }
        for (size_t i = 0; i < n; i++) {
            if (pr > 0 && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                check_one(sp, ks[i]);
            code_sessions_put(sp->reg, ks[i]->cs);
        }
    }
    free(ks);
    free(pfd);
    return NULL;
}

int watch_start(struct code_space *sp, struct err *err)
{
    sp->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (sp->wake_fd < 0)
        return err_set(err, ERR_INTERNAL, "code sessions' watcher: eventfd: %s", strerror(errno));
    return thread_start(&sp->thread, &sp->started, watch_main, sp, "the code sessions' watcher",
                        err);
}

void watch_stop(struct code_space *sp)
{
    pthread_mutex_lock(&sp->lock);
    sp->stopping = true;
    pthread_mutex_unlock(&sp->lock);
    watch_wake(sp);
    thread_join(&sp->thread, &sp->started);
}
