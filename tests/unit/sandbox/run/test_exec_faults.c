/* exec.c when a run does not simply work, over the fake backend
 * (exec_rig.h): its time limit, a cancel, the output cap, memory, the
 * backend failing or stalling at each step, the stream cut mid-frame, and
 * completion records that are too big, unreadable or the runner's error.
 * Whatever happens, the run's sandbox is removed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <string.h>

#include "unit/sandbox/run/exec_rig.h"

/* ---- time limit, cancel, output cap ---------------------------------------- */

static void test_timeout(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "tick\n", .out_len = 5, .run_ms = FAKE_RUN_FOREVER};
    fake_backend_set_program(g->fb, &p);
    rig_open(g);
    struct run req = request("while True: pass");
    req.timeout_ms = 200;
    struct exec_result res;
    exec_result_init(&res);
    run_ok(g, &req, &res);
    assert_int_equal(res.status, EXEC_TIMEOUT);
    assert_false(res.has_exit_code);
    assert_contains(res.message, "200 ms (timeout)");
    assert_true(res.duration_ms >= 200);
    char id[FAKE_BACKEND_ID_MAX + 1];
    last_sandbox(g, id);
    assert_removed(g, id);
    /* It never ends by itself: the removal killed it. */
    struct fake_sandbox_info info;
    assert_true(fake_backend_info(g->fb, id, &info));
    assert_true(info.killed);
    exec_result_free(&res);
}

struct bg_run {
    struct rig *g;
    struct run req;
    struct exec_cancel *cancel;
    struct exec_result res;
    struct err err;
    int rc;
    pthread_t th;
};

/* Runs exec_run off the test's thread; only the test's thread asserts. */
static void *bg_main(void *arg)
{
    struct bg_run *b = arg;
    b->req.cancel = b->cancel;
    b->rc = exec_run(b->g->exec, &b->req, &b->res, &b->err);
    return NULL;
}

static void test_cancel_mid_run(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "working\n", .out_len = 8, .run_ms = FAKE_RUN_FOREVER};
    fake_backend_set_program(g->fb, &p);
    rig_open(g);
    struct bg_run b = {.g = g, .req = request("import time; time.sleep(60)"), .err = ERR_INIT};
    b.cancel = exec_cancel_new();
    exec_result_init(&b.res);
    assert_int_equal(pthread_create(&b.th, NULL, bg_main, &b), 0);
    char id[FAKE_BACKEND_ID_MAX + 1];
    bool running = fake_backend_wait_running(g->fb, id, sizeof(id), GUARD);
    exec_cancel(b.cancel); /* before any assert: the run must end either way */
    pthread_join(b.th, NULL);
    assert_true(running);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.res.status, EXEC_CANCELLED);
    assert_contains(b.res.message, "cancelled");
    assert_true(exec_cancelled(b.cancel));
    assert_removed(g, id);
    struct fake_sandbox_info info;
    assert_true(fake_backend_info(g->fb, id, &info));
    assert_true(info.killed);
    exec_result_free(&b.res);
    exec_cancel_free(b.cancel);
}

/* Cancelled before it started: the sandbox it made goes too, unstarted. */
static void test_cancel_before_run(void **state)
{
    struct rig *g = *state;
    rig_open(g);
    struct exec_cancel *c = exec_cancel_new();
    exec_cancel(c);
    struct run req = request("print(1)");
    req.cancel = c;
    struct exec_result res;
    exec_result_init(&res);
    run_ok(g, &req, &res);
    assert_int_equal(res.status, EXEC_CANCELLED);
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_CREATE, NULL), 1);
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_START, NULL), 0);
    assert_last_removed(g);
    exec_result_free(&res);
    exec_cancel_free(c);
}

/* The cap counts stdout and stderr together; the program is stopped. */
static void test_output_limit(void **state)
{
    struct rig *g = *state;
    char out[600], err_text[600];
    memset(out, 'o', sizeof(out));
    memset(err_text, 'e', sizeof(err_text));
    struct fake_program p = {.out = out,
                             .out_len = sizeof(out),
                             .err = err_text,
                             .err_len = sizeof(err_text),
                             .run_ms = FAKE_RUN_FOREVER};
    fake_backend_set_program(g->fb, &p);
    g->cfg.max_output_bytes = 1000;
    rig_open(g);
    struct run req = request("print('o' * 600)");
    struct exec_result res;
    exec_result_init(&res);
    run_ok(g, &req, &res);
    assert_int_equal(res.status, EXEC_OUTPUT_LIMIT);
    assert_true(res.truncated);
    assert_int_equal(res.out.len, 600);
    assert_int_equal(res.err.len, 400);
    assert_contains(res.message, "1000-byte limit");
    char id[FAKE_BACKEND_ID_MAX + 1];
    last_sandbox(g, id);
    assert_removed(g, id);
    struct fake_sandbox_info info;
    assert_true(fake_backend_info(g->fb, id, &info));
    assert_true(info.killed);
    exec_result_free(&res);
}

/* ---- memory, and exits without a record ---------------------------------------- */

/* Runs one request with the program given; returns the result's status
 * (res filled; the sandbox checked removed). */
static enum exec_status run_program(struct rig *g, const struct fake_program *p,
                                    struct exec_result *res)
{
    fake_backend_set_program(g->fb, p);
    if (!g->exec)
        rig_open(g);
    struct run req = request("x = 'a' * 10**10");
    struct err err = ERR_INIT;
    int rc = exec_run(g->exec, &req, res, &err);
    assert_int_equal(rc, res->status == EXEC_ERROR ? -1 : 0);
    err_clear(&err);
    assert_last_removed(g);
    return res->status;
}

/* The runner saw MemoryError: its record says so. */
static void test_oom_memory_error(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.exit_code = 1, .memory_error = true};
    struct exec_result res;
    exec_result_init(&res);
    assert_int_equal(run_program(g, &p, &res), EXEC_OOM);
    assert_true(res.has_exit_code);
    assert_int_equal(res.exit_code, 1);
    assert_contains(res.message, "ran out of memory (limit 128 MiB)");
    exec_result_free(&res);
}

/* No record: the backend's wait says how the program exited, and whether
 * it was killed for memory (the run never guesses from the exit code). */
static void test_exit_without_record(void **state)
{
    struct rig *g = *state;
    struct fake_program oom = {.end = FAKE_END_EXIT, .exit_code = 137, .oom_killed = true};
    struct exec_result res;
    exec_result_init(&res);
    assert_int_equal(run_program(g, &oom, &res), EXEC_OOM);
    assert_int_equal(res.exit_code, 137);
    assert_contains(res.message, "more than 128 MiB");
    char id[FAKE_BACKEND_ID_MAX + 1];
    last_sandbox(g, id);
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_WAIT, id), 1);
    /* A SIGKILL the backend does not call an OOM kill is just a signal;
     * so are other exits without a record. */
    struct fake_program sigkill = {.end = FAKE_END_EXIT, .exit_code = 137};
    assert_int_equal(run_program(g, &sigkill, &res), EXEC_OK);
    assert_int_equal(res.exit_code, 137);
    assert_contains(res.message, "killed by signal 9");
    struct fake_program crash = {.end = FAKE_END_EXIT, .exit_code = 139};
    assert_int_equal(run_program(g, &crash, &res), EXEC_OK);
    assert_int_equal(res.exit_code, 139);
    assert_contains(res.message, "signal 11");
    struct fake_program plain = {.end = FAKE_END_EXIT, .exit_code = 2};
    assert_int_equal(run_program(g, &plain, &res), EXEC_OK);
    assert_int_equal(res.exit_code, 2);
    assert_null(res.message);
    exec_result_free(&res);
}

/* ---- the backend failing at each step ------------------------------------------ */

/* Runs print(1) against the fault already injected; returns exec_run's
 * value, the result in res. */
static int run_faulty(struct rig *g, struct exec_result *res, struct err *err)
{
    if (!g->exec)
        rig_open(g);
    struct run req = request("print(1)");
    exec_result_init(res);
    return exec_run(g->exec, &req, res, err);
}

static void test_create_fails(void **state)
{
    struct rig *g = *state;
    fake_backend_fail(g->fb, FAKE_STEP_CREATE, ERR_ENGINE, 1);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "injected create failure");
    err_clear(&err);
    /* Nothing was made, so nothing is to start or remove. */
    assert_int_equal(fake_backend_live(g->fb), 0);
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_START, NULL), 0);
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_REMOVE, NULL), 0);
    exec_result_free(&res);

    /* A missing image is named. */
    fake_backend_set_missing_image(g->fb, PY->image);
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "mcp-sandboxd-python:latest");
    err_clear(&err);
    assert_int_equal(fake_backend_live(g->fb), 0);
    exec_result_free(&res);
}

/* Start failing (its streams could not connect, the backend refused): the
 * sandbox made is removed; a NULL err is allowed, the result still says
 * why. */
static void test_start_fails(void **state)
{
    struct rig *g = *state;
    fake_backend_fail(g->fb, FAKE_STEP_START, ERR_ENGINE, 1);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "injected start failure");
    assert_string_equal(res.message, err_msg(&err));
    err_clear(&err);
    assert_last_removed(g);
    exec_result_free(&res);

    fake_backend_fail(g->fb, FAKE_STEP_START, ERR_ENGINE, 1);
    assert_int_equal(run_faulty(g, &res, NULL), -1);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "injected start failure");
    assert_last_removed(g);
    exec_result_free(&res);
}

/* The stream ended without a record and the backend cannot say how the
 * program exited: an error of the run, not a guessed status. */
static void test_wait_fails(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "bye\n", .out_len = 4, .end = FAKE_END_EXIT, .exit_code = 1};
    fake_backend_set_program(g->fb, &p);
    fake_backend_fail(g->fb, FAKE_STEP_WAIT, ERR_ENGINE, 1);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_false(res.has_exit_code);
    assert_contains(res.message, "exit status is unknown");
    assert_contains(res.message, "injected wait failure");
    assert_string_equal(res.message, err_msg(&err));
    assert_string_equal(buf_cstr(&res.out), "bye\n");
    err_clear(&err);
    assert_last_removed(g);
    exec_result_free(&res);
}

/* A removal the backend refuses does not touch the result; the reaper
 * retries it until the backend confirms, and asks no more after that (no
 * sweep takes the removed sandbox for one left behind). */
static void test_remove_fails_then_retried(void **state)
{
    struct rig *g = *state;
    fake_backend_fail(g->fb, FAKE_STEP_REMOVE, ERR_ENGINE, 2);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), 0);
    assert_int_equal(res.status, EXEC_OK);
    assert_int_equal(res.exit_code, 0);
    char id[FAKE_BACKEND_ID_MAX + 1];
    last_sandbox(g, id);
    assert_removed(g, id);
    rig_close(g); /* the reaper's threads, the sweeper among them, have ended */
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_REMOVE, id), 3);
    exec_result_free(&res);
}

/* A stalled backend cannot hold a run past its start deadline, which is
 * the call's own time limit: the run timed out before its code ran, and
 * the sandbox it made is removed. */
static void test_stalled_start(void **state)
{
    struct rig *g = *state;
    fake_backend_stall(g->fb, FAKE_STEP_START, 1);
    rig_open(g);
    struct run req = request("print(1)");
    req.start_by_ms = util_now_ms() + 300;
    struct exec_result res;
    exec_result_init(&res);
    struct err err = ERR_INIT;
    assert_int_equal(exec_run(g->exec, &req, &res, &err), -1);
    assert_int_equal(err.code, ERR_TIMEOUT);
    assert_int_equal(res.status, EXEC_TIMEOUT);
    assert_false(res.has_exit_code);
    assert_contains(res.message, "not ready within timeout_ms");
    assert_contains(res.message, "the code never ran");
    assert_contains(res.message, "start took too long");
    err_clear(&err);
    assert_last_removed(g);
    exec_result_free(&res);
}

/* ---- the stream, and the completion record ---------------------------------------- */

/* The stream broke inside a frame: the output is incomplete, so the run
 * failed, whatever the backend says of the exit. What did arrive is kept
 * (live output showed it already). */
static void test_stream_cut_mid_frame(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "partial\n", .out_len = 8, .end = FAKE_END_CUT};
    fake_backend_set_program(g->fb, &p);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_false(res.has_exit_code);
    assert_contains(res.message, "in the middle of a frame");
    assert_string_equal(res.message, err_msg(&err));
    assert_string_equal(buf_cstr(&res.out), "partial\ncut short!");
    err_clear(&err);
    char id[FAKE_BACKEND_ID_MAX + 1];
    last_sandbox(g, id);
    assert_int_equal(fake_backend_count(g->fb, FAKE_STEP_WAIT, id), 0);
    assert_removed(g, id);
    exec_result_free(&res);
}

static void test_oversized_record(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "x\n", .out_len = 2, .end = FAKE_END_BIG_RECORD};
    fake_backend_set_program(g->fb, &p);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "completion record over 4096 bytes");
    err_clear(&err);
    assert_last_removed(g);
    exec_result_free(&res);
}

static void test_runner_error(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.exit_code = 76, .runner_error = "request is not JSON"};
    fake_backend_set_program(g->fb, &p);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(err.code, ERR_INTERNAL);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_true(res.has_exit_code);
    assert_int_equal(res.exit_code, 76);
    assert_contains(res.message, "the sandbox runner failed: request is not JSON");
    assert_string_equal(res.message, err_msg(&err));
    err_clear(&err);
    assert_last_removed(g);
    exec_result_free(&res);
}

static void test_bad_record(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "x\n", .out_len = 2, .end = FAKE_END_BAD_RECORD};
    fake_backend_set_program(g->fb, &p);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "unreadable completion record");
    assert_string_equal(res.message, err_msg(&err));
    assert_string_equal(buf_cstr(&res.out), "x\n");
    err_clear(&err);
    assert_last_removed(g);
    exec_result_free(&res);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_timeout),           T(test_cancel_mid_run),
        T(test_cancel_before_run), T(test_output_limit),
        T(test_oom_memory_error),  T(test_exit_without_record),
        T(test_create_fails),      T(test_start_fails),
        T(test_wait_fails),        T(test_remove_fails_then_retried),
        T(test_stalled_start),     T(test_stream_cut_mid_frame),
        T(test_oversized_record),  T(test_runner_error),
        T(test_bad_record),
    };
#undef T
    return cmocka_run_group_tests_name("exec_faults", tests, NULL, NULL);
}
