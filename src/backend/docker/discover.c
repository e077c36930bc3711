#include "backend/docker/discover.h"

#include <string.h>
#include <sys/stat.h>

#include "base/util.h"

int discover_engine(const char *engine, const char *docker_host, const char *container_host,
                    char **socket_path, char **source, struct err *err)
{
    const char *url = NULL;
    const char *from = NULL;
    if (engine && *engine) {
        url = engine;
        from = "--engine";
    } else if (docker_host && *docker_host) {
        url = docker_host;
        from = "DOCKER_HOST";
    } else if (container_host && *container_host) {
        url = container_host;
        from = "CONTAINER_HOST";
    }
    if (url) {
        const char *path = url;
        if (strncmp(url, "unix://", 7) == 0)
            path = url + 7;
        else if (strstr(url, "://"))
            return err_set(err, ERR_INVALID,
                           "%s: only unix:// engine sockets are supported, got '%s'", from, url);
        if (path[0] != '/')
            return err_set(err, ERR_INVALID, "%s: engine socket path must be absolute, got '%s'",
                           from, url);
        *socket_path = xstrdup(path);
        *source = xstrdup(from);
        return 0;
    }
    static const char *const defaults[] = {"/var/run/docker.sock", "/run/podman/podman.sock"};
    struct stat st;
    const char *found = defaults[0];
    for (size_t i = 0; i < ARRAY_SIZE(defaults); i++) {
        if (stat(defaults[i], &st) == 0 && S_ISSOCK(st.st_mode)) {
            found = defaults[i];
            break;
        }
    }
    *socket_path = xstrdup(found);
    *source = xstrdup("default");
    return 0;
}
