#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "mcp/jsonrpc.h"

static json_object *parse_ok(const char *s)
{
    json_object *o = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(jsonrpc_parse(s, strlen(s), &o, &err), 0);
    assert_non_null(o);
    return o;
}

static void parse_fails(const char *s, size_t n)
{
    json_object *o = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(jsonrpc_parse(s, n, &o, &err), -1);
    assert_null(o);
    assert_non_null(strstr(err_msg(&err), "Parse error"));
    err_clear(&err);
}

static void test_parse_errors(void **state)
{
    (void)state;
    parse_fails("{", 1);
    parse_fails("{\"a\":1} x", 9);
    parse_fails("", 0);
    parse_fails("nul", 3);
    parse_fails("{\"a\":\"\xff\"}", 9);
    parse_fails("{\"a\":1}{\"b\":2}", 14);
    /* Too deep: refused instead of recursing. */
    char deep[400];
    memset(deep, '[', 200);
    memset(deep + 200, ']', 200);
    parse_fails(deep, sizeof(deep));
}

static void test_parse_whitespace(void **state)
{
    (void)state;
    json_object *o = parse_ok("  {\"a\":1}  \r\n");
    json_object_put(o);
}

static void classify(const char *s, enum jsonrpc_kind kind, int has_id)
{
    json_object *o = parse_ok(s);
    struct jsonrpc_msg m;
    jsonrpc_classify(o, &m);
    assert_int_equal(m.kind, kind);
    if (has_id)
        assert_non_null(m.id);
    else
        assert_null(m.id);
    json_object_put(o);
}

static void test_classify(void **state)
{
    (void)state;
    classify("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", JSONRPC_REQUEST, 1);
    classify("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\",\"params\":{}}",
             JSONRPC_REQUEST, 1);
    classify("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", JSONRPC_NOTIFICATION,
             0);
    classify("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", JSONRPC_RESPONSE, 1);
    classify("{\"jsonrpc\":\"2.0\",\"id\":1}", JSONRPC_INVALID, 1);
    classify("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", JSONRPC_INVALID, 1);
    classify("{\"id\":1,\"method\":\"ping\"}", JSONRPC_INVALID, 1);
    classify("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", JSONRPC_INVALID, 0);
    classify("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", JSONRPC_INVALID, 0);
    classify("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}", JSONRPC_INVALID, 0);
    classify("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", JSONRPC_INVALID, 1);
    classify("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":3}", JSONRPC_INVALID, 1);
    classify("[1]", JSONRPC_INVALID, 0);
    classify("\"str\"", JSONRPC_INVALID, 0);
}

static void test_builders(void **state)
{
    (void)state;
    json_object *id = json_object_new_int(7);
    json_object *r = jsonrpc_result(id, NULL);
    size_t n = 0;
    assert_string_equal(jsonrpc_serialize(r, &n), "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}");
    json_object_put(r);
    json_object *e = jsonrpc_error(NULL, JSONRPC_PARSE_ERROR, "Parse error: x\ny", NULL);
    const char *s = jsonrpc_serialize(e, &n);
    assert_null(strchr(s, '\n')); /* one message per line */
    assert_non_null(strstr(s, "\"id\":null"));
    assert_non_null(strstr(s, "-32700"));
    json_object_put(e);
    json_object_put(id);
    json_object *note = jsonrpc_notification("notifications/progress", json_object_new_object());
    assert_string_equal(
        jsonrpc_serialize(note, &n),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}");
    json_object_put(note);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_parse_whitespace),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_builders),
    };
    return cmocka_run_group_tests_name("jsonrpc", tests, NULL, NULL);
}
