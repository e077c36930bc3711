/* The tool registry (data: name, title, description, schemas), argument
 * validation and clamping, and CallToolResult building. */
#ifndef MCPSBX_TOOLS_H
#define MCPSBX_TOOLS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "config.h"
#include "exec.h"

/* What the negotiated protocol version allows in tool shapes. */
struct tools_features {
    bool annotations; /* 2025-03-26+ */
    bool structured;  /* 2025-06-18+: title, outputSchema, structuredContent */
};

struct tools_env {
    const struct config *cfg;
    struct exec_ctx *exec;
};

/* Parses the schema texts once; call before threads start. */
int tools_init(struct err *err);
void tools_cleanup(void);

/* A new array of Tool objects. */
json_object *tools_list(const struct tools_env *env, const struct tools_features *f);

bool tools_exists(const char *name);

/* Runs tool `name` (which must exist) with args (borrowed, may be NULL).
 * Returns a new CallToolResult: bad arguments and failed runs are results
 * with isError set, never protocol errors. on_output may be NULL. */
json_object *tools_call(const struct tools_env *env, const char *name, json_object *args,
                        const struct tools_features *f, struct exec_cancel *cancel,
                        exec_output_cb on_output, void *on_output_ctx);

/* Validated, clamped arguments of a run (exposed for tests). */
struct tools_run_args {
    enum exec_language language;
    const char *code;
    size_t code_len;
    const char *stdin_data;
    size_t stdin_len;
    long long timeout_ms;
    long long memory_mb;
};

/* Returns 0, or -1 with an ERR_INVALID message fit to show the caller. */
int tools_parse_args(const struct config *cfg, const char *name, json_object *args,
                     struct tools_run_args *out, struct err *err);

/* Builds the CallToolResult for a finished run (exposed for tests). */
json_object *tools_result(const struct exec_result *res, enum exec_language lang,
                          const struct tools_features *f);

#endif
