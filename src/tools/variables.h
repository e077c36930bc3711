/* The `variables` argument of the run tools: named JSON values the runner
 * binds before the program starts, as globals of __main__ in Python and as
 * global constants in JavaScript (script-level const bindings, seen by
 * CommonJS and ES modules; not properties of globalThis). They travel as
 * JSON in the request frame, never as source.
 *
 * A name must be an ASCII identifier of the language of at most
 * VARIABLES_MAX_NAME bytes, must not begin with two underscores (the
 * interpreter's own names), and must not be one of the language's names in
 * src/tools/variables/<language>.names (data: keywords, builtins and the
 * modules Python has loaded at start, such as os; JavaScript's reserved
 * words, globals and Object.prototype's members, such as constructor).
 * The runners check again with the live interpreter. A language run by the
 * generic runner gets the whole object as a JSON file ($MCPSBX_VARIABLES)
 * and string, number and boolean values as environment variables: its
 * names are environment variable names, minus those the sandbox, the
 * loader, the shell and the toolchains read (environment.names, and LD_*,
 * MCPSBX_*, BASH_*). */
#ifndef MCPSBX_TOOLS_VARIABLES_H
#define MCPSBX_TOOLS_VARIABLES_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "sandbox/sandbox.h"

#define VARIABLES_MAX_NAME 128

/* The embedded name lists (build/gen/variable_names.c). */
extern const char variables_python_names[];
extern const char variables_javascript_names[];
extern const char variables_environment_names[];

/* Whether name may be bound for lang; *why says why not. */
bool variables_name_ok(const struct langtable_lang *lang, const char *name, const char **why);

/* Checks vars (a JSON object the schema has let through; borrowed) and
 * returns its compact JSON text in *json (caller frees) and *len. Fails
 * with ERR_INVALID naming the first bad name, or ERR_TOO_BIG when the text
 * is over max_bytes. */
int variables_encode(json_object *vars, const struct langtable_lang *lang, long long max_bytes,
                     char **json, size_t *len, struct err *err);

#endif
