#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "tools/registry.h"
#include "tools/tooldef.h"

#define SCHEMA "{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\"}}}"

static json_object *parse_ok(const char *text)
{
    struct err err = ERR_INIT;
    json_object *o = tooldef_parse(text, strlen(text), &err);
    if (!o)
        fail_msg("%s: %s", text, err_msg(&err));
    return o;
}

static void parse_bad(const char *text, const char *needle)
{
    struct err err = ERR_INIT;
    json_object *o = tooldef_parse(text, strlen(text), &err);
    if (o)
        fail_msg("%s parsed", text);
    assert_int_equal(err.code, ERR_INVALID);
    if (!strstr(err_msg(&err), needle))
        fail_msg("%s: '%s' does not mention '%s'", text, err_msg(&err), needle);
    err_clear(&err);
}

/* tooldef_check's message for text must contain needle. */
static void check_bad(const char *text, const char *needle)
{
    json_object *o = parse_ok(text);
    struct tooldef_checked def;
    struct err err = ERR_INIT;
    if (tooldef_check(o, &def, &err) == 0)
        fail_msg("%s passed the check", text);
    if (!strstr(err_msg(&err), needle))
        fail_msg("%s: '%s' does not mention '%s'", text, err_msg(&err), needle);
    err_clear(&err);
    json_object_put(o);
}

static void test_parse(void **state)
{
    (void)state;
    json_object_put(parse_ok(" {\"a\": [1, 2.5, null]}\n\n"));
    parse_bad("{\"a\":1", "ends inside a value");
    parse_bad("{\"a\":1} {}", "invalid JSON"); /* strict json-c stops at the 2nd value */
    parse_bad("{\"a\":1,\n}", "invalid JSON at line 2, column 1");
    /* What json-c's strict mode still lets through. */
    parse_bad("{'a':1}", "invalid JSON at line 1, column 2: unexpected character 0x27");
    parse_bad("{\"a\":NaN}", "invalid JSON at line 1, column 6");
    parse_bad("{\"a\":-Infinity}", "invalid JSON at line 1, column 7");
    parse_bad("{\"a\":\"tab\there\"}", "at line 1, column 10: unexpected character 0x09");
    parse_bad("{\"a\":\"\xff\"}", "invalid JSON");
    json_object_put(parse_ok("{\"a\":\"\\\"'\\\\ NaN \xc3\xa9\"}"));
    parse_bad("{\"a\":1 /* no comments */}", "invalid JSON at line 1");
    parse_bad("[1]", "must be a JSON object");
    parse_bad("null\n", "must be a JSON object");
}

static void test_check(void **state)
{
    (void)state;
    json_object *o = parse_ok("{\"name\":\"t\",\"title\":\"T\",\"description\":\"D\","
                              "\"inputSchema\":" SCHEMA "}");
    struct tooldef_checked def;
    struct err err = ERR_INIT;
    assert_int_equal(tooldef_check(o, &def, &err), 0);
    assert_string_equal(def.name, "t");
    assert_string_equal(def.title, "T");
    assert_string_equal(def.description, "D");
    assert_true(json_object_is_type(def.input_schema, json_type_object));
    json_object_put(o);

    check_bad("{\"title\":\"T\",\"description\":\"D\",\"inputSchema\":" SCHEMA "}",
              "missing 'name'");
    check_bad("{\"name\":\"t\",\"description\":\"D\",\"inputSchema\":" SCHEMA "}",
              "missing 'title'");
    check_bad("{\"name\":\"t\",\"title\":\"T\",\"inputSchema\":" SCHEMA "}",
              "missing 'description'");
    check_bad("{\"name\":\"t\",\"title\":\"T\",\"description\":\"D\"}", "missing 'inputSchema'");
    check_bad("{\"name\":\"\",\"title\":\"T\",\"description\":\"D\",\"inputSchema\":" SCHEMA "}",
              "'name' must be a non-empty string");
    check_bad("{\"name\":\"t\",\"title\":\"T\",\"description\":7,\"inputSchema\":" SCHEMA "}",
              "'description' must be a non-empty string");
    check_bad("{\"name\":\"t\",\"title\":\"T\",\"description\":\"D\",\"inputSchema\":" SCHEMA
              ",\"outputSchema\":{}}",
              "outputSchema: type must be \"object\"");
    check_bad("{\"name\":\"t\",\"title\":\"T\",\"description\":\"D\",\"inputSchema\":" SCHEMA
              ",\"outputschema\":{}}",
              "unknown member 'outputschema'");
    check_bad("{\"name\":\"t\",\"title\":\"T\",\"description\":\"D\","
              "\"inputSchema\":{\"type\":\"string\"}}",
              "inputSchema: type must be \"object\"");
    check_bad("{\"name\":\"t\",\"title\":\"T\",\"description\":\"D\","
              "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
              "\"minimum\":1,\"default\":0}}}}",
              "inputSchema: properties.n.default: the default must be at least 1");
}

static void test_output_schema(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    json_object *o = parse_ok("{\"type\":\"object\",\"properties\":{\"x\":{\"type\":[\"integer\","
                              "\"null\"]}}}");
    assert_int_equal(tooldef_check_output_schema(o, &err), -1);
    assert_non_null(strstr(err_msg(&err), "outputSchema: properties.x.type: a type array"));
    err_clear(&err);
    json_object_put(o);
    o = parse_ok("{\"anyOf\":[{\"type\":\"object\"}]}");
    assert_int_equal(tooldef_check_output_schema(o, &err), -1);
    assert_non_null(strstr(err_msg(&err), "outputSchema: type must be \"object\""));
    err_clear(&err);
    json_object_put(o);
}

/* The embedded files, as the daemon serves them. */
static void test_embedded(void **state)
{
    (void)state;
    const struct {
        const char *name;
        const char *text;
    } tools[] = {
        {"run_python_code", tooldef_run_python_code},   {"run_js_code", tooldef_run_js_code},
        {"execute_code", tooldef_execute_code},         {"validate_code", tooldef_validate_code},
        {"list_languages", tooldef_list_languages},     {"create_session", tooldef_create_session},
        {"list_sessions", tooldef_list_sessions},       {"close_session", tooldef_close_session},
        {"install_packages", tooldef_install_packages},
    };
    /* Every tool the registry has, and each with its own file. */
    assert_int_equal(ARRAY_SIZE(tools), REGISTRY_TOOLS);
    for (size_t i = 0; i < ARRAY_SIZE(tools); i++) {
        json_object *o = parse_ok(tools[i].text);
        struct tooldef_checked def;
        struct err err = ERR_INIT;
        if (tooldef_check(o, &def, &err) < 0)
            fail_msg("%s: %s", tools[i].name, err_msg(&err));
        assert_string_equal(def.name, tools[i].name);
        assert_ptr_equal(registry_at(i)->def, tools[i].text);
        /* The session tools' results are their own, not a run's. */
        if (registry_is_session_tool(registry_at(i)))
            assert_non_null(def.output_schema);
        json_object_put(o);
    }
    json_object *o = parse_ok(tooldef_output_schema);
    assert_int_equal(tooldef_check_output_schema(o, NULL), 0);
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_output_schema),
        cmocka_unit_test(test_embedded),
    };
    return cmocka_run_group_tests_name("tooldef", tests, NULL, NULL);
}
