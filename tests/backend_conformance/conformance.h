/* The backend conformance suite: what every implementation of the ops
 * table (src/backend/backend.h) must do, checked through that table alone.
 * create, start, the streams, wait, kill, remove, list, inspect and ping
 * with their contracts (exit codes, the two output streams kept apart,
 * output whole, kills that end runs, removal that is final and idempotent,
 * the marks list reports, a missing image named), the hardening seen from
 * inside a sandbox, and faults (a failure at each step, a stall cut by its
 * deadline, a stream cut mid-frame, an outage).
 *
 * It runs against the fake backend and the Docker backend over the fake
 * engine (tests/unit/backend/test_conformance.c), and the Docker backend
 * over real Docker and Podman (engine_main.c, from the integration
 * passes). A new backend joins with a target of its own. */
#ifndef MCPSBX_TEST_CONFORMANCE_H
#define MCPSBX_TEST_CONFORMANCE_H

#include <stdbool.h>

#include "backend/backend.h"

/* What a case wants its next sandbox to do. A real engine runs the
 * command the suite gives (a shell in the target's image); a fake is
 * scripted to do the same by behave(). Each reads one line of stdin and
 * echoes it on stdout first, then: */
enum conf_behaviour {
    CONF_ECHO,   /* writes "to stderr\n" on stderr, exits 3 */
    CONF_SLEEP,  /* runs until killed */
    CONF_FLOOD,  /* writes CONF_FLOOD_BYTES of 'x' on stdout, exits 0 */
    CONF_OOM,    /* goes over its memory limit */
    CONF_CUT,    /* its stream breaks in the middle of a frame (fakes only) */
    CONF_REPORT, /* reports its hardening (real sandboxes only) */
};

#define CONF_FLOOD_BYTES (1u << 20)

/* The operations faults are injected into. */
enum conf_step {
    CONF_STEP_PING,
    CONF_STEP_CREATE,
    CONF_STEP_START,
    CONF_STEP_WAIT,
    CONF_STEP_KILL,
    CONF_STEP_REMOVE,
    CONF_STEP_INSPECT,
    CONF_STEP_LIST,
    CONF_STEP_COUNT
};

struct conformance_target {
    const char *name;
    struct backend *b;
    const char *image; /* a real engine's: has sh, head, tr, sleep and python3 */
    /* Sandboxes run the commands given: the hardening is observable. */
    bool real;
    /* A fake's scripting, NULL on real engines (the fault cases skip). */
    void (*behave)(void *ctx, enum conf_behaviour what);
    void (*missing)(void *ctx, const char *image);      /* the next create of image finds none */
    void (*fail_next)(void *ctx, enum conf_step step);  /* the next call of step fails */
    void (*stall_next)(void *ctx, enum conf_step step); /* the next call of step stalls */
    void (*release)(void *ctx);                         /* stalls end; calls are served */
    void (*outage)(void *ctx, bool on);
    void *ctx;
};

/* Runs the suite as a cmocka group named group; returns cmocka's count
 * of failed tests. */
int conformance_run(const char *group, struct conformance_target *t);

#endif
