/* The Docker Engine API backend (Docker, or Podman's compatible service):
 * the backend operations (backend/backend.h) over a unix socket.
 *
 * The backend/docker/ folder: docker.c (the operations table, the create
 * body, attach streams), sandbox_io.c (whether a sandbox's streams
 * take a socket of the daemon's, channel.c, or the attach stream),
 * engine.c (the Engine API requests), engine_http.c
 * (libcurl on the unix socket and the attach upgrade; the daemon's only
 * libcurl user), engine_stream.c (the attach stream's frame demultiplexer),
 * seccomp_profile.c (the sandbox's seccomp profile, per kernel, and
 * which runtimes are gVisor's), seccomp_file.c (the profile as a file,
 * for Podman). */
#ifndef MCPSBX_DOCKER_H
#define MCPSBX_DOCKER_H

#include <json-c/json.h>

#include "backend/backend.h"

/* The daemon's options the backend reads (borrowed for the call). */
struct docker_options {
    const char *sandbox_io;     /* --sandbox-io (sandbox_io.h); NULL: attach */
    const char *sandbox_io_dir; /* --sandbox-io-dir */
};

/* socket_path is a filesystem path (no unix:// prefix) and source where
 * it came from (discover.h; may be NULL); both copied. opts NULL: the
 * streams attach. Call engine_http_global_init first. */
struct backend *docker_backend_new(const char *socket_path, const char *source,
                                   const struct docker_options *opts);

/* The POST /containers/create body for spec (caller owns; exposed for
 * tests). seccomp is what follows "seccomp=" in SecurityOpt: the
 * profile's text (Docker) or the path of a file holding it on the
 * engine's host (Podman); NULL: no such option, the engine's default.
 * io_dir: the channel directory bound at CHANNEL_TARGET for a sandbox
 * whose streams go through it (channel.h), its stdio then not attached;
 * NULL: attached. */
json_object *docker_create_body(const struct backend_spec *spec, const char *seccomp,
                                const char *io_dir);

#endif
