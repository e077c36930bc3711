/* A JSON Schema validator for exactly the subset the tool definitions
 * (src/tools/defs/) use: type (one of object, array, string, integer,
 * number, boolean, null), properties, required, additionalProperties (false,
 * or one schema for the properties not listed), items (one schema for every
 * element), minItems, maxItems, enum, minimum, maximum, maxLength and anyOf;
 * description, title and default are annotations. schema_check refuses every other keyword, so a
 * definition can never advertise a constraint that is not enforced.
 *
 * A checked schema is compiled once (schema_compile) into plain C data,
 * immutable, which any thread may validate against at once: json-c
 * objects may not be shared between threads (mcp.h), a compiled schema
 * holds none. schema.c compiles and validates; schema_check.c checks. */
#ifndef MCPSBX_SCHEMA_H
#define MCPSBX_SCHEMA_H

#include <json-c/json.h>
#include <stdbool.h>

#include "base/err.h"

/* A property whose value is null counts as absent (a missing required one
 * is reported as missing): clients send null for optional arguments they
 * leave out. */
#define SCHEMA_NULL_IS_ABSENT 1u

/* Returns 0 when schema uses only what schema_validate implements, each
 * keyword well formed and on a node of the type it applies to, and every
 * default valid against its own schema; otherwise -1 with an ERR_INVALID
 * message naming the place, e.g. "properties.timeout_ms.type: ...". */
int schema_check(json_object *schema, struct err *err);

/* A schema that passed schema_check, as plain C data. */
struct schema_node;
struct schema_node *schema_compile(json_object *schema);
void schema_node_free(struct schema_node *n);

/* Validates value (NULL is JSON null) against a compiled schema. Returns
 * 0, or -1 with an ERR_INVALID message that names the value as
 * "arguments" and a property as "argument 'name'" ('a.b' when nested,
 * 'files[2].path' for an array's element), e.g. "missing required
 * argument 'code'". Properties are checked in the schema's order, after
 * unknown ones; the first problem is reported. flags:
 * SCHEMA_NULL_IS_ABSENT or 0. */
int schema_node_validate(const struct schema_node *n, json_object *value, unsigned flags,
                         struct err *err);

/* The same against a schema as JSON (compiled for the one call). */
int schema_validate(json_object *schema, json_object *value, unsigned flags, struct err *err);

/* JSON Schema's integer: an int, or a double with no fractional part (such
 * as 5000.0) within +-9e15, where doubles still hold every integer. */
bool schema_integer(json_object *v, long long *out);

/* ---- shared by schema.c and schema_check.c ---- */

/* "an object", "a string", ...; NULL for a name that is not a type. */
const char *schema_type_noun(const char *type);
bool schema_type_matches(const char *type, json_object *v);
bool schema_is_number(json_object *v);
/* Compares two numbers: <0, 0 or >0. Exact for two ints. */
int schema_num_cmp(json_object *a, json_object *b);
/* v as compact JSON text, owned by v. */
const char *schema_json_text(json_object *v);
/* "path.name", or "name" at the top (path NULL); allocated. */
char *schema_join_path(const char *path, const char *name);
/* Validates a default against the compiled node of its own schema, the
 * messages naming it "the default" (schema_check). */
int schema_validate_default(const struct schema_node *n, json_object *value, struct err *err);

#endif
