/* The Docker Engine API backend (Docker, or Podman's compatible service):
 * the backend operations (backend/backend.h) over a unix socket.
 *
 * The backend/docker/ folder: docker.c (the operations table, attach
 * streams), create_body.c (the create request's body: the hardening),
 * sandbox_io.c (whether a sandbox's streams take a socket of the
 * daemon's, channel.c, or the attach stream; and a sandbox's egress
 * socket, egress_sock.c, with its forwarder, forward.pl), sock_dir.c (a
 * directory of the daemon's with a sandbox's socket in it), peer.c (who
 * connected to one), engine.c (the Engine API requests), engine_http.c
 * (libcurl on the unix socket and the attach upgrade; the daemon's only
 * libcurl user), engine_stream.c (the attach stream's frame
 * demultiplexer), seccomp_profile.c (the sandbox's seccomp profile, per kernel, and
 * which runtimes are gVisor's), seccomp_file.c (the profile as a file,
 * for Podman), weight.c (a sandbox's CPU weight, in its own cgroup). */
#ifndef MCPSBX_DOCKER_H
#define MCPSBX_DOCKER_H

#include "backend/backend.h"

/* The daemon's options the backend reads (borrowed for the call). */
struct docker_options {
    const char *sandbox_io;     /* --sandbox-io (sandbox_io.h); NULL: attach */
    const char *sandbox_io_dir; /* --sandbox-io-dir: sockets, egress's too */
};

/* socket_path is a filesystem path (no unix:// prefix) and source where
 * it came from (discover.h; may be NULL); both copied. opts NULL: the
 * streams attach, and no sandbox has egress. Call engine_http_global_init first. */
struct backend *docker_backend_new(const char *socket_path, const char *source,
                                   const struct docker_options *opts);

#endif
