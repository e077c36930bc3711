/* The hardening policy, in one place: what a sandbox may use (the
 * operator's configuration plus one run's limits) and the only
 * environment it sees, as a backend_spec. The backend turns the spec
 * into its own terms and adds the isolation every backend promises
 * (backend/backend.h). */
#ifndef MCPSBX_POLICY_H
#define MCPSBX_POLICY_H

#include "backend/backend.h"
#include "base/config.h"

/* The writable working directory: a size-capped tmpfs. */
#define POLICY_WORKDIR "/tmp"

/* What a sandbox can reach over the network (backend.h: nothing). */
#define POLICY_NETWORK "none"

/* One run's part of the spec. */
struct policy_run {
    const char *image;
    const char *const *cmd; /* NULL-terminated argv */
    long long memory_mb;
    const char *instance; /* marks this daemon's containers */
    const char *owner;    /* names the daemon process; may be NULL */
    long long expires;    /* unix time after which any daemon may remove it; 0 = none */
};

/* Fills spec from cfg and run; env is the list from policy_env_new. Every
 * pointer in spec is borrowed from cfg, run or env. */
void policy_spec(const struct config *cfg, const struct policy_run *run, char *const *env,
                 struct backend_spec *spec);

/* The whole environment of a sandbox, NULL-terminated "NAME=value": a
 * fixed base, then the configured pass-through variables that are set in
 * envp. A name that is not set is skipped and reported through missing_cb
 * (name only; never a value). Free with policy_env_free. */
char **policy_env_new(const struct config *cfg, char **envp, void (*missing_cb)(const char *name));
void policy_env_free(char **env);

#endif
