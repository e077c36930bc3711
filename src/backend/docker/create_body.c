#include "backend/docker/create_body.h"

#include <stdio.h>
#include <string.h>

#include "backend/docker/channel.h"
#include "backend/docker/egress_sock.h"
#include "backend/docker/engine.h"
#include "base/util.h"

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

static json_object *labels(const struct backend_spec *spec)
{
    json_object *l = json_object_new_object();
    /* The operator's first, so the daemon's own always win. */
    for (const char *const *p = spec->labels; p && *p; p++) {
        const char *eq = strchr(*p, '=');
        if (!eq)
            continue;
        char *key = xstrndup(*p, (size_t)(eq - *p));
        json_object_object_add(l, key, json_object_new_string(eq + 1));
        free(key);
    }
    json_object_object_add(l, ENGINE_LABEL_MANAGED, json_object_new_string("1"));
    json_object_object_add(l, ENGINE_LABEL_INSTANCE, json_object_new_string(spec->instance));
    if (spec->owner)
        json_object_object_add(l, ENGINE_LABEL_OWNER, json_object_new_string(spec->owner));
    if (spec->pool)
        json_object_object_add(l, ENGINE_LABEL_POOL, json_object_new_string(spec->pool));
    char uid[16];
    snprintf(uid, sizeof(uid), "%u", (unsigned)spec->uid);
    json_object_object_add(l, ENGINE_LABEL_UID, json_object_new_string(uid));
    if (spec->expires > 0) {
        char when[24];
        snprintf(when, sizeof(when), "%lld", spec->expires);
        json_object_object_add(l, ENGINE_LABEL_EXPIRES, json_object_new_string(when));
    }
    return l;
}

static void add_bind(json_object *a, const char *host, const char *target, const char *mode)
{
    char *bind = xasprintf("%s:%s:%s", host, target, mode);
    json_object_array_add(a, json_object_new_string(bind));
    free(bind);
}

/* The daemon's directories, read-only: the container can neither add
 * to them nor swap their sockets; an installer's target alone is
 * writable. */
static void add_binds(json_object *hc, const struct backend_spec *spec,
                      const struct create_binds *binds)
{
    if (!binds->io_dir && !binds->egress_dir && !spec->packages_dir && !spec->install_dir)
        return;
    json_object *a = json_object_new_array();
    if (binds->io_dir)
        add_bind(a, binds->io_dir, CHANNEL_TARGET, "ro");
    if (binds->egress_dir)
        add_bind(a, binds->egress_dir, EGRESS_SOCK_TARGET, "ro");
    if (spec->packages_dir)
        add_bind(a, spec->packages_dir, BACKEND_PACKAGES_DIR, "ro");
    if (spec->install_dir)
        add_bind(a, spec->install_dir, BACKEND_INSTALL_DIR, "rw");
    json_object_object_add(hc, "Binds", a);
}

/* The hardening every backend promises (backend.h), in Docker's terms. */
static json_object *host_config(const struct backend_spec *spec, const char *seccomp,
                                const struct create_binds *binds)
{
    json_object *hc = json_object_new_object();
    json_object_object_add(hc, "NetworkMode",
                           json_object_new_string(spec->network ? "bridge" : "none"));
    json_object_object_add(hc, "ReadonlyRootfs", json_object_new_boolean(1));
    json_object *tmpfs = json_object_new_object();
    /* The engines mount a tmpfs noexec unless told: a compiled program
     * runs from the working directory, so its language asks for exec. */
    char *opts = xasprintf("rw,%snosuid,nodev,size=%lldm,mode=1777",
                           spec->workdir_exec ? "exec," : "noexec,", spec->workdir_mb);
    json_object_object_add(tmpfs, spec->workdir, json_object_new_string(opts));
    free(opts);
    /* Podman mounts writable, uncapped tmpfs on these under a read-only
     * root unless told otherwise (its --read-only-tmpfs, which its Docker
     * API cannot switch off): empty read-only ones take their place, on
     * every engine alike. */
    static const char *const shut[] = {"/run", "/var/tmp"};
    for (size_t i = 0; i < ARRAY_SIZE(shut); i++)
        if (strcmp(spec->workdir, shut[i]) != 0)
            json_object_object_add(tmpfs, shut[i],
                                   json_object_new_string("ro,nosuid,nodev,noexec,size=64k"));
    json_object_object_add(hc, "Tmpfs", tmpfs);
    json_object *capdrop = json_object_new_array();
    json_object_array_add(capdrop, json_object_new_string("ALL"));
    json_object_object_add(hc, "CapDrop", capdrop);
    json_object *secopt = json_object_new_array();
    json_object_array_add(secopt, json_object_new_string("no-new-privileges:true"));
    if (seccomp) {
        char *opt = xasprintf("seccomp=%s", seccomp);
        json_object_array_add(secopt, json_object_new_string(opt));
        free(opt);
    }
    json_object_object_add(hc, "SecurityOpt", secopt);
    json_object_object_add(hc, "Memory", json_object_new_int64(spec->memory_bytes));
    json_object_object_add(hc, "MemorySwap", json_object_new_int64(spec->memory_bytes));
    json_object_object_add(hc, "NanoCpus", json_object_new_int64(spec->nano_cpus));
    if (spec->cpu_shares > 0)
        json_object_object_add(hc, "CpuShares", json_object_new_int64(spec->cpu_shares));
    json_object_object_add(hc, "PidsLimit", json_object_new_int64(spec->pids_limit));
    json_object *ul = json_object_new_array();
    json_object_array_add(ul, ulimit("nofile", spec->nofile, spec->nofile));
    json_object_array_add(ul, ulimit("nproc", spec->nproc, spec->nproc));
    json_object_array_add(ul, ulimit("fsize", spec->fsize, spec->fsize));
    json_object_array_add(ul, ulimit("core", 0, 0));
    json_object_object_add(hc, "Ulimits", ul);
    json_object_object_add(hc, "Init", json_object_new_boolean(1));
    json_object_object_add(hc, "AutoRemove", json_object_new_boolean(0));
    json_object_object_add(hc, "Privileged", json_object_new_boolean(0));
    json_object_object_add(hc, "IpcMode", json_object_new_string("private"));
    json_object_object_add(hc, "ShmSize", json_object_new_int64(spec->shm_bytes));
    json_object_object_add(hc, "OomScoreAdj", json_object_new_int(1000));
    json_object *logcfg = json_object_new_object();
    json_object_object_add(logcfg, "Type", json_object_new_string("none"));
    json_object_object_add(hc, "LogConfig", logcfg);
    if (spec->runtime && *spec->runtime)
        json_object_object_add(hc, "Runtime", json_object_new_string(spec->runtime));
    add_binds(hc, spec, binds);
    return hc;
}

json_object *create_body_new(const struct backend_spec *spec, const char *seccomp,
                             const struct create_binds *binds)
{
    static const struct create_binds none = {0};
    if (!binds)
        binds = &none;
    json_object *b = json_object_new_object();
    json_object_object_add(b, "Image", json_object_new_string(spec->image));
    json_object_object_add(b, "Cmd", string_array(spec->cmd));
    /* Some images set an ENTRYPOINT; the command must be the whole command. */
    json_object_object_add(b, "Entrypoint", json_object_new_array());
    /* Numeric: no passwd entry needed in the image (HOME and the working
     * directory are the tmpfs, mode 1777). */
    char user[32];
    snprintf(user, sizeof(user), "%u:%u", (unsigned)spec->uid, (unsigned)spec->gid);
    json_object_object_add(b, "User", json_object_new_string(user));
    json_object_object_add(b, "WorkingDir", json_object_new_string(spec->workdir));
    json_object_object_add(b, "Env", string_array(spec->env));
    json_object_object_add(b, "Labels", labels(spec));
    /* With io_dir the streams are a socket's (channel.h): nothing to
     * attach, and no stdin for the engine to hold open. */
    bool attached = binds->io_dir == NULL;
    json_object_object_add(b, "AttachStdin", json_object_new_boolean(attached));
    json_object_object_add(b, "AttachStdout", json_object_new_boolean(attached));
    json_object_object_add(b, "AttachStderr", json_object_new_boolean(attached));
    json_object_object_add(b, "OpenStdin", json_object_new_boolean(attached));
    /* If the daemon disappears, the program sees EOF and the container ends. */
    json_object_object_add(b, "StdinOnce", json_object_new_boolean(attached));
    json_object_object_add(b, "Tty", json_object_new_boolean(0));
    json_object_object_add(b, "NetworkDisabled", json_object_new_boolean(!spec->network));
    json_object_object_add(b, "HostConfig", host_config(spec, seccomp, binds));
    return b;
}
