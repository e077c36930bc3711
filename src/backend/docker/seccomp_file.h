/* Podman's compatible API takes a seccomp profile as the path of a file
 * on its own host, where Docker's takes the JSON text itself: this writes
 * a profile where a local Podman service can read it.
 *
 * The directory: $RUNTIME_DIRECTORY (systemd's RuntimeDirectory=), else
 * /run/mcp-sandboxd for root, else $XDG_RUNTIME_DIR/mcp-sandboxd. It must
 * be a directory of this user that nobody else can write, so the file
 * Podman reads is the one written here. The file is named for a hash of
 * its text, written whole and renamed into place, and left there: other
 * daemons using the same profile share it. */
#ifndef MCPSBX_SECCOMP_FILE_H
#define MCPSBX_SECCOMP_FILE_H

#include "base/err.h"

/* Writes profile (a NUL-terminated JSON text) to its file; returns the
 * file's path (caller frees), or NULL with err. */
char *seccomp_file_write(const char *profile, struct err *err);

#endif
