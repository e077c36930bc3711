/* The tools this server has: for each, its name, what kind of run it is
 * (code), and its embedded definition file (data: src/tools/defs/). Also
 * the tools/list arrays built from them, serialized once per feature set. */
#ifndef MCPSBX_TOOLS_REGISTRY_H
#define MCPSBX_TOOLS_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "base/config.h"
#include "base/err.h"
#include "sandbox/langtable.h"

/* What the negotiated protocol version allows in tool shapes. */
struct tools_features {
    bool annotations; /* 2025-03-26+ */
    bool structured;  /* 2025-06-18+: title, outputSchema, structuredContent */
};

#define TOOLS_VARIANTS 4 /* combinations of tools_features */

/* The first three run code; TOOL_VALIDATE only parses it;
 * TOOL_LIST_LANGUAGES runs nothing and is answered without a run slot. */
enum tool_kind { TOOL_PYTHON, TOOL_JAVASCRIPT, TOOL_EXECUTE, TOOL_VALIDATE, TOOL_LIST_LANGUAGES };

/* A row of the registry: what a tool does is code (its kind); what it
 * looks like (title, description, schemas) is its definition file,
 * src/tools/defs/<name>.json, here as embedded text (tooldef.h parses and
 * checks it into a struct tooldef_checked). */
struct registry_entry {
    const char *name; /* the definition's name too (registry_serialize checks) */
    enum tool_kind kind;
    const char *def; /* the embedded definition file */
};

/* How many tools there are. */
#define REGISTRY_TOOLS 5

/* NULL when there is no such tool. */
const struct registry_entry *registry_find(const char *name);

/* t's place in tools/list order, 0..REGISTRY_TOOLS-1. */
size_t registry_index(const struct registry_entry *t);

/* The i-th tool in tools/list order; NULL past the last. */
const struct registry_entry *registry_at(size_t i);

/* The first tool of that kind (the one-language tools have one each). */
const struct registry_entry *registry_for_kind(enum tool_kind kind);

/* Index into the serialized arrays for f. */
size_t registry_variant(const struct tools_features *f);

/* Builds the tools/list array for every feature variant, as JSON text
 * (json[v] allocated, len[v] its length), with cfg's limits in the
 * descriptions, and each tool's inputSchema compiled (inputs[i], by
 * registry_index; execute_code's language enum made of langs' names and
 * aliases). Fails only on a bad built-in definition (ERR_INTERNAL). Free
 * with registry_serialized_free and registry_inputs_free. */
struct schema_node;
int registry_serialize(const struct config *cfg, const struct langtable *langs,
                       char *json[TOOLS_VARIANTS], size_t len[TOOLS_VARIANTS],
                       struct schema_node *inputs[REGISTRY_TOOLS], struct err *err);
void registry_inputs_free(struct schema_node *inputs[REGISTRY_TOOLS]);

void registry_serialized_free(char *json[TOOLS_VARIANTS], size_t len[TOOLS_VARIANTS]);

#endif
