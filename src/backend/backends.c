#include "backend/backends.h"

#include <string.h>

#include "backend/docker/discover.h"
#include "backend/docker/docker.h"
#include "backend/docker/engine_http.h"
#include "backend/kubernetes/kubernetes.h"
#include "base/util.h"

int backends_init(struct err *err)
{
    return engine_http_global_init(err);
}

void backends_cleanup(void)
{
    engine_http_global_cleanup();
}

static const char *env_get(char **envp, const char *name)
{
    size_t n = strlen(name);
    for (char **e = envp; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static struct backend *open_docker(const struct config *cfg, char **envp, struct err *err)
{
    char *path = NULL;
    char *source = NULL;
    if (discover_engine(cfg->engine, env_get(envp, "DOCKER_HOST"), env_get(envp, "CONTAINER_HOST"),
                        &path, &source, err) < 0)
        return NULL;
    struct docker_options opts = {.sandbox_io = cfg->sandbox_io,
                                  .sandbox_io_dir = cfg->sandbox_io_dir};
    struct backend *b = docker_backend_new(path, source, &opts);
    free(path);
    free(source);
    return b;
}

static struct backend *open_kubernetes(const struct config *cfg, char **envp, struct err *err)
{
    struct kube_options o = {.kubeconfig = cfg->kubeconfig,
                             .kubeconfig_env = env_get(envp, "KUBECONFIG"),
                             .service_host = env_get(envp, "KUBERNETES_SERVICE_HOST"),
                             .service_port = env_get(envp, "KUBERNETES_SERVICE_PORT"),
                             .home = env_get(envp, "HOME"),
                             .context = cfg->kube_context,
                             .namespace = cfg->kube_namespace,
                             .seccomp_profile = cfg->kube_seccomp_profile};
    return kube_backend_open(&o, err);
}

/* The backends of this build: each is a row here and a folder beside
 * this file. */
static const struct {
    const char *name;
    struct backend *(*open)(const struct config *cfg, char **envp, struct err *err);
} backends[] = {
    {"docker", open_docker},
    {"kubernetes", open_kubernetes},
};

struct backend *backends_open(const struct config *cfg, char **envp, struct err *err)
{
    const char *name = cfg->backend && *cfg->backend ? cfg->backend : "docker";
    for (size_t i = 0; i < ARRAY_SIZE(backends); i++)
        if (strcmp(backends[i].name, name) == 0)
            return backends[i].open(cfg, envp, err);
    err_set(err, ERR_INVALID,
            "--backend: '%.64s' is not a backend of this build (docker, kubernetes)", name);
    return NULL;
}
