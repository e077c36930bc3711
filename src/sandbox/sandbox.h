/* The hardening policy, in one place: turns the operator's configuration
 * and one run's limits into the engine's container-create body. */
#ifndef MCPSBX_SANDBOX_H
#define MCPSBX_SANDBOX_H

#include <json-c/json.h>

#include "base/config.h"

/* The writable working directory: a size-capped tmpfs. */
#define SANDBOX_WORKDIR "/tmp"

struct sandbox_spec {
    const char *image;
    const char *const *cmd; /* NULL-terminated argv */
    long long memory_mb;
    const char *instance; /* label value marking this daemon's containers */
    const char *owner;    /* label value naming the daemon process; may be NULL */
    long long expires;    /* unix time after which any daemon may remove it; 0 = none */
    char **env;           /* NULL-terminated "NAME=value" list, extra variables; may be NULL */
};

/* Returns a new create body (caller owns). */
json_object *sandbox_create_body(const struct config *cfg, const struct sandbox_spec *spec);

/* Builds the NULL-terminated "NAME=value" list for the configured
 * pass-through variables that are set in envp; names without a value are
 * skipped (and reported through missing_cb, name only). Caller frees with
 * sandbox_env_free. */
char **sandbox_pass_through_env(const struct config *cfg, char **envp,
                                void (*missing_cb)(const char *name));
void sandbox_env_free(char **env);

#endif
