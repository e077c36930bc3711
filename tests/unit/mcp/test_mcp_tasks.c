/* Tasks on the 2026-07-28 wire as the protocol layer sees them: a run from
 * a client that declared the extension answers with a handle at once and
 * is polled to its end; cancelling one stops its run; another caller's
 * task is unknown; and, under a stress of threads starting, polling and
 * cancelling tasks at once, every task ends and nothing leaks. Over the
 * fake backend: down (runs fail at once) or stalled (runs hang until
 * cancelled). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "unit/langs.h"
#include "unit/server_rig.h"
#include "unit/json_get.h"
#include "unit/mcp/sink.h"

#define META(caps)                                                                                 \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":" caps "}"
#define WITH_TASKS META("{\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}}")
#define CALL_PY                                                                                    \
    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"               \
    "\"run_python_code\",\"arguments\":{\"code\":\"print(1)\"}," WITH_TASKS "}}"
#define TASK_METHOD(method)                                                                        \
    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"" method "\",\"params\":{\"taskId\":\"%s\","      \
    "%s}}"

/* Sends one request to s and returns its one reply, parsed (caller puts). */
static json_object *ask(struct mcp_session *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static json_object *ask(struct mcp_session *s, const char *fmt, ...)
{
    struct sink k;
    sink_init(&k);
    va_list ap;
    va_start(ap, fmt);
    send_vfmt(s, &k, fmt, ap);
    va_end(ap);
    assert_int_equal(sink_wait(&k, 1), 1);
    json_object *r = parsed(&k, 0);
    sink_free(&k);
    return r;
}

static const char *result_str(json_object *r, const char *key)
{
    return json_object_get_string(json_get(json_get(r, "result"), key));
}

static int error_code(json_object *r)
{
    return json_object_get_int(json_get(json_get(r, "error"), "code"));
}

/* Polls task id until it is no longer working (a hang guard of 20 s);
 * the last tasks/get reply (caller puts). */
static json_object *poll_done(struct mcp_session *s, const char *id)
{
    double until = util_now_ms() + 20000;
    for (int n = 100;; n++) {
        json_object *r = ask(s, TASK_METHOD("tasks/get"), n, id, WITH_TASKS);
        const char *st = result_str(r, "status");
        if (!st || strcmp(st, "working") != 0 || util_now_ms() > until)
            return r;
        json_object_put(r);
        const struct timespec pause = {0, 5 * 1000000L};
        nanosleep(&pause, NULL);
    }
}

static void test_task_lifecycle(void **state)
{
    (void)state;
    struct rig g;
    rig_init(&g, RIG_DOWN);
    rig_start(&g);
    struct mcp_session *s = mcp_session_new_stateless(g.srv, "stdio");
    json_object *r = ask(s, CALL_PY, 1);
    assert_string_equal(result_str(r, "resultType"), "task");
    assert_string_equal(result_str(r, "status"), "working");
    char id[64];
    snprintf(id, sizeof(id), "%s", result_str(r, "taskId"));
    json_object_put(r);

    r = poll_done(s, id);
    assert_string_equal(result_str(r, "status"), "completed");
    assert_string_equal(result_str(r, "resultType"), "complete");
    json_object *res = json_get(json_get(r, "result"), "result");
    assert_true(json_object_get_boolean(json_get(res, "isError"))); /* the backend is down */
    json_object_put(r);

    /* Another principal's task is no task at all; nor is a made-up one. */
    struct mcp_session *other = mcp_session_new_stateless(g.srv, "token:0123456789abcdef");
    r = ask(other, TASK_METHOD("tasks/get"), 2, id, WITH_TASKS);
    assert_int_equal(error_code(r), JSONRPC_INVALID_PARAMS);
    json_object_put(r);
    r = ask(s, TASK_METHOD("tasks/cancel"), 3, "00", WITH_TASKS);
    assert_int_equal(error_code(r), JSONRPC_INVALID_PARAMS);
    json_object_put(r);
    /* Without the extension declared: -32021, naming it. */
    r = ask(s, TASK_METHOD("tasks/get"), 4, id, META("{}"));
    assert_int_equal(error_code(r), -32021);
    json_get(json_get(json_get(json_get(r, "error"), "data"), "requiredCapabilities"),
             "extensions");
    json_object_put(r);
    /* A finished task's cancel is acknowledged and changes nothing. */
    r = ask(s, TASK_METHOD("tasks/cancel"), 5, id, WITH_TASKS);
    assert_string_equal(result_str(r, "resultType"), "complete");
    json_object_put(r);
    r = ask(s, TASK_METHOD("tasks/get"), 6, id, WITH_TASKS);
    assert_string_equal(result_str(r, "status"), "completed");
    json_object_put(r);
    mcp_session_free(other);
    mcp_session_free(s);
    rig_fini(&g);
}

static void test_task_cancel(void **state)
{
    (void)state;
    struct rig g;
    rig_init(&g, RIG_STALLED);
    rig_start(&g);
    struct mcp_session *s = mcp_session_new_stateless(g.srv, "stdio");
    json_object *r = ask(s, CALL_PY, 1);
    char id[64];
    snprintf(id, sizeof(id), "%s", result_str(r, "taskId"));
    json_object_put(r);
    /* The request's session may go: the task does not. */
    mcp_session_free(s);
    s = mcp_session_new_stateless(g.srv, "stdio");
    r = ask(s, TASK_METHOD("tasks/get"), 2, id, WITH_TASKS);
    assert_string_equal(result_str(r, "status"), "working");
    json_object_put(r);
    r = ask(s, TASK_METHOD("tasks/cancel"), 3, id, WITH_TASKS);
    assert_string_equal(result_str(r, "resultType"), "complete");
    json_object_put(r);
    r = poll_done(s, id);
    assert_string_equal(result_str(r, "status"), "cancelled");
    json_object_put(r);
    mcp_session_free(s);
    rig_fini(&g); /* waits for the cancelled run: none may be left */
}

/* 2025-11-25: a task asked with params.task on an initialized session; a
 * tasks/result waiting for it is answered (an error) when it is
 * cancelled, from the thread that ends it. */
static void test_task_2025_result_waits(void **state)
{
    (void)state;
    struct rig g;
    rig_init(&g, RIG_STALLED);
    rig_start(&g);
    struct mcp_session *s = mcp_session_new(g.srv, "stdio");
    json_object_put(ask(s,
                        "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"initialize\",\"params\":{"
                        "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                        "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
                        0));
    json_object *r =
        ask(s,
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
            "\"name\":\"run_python_code\",\"arguments\":{\"code\":\"1\"},\"task\":{}}}",
            1);
    char id[64];
    snprintf(id, sizeof(id), "%s",
             json_object_get_string(json_get(json_get(json_get(r, "result"), "task"), "taskId")));
    json_object_put(r);
    struct sink waiting;
    sink_init(&waiting);
    char *msg = xasprintf(
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tasks/result\",\"params\":{\"taskId\":\"%s\"}}",
        id);
    send_text(s, &waiting, msg);
    free(msg);
    assert_int_equal(waiting.n, 0); /* it waits */
    r = ask(s,
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tasks/cancel\",\"params\":{"
            "\"taskId\":\"%s\"}}",
            3, id);
    assert_string_equal(result_str(r, "status"), "cancelled");
    json_object_put(r);
    assert_int_equal(sink_wait(&waiting, 1), 1);
    r = parsed(&waiting, 0);
    assert_int_equal(error_code(r), JSONRPC_SERVER_ERROR);
    json_object_put(r);
    sink_free(&waiting);
    mcp_session_free(s);
    rig_fini(&g);
}

/* Threads start tasks, poll them and cancel every other one, all at once;
 * then every task has ended, and the server stops with none running. */
#define STRESS_THREADS 4
#define STRESS_TASKS   8

struct stress {
    struct mcp_server *srv;
    int index;
    int ended;
};

static void *stress_main(void *arg)
{
    struct stress *st = arg;
    struct mcp_session *s = mcp_session_new_stateless(st->srv, "stdio");
    char ids[STRESS_TASKS][64];
    for (int i = 0; i < STRESS_TASKS; i++) {
        json_object *r = ask(s, CALL_PY, i);
        snprintf(ids[i], sizeof(ids[i]), "%s", result_str(r, "taskId"));
        json_object_put(r);
        if (i % 2)
            json_object_put(ask(s, TASK_METHOD("tasks/cancel"), 1000 + i, ids[i], WITH_TASKS));
    }
    for (int i = 0; i < STRESS_TASKS; i++) {
        json_object *r = poll_done(s, ids[i]);
        const char *status = result_str(r, "status");
        st->ended += status && strcmp(status, "working") != 0;
        json_object_put(r);
    }
    mcp_session_free(s);
    return NULL;
}

static void test_task_stress(void **state)
{
    (void)state;
    struct rig g;
    rig_init(&g, RIG_DOWN);
    rig_start(&g);
    pthread_t threads[STRESS_THREADS];
    struct stress st[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; i++) {
        st[i] = (struct stress){.srv = g.srv, .index = i};
        assert_int_equal(pthread_create(&threads[i], NULL, stress_main, &st[i]), 0);
    }
    for (int i = 0; i < STRESS_THREADS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(st[i].ended, STRESS_TASKS);
    }
    rig_fini(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_lifecycle),
        cmocka_unit_test(test_task_cancel),
        cmocka_unit_test(test_task_2025_result_waits),
        cmocka_unit_test(test_task_stress),
    };
    return cmocka_run_group_tests_name("mcp_tasks", tests, NULL, NULL);
}
