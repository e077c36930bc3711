/* The environment resource: what agents ask before writing code (the
 * languages and the tool for each, images, interpreter versions and
 * packages, limits, network, working directory), from the configuration,
 * the tools, the sandbox policy and tools/languages.h. */
#ifndef MCPSBX_TOOLS_ENVIRONMENT_H
#define MCPSBX_TOOLS_ENVIRONMENT_H

#include <json-c/json.h>

#include "tools/tools.h"

/* A new object (caller owns). */
json_object *tools_environment_json(const struct tools_env *env, const struct tools_caller *who);

#endif
