#include "sandbox/launch.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend/channel.h"
#include "base/log.h"
#include "sandbox/policy.h"
#include "sandbox/runner.h"

struct launcher {
    struct backend *backend;
    struct reaper *reaper;
    struct uids *uids; /* NULL: every sandbox runs as its spec's user */
    const struct config *cfg;
    pthread_mutex_t lock;
    bool socket_off;      /* --sandbox-io attach, or this host cannot make the sockets */
    char **attach_images; /* whose sandboxes could not connect */
    size_t n_attach_images;
};

struct launcher *launcher_new(struct backend *b, struct reaper *r, const struct config *cfg,
                              struct uids *uids)
{
    struct launcher *l = xcalloc(1, sizeof(*l));
    l->backend = b;
    l->reaper = r;
    l->uids = uids;
    l->cfg = cfg;
    l->socket_off = strcmp(cfg->sandbox_io, "socket") != 0;
    pthread_mutex_init(&l->lock, NULL);
    if (!l->socket_off)
        channel_sweep(cfg->sandbox_io_dir);
    return l;
}

void launcher_free(struct launcher *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n_attach_images; i++)
        free(l->attach_images[i]);
    free(l->attach_images);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

static bool image_attaches_locked(const struct launcher *l, const char *image)
{
    for (size_t i = 0; i < l->n_attach_images; i++)
        if (strcmp(l->attach_images[i], image) == 0)
            return true;
    return false;
}

static bool wants_socket(struct launcher *l, const struct backend_spec *spec)
{
    if (policy_runtime_is_gvisor(spec->runtime))
        return false;
    pthread_mutex_lock(&l->lock);
    bool yes = !l->socket_off && !image_attaches_locked(l, spec->image);
    pthread_mutex_unlock(&l->lock);
    return yes;
}

const char *launch_io_name(struct launcher *l, const struct backend_spec *spec)
{
    return wants_socket(l, spec) ? "socket" : "attach";
}

static void socket_unavailable(struct launcher *l, const char *why)
{
    pthread_mutex_lock(&l->lock);
    bool first = !l->socket_off;
    l->socket_off = true;
    pthread_mutex_unlock(&l->lock);
    if (first)
        log_warn("sandbox I/O: cannot use sockets on this host (%s); sandboxes use the engine's "
                 "attach stream",
                 why);
}

static void image_attaches(struct launcher *l, const char *image, const char *why)
{
    pthread_mutex_lock(&l->lock);
    bool first = !image_attaches_locked(l, image);
    if (first) {
        l->attach_images =
            xrealloc(l->attach_images, (l->n_attach_images + 1) * sizeof(*l->attach_images));
        l->attach_images[l->n_attach_images++] = xstrdup(image);
    }
    pthread_mutex_unlock(&l->lock);
    if (first)
        log_warn("sandbox I/O: a sandbox of image %s could not connect to its socket (%s); that "
                 "image uses the engine's attach stream from now on",
                 image, why);
}

static bool stopped(int stop_fd)
{
    struct pollfd p = {.fd = stop_fd, .events = POLLIN};
    return stop_fd >= 0 && poll(&p, 1, 0) > 0;
}

/* *out is spec with the user a new sandbox runs as: with sandbox uids, one
 * taken for it, which create hands to the reaper with the container (or
 * gives back when there is none). */
static int own_user(struct launcher *l, const struct backend_spec *spec, struct backend_spec *out,
                    struct err *err)
{
    *out = *spec;
    if (!l->uids)
        return 0;
    uid_t uid = 0;
    if (uids_take(l->uids, &uid, err) < 0)
        return -1;
    out->uid = uid;
    out->gid = (gid_t)uid;
    return 0;
}

static void give_back(struct launcher *l, const struct backend_spec *spec)
{
    if (l->uids)
        uids_give_back(l->uids, spec->uid);
}

/* spec's uid goes with the container to the reaper, which gives it back
 * once the container is gone; after a failed create at once: a container
 * the engine made all the same (a create that timed out) is never
 * started, so nothing runs as that uid. */
static int create(struct launcher *l, const struct backend_spec *spec, double deadline_ms,
                  char **id, struct err *err)
{
    reaper_create_begin(l->reaper);
    int rc = backend_create(l->backend, spec, deadline_ms, id, err);
    reaper_create_end(l->reaper, rc == 0 ? *id : NULL,
                      rc == 0 && l->uids ? (long long)spec->uid : -1);
    if (rc < 0)
        give_back(l, spec);
    if (rc == 0)
        log_debug("created container %.12s (%s)", *id, spec->pool ? spec->pool : "on demand");
    return rc;
}

static void discard(struct launcher *l, char **id)
{
    if (*id)
        reaper_remove(l->reaper, *id);
    free(*id);
    *id = NULL;
}

static int launch_attach(struct launcher *l, const struct backend_spec *spec, double deadline_ms,
                         int stop_fd, char **id, struct backend_stream **stream, struct err *err)
{
    if (create(l, spec, deadline_ms, id, err) < 0)
        return -1;
    int rc = 1;
    if (!stopped(stop_fd)) {
        rc = backend_attach(l->backend, *id, deadline_ms, stream, err) < 0 ||
                     backend_start(l->backend, *id, deadline_ms, err) < 0
                 ? -1
                 : 0;
    }
    if (rc != 0) {
        backend_stream_close(*stream);
        *stream = NULL;
        discard(l, id);
    }
    return rc;
}

struct liveness {
    struct backend *backend;
    const char *id;
    bool exited;
    int exit_code;
};

/* An engine that does not answer says nothing about the sandbox: the
 * deadline decides then. */
static int still_running(void *arg, struct err *err)
{
    struct liveness *lv = arg;
    struct backend_state st = {0};
    struct err e = ERR_INIT;
    int rc = backend_inspect(lv->backend, lv->id, &st, &e);
    err_clear(&e);
    if (rc < 0 || st.running)
        return 0;
    lv->exited = true;
    lv->exit_code = st.exit_code;
    return err_set(err, ERR_ENGINE, "it exited with status %d", st.exit_code);
}

/* *could_not_connect: the sandbox ended by itself without connecting at
 * all, which says its image cannot (rather than the engine failing, or
 * someone killing it). */
static int launch_socket(struct launcher *l, const struct backend_spec *spec, struct channel *ch,
                         double deadline_ms, int stop_fd, char **id, struct backend_stream **stream,
                         bool *could_not_connect, struct err *err)
{
    size_t n = 0;
    while (spec->cmd[n])
        n++;
    const char **argv = xcalloc(n + 5, sizeof(*argv));
    argv[0] = "perl";
    argv[1] = "-e";
    argv[2] = runner_connect_src;
    argv[3] = CHANNEL_SOCKET;
    memcpy(argv + 4, spec->cmd, n * sizeof(*argv));
    struct backend_spec s = *spec;
    s.cmd = argv;
    s.io_dir = channel_dir(ch);
    int rc = create(l, &s, deadline_ms, id, err);
    free(argv);
    if (rc < 0)
        return -1;
    rc = 1;
    if (!stopped(stop_fd) && backend_start(l->backend, *id, deadline_ms, err) == 0) {
        double by = util_now_ms() + LAUNCH_CONNECT_MS;
        if (deadline_ms > 0 && deadline_ms < by)
            by = deadline_ms;
        struct liveness lv = {.backend = l->backend, .id = *id};
        rc = channel_accept(ch, *id, by, stop_fd, still_running, &lv, stream, err);
        *could_not_connect =
            rc < 0 && lv.exited && lv.exit_code != 137 && channel_accepted(ch) == 0;
    } else if (!stopped(stop_fd)) {
        rc = -1;
    }
    if (rc > 0)
        err_clear(err);
    if (rc != 0)
        discard(l, id);
    return rc;
}

int launch(struct launcher *l, const struct backend_spec *spec, double deadline_ms, int stop_fd,
           char **id, struct backend_stream **stream, struct err *err)
{
    *id = NULL;
    *stream = NULL;
    struct backend_spec s;
    if (wants_socket(l, spec)) {
        struct channel *ch = NULL;
        struct err e = ERR_INIT;
        if (own_user(l, spec, &s, err) < 0)
            return -1;
        if (channel_open(l->cfg->sandbox_io_dir, s.uid, s.gid, &ch, &e) < 0) {
            give_back(l, &s);
            /* A lasting cause (the directory, no CAP_CHOWN) turns sockets
             * off; a passing one (no fds left) costs this sandbox only. */
            if (e.code == ERR_INVALID)
                socket_unavailable(l, err_msg(&e));
            else
                log_warn("sandbox I/O: %s; this sandbox attaches", err_msg(&e));
            err_clear(&e);
        } else {
            bool could_not_connect = false;
            int rc =
                launch_socket(l, &s, ch, deadline_ms, stop_fd, id, stream, &could_not_connect, err);
            channel_close(ch);
            if (rc >= 0)
                return rc;
            if (could_not_connect) {
                image_attaches(l, spec->image, err_msg(err));
            } else if (err->code == ERR_PROTOCOL) {
                /* Not its connector on the socket: the code never went there. */
                log_warn("sandbox I/O: %s; the sandbox was discarded, a new one attaches",
                         err_msg(err));
            } else {
                return rc;
            }
            err_clear(err);
        }
    }
    /* A sandbox discarded above may still run as its uid: a new one. */
    if (own_user(l, spec, &s, err) < 0)
        return -1;
    return launch_attach(l, &s, deadline_ms, stop_fd, id, stream, err);
}
