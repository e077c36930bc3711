/* Where the Docker Engine API is, as Docker's own clients find it, so
 * the daemon and `docker` on the same host agree without being told. */
#ifndef MCPSBX_DOCKER_DISCOVER_H
#define MCPSBX_DOCKER_DISCOVER_H

#include "base/err.h"

/* The engine socket: engine (--engine, MCPSANDBOXD_ENGINE or the config
 * file's "engine"), else docker_host (DOCKER_HOST), else container_host
 * (CONTAINER_HOST, Podman's), each a unix:// URL or an absolute path;
 * else /var/run/docker.sock if it is a socket, else
 * /run/podman/podman.sock if it is, else /var/run/docker.sock. Any may
 * be NULL or empty. *socket_path (absolute) and *source (which of them,
 * for messages) are allocated. */
int discover_engine(const char *engine, const char *docker_host, const char *container_host,
                    char **socket_path, char **source, struct err *err);

#endif
