#include "tools/schema.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

/* The types, by their JSON Schema name; T_ANY: no "type" keyword. */
enum type { T_ANY, T_OBJECT, T_STRING, T_INTEGER, T_NUMBER, T_BOOLEAN, T_NULL, T_ARRAY };

static const struct {
    const char *name;
    const char *noun; /* as in "must be <noun>" */
} types[] = {
    [T_OBJECT] = {"object", "an object"},    [T_STRING] = {"string", "a string"},
    [T_INTEGER] = {"integer", "an integer"}, [T_NUMBER] = {"number", "a number"},
    [T_BOOLEAN] = {"boolean", "a boolean"},  [T_NULL] = {"null", "null"},
    [T_ARRAY] = {"array", "an array"},
};

struct prop {
    char *name;
    struct schema_node *node;
    bool required;
};

/* minimum or maximum: the number as given (exact for an int), and its
 * text for messages. */
struct bound {
    bool set;
    bool is_int;
    int64_t i;
    double d;
    char *text;
};

/* An enum's value: its JSON text (messages, and equality for non-strings)
 * and, for a string, the string. */
struct enum_value {
    char *text;
    char *str; /* NULL: not a string */
    size_t str_len;
};

struct schema_node {
    enum type type;
    struct prop *props; /* in the schema's order */
    size_t n_props;
    char **required_extra; /* required names with no property schema */
    size_t n_required_extra;
    bool has_extra;
    bool closed;               /* additionalProperties: false */
    struct schema_node *extra; /* or the schema of the others */
    struct schema_node *items;
    bool has_min_items, has_max_items;
    long long min_items, max_items;
    struct enum_value *enums;
    size_t n_enums;
    bool has_enum;
    struct bound minimum, maximum;
    bool has_max_length;
    long long max_length;
    struct schema_node *any; /* anyOf's branches */
    size_t n_any;
};

/* How messages name what is validated. */
struct vctx {
    unsigned flags;
    const char *whole; /* the value itself */
    const char *part;  /* one of its properties, followed by its name */
};

/* ---- shared helpers -------------------------------------------------------- */

static enum type type_of(const char *name)
{
    for (size_t i = 1; name && i < ARRAY_SIZE(types); i++)
        if (strcmp(types[i].name, name) == 0)
            return (enum type)i;
    return T_ANY;
}

const char *schema_type_noun(const char *type)
{
    enum type t = type_of(type);
    return t == T_ANY ? NULL : types[t].noun;
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

bool schema_is_number(json_object *v)
{
    return json_object_is_type(v, json_type_int) ||
           (json_object_is_type(v, json_type_double) && isfinite(json_object_get_double(v)));
}

static bool matches(enum type t, json_object *v)
{
    switch (t) {
    case T_OBJECT:
        return json_object_is_type(v, json_type_object);
    case T_STRING:
        return json_object_is_type(v, json_type_string);
    case T_INTEGER:
        return schema_integer(v, NULL);
    case T_NUMBER:
        return schema_is_number(v);
    case T_BOOLEAN:
        return json_object_is_type(v, json_type_boolean);
    case T_NULL:
        return json_object_is_type(v, json_type_null);
    case T_ARRAY:
        return json_object_is_type(v, json_type_array);
    case T_ANY:
        return true;
    }
    return false;
}

bool schema_type_matches(const char *type, json_object *v)
{
    enum type t = type_of(type);
    return t != T_ANY && matches(t, v);
}

int schema_num_cmp(json_object *a, json_object *b)
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

const char *schema_json_text(json_object *v)
{
    return json_object_to_json_string_ext(v,
                                          JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

char *schema_join_path(const char *path, const char *name)
{
    return path ? xasprintf("%s.%s", path, name) : xstrdup(name);
}

/* ---- compiling ------------------------------------------------------------- */

static json_object *kw(json_object *schema, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(schema, key, &v) ? v : NULL;
}

static void bound_set(struct bound *b, json_object *v)
{
    if (!v || !schema_is_number(v))
        return;
    b->set = true;
    b->is_int = json_object_is_type(v, json_type_int);
    b->i = json_object_get_int64(v);
    b->d = json_object_get_double(v);
    b->text = xstrdup(schema_json_text(v));
}

static bool listed(json_object *names, const char *name)
{
    size_t n = names ? json_object_array_length(names) : 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(json_object_get_string(json_object_array_get_idx(names, i)), name) == 0)
            return true;
    return false;
}

static void compile_object(struct schema_node *n, json_object *s)
{
    json_object *props = kw(s, "properties");
    json_object *required = kw(s, "required");
    n->n_props = props ? (size_t)json_object_object_length(props) : 0;
    n->props = xcalloc(n->n_props ? n->n_props : 1, sizeof(*n->props));
    size_t k = 0;
    if (props) {
        json_object_object_foreach(props, name, sub)
        {
            n->props[k] = (struct prop){xstrdup(name), schema_compile(sub), listed(required, name)};
            k++;
        }
    }
    size_t nr = required ? json_object_array_length(required) : 0;
    n->required_extra = xcalloc(nr ? nr : 1, sizeof(char *));
    for (size_t i = 0; i < nr; i++) {
        const char *name = json_object_get_string(json_object_array_get_idx(required, i));
        if (!props || !json_object_object_get_ex(props, name, NULL))
            n->required_extra[n->n_required_extra++] = xstrdup(name);
    }
    json_object *extra = NULL;
    n->has_extra = json_object_object_get_ex(s, "additionalProperties", &extra) && extra;
    n->closed = n->has_extra && json_object_is_type(extra, json_type_boolean);
    if (n->has_extra && !n->closed)
        n->extra = schema_compile(extra);
}

static void compile_enum(struct schema_node *n, json_object *values)
{
    n->has_enum = true;
    n->n_enums = json_object_array_length(values);
    n->enums = xcalloc(n->n_enums ? n->n_enums : 1, sizeof(*n->enums));
    for (size_t i = 0; i < n->n_enums; i++) {
        json_object *v = json_object_array_get_idx(values, i);
        n->enums[i].text = xstrdup(schema_json_text(v));
        if (json_object_is_type(v, json_type_string)) {
            n->enums[i].str_len = (size_t)json_object_get_string_len(v);
            n->enums[i].str = xmalloc(n->enums[i].str_len + 1);
            memcpy(n->enums[i].str, json_object_get_string(v), n->enums[i].str_len + 1);
        }
    }
}

static void compile_into(struct schema_node *n, json_object *s)
{
    json_object *t = kw(s, "type");
    n->type =
        t && json_object_is_type(t, json_type_string) ? type_of(json_object_get_string(t)) : T_ANY;
    compile_object(n, s);
    json_object *items = kw(s, "items");
    if (items)
        n->items = schema_compile(items);
    json_object *v = kw(s, "minItems");
    n->has_min_items = v && schema_integer(v, &n->min_items);
    v = kw(s, "maxItems");
    n->has_max_items = v && schema_integer(v, &n->max_items);
    v = kw(s, "maxLength");
    n->has_max_length = v && schema_integer(v, &n->max_length);
    bound_set(&n->minimum, kw(s, "minimum"));
    bound_set(&n->maximum, kw(s, "maximum"));
    v = kw(s, "enum");
    if (v && json_object_is_type(v, json_type_array))
        compile_enum(n, v);
    v = kw(s, "anyOf");
    if (v && json_object_is_type(v, json_type_array)) {
        n->n_any = json_object_array_length(v);
        n->any = xcalloc(n->n_any ? n->n_any : 1, sizeof(*n->any));
        for (size_t i = 0; i < n->n_any; i++)
            compile_into(&n->any[i], json_object_array_get_idx(v, i));
    }
}

struct schema_node *schema_compile(json_object *s)
{
    struct schema_node *n = xcalloc(1, sizeof(*n));
    compile_into(n, s);
    return n;
}

static void node_clear(struct schema_node *n)
{
    for (size_t i = 0; i < n->n_props; i++) {
        free(n->props[i].name);
        schema_node_free(n->props[i].node);
    }
    free(n->props);
    for (size_t i = 0; i < n->n_required_extra; i++)
        free(n->required_extra[i]);
    free(n->required_extra);
    schema_node_free(n->extra);
    schema_node_free(n->items);
    for (size_t i = 0; i < n->n_enums; i++) {
        free(n->enums[i].text);
        free(n->enums[i].str);
    }
    free(n->enums);
    free(n->minimum.text);
    free(n->maximum.text);
    for (size_t i = 0; i < n->n_any; i++)
        node_clear(&n->any[i]);
    free(n->any);
}

void schema_node_free(struct schema_node *n)
{
    if (!n)
        return;
    node_clear(n);
    free(n);
}

/* ---- validation ------------------------------------------------------------ */

/* A message lists a schema's alternatives (types, enum values) while they
 * fit in this; past it, it says how many there are. The built-in schemas
 * list a few dozen short names; execute_code's language enum from a
 * languages file of LANGTABLE_MAX_LANGUAGES with every alias would be a
 * list of some 20 KB, more than anyone reads in a message. */
#define ALTERNATIVES_MAX 2048

/* "a", "a or b", "a, b or c": item i of n. */
static int add_alternative(struct buf *b, size_t i, size_t n, const char *text)
{
    int rc = 0;
    if (i > 0)
        rc = buf_addf(b, "%s", i + 1 == n ? " or " : ", ");
    return rc | buf_addf(b, "%s", text);
}

/* "files[2]"; "[2]" for an element of the value itself. */
static char *join_index(const char *path, size_t i)
{
    return xasprintf("%s[%zu]", path ? path : "", i);
}

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

static int validate(const struct vctx *c, const struct schema_node *s, json_object *v,
                    const char *path, struct err *err);

static int missing(const struct vctx *c, const char *path, struct err *err)
{
    return err_set(err, ERR_INVALID, "missing required %s '%s'", c->part, path);
}

static bool absent(const struct vctx *c, json_object *obj, const char *name)
{
    json_object *v = NULL;
    return !json_object_object_get_ex(obj, name, &v) || (!v && (c->flags & SCHEMA_NULL_IS_ABSENT));
}

static const struct prop *prop_of(const struct schema_node *s, const char *name)
{
    for (size_t i = 0; i < s->n_props; i++)
        if (strcmp(s->props[i].name, name) == 0)
            return &s->props[i];
    return NULL;
}

/* The properties not listed: refused, or each checked against extra. */
static int validate_extra(const struct vctx *c, const struct schema_node *s, json_object *v,
                          const char *path, struct err *err)
{
    json_object_object_foreach(v, key, val)
    {
        if (prop_of(s, key))
            continue;
        if (s->closed && path)
            return err_set(err, ERR_INVALID, "unknown %s '%s.%.64s'", c->part, path, key);
        if (s->closed)
            return err_set(err, ERR_INVALID, "unknown %s '%.64s'", c->part, key);
        if (absent(c, v, key))
            continue;
        /* A client's name is cut short, as in the unknown-name message. */
        char *short_key = xstrndup(key, 64);
        char *p = schema_join_path(path, short_key);
        int rc = validate(c, s->extra, val, p, err);
        free(p);
        free(short_key);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int validate_object(const struct vctx *c, const struct schema_node *s, json_object *v,
                           const char *path, struct err *err)
{
    if (s->has_extra && validate_extra(c, s, v, path, err) < 0)
        return -1;
    for (size_t i = 0; i < s->n_props; i++) {
        const struct prop *pr = &s->props[i];
        char *p = schema_join_path(path, pr->name);
        int rc = 0;
        if (!absent(c, v, pr->name)) {
            json_object *pv = NULL;
            json_object_object_get_ex(v, pr->name, &pv);
            rc = validate(c, pr->node, pv, p, err);
        } else if (pr->required) {
            rc = missing(c, p, err);
        }
        free(p);
        if (rc < 0)
            return -1;
    }
    /* Required names without a property schema (schema_check refuses them). */
    for (size_t i = 0; i < s->n_required_extra; i++) {
        if (absent(c, v, s->required_extra[i])) {
            char *p = schema_join_path(path, s->required_extra[i]);
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

static int validate_array(const struct vctx *c, const struct schema_node *s, json_object *v,
                          const char *path, struct err *err)
{
    size_t n = json_object_array_length(v);
    long long min = s->min_items;
    long long max = s->max_items;
    if (s->has_min_items && n < (unsigned long long)min)
        return fail(c, path, err, "must have at least %lld item%s", min, min == 1 ? "" : "s");
    if (s->has_max_items && n > (unsigned long long)max)
        return fail(c, path, err, "must have at most %lld item%s", max, max == 1 ? "" : "s");
    for (size_t i = 0; s->items && i < n; i++) {
        char *p = join_index(path, i);
        int rc = validate(c, s->items, json_object_array_get_idx(v, i), p, err);
        free(p);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* No branch matched: within the branch for the value's type, that
 * branch's complaint is the useful one ("at least 1"); otherwise the
 * types allowed. */
static int anyof_failed(const struct vctx *c, const struct schema_node *s, const char *path,
                        struct err *err)
{
    bool all_typed = true;
    for (size_t i = 0; i < s->n_any; i++)
        all_typed = all_typed && s->any[i].type != T_ANY;
    if (!all_typed)
        return fail(c, path, err, "must match one of the schemas in anyOf");
    struct buf b;
    buf_init(&b, ALTERNATIVES_MAX);
    int rc = 0;
    for (size_t i = 0; i < s->n_any; i++)
        rc |= add_alternative(&b, i, s->n_any, types[s->any[i].type].noun);
    if (rc < 0)
        fail(c, path, err, "must be of one of the %zu types its anyOf lists", s->n_any);
    else
        fail(c, path, err, "must be %s", buf_cstr(&b));
    buf_free(&b);
    return -1;
}

static int validate_anyof(const struct vctx *c, const struct schema_node *s, json_object *v,
                          const char *path, struct err *err)
{
    struct err only = ERR_INIT; /* the error of the one branch of the value's type */
    size_t candidates = 0;
    for (size_t i = 0; i < s->n_any; i++) {
        const struct schema_node *branch = &s->any[i];
        struct err e = ERR_INIT;
        if (validate(c, branch, v, path, &e) == 0) {
            err_clear(&only);
            return 0;
        }
        if ((branch->type == T_ANY || matches(branch->type, v)) && ++candidates == 1)
            err_move(&only, &e);
        err_clear(&e);
    }
    if (candidates == 1) {
        if (err)
            err_move(err, &only);
        err_clear(&only);
        return -1;
    }
    err_clear(&only);
    return anyof_failed(c, s, path, err);
}

static bool enum_has(const struct schema_node *s, json_object *v)
{
    bool str = json_object_is_type(v, json_type_string);
    const char *text = str ? NULL : schema_json_text(v);
    size_t len = str ? (size_t)json_object_get_string_len(v) : 0;
    for (size_t i = 0; i < s->n_enums; i++) {
        const struct enum_value *e = &s->enums[i];
        if (str ? e->str && e->str_len == len && memcmp(e->str, json_object_get_string(v), len) == 0
                : !e->str && strcmp(e->text, text) == 0)
            return true;
    }
    return false;
}

static int validate_enum(const struct vctx *c, const struct schema_node *s, json_object *v,
                         const char *path, struct err *err)
{
    if (enum_has(s, v))
        return 0;
    struct buf b;
    buf_init(&b, ALTERNATIVES_MAX);
    int rc = 0;
    for (size_t i = 0; i < s->n_enums; i++)
        rc |= add_alternative(&b, i, s->n_enums, s->enums[i].text);
    const char *list = buf_cstr(&b);
    char many[64];
    if (rc < 0) {
        snprintf(many, sizeof(many), "one of the %zu values its enum lists", s->n_enums);
        list = many;
    }
    /* A string is shown as given (cut short), like any other message text. */
    if (json_object_is_type(v, json_type_string))
        fail(c, path, err, "must be %s, got \"%.32s\"", list, json_object_get_string(v));
    else
        fail(c, path, err, "must be %s, got %.32s", list, schema_json_text(v));
    buf_free(&b);
    return -1;
}

/* <0, 0 or >0 as v is below, at or above b: exact for two ints. */
static int bound_cmp(json_object *v, const struct bound *b)
{
    if (json_object_is_type(v, json_type_int) && b->is_int) {
        int64_t x = json_object_get_int64(v);
        return (x > b->i) - (x < b->i);
    }
    double x = json_object_get_double(v);
    return (x > b->d) - (x < b->d);
}

static int validate(const struct vctx *c, const struct schema_node *s, json_object *v,
                    const char *path, struct err *err)
{
    if (s->type != T_ANY && !matches(s->type, v))
        return fail(c, path, err, "must be %s", types[s->type].noun);
    if (s->n_any && validate_anyof(c, s, v, path, err) < 0)
        return -1;
    if (s->has_enum && validate_enum(c, s, v, path, err) < 0)
        return -1;
    if (json_object_is_type(v, json_type_object))
        return validate_object(c, s, v, path, err);
    if (json_object_is_type(v, json_type_array))
        return validate_array(c, s, v, path, err);
    long long limit = s->max_length;
    if (s->has_max_length && json_object_is_type(v, json_type_string) &&
        utf8_length(json_object_get_string(v), (size_t)json_object_get_string_len(v)) >
            (size_t)limit)
        return fail(c, path, err, "must be at most %lld characters long", limit);
    if (schema_is_number(v)) {
        if (s->minimum.set && bound_cmp(v, &s->minimum) < 0)
            return fail(c, path, err, "must be at least %s", s->minimum.text);
        if (s->maximum.set && bound_cmp(v, &s->maximum) > 0)
            return fail(c, path, err, "must be at most %s", s->maximum.text);
    }
    return 0;
}

int schema_node_validate(const struct schema_node *n, json_object *value, unsigned flags,
                         struct err *err)
{
    struct vctx c = {flags, "arguments", "argument"};
    return validate(&c, n, value, NULL, err);
}

int schema_validate_default(const struct schema_node *n, json_object *value, struct err *err)
{
    struct vctx c = {0, "the default", "default property"};
    return validate(&c, n, value, NULL, err);
}

int schema_validate(json_object *schema, json_object *value, unsigned flags, struct err *err)
{
    struct schema_node *n = schema_compile(schema);
    int rc = schema_node_validate(n, value, flags, err);
    schema_node_free(n);
    return rc;
}
