#include "sandbox/policy.h"

#include <string.h>

#include "base/util.h"

/* Below the host's hard nofile limit (20000 here) and far below engine
 * defaults that fail without CAP_SYS_RESOURCE. nproc is per-UID across the
 * host, so pids_limit is the real process cap; nproc is only a backstop. */
#define NOFILE_LIMIT 1024
#define NPROC_LIMIT  4096
#define FSIZE_LIMIT  (64LL << 20)
#define SHM_BYTES    (16LL << 20)

static const char *const base_env[] = {"HOME=" POLICY_WORKDIR,
                                       "TMPDIR=" POLICY_WORKDIR,
                                       "LANG=C.UTF-8",
                                       "PYTHONDONTWRITEBYTECODE=1",
                                       "MPLBACKEND=Agg",
                                       "MPLCONFIGDIR=" POLICY_WORKDIR "/.mpl",
                                       NULL};

void policy_spec(const struct config *cfg, const struct policy_run *run, char *const *env,
                 struct backend_spec *spec)
{
    *spec = (struct backend_spec){
        .image = run->image,
        .cmd = run->cmd,
        .user = cfg->sandbox_user,
        .workdir = POLICY_WORKDIR,
        .workdir_mb = cfg->tmpfs_mb,
        .env = (const char *const *)env,
        .memory_bytes = run->memory_mb << 20,
        .nano_cpus = (long long)(cfg->cpus * 1e9),
        .pids_limit = cfg->pids_limit,
        .nofile = NOFILE_LIMIT,
        .nproc = NPROC_LIMIT,
        .fsize = FSIZE_LIMIT,
        .shm_bytes = SHM_BYTES,
        .runtime = cfg->runtime && *cfg->runtime ? cfg->runtime : NULL,
        .instance = run->instance,
        .owner = run->owner,
        .expires = run->expires,
    };
}

char **policy_env_new(const struct config *cfg, char **envp, void (*missing_cb)(const char *name))
{
    size_t nbase = sizeof(base_env) / sizeof(base_env[0]) - 1;
    char **out = xcalloc(nbase + cfg->pass_through_env.n + 1, sizeof(char *));
    size_t k = 0;
    /* Only these variables and the operator's pass-through list: the
     * daemon's own environment never reaches a sandbox. */
    for (size_t i = 0; i < nbase; i++)
        out[k++] = xstrdup(base_env[i]);
    for (size_t i = 0; i < cfg->pass_through_env.n; i++) {
        const char *name = cfg->pass_through_env.items[i];
        const char *found = util_env_entry(envp, name);
        if (found)
            out[k++] = xstrdup(found);
        else if (missing_cb)
            missing_cb(name);
    }
    out[k] = NULL;
    return out;
}

void policy_env_free(char **env)
{
    if (!env)
        return;
    for (char **p = env; *p; p++) {
        /* Secrets: do not leave values behind in freed heap. */
        explicit_bzero(*p, strlen(*p));
        free(*p);
    }
    free(env);
}
