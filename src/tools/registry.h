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
#include "sandbox/sandbox.h"

/* What the negotiated protocol version allows in tool shapes. */
struct tools_features {
    bool annotations; /* 2025-03-26+ */
    bool structured;  /* 2025-06-18+: title, outputSchema, structuredContent */
    bool tasks;       /* 2025-11-25 with tasks offered: execution.taskSupport */
};

#define TOOLS_VARIANTS 8 /* combinations of tools_features */

/* TOOL_LANGUAGE runs code of one language, TOOL_EXECUTE of any;
 * TOOL_VALIDATE only parses it, with an in-process runner;
 * TOOL_LIST_LANGUAGES runs nothing and is answered without a run slot.
 * The code sessions' tools (listed only while --max-code-sessions is above
 * 0): TOOL_CREATE_SESSION starts a sandbox and TOOL_INSTALL_PACKAGES
 * installs packages into one, so they are admitted as runs;
 * TOOL_LIST_SESSIONS and TOOL_CLOSE_SESSION are answered at once. */
enum tool_kind {
    TOOL_LANGUAGE,
    TOOL_EXECUTE,
    TOOL_VALIDATE,
    TOOL_LIST_LANGUAGES,
    TOOL_CREATE_SESSION,
    TOOL_LIST_SESSIONS,
    TOOL_CLOSE_SESSION,
    TOOL_INSTALL_PACKAGES,
};

/* A row of the registry: what a tool does is code (its kind); what it
 * looks like (title, description, schemas) is its definition file,
 * src/tools/defs/<name>.json, here as embedded text (tooldef.h parses and
 * checks it into a struct tooldef_checked). */
struct registry_entry {
    const char *name; /* the definition's name too (registry_serialize checks) */
    const char *def;  /* the embedded definition file */
    /* TOOL_LANGUAGE only: the table's language it runs (its name is a
     * contract), and the runner it needs (its description promises that
     * runner's features). */
    const char *language;
    enum tool_kind kind;
    enum langtable_runner runner;
};

/* How many tools there are. */
#define REGISTRY_TOOLS 9

/* NULL when there is no such tool. */
const struct registry_entry *registry_find(const char *name);

/* t's place in tools/list order, 0..REGISTRY_TOOLS-1. */
size_t registry_index(const struct registry_entry *t);

/* The i-th tool in tools/list order; NULL past the last. */
const struct registry_entry *registry_at(size_t i);

/* The first tool of that kind. */
const struct registry_entry *registry_for_kind(enum tool_kind kind);

/* Whether t takes l: a one-language tool its own language with the runner
 * it needs; execute_code any; validate_code those of the in-process
 * runners (python, node), which parse the code; install_packages those
 * with an installer (packages in the table). */
bool registry_takes(const struct registry_entry *t, const struct langtable_lang *l);

/* Whether t is one of the code sessions' tools. */
bool registry_is_session_tool(const struct registry_entry *t);

/* Whether cfg offers t: the code sessions' tools only while
 * --max-code-sessions is above 0. */
bool registry_offered(const struct registry_entry *t, const struct config *cfg);

/* The one-language tool of l, or NULL. */
const struct registry_entry *registry_own_tool(const struct langtable_lang *l);

/* Index into the serialized arrays for f. */
size_t registry_variant(const struct tools_features *f);

/* Builds the tools/list array for every feature variant, as JSON text
 * (json[v] allocated, len[v] its length), of the tools cfg offers, with
 * cfg's limits in the descriptions, and each tool's inputSchema compiled (inputs[i], by
 * registry_index; execute_code's language enum made of langs' names and
 * aliases). Fails only on a bad built-in definition (ERR_INTERNAL). Free
 * with registry_serialized_free and registry_inputs_free. */
struct schema_node;
int registry_serialize(const struct config *cfg, const struct langtable *langs,
                       char *json[TOOLS_VARIANTS], size_t len[TOOLS_VARIANTS],
                       struct schema_node *inputs[REGISTRY_TOOLS], struct err *err);
void registry_inputs_free(struct schema_node *inputs[REGISTRY_TOOLS]);

/* t's definition, parsed (caller puts it), with execute_code's and
 * create_session's language enum made of langs' names and aliases, and validate_code's of the names
 * of those it takes (left as the file has it when langs has none); NULL
 * with err when it does not parse. */
json_object *registry_definition(const struct registry_entry *t, const struct langtable *langs,
                                 struct err *err);

void registry_serialized_free(char *json[TOOLS_VARIANTS], size_t len[TOOLS_VARIANTS]);

#endif
