/* The owner mark (backend_spec.owner): which daemon process made a
 * container, as "boot id:pid namespace:pid:start time", so a sweep can
 * tell a container whose daemon is gone from one whose daemon still runs
 * (sandbox/pool/reaper.h). A mark is read back from a label anyone with the
 * engine can set: parsed strictly. */
#ifndef MCPSBX_REAPER_OWNER_H
#define MCPSBX_REAPER_OWNER_H

#include "base/err.h"

#define REAPER_OWNER_MAX 128

/* Whether the process named by a backend_spec.owner value runs: 1 yes,
 * 0 provably not (same host and pid namespace, and the pid is gone or is a
 * different process), -1 cannot tell (another host or namespace, or a
 * malformed value). self is this process's value (reaper_owner). */
int reaper_owner_alive(const char *owner, const char *self);

/* Fills out with this process's owner value; returns 0 or -1 with err. */
int reaper_owner_self(char out[REAPER_OWNER_MAX], struct err *err);

#endif
