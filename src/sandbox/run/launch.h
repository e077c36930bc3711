/* Setting up one sandbox, the same for the pool and for on-demand runs:
 * a uid of its own, the backend's create (with the reaper told, so the
 * container is removed whatever happens next), then the backend's start,
 * which connects its standard streams; hand back its id and stream.
 *
 * How the streams travel is the backend's choice (backend/backend.h). A
 * sandbox that could not connect them the way it was set up, in a way
 * the backend says another will (BACKEND_RETRY), is discarded, since its
 * code never reached it, and set up again once, with the backend's
 * fallback.
 *
 * Thread-safe: any thread may launch at any time. */
#ifndef MCPSBX_LAUNCH_H
#define MCPSBX_LAUNCH_H

#include "backend/backend.h"
#include "base/err.h"
#include "sandbox/pool/reaper.h"
#include "sandbox/pool/uids.h"

struct launcher;

/* Borrows b, r and uids, which must outlive it. With uids (may be NULL:
 * every sandbox runs as its spec's user), every sandbox it creates runs
 * as a uid taken for it alone (sandbox/pool/uids.h), which the reaper gives
 * back once the sandbox is gone. */
struct launcher *launcher_new(struct backend *b, struct reaper *r, struct uids *uids);
void launcher_free(struct launcher *l);

/* Sets up a sandbox for spec (its user is the launcher's to change with
 * sandbox uids: -1 with ERR_TOO_BIG when none is free). Each backend
 * request must end by deadline_ms (util_now_ms time; 0: the backend's
 * usual timeouts). Returns 0 with *id and *stream, which the caller then
 * owns; 1 when stop_fd (-1: none) became readable first; -1 with err. On
 * 1 and -1 nothing is left behind (a created container is handed to the
 * reaper). */
int launch(struct launcher *l, const struct backend_spec *spec, double deadline_ms, int stop_fd,
           char **id, struct backend_stream **stream, struct err *err);

#endif
