/* A sandbox's standard streams over a unix socket of the daemon's own,
 * instead of the engine's attach stream.
 *
 * Why it is the Docker backend's: it rests on what holds for a local
 * Docker or Podman engine and for no backend in general: the daemon and
 * the engine share a host, so a directory of the daemon's can be bound
 * into the container, and a peer's /proc/PID/cgroup names the
 * container's id. Another backend (a remote engine, Kubernetes) has its
 * own way; sandbox_io.h says when this one is used.
 *
 * Why at all: the engine copies an attach stream through its own processes
 * (dockerd and containerd's shim, or conmon), goroutine by goroutine; a
 * warm run's round trip through them costs 4-5 ms on a 2-core machine,
 * through a socket ~0.1 ms.
 *
 * How: channel_open makes a fresh directory under a base directory and
 * listens on CHANNEL_SOCKET_NAME in it, a socket only the sandbox's uid
 * may connect to. The directory is bound read-only into the
 * container at CHANNEL_TARGET. The sandbox's connector
 * (src/backend/docker/connect.pl) connects twice, writing one tag byte on
 * each: CHANNEL_TAG_IO on the connection that becomes its stdin and
 * stdout, CHANNEL_TAG_ERR on the one that becomes its stderr; then it
 * executes the runner. channel_accept takes exactly those two (a peer of
 * the sandbox's uid must be a process of that container: its cgroup names
 * the container; a peer of the daemon's own uid could read the daemon's
 * memory anyway; anyone else is refused), then removes the socket and
 * the directory, so nothing else can ever connect; the container keeps an
 * empty read-only mount.
 *
 * The stream it yields is a backend_stream like an attach stream (stdout
 * and stderr demultiplexed, stdin through stream_send), so the layers
 * above handle both alike. Descriptors passed along (SCM_RIGHTS) are
 * never received: the stream reads with recv, and the kernel closes them.
 *
 * Thread-safe as backend.h says: a channel and its stream have one owner
 * at a time; a stream's egress (egress_sock.h) may be used by one more
 * thread. */
#ifndef MCPSBX_DOCKER_CHANNEL_H
#define MCPSBX_DOCKER_CHANNEL_H

#include <stdbool.h>
#include <sys/types.h>

#include "backend/backend.h"
#include "backend/docker/egress_sock.h"
#include "base/err.h"

/* The connector (src/backend/docker/connect.pl, a perl -e program):
 * connects to CHANNEL_SOCKET and runs the command that follows it with
 * the connections as its stdin, stdout and stderr. */
extern const char channel_connect_src[];

/* Where the container sees the directory, and the socket in it. */
#define CHANNEL_TARGET      "/run/mcpsbx-io"
#define CHANNEL_SOCKET_NAME "io.sock"
#define CHANNEL_SOCKET      CHANNEL_TARGET "/" CHANNEL_SOCKET_NAME
#define CHANNEL_TAG_IO      'o'
#define CHANNEL_TAG_ERR     'e'
/* While no connection comes, how often channel_accept asks whether the
 * sandbox is still there. */
#define CHANNEL_CHECK_MS 100
/* A connection's tag comes with it (the connector writes it at once). */
#define CHANNEL_TAG_MS 2000

struct channel;

/* Makes a fresh directory under base_dir for one sandbox whose processes
 * run as uid:gid, and listens on a socket there that only uid (and this
 * process's user) may connect to: sock_dir_open's rules and error codes
 * (sock_dir.h; ERR_INVALID says the failure lasts). */
int channel_open(const char *base_dir, uid_t uid, gid_t gid, struct channel **out, struct err *err);

/* The host directory to bind at CHANNEL_TARGET. */
const char *channel_dir(const struct channel *c);

/* Returns 0 while the sandbox may still connect, -1 with err once it
 * cannot (it exited). */
typedef int (*channel_alive_fn)(void *ctx, struct err *err);

/* Waits for the two connections from the processes of container
 * container_id (its full id), until deadline_ms (util_now_ms time),
 * stop_fd readable (-1: none) or alive failing, asked every
 * CHANNEL_CHECK_MS without a connection. Returns 0 with *out, 1 when
 * stop_fd became readable, or -1 with err: ERR_PROTOCOL for a connection
 * that is not the sandbox's connector (a stranger, a wrong or missing
 * tag). Whatever it returns, the socket and directory are gone
 * afterwards. */
int channel_accept(struct channel *c, const char *container_id, double deadline_ms, int stop_fd,
                   channel_alive_fn alive, void *alive_ctx, struct backend_stream **out,
                   struct err *err);

/* How many connections channel_accept took, good or not. */
unsigned channel_accepted(const struct channel *c);

/* Removes what is left (socket, directory), closes, frees. NULL is fine. */
void channel_close(struct channel *c);

/* Hands a stream channel_accept made the sandbox's egress socket
 * (egress_sock.h; NULL: none), which it closes with itself. */
void channel_stream_set_egress(struct backend_stream *s, struct egress_sock *egress);

#endif
