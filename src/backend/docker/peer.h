/* Who is at the other end of a connection to one of a sandbox's sockets
 * (channel.h, egress_sock.h): the sandbox's processes, the daemon's own
 * user, or someone to refuse.
 *
 * Why it is the Docker backend's: it rests on the daemon and the engine
 * sharing a host and its /proc, where a process's cgroup path names its
 * container's full id (Docker's "/docker/<id>", Podman's
 * ".../libpod-<id>.scope"). The socket's mode already keeps other users
 * out; this keeps out the sandbox's uid outside the sandbox (another
 * container's, or the host's). */
#ifndef MCPSBX_DOCKER_PEER_H
#define MCPSBX_DOCKER_PEER_H

#include <sys/types.h>

#include "base/err.h"

/* The most of /proc/PID/cgroup read to find a container's id. */
#define PEER_CGROUP_MAX 8192

/* Checks the peer of connected unix socket fd (SO_PEERCRED): 0 for a
 * process of this process's user (it could read the daemon's memory
 * anyway), or of sandbox_uid or root in the cgroup of container
 * container_id (its full id; NULL: none yet, so only this process's user
 * passes; root there is gVisor's file proxy). Else -1
 * with err, ERR_PROTOCOL naming the peer and what ("its I/O socket"), or
 * ERR_IO when the kernel gave no credentials. fd stays open. */
int peer_check(int fd, uid_t sandbox_uid, const char *container_id, const char *what,
               struct err *err);

#endif
