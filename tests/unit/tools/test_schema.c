#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/schema.h"

static json_object *parse(const char *json)
{
    json_object *o = json_tokener_parse(json);
    if (!o && strcmp(json, "null") != 0)
        fail_msg("test JSON does not parse: %s", json);
    return o;
}

/* Validates value (JSON text) against schema (JSON text, which must pass
 * schema_check); returns the message, or NULL when valid. */
static char *validate_flags(const char *schema, const char *value, unsigned flags)
{
    json_object *s = parse(schema);
    json_object *v = parse(value);
    struct err err = ERR_INIT;
    if (schema_check(s, &err) < 0)
        fail_msg("schema %s: %s", schema, err_msg(&err));
    int rc = schema_validate(s, v, flags, &err);
    json_object_put(s);
    json_object_put(v);
    if (rc == 0) {
        assert_null(err.msg);
        return NULL;
    }
    assert_int_equal(err.code, ERR_INVALID);
    return err.msg;
}

static void accept(const char *schema, const char *value)
{
    char *msg = validate_flags(schema, value, 0);
    if (msg)
        fail_msg("%s against %s: %s", value, schema, msg);
}

/* The message must be exactly want. */
static void reject(const char *schema, const char *value, const char *want)
{
    char *msg = validate_flags(schema, value, 0);
    if (!msg)
        fail_msg("%s against %s was accepted", value, schema);
    if (strcmp(msg, want) != 0)
        fail_msg("%s against %s: got '%s', want '%s'", value, schema, msg, want);
    free(msg);
}

/* schema_check's message must contain needle. */
static void bad_schema(const char *schema, const char *needle)
{
    json_object *s = parse(schema);
    struct err err = ERR_INIT;
    if (schema_check(s, &err) == 0)
        fail_msg("schema %s passed the check", schema);
    assert_int_equal(err.code, ERR_INVALID);
    if (!strstr(err_msg(&err), needle))
        fail_msg("schema %s: '%s' does not mention '%s'", schema, err_msg(&err), needle);
    err_clear(&err);
    json_object_put(s);
}

static void test_integer(void **state)
{
    (void)state;
    long long n = 0;
    json_object *v = json_object_new_int64(-7);
    assert_true(schema_integer(v, &n));
    assert_int_equal(n, -7);
    json_object_put(v);
    v = json_object_new_double(5000.0);
    assert_true(schema_integer(v, &n));
    assert_int_equal(n, 5000);
    json_object_put(v);
    const double not_integers[] = {1.5, 1e16, -1e16, NAN, INFINITY};
    for (size_t i = 0; i < ARRAY_SIZE(not_integers); i++) {
        v = json_object_new_double(not_integers[i]);
        assert_false(schema_integer(v, NULL));
        json_object_put(v);
    }
    v = json_object_new_string("9");
    assert_false(schema_integer(v, NULL));
    json_object_put(v);
    assert_false(schema_integer(NULL, NULL));
}

static void test_type(void **state)
{
    (void)state;
    accept("{\"type\":\"object\"}", "{}");
    accept("{\"type\":\"string\"}", "\"x\"");
    accept("{\"type\":\"integer\"}", "3");
    accept("{\"type\":\"integer\"}", "3.0");
    accept("{\"type\":\"number\"}", "3");
    accept("{\"type\":\"number\"}", "2.5");
    accept("{\"type\":\"boolean\"}", "false");
    accept("{\"type\":\"null\"}", "null");
    accept("{}", "[1]"); /* no type: anything */
    reject("{\"type\":\"object\"}", "[1]", "arguments must be an object");
    reject("{\"type\":\"string\"}", "1", "arguments must be a string");
    reject("{\"type\":\"integer\"}", "1.5", "arguments must be an integer");
    reject("{\"type\":\"integer\"}", "\"9\"", "arguments must be an integer");
    reject("{\"type\":\"number\"}", "true", "arguments must be a number");
    reject("{\"type\":\"boolean\"}", "0", "arguments must be a boolean");
    reject("{\"type\":\"null\"}", "{}", "arguments must be null");
    reject("{\"type\":\"string\"}", "null", "arguments must be a string");
}

#define OBJ(props, rest) "{\"type\":\"object\",\"properties\":{" props "}" rest "}"

static void test_properties_and_required(void **state)
{
    (void)state;
    const char *s = OBJ("\"code\":{\"type\":\"string\"},\"n\":{\"type\":\"integer\"}",
                        ",\"required\":[\"code\"]");
    accept(s, "{\"code\":\"x\"}");
    accept(s, "{\"code\":\"x\",\"n\":2,\"other\":true}"); /* extra allowed by default */
    reject(s, "{}", "missing required argument 'code'");
    reject(s, "{\"code\":1}", "argument 'code' must be a string");
    reject(s, "{\"code\":\"x\",\"n\":\"2\"}", "argument 'n' must be an integer");
    /* The schema's order decides which problem is reported. */
    reject(s, "{\"n\":\"2\"}", "missing required argument 'code'");
    /* null is a value unless SCHEMA_NULL_IS_ABSENT. */
    reject(s, "{\"code\":\"x\",\"n\":null}", "argument 'n' must be an integer");
    assert_null(validate_flags(s, "{\"code\":\"x\",\"n\":null}", SCHEMA_NULL_IS_ABSENT));
    char *msg = validate_flags(s, "{\"code\":null}", SCHEMA_NULL_IS_ABSENT);
    assert_string_equal(msg, "missing required argument 'code'");
    free(msg);

    /* Nested objects name the path. */
    const char *nested =
        OBJ("\"opt\":" OBJ("\"depth\":{\"type\":\"integer\"}", ",\"required\":[\"depth\"],"
                                                               "\"additionalProperties\":false"),
            "");
    accept(nested, "{\"opt\":{\"depth\":1}}");
    reject(nested, "{\"opt\":{}}", "missing required argument 'opt.depth'");
    reject(nested, "{\"opt\":{\"depth\":true}}", "argument 'opt.depth' must be an integer");
    reject(nested, "{\"opt\":{\"depth\":1,\"x\":1}}", "unknown argument 'opt.x'");
    reject(nested, "{\"opt\":5}", "argument 'opt' must be an object");
}

static void test_additional_properties(void **state)
{
    (void)state;
    const char *s = OBJ("\"code\":{\"type\":\"string\"}",
                        ",\"required\":[\"code\"],\"additionalProperties\":false");
    accept(s, "{\"code\":\"\"}");
    reject(s, "{\"code\":\"x\",\"stdin\":\"y\"}", "unknown argument 'stdin'");
    /* Unknown names come first, whatever else is wrong. */
    reject(s, "{\"code\":1,\"zz\":null}", "unknown argument 'zz'");
    char big[200];
    snprintf(big, sizeof(big), "{\"%0100d\":1}", 0);
    char want[100];
    snprintf(want, sizeof(want), "unknown argument '%064d'", 0);
    reject(s, big, want); /* a client's name is cut short */
}

static void test_enum(void **state)
{
    (void)state;
    const char *two = "{\"type\":\"string\",\"enum\":[\"python\",\"javascript\"]}";
    accept(two, "\"python\"");
    reject(two, "\"ruby\"", "arguments must be \"python\" or \"javascript\", got \"ruby\"");
    reject(two, "5", "arguments must be a string"); /* type first */
    reject("{\"enum\":[\"a\",\"b\",\"c\"]}", "\"d\"",
           "arguments must be \"a\", \"b\" or \"c\", got \"d\"");
    reject("{\"enum\":[\"a\"]}", "\"d\"", "arguments must be \"a\", got \"d\"");
    accept("{\"enum\":[1,2,null]}", "null");
    reject("{\"enum\":[1,2]}", "[3]", "arguments must be 1 or 2, got [3]");
    char big[100];
    snprintf(big, sizeof(big), "\"%050d\"", 0);
    char want[200];
    snprintf(want, sizeof(want), "arguments must be \"a\", got \"%032d\"", 0);
    reject("{\"enum\":[\"a\"]}", big, want);
    /* A list longer than a message shows is counted instead. */
    char *many = xstrdup("{\"enum\":[\"v000\"");
    for (int i = 1; i < 300; i++) {
        char *next = xasprintf("%s,\"v%03d\"", many, i);
        free(many);
        many = next;
    }
    char *schema = xasprintf("%s]}", many);
    reject(schema, "\"x\"", "arguments must be one of the 300 values its enum lists, got \"x\"");
    free(schema);
    free(many);
}

static void test_minimum_maximum(void **state)
{
    (void)state;
    const char *s = "{\"type\":\"integer\",\"minimum\":1,\"maximum\":10}";
    accept(s, "1");
    accept(s, "10");
    accept(s, "10.0");
    reject(s, "0", "arguments must be at least 1");
    reject(s, "11", "arguments must be at most 10");
    reject(s, "-9223372036854775808", "arguments must be at least 1");
    const char *num = "{\"type\":\"number\",\"minimum\":0.5,\"maximum\":2.5}";
    accept(num, "0.5");
    accept(num, "2");
    reject(num, "0.25", "arguments must be at least 0.5");
    reject(num, "3", "arguments must be at most 2.5");
    reject(OBJ("\"memory_mb\":{\"type\":\"integer\",\"minimum\":16}", ""), "{\"memory_mb\":5}",
           "argument 'memory_mb' must be at least 16");
}

static void test_max_length(void **state)
{
    (void)state;
    const char *s = "{\"type\":\"string\",\"maxLength\":3}";
    accept(s, "\"abc\"");
    accept(s, "\"\xc3\xa9\xc3\xa9\xf0\x9f\x90\x8d\""); /* 3 characters, 8 bytes */
    reject(s, "\"abcd\"", "arguments must be at most 3 characters long");
    accept("{\"type\":\"string\",\"maxLength\":0}", "\"\"");
}

static void test_any_of(void **state)
{
    (void)state;
    const char *s = "{\"anyOf\":[{\"type\":\"integer\",\"minimum\":1},{\"type\":\"null\"}]}";
    accept(s, "null");
    accept(s, "5");
    reject(s, "\"x\"", "arguments must be an integer or null");
    /* Of the value's own type: that branch says what is wrong. */
    reject(s, "0", "arguments must be at least 1");
    reject("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"boolean\"},{\"type\":\"null\"}]}", "1",
           "arguments must be a string, a boolean or null");
    reject("{\"anyOf\":[{\"enum\":[1]},{\"enum\":[2]}]}", "3",
           "arguments must match one of the schemas in anyOf");
    reject(OBJ("\"exit_code\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}]}",
               ",\"required\":[\"exit_code\"]"),
           "{\"exit_code\":1.5}", "argument 'exit_code' must be an integer or null");
    accept(OBJ("\"exit_code\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}]}",
               ",\"required\":[\"exit_code\"]"),
           "{\"exit_code\":null}");
}

static void test_annotations_ignored(void **state)
{
    (void)state;
    const char *s = "{\"type\":\"integer\",\"title\":\"T\",\"description\":\"D\",\"default\":3,"
                    "\"minimum\":1}";
    accept(s, "2");
    reject(s, "0", "arguments must be at least 1");
}

#define ARR(items, rest) "{\"type\":\"array\",\"items\":" items rest "}"

static void test_array(void **state)
{
    (void)state;
    const char *s = ARR("{\"type\":\"string\"}", "");
    accept(s, "[]");
    accept(s, "[\"a\",\"b\"]");
    reject(s, "{}", "arguments must be an array");
    reject(s, "\"a\"", "arguments must be an array");
    reject(s, "[\"a\",2]", "argument '[1]' must be a string");
    accept("{\"type\":\"array\"}", "[1,\"x\",null,{}]"); /* no items: any element */
    reject(OBJ("\"tags\":" ARR("{\"type\":\"string\",\"maxLength\":2}", ""), ""),
           "{\"tags\":[\"ok\",\"long\"]}", "argument 'tags[1]' must be at most 2 characters long");
    reject(OBJ("\"tags\":" ARR("{\"type\":\"string\"}", ""), ""), "{\"tags\":\"a\"}",
           "argument 'tags' must be an array");
}

static void test_array_of_objects(void **state)
{
    (void)state;
    const char *files =
        OBJ("\"files\":" ARR(OBJ("\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"}",
                                 ",\"required\":[\"path\"],\"additionalProperties\":false"),
                             ""),
            "");
    accept(files, "{\"files\":[{\"path\":\"a\"},{\"path\":\"b\",\"size\":3}]}");
    reject(files, "{\"files\":[{\"path\":\"a\"},{\"path\":\"b\"},{\"path\":7}]}",
           "argument 'files[2].path' must be a string");
    reject(files, "{\"files\":[{\"path\":\"a\"},{}]}", "missing required argument 'files[1].path'");
    reject(files, "{\"files\":[{\"path\":\"a\",\"mode\":1}]}", "unknown argument 'files[0].mode'");
    reject(files, "{\"files\":[1]}", "argument 'files[0]' must be an object");
    /* Arrays of arrays. */
    const char *grid =
        OBJ("\"grid\":" ARR(ARR("{\"type\":\"integer\"}", ",\"maxItems\":2"), ""), "");
    accept(grid, "{\"grid\":[[1,2],[],[3]]}");
    reject(grid, "{\"grid\":[[1,2],[3,\"x\"]]}", "argument 'grid[1][1]' must be an integer");
    reject(grid, "{\"grid\":[[1],[1,2,3]]}", "argument 'grid[1]' must have at most 2 items");
}

static void test_min_max_items(void **state)
{
    (void)state;
    const char *s = ARR("{\"type\":\"integer\"}", ",\"minItems\":1,\"maxItems\":3");
    reject(s, "[]", "arguments must have at least 1 item");
    accept(s, "[1]");
    accept(s, "[1,2,3]");
    reject(s, "[1,2,3,4]", "arguments must have at most 3 items");
    /* The count is checked before the elements. */
    reject(s, "[\"a\",2,3,4]", "arguments must have at most 3 items");
    accept(ARR("{}", ",\"maxItems\":0"), "[]");
    reject(ARR("{}", ",\"maxItems\":0"), "[null]", "arguments must have at most 0 items");
    reject(ARR("{}", ",\"minItems\":2"), "[1]", "arguments must have at least 2 items");
}

static void test_additional_properties_schema(void **state)
{
    (void)state;
    const char *map = "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}";
    accept(map, "{}");
    accept(map, "{\"numpy\":\"1.24.2\",\"pandas\":\"1.5.3\"}");
    reject(map, "{\"numpy\":\"1.24.2\",\"pandas\":1}", "argument 'pandas' must be a string");
    /* Listed properties follow their own schema; the rest the map's. */
    const char *mixed =
        OBJ("\"n\":{\"type\":\"integer\"}", ",\"additionalProperties\":{\"type\":\"boolean\"}");
    accept(mixed, "{\"n\":1,\"x\":true}");
    reject(mixed, "{\"n\":1,\"x\":1}", "argument 'x' must be a boolean");
    reject(mixed, "{\"n\":true}", "argument 'n' must be an integer");
    reject(OBJ("\"pkgs\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}", ""),
           "{\"pkgs\":{\"a\":null}}", "argument 'pkgs.a' must be a string");
    assert_null(validate_flags(map, "{\"a\":null}", SCHEMA_NULL_IS_ABSENT));
}

static void test_check_accepts(void **state)
{
    (void)state;
    const char *good[] = {
        "{}",
        OBJ("\"a\":{\"type\":\"string\",\"maxLength\":4,\"default\":\"x\"}",
            ",\"required\":[\"a\"],\"additionalProperties\":false"),
        "{\"type\":\"integer\",\"minimum\":1,\"maximum\":1,\"default\":1}",
        "{\"type\":\"string\",\"enum\":[\"a\",\"b\"],\"default\":\"b\"}",
        "{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}],\"default\":null}",
        "{\"type\":\"number\",\"minimum\":-0.5}",
        "{\"type\":\"boolean\",\"title\":\"t\",\"description\":\"d\"}",
        "{\"type\":\"array\"}",
        ARR("{\"type\":\"string\"}", ",\"minItems\":0,\"maxItems\":0,\"default\":[]"),
        ARR(ARR("{}", ""), ",\"minItems\":2,\"maxItems\":2.0"),
        "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}",
        "{\"type\":\"object\",\"additionalProperties\":{}}",
    };
    for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
        json_object *s = parse(good[i]);
        struct err err = ERR_INIT;
        if (schema_check(s, &err) < 0)
            fail_msg("%s: %s", good[i], err_msg(&err));
        json_object_put(s);
    }
}

static void test_check_rejects(void **state)
{
    (void)state;
    bad_schema("[]", "a schema must be a JSON object");
    bad_schema("{\"type\":\"string\",\"minLength\":1}", "minLength: keyword not supported");
    bad_schema(OBJ("\"a\":{\"type\":\"string\",\"pattern\":\"x\"}", ""),
               "properties.a.pattern: keyword not supported");
    bad_schema("{\"$schema\":\"x\"}", "$schema: keyword not supported");
    bad_schema(OBJ("\"exit_code\":{\"type\":[\"integer\",\"null\"]}", ""),
               "properties.exit_code.type: a type array is not supported: write anyOf");
    bad_schema("{\"type\":\"tuple\"}", "type: must be one of");
    bad_schema("{\"type\":3}", "type: must be one of");
    bad_schema("{\"type\":\"string\",\"properties\":{}}", "properties: applies to type object");
    bad_schema("{\"properties\":{}}", "properties: applies to type object");
    bad_schema("{\"type\":\"object\",\"properties\":[]}", "properties: must be an object");
    bad_schema(OBJ("\"a\":5", ""), "properties.a: a schema must be a JSON object");
    bad_schema(OBJ("\"a\":{}", ",\"required\":[\"b\"]"), "required: 'b' is not in properties");
    bad_schema(OBJ("\"a\":{}", ",\"required\":[\"a\",\"a\"]"), "'a' is listed twice");
    bad_schema(OBJ("\"a\":{}", ",\"required\":\"a\""), "required: must be an array");
    bad_schema(OBJ("\"a\":{}", ",\"additionalProperties\":true"), "must be false or a schema");
    bad_schema(OBJ("\"a\":{}", ",\"additionalProperties\":1"), "must be false or a schema");
    bad_schema("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"map\"}}",
               "additionalProperties.type: must be one of");
    bad_schema("{\"additionalProperties\":false}", "additionalProperties: applies to type object");
    bad_schema("{\"enum\":[]}", "enum: must be a non-empty array");
    bad_schema("{\"type\":\"string\",\"enum\":[\"a\",1]}", "enum: 1 is not a string");
    bad_schema("{\"enum\":[\"a\",\"a\"]}", "enum: \"a\" is listed twice");
    bad_schema("{\"type\":\"integer\",\"minimum\":\"1\"}", "minimum: must be a number");
    bad_schema("{\"type\":\"string\",\"maximum\":1}", "maximum: applies to type integer or number");
    bad_schema("{\"type\":\"integer\",\"minimum\":5,\"maximum\":1}", "minimum: is above maximum");
    bad_schema("{\"type\":\"string\",\"maxLength\":-1}", "maxLength: must be a non-negative");
    bad_schema("{\"type\":\"string\",\"maxLength\":1.5}", "maxLength: must be a non-negative");
    bad_schema("{\"type\":\"integer\",\"maxLength\":1}", "maxLength: applies to type string");
    bad_schema("{\"anyOf\":[]}", "anyOf: must be a non-empty array");
    bad_schema(OBJ("\"a\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":[\"null\"]}]}", ""),
               "properties.a.anyOf[1].type: a type array");
    bad_schema("{\"items\":{}}", "items: applies to type array only");
    bad_schema("{\"type\":\"object\",\"minItems\":1}", "minItems: applies to type array only");
    bad_schema("{\"type\":\"string\",\"maxItems\":1}", "maxItems: applies to type array only");
    bad_schema("{\"type\":\"array\",\"items\":[{}]}", "items: must be one schema");
    bad_schema("{\"type\":\"array\",\"items\":true}", "items: must be one schema");
    bad_schema(ARR("{\"type\":\"str\"}", ""), "items.type: must be one of");
    bad_schema(OBJ("\"f\":" ARR(OBJ("\"p\":{\"pattern\":\"x\"}", ""), ""), ""),
               "properties.f.items.properties.p.pattern: keyword not supported");
    bad_schema("{\"type\":\"array\",\"minItems\":-1}", "minItems: must be a non-negative integer");
    bad_schema("{\"type\":\"array\",\"minItems\":\"1\"}", "minItems: must be a non-negative");
    bad_schema("{\"type\":\"array\",\"maxItems\":1.5}", "maxItems: must be a non-negative");
    bad_schema("{\"type\":\"array\",\"maxItems\":null}", "maxItems: must be a non-negative");
    bad_schema("{\"type\":\"array\",\"minItems\":3,\"maxItems\":2}", "minItems: is above maxItems");
    bad_schema(ARR("{\"type\":\"integer\"}", ",\"maxItems\":1,\"default\":[1,2]"),
               "default: the default must have at most 1 item");
    bad_schema(ARR("{\"type\":\"integer\"}", ",\"default\":[1,\"x\"]"),
               "default: default property '[1]' must be an integer");
    bad_schema("{\"type\":\"string\",\"description\":1}", "description: must be a string");
    bad_schema("{\"type\":\"string\",\"title\":null}", "title: must be a string");
    /* A default must satisfy its own schema. */
    bad_schema(OBJ("\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"javascript\"],"
                   "\"default\":\"ruby\"}",
                   ""),
               "properties.language.default: the default must be \"python\" or \"javascript\", "
               "got \"ruby\"");
    bad_schema(OBJ("\"t\":{\"type\":\"integer\",\"minimum\":1,\"default\":0}", ""),
               "properties.t.default: the default must be at least 1");
    bad_schema("{\"type\":\"integer\",\"maximum\":10,\"default\":11}",
               "default: the default must be at most 10");
    bad_schema("{\"type\":\"integer\",\"default\":\"5\"}",
               "default: the default must be an integer");
    bad_schema("{\"type\":\"string\",\"maxLength\":1,\"default\":\"ab\"}",
               "default: the default must be at most 1 characters long");
    bad_schema(
        "{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"a\"],\"default\":{}}",
        "default: missing required default property 'a'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integer),
        cmocka_unit_test(test_type),
        cmocka_unit_test(test_properties_and_required),
        cmocka_unit_test(test_additional_properties),
        cmocka_unit_test(test_enum),
        cmocka_unit_test(test_minimum_maximum),
        cmocka_unit_test(test_max_length),
        cmocka_unit_test(test_any_of),
        cmocka_unit_test(test_annotations_ignored),
        cmocka_unit_test(test_array),
        cmocka_unit_test(test_array_of_objects),
        cmocka_unit_test(test_min_max_items),
        cmocka_unit_test(test_additional_properties_schema),
        cmocka_unit_test(test_check_accepts),
        cmocka_unit_test(test_check_rejects),
    };
    return cmocka_run_group_tests_name("schema", tests, NULL, NULL);
}
