#include "tools/schema.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

#define KEYWORDS                                                                                   \
    "type, properties, required, additionalProperties, items, minItems, maxItems, enum, minimum, " \
    "maximum, maxLength, anyOf, description, title, default"

static const char *const keywords[] = {
    "type",        "properties", "required",  "additionalProperties",
    "items",       "minItems",   "maxItems",  "enum",
    "minimum",     "maximum",    "maxLength", "anyOf",
    "description", "title",      "default",
};

static const struct {
    const char *name;
    const char *noun; /* as in "must be <noun>" */
} types[] = {
    {"object", "an object"}, {"string", "a string"},   {"integer", "an integer"},
    {"number", "a number"},  {"boolean", "a boolean"}, {"null", "null"},
    {"array", "an array"},
};

/* How messages name what is validated. */
struct vctx {
    unsigned flags;
    const char *whole; /* the value itself */
    const char *part;  /* one of its properties, followed by its name */
};

/* A keyword's value; NULL when absent (JSON null is never a valid one). */
static json_object *kw(json_object *schema, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(schema, key, &v) ? v : NULL;
}

static const char *type_noun(const char *type)
{
    for (size_t i = 0; i < ARRAY_SIZE(types); i++)
        if (strcmp(types[i].name, type) == 0)
            return types[i].noun;
    return NULL;
}

bool schema_integer(json_object *v, long long *out)
{
    long long n = 0;
    if (json_object_is_type(v, json_type_int)) {
        n = (long long)json_object_get_int64(v);
    } else if (json_object_is_type(v, json_type_double)) {
        double d = json_object_get_double(v);
        if (!isfinite(d) || d != floor(d) || fabs(d) > 9e15)
            return false;
        n = (long long)d;
    } else {
        return false;
    }
    if (out)
        *out = n;
    return true;
}

static bool is_number(json_object *v)
{
    return json_object_is_type(v, json_type_int) ||
           (json_object_is_type(v, json_type_double) && isfinite(json_object_get_double(v)));
}

static bool type_matches(const char *type, json_object *v)
{
    if (strcmp(type, "object") == 0)
        return json_object_is_type(v, json_type_object);
    if (strcmp(type, "string") == 0)
        return json_object_is_type(v, json_type_string);
    if (strcmp(type, "integer") == 0)
        return schema_integer(v, NULL);
    if (strcmp(type, "number") == 0)
        return is_number(v);
    if (strcmp(type, "boolean") == 0)
        return json_object_is_type(v, json_type_boolean);
    if (strcmp(type, "null") == 0)
        return json_object_is_type(v, json_type_null);
    if (strcmp(type, "array") == 0)
        return json_object_is_type(v, json_type_array);
    return false;
}

/* Compares two numbers: <0, 0 or >0. Exact for two ints. */
static int num_cmp(json_object *a, json_object *b)
{
    if (json_object_is_type(a, json_type_int) && json_object_is_type(b, json_type_int)) {
        int64_t x = json_object_get_int64(a);
        int64_t y = json_object_get_int64(b);
        return (x > y) - (x < y);
    }
    double x = json_object_get_double(a);
    double y = json_object_get_double(b);
    return (x > y) - (x < y);
}

static const char *json_text(json_object *v)
{
    return json_object_to_json_string_ext(v,
                                          JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* "a", "a or b", "a, b or c": item i of n. */
/* A message lists a schema's alternatives (types, enum values) while they
 * fit in this; past it, it says how many there are. The built-in schemas
 * list a few dozen short names; execute_code's language enum from a
 * languages file of LANGTABLE_MAX_LANGUAGES with every alias would be a
 * list of some 20 KB, more than anyone reads in a message. */
#define ALTERNATIVES_MAX 2048

static int add_alternative(struct buf *b, size_t i, size_t n, const char *text)
{
    int rc = 0;
    if (i > 0)
        rc = buf_addf(b, "%s", i + 1 == n ? " or " : ", ");
    return rc | buf_addf(b, "%s", text);
}

static char *join_path(const char *path, const char *name)
{
    return path ? xasprintf("%s.%s", path, name) : xstrdup(name);
}

/* "files[2]"; "[2]" for an element of the value itself. */
static char *join_index(const char *path, size_t i)
{
    return xasprintf("%s[%zu]", path ? path : "", i);
}

/* ---- validation ---------------------------------------------------------- */

static int fail(const struct vctx *c, const char *path, struct err *err, const char *fmt, ...)
    ATTR_PRINTF(4, 5);

static int fail(const struct vctx *c, const char *path, struct err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *what = xvasprintf(fmt, ap);
    va_end(ap);
    if (path)
        err_set(err, ERR_INVALID, "%s '%s' %s", c->part, path, what);
    else
        err_set(err, ERR_INVALID, "%s %s", c->whole, what);
    free(what);
    return -1;
}

static int validate(const struct vctx *c, json_object *s, json_object *v, const char *path,
                    struct err *err);

static bool listed(json_object *names, const char *name)
{
    size_t n = names ? json_object_array_length(names) : 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(json_object_get_string(json_object_array_get_idx(names, i)), name) == 0)
            return true;
    return false;
}

static int missing(const struct vctx *c, const char *path, struct err *err)
{
    return err_set(err, ERR_INVALID, "missing required %s '%s'", c->part, path);
}

static bool absent(const struct vctx *c, json_object *obj, const char *name)
{
    json_object *v = NULL;
    return !json_object_object_get_ex(obj, name, &v) || (!v && (c->flags & SCHEMA_NULL_IS_ABSENT));
}

static int validate_object(const struct vctx *c, json_object *s, json_object *v, const char *path,
                           struct err *err)
{
    json_object *props = kw(s, "properties");
    json_object *required = kw(s, "required");
    json_object *extra = kw(s, "additionalProperties");
    /* false, or the schema of every property not in properties. */
    bool closed = extra && json_object_is_type(extra, json_type_boolean);
    if (extra) {
        json_object_object_foreach(v, key, val)
        {
            if (props && json_object_object_get_ex(props, key, NULL))
                continue;
            if (closed && path)
                return err_set(err, ERR_INVALID, "unknown %s '%s.%.64s'", c->part, path, key);
            if (closed)
                return err_set(err, ERR_INVALID, "unknown %s '%.64s'", c->part, key);
            if (absent(c, v, key))
                continue;
            /* A client's name is cut short, as in the unknown-name message. */
            char *short_key = xstrndup(key, 64);
            char *p = join_path(path, short_key);
            int rc = validate(c, extra, val, p, err);
            free(p);
            free(short_key);
            if (rc < 0)
                return -1;
        }
    }
    if (props) {
        json_object_object_foreach(props, name, sub)
        {
            char *p = join_path(path, name);
            int rc = 0;
            if (!absent(c, v, name)) {
                json_object *pv = NULL;
                json_object_object_get_ex(v, name, &pv);
                rc = validate(c, sub, pv, p, err);
            } else if (listed(required, name)) {
                rc = missing(c, p, err);
            }
            free(p);
            if (rc < 0)
                return -1;
        }
    }
    /* Required names without a property schema (schema_check refuses them). */
    size_t n = required ? json_object_array_length(required) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = json_object_get_string(json_object_array_get_idx(required, i));
        if ((!props || !json_object_object_get_ex(props, name, NULL)) && absent(c, v, name)) {
            char *p = join_path(path, name);
            missing(c, p, err);
            free(p);
            return -1;
        }
    }
    return 0;
}

/* Code points, as JSON Schema counts string length. */
static size_t utf8_length(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            count++;
    return count;
}

static int validate_array(const struct vctx *c, json_object *s, json_object *v, const char *path,
                          struct err *err)
{
    size_t n = json_object_array_length(v);
    long long min = 0;
    long long max = 0;
    json_object *min_items = kw(s, "minItems");
    json_object *max_items = kw(s, "maxItems");
    if (min_items && schema_integer(min_items, &min) && n < (unsigned long long)min)
        return fail(c, path, err, "must have at least %lld item%s", min, min == 1 ? "" : "s");
    if (max_items && schema_integer(max_items, &max) && n > (unsigned long long)max)
        return fail(c, path, err, "must have at most %lld item%s", max, max == 1 ? "" : "s");
    json_object *items = kw(s, "items");
    for (size_t i = 0; items && i < n; i++) {
        char *p = join_index(path, i);
        int rc = validate(c, items, json_object_array_get_idx(v, i), p, err);
        free(p);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int validate_anyof(const struct vctx *c, json_object *any, json_object *v, const char *path,
                          struct err *err)
{
    size_t n = json_object_array_length(any);
    struct err only = ERR_INIT; /* the error of the one branch of the value's type */
    size_t candidates = 0;
    bool all_typed = true;
    for (size_t i = 0; i < n; i++) {
        json_object *branch = json_object_array_get_idx(any, i);
        struct err e = ERR_INIT;
        if (validate(c, branch, v, path, &e) == 0) {
            err_clear(&only);
            return 0;
        }
        json_object *type = kw(branch, "type");
        if (!type)
            all_typed = false;
        if (!type || type_matches(json_object_get_string(type), v)) {
            if (++candidates == 1)
                err_move(&only, &e);
        }
        err_clear(&e);
    }
    /* Within the branch for the value's type, that branch's complaint is
     * the useful one ("at least 1"); otherwise list the types allowed. */
    if (candidates == 1) {
        if (err)
            err_move(err, &only);
        err_clear(&only);
        return -1;
    }
    err_clear(&only);
    if (!all_typed)
        return fail(c, path, err, "must match one of the schemas in anyOf");
    struct buf b;
    buf_init(&b, ALTERNATIVES_MAX);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *type = kw(json_object_array_get_idx(any, i), "type");
        rc |= add_alternative(&b, i, n, type_noun(json_object_get_string(type)));
    }
    if (rc < 0)
        fail(c, path, err, "must be of one of the %zu types its anyOf lists", n);
    else
        fail(c, path, err, "must be %s", buf_cstr(&b));
    buf_free(&b);
    return -1;
}

static int validate_enum(const struct vctx *c, json_object *values, json_object *v,
                         const char *path, struct err *err)
{
    size_t n = json_object_array_length(values);
    for (size_t i = 0; i < n; i++)
        if (json_object_equal(json_object_array_get_idx(values, i), v))
            return 0;
    struct buf b;
    buf_init(&b, ALTERNATIVES_MAX);
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        rc |= add_alternative(&b, i, n, json_text(json_object_array_get_idx(values, i)));
    const char *list = buf_cstr(&b);
    char many[64];
    if (rc < 0) {
        snprintf(many, sizeof(many), "one of the %zu values its enum lists", n);
        list = many;
    }
    /* A string is shown as given (cut short), like any other message text. */
    if (json_object_is_type(v, json_type_string))
        fail(c, path, err, "must be %s, got \"%.32s\"", list, json_object_get_string(v));
    else
        fail(c, path, err, "must be %s, got %.32s", list, json_text(v));
    buf_free(&b);
    return -1;
}

static int validate(const struct vctx *c, json_object *s, json_object *v, const char *path,
                    struct err *err)
{
    json_object *type = kw(s, "type");
    if (type && !type_matches(json_object_get_string(type), v))
        return fail(c, path, err, "must be %s", type_noun(json_object_get_string(type)));
    json_object *any = kw(s, "anyOf");
    if (any && validate_anyof(c, any, v, path, err) < 0)
        return -1;
    json_object *values = kw(s, "enum");
    if (values && validate_enum(c, values, v, path, err) < 0)
        return -1;

    if (json_object_is_type(v, json_type_object))
        return validate_object(c, s, v, path, err);
    if (json_object_is_type(v, json_type_array))
        return validate_array(c, s, v, path, err);
    json_object *max_len = kw(s, "maxLength");
    long long limit = 0;
    if (max_len && json_object_is_type(v, json_type_string) && schema_integer(max_len, &limit) &&
        utf8_length(json_object_get_string(v), (size_t)json_object_get_string_len(v)) >
            (size_t)limit)
        return fail(c, path, err, "must be at most %lld characters long", limit);
    if (is_number(v)) {
        json_object *min = kw(s, "minimum");
        json_object *max = kw(s, "maximum");
        if (min && num_cmp(v, min) < 0)
            return fail(c, path, err, "must be at least %s", json_text(min));
        if (max && num_cmp(v, max) > 0)
            return fail(c, path, err, "must be at most %s", json_text(max));
    }
    return 0;
}

int schema_validate(json_object *schema, json_object *value, unsigned flags, struct err *err)
{
    struct vctx c = {flags, "arguments", "argument"};
    return validate(&c, schema, value, NULL, err);
}

/* ---- checking a schema --------------------------------------------------- */

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
        char *base = join_path(path, "properties");
        char *p = join_path(base, name);
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
        if (type && !type_matches(type, v))
            return bad(path, "enum", err, "%s is not %s", json_text(v), type_noun(type));
        for (size_t j = 0; j < i; j++)
            if (json_object_equal(json_object_array_get_idx(values, j), v))
                return bad(path, "enum", err, "%s is listed twice", json_text(v));
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
        if (!is_number(vals[i]))
            return bad(path, names[i], err, "must be a number");
        if (!same_type(type, "integer", "number"))
            return bad(path, names[i], err, "applies to type integer or number only");
    }
    if (min && max && num_cmp(min, max) > 0)
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
    char *p = join_path(path, "items");
    int rc = check_node(items, p, err);
    free(p);
    return rc;
}

static int check_node(json_object *s, const char *path, struct err *err)
{
    if (!json_object_is_type(s, json_type_object))
        return bad(path, NULL, err, "a schema must be a JSON object");
    json_object_object_foreach(s, key, val)
    {
        (void)val;
        bool known = false;
        for (size_t i = 0; i < ARRAY_SIZE(keywords) && !known; i++)
            known = strcmp(keywords[i], key) == 0;
        if (!known)
            return bad(path, key, err,
                       "keyword not supported by the validator (src/tools/schema.c implements "
                       "%s)",
                       KEYWORDS);
    }

    json_object *t = kw(s, "type");
    const char *type = NULL;
    if (json_object_object_get_ex(s, "type", NULL)) {
        if (json_object_is_type(t, json_type_array))
            return bad(path, "type", err,
                       "a type array is not supported: write anyOf with one type per branch, "
                       "e.g. {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"null\"}]}");
        if (!json_object_is_type(t, json_type_string) || !type_noun(json_object_get_string(t)))
            return bad(path, "type", err,
                       "must be one of \"object\", \"array\", \"string\", \"integer\", "
                       "\"number\", \"boolean\", \"null\"");
        type = json_object_get_string(t);
    }

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
    if (json_object_object_get_ex(s, "additionalProperties", NULL)) {
        json_object *extra = kw(s, "additionalProperties");
        if (json_object_is_type(extra, json_type_object)) {
            char *p = join_path(path, "additionalProperties");
            int rc = check_node(extra, p, err);
            free(p);
            if (rc < 0)
                return -1;
        } else if (!json_object_is_type(extra, json_type_boolean) ||
                   json_object_get_boolean(extra)) {
            return bad(path, "additionalProperties", err,
                       "must be false or a schema (leave it out to allow any property)");
        }
    }
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
        struct vctx c = {0, "the default", "default property"};
        struct err e = ERR_INIT;
        if (validate(&c, s, def, NULL, &e) < 0) {
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
