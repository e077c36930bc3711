#include "sandbox/run/policy.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* Below the host's hard nofile limit (20000 here) and far below engine
 * defaults that fail without CAP_SYS_RESOURCE. nproc counts a uid's
 * processes across the host's user namespace: with a uid of its own per
 * sandbox (sandbox/pool/uids.h) it is that sandbox's own bound, the pids
 * limit's; with one uid for all it can only be a loose backstop
 * (SHARED_NPROC_LIMIT), since every sandbox counts against it. */
#define NOFILE_LIMIT       1024
#define SHARED_NPROC_LIMIT 4096
/* A file may grow as large as the working directory that holds it (the
 * tmpfs bounds it anyway; a data session's CSV may be hundreds of MB), and
 * at least FSIZE_LIMIT. */
#define FSIZE_LIMIT (64LL << 20)
#define SHM_BYTES   (16LL << 20)

/* Every sandbox's; a language adds its own (its table row's environment). */
static const char *const base_env[] = {"HOME=" POLICY_WORKDIR, "TMPDIR=" POLICY_WORKDIR,
                                       "LANG=C.UTF-8", NULL};

#define STRINGIFY_(x) #x
#define STRINGIFY(x)  STRINGIFY_(x)
#define EGRESS_PROXY  "http://127.0.0.1:" STRINGIFY(BACKEND_EGRESS_PORT)
/* Where a sandbox with egress finds the gateway (backend.h: the proxy the
 * backend puts inside it). Both spellings: curl reads only the lower-case
 * http_proxy, some tools only the upper-case ones. Loopback stays direct:
 * a server the program starts itself is its own. */
static const char *const egress_env[] = {"HTTP_PROXY=" EGRESS_PROXY,
                                         "HTTPS_PROXY=" EGRESS_PROXY,
                                         "http_proxy=" EGRESS_PROXY,
                                         "https_proxy=" EGRESS_PROXY,
                                         "NO_PROXY=localhost,127.0.0.1,::1",
                                         "no_proxy=localhost,127.0.0.1,::1",
                                         NULL};

/* With the daemon's CA (a host bound to a --secret, whose TLS the
 * gateway terminates): every client's trust store names the bundle (the
 * host's public roots and the CA), Node's extra CAs the CA alone. No
 * secret in them: the files are public. */
static const char *const egress_ca_env[] = {
    "SSL_CERT_FILE=" BACKEND_EGRESS_CA_BUNDLE,     "REQUESTS_CA_BUNDLE=" BACKEND_EGRESS_CA_BUNDLE,
    "CURL_CA_BUNDLE=" BACKEND_EGRESS_CA_BUNDLE,    "PIP_CERT=" BACKEND_EGRESS_CA_BUNDLE,
    "NODE_EXTRA_CA_CERTS=" BACKEND_EGRESS_CA_FILE, NULL};

bool policy_env_is_base(const char *name, size_t n)
{
    for (size_t i = 0; base_env[i]; i++)
        if (strncmp(base_env[i], name, n) == 0 && base_env[i][n] == '=')
            return true;
    return false;
}

const char **policy_env_new(const char *const *own, bool egress, bool egress_ca)
{
    size_t n = 0;
    while (own && own[n])
        n++;
    const char **env =
        xcalloc(ARRAY_SIZE(base_env) + ARRAY_SIZE(egress_env) + ARRAY_SIZE(egress_ca_env) + n,
                sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; base_env[i]; i++)
        env[k++] = base_env[i];
    for (size_t i = 0; egress && egress_env[i]; i++)
        env[k++] = egress_env[i];
    for (size_t i = 0; egress && egress_ca && egress_ca_env[i]; i++)
        env[k++] = egress_ca_env[i];
    for (size_t i = 0; i < n; i++)
        env[k++] = own[i];
    env[k] = NULL;
    return env;
}

void policy_spec(const struct config *cfg, const struct policy_run *run, struct backend_spec *spec)
{
    const char *runtime = run->runtime;
    bool own_uids = cfg->sandbox_uid_count > 0;
    /* With a uid per sandbox, the launcher puts the one it took in its
     * place; the first of the range stands for them here. Else
     * --sandbox-user, "UID:GID" as config_load checked it. */
    const char *colon = strchr(cfg->sandbox_user, ':');
    uid_t uid =
        own_uids ? (uid_t)cfg->sandbox_uid_base : (uid_t)strtoul(cfg->sandbox_user, NULL, 10);
    gid_t gid = own_uids ? (gid_t)uid : colon ? (gid_t)strtoul(colon + 1, NULL, 10) : (gid_t)uid;
    *spec = (struct backend_spec){
        .image = run->image,
        .cmd = run->cmd,
        .uid = uid,
        .gid = gid,
        .workdir = POLICY_WORKDIR,
        .workdir_mb = cfg->tmpfs_mb,
        .workdir_exec = run->workdir_exec,
        .env = run->env ? run->env : base_env,
        .memory_bytes = run->memory_mb << 20,
        .nano_cpus = (long long)(cfg->cpus * 1e9),
        .pids_limit = cfg->pids_limit,
        .nofile = NOFILE_LIMIT,
        .nproc = own_uids ? cfg->pids_limit : SHARED_NPROC_LIMIT,
        .fsize = cfg->tmpfs_mb << 20 > FSIZE_LIMIT ? cfg->tmpfs_mb << 20 : FSIZE_LIMIT,
        .shm_bytes = SHM_BYTES,
        .runtime = runtime,
        .syscalls = BACKEND_SYSCALLS_SANDBOX,
        .network = run->network,
        .egress = run->egress,
        .egress_ca_file = run->egress ? run->egress_ca_file : NULL,
        .egress_ca_bundle = run->egress ? run->egress_ca_bundle : NULL,
        .packages_dir = run->packages_dir,
        .labels = (const char *const *)cfg->labels.items,
        .instance = run->instance,
        .owner = run->owner,
        .expires = run->expires,
    };
}

void policy_secrets_init(struct policy_secrets *s, const struct config *cfg, char **envp,
                         void (*missing_cb)(const char *name))
{
    size_t cap = cfg->pass_through_env.n;
    *s = (struct policy_secrets){
        .names = xcalloc(cap + 1, sizeof(char *)),
        .values = xcalloc(cap + 1, sizeof(char *)),
    };
    for (size_t i = 0; i < cap; i++) {
        const char *name = cfg->pass_through_env.items[i];
        const char *found = util_env_entry(envp, name);
        if (!found) {
            if (missing_cb)
                missing_cb(name);
            continue;
        }
        s->names[s->n] = xstrdup(name);
        s->values[s->n] = xstrdup(found + strlen(name) + 1);
        s->n++;
    }
}

void policy_secrets_free(struct policy_secrets *s)
{
    for (size_t i = 0; i < s->n; i++) {
        /* Do not leave values behind in freed heap. */
        explicit_bzero(s->values[i], strlen(s->values[i]));
        free(s->values[i]);
        free(s->names[i]);
    }
    free(s->names);
    free(s->values);
    *s = (struct policy_secrets){0};
}
