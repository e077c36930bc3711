/* The files and output_files arguments of the run tools: checked against
 * the operator's caps and the path rules (sandbox/workpath.h) before any
 * container exists, and copied out of the request's JSON so the run can
 * go to another thread. */
#ifndef MCPSBX_FILES_ARG_H
#define MCPSBX_FILES_ARG_H

#include <json-c/json.h>

#include "base/config.h"
#include "base/err.h"
#include "sandbox/runner.h"

/* output_files patterns at most. */
#define FILES_ARG_MAX_PATTERNS 64

struct files_arg {
    struct runner_file *files; /* paths normalized; content as sent */
    size_t n_files;
    char **patterns; /* normalized */
    size_t n_patterns;
    char **owned; /* what files[] points into */
    size_t n_owned;
};

/* Reads args' "files" and "output_files" (either may be absent; the
 * tool's schema has checked their shape). Returns 0, or -1 with an
 * ERR_INVALID / ERR_TOO_BIG message naming the argument, e.g. "argument
 * 'files[2].path': the path has a '..' component". out is empty then. */
int files_arg_parse(const struct config *cfg, json_object *args, struct files_arg *out,
                    struct err *err);
void files_arg_free(struct files_arg *fa);

#endif
