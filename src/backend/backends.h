/* The backends this build has, and which one serves: what main calls to
 * set a backend up, so nothing above this folder names an implementation.
 * Kept apart from backend.c, which the implementations themselves use. */
#ifndef MCPSBX_BACKENDS_H
#define MCPSBX_BACKENDS_H

#include "backend/backend.h"

/* Once per process, before any thread starts (libcurl's global setup). */
int backends_init(struct err *err);
void backends_cleanup(void);

/* The backend at address (for the Docker Engine API, a unix socket path);
 * nothing is contacted yet. Free with backend_free. */
struct backend *backends_open(const char *address);

#endif
