/* Paths inside a sandbox's working directory, as a caller names them
 * (files in, output_files patterns) and as the runner reports them (files
 * out): relative, normalized, and never able to leave the directory. The
 * runners apply the same rule again (sandbox/runner/). */
#ifndef MCPSBX_WORKPATH_H
#define MCPSBX_WORKPATH_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

#define WORKPATH_MAX_BYTES     1024 /* a whole path */
#define WORKPATH_MAX_COMPONENT 255  /* one name, as Linux allows */

/* Checks path[0..len) and returns its normal form in *out (caller frees):
 * "." components and repeated slashes dropped. Refused with ERR_INVALID
 * (the message says why, without quoting the path): empty, absolute, a
 * ".." component, NUL or another control character, not UTF-8, over
 * WORKPATH_MAX_BYTES or a name over WORKPATH_MAX_COMPONENT, ending in a
 * slash, or one of the program's or runner's own names (main, main.*,
 * anything under .mcpsbx*). */
int workpath_normalize(const char *path, size_t len, char **out, struct err *err);

/* The same for an output_files pattern: glob characters (* ? [...]) are
 * allowed in names, "**" (any number of directories) only as a whole
 * name; the runner's names are not refused (they are never returned
 * unless matched). */
int workpath_pattern(const char *pattern, size_t len, char **out, struct err *err);

/* The same for a file the runner returns: any name but the runner's
 * restriction (a program may ask for main.py back). */
int workpath_output(const char *path, size_t len, char **out, struct err *err);

/* Whether a is b or a directory above it ("data" and "data/x.csv"): two
 * files in cannot be both. */
bool workpath_is_prefix(const char *a, const char *b);

#endif
