#include "backend/backends.h"

#include "backend/docker/docker.h"
#include "backend/docker/engine_http.h"

int backends_init(struct err *err)
{
    return engine_http_global_init(err);
}

void backends_cleanup(void)
{
    engine_http_global_cleanup();
}

/* One kind of backend so far; the choice among several belongs here. */
struct backend *backends_open(const char *address)
{
    return docker_backend_new(address);
}
