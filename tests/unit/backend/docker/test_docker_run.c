/* The Docker backend through a sandbox's run against the fake Engine API
 * (tests/fake_engine), where it reads the engine rather than passing it
 * on: how a program's exit is reported (Docker's OOMKilled trusted and
 * asked again when it comes late, Podman's guessed from the exit), the
 * runtime Podman would ignore refused, and how a failed attach, a stalled
 * start and an attach stream cut mid-frame are told. The sandbox layer's
 * side of the same runs is tests/unit/sandbox/run/'s, over the fake
 * backend. Every container made is removed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "unit/backend/docker/docker_rig.h"
#include "unit/rig.h"

static int setup(void **state)
{
    struct fake_engine *fe = fake_engine_start();
    *state = fe;
    return fe ? 0 : -1;
}

static int teardown(void **state)
{
    struct fake_engine *fe = *state;
    size_t left = fake_engine_live(fe);
    fake_engine_stop(fe);
    if (left != 0)
        fail_msg("%zu containers left behind", left);
    return 0;
}

/* The Docker backend, its streams attached; with version, it knows the
 * engine's kind first, as main() has it once it asked at start. */
static struct backend *open_backend(struct fake_engine *fe, const char *version)
{
    struct docker_options opts = {.sandbox_io = "attach"};
    struct backend *b = docker_backend_new(fake_engine_socket(fe), NULL, &opts);
    if (version) {
        fake_engine_set_version(fe, version);
        char *name = NULL, *ver = NULL;
        struct err err = ERR_INIT;
        if (backend_version(b, &name, &ver, &err) < 0)
            fail_msg("backend_version: %s", err_msg(&err));
        free(name);
        free(ver);
    }
    return b;
}

/* Creates and starts a sandbox running p (an echo_line program: sent a
 * line, it ends by itself), reads its streams to their end and returns
 * the last read's value (0: a clean end; -1 with err). */
static long run_to_end(struct fake_engine *fe, struct backend *b, const struct fake_program *p,
                       const char *runtime, char **id, struct err *err)
{
    fake_engine_set_program(fe, p);
    struct backend_spec spec = docker_rig_spec("img:1");
    spec.runtime = runtime;
    struct backend_stream *s = NULL;
    if (docker_rig_create_start(b, &spec, false, 0, id, &s, err) != 0 ||
        backend_stream_send(s, "hi\n", 3, FAKE_HANG_GUARD_MS, err) < 0)
        fail_msg("setting the sandbox up: %s", err_msg(err));
    long n = docker_rig_drain(s, err);
    backend_stream_close(s);
    return n;
}

/* Runs p to its end and checks its exit as backend_wait reports it: an
 * OOM kill or not, and its code. Returns the container's id (removed). */
static char *expect_exit(struct fake_engine *fe, struct backend *b, const struct fake_program *p,
                         const char *runtime, bool oom_killed, int exit_code)
{
    struct err err = ERR_INIT;
    struct backend_state st = {.running = true};
    char *id = NULL;
    if (run_to_end(fe, b, p, runtime, &id, &err) != 0)
        fail_msg("the stream: %s", err_msg(&err));
    if (backend_wait(b, id, FAKE_HANG_GUARD_MS, &st, &err) < 0)
        fail_msg("backend_wait: %s", err_msg(&err));
    assert_false(st.running);
    assert_int_equal(st.oom_killed, oom_killed);
    assert_int_equal(st.exit_code, exit_code);
    assert_int_equal(backend_remove(b, id, &err), 0);
    return id;
}

/* A SIGKILL (by the kernel's OOM killer or not) and a segfault. */
static const struct fake_program killed = {.echo_line = true, .exit_code = 137};
static const struct fake_program crashed = {.echo_line = true, .exit_code = 139};

/* Docker's OOMKilled is trusted; one that comes after the exit (the
 * runtime's OOM event late) is asked for again; a SIGKILL Docker does
 * not call an OOM kill, asked again, is just a signal. */
static void test_oom_flag_docker(void **state)
{
    struct fake_engine *fe = *state;
    struct backend *b = open_backend(fe, NULL); /* the fake's own: Docker */
    char *name = NULL, *ver = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(backend_version(b, &name, &ver, &err), 0);
    assert_string_equal(name, "Docker Engine");
    free(name);
    free(ver);
    struct fake_program oom = {.echo_line = true, .exit_code = 137, .oom_killed = true};
    char *id = expect_exit(fe, b, &oom, NULL, true, 137);
    assert_int_equal(fake_engine_count(fe, FAKE_OP_WAIT, id), 1);
    assert_int_equal(fake_engine_count(fe, FAKE_OP_INSPECT, id), 1);
    free(id);

    struct fake_program late = oom;
    late.oom_flag_late = 2;
    id = expect_exit(fe, b, &late, NULL, true, 137);
    assert_int_equal(fake_engine_count(fe, FAKE_OP_INSPECT, id), 3);
    free(id);

    free(expect_exit(fe, b, &killed, NULL, false, 137));
    backend_free(b);
}

/* Under gVisor Docker's OOMKilled comes late or never: there, as on
 * Podman, a SIGKILL the daemon did not send is the memory limit's, and
 * is not asked about again; other exits and runtimes stay as they are. */
static void test_oom_heuristic_gvisor(void **state)
{
    struct fake_engine *fe = *state;
    struct backend *b = open_backend(fe, NULL);
    char *name = NULL, *ver = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(backend_version(b, &name, &ver, &err), 0);
    free(name);
    free(ver);
    char *id = expect_exit(fe, b, &killed, "runsc", true, 137);
    assert_int_equal(fake_engine_count(fe, FAKE_OP_INSPECT, id), 1);
    free(id);
    free(expect_exit(fe, b, &crashed, "runsc-kvm", false, 139));
    free(expect_exit(fe, b, &killed, "crun", false, 137));
    backend_free(b);
}

/* Where OOMKilled cannot be trusted (Podman 4), exit 137 under a memory
 * limit counts as an OOM kill; other exits stay what they are. */
static void test_oom_heuristic_podman(void **state)
{
    struct fake_engine *fe = *state;
    struct backend *b = open_backend(fe, PODMAN_VERSION);
    free(expect_exit(fe, b, &killed, NULL, true, 137));
    free(expect_exit(fe, b, &crashed, NULL, false, 139));
    backend_free(b);
}

/* Podman's compatible API ignores a container's runtime: a spec that asks
 * for one fails before any container exists, rather than running under
 * Podman's own; a spec without one is created. */
static void test_runtime_on_podman(void **state)
{
    struct fake_engine *fe = *state;
    struct backend *b = open_backend(fe, PODMAN_VERSION);
    struct backend_spec spec = docker_rig_spec("img:1");
    spec.runtime = "runsc";
    char *id = NULL;
    struct backend_pending *pending = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(backend_create(b, &spec, false, 0, &id, &pending, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    assert_non_null(strstr(err_msg(&err), "runtime 'runsc'"));
    assert_non_null(strstr(err_msg(&err), "Podman"));
    assert_int_equal(fake_engine_count(fe, FAKE_OP_CREATE, NULL), 0);
    err_clear(&err);
    spec.runtime = NULL;
    assert_int_equal(backend_create(b, &spec, false, 0, &id, &pending, &err), 0);
    assert_int_equal(fake_engine_count(fe, FAKE_OP_CREATE, NULL), 1);
    backend_pending_free(b, pending);
    assert_int_equal(backend_remove(b, id, &err), 0);
    free(id);
    backend_free(b);
}

/* Creates a sandbox, whose start (by deadline_ms) must fail: no stream;
 * *id the container's, err why. */
static void start_fails(struct backend *b, double deadline_ms, char **id, struct err *err)
{
    struct backend_spec spec = docker_rig_spec("img:1");
    struct backend_stream *s = NULL;
    assert_int_equal(docker_rig_create_start(b, &spec, false, deadline_ms, id, &s, err), -1);
    assert_null(s);
}

/* An attach the engine refuses fails start with the engine's answer, and
 * the container is never started. */
static void test_attach_fails(void **state)
{
    struct fake_engine *fe = *state;
    struct backend *b = open_backend(fe, NULL);
    fake_engine_fault(fe, FAKE_OP_ATTACH, 500, NULL, 1);
    char *id = NULL;
    struct err err = ERR_INIT;
    start_fails(b, 0, &id, &err);
    assert_non_null(strstr(err_msg(&err), "attach"));
    assert_non_null(strstr(err_msg(&err), "HTTP 500"));
    assert_non_null(strstr(err_msg(&err), "injected attach failure"));
    err_clear(&err);
    assert_int_equal(fake_engine_count(fe, FAKE_OP_START, NULL), 0);
    assert_int_equal(backend_remove(b, id, &err), 0);
    free(id);
    backend_free(b);
}

/* A start the engine does not answer ends at the deadline given, naming
 * the request; the engine still holds it. */
static void test_stalled_start(void **state)
{
    struct fake_engine *fe = *state;
    struct backend *b = open_backend(fe, NULL);
    fake_engine_fault(fe, FAKE_OP_START, FAKE_STALL, NULL, 1);
    char *id = NULL;
    struct err err = ERR_INIT;
    start_fails(b, util_now_ms() + 300, &id, &err);
    assert_int_equal(err.code, ERR_TIMEOUT);
    assert_non_null(strstr(err_msg(&err), "did not answer"));
    assert_non_null(strstr(err_msg(&err), "/start"));
    err_clear(&err);
    assert_true(fake_engine_wait_held(fe, 1, FAKE_HANG_GUARD_MS));
    assert_int_equal(backend_remove(b, id, &err), 0);
    fake_engine_release(fe);
    free(id);
    backend_free(b);
}

/* The attach stream broken inside a frame: output is missing, and the
 * error names the engine. */
static void test_stream_cut_mid_frame(void **state)
{
    struct fake_engine *fe = *state;
    struct backend *b = open_backend(fe, NULL);
    struct fake_program cut = {
        .echo_line = true, .out = "partial\n", .out_len = 8, .end = FAKE_END_CUT};
    char *id = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(run_to_end(fe, b, &cut, NULL, &id, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    assert_non_null(strstr(err_msg(&err), "in the middle of a frame"));
    assert_non_null(strstr(err_msg(&err), fake_engine_socket(fe)));
    err_clear(&err);
    assert_int_equal(backend_remove(b, id, &err), 0);
    free(id);
    backend_free(b);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_oom_flag_docker),      T(test_oom_heuristic_podman), T(test_oom_heuristic_gvisor),
        T(test_runtime_on_podman),    T(test_attach_fails),         T(test_stalled_start),
        T(test_stream_cut_mid_frame),
    };
#undef T
    return cmocka_run_group_tests_name("docker_run", tests, rig_group_setup, rig_group_teardown);
}
