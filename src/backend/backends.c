#include "backend/backends.h"

#include <string.h>

#include "backend/docker/discover.h"
#include "backend/docker/docker.h"
#include "backend/docker/engine_http.h"
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

/* The backends of this build: a second one is a row here and a folder
 * beside docker/. */
static const struct {
    const char *name;
    struct backend *(*open)(const struct config *cfg, char **envp, struct err *err);
} backends[] = {
    {"docker", open_docker},
};

struct backend *backends_open(const struct config *cfg, char **envp, struct err *err)
{
    const char *name = cfg->backend && *cfg->backend ? cfg->backend : "docker";
    for (size_t i = 0; i < ARRAY_SIZE(backends); i++)
        if (strcmp(backends[i].name, name) == 0)
            return backends[i].open(cfg, envp, err);
    err_set(err, ERR_INVALID, "--backend: '%.64s' is not a backend of this build (docker)", name);
    return NULL;
}
