/* JSON text that must be exactly one value: a message, an engine answer, a
 * completion record, a definition file. json-c's tokener alone accepts a
 * value followed by anything; every caller here needs all of the bytes. */
#ifndef MCPSBX_JSON_H
#define MCPSBX_JSON_H

#include <json-c/json.h>
#include <stddef.h>

enum json_exact_status {
    JSON_EXACT_OK,
    JSON_EXACT_INCOMPLETE, /* the text ends inside a value */
    JSON_EXACT_SYNTAX,     /* not JSON: see why and offset */
    JSON_EXACT_TRAILING,   /* a value, then more than whitespace at offset */
    JSON_EXACT_NOMEM,
};

struct json_exact {
    enum json_exact_status status;
    const char *why; /* json-c's description of a syntax error (static) */
    size_t offset;   /* where the parse stopped */
};

/* Parses data[0..len) as one JSON value followed by nothing but whitespace,
 * nesting at most depth deep, with json_tokener flags (e.g.
 * JSON_TOKENER_STRICT). Returns 0 with *value (caller owns; NULL for the
 * JSON null), or -1 with why->status saying what is wrong, for the
 * caller's own message. */
int json_parse_exact(const char *data, size_t len, int depth, int flags, json_object **value,
                     struct json_exact *why);

/* o's member key when it is a string (its length in *len when len is not
 * NULL), else NULL; o may be NULL. */
const char *json_get_string(json_object *o, const char *key, size_t *len);

/* A whole number under a name: a row of the table an object is built
 * from, where a list of fields reads better as data than as calls. */
struct json_int_row {
    const char *name;
    long long value;
};

/* Adds each of the n rows to o as an integer member. */
void json_add_ints(json_object *o, const struct json_int_row *rows, size_t n);

/* A count of milliseconds as a number with one decimal, written as such
 * (json-c would print %.17g); a negative or NaN v is 0, and v is at most
 * 1e12. */
json_object *json_new_ms(double v);

#endif
