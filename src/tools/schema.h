/* A JSON Schema validator for exactly the subset the tool definitions
 * (src/tools/defs/) use: type (one of object, array, string, integer,
 * number, boolean, null), properties, required, additionalProperties (false,
 * or one schema for the properties not listed), items (one schema for every
 * element), minItems, maxItems, enum, minimum, maximum, maxLength and anyOf;
 * description, title and default are annotations. schema_check refuses every other keyword, so a
 * definition can never advertise a constraint that is not enforced.
 *
 * Works on json-c objects the caller owns; keeps no state, so any thread
 * may call it on its own objects. */
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

/* Validates value (NULL is JSON null) against a schema that passed
 * schema_check. Returns 0, or -1 with an ERR_INVALID message that names the
 * value as "arguments" and a property as "argument 'name'" ('a.b' when
 * nested, 'files[2].path' for an array's element), e.g. "missing required
 * argument 'code'". Properties are checked
 * in the schema's order, after unknown ones; the first problem is reported.
 * flags: SCHEMA_NULL_IS_ABSENT or 0. */
int schema_validate(json_object *schema, json_object *value, unsigned flags, struct err *err);

/* JSON Schema's integer: an int, or a double with no fractional part (such
 * as 5000.0) within +-9e15, where doubles still hold every integer. */
bool schema_integer(json_object *v, long long *out);

#endif
