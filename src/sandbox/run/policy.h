/* The hardening policy, in one place: what a sandbox may use (the
 * operator's configuration plus one run's limits: resources, the
 * project's syscall allow-list, the operator's runtime, no network unless
 * allowed) and the only environment it is created with, as a
 * backend_spec; and the secrets, which never go into the spec (they
 * travel in the run's request). The backend turns the spec into its own
 * terms (a seccomp profile for the runtime's kernel, say) and adds the
 * isolation every backend promises (backend/backend.h). */
#ifndef MCPSBX_POLICY_H
#define MCPSBX_POLICY_H

#include "backend/backend.h"
#include "base/config.h"

/* The writable working directory: a size-capped tmpfs. */
#define POLICY_WORKDIR "/tmp"

/* What a sandbox can reach over the network: nothing, unless the
 * operator allowed its language a network (--allow-network); a call never
 * changes that. */
#define POLICY_NETWORK         "none"
#define POLICY_NETWORK_ALLOWED "bridge"

/* One run's part of the spec. */
struct policy_run {
    const char *runtime;    /* its language's (langtable_runtime); NULL: the engine's */
    const char *const *env; /* from policy_env_new; NULL: the daemon's own alone */
    bool network;           /* langtable_network: the operator allowed it */
    bool egress;            /* its language has an egress allow-list */
    /* With egress: the daemon's CA's public files (backend_spec's), or
     * NULL when the gateway terminates no TLS. */
    const char *egress_ca_file;
    const char *egress_ca_bundle;
    bool workdir_exec;        /* its compile step makes a program run from the workdir */
    const char *packages_dir; /* the package cache's sets (backend_spec's); NULL: none */
    const char *image;
    const char *const *cmd; /* NULL-terminated argv */
    long long memory_mb;
    const char *instance; /* marks this daemon's containers */
    const char *owner;    /* names the daemon process; may be NULL */
    long long expires;    /* unix time after which any daemon may remove it; 0 = none */
};

/* Fills spec from cfg and run. Every pointer in spec is borrowed from cfg,
 * run or static data. The container's environment is a fixed base and
 * its language's variables, with no value from the daemon's own
 * environment: the engine keeps Config.Env on disk and shows it to anyone
 * who may inspect containers. The user is
 * --sandbox-user's; with sandbox uids of their own (--sandbox-uid-count)
 * it is the range's first, which launch (sandbox/run/launch.h) replaces by the
 * sandbox's own, and nproc is then the pids limit. */
void policy_spec(const struct config *cfg, const struct policy_run *run, struct backend_spec *spec);

/* A sandbox's whole environment: the daemon's own base (HOME, TMPDIR,
 * LANG), with egress the proxy variables that lead to the gateway
 * (HTTP_PROXY, HTTPS_PROXY, their lower-case twins, NO_PROXY for
 * loopback) and, with egress_ca too, the trust variables that name the
 * daemon's CA inside (SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE,
 * PIP_CERT: the bundle; NODE_EXTRA_CA_CERTS: the CA), then own's "NAME=value" items (a language's,
 * NULL-terminated; may be NULL). NULL-terminated; the strings are borrowed from own and static
 * data, the array is the caller's to free. */
const char **policy_env_new(const char *const *own, bool egress, bool egress_ca);

/* Whether the base sets the variable name[0..n): a language may not. */
bool policy_env_is_base(const char *name, size_t n);

/* The --pass-through-env variables that are set in envp, in the order
 * named: the runner sets them in the program's environment from the run's
 * request. A name that is not set is skipped and reported through
 * missing_cb (name only; never a value). */
struct policy_secrets {
    size_t n;
    char **names;
    char **values;
};
void policy_secrets_init(struct policy_secrets *s, const struct config *cfg, char **envp,
                         void (*missing_cb)(const char *name));
/* Zeroes the values before freeing them. */
void policy_secrets_free(struct policy_secrets *s);

#endif
