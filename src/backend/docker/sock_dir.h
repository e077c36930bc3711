/* A fresh directory of the daemon's holding one listening unix socket
 * that only one sandbox's uid may connect to: what a sandbox's stream
 * channel (channel.h) and its egress socket (egress_sock.h) are made of.
 *
 * Why a directory per socket: the engine binds the directory, not the
 * socket, into the container (a bind of a socket file would pin that
 * inode; the directory's contents can go while the mount stays). Why
 * under one base directory (--sandbox-io-dir) that nobody else may
 * write: what another user could put or swap there is what the engine
 * would bind. Names are "<pid>.<16 hex>", so a daemon can tell (and
 * sweep) what a killed one left.
 *
 * Not thread-safe by itself: a sock_dir has one owner. */
#ifndef MCPSBX_DOCKER_SOCK_DIR_H
#define MCPSBX_DOCKER_SOCK_DIR_H

#include <sys/types.h>

#include "base/err.h"

/* The random part of a directory's name, in bytes (twice as many hex
 * digits). */
#define SOCK_DIR_RANDOM_BYTES 8
/* The most entries sock_dir_sweep removes from one leftover directory. */
#define SOCK_DIR_SWEEP_ENTRIES 8

struct sock_dir {
    char *dir;  /* on the host; NULL once removed */
    char *path; /* dir/name; NULL once removed */
    int fd;     /* the listener (nonblocking, close-on-exec); -1 once closed */
};

/* Makes base_dir (0711, when missing) and a fresh directory in it (this
 * process's, 0711), and listens there with backlog on a socket called
 * name, 0600 and owned by uid:gid, so that only uid (and this process's
 * user) may connect. base_dir must be a directory of this process's user
 * that nobody else may write; one others may list is made 0711, so the
 * names cannot be watched for. Fails with ERR_INVALID when the failure
 * lasts (the base directory; no right to chown the socket to uid: no
 * CAP_CHOWN), another code when it may pass (no descriptors left); *d
 * then holds nothing. */
int sock_dir_open(const char *base_dir, const char *name, uid_t uid, gid_t gid, int backlog,
                  struct sock_dir *d, struct err *err);

/* Closes the listener, removes the socket and the directory. Idempotent;
 * a zeroed struct with fd -1 is fine. */
void sock_dir_remove(struct sock_dir *d);

/* Removes the directories sock_dir_open made in base_dir for processes
 * that no longer run (a daemon that was killed), with what is in them.
 * Best effort. Pids are this pid namespace's: daemons in different ones
 * need different base directories. */
void sock_dir_sweep(const char *base_dir);

#endif
