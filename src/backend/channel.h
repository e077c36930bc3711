/* A sandbox's standard streams over a unix socket of the daemon's own,
 * instead of the engine's attach stream.
 *
 * Why: the engine copies an attach stream through its own processes
 * (dockerd and containerd's shim, or conmon), goroutine by goroutine; a
 * warm run's round trip through them costs 4-5 ms on a 2-core machine,
 * through a socket ~0.1 ms.
 *
 * How: channel_open makes a fresh directory under a base directory and
 * listens on CHANNEL_SOCKET_NAME in it, a socket only the sandbox's uid
 * may connect to. The directory is bound read-only into the
 * container at CHANNEL_TARGET. The sandbox's connector
 * (src/sandbox/runner/connect.pl) connects twice, writing one tag byte on
 * each: CHANNEL_TAG_IO on the connection that becomes its stdin and
 * stdout, CHANNEL_TAG_ERR on the one that becomes its stderr; then it
 * executes the runner. channel_accept takes exactly those two (a peer
 * whose uid is neither the sandbox's nor the daemon's is refused), then removes the socket and
 * the directory, so nothing else can ever connect; the container keeps an
 * empty read-only mount.
 *
 * The stream it yields is a backend_stream like an attach stream (stdout
 * and stderr demultiplexed, stdin through stream_send), so the layers
 * above handle both alike. Bytes passed with a connection (SCM_RIGHTS) are
 * never received: the stream reads with recv, which discards them.
 *
 * Thread-safe as backend.h says: a channel and its stream have one owner
 * at a time. */
#ifndef MCPSBX_CHANNEL_H
#define MCPSBX_CHANNEL_H

#include <stdbool.h>
#include <sys/types.h>

#include "backend/backend.h"
#include "base/err.h"

/* Where the container sees the directory, and the socket in it. */
#define CHANNEL_TARGET      "/run/mcpsbx-io"
#define CHANNEL_SOCKET_NAME "io.sock"
#define CHANNEL_SOCKET      CHANNEL_TARGET "/" CHANNEL_SOCKET_NAME
#define CHANNEL_TAG_IO      'o'
#define CHANNEL_TAG_ERR     'e'
/* While no connection comes, how often channel_accept asks whether the
 * sandbox is still there. */
#define CHANNEL_CHECK_MS 100

struct channel;

/* Makes base_dir (0711, when missing) and a fresh directory in it (this
 * process's, 0711) for one sandbox whose processes run as uid:gid, and
 * listens on a socket there that only uid (and this process's user) may
 * connect to (0600). base_dir must be a
 * directory of this process's user that nobody else may write (else
 * ERR_INVALID: someone else could swap what the engine binds). */
int channel_open(const char *base_dir, uid_t uid, gid_t gid, struct channel **out, struct err *err);

/* The host directory to bind at CHANNEL_TARGET. */
const char *channel_dir(const struct channel *c);

/* Returns 0 while the sandbox may still connect, -1 with err once it
 * cannot (it exited). */
typedef int (*channel_alive_fn)(void *ctx, struct err *err);

/* Waits for the two connections, until deadline_ms (util_now_ms time),
 * stop_fd readable (-1: none) or alive failing, asked every
 * CHANNEL_CHECK_MS without a connection. Returns 0 with *out, 1 when
 * stop_fd became readable, or -1 with err. Whatever it returns, the socket
 * and directory are gone afterwards. */
int channel_accept(struct channel *c, double deadline_ms, int stop_fd, channel_alive_fn alive,
                   void *alive_ctx, struct backend_stream **out, struct err *err);

/* Removes what is left (socket, directory), closes, frees. NULL is fine. */
void channel_close(struct channel *c);

/* Removes the directories channel_open made in base_dir for processes
 * that no longer run (a daemon that was killed). Best effort. */
void channel_sweep(const char *base_dir);

#endif
