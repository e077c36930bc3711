#include "sandbox/sandbox.h"

#include <stdio.h>
#include <string.h>

#include "backend/docker/engine.h"

/* Below the host's hard nofile limit (20000 here) and far below engine
 * defaults that fail without CAP_SYS_RESOURCE. nproc is per-UID across the
 * host, so PidsLimit is the real process cap; nproc is only a backstop. */
#define NOFILE_LIMIT 1024
#define NPROC_LIMIT  4096
#define FSIZE_LIMIT  (64LL << 20)
#define SHM_BYTES    (16LL << 20)

static json_object *ulimit(const char *name, long long soft, long long hard)
{
    json_object *u = json_object_new_object();
    json_object_object_add(u, "Name", json_object_new_string(name));
    json_object_object_add(u, "Soft", json_object_new_int64(soft));
    json_object_object_add(u, "Hard", json_object_new_int64(hard));
    return u;
}

static json_object *string_array(const char *const *items)
{
    json_object *a = json_object_new_array();
    for (const char *const *p = items; p && *p; p++)
        json_object_array_add(a, json_object_new_string(*p));
    return a;
}

json_object *sandbox_create_body(const struct config *cfg, const struct sandbox_spec *spec)
{
    json_object *b = json_object_new_object();
    json_object_object_add(b, "Image", json_object_new_string(spec->image));
    json_object_object_add(b, "Cmd", string_array(spec->cmd));
    /* Some images set an ENTRYPOINT; the runner must be the whole command. */
    json_object_object_add(b, "Entrypoint", json_object_new_array());
    json_object_object_add(b, "User", json_object_new_string(cfg->sandbox_user));
    json_object_object_add(b, "WorkingDir", json_object_new_string(SANDBOX_WORKDIR));

    /* Only these variables and the operator's pass-through list: the
     * daemon's own environment never reaches a sandbox. */
    json_object *env = json_object_new_array();
    static const char *const base_env[] = {"HOME=" SANDBOX_WORKDIR,
                                           "TMPDIR=" SANDBOX_WORKDIR,
                                           "LANG=C.UTF-8",
                                           "PYTHONDONTWRITEBYTECODE=1",
                                           "MPLBACKEND=Agg",
                                           "MPLCONFIGDIR=" SANDBOX_WORKDIR "/.mpl",
                                           NULL};
    for (const char *const *p = base_env; *p; p++)
        json_object_array_add(env, json_object_new_string(*p));
    for (char **p = spec->env; p && *p; p++)
        json_object_array_add(env, json_object_new_string(*p));
    json_object_object_add(b, "Env", env);

    json_object *labels = json_object_new_object();
    json_object_object_add(labels, ENGINE_LABEL_MANAGED, json_object_new_string("1"));
    json_object_object_add(labels, ENGINE_LABEL_INSTANCE, json_object_new_string(spec->instance));
    if (spec->owner)
        json_object_object_add(labels, ENGINE_LABEL_OWNER, json_object_new_string(spec->owner));
    if (spec->expires > 0) {
        char when[24];
        snprintf(when, sizeof(when), "%lld", spec->expires);
        json_object_object_add(labels, ENGINE_LABEL_EXPIRES, json_object_new_string(when));
    }
    json_object_object_add(b, "Labels", labels);

    json_object_object_add(b, "AttachStdin", json_object_new_boolean(1));
    json_object_object_add(b, "AttachStdout", json_object_new_boolean(1));
    json_object_object_add(b, "AttachStderr", json_object_new_boolean(1));
    json_object_object_add(b, "OpenStdin", json_object_new_boolean(1));
    /* If the daemon disappears, the runner sees EOF and the container ends. */
    json_object_object_add(b, "StdinOnce", json_object_new_boolean(1));
    json_object_object_add(b, "Tty", json_object_new_boolean(0));
    json_object_object_add(b, "NetworkDisabled", json_object_new_boolean(1));

    json_object *hc = json_object_new_object();
    json_object_object_add(hc, "NetworkMode", json_object_new_string("none"));
    json_object_object_add(hc, "ReadonlyRootfs", json_object_new_boolean(1));
    json_object *tmpfs = json_object_new_object();
    char *opts = xasprintf("rw,nosuid,nodev,size=%lldm,mode=1777", cfg->tmpfs_mb);
    json_object_object_add(tmpfs, SANDBOX_WORKDIR, json_object_new_string(opts));
    free(opts);
    json_object_object_add(hc, "Tmpfs", tmpfs);
    json_object *capdrop = json_object_new_array();
    json_object_array_add(capdrop, json_object_new_string("ALL"));
    json_object_object_add(hc, "CapDrop", capdrop);
    json_object *secopt = json_object_new_array();
    json_object_array_add(secopt, json_object_new_string("no-new-privileges:true"));
    json_object_object_add(hc, "SecurityOpt", secopt);
    long long mem = spec->memory_mb << 20;
    json_object_object_add(hc, "Memory", json_object_new_int64(mem));
    json_object_object_add(hc, "MemorySwap", json_object_new_int64(mem));
    json_object_object_add(hc, "NanoCpus", json_object_new_int64((long long)(cfg->cpus * 1e9)));
    json_object_object_add(hc, "PidsLimit", json_object_new_int64(cfg->pids_limit));
    json_object *ul = json_object_new_array();
    json_object_array_add(ul, ulimit("nofile", NOFILE_LIMIT, NOFILE_LIMIT));
    json_object_array_add(ul, ulimit("nproc", NPROC_LIMIT, NPROC_LIMIT));
    json_object_array_add(ul, ulimit("fsize", FSIZE_LIMIT, FSIZE_LIMIT));
    json_object_array_add(ul, ulimit("core", 0, 0));
    json_object_object_add(hc, "Ulimits", ul);
    json_object_object_add(hc, "Init", json_object_new_boolean(1));
    json_object_object_add(hc, "AutoRemove", json_object_new_boolean(0));
    json_object_object_add(hc, "Privileged", json_object_new_boolean(0));
    json_object_object_add(hc, "IpcMode", json_object_new_string("private"));
    json_object_object_add(hc, "ShmSize", json_object_new_int64(SHM_BYTES));
    json_object_object_add(hc, "OomScoreAdj", json_object_new_int(1000));
    json_object *logcfg = json_object_new_object();
    json_object_object_add(logcfg, "Type", json_object_new_string("none"));
    json_object_object_add(hc, "LogConfig", logcfg);
    if (cfg->runtime && *cfg->runtime)
        json_object_object_add(hc, "Runtime", json_object_new_string(cfg->runtime));
    json_object_object_add(b, "HostConfig", hc);
    return b;
}

char **sandbox_pass_through_env(const struct config *cfg, char **envp,
                                void (*missing_cb)(const char *name))
{
    char **out = xcalloc(cfg->pass_through_env.n + 1, sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; i < cfg->pass_through_env.n; i++) {
        const char *name = cfg->pass_through_env.items[i];
        size_t n = strlen(name);
        const char *found = NULL;
        for (char **e = envp; e && *e; e++)
            if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
                found = *e;
        if (found)
            out[k++] = xstrdup(found);
        else if (missing_cb)
            missing_cb(name);
    }
    out[k] = NULL;
    return out;
}

void sandbox_env_free(char **env)
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
