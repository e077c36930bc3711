/* The operations a sandbox needs from a container backend, as a table of
 * functions: create a sandbox and start it with its standard streams
 * connected to the daemon, wait, kill, remove, list, inspect, ping. The
 * Docker Engine API (Docker or Podman) is one implementation
 * (backend/docker/); layers above this folder see only this header.
 *
 * Every backend applies the same hardening to every container, whatever
 * the spec says: no network (unless spec.network; spec.egress gives none
 * either), a read-only root filesystem with one
 * size-capped writable tmpfs (spec.workdir), every capability dropped, no
 * new privileges, an init process as PID 1, a private IPC namespace, no
 * logs kept by the engine, and the spec's resource limits. A backend that
 * cannot apply one of these must fail create, never run without it.
 *
 * How a sandbox's stdin, stdout and stderr reach the daemon (the engine's
 * own stream, or a way of the backend's that bypasses it) is the
 * backend's choice, made per sandbox at create and carried out at start;
 * above this folder a stream is a stream.
 *
 * Thread-safe: any thread may call any operation. A stream has one owner
 * at a time (at first the thread that started the sandbox); handing it
 * over, under a lock or through a queue, hands over the duty to close it.
 *
 * The backend/ folder: backend.c (this interface's dispatch and helpers,
 * which implementations use), backends.c (which implementation serves;
 * main's entry), docker/ (the Docker Engine API implementation),
 * kubernetes/ (Pods through a cluster's API server). */
#ifndef MCPSBX_BACKEND_H
#define MCPSBX_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/err.h"

/* Which system calls a sandbox may make; each backend renders it in its
 * runtime's terms for the kernel that judges it. */
enum backend_syscalls {
    /* The project's allow-list: the engines' default one less the kernel
     * interfaces no program here needs (new namespaces and mounts,
     * io_uring, keyrings, BPF, perf, ptrace, userfaultfd, kernel modules,
     * files by handle, ...). Zero, so a spec that says nothing gets it. */
    BACKEND_SYSCALLS_SANDBOX = 0,
    /* The runtime's own default filter. */
    BACKEND_SYSCALLS_RUNTIME_DEFAULT,
};

/* What to run, and within what limits. Borrowed for the create call. */
struct backend_spec {
    const char *image;
    const char *const *cmd; /* NULL-terminated argv; the whole command */
    /* The user its processes run as. The backend marks the container with
     * it, and backend_list reports it, so a daemon can tell which uids
     * other containers hold (sandbox/pool/uids.h). */
    uid_t uid;
    gid_t gid;
    const char *workdir;    /* the writable tmpfs, also the cwd */
    long long workdir_mb;   /* its size */
    bool workdir_exec;      /* programs may be run from it (compiled languages) */
    const char *const *env; /* NULL-terminated "NAME=value"; nothing else is set */
    long long memory_bytes; /* RAM, and RAM + swap: no swap */
    long long nano_cpus;    /* CPU time, in billionths of a CPU */
    /* Its CPU weight against other containers, in the engine's CpuShares
     * (1024 the default; 0 leaves the engine's): a pool sandbox is made at
     * BACKEND_CPU_SHARES_LOW so setting it up cannot take the CPUs from
     * runs, and raised once a run takes it (backend_weight_open). */
    long long cpu_shares;
    long long pids_limit;           /* processes and threads */
    long long nofile, nproc, fsize; /* rlimits (fsize in bytes); core is always 0 */
    long long shm_bytes;            /* /dev/shm */
    /* The runtime class: NULL for the backend's default, else the
     * operator's runtime name, as given (e.g. runsc, gVisor's). */
    const char *runtime;
    enum backend_syscalls syscalls; /* which system calls its processes may make */
    bool network;                   /* the engine's default network instead of none */
    /* The sandbox reaches the daemon's egress gateway: inside, an HTTP
     * proxy listens at 127.0.0.1:BACKEND_EGRESS_PORT and passes every
     * connection to the daemon (backend_stream_egress_*); it still has
     * no network. Telling its programs so (HTTP_PROXY and the like) is
     * env's business. */
    bool egress;
    /* With egress, the daemon's CA for the TLS its gateway terminates
     * (egress/tls.h): host files, public, that the backend shows inside,
     * read-only, at BACKEND_EGRESS_CA_FILE and BACKEND_EGRESS_CA_BUNDLE
     * (the CA's certificate; the host's public roots and it). NULL: none
     * (env then names neither). */
    const char *egress_ca_file;
    const char *egress_ca_bundle;
    /* Host directories shown inside, by absolute path; NULL: none. A
     * package cache's sets, read-only at BACKEND_PACKAGES_DIR; and an
     * installer's target, writable at BACKEND_INSTALL_DIR (the caller
     * gives it to uid first, and reads it only once the sandbox is
     * gone). */
    const char *packages_dir;
    const char *install_dir;
    /* Marks, listed back by backend_list: */
    const char *instance;      /* this daemon's run of containers */
    const char *owner;         /* the daemon process; may be NULL */
    long long expires;         /* unix time after which any daemon may remove it; 0 = never */
    const char *pool;          /* the warm pool it is made for, or NULL (on demand) */
    const char *const *labels; /* the operator's "KEY=VALUE", NULL-terminated; may be NULL */
};

struct backend_state {
    bool running;
    bool oom_killed;
    int exit_code;
    int pid; /* its first process on the engine's host; 0 when not running or unknown */
};

/* A sandbox's CPU weight, held open so that a run taking a pooled sandbox
 * raises it within the take, without a round trip to the engine
 * (backend/docker/weight.h has the figures). fd -1: none. idle_fd, when
 * not -1, is the cgroup's idle flag, set while the sandbox waits and
 * cleared with the raise. */
struct backend_weight {
    int fd, idle_fd;
    const char *normal; /* what a run gets; written at the take */
};
#define BACKEND_WEIGHT_NONE                                                                        \
    {                                                                                              \
        .fd = -1, .idle_fd = -1, .normal = NULL                                                    \
    }

/* A container this daemon's kind created (any instance). */
struct backend_container {
    char *id;
    long long created; /* unix seconds */
    long long expires; /* unix seconds; 0 when unknown */
    char *instance;    /* may be NULL */
    char *owner;       /* may be NULL */
    long long uid;     /* the spec's uid; -1 when unknown */
};

enum backend_fd { BACKEND_STDOUT = 1, BACKEND_STDERR = 2 };

/* Where a sandbox with spec.egress finds the gateway's proxy, on its own
 * loopback (the port Squid made the usual one). */
#define BACKEND_EGRESS_PORT 3128
/* Where a sandbox with spec.egress_ca_file finds the CA's files. */
#define BACKEND_EGRESS_CA_DIR    "/run/mcpsbx-egress"
#define BACKEND_EGRESS_CA_FILE   BACKEND_EGRESS_CA_DIR "/ca.pem"
#define BACKEND_EGRESS_CA_BUNDLE BACKEND_EGRESS_CA_DIR "/ca-bundle.pem"

/* Where a sandbox finds spec.packages_dir and spec.install_dir. */
#define BACKEND_PACKAGES_DIR "/opt/mcpsbx-packages"
#define BACKEND_INSTALL_DIR  "/opt/mcpsbx-install"

/* Output as it is read: stream is BACKEND_STDOUT or BACKEND_STDERR.
 * Returns 0 to go on, a positive value to drop the rest of this read (not
 * a failure), or -1 with err set. */
typedef int (*backend_output_cb)(void *ctx, int stream, const char *data, size_t len,
                                 struct err *err);

/* backend_stream_read found nothing to read (a spurious wake-up). */
#define BACKEND_AGAIN (-2)

/* backend_start: this sandbox could not connect its streams the way
 * create set them up, in a way that says another one set up with
 * fallback will (its program never started: nothing of a run reached
 * it). */
#define BACKEND_RETRY 2

/* The least CPU weight (CpuShares) an engine takes: a sandbox being set
 * up at this weight runs only on CPU time no run wants. */
#define BACKEND_CPU_SHARES_LOW 2

struct backend;
struct backend_stream;
/* What start needs of how create set a sandbox's streams up: each
 * implementation defines it; the caller owns it between the two. */
struct backend_pending;

struct backend_ops {
    const char *kind; /* "docker" */
    /* Whether spec.packages_dir and spec.install_dir can be shown to a
     * sandbox: host directories, which a sandbox on another machine (a
     * cluster's node) cannot see. */
    bool host_dirs;
    /* Whether spec.network can be given: the engine's own network. */
    bool network;
    void (*free)(struct backend *b);
    /* Where the backend is (for messages): e.g. the engine socket path. */
    const char *(*address)(const struct backend *b);
    /* Where the address came from (an option, an environment variable,
     * a default), for messages. May be NULL. */
    const char *(*address_source)(const struct backend *b);
    int (*ping)(struct backend *b, struct err *err);
    /* backend_egress_check; NULL: this backend has no egress. */
    int (*egress_check)(struct backend *b, const struct backend_spec *spec, struct err *err);
    /* 1 with err when the engine is certainly gone, 0 otherwise; never
     * waits on the engine. May be NULL (never gone). */
    int (*gone)(struct backend *b, struct err *err);
    int (*version)(struct backend *b, char **name, char **version, struct err *err);
    /* backend_describe_create */
    char *(*describe_create)(const struct backend *b, const struct backend_spec *spec);
    int (*create)(struct backend *b, const struct backend_spec *spec, bool fallback,
                  double deadline_ms, char **id, struct backend_pending **pending, struct err *err);
    int (*start)(struct backend *b, const char *id, struct backend_pending *pending,
                 double deadline_ms, int stop_fd, struct backend_stream **out, struct err *err);
    void (*pending_free)(struct backend_pending *pending);
    /* A word for how a sandbox of spec would reach the daemon now. */
    const char *(*io_name)(struct backend *b, const struct backend_spec *spec);
    int (*wait)(struct backend *b, const char *id, long timeout_ms, struct backend_state *st,
                struct err *err);
    int (*kill)(struct backend *b, const char *id, struct err *err);
    int (*remove)(struct backend *b, const char *id, struct err *err);
    int (*inspect)(struct backend *b, const char *id, struct backend_state *st, struct err *err);
    int (*list)(struct backend *b, long timeout_ms, struct backend_container **out, size_t *n,
                struct err *err);
    /* backend_weight_open; NULL: weights cannot be changed. */
    int (*weight_open)(struct backend *b, const char *id, struct backend_weight *out,
                       struct err *err);

    int (*stream_fd)(const struct backend_stream *s);
    bool (*stream_pending)(const struct backend_stream *s);
    int (*stream_send)(struct backend_stream *s, const void *data, size_t n, long timeout_ms,
                       struct err *err);
    long (*stream_read)(struct backend_stream *s, backend_output_cb cb, void *ctx, struct err *err);
    void (*stream_close)(struct backend_stream *s);
    /* backend_stream_egress_fd and _accept; NULL: no stream of this kind
     * has egress. */
    int (*stream_egress_fd)(const struct backend_stream *s);
    int (*stream_egress_accept)(struct backend_stream *s, int *fd, struct err *err);
};

/* Implementations put this first in their own structs. */
struct backend {
    const struct backend_ops *ops;
};

struct backend_stream {
    const struct backend_ops *ops;
};

void backend_free(struct backend *b);
const char *backend_kind(const struct backend *b);
const char *backend_address(const struct backend *b);
/* ops->address_source, or "" */
const char *backend_address_source(const struct backend *b);

/* Short timeout: cheap reachability for health checks. */
int backend_ping(struct backend *b, struct err *err);

/* Whether the engine is certainly gone (1, with err), asked without
 * waiting on it: for runs whose streams do not pass through the engine. */
int backend_gone(struct backend *b, struct err *err);

/* The engine's own name ("Docker Engine", "Podman Engine") and version;
 * the caller frees both. */
int backend_version(struct backend *b, char **name, char **version, struct err *err);

/* The request the backend would send to create a sandbox of spec, as
 * text, for --dry-run-create: what a reader checks the hardening in.
 * The streams are shown as the plainest way connects them (a way set up
 * per sandbox, such as a socket of the daemon's, is left out). Nothing
 * is sent. Caller frees. */
char *backend_describe_create(const struct backend *b, const struct backend_spec *spec);

/* 0 when a sandbox of spec can reach the daemon's egress gateway on this
 * backend, its runtime and this host (always, without spec.egress); else
 * -1 with err (ERR_INVALID) saying why, for an operator: a runtime or a
 * host where the way in cannot be made (a backend may try it once). For
 * a daemon's start, for every language that has egress. */
int backend_egress_check(struct backend *b, const struct backend_spec *spec, struct err *err);

/* backend_egress_check, and first ERR_INVALID when spec.network asks for
 * a network this backend cannot give: for a daemon's start, for every
 * language with egress or a network. */
int backend_network_check(struct backend *b, const struct backend_spec *spec, struct err *err);

/* Setting a sandbox up is create, then start. Both take deadline_ms, a
 * util_now_ms() time their requests must end by (0 = the backend's usual
 * timeouts only), so a stalled engine cannot hold a run past its time
 * limit. */

/* Creates a sandbox for spec, not started, with its streams set up the
 * way the backend chooses for it (fallback: the way that asks least of
 * the image and the host, after BACKEND_RETRY). *id is allocated;
 * *pending (NULL or not) goes to backend_start or backend_pending_free.
 * A missing image fails with ERR_NOT_FOUND and a message naming the
 * image (in backend_start instead where only the host that runs the
 * sandbox can tell: a cluster's node pulling it). With spec.egress it fails when the way to the
 * gateway cannot be made (ERR_INVALID when that lasts): never a sandbox without it, nor one with a
 * network. */
int backend_create(struct backend *b, const struct backend_spec *spec, bool fallback,
                   double deadline_ms, char **id, struct backend_pending **pending,
                   struct err *err);

/* Starts sandbox id with its stdin, stdout and stderr connected to the
 * daemon (connected before start where that is needed so no output is
 * lost), and takes pending. Returns 0 with *out; 1 when stop_fd (-1:
 * none) became readable first; BACKEND_RETRY (err says why) or -1 with
 * err. On anything but 0 the sandbox is the caller's to remove. */
int backend_start(struct backend *b, const char *id, struct backend_pending *pending,
                  double deadline_ms, int stop_fd, struct backend_stream **out, struct err *err);

/* For a sandbox removed without backend_start. NULL is fine. */
void backend_pending_free(struct backend *b, struct backend_pending *pending);

/* How a sandbox of spec would reach the daemon if created now, a word
 * for reports ("socket", "attach", ...); static text. */
const char *backend_io_name(struct backend *b, const struct backend_spec *spec);

/* Waits up to timeout_ms for the container to stop, then reports how;
 * oom_killed is the backend's answer to "was it killed for memory", the
 * runtime's word or, where that cannot be trusted, the backend's best
 * reading of the exit (a caller never guesses from exit codes). */
int backend_wait(struct backend *b, const char *id, long timeout_ms, struct backend_state *st,
                 struct err *err);

/* SIGKILL. A container that already stopped is not an error. */
int backend_kill(struct backend *b, const char *id, struct err *err);

/* Stops and removes it with its storage. Already gone is not an error. */
int backend_remove(struct backend *b, const char *id, struct err *err);

int backend_inspect(struct backend *b, const char *id, struct backend_state *st, struct err *err);

/* Every container created through any backend_create of this kind, within
 * timeout_ms (0 = the usual control timeout). Free with
 * backend_container_list_free. */
int backend_list(struct backend *b, long timeout_ms, struct backend_container **out, size_t *n,
                 struct err *err);
void backend_container_list_free(struct backend_container *list, size_t n);

/* Text from an engine or an API server, for messages and marks: at most
 * BACKEND_TEXT_MAX bytes, printable ASCII. Caller frees. */
#define BACKEND_TEXT_MAX 128u
char *backend_text(const char *s, size_t n);

/* A container's marks as its backend reads them back (labels, which
 * anyone with the engine can set); each NULL when absent. */
struct backend_marks {
    const char *instance, *owner, *expires, *uid;
    size_t instance_len, owner_len, expires_len, uid_len;
};

/* Sets c's instance and owner (backend_text), expires (plain decimal
 * unix seconds, else 0) and uid (plain decimal below 2^32, else -1). */
void backend_container_marks(struct backend_container *c, const struct backend_marks *m);

/* Opens running sandbox id's CPU weight into *out. -1 where weights
 * cannot be changed here (the backend, an engine on another host, no
 * right to its cgroups), with err saying why; out->fd is then -1. */
int backend_weight_open(struct backend *b, const char *id, struct backend_weight *out,
                        struct err *err);

/* False when backend_weight_open always fails (the backend has no way). */
bool backend_weights_possible(const struct backend *b);

/* Whether this backend's sandboxes can be shown the daemon's host
 * directories (spec.packages_dir, spec.install_dir); a create that asks
 * for them where they cannot fails with ERR_INVALID. */
bool backend_host_dirs_possible(const struct backend *b);

/* For a backend's weight_open: sets the idle flag of a waiting sandbox.
 * Where the write fails the flag is closed and the least weight still
 * holds (backend/docker/weight.h says what the flag adds). */
void backend_weight_idle(struct backend_weight *w);

/* Gives the sandbox the weight a run gets, and clears its idle flag;
 * about 20 us. */
int backend_weight_raise(const struct backend_weight *w, struct err *err);

/* Closes it (a no-op for fd -1); the weight and flag stay as they are. */
void backend_weight_close(struct backend_weight *w);

/* For poll(2): readable when backend_stream_read has something to do. */
int backend_stream_fd(const struct backend_stream *s);

/* True when bytes are already buffered, so poll would not see them. */
bool backend_stream_pending(const struct backend_stream *s);

/* Writes all of data to the container's stdin within timeout_ms. */
int backend_stream_send(struct backend_stream *s, const void *data, size_t n, long timeout_ms,
                        struct err *err);

/* Reads what is there and hands it to cb, demultiplexed. Returns the bytes
 * read (>0; all of them went to cb unless it asked to stop), 0 at a clean
 * end of the stream, BACKEND_AGAIN, or -1 with err (cb's failure among
 * them, and a stream that ends with output cut short). */
long backend_stream_read(struct backend_stream *s, backend_output_cb cb, void *ctx,
                         struct err *err);

/* Closes and frees; NULL is fine. For a sandbox with egress, its egress
 * listener closes with it and its socket is removed. */
void backend_stream_close(struct backend_stream *s);

/* The stream of a sandbox created with spec.egress carries its way to the
 * gateway: connections its processes made to the proxy inside, one by one.
 * These two may be called from one thread other than the stream's owner
 * (a run's gateway acceptor) while the owner reads and writes the stream;
 * the owner closes the stream only after that thread stopped using them. */

/* A descriptor for poll(2), readable when a connection waits; -1 when the
 * sandbox has no egress. */
int backend_stream_egress_fd(const struct backend_stream *s);

/* Takes one waiting connection: 0 with *fd, a connected stream socket
 * (close-on-exec; the caller owns it); 0 with *fd -1 when nothing waited
 * (or the sandbox has no egress); -1 with err when a connection was
 * refused by the peer checks (it is closed; the caller logs it and goes
 * on) or accept failed (the connection may still wait: the caller pauses
 * before it polls again). */
int backend_stream_egress_accept(struct backend_stream *s, int *fd, struct err *err);

#endif
