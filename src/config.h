/* Daemon configuration: one table of options (name, type, bounds, help)
 * drives --help, command-line parsing, MCPSANDBOXD_* environment variables
 * and the config file. Precedence: defaults < file < environment < CLI. */
#ifndef MCPSBX_CONFIG_H
#define MCPSBX_CONFIG_H

#include <stdbool.h>
#include <stdio.h>

#include "err.h"

struct config {
    char *engine_socket; /* resolved filesystem path of the engine socket */
    char *engine_source; /* where it came from, for messages */
    char *python_image;
    char *js_image;
    char **pass_through_env; /* NULL-terminated list of variable names */
    size_t n_pass_through_env;
    long long timeout_ms;
    long long max_timeout_ms;
    long long memory_mb;
    long long max_memory_mb;
    long long max_output_bytes;
    long long max_code_bytes;
    long long max_message_bytes;
    long long pids_limit;
    long long tmpfs_mb;
    long long max_concurrent;
    double cpus;
    char *runtime;      /* OCI runtime name, e.g. runsc; empty = engine default */
    char *sandbox_user; /* "uid:gid" */
    char *log_level;
    char *config_file;
    bool help;
    bool version;
};

void config_init(struct config *cfg);
void config_free(struct config *cfg);

/* Reads the config file (if --config or MCPSANDBOXD_CONFIG names one), then
 * the environment, then argv; resolves the engine socket; checks every
 * bound. envp is the daemon's environment. */
int config_load(struct config *cfg, int argc, char **argv, char **envp, struct err *err);

/* Writes --help text to fp. */
void config_usage(FILE *fp, const char *argv0);

/* Picks the engine socket: --engine, else DOCKER_HOST (unix://), else
 * CONTAINER_HOST, else /var/run/docker.sock if present, else
 * /run/podman/podman.sock if present, else /var/run/docker.sock.
 * cli_engine may be NULL. Results are allocated. */
int config_resolve_engine(const char *cli_engine, const char *docker_host,
                          const char *container_host, char **socket_path, char **source,
                          struct err *err);

#endif
