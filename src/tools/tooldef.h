/* Tool definitions as data: one JSON file per tool in src/tools/defs/
 * (name, title, description, inputSchema, and outputSchema for a tool
 * whose result is not a run's) and output_schema.json, the outputSchema
 * of the tools that run code. The Makefile checks the files with these
 * functions (build/tooldefs-check) and embeds each as tooldef_<file name>;
 * the daemon parses and checks the embedded texts again at start. */
#ifndef MCPSBX_TOOLDEF_H
#define MCPSBX_TOOLDEF_H

#include <json-c/json.h>
#include <stddef.h>

#include "base/err.h"

/* The embedded files (build/gen/tool_defs.c), NUL-terminated. */
extern const char tooldef_run_python_code[];
extern const char tooldef_run_js_code[];
extern const char tooldef_execute_code[];
extern const char tooldef_validate_code[];
extern const char tooldef_list_languages[];
extern const char tooldef_create_session[];
extern const char tooldef_list_sessions[];
extern const char tooldef_close_session[];
extern const char tooldef_install_packages[];
extern const char tooldef_output_schema[];

/* A definition file parsed and checked (the registry's entries hold the
 * text); the strings and the schema belong to the parsed definition. */
struct tooldef_checked {
    const char *name;
    const char *title;
    const char *description; /* without the server's limits, which tools.c appends */
    json_object *input_schema;
    json_object *output_schema; /* NULL: output_schema.json's, the runs' result */
};

/* Parses len bytes of text as exactly one JSON object (strict JSON, nothing
 * after it). Returns a new object, or NULL with an ERR_INVALID message. */
json_object *tooldef_parse(const char *text, size_t len, struct err *err);

/* Checks a parsed tool definition: name, title, description (non-empty
 * strings), inputSchema and optionally outputSchema (each of type object,
 * passing schema_check), and no other member.
 * Fills out (borrowing from def). Errors name the member, e.g.
 * "inputSchema: properties.code.type: ...". */
int tooldef_check(json_object *def, struct tooldef_checked *out, struct err *err);

/* Checks the shared output schema: type object, passes schema_check. */
int tooldef_check_output_schema(json_object *schema, struct err *err);

#endif
