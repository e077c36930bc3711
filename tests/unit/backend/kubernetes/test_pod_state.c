/* backend/kubernetes/pod_state.c: Pod objects in the API's shapes (as
 * the Pod reference and kubectl show them) read into a sandbox's state:
 * running, an exit, OOM, and the cluster's reasons; malformed ones
 * refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kubernetes/pod_state.h"
#include "unit/json_get.h"

#define CS(state) "\"containerStatuses\": [{\"name\": \"sandbox\", \"state\": {" state "}}]"

static struct pod_state read_ok(const char *text)
{
    json_object *pod = json_parse_or_fail("pod", text);
    struct pod_state s;
    struct err err = ERR_INIT;
    if (pod_state_read(pod, &s, &err) < 0)
        fail_msg("%s: %s", text, err_msg(&err));
    json_object_put(pod);
    return s;
}

static void test_running_and_ends(void **state)
{
    (void)state;
    struct pod_state s = read_ok("{\"status\": {\"phase\": \"Pending\", " CS(
        "\"waiting\": {\"reason\": \"ContainerCreating\"}") "}}");
    assert_false(s.st.running);
    assert_false(s.ended);
    assert_string_equal(s.reason, "");

    s = read_ok("{\"status\": {\"phase\": \"Running\", " CS(
        "\"running\": {\"startedAt\": \"2026-11-28T20:00:00Z\"}") "}}");
    assert_true(s.st.running);
    assert_false(s.ended);
    assert_int_equal(s.st.pid, 0);

    s = read_ok("{\"status\": {\"phase\": \"Failed\", " CS(
        "\"terminated\": {\"exitCode\": 3, \"reason\": \"Error\"}") "}}");
    assert_true(s.ended);
    assert_false(s.st.running);
    assert_int_equal(s.st.exit_code, 3);
    assert_false(s.st.oom_killed);
    assert_string_equal(s.reason, "");

    s = read_ok("{\"status\": {\"phase\": \"Failed\", " CS(
        "\"terminated\": {\"exitCode\": 137, \"reason\": \"OOMKilled\"}") "}}");
    assert_true(s.st.oom_killed);
    assert_int_equal(s.st.exit_code, 137);

    s = read_ok("{\"status\": {\"phase\": \"Succeeded\", " CS(
        "\"terminated\": {\"exitCode\": 0, \"reason\": \"Completed\"}") "}}");
    assert_true(s.ended);
    assert_int_equal(s.st.exit_code, 0);

    /* Just created: no status yet. */
    s = read_ok("{\"metadata\": {\"name\": \"p\"}}");
    assert_false(s.ended);
    assert_false(s.st.running);
}

static void test_cluster_reasons(void **state)
{
    (void)state;
    struct pod_state s = read_ok("{\"status\": {\"phase\": \"Failed\", \"reason\": \"Evicted\","
                                 " \"message\": \"The node was low on resource: memory.\"}}");
    assert_true(s.ended);
    assert_string_equal(s.reason, "evicted: Evicted: The node was low on resource: memory.");

    s = read_ok("{\"status\": {\"phase\": \"Running\", \"conditions\": ["
                "{\"type\": \"Ready\", \"status\": \"True\"},"
                "{\"type\": \"DisruptionTarget\", \"status\": \"True\","
                " \"reason\": \"PreemptionByScheduler\", \"message\": \"by default/big\"}], " CS(
                    "\"running\": {}") "}}");
    assert_string_equal(s.reason, "preempted: PreemptionByScheduler: by default/big");

    s = read_ok(
        "{\"status\": {\"phase\": \"Failed\", \"reason\": \"DeadlineExceeded\","
        " \"message\": \"Pod was active on the node longer than the specified deadline\"}}");
    assert_true(strncmp(s.reason, "past its deadline: ", 19) == 0);

    s = read_ok("{\"status\": {\"phase\": \"Pending\", " CS(
        "\"waiting\": {\"reason\": \"ImagePullBackOff\","
        " \"message\": \"Back-off pulling image \\\"nope:latest\\\"\"}") "}}");
    assert_false(s.ended);
    assert_true(s.no_image);
    assert_string_equal(s.reason,
                        "cannot start: ImagePullBackOff: Back-off pulling image \"nope:latest\"");
    s = read_ok("{\"status\": {\"phase\": \"Pending\", " CS(
        "\"waiting\": {\"reason\": \"CreateContainerConfigError\"}") "}}");
    assert_false(s.no_image);
    assert_true(strncmp(s.reason, "cannot start: CreateContainerConfigError", 40) == 0);

    s = read_ok("{\"status\": {\"phase\": \"Pending\", \"conditions\": [{\"type\": "
                "\"PodScheduled\", \"status\": \"False\", \"reason\": \"Unschedulable\","
                " \"message\": \"0/3 nodes are available\"}]}}");
    assert_string_equal(s.reason, "cannot be scheduled: Unschedulable: 0/3 nodes are available");

    /* The API's text reaches logs: control bytes become '?', and it is capped. */
    char text[1200];
    char big[600];
    memset(big, 'm', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    snprintf(text, sizeof(text),
             "{\"status\": {\"phase\": \"Failed\", \"reason\": \"Evicted\","
             " \"message\": \"a\\u001b[31mb\\n%s\"}}",
             big);
    s = read_ok(text);
    assert_true(strncmp(s.reason, "evicted: Evicted: a?[31mb?mmm", 29) == 0);
    assert_true(strlen(s.reason) < POD_REASON_MAX);
}

static void test_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "[]",
        "{\"status\": \"Running\"}",
        "{\"status\": {\"containerStatuses\": {}}}",
        "{\"status\": {" CS("\"terminated\": {\"reason\": \"Error\"}") "}}",
        "{\"status\": {" CS("\"terminated\": {\"exitCode\": \"3\"}") "}}",
        "{\"status\": {\"conditions\": 1}}",
        "{\"status\": {" CS("\"running\": []") "}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_object *pod = json_parse_or_fail("pod", bad[i]);
        struct pod_state s;
        struct err err = ERR_INIT;
        if (pod_state_read(pod, &s, &err) != -1)
            fail_msg("taken: %s", bad[i]);
        assert_int_equal(err.code, ERR_PROTOCOL);
        err_clear(&err);
        json_object_put(pod);
    }
    struct pod_state s;
    struct err err = ERR_INIT;
    assert_int_equal(pod_state_read(NULL, &s, &err), -1);
    err_clear(&err);
}

static void test_listed(void **state)
{
    (void)state;
    json_object *pod =
        json_parse_or_fail("pod", "{\"metadata\": {\"name\": \"mcpsbx-857d9be4-7\","
                                  " \"creationTimestamp\": \"2026-11-28T20:00:00Z\","
                                  " \"labels\": {\"mcp-sandboxd.io/instance\": \"857d9be4\"},"
                                  " \"annotations\": {\"mcp-sandboxd.io/owner\": \"b:1:\\u0007:2\","
                                  " \"mcp-sandboxd.io/expires\": \"1800000600\","
                                  " \"mcp-sandboxd.io/uid\": \"61000\"}}}");
    struct backend_container c;
    struct err err = ERR_INIT;
    if (pod_container_read(pod, &c, &err) < 0)
        fail_msg("%s", err_msg(&err));
    assert_string_equal(c.id, "mcpsbx-857d9be4-7");
    assert_int_equal(c.created, 1795896000LL);
    assert_string_equal(c.instance, "857d9be4");
    assert_string_equal(c.owner, "b:1:?:2");
    assert_int_equal(c.expires, 1800000600LL);
    assert_int_equal(c.uid, 61000);
    free(c.id);
    free(c.instance);
    free(c.owner);
    json_object_put(pod);

    /* Marks anyone could set: only plain numbers count; none is fine. */
    pod = json_parse_or_fail("pod", "{\"metadata\": {\"name\": \"p\", \"annotations\":"
                                    " {\"mcp-sandboxd.io/expires\": \"-5\","
                                    " \"mcp-sandboxd.io/uid\": \"99999999999\"}}}");
    assert_int_equal(pod_container_read(pod, &c, &err), 0);
    assert_int_equal(c.expires, 0);
    assert_int_equal(c.uid, -1);
    assert_null(c.instance);
    assert_null(c.owner);
    assert_int_equal(c.created, 0);
    free(c.id);
    json_object_put(pod);

    static const char *const bad[] = {
        "{}",
        "{\"metadata\": {\"name\": \"Not_A_Name\"}}",
        "{\"metadata\": {\"name\": \"p\", \"labels\": []}}",
        "{\"metadata\": []}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pod = json_parse_or_fail("pod", bad[i]);
        if (pod_container_read(pod, &c, &err) != -1)
            fail_msg("taken: %s", bad[i]);
        assert_int_equal(err.code, ERR_PROTOCOL);
        err_clear(&err);
        json_object_put(pod);
    }
}

static void test_time(void **state)
{
    (void)state;
    static const char ok[] = "1970-01-02T00:00:00Z";
    assert_int_equal(pod_time(ok, strlen(ok)), 86400);
    static const char *const bad[] = {"2026-11-28T20:00:00",
                                      "2026-11-28T20:00:00.5Z",
                                      "2026-13-28T20:00:00Z",
                                      "2026-11-28 20:00:00Z",
                                      "2026-11-28T24:00:00Z",
                                      "+026-11-28T20:00:00Z",
                                      ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (pod_time(bad[i], strlen(bad[i])) != 0)
            fail_msg("taken: %s", bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_running_and_ends),
        cmocka_unit_test(test_cluster_reasons),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_listed),
        cmocka_unit_test(test_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
