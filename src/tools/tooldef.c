#include "tools/tooldef.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/jsonpos.h"
#include "tools/schema.h"

static const char *const members[] = {"name", "title", "description", "inputSchema",
                                      "outputSchema"};

/* What json-c accepts even when strict: single quotes, NaN and Infinity,
 * control characters in strings. Returns the offset of the first such
 * byte, or len. */
static size_t lenient_at(const char *text, size_t len)
{
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (in_string) {
            if (ch < 0x20)
                return i;
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_string = false;
        } else if (ch == '"') {
            in_string = true;
        } else if (!strchr(" \t\r\n{}[],:+-.0123456789eEtrufalsn", ch) || ch == '\0') {
            return i;
        }
    }
    return len;
}

/* "line L, column C" of byte at in text, for the person editing the file. */
static void where(const char *text, size_t len, size_t at, char *out, size_t n)
{
    int line = 0;
    int col = 0;
    jsonpos_where(text, len, at, &line, &col);
    snprintf(out, n, "line %d, column %d", line, col);
}

json_object *tooldef_parse(const char *text, size_t len, struct err *err)
{
    char pos[64];
    if (len > INT_MAX) {
        err_set(err, ERR_INVALID, "too big to parse");
        return NULL;
    }
    size_t odd = lenient_at(text, len);
    if (odd < len) {
        where(text, len, odd, pos, sizeof(pos));
        err_set(err, ERR_INVALID, "invalid JSON at %s: unexpected character 0x%02x", pos,
                (unsigned char)text[odd]);
        return NULL;
    }
    /* Strict: the files must be plain JSON for every other tool too. */
    json_object *o = NULL;
    struct json_exact why;
    int parsed = json_parse_exact(text, len, JSON_TOKENER_DEFAULT_DEPTH,
                                  JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8, &o, &why);
    where(text, len, why.offset, pos, sizeof(pos));
    if (parsed < 0 && why.status == JSON_EXACT_INCOMPLETE)
        err_set(err, ERR_INVALID, "invalid JSON: the text ends inside a value");
    else if (parsed < 0 && why.status == JSON_EXACT_TRAILING)
        err_set(err, ERR_INVALID, "invalid JSON at %s: more text after the value", pos);
    else if (parsed < 0)
        err_set(err, ERR_INVALID, "invalid JSON at %s: %s", pos, why.why);
    else if (!json_object_is_type(o, json_type_object))
        err_set(err, ERR_INVALID, "must be a JSON object");
    else
        return o;
    json_object_put(o);
    return NULL;
}

static int get_text(json_object *def, const char *key, const char **out, struct err *err)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(def, key, &v))
        return err_set(err, ERR_INVALID, "missing '%s'", key);
    if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
        return err_set(err, ERR_INVALID, "'%s' must be a non-empty string", key);
    *out = json_object_get_string(v);
    return 0;
}

/* The input and output schemas describe JSON objects (MCP requires it). */
static int check_object_schema(json_object *schema, const char *what, struct err *err)
{
    if (schema_check(schema, err) < 0)
        return err_wrap(err, "%s", what);
    json_object *type = NULL;
    if (!json_object_object_get_ex(schema, "type", &type) ||
        strcmp(json_object_get_string(type), "object") != 0)
        return err_set(err, ERR_INVALID, "%s: type must be \"object\"", what);
    return 0;
}

int tooldef_check(json_object *def, struct tooldef_checked *out, struct err *err)
{
    if (!json_object_is_type(def, json_type_object))
        return err_set(err, ERR_INVALID, "a tool definition must be a JSON object");
    json_object_object_foreach(def, key, val)
    {
        (void)val;
        if (!util_one_of(key, members, ARRAY_SIZE(members)))
            return err_set(err, ERR_INVALID,
                           "unknown member '%s' (a tool definition has name, title, description, "
                           "inputSchema and, unless it is output_schema.json's, outputSchema)",
                           key);
    }
    memset(out, 0, sizeof(*out));
    if (get_text(def, "name", &out->name, err) < 0 ||
        get_text(def, "title", &out->title, err) < 0 ||
        get_text(def, "description", &out->description, err) < 0)
        return -1;
    if (!json_object_object_get_ex(def, "inputSchema", &out->input_schema))
        return err_set(err, ERR_INVALID, "missing 'inputSchema'");
    if (check_object_schema(out->input_schema, "inputSchema", err) < 0)
        return -1;
    if (json_object_object_get_ex(def, "outputSchema", &out->output_schema))
        return check_object_schema(out->output_schema, "outputSchema", err);
    return 0;
}

int tooldef_check_output_schema(json_object *schema, struct err *err)
{
    return check_object_schema(schema, "outputSchema", err);
}
