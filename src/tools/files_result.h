/* The files a run returned, as MCP content: images under
 * --max-inline-image-bytes as image blocks, UTF-8 text files under
 * --max-inline-text-bytes as embedded resources, anything else as a
 * resource_link (2025-06-18 and later) or a line of text naming its URI
 * (older versions). Every file also goes into the run store, readable by
 * the same session at mcp-sandboxd://runs/<run-id>/files/<path> (plots:
 * .../plots/plot-<n>.png), and is listed in structuredContent.files with
 * its path, kind, size, MIME type, SHA-256, URI and how it was delivered. */
#ifndef MCPSBX_FILES_RESULT_H
#define MCPSBX_FILES_RESULT_H

#include <json-c/json.h>

#include "base/buf.h"
#include "base/config.h"
#include "base/err.h"
#include "sandbox/sandbox.h"
#include "tools/registry.h"
#include "tools/runstore.h"

#define FILES_RESULT_URI_PREFIX "mcp-sandboxd://runs/"

struct files_result_ctx {
    const struct config *cfg;
    struct runstore *store; /* NULL: nothing is kept (links cannot be made) */
    const char *owner;      /* the session's token for the store */
};

/* Appends a block per delivered file to blocks (an array), the files,
 * files_left_out and files_truncated fields to sc, and a summary of the
 * files to text, whose cap must leave files_result_text_max(of) bytes
 * (else -1 with ERR_INTERNAL, the summary cut). ctx may be NULL when of
 * has nothing. */
int files_result_add(const struct outfiles *of, const struct files_result_ctx *ctx,
                     const struct tools_features *f, json_object *blocks, json_object *sc,
                     struct buf *text, struct err *err);

/* The most files_result_add can append to text for of. */
size_t files_result_text_max(const struct outfiles *of);

/* The MIME type for a returned file: by its name's extension, or text/plain
 * for other UTF-8 without NUL, else application/octet-stream. Static. */
const char *files_result_mime(const char *path, const char *data, size_t size);

#endif
