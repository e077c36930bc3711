/* Package sets in a runner request (runner.h, "packages" and
 * "add_packages"): which directories may be named, and their JSON.
 *
 * A set is one read-only tree of the package cache (sandbox/packages/),
 * mounted in every sandbox of its language under RUNNER_PACKAGES_ROOT:
 * pip's --target tree (the set's directory is an import root) or npm's
 * --prefix tree (packages under the set's node_modules/). The runners
 * check each name again against the same rule. */
#ifndef MCPSBX_RUNNER_PACKAGES_H
#define MCPSBX_RUNNER_PACKAGES_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "base/err.h"

/* Where the sets are inside a sandbox (no trailing slash). */
#define RUNNER_PACKAGES_ROOT "/opt/mcpsbx-packages"
/* Sets in one request's list, and in a session all told (the runners
 * refuse more). */
#define RUNNER_MAX_PACKAGE_SETS 8
/* Bytes of a set's directory name, the root included. */
#define RUNNER_MAX_PACKAGE_PATH 256

/* Whether dir is a set's directory: RUNNER_PACKAGES_ROOT, '/', then one or
 * more components of [A-Za-z0-9._-] that are not "." or "..", no trailing
 * slash, at most RUNNER_MAX_PACKAGE_PATH bytes. */
bool runner_package_dir_valid(const char *dir);

/* Adds key: [dirs...] to obj when n > 0, after checking every name and
 * the count (ERR_INVALID, obj unchanged). */
int runner_packages_add(json_object *obj, const char *key, char *const *dirs, size_t n,
                        struct err *err);

#endif
