#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "base/json.h"

static int parse(const char *text, int depth, int flags, json_object **o, struct json_exact *why)
{
    return json_parse_exact(text, strlen(text), depth, flags, o, why);
}

static void test_whole_values(void **state)
{
    (void)state;
    json_object *o = NULL;
    struct json_exact why;
    assert_int_equal(parse("{\"a\":[1,2]} \r\n\t", 8, 0, &o, &why), 0);
    assert_int_equal(why.status, JSON_EXACT_OK);
    assert_true(json_object_is_type(o, json_type_object));
    json_object_put(o);
    /* The JSON null is a value, given as a NULL object. */
    assert_int_equal(parse("null", 8, 0, &o, &why), 0);
    assert_null(o);
    assert_int_equal(parse("7", 8, 0, &o, &why), 0);
    assert_int_equal(json_object_get_int(o), 7);
    json_object_put(o);
}

static void test_refusals(void **state)
{
    (void)state;
    json_object *o = (json_object *)&o;
    struct json_exact why;
    assert_int_equal(parse("{\"a\":", 8, 0, &o, &why), -1);
    assert_null(o);
    assert_int_equal(why.status, JSON_EXACT_INCOMPLETE);
    assert_int_equal(parse("", 8, 0, &o, &why), -1);
    assert_int_equal(why.status, JSON_EXACT_INCOMPLETE);
    assert_int_equal(parse("{} {}", 8, 0, &o, &why), -1);
    assert_int_equal(why.status, JSON_EXACT_TRAILING);
    assert_int_equal(why.offset, 3);
    assert_int_equal(parse("[1,,2]", 8, 0, &o, &why), -1);
    assert_int_equal(why.status, JSON_EXACT_SYNTAX);
    assert_true(strlen(why.why) > 0);
    /* Deeper than allowed. */
    assert_int_equal(parse("[[[[1]]]]", 3, 0, &o, &why), -1);
    assert_int_equal(why.status, JSON_EXACT_SYNTAX);
    /* Strict mode refuses what the lenient tokener takes. */
    assert_int_equal(parse("[1,]", 8, 0, &o, &why), 0);
    json_object_put(o);
    assert_int_equal(parse("[1,]", 8, JSON_TOKENER_STRICT, &o, &why), -1);
    assert_int_equal(why.status, JSON_EXACT_SYNTAX);
    /* A NUL inside the given length is not whitespace. */
    assert_int_equal(json_parse_exact("{}\0", 3, 8, 0, &o, &why), -1);
    assert_int_equal(why.status, JSON_EXACT_TRAILING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_values),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
