/* Checking a tool definition's schema: only the keywords schema.c
 * validates, each well formed and on a node of its type, every default
 * valid against its own schema. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "tools/schema.h"

#define KEYWORDS                                                                                   \
    "type, properties, required, additionalProperties, items, minItems, maxItems, enum, minimum, " \
    "maximum, maxLength, anyOf, description, title, default"

static const char *const keywords[] = {
    "type",        "properties", "required",  "additionalProperties",
    "items",       "minItems",   "maxItems",  "enum",
    "minimum",     "maximum",    "maxLength", "anyOf",
    "description", "title",      "default",
};

/* A keyword's value; NULL when absent (JSON null is never a valid one). */
static json_object *kw(json_object *schema, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(schema, key, &v) ? v : NULL;
}

static int bad(const char *path, const char *key, struct err *err, const char *fmt, ...)
    ATTR_PRINTF(4, 5);

/* An error at path.key (key may be NULL: the node itself). */
static int bad(const char *path, const char *key, struct err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *what = xvasprintf(fmt, ap);
    va_end(ap);
    if (path && key)
        err_set(err, ERR_INVALID, "%s.%s: %s", path, key, what);
    else if (path || key)
        err_set(err, ERR_INVALID, "%s: %s", path ? path : key, what);
    else
        err_set(err, ERR_INVALID, "%s", what);
    free(what);
    return -1;
}

static bool same_type(const char *type, const char *a, const char *b)
{
    return type && (strcmp(type, a) == 0 || (b && strcmp(type, b) == 0));
}

static int check_node(json_object *s, const char *path, struct err *err);

static int check_properties(json_object *props, const char *path, struct err *err)
{
    if (!json_object_is_type(props, json_type_object))
        return bad(path, "properties", err, "must be an object of schemas");
    json_object_object_foreach(props, name, sub)
    {
        char *base = schema_join_path(path, "properties");
        char *p = schema_join_path(base, name);
        int rc = check_node(sub, p, err);
        free(p);
        free(base);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int check_required(json_object *req, json_object *props, const char *path, struct err *err)
{
    if (!json_object_is_type(req, json_type_array))
        return bad(path, "required", err, "must be an array of property names");
    size_t n = json_object_array_length(req);
    for (size_t i = 0; i < n; i++) {
        json_object *name = json_object_array_get_idx(req, i);
        if (!json_object_is_type(name, json_type_string))
            return bad(path, "required", err, "must be an array of property names");
        const char *s = json_object_get_string(name);
        if (!props || !json_object_object_get_ex(props, s, NULL))
            return bad(path, "required", err, "'%s' is not in properties", s);
        for (size_t j = 0; j < i; j++)
            if (strcmp(json_object_get_string(json_object_array_get_idx(req, j)), s) == 0)
                return bad(path, "required", err, "'%s' is listed twice", s);
    }
    return 0;
}

static int check_enum(json_object *values, const char *type, const char *path, struct err *err)
{
    if (!json_object_is_type(values, json_type_array) || json_object_array_length(values) == 0)
        return bad(path, "enum", err, "must be a non-empty array");
    size_t n = json_object_array_length(values);
    for (size_t i = 0; i < n; i++) {
        json_object *v = json_object_array_get_idx(values, i);
        if (type && !schema_type_matches(type, v))
            return bad(path, "enum", err, "%s is not %s", schema_json_text(v),
                       schema_type_noun(type));
        for (size_t j = 0; j < i; j++)
            if (json_object_equal(json_object_array_get_idx(values, j), v))
                return bad(path, "enum", err, "%s is listed twice", schema_json_text(v));
    }
    return 0;
}

static int check_anyof(json_object *any, const char *path, struct err *err)
{
    if (!json_object_is_type(any, json_type_array) || json_object_array_length(any) == 0)
        return bad(path, "anyOf", err, "must be a non-empty array of schemas");
    size_t n = json_object_array_length(any);
    for (size_t i = 0; i < n; i++) {
        char *p = path ? xasprintf("%s.anyOf[%zu]", path, i) : xasprintf("anyOf[%zu]", i);
        int rc = check_node(json_object_array_get_idx(any, i), p, err);
        free(p);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int check_bounds(json_object *s, const char *type, const char *path, struct err *err)
{
    json_object *min = kw(s, "minimum");
    json_object *max = kw(s, "maximum");
    const char *names[] = {"minimum", "maximum"};
    json_object *vals[] = {min, max};
    for (size_t i = 0; i < 2; i++) {
        if (!vals[i])
            continue;
        if (!schema_is_number(vals[i]))
            return bad(path, names[i], err, "must be a number");
        if (!same_type(type, "integer", "number"))
            return bad(path, names[i], err, "applies to type integer or number only");
    }
    if (min && max && schema_num_cmp(min, max) > 0)
        return bad(path, "minimum", err, "is above maximum");
    json_object *max_len = kw(s, "maxLength");
    long long n = 0;
    if (max_len && (!schema_integer(max_len, &n) || n < 0))
        return bad(path, "maxLength", err, "must be a non-negative integer");
    if (max_len && !same_type(type, "string", NULL))
        return bad(path, "maxLength", err, "applies to type string only");
    return 0;
}

static int check_array(json_object *s, const char *type, const char *path, struct err *err)
{
    const char *array_only[] = {"items", "minItems", "maxItems"};
    for (size_t i = 0; i < ARRAY_SIZE(array_only); i++)
        if (json_object_object_get_ex(s, array_only[i], NULL) && !same_type(type, "array", NULL))
            return bad(path, array_only[i], err, "applies to type array only");
    const char *counts[] = {"minItems", "maxItems"};
    long long n[2] = {0, -1};
    for (size_t i = 0; i < ARRAY_SIZE(counts); i++) {
        json_object *v = NULL;
        if (json_object_object_get_ex(s, counts[i], &v) && (!schema_integer(v, &n[i]) || n[i] < 0))
            return bad(path, counts[i], err, "must be a non-negative integer");
    }
    if (n[1] >= 0 && n[0] > n[1])
        return bad(path, "minItems", err, "is above maxItems");
    json_object *items = NULL;
    if (!json_object_object_get_ex(s, "items", &items))
        return 0;
    /* One schema for every element (schema_check refuses the tuple form). */
    if (!json_object_is_type(items, json_type_object))
        return bad(path, "items", err, "must be one schema (a JSON object)");
    char *p = schema_join_path(path, "items");
    int rc = check_node(items, p, err);
    free(p);
    return rc;
}

/* Only keywords the validator implements, and a type it knows. */
static int check_keywords(json_object *s, const char *path, const char **type, struct err *err)
{
    json_object_object_foreach(s, key, val)
    {
        (void)val;
        if (!util_one_of(key, keywords, ARRAY_SIZE(keywords)))
            return bad(path, key, err,
                       "keyword not supported by the validator (src/tools/schema.c implements "
                       "%s)",
                       KEYWORDS);
    }
    json_object *t = kw(s, "type");
    *type = NULL;
    if (!json_object_object_get_ex(s, "type", NULL))
        return 0;
    if (json_object_is_type(t, json_type_array))
        return bad(path, "type", err,
                   "a type array is not supported: write anyOf with one type per branch, "
                   "e.g. {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"null\"}]}");
    if (!json_object_is_type(t, json_type_string) || !schema_type_noun(json_object_get_string(t)))
        return bad(path, "type", err,
                   "must be one of \"object\", \"array\", \"string\", \"integer\", "
                   "\"number\", \"boolean\", \"null\"");
    *type = json_object_get_string(t);
    return 0;
}

static int check_object(json_object *s, const char *type, const char *path, struct err *err)
{
    json_object *props = kw(s, "properties");
    const char *object_only[] = {"properties", "required", "additionalProperties"};
    for (size_t i = 0; i < ARRAY_SIZE(object_only); i++)
        if (json_object_object_get_ex(s, object_only[i], NULL) && !same_type(type, "object", NULL))
            return bad(path, object_only[i], err, "applies to type object only");
    if (json_object_object_get_ex(s, "properties", NULL) && check_properties(props, path, err) < 0)
        return -1;
    if (json_object_object_get_ex(s, "required", NULL) &&
        check_required(kw(s, "required"), props, path, err) < 0)
        return -1;
    if (!json_object_object_get_ex(s, "additionalProperties", NULL))
        return 0;
    json_object *extra = kw(s, "additionalProperties");
    if (json_object_is_type(extra, json_type_object)) {
        char *p = schema_join_path(path, "additionalProperties");
        int rc = check_node(extra, p, err);
        free(p);
        return rc;
    }
    if (!json_object_is_type(extra, json_type_boolean) || json_object_get_boolean(extra))
        return bad(path, "additionalProperties", err,
                   "must be false or a schema (leave it out to allow any property)");
    return 0;
}

static int check_node(json_object *s, const char *path, struct err *err)
{
    if (!json_object_is_type(s, json_type_object))
        return bad(path, NULL, err, "a schema must be a JSON object");
    const char *type = NULL;
    if (check_keywords(s, path, &type, err) < 0 || check_object(s, type, path, err) < 0)
        return -1;
    if (check_array(s, type, path, err) < 0)
        return -1;
    if (json_object_object_get_ex(s, "enum", NULL) &&
        check_enum(kw(s, "enum"), type, path, err) < 0)
        return -1;
    if (check_bounds(s, type, path, err) < 0)
        return -1;
    if (json_object_object_get_ex(s, "anyOf", NULL) && check_anyof(kw(s, "anyOf"), path, err) < 0)
        return -1;
    const char *texts[] = {"description", "title"};
    for (size_t i = 0; i < ARRAY_SIZE(texts); i++)
        if (json_object_object_get_ex(s, texts[i], NULL) &&
            !json_object_is_type(kw(s, texts[i]), json_type_string))
            return bad(path, texts[i], err, "must be a string");

    /* Last: validating the default relies on the rest being well formed. */
    json_object *def = NULL;
    if (json_object_object_get_ex(s, "default", &def)) {
        struct schema_node *n = schema_compile(s);
        struct err e = ERR_INIT;
        int rc = schema_validate_default(n, def, &e);
        schema_node_free(n);
        if (rc < 0) {
            bad(path, "default", err, "%s", err_msg(&e));
            err_clear(&e);
            return -1;
        }
    }
    return 0;
}

int schema_check(json_object *schema, struct err *err)
{
    return check_node(schema, NULL, err);
}
