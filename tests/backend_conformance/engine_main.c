/* The backend conformance suite against a real engine, through the
 * backend main would open for it:
 *
 *   build/backend-conformance NAME ENGINE IMAGE
 *
 * e.g. `docker unix:///var/run/docker.sock mcp-sandboxd-python:latest`;
 * NAME kubernetes takes ENGINE as a kubeconfig file (the Kubernetes API
 * shim's, tests/kube_shim).
 * Exits 0 when every case passed (cmocka's report on stdout). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backends.h"
#include "backend_conformance/conformance.h"
#include "base/config.h"
#include "base/util.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s NAME ENGINE IMAGE\n", argv[0]);
        return 2;
    }
    struct err err = ERR_INIT;
    struct config cfg;
    config_init(&cfg);
    if (strcmp(argv[1], "kubernetes") == 0) {
        free(cfg.backend);
        cfg.backend = xstrdup("kubernetes");
        cfg.kubeconfig = xstrdup(argv[2]);
    } else {
        cfg.engine = xstrdup(argv[2]);
    }
    struct backend *b = NULL;
    if (backends_init(&err) == 0)
        b = backends_open(&cfg, environ, &err);
    if (!b) {
        fprintf(stderr, "backend-conformance: %s\n", err_msg(&err));
        err_clear(&err);
        config_free(&cfg);
        return 2;
    }
    struct conformance_target t = {.name = argv[1], .b = b, .image = argv[3], .real = true};
    int failed = conformance_run(argv[1], &t);
    backend_free(b);
    backends_cleanup();
    config_free(&cfg);
    return failed ? 1 : 0;
}
