/* The hardening policy, in one place: what a sandbox may use (the
 * operator's configuration plus one run's limits) and the only
 * environment it is created with, as a backend_spec; and the secrets,
 * which never go into the spec (they travel in the run's request). The backend turns the spec
 * into its own terms and adds the isolation every backend promises
 * (backend/backend.h). */
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
    bool workdir_exec;      /* its compile step makes a program run from the workdir */
    const char *image;
    const char *const *cmd; /* NULL-terminated argv */
    long long memory_mb;
    const char *instance; /* marks this daemon's containers */
    const char *owner;    /* names the daemon process; may be NULL */
    long long expires;    /* unix time after which any daemon may remove it; 0 = none */
    /* From policy_seccomp_new; policy_spec picks the one for the
     * language's runtime. */
    const char *seccomp;
    const char *seccomp_gvisor;
};

/* Fills spec from cfg and run. Every pointer in spec is borrowed from cfg,
 * run or static data. The container's environment is a fixed base and
 * its language's variables, with no value from the daemon's own
 * environment: the engine keeps Config.Env on disk and shows it to anyone
 * who may inspect containers. The user is
 * --sandbox-user's; with sandbox uids of their own (--sandbox-uid-count)
 * it is the range's first, which launch (sandbox/launch.h) replaces by the
 * sandbox's own, and nproc is then the pids limit. */
void policy_spec(const struct config *cfg, const struct policy_run *run, struct backend_spec *spec);

/* A sandbox's whole environment: the daemon's own base (HOME, TMPDIR,
 * LANG), then own's "NAME=value" items (a language's, NULL-terminated; may
 * be NULL). NULL-terminated; the strings are borrowed from own and static
 * data, the array is the caller's to free. */
const char **policy_env_new(const char *const *own);

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

/* Which kernel judges the profile: the host's (runc, crun), or gVisor's
 * (runsc registered with --oci-seccomp). This gVisor answers every denial
 * with EPERM whatever errnoRet says, and libc starts threads with clone3
 * and falls back to clone only on ENOSYS; so under gVisor clone3 is left
 * to gVisor, which answers ENOSYS itself, and namespace flags are still
 * stopped on clone. */
enum policy_seccomp_kind { POLICY_SECCOMP_HOST, POLICY_SECCOMP_GVISOR };

/* True for a runtime name that is gVisor's (runsc, runsc-kvm, ..., or a
 * name with gvisor in it); NULL (the engine's default) is not. */
bool policy_runtime_is_gvisor(const char *runtime);

/* The seccomp profile every sandbox runs under (src/sandbox/seccomp/,
 * embedded as policy_seccomp_src): the engine's default allow-list less
 * the kernel interfaces no program here needs (namespaces and mounts,
 * io_uring, keyrings, BPF, perf, ptrace, userfaultfd, ...), as compact
 * JSON text for the given kernel; caller frees. NULL with err when the
 * embedded text is not a profile (a build that should not have passed its
 * tests). */
char *policy_seccomp_new(enum policy_seccomp_kind kind, struct err *err);

extern const char policy_seccomp_src[];

#endif
