/* The files and output_files arguments of the run tools: checked against
 * the operator's caps and the path rules (sandbox/output/workpath.h) before any
 * container exists, and copied out of the request's JSON so the run can
 * go to another thread. */
#ifndef MCPSBX_FILES_ARG_H
#define MCPSBX_FILES_ARG_H

#include <json-c/json.h>

#include "base/config.h"
#include "base/err.h"
#include "sandbox/sandbox.h"

/* output_files patterns at most. */
#define FILES_ARG_MAX_PATTERNS 64

/* Reads args' "files" and "output_files" (either may be absent; the
 * tool's schema has checked their shape). Returns 0, or -1 with an
 * ERR_INVALID / ERR_TOO_BIG message naming the argument, e.g. "argument
 * 'files[2].path': the path has a '..' component". Fills out's files,
 * file_data and patterns (empty before; its other fields untouched):
 * empty again on failure. */
int files_arg_parse(const struct config *cfg, json_object *args, struct run *out, struct err *err);

#endif
