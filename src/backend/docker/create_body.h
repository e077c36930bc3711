/* The POST /containers/create body for a sandbox: the hardening every
 * backend promises (backend/backend.h) in the Docker Engine API's terms,
 * the spec's limits and marks, and the daemon's directories bound in.
 * Kept apart from docker.c, which sends it, so that it can be read (and
 * tested) as the one place the hardening is written. */
#ifndef MCPSBX_DOCKER_CREATE_BODY_H
#define MCPSBX_DOCKER_CREATE_BODY_H

#include <json-c/json.h>

#include "backend/backend.h"

/* The daemon's directories bound into the container, read-only; NULL
 * for none. */
struct create_binds {
    /* The channel's (channel.h), at CHANNEL_TARGET: the sandbox's streams
     * go through it, its stdio then not attached. */
    const char *io_dir;
    /* The egress socket's (egress_sock.h), at EGRESS_SOCK_TARGET. */
    const char *egress_dir;
};

/* The body for spec (caller owns). seccomp is what follows "seccomp=" in
 * SecurityOpt: the profile's text (Docker) or the path of a file holding
 * it on the engine's host (Podman); NULL: no such option, the engine's
 * default. binds NULL: none, the streams attached. */
json_object *create_body_new(const struct backend_spec *spec, const char *seccomp,
                             const struct create_binds *binds);

#endif
