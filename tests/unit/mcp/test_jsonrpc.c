#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/jsonrpc.h"

static json_object *parse_ok(const char *s)
{
    json_object *o = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(jsonrpc_parse(s, strlen(s), JSONRPC_PARSE_BUDGET(1 << 20), &o, &err), 0);
    assert_non_null(o);
    return o;
}

static void parse_fails(const char *s, size_t n)
{
    json_object *o = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(jsonrpc_parse(s, n, JSONRPC_PARSE_BUDGET(1 << 20), &o, &err), -1);
    assert_null(o);
    assert_non_null(strstr(err_msg(&err), "Parse error"));
    assert_int_equal(err_jsonrpc_code(err.code), JSONRPC_PARSE_ERROR);
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

/* n copies of item in an array, as text. */
static char *repeated(const char *item, size_t n, size_t *len)
{
    size_t il = strlen(item);
    char *b = malloc(n * (il + 1) + 3);
    size_t o = 0;
    b[o++] = '[';
    for (size_t i = 0; i < n; i++) {
        if (i)
            b[o++] = ',';
        memcpy(b + o, item, il);
        o += il;
    }
    b[o++] = ']';
    b[o] = '\0';
    *len = o;
    return b;
}

static size_t heap_in_use(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

/* The estimate is at least what json-c really allocates, for every kind of
 * value (where the allocator reports it: not under ASan or valgrind). */
static void test_parse_cost_bounds_json_c(void **state)
{
    (void)state;
    static const char *const items[] = {"{}",
                                        "[]",
                                        "1",
                                        "-1.5e3",
                                        "\"abc\"",
                                        "true",
                                        "null",
                                        "{\"key\":[1,{\"a\":\"\\u00e9\\n\"}]}",
                                        "\"\\ud83d\\ude00\""};
    for (size_t k = 0; k < sizeof(items) / sizeof(items[0]); k++) {
        size_t len = 0;
        char *text = repeated(items[k], 20000, &len);
        size_t before = heap_in_use();
        json_object *o = NULL;
        struct err err = ERR_INIT;
        assert_int_equal(jsonrpc_parse(text, len, (size_t)-1, &o, &err), 0);
        size_t after = heap_in_use();
        size_t cost = jsonrpc_parse_cost(text, len);
        if (after > before && after - before > cost)
            fail_msg("%s: json-c took %zu bytes, the estimate says %zu", items[k], after - before,
                     cost);
        json_object_put(o);
        free(text);
    }
}

/* A body of many small values is refused before json-c sees it, with the
 * reason; the same bytes as one string pass. */
static void test_parse_budget(void **state)
{
    (void)state;
    size_t len = 0;
    char *text = repeated("{}", 300000, &len); /* 900 KB */
    json_object *o = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(jsonrpc_parse(text, len, JSONRPC_PARSE_BUDGET(1 << 20), &o, &err), -1);
    assert_null(o);
    assert_int_equal(err.code, ERR_TOO_BIG);
    assert_int_equal(err_jsonrpc_code(err.code), JSONRPC_INVALID_REQUEST);
    assert_non_null(strstr(err_msg(&err), "too many JSON values"));
    err_clear(&err);
    /* The same length of text in one string. */
    memset(text, 'x', len);
    text[0] = '"';
    text[len - 1] = '"';
    assert_int_equal(jsonrpc_parse(text, len, JSONRPC_PARSE_BUDGET(1 << 20), &o, &err), 0);
    json_object_put(o);
    /* Escapes and brackets inside strings count as text only. */
    const char *s = "{\"a\":\"[{,:}]\\\"{\"}";
    assert_true(jsonrpc_parse_cost(s, strlen(s)) <
                JSONRPC_COST_SCALAR * 3 + JSONRPC_COST_OBJECT + JSONRPC_COST_STRING * 2 + 16);
    free(text);
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
        cmocka_unit_test(test_parse_cost_bounds_json_c),
        cmocka_unit_test(test_parse_budget),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_builders),
    };
    return cmocka_run_group_tests_name("jsonrpc", tests, NULL, NULL);
}
