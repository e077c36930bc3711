/* The backends this build has, and which one serves: what main calls to
 * set a backend up, so nothing above this folder names an implementation.
 * Kept apart from backend.c, which the implementations themselves use. */
#ifndef MCPSBX_BACKENDS_H
#define MCPSBX_BACKENDS_H

#include "backend/backend.h"
#include "base/config.h"

/* Once per process, before any thread starts (libcurl's global setup). */
int backends_init(struct err *err);
void backends_cleanup(void);

/* The backend cfg->backend names, at the address it finds from
 * cfg->engine and the daemon's environment envp, each backend parsing its
 * own; nothing is contacted yet. NULL with err when the name or the
 * address is bad. Free with backend_free. */
struct backend *backends_open(const struct config *cfg, char **envp, struct err *err);

#endif
