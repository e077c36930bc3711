#include "backend/docker/docker.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend/docker/create_body.h"
#include "backend/docker/egress_sock.h"
#include "backend/docker/engine.h"
#include "backend/docker/engine_http.h"
#include "backend/docker/engine_stream.h"
#include "backend/docker/weight.h"
#include "backend/docker/sandbox_io.h"
#include "backend/docker/seccomp_file.h"
#include "backend/docker/seccomp_profile.h"
#include "base/util.h"

#define READ_CHUNK 65536

_Static_assert((int)BACKEND_STDOUT == (int)ENGINE_STREAM_STDOUT &&
                   (int)BACKEND_STDERR == (int)ENGINE_STREAM_STDERR,
               "backend stream numbers are the engine's");

struct docker {
    struct backend base;
    struct engine *engine;
    char *address_source; /* discover.h: where the socket path came from */
    struct sandbox_io *io;
    /* BACKEND_SYSCALLS_SANDBOX's profile, by seccomp_kernel (NULL when the
     * embedded one is broken: create then fails). */
    char *profiles[2];
    /* For Podman: the file written for the profile seccomp_text. */
    pthread_mutex_t lock;
    char *seccomp_text;
    char *seccomp_path;
};

/* Between create and start: the channel the sandbox connects to, or
 * none (it attaches); its egress socket, or none. */
struct backend_pending {
    struct channel *channel;
    struct egress_sock *egress;
    char *image;
};

struct docker_stream {
    struct backend_stream base;
    const struct engine *engine; /* for messages */
    struct engine_http_conn *conn;
    struct engine_stream demux;
    char *chunk;
    struct egress_sock *egress; /* NULL: the sandbox has no egress */
};

static struct engine *engine_of(struct backend *b)
{
    return ((struct docker *)b)->engine;
}

static struct docker_stream *stream_of(struct backend_stream *s)
{
    return (struct docker_stream *)s;
}

/* ---- operations -------------------------------------------------------- */

static void docker_free(struct backend *b)
{
    struct docker *d = (struct docker *)b;
    engine_free(d->engine);
    sandbox_io_free(d->io);
    free(d->address_source);
    pthread_mutex_destroy(&d->lock);
    free(d->profiles[SECCOMP_KERNEL_HOST]);
    free(d->profiles[SECCOMP_KERNEL_GVISOR]);
    free(d->seccomp_text);
    free(d->seccomp_path);
    free(d);
}

/* The profile text spec's syscall policy names for its runtime's kernel,
 * in *text (borrowed; NULL: the engine's default); -1 with err when it
 * cannot be had. */
static int seccomp_text(const struct docker *d, const struct backend_spec *spec, const char **text,
                        struct err *err)
{
    *text = NULL;
    if (spec->syscalls == BACKEND_SYSCALLS_RUNTIME_DEFAULT)
        return 0;
    *text = d->profiles[seccomp_kernel_of(spec->runtime)];
    return *text ? 0 : err_set(err, ERR_INTERNAL, "the embedded seccomp profile is not a profile");
}

/* What goes after "seccomp=" for spec, in *ref (NULL: nothing): the
 * profile's text for Docker, which takes it inline; the path of a file
 * holding it for Podman. -1 with err when that cannot be known or
 * written. */
static int seccomp_ref(struct docker *d, const struct backend_spec *spec, double deadline_ms,
                       char **ref, struct err *err)
{
    *ref = NULL;
    const char *text = NULL;
    if (seccomp_text(d, spec, &text, err) < 0)
        return -1;
    if (!text)
        return 0;
    int podman = engine_is_podman(d->engine, deadline_ms, err);
    if (podman < 0)
        return -1;
    if (!podman) {
        *ref = xstrdup(text);
        return 0;
    }
    int rc = 0;
    pthread_mutex_lock(&d->lock);
    if (!d->seccomp_text || strcmp(d->seccomp_text, text) != 0) {
        char *written = seccomp_file_write(text, err);
        if (!written) {
            rc = err_wrap(err, "cannot hand the seccomp profile to Podman");
            goto out;
        }
        free(d->seccomp_path);
        free(d->seccomp_text);
        d->seccomp_path = written;
        d->seccomp_text = xstrdup(text);
    }
    *ref = xstrdup(d->seccomp_path);
out:
    pthread_mutex_unlock(&d->lock);
    return rc;
}

static const char *docker_address(const struct backend *b)
{
    return engine_socket(((const struct docker *)b)->engine);
}

static const char *docker_address_source(const struct backend *b)
{
    return ((const struct docker *)b)->address_source;
}

static int docker_ping(struct backend *b, struct err *err)
{
    return engine_ping(engine_of(b), err);
}

static int docker_gone(struct backend *b, struct err *err)
{
    return engine_http_gone(engine_socket(engine_of(b)), err);
}

static int docker_version(struct backend *b, char **name, char **version, struct err *err)
{
    return engine_version(engine_of(b), name, version, err);
}

/* The create body, attached, with the profile inline as Docker takes it;
 * with egress, the forwarder in the command, its socket's bind left out. */
static char *docker_describe_create(const struct backend *b, const struct backend_spec *spec)
{
    const char *seccomp = NULL;
    struct err err = ERR_INIT;
    seccomp_text((const struct docker *)b, spec, &seccomp, &err);
    err_clear(&err);
    struct backend_spec shown = *spec;
    cleanup_free const char **argv = spec->egress ? sandbox_io_command(spec, false) : NULL;
    if (argv)
        shown.cmd = argv;
    json_object *body = create_body_new(&shown, seccomp, NULL);
    char *s = xstrdup(json_object_to_json_string_ext(body, JSON_C_TO_STRING_PRETTY |
                                                               JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(body);
    return s;
}

/* Podman's Docker-compatible API (4.3 measured) accepts HostConfig.Runtime
 * and ignores it: the container runs under Podman's configured runtime.
 * A sandbox meant for gVisor must not quietly run under runc. */
static int runtime_check(struct docker *d, const struct backend_spec *spec, double deadline_ms,
                         struct err *err)
{
    if (!spec->runtime)
        return 0;
    int podman = engine_is_podman(d->engine, deadline_ms, err);
    if (podman <= 0)
        return podman;
    return err_set(err, ERR_INVALID,
                   "runtime '%s' asked for, but Podman's Docker-compatible API at unix://%s "
                   "ignores a container's runtime and would run it under its own: set the "
                   "runtime in Podman's containers.conf ([engine] runtime) and drop the "
                   "daemon's runtime option, or use Docker",
                   spec->runtime, engine_socket(d->engine));
}

static void docker_pending_free(struct backend_pending *p)
{
    if (!p)
        return;
    channel_close(p->channel);
    egress_sock_close(p->egress);
    free(p->image);
    free(p);
}

/* The streams go the way sandbox_io.h chooses: a sandbox on a channel
 * runs its command through the connector, with the channel's directory
 * bound in; one with egress through the forwarder, with its socket's
 * directory bound in. */
static int docker_create(struct backend *b, const struct backend_spec *spec, bool fallback,
                         double deadline_ms, char **id, struct backend_pending **pending,
                         struct err *err)
{
    struct docker *d = (struct docker *)b;
    cleanup_free char *seccomp = NULL;
    if (runtime_check(d, spec, deadline_ms, err) < 0 ||
        seccomp_ref(d, spec, deadline_ms, &seccomp, err) < 0)
        return -1;
    struct backend_pending *p = xcalloc(1, sizeof(*p));
    if (sandbox_io_egress(d->io, spec, &p->egress, err) < 0) {
        docker_pending_free(p);
        return -1;
    }
    p->channel = sandbox_io_channel(d->io, spec, fallback);
    struct backend_spec s = *spec;
    const char **argv = p->channel || p->egress ? sandbox_io_command(spec, p->channel) : NULL;
    if (argv)
        s.cmd = argv;
    struct create_binds binds = {.io_dir = p->channel ? channel_dir(p->channel) : NULL,
                                 .egress_dir = p->egress ? egress_sock_dir(p->egress) : NULL};
    json_object *body = create_body_new(&s, seccomp, &binds);
    int rc = engine_create(d->engine, body, deadline_ms, id, err);
    json_object_put(body);
    free(argv);
    if (rc < 0) {
        docker_pending_free(p);
        return -1;
    }
    if (p->egress)
        egress_sock_set_container(p->egress, *id);
    p->image = xstrdup(spec->image);
    *pending = p;
    return 0;
}

static const struct backend_ops docker_ops;

static int attach(struct backend *b, const char *id, double deadline_ms,
                  struct backend_stream **out, struct err *err)
{
    struct engine_http_conn *conn = NULL;
    if (engine_attach(engine_of(b), id, deadline_ms, &conn, err) < 0)
        return -1;
    struct docker_stream *s = xcalloc(1, sizeof(*s));
    s->base.ops = &docker_ops;
    s->engine = engine_of(b);
    s->conn = conn;
    engine_stream_init(&s->demux);
    s->chunk = xmalloc(READ_CHUNK);
    *out = &s->base;
    return 0;
}

/* An attached sandbox is attached before it starts, so no output is
 * lost; one on a channel connects once started. */
static int docker_start(struct backend *b, const char *id, struct backend_pending *pending,
                        double deadline_ms, int stop_fd, struct backend_stream **out,
                        struct err *err)
{
    struct docker *d = (struct docker *)b;
    int rc;
    bool channel = pending && pending->channel;
    if (channel) {
        rc = sandbox_io_start(d->io, d->engine, id, pending->image, pending->channel, deadline_ms,
                              stop_fd, out, err);
    } else {
        rc = attach(b, id, deadline_ms, out, err) < 0 ||
                     engine_start(d->engine, id, deadline_ms, err) < 0
                 ? -1
                 : 0;
    }
    if (rc != 0) {
        backend_stream_close(*out);
        *out = NULL;
    } else if (pending && pending->egress) {
        /* The stream holds it from now on, for the container's life. */
        if (channel)
            channel_stream_set_egress(*out, pending->egress);
        else
            stream_of(*out)->egress = pending->egress;
        pending->egress = NULL;
    }
    docker_pending_free(pending);
    return rc;
}

/* gVisor's file proxy (the gofer) connects to a host socket for the
 * sandbox only when runsc runs with --host-uds=open; the engine's /info
 * says whether it does. Without it the forwarder inside could not reach
 * the gateway: refuse at start rather than fail every request. */
static int gvisor_egress_check(struct docker *d, const char *runtime, struct err *err)
{
    int yes = engine_runtime_host_uds(d->engine, runtime, err);
    if (yes < 0)
        return err_wrap(err,
                        "cannot tell whether runtime '%s' lets a sandbox reach the egress "
                        "gateway",
                        runtime);
    if (!yes)
        return err_set(err, ERR_INVALID,
                       "the engine at unix://%s does not run runtime '%s' with --host-uds=open, "
                       "so a sandbox under it cannot reach the egress gateway's socket: add "
                       "\"--host-uds=open\" to the runtime's runtimeArgs in the engine's "
                       "daemon.json (scripts/engine.sh writes it so), run the languages with "
                       "egress under the engine's default runtime, or turn their egress off",
                       engine_socket(d->engine), runtime);
    return 0;
}

static int docker_egress_check(struct backend *b, const struct backend_spec *spec, struct err *err)
{
    struct docker *d = (struct docker *)b;
    if (seccomp_runtime_is_gvisor(spec->runtime) && gvisor_egress_check(d, spec->runtime, err) < 0)
        return -1;
    return sandbox_io_egress_check(d->io, spec, err);
}

static const char *docker_io_name(struct backend *b, const struct backend_spec *spec)
{
    return sandbox_io_name(((struct docker *)b)->io, spec);
}

/* Docker sets OOMKilled when the runtime's OOM event comes, and that
 * event can come after the exit it already reported (seen on a loaded
 * host: exit 137, OOMKilled false, true a moment later). A SIGKILL
 * without the flag is asked about again this often, this long apart. */
#define OOM_RECHECKS   5
#define OOM_RECHECK_MS 100

/* Whether the engine's OOMKilled can be believed for a container that
 * ran under runtime: not where the engine is known to leave it false
 * after a real OOM kill or is not known yet (engine.h), and not under
 * gVisor, whose shim reports the OOM event late or not at all (seen
 * under Docker 20.10: exit 137, OOMKilled false after half a second of
 * asking, for a Python program filling a 256 MiB limit). */
static bool oom_flag_trusted(const struct engine *e, const char *runtime)
{
    return engine_oom_flag_reliable(e) == 1 && !seccomp_runtime_is_gvisor(runtime);
}

/* The engine's OOMKilled flag, asked again for a SIGKILL that came
 * without it; and where the flag cannot be believed (oom_flag_trusted),
 * a SIGKILL that the caller did not send (it waits only for a program
 * that ended by itself): under a memory limit, the limit is by far the
 * likeliest sender. */
static int docker_wait(struct backend *b, const char *id, long timeout_ms, struct backend_state *st,
                       struct err *err)
{
    struct engine *e = engine_of(b);
    char runtime[ENGINE_RUNTIME_MAX];
    if (engine_wait(e, id, timeout_ms, st, runtime, err) < 0)
        return -1;
    if (st->exit_code != 137 || st->oom_killed)
        return 0;
    if (!oom_flag_trusted(e, runtime)) {
        st->oom_killed = true;
        return 0;
    }
    for (int i = 0; i < OOM_RECHECKS && !st->oom_killed; i++) {
        struct backend_state again = {0};
        struct err ignored = ERR_INIT;
        const struct timespec pause = {0, OOM_RECHECK_MS * 1000000L};
        nanosleep(&pause, NULL);
        if (engine_inspect_state(e, id, &again, &ignored) == 0)
            st->oom_killed = again.oom_killed;
        err_clear(&ignored);
    }
    return 0;
}

static int docker_kill(struct backend *b, const char *id, struct err *err)
{
    return engine_kill(engine_of(b), id, err);
}

static int docker_remove(struct backend *b, const char *id, struct err *err)
{
    return engine_remove(engine_of(b), id, err);
}

static int docker_inspect(struct backend *b, const char *id, struct backend_state *st,
                          struct err *err)
{
    return engine_inspect_state(engine_of(b), id, st, err);
}

/* The engine must share this host: the pid it reports is looked up in
 * this /proc. */
static int docker_weight_open(struct backend *b, const char *id, struct backend_weight *out,
                              struct err *err)
{
    struct backend_state st = {0};
    if (engine_inspect_state(engine_of(b), id, &st, err) < 0)
        return -1;
    bool v2 = false;
    int idle_fd = -1;
    int fd = weight_open("/proc", "/proc/self/mountinfo", st.pid, id, &v2, &idle_fd, err);
    if (fd < 0)
        return -1;
    *out = (struct backend_weight){
        .fd = fd, .idle_fd = idle_fd, .normal = v2 ? WEIGHT_V2_NORMAL : WEIGHT_V1_NORMAL};
    backend_weight_idle(out);
    return 0;
}

static int docker_list(struct backend *b, long timeout_ms, struct backend_container **out,
                       size_t *n, struct err *err)
{
    return engine_list_managed(engine_of(b), timeout_ms, out, n, err);
}

/* ---- the attach stream -------------------------------------------------- */

static int docker_stream_fd(const struct backend_stream *s)
{
    return engine_http_conn_fd(((const struct docker_stream *)s)->conn);
}

static bool docker_stream_pending(const struct backend_stream *s)
{
    return engine_http_conn_pending(((const struct docker_stream *)s)->conn) != 0;
}

static int docker_stream_send(struct backend_stream *s, const void *data, size_t n, long timeout_ms,
                              struct err *err)
{
    return engine_http_conn_send(stream_of(s)->conn, data, n, timeout_ms, err);
}

struct deliver {
    backend_output_cb cb;
    void *ctx;
};

/* Only the program's stdout and stderr go up; stdin echoes and the
 * engine's own frames do not. */
static int deliver(void *arg, int stream, const char *data, size_t len, struct err *err)
{
    const struct deliver *d = arg;
    if (stream != ENGINE_STREAM_STDOUT && stream != ENGINE_STREAM_STDERR)
        return 0;
    return d->cb(d->ctx, stream, data, len, err);
}

static long docker_stream_read(struct backend_stream *bs, backend_output_cb cb, void *ctx,
                               struct err *err)
{
    struct docker_stream *s = stream_of(bs);
    long n = engine_http_conn_recv(s->conn, s->chunk, READ_CHUNK, err);
    if (n == -2)
        return BACKEND_AGAIN;
    /* A frame cut short means output is missing, however the program ended. */
    if (n == 0 && !engine_stream_at_boundary(&s->demux))
        return err_set(err, ERR_PROTOCOL,
                       "the container engine at unix://%s ended the attach stream in the middle "
                       "of a frame",
                       engine_socket(s->engine));
    if (n <= 0)
        return n;
    struct deliver d = {.cb = cb, .ctx = ctx};
    if (engine_stream_feed(&s->demux, s->chunk, (size_t)n, deliver, &d, err) < 0)
        return -1;
    return n;
}

static void docker_stream_close(struct backend_stream *bs)
{
    struct docker_stream *s = stream_of(bs);
    engine_http_conn_close(s->conn);
    free(s->chunk);
    egress_sock_close(s->egress);
    free(s);
}

static int docker_stream_egress_fd(const struct backend_stream *s)
{
    const struct docker_stream *ds = (const struct docker_stream *)s;
    return ds->egress ? egress_sock_fd(ds->egress) : -1;
}

static int docker_stream_egress_accept(struct backend_stream *bs, int *fd, struct err *err)
{
    struct docker_stream *s = stream_of(bs);
    *fd = -1;
    return s->egress ? egress_sock_accept(s->egress, fd, err) : 0;
}

static const struct backend_ops docker_ops = {
    .kind = "docker",
    .host_dirs = true,
    .network = true,
    .free = docker_free,
    .address = docker_address,
    .address_source = docker_address_source,
    .ping = docker_ping,
    .egress_check = docker_egress_check,
    .gone = docker_gone,
    .version = docker_version,
    .describe_create = docker_describe_create,
    .create = docker_create,
    .start = docker_start,
    .pending_free = docker_pending_free,
    .io_name = docker_io_name,
    .wait = docker_wait,
    .kill = docker_kill,
    .remove = docker_remove,
    .inspect = docker_inspect,
    .list = docker_list,
    .weight_open = docker_weight_open,
    .stream_fd = docker_stream_fd,
    .stream_pending = docker_stream_pending,
    .stream_send = docker_stream_send,
    .stream_read = docker_stream_read,
    .stream_close = docker_stream_close,
    .stream_egress_fd = docker_stream_egress_fd,
    .stream_egress_accept = docker_stream_egress_accept,
};

struct backend *docker_backend_new(const char *socket_path, const char *source,
                                   const struct docker_options *opts)
{
    struct docker *d = xcalloc(1, sizeof(*d));
    d->base.ops = &docker_ops;
    d->engine = engine_new(socket_path);
    d->address_source = xstrdup(source ? source : "");
    d->io = sandbox_io_new(opts ? opts->sandbox_io : NULL, opts ? opts->sandbox_io_dir : NULL);
    struct err err = ERR_INIT;
    d->profiles[SECCOMP_KERNEL_HOST] = seccomp_profile_new(SECCOMP_KERNEL_HOST, &err);
    d->profiles[SECCOMP_KERNEL_GVISOR] = seccomp_profile_new(SECCOMP_KERNEL_GVISOR, &err);
    err_clear(&err);
    pthread_mutex_init(&d->lock, NULL);
    return &d->base;
}
