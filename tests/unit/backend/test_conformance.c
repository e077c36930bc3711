/* The backend conformance suite (tests/backend_conformance) against the
 * fake backend the layers above are tested with, and against the Docker
 * backend over the fake engine: the fake must behave as the real one does,
 * or the tests above the seam would prove nothing. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdlib.h>
#include <string.h>

#include "backend/docker/docker.h"
#include "backend/docker/engine_http.h"
#include "backend_conformance/conformance.h"
#include "fake_backend/fake_backend.h"
#include "fake_engine/fake_engine.h"

static struct fake_program program_for(enum conf_behaviour what)
{
    static char flood[CONF_FLOOD_BYTES];
    struct fake_program p = {.echo_line = true};
    switch (what) {
    case CONF_ECHO:
        p.err = "to stderr\n";
        p.err_len = 10;
        p.exit_code = 3;
        break;
    case CONF_SLEEP:
        p.run_ms = FAKE_RUN_FOREVER;
        break;
    case CONF_FLOOD:
        memset(flood, 'x', sizeof(flood));
        p.out = flood;
        p.out_len = sizeof(flood);
        break;
    case CONF_OOM:
        p.exit_code = 137;
        p.oom_killed = true;
        break;
    case CONF_CUT:
        p.end = FAKE_END_CUT;
        break;
    case CONF_REPORT:
        break;
    }
    return p;
}

/* ---- the fake backend ------------------------------------------------------------ */

static const enum fake_step FB_STEPS[CONF_STEP_COUNT] = {
    [CONF_STEP_PING] = FAKE_STEP_PING,       [CONF_STEP_CREATE] = FAKE_STEP_CREATE,
    [CONF_STEP_START] = FAKE_STEP_START,     [CONF_STEP_WAIT] = FAKE_STEP_WAIT,
    [CONF_STEP_KILL] = FAKE_STEP_KILL,       [CONF_STEP_REMOVE] = FAKE_STEP_REMOVE,
    [CONF_STEP_INSPECT] = FAKE_STEP_INSPECT, [CONF_STEP_LIST] = FAKE_STEP_LIST,
};

static void fb_behave(void *ctx, enum conf_behaviour what)
{
    struct fake_program p = program_for(what);
    fake_backend_set_program(ctx, &p);
}

static void fb_missing(void *ctx, const char *image)
{
    fake_backend_set_missing_image(ctx, image);
}

static void fb_fail(void *ctx, enum conf_step step)
{
    fake_backend_fail(ctx, FB_STEPS[step], ERR_ENGINE, 1);
}

static void fb_stall(void *ctx, enum conf_step step)
{
    fake_backend_stall(ctx, FB_STEPS[step], 1);
}

static void fb_release(void *ctx)
{
    fake_backend_release(ctx);
}

static void fb_outage(void *ctx, bool on)
{
    fake_backend_set_outage(ctx, on);
}

/* ---- the Docker backend over the fake engine -------------------------------------- */

static const enum fake_op FE_OPS[CONF_STEP_COUNT] = {
    [CONF_STEP_PING] = FAKE_OP_PING,       [CONF_STEP_CREATE] = FAKE_OP_CREATE,
    [CONF_STEP_START] = FAKE_OP_START,     [CONF_STEP_WAIT] = FAKE_OP_WAIT,
    [CONF_STEP_KILL] = FAKE_OP_KILL,       [CONF_STEP_REMOVE] = FAKE_OP_DELETE,
    [CONF_STEP_INSPECT] = FAKE_OP_INSPECT, [CONF_STEP_LIST] = FAKE_OP_LIST,
};

static void fe_behave(void *ctx, enum conf_behaviour what)
{
    struct fake_program p = program_for(what);
    fake_engine_set_program(ctx, &p);
}

static void fe_missing(void *ctx, const char *image)
{
    char *body = xasprintf("{\"message\":\"No such image: %s\"}", image);
    fake_engine_fault(ctx, FAKE_OP_CREATE, 404, body, 1);
    free(body);
}

static void fe_fail(void *ctx, enum conf_step step)
{
    fake_engine_fault(ctx, FE_OPS[step], 500, NULL, 1);
}

static void fe_stall(void *ctx, enum conf_step step)
{
    fake_engine_fault(ctx, FE_OPS[step], FAKE_STALL, NULL, 1);
}

static void fe_release(void *ctx)
{
    fake_engine_release(ctx);
}

static void fe_outage(void *ctx, bool on)
{
    fake_engine_set_outage(ctx, on);
}

int main(void)
{
    int failed = 0;
    struct fake_backend *fb = fake_backend_new();
    struct conformance_target fake = {.name = "fake-backend",
                                      .b = fake_backend_get(fb),
                                      .image = "conformance:latest",
                                      .behave = fb_behave,
                                      .missing = fb_missing,
                                      .fail_next = fb_fail,
                                      .stall_next = fb_stall,
                                      .release = fb_release,
                                      .outage = fb_outage,
                                      .ctx = fb};
    failed += conformance_run("fake backend", &fake);
    backend_free(fake.b);

    struct err err = ERR_INIT;
    if (engine_http_global_init(&err) < 0)
        return 1;
    struct fake_engine *fe = fake_engine_start();
    if (!fe)
        return 1;
    struct conformance_target docker = {.name = "docker-fake-engine",
                                        .b = docker_backend_new(fake_engine_socket(fe), NULL, NULL),
                                        .image = "conformance:latest",
                                        .behave = fe_behave,
                                        .missing = fe_missing,
                                        .fail_next = fe_fail,
                                        .stall_next = fe_stall,
                                        .release = fe_release,
                                        .outage = fe_outage,
                                        .ctx = fe};
    failed += conformance_run("docker backend, fake engine", &docker);
    backend_free(docker.b);
    fake_engine_stop(fe);
    engine_http_global_cleanup();
    return failed ? 1 : 0;
}
