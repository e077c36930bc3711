#include "backend/docker/sandbox_io.h"

#include <pthread.h>
#include <string.h>

#include "backend/docker/seccomp_profile.h"
#include "backend/docker/sock_dir.h"
#include "base/log.h"
#include "base/util.h"

/* BACKEND_EGRESS_PORT as the forwarder's argument. */
#define TEXT_OF(x)      #x
#define DECIMAL_TEXT(x) TEXT_OF(x)
#define EGRESS_PORT_ARG DECIMAL_TEXT(BACKEND_EGRESS_PORT)

/* What a container killed by SIGKILL exits with: someone stopped it,
 * which says nothing about its image. */
#define EXIT_KILLED 137

struct sandbox_io {
    char *dir;
    bool has_dir; /* dir names one: else no socket can be made */
    pthread_mutex_t lock;
    bool socket_off;      /* --sandbox-io attach, or this host cannot make the sockets */
    bool swept;           /* what a killed daemon left in dir is gone */
    char **attach_images; /* whose sandboxes could not connect */
    size_t n_attach_images;
};

struct sandbox_io *sandbox_io_new(const char *mode, const char *dir)
{
    struct sandbox_io *io = xcalloc(1, sizeof(*io));
    io->dir = xstrdup(dir ? dir : "");
    io->has_dir = dir && *dir;
    io->socket_off = !mode || strcmp(mode, "socket") != 0 || !dir;
    pthread_mutex_init(&io->lock, NULL);
    return io;
}

void sandbox_io_free(struct sandbox_io *io)
{
    if (!io)
        return;
    for (size_t i = 0; i < io->n_attach_images; i++)
        free(io->attach_images[i]);
    free(io->attach_images);
    pthread_mutex_destroy(&io->lock);
    free(io->dir);
    free(io);
}

static bool image_attaches_locked(const struct sandbox_io *io, const char *image)
{
    for (size_t i = 0; i < io->n_attach_images; i++)
        if (strcmp(io->attach_images[i], image) == 0)
            return true;
    return false;
}

/* Before the first socket is made. */
static void sweep_locked(struct sandbox_io *io)
{
    if (!io->swept) {
        sock_dir_sweep(io->dir);
        io->swept = true;
    }
}

static bool wants_socket(struct sandbox_io *io, const struct backend_spec *spec)
{
    if (seccomp_runtime_is_gvisor(spec->runtime))
        return false;
    pthread_mutex_lock(&io->lock);
    bool yes = !io->socket_off && !image_attaches_locked(io, spec->image);
    if (yes)
        sweep_locked(io);
    pthread_mutex_unlock(&io->lock);
    return yes;
}

const char *sandbox_io_name(struct sandbox_io *io, const struct backend_spec *spec)
{
    return wants_socket(io, spec) ? "socket" : "attach";
}

static void socket_unavailable(struct sandbox_io *io, const char *why)
{
    pthread_mutex_lock(&io->lock);
    bool first = !io->socket_off;
    io->socket_off = true;
    pthread_mutex_unlock(&io->lock);
    if (first)
        log_warn("sandbox I/O: cannot use sockets on this host (%s); sandboxes use the engine's "
                 "attach stream",
                 why);
}

static void image_attaches(struct sandbox_io *io, const char *image, const char *why)
{
    pthread_mutex_lock(&io->lock);
    bool first = !image_attaches_locked(io, image);
    if (first) {
        io->attach_images =
            xrealloc(io->attach_images, (io->n_attach_images + 1) * sizeof(*io->attach_images));
        io->attach_images[io->n_attach_images++] = xstrdup(image);
    }
    pthread_mutex_unlock(&io->lock);
    if (first)
        log_warn("sandbox I/O: a sandbox of image %s could not connect to its socket (%s); that "
                 "image uses the engine's attach stream from now on",
                 image, why);
}

struct channel *sandbox_io_channel(struct sandbox_io *io, const struct backend_spec *spec,
                                   bool fallback)
{
    if (fallback || !wants_socket(io, spec))
        return NULL;
    struct channel *ch = NULL;
    struct err e = ERR_INIT;
    if (channel_open(io->dir, spec->uid, spec->gid, &ch, &e) < 0) {
        if (e.code == ERR_INVALID)
            socket_unavailable(io, err_msg(&e));
        else
            log_warn("sandbox I/O: %s; this sandbox attaches", err_msg(&e));
        err_clear(&e);
        return NULL;
    }
    return ch;
}

/* Whether a sandbox of spec could reach the gateway at all: -1 with err
 * when not. */
static int egress_possible(const struct sandbox_io *io, struct err *err)
{
    if (!io->has_dir)
        return err_set(err, ERR_INVALID,
                       "no directory for the sandboxes' sockets (--sandbox-io-dir): a sandbox "
                       "cannot reach the egress gateway");
    return 0;
}

int sandbox_io_egress(struct sandbox_io *io, const struct backend_spec *spec,
                      struct egress_sock **out, struct err *err)
{
    *out = NULL;
    if (!spec->egress)
        return 0;
    if (egress_possible(io, err) < 0)
        return -1;
    pthread_mutex_lock(&io->lock);
    sweep_locked(io);
    pthread_mutex_unlock(&io->lock);
    if (egress_sock_open(io->dir, spec->uid, spec->gid, out, err) < 0)
        return -1;
    if (egress_sock_add_ca(*out, spec, err) < 0) {
        egress_sock_close(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

int sandbox_io_egress_check(struct sandbox_io *io, const struct backend_spec *spec, struct err *err)
{
    if (egress_possible(io, err) < 0)
        return -1;
    struct egress_sock *trial = NULL;
    if (sandbox_io_egress(io, spec, &trial, err) < 0)
        return err_wrap(err, "a sandbox of uid %u cannot reach the egress gateway",
                        (unsigned)spec->uid);
    egress_sock_close(trial);
    return 0;
}

const char **sandbox_io_command(const struct backend_spec *spec, bool channel)
{
    size_t n = 0;
    while (spec->cmd[n])
        n++;
    /* "perl -e <src> SOCKET" for the connector, "perl -e <src> [-- -b]
     * SOCKET PORT" for the forwarder, then the command and its NULL. */
    const char **argv = xcalloc(4 + 7 + n + 1, sizeof(*argv));
    size_t k = 0;
    if (channel) {
        argv[k++] = "perl";
        argv[k++] = "-e";
        argv[k++] = channel_connect_src;
        argv[k++] = CHANNEL_SOCKET;
    }
    if (spec->egress) {
        argv[k++] = "perl";
        argv[k++] = "-e";
        argv[k++] = egress_forward_src;
        /* Under gVisor the socket's descriptor cannot be polled: the
         * forwarder relays with blocking reads ("--" ends perl's own
         * switches). */
        if (seccomp_runtime_is_gvisor(spec->runtime)) {
            argv[k++] = "--";
            argv[k++] = "-b";
        }
        argv[k++] = EGRESS_SOCK_PATH;
        argv[k++] = EGRESS_PORT_ARG;
    }
    memcpy(argv + k, spec->cmd, n * sizeof(*argv));
    return argv;
}

struct liveness {
    struct engine *engine;
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
    int rc = engine_inspect_state(lv->engine, lv->id, &st, &e);
    err_clear(&e);
    if (rc < 0 || st.running)
        return 0;
    lv->exited = true;
    lv->exit_code = st.exit_code;
    return err_set(err, ERR_ENGINE, "it exited with status %d", st.exit_code);
}

int sandbox_io_start(struct sandbox_io *io, struct engine *e, const char *id, const char *image,
                     struct channel *ch, double deadline_ms, int stop_fd,
                     struct backend_stream **out, struct err *err)
{
    if (engine_start(e, id, deadline_ms, err) < 0) {
        if (!util_fd_signalled(stop_fd))
            return -1;
        err_clear(err);
        return 1;
    }
    double by = util_now_ms() + SANDBOX_IO_CONNECT_MS;
    if (deadline_ms > 0 && deadline_ms < by)
        by = deadline_ms;
    struct liveness lv = {.engine = e, .id = id};
    int rc = channel_accept(ch, id, by, stop_fd, still_running, &lv, out, err);
    if (rc > 0)
        err_clear(err);
    if (rc >= 0)
        return rc;
    /* Ended by itself without connecting at all: its image cannot
     * (rather than the engine failing, or someone killing it). */
    if (lv.exited && lv.exit_code != EXIT_KILLED && channel_accepted(ch) == 0) {
        image_attaches(io, image, err_msg(err));
        return BACKEND_RETRY;
    }
    if (err->code == ERR_PROTOCOL) {
        /* Not its connector on the socket: the code never went there. */
        log_warn("sandbox I/O: %s; the sandbox was discarded, a new one attaches", err_msg(err));
        return BACKEND_RETRY;
    }
    return -1;
}
