/* The 2026-07-28 request envelope (mcp/envelope.h): which requests are
 * modern, what a modern one must carry and the -32602 answers when it
 * does not, the capabilities and log level read, trace context kept only
 * in its W3C form, and the -32021 answer's data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "mcp/envelope.h"

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static int read_text(const char *json, struct envelope *env, struct envelope_error *e)
{
    json_object *params = json_tokener_parse(json);
    int rc = envelope_read(params, env, e);
    json_object_put(params);
    return rc;
}

static void refused(const char *json, const char *needle)
{
    struct envelope env;
    struct envelope_error e;
    assert_int_equal(read_text(json, &env, &e), -1);
    assert_int_equal(e.code, -32602);
    assert_true(env.modern);
    if (!strstr(e.msg, needle))
        fail_msg("'%s' does not mention '%s'", e.msg, needle);
}

static void test_legacy(void **state)
{
    (void)state;
    struct envelope env;
    struct envelope_error e;
    const char *legacy[] = {"null", "{}", "{\"_meta\":{\"progressToken\":1}}", "{\"_meta\":7}",
                            "[1]"};
    for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++) {
        assert_int_equal(read_text(legacy[i], &env, &e), 0);
        assert_false(env.modern);
    }
    assert_int_equal(envelope_read(NULL, &env, &e), 0);
    assert_false(env.modern);
}

static void test_modern(void **state)
{
    (void)state;
    struct envelope env;
    struct envelope_error e;
    assert_int_equal(
        read_text("{\"_meta\":{\"" ENVELOPE_KEY_VERSION "\":\"2026-07-28\",\"" ENVELOPE_KEY_CAPS
                  "\":{\"sampling\":{},\"roots\":true,\"extensions\":{\"" ENVELOPE_TASKS_EXT
                  "\":{}}},\"" ENVELOPE_KEY_INFO
                  "\":{\"name\":\"cli\\nent\",\"version\":\"2.4.0\"},\"" ENVELOPE_KEY_LOGLEVEL
                  "\":\"warning\",\"traceparent\":\"" TP "\",\"tracestate\":\"a=1,b=2\"}}",
                  &env, &e),
        0);
    assert_true(env.modern);
    assert_string_equal(env.version, "2026-07-28");
    assert_int_equal(env.caps, ENVELOPE_CAP_SAMPLING | ENVELOPE_CAP_TASKS);
    assert_int_equal(env.level, ENVELOPE_LEVEL_WARNING);
    assert_string_equal(envelope_level_name(env.level), "warning");
    assert_string_equal(env.client_name, "cli?ent");
    assert_string_equal(env.client_version, "2.4.0");
    assert_string_equal(env.traceparent, TP);
    assert_string_equal(env.tracestate, "a=1,b=2");
    /* The least a modern request carries; an unknown version is the
     * caller's to answer (-32022), not a malformed envelope. */
    assert_int_equal(read_text("{\"_meta\":{\"" ENVELOPE_KEY_VERSION
                               "\":\"v999.0.0\",\"" ENVELOPE_KEY_CAPS "\":{}}}",
                               &env, &e),
                     0);
    assert_string_equal(env.version, "v999.0.0");
    assert_int_equal(env.caps, 0);
    assert_int_equal(env.level, ENVELOPE_LEVEL_NONE);
    assert_string_equal(env.traceparent, "");
}

static void test_malformed(void **state)
{
    (void)state;
    refused("{\"_meta\":{\"" ENVELOPE_KEY_VERSION "\":\"2026-07-28\"}}", ENVELOPE_KEY_CAPS);
    refused("{\"_meta\":{\"" ENVELOPE_KEY_VERSION "\":\"2026-07-28\",\"" ENVELOPE_KEY_CAPS
            "\":[]}}",
            ENVELOPE_KEY_CAPS);
    refused("{\"_meta\":{\"" ENVELOPE_KEY_VERSION "\":7,\"" ENVELOPE_KEY_CAPS "\":{}}}",
            ENVELOPE_KEY_VERSION);
    refused("{\"_meta\":{\"" ENVELOPE_KEY_VERSION "\":\"\",\"" ENVELOPE_KEY_CAPS "\":{}}}",
            ENVELOPE_KEY_VERSION);
    refused("{\"_meta\":{\"" ENVELOPE_KEY_VERSION "\":\"2026 07\",\"" ENVELOPE_KEY_CAPS "\":{}}}",
            ENVELOPE_KEY_VERSION);
    refused("{\"_meta\":{\"" ENVELOPE_KEY_VERSION
            "\":\"0123456789012345678901234567890123\",\"" ENVELOPE_KEY_CAPS "\":{}}}",
            ENVELOPE_KEY_VERSION);
    refused("{\"_meta\":{\"" ENVELOPE_KEY_VERSION "\":\"2026-07-28\",\"" ENVELOPE_KEY_CAPS
            "\":{},\"" ENVELOPE_KEY_LOGLEVEL "\":\"verbose\"}}",
            ENVELOPE_KEY_LOGLEVEL);
}

/* Trace context that is not in its W3C form is dropped, never refused. */
static void test_trace_context(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    };
    char json[512];
    struct envelope env;
    struct envelope_error e;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(json, sizeof(json),
                 "{\"_meta\":{\"" ENVELOPE_KEY_VERSION "\":\"2026-07-28\",\"" ENVELOPE_KEY_CAPS
                 "\":{},\"traceparent\":\"%s\",\"tracestate\":\"a=1\"}}",
                 bad[i]);
        assert_int_equal(read_text(json, &env, &e), 0);
        assert_string_equal(env.traceparent, "");
        assert_string_equal(env.tracestate, "");
    }
    assert_int_equal(read_text("{\"_meta\":{\"" ENVELOPE_KEY_VERSION
                               "\":\"2026-07-28\",\"" ENVELOPE_KEY_CAPS
                               "\":{},\"traceparent\":\"" TP "\",\"tracestate\":\"a=\\\"x\\\"\"}}",
                               &env, &e),
                     0);
    assert_string_equal(env.traceparent, TP);
    assert_string_equal(env.tracestate, "");
}

static void test_missing_caps_data(void **state)
{
    (void)state;
    json_object *d = envelope_missing_caps_data(ENVELOPE_CAP_SAMPLING | ENVELOPE_CAP_TASKS);
    assert_string_equal(
        json_object_to_json_string_ext(d, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
        "{\"requiredCapabilities\":{\"sampling\":{},\"extensions\":{"
        "\"" ENVELOPE_TASKS_EXT "\":{}}}}");
    json_object_put(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_legacy),
        cmocka_unit_test(test_modern),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_trace_context),
        cmocka_unit_test(test_missing_caps_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
