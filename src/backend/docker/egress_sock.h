/* A sandbox's way to the daemon's egress gateway: a unix socket of the
 * daemon's, bound into the container, behind a loopback HTTP proxy port
 * inside it. The sandbox still has no network (NetworkMode none).
 *
 * Why it is the Docker backend's: like the stream channel (channel.h), it
 * rests on the daemon and the engine sharing a host: a directory of the
 * daemon's can be bound into the container, and a peer's /proc/PID/cgroup
 * names the container's id (peer.h). Why a socket and not a network: a
 * container without an interface cannot reach anything but what is bound
 * in, so every byte out goes through the gateway's policy.
 *
 * How: egress_sock_open makes a fresh directory under --sandbox-io-dir
 * (sock_dir.h) with EGRESS_SOCK_NAME in it, 0600 and owned by the
 * sandbox's uid, and listens there (EGRESS_SOCK_BACKLOG). The directory is
 * bound read-only into the container at EGRESS_SOCK_TARGET. The sandbox's
 * command starts with the forwarder (src/backend/docker/forward.pl, a perl
 * -e program): it listens on 127.0.0.1:BACKEND_EGRESS_PORT, detaches, and
 * relays each TCP connection to EGRESS_SOCK_PATH, so a client that honours
 * HTTP_PROXY/HTTPS_PROXY reaches the gateway; then it executes the
 * sandbox's own command. If it cannot listen, the sandbox fails to start.
 * Unlike the channel, the socket lives as long as the container: made at
 * create, owned by the sandbox's stream from start, removed with it.
 * egress_sock_accept takes one connection at a time and checks its peer
 * as the channel does: the sandbox's uid inside the container, or the
 * daemon's own user; anyone else is refused and closed.
 *
 * With spec.egress_ca_file, the daemon's CA's public files go in the
 * same directory (egress_sock_add_ca), so the sandbox reads them at
 * BACKEND_EGRESS_CA_FILE and BACKEND_EGRESS_CA_BUNDLE through the same
 * read-only bind; they go with the socket.
 *
 * Thread-safe as backend.h says for a stream's egress: once the container
 * id is set, egress_sock_fd and egress_sock_accept may run on one thread
 * while another owns the stream, which closes it only after that thread
 * stopped. */
#ifndef MCPSBX_DOCKER_EGRESS_SOCK_H
#define MCPSBX_DOCKER_EGRESS_SOCK_H

#include <sys/types.h>

#include "backend/backend.h"
#include "base/err.h"

/* The forwarder (src/backend/docker/forward.pl, a perl -e program):
 * started as `perl -e <it> [-- -b] SOCKET PORT PROGRAM ARGS...`, -b where
 * the socket cannot be polled (gVisor). */
extern const char egress_forward_src[];

/* Where the container sees the directory, and the socket in it. */
#define EGRESS_SOCK_TARGET "/run/mcpsbx-egress"
#define EGRESS_SOCK_NAME   "egress.sock"
#define EGRESS_SOCK_PATH   EGRESS_SOCK_TARGET "/" EGRESS_SOCK_NAME
/* Connections that may wait for the gateway's acceptor. */
#define EGRESS_SOCK_BACKLOG 16

struct egress_sock;

/* Makes the directory and the socket for a sandbox whose processes run
 * as uid:gid, under base_dir (sock_dir_open's rules and error codes:
 * ERR_INVALID for a cause that lasts). */
int egress_sock_open(const char *base_dir, uid_t uid, gid_t gid, struct egress_sock **out,
                     struct err *err);

_Static_assert(sizeof(EGRESS_SOCK_TARGET) == sizeof(BACKEND_EGRESS_CA_DIR),
               "the CA's files are in the egress socket's directory");

/* Puts spec's egress_ca_file and egress_ca_bundle (public files of the
 * daemon's) in s's directory, readable by all: hard links, or copies
 * when the link fails. 0 when spec names none. */
int egress_sock_add_ca(struct egress_sock *s, const struct backend_spec *spec, struct err *err);

/* The host directory to bind at EGRESS_SOCK_TARGET. */
const char *egress_sock_dir(const struct egress_sock *s);

/* The container whose processes may connect (its full id; copied). Until
 * it is set only this process's user may. Set it before handing s to
 * another thread. */
void egress_sock_set_container(struct egress_sock *s, const char *container_id);

/* The listener, for poll(2): readable when a connection waits. */
int egress_sock_fd(const struct egress_sock *s);

/* backend_stream_egress_accept's contract (backend.h): 0 with *fd a
 * connected stream socket (close-on-exec, blocking; the caller's), 0
 * with *fd -1 when nothing waited, -1 with err for a peer refused
 * (ERR_PROTOCOL; the connection is closed) or an accept that failed
 * (ERR_IO; the connection may still wait, so the caller pauses before
 * polling again). */
int egress_sock_accept(struct egress_sock *s, int *fd, struct err *err);

/* Closes the listener, removes the socket and the directory, frees. NULL
 * is fine. */
void egress_sock_close(struct egress_sock *s);

#endif
