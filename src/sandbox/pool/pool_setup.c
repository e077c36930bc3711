/* The pool's set-up of one sandbox (pool_impl.h): its directory, create,
 * streams and start through the launcher, the runner's ready mark, and
 * its CPU weight held low until a run takes it. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/util.h"
#include "sandbox/pool/pool_impl.h"
#include "sandbox/run/launch.h"
#include "sandbox/runner/runner.h"

/* Setting a sandbox up (create, streams, start) gets at most this long,
 * so a stalled engine holds a filler, and shutdown, no longer than that. */
#define SETUP_TIMEOUT_MS 30000
/* stderr kept from a runner that never became ready, for the message. */
#define JUNK_KEEP 160

void pool_dir_drop(const struct pool_dirs *dirs, char *dir)
{
    if (dir && dirs && dirs->drop)
        dirs->drop(dirs->arg, dir);
    free(dir);
}

struct mark_scan {
    const char *mark;
    size_t mark_len;
    size_t matched; /* bytes of mark seen on stdout */
    bool extra;     /* stdout went on past it */
    char junk[JUNK_KEEP];
    size_t junk_len;
};

static int mark_cb(void *ctx, int stream, const char *data, size_t len, struct err *err)
{
    struct mark_scan *m = ctx;
    if (stream != BACKEND_STDOUT) {
        /* The interpreter's own complaints (the runner silences the
         * imports): kept for the message should the mark never come. */
        size_t room = sizeof(m->junk) - m->junk_len;
        size_t take = len < room ? len : room;
        memcpy(m->junk + m->junk_len, data, take);
        m->junk_len += take;
        return 0;
    }
    for (size_t k = 0; k < len; k++) {
        if (m->matched == m->mark_len) {
            m->extra = true;
            return 1;
        }
        if (data[k] != m->mark[m->matched])
            return err_set(err, ERR_PROTOCOL, "the runner wrote to stdout out of turn");
        m->matched++;
    }
    return 0;
}

/* Reads st until the runner's mark, which must be all of its stdout so
 * far. Returns 0, 1 when stop_fd became readable first, or -1 with err. */
static int await_mark(struct backend_stream *st, const char *mark, size_t mark_len, double deadline,
                      int stop_fd, struct err *err)
{
    struct mark_scan m = {.mark = mark, .mark_len = mark_len};
    while (m.matched < mark_len) {
        if (!backend_stream_pending(st)) {
            double left = deadline - util_now_ms();
            if (left <= 0)
                return err_set(err, ERR_TIMEOUT, "no word from the runner in time");
            struct pollfd pfd[2] = {{.fd = backend_stream_fd(st), .events = POLLIN},
                                    {.fd = stop_fd, .events = POLLIN}};
            int pr = poll(pfd, 2, (int)left + 1);
            if (pr < 0 && errno != EINTR)
                return err_set(err, ERR_IO, "poll on the sandbox's streams: %s", strerror(errno));
            if (pfd[1].revents)
                return 1;
            if (pr <= 0)
                continue;
        }
        long n = backend_stream_read(st, mark_cb, &m, err);
        if (n == BACKEND_AGAIN)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            char shown[JUNK_KEEP + 1];
            util_printable_ascii(shown, sizeof(shown), m.junk, m.junk_len, true);
            return err_set(err, ERR_ENGINE, "the sandbox exited before its runner was ready%s%s",
                           m.junk_len ? ": " : "", shown);
        }
    }
    if (m.extra)
        return err_set(err, ERR_PROTOCOL, "the runner wrote to stdout out of turn");
    return 0;
}

static int await_ready(struct pool *p, struct backend_stream *st, double deadline, struct err *err)
{
    int rc = await_mark(st, RUNNER_READY, RUNNER_READY_LEN, deadline, p->stop_fd, err);
    if (rc > 0)
        return err_set(err, ERR_INTERNAL, "the pool is stopping");
    if (rc < 0)
        return err_wrap(err, "waiting for the runner to be ready");
    /* Nothing may follow until the request: the runner waits for it. */
    if (backend_stream_pending(st))
        return err_set(err, ERR_PROTOCOL, "the runner wrote to stdout after it was ready");
    return 0;
}

/* Holds w's weight open, to be raised when a run takes it. When the
 * backend cannot do that here, weights go off for every later sandbox,
 * and this one, set up at the low weight, is not kept: a run in it would
 * lose the CPUs to the next set-up. */
static int hold_weight(struct pool *p, const struct slot *s, const char *id,
                       struct backend_weight *w, struct err *err)
{
    struct err why = ERR_INIT;
    if (backend_weight_open(p->backend, id, w, &why) == 0) {
        err_clear(&why);
        return 0;
    }
    /* A container that died as it started says nothing of weights. */
    struct backend_state st = {0};
    struct err ierr = ERR_INIT;
    if (backend_inspect(p->backend, id, &st, &ierr) < 0 || !st.running) {
        err_clear(&ierr);
        err_set(err, ERR_IO, "%s sandbox died as it started (%s)", s->prof.name, err_msg(&why));
        err_clear(&why);
        return -1;
    }
    pthread_mutex_lock(&p->lock);
    bool first = p->weights;
    p->weights = false;
    if (first)
        snprintf(p->weights_off, sizeof(p->weights_off), "%s", err_msg(&why));
    pthread_mutex_unlock(&p->lock);
    if (first)
        log_info("pool: sandboxes wait at the normal CPU weight, so setting one up competes "
                 "with runs (%s)",
                 err_msg(&why));
    err_clear(&why);
    return err_set(err, ERR_IO, "%s sandbox: CPU weights went off", s->prof.name);
}

/* One set-up; *again when its sandbox was not kept only because weights
 * have just gone off. */
static int set_up(struct pool *p, const struct slot *s, bool lean, struct waiting *out, bool *again,
                  struct err *err)
{
    struct backend_spec spec = lean ? s->prof.lean : s->prof.spec;
    pthread_mutex_lock(&p->lock);
    bool weights = p->weights;
    pthread_mutex_unlock(&p->lock);
    spec.cpu_shares = weights ? BACKEND_CPU_SHARES_LOW : 0;
    spec.expires = (long long)time(NULL) + (p->max_age_ms + 999) / 1000 + p->expiry_extra_s;
    const struct pool_dirs *dirs = s->prof.dirs.make ? &s->prof.dirs : NULL;
    char *dir = NULL;
    if (dirs && dirs->make(dirs->arg, &dir, err) < 0)
        return -1;
    if (dir)
        spec.install_dir = dir;
    double t0 = util_now_ms();
    char *id = NULL;
    struct backend_stream *st = NULL;
    int rc = launch(p->launcher, &spec, t0 + SETUP_TIMEOUT_MS, p->stop_fd, &id, &st, err);
    if (rc > 0)
        err_set(err, ERR_INTERNAL, "the pool is stopping");
    if (rc != 0) {
        pool_dir_drop(dirs, dir);
        return -1;
    }
    /* The weight is held before the preloads run, so they run idle. */
    struct backend_weight w = BACKEND_WEIGHT_NONE;
    if (weights && hold_weight(p, s, id, &w, err) < 0) {
        pthread_mutex_lock(&p->lock);
        *again = !p->weights;
        pthread_mutex_unlock(&p->lock);
        rc = -1;
    }
    if (rc == 0)
        rc = await_ready(p, st, t0 + POOL_READY_TIMEOUT_MS, err);
    if (rc < 0) {
        backend_weight_close(&w);
        backend_stream_close(st);
        reaper_remove(p->reaper, id);
        free(id);
        pool_dir_drop(dirs, dir);
        return -1;
    }
    log_debug("pool: %s sandbox %.12s ready in %.0f ms%s", s->prof.name, id, util_now_ms() - t0,
              lean ? " (without preloads)" : "");
    *out = (struct waiting){
        .id = id, .stream = st, .born_ms = t0, .weight = w, .dir = dir, .dirs = dirs};
    return 0;
}

int pool_fill_one(struct pool *p, const struct slot *s, bool lean, struct waiting *out,
                  struct err *err)
{
    bool again = false;
    int rc = set_up(p, s, lean, out, &again, err);
    if (rc < 0 && again) {
        err_clear(err);
        rc = set_up(p, s, lean, out, &again, err);
    }
    return rc;
}
