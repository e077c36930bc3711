/* The environment resource: what agents ask before writing code (the
 * languages and the tool for each, images, limits, network, working
 * directory), from the configuration, the tools and the sandbox policy. */
#ifndef MCPSBX_TOOLS_ENVIRONMENT_H
#define MCPSBX_TOOLS_ENVIRONMENT_H

#include <json-c/json.h>

#include "tools/tools.h"

/* A new object (caller owns). */
json_object *tools_environment_json(const struct tools_env *env);

#endif
