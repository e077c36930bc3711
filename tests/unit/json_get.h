/* For the unit tests that read JSON answers: a member that must be there,
 * and a text that must parse. Include after cmocka.h: what is missing
 * fails the test, naming it. */
#ifndef MCPSBX_TEST_JSON_GET_H
#define MCPSBX_TEST_JSON_GET_H

#include <json-c/json.h>

/* o's member key; fails the test, showing o, without one. */
static inline json_object *json_get(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v))
        fail_msg("no '%s' in %.300s", key, json_object_to_json_string(o));
    return v;
}

/* text parsed (the caller puts it); fails the test, showing what, when
 * text is not JSON. */
static inline json_object *json_parse_or_fail(const char *what, const char *text)
{
    json_object *o = json_tokener_parse(text);
    if (!o)
        fail_msg("%s is not JSON: %.200s", what, text);
    return o;
}

#endif
