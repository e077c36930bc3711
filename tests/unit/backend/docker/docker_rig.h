/* For the Docker backend's unit tests that run sandboxes against the fake
 * Engine API (tests/fake_engine): a sandbox's spec, Podman's answer to
 * /version, a create and start, and a stream read to its end. Include
 * after cmocka.h. */
#ifndef MCPSBX_TEST_DOCKER_RIG_H
#define MCPSBX_TEST_DOCKER_RIG_H

#include <poll.h>
#include <unistd.h>

#include "backend/docker/docker.h"
#include "base/util.h"
#include "fake_engine/fake_engine.h"

/* What Podman 4 answers to /version: enough for the backend to know it. */
#define PODMAN_VERSION                                                                             \
    "{\"Components\":[{\"Name\":\"Podman Engine\",\"Version\":\"4.3.1\"}],\"Version\":\"4.3.1\"}"

/* A sandbox of image, as this process's user: the fake engine runs its
 * program as this process, which the socket channel lets in. */
static inline struct backend_spec docker_rig_spec(const char *image)
{
    static const char *const cmd[] = {"python3", "-c", "pass", NULL};
    return (struct backend_spec){
        .image = image,
        .cmd = cmd,
        .uid = geteuid(),
        .gid = getegid(),
        .workdir = "/tmp",
        .workdir_mb = 64,
        .memory_bytes = 128LL << 20,
        .nano_cpus = 1000000000LL,
        .pids_limit = 64,
        .nofile = 1024,
        .nproc = 64,
        .fsize = 1LL << 20,
        .shm_bytes = 1LL << 20,
        .instance = "t",
    };
}

/* Creates a sandbox of spec (which must succeed) and starts it: start's
 * result, *id set, *s the stream when it started. */
static inline int docker_rig_create_start(struct backend *b, const struct backend_spec *spec,
                                          bool fallback, double deadline_ms, char **id,
                                          struct backend_stream **s, struct err *err)
{
    struct backend_pending *pending = NULL;
    if (backend_create(b, spec, fallback, 0, id, &pending, err) < 0)
        fail_msg("backend_create: %s", err_msg(err));
    *s = NULL;
    return backend_start(b, *id, pending, deadline_ms, -1, s, err);
}

static inline int docker_rig_drop(void *ctx, int stream, const char *data, size_t len,
                                  struct err *err)
{
    (void)ctx, (void)stream, (void)data, (void)len, (void)err;
    return 0;
}

/* Reads s, output dropped, until it ends: the last read's value (0: a
 * clean end; -1 with err). A stream that does not end fails the test. */
static inline long docker_rig_drain(struct backend_stream *s, struct err *err)
{
    long n;
    double guard = util_now_ms() + FAKE_HANG_GUARD_MS;
    do {
        struct pollfd pf = {.fd = backend_stream_fd(s), .events = POLLIN};
        if (!backend_stream_pending(s) && poll(&pf, 1, 1000) < 0)
            fail_msg("poll");
        if (util_now_ms() >= guard)
            fail_msg("the stream did not end");
        n = backend_stream_read(s, docker_rig_drop, NULL, err);
    } while (n > 0 || n == BACKEND_AGAIN);
    return n;
}

#endif
