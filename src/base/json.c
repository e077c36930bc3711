#include "base/json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int json_parse_exact(const char *data, size_t len, int depth, int flags, json_object **value,
                     struct json_exact *out)
{
    *value = NULL;
    *out = (struct json_exact){.status = JSON_EXACT_OK, .why = "", .offset = 0};
    if (!data) {
        data = "";
        len = 0;
    }
    if (len > (size_t)INT32_MAX) {
        out->status = JSON_EXACT_SYNTAX;
        out->why = "too large";
        return -1;
    }
    json_tokener *tok = json_tokener_new_ex(depth);
    if (!tok) {
        out->status = JSON_EXACT_NOMEM;
        return -1;
    }
    if (flags)
        json_tokener_set_flags(tok, flags);
    json_object *o = json_tokener_parse_ex(tok, data, (int)len);
    enum json_tokener_error e = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    if (e == json_tokener_continue) {
        /* A number or literal at the very end stays pending until the
         * tokener sees where it stops; a NUL tells it. Anything else still
         * open really is cut short. */
        o = json_tokener_parse_ex(tok, "", 1);
        if (json_tokener_get_error(tok) == json_tokener_success) {
            e = json_tokener_success;
            end = len;
        }
    }
    json_tokener_free(tok);
    out->offset = end;
    if (e == json_tokener_continue) {
        out->status = JSON_EXACT_INCOMPLETE;
    } else if (e != json_tokener_success) {
        out->status = JSON_EXACT_SYNTAX;
        out->why = json_tokener_error_desc(e);
    } else {
        while (end < len &&
               (data[end] == ' ' || data[end] == '\t' || data[end] == '\r' || data[end] == '\n'))
            end++;
        if (end < len) {
            out->status = JSON_EXACT_TRAILING;
            out->offset = end;
        } else {
            *value = o;
            return 0;
        }
    }
    json_object_put(o);
    return -1;
}

void json_add_ints(json_object *o, const struct json_int_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        json_object_object_add(o, rows[i].name, json_object_new_int64(rows[i].value));
}

const char *json_get_string(json_object *o, const char *key, size_t *len)
{
    json_object *v = NULL;
    if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    if (len)
        *len = (size_t)json_object_get_string_len(v);
    return json_object_get_string(v);
}

json_object *json_new_ms(double v)
{
    char text[48];
    double d = v < 0 || isnan(v) ? 0.0 : v > 1e12 ? 1e12 : v;
    long long tenths = llround(d * 10.0);
    snprintf(text, sizeof(text), "%lld.%lld", tenths / 10, tenths % 10);
    return json_object_new_double_s(strtod(text, NULL), text);
}
