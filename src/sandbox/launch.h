/* Setting up one sandbox, the same for the pool and for on-demand runs:
 * create it, connect its standard streams, start it; hand back its id and
 * stream.
 *
 * The streams go through a socket of the daemon's (backend/channel.h: the
 * command runs the connector, which runs the runner) when --sandbox-io is
 * socket, the runtime is not gVisor (its file proxy does not pass host
 * sockets) and the host allows it (the daemon can make the socket and give
 * it to the sandbox's uid). Otherwise, or for an image whose sandbox could
 * not connect (no perl in it; a user namespace that maps the uid
 * elsewhere), through the engine's attach stream: such a sandbox is set up
 * again with attach, once, since its code never reached it, and its image
 * attaches from then on (said once in the log).
 *
 * Thread-safe: any thread may launch at any time. */
#ifndef MCPSBX_LAUNCH_H
#define MCPSBX_LAUNCH_H

#include "backend/backend.h"
#include "base/config.h"
#include "base/err.h"
#include "sandbox/reaper.h"
#include "sandbox/uids.h"

/* A run's own deadline aside, how long a sandbox may take to connect to
 * its socket once started. */
#define LAUNCH_CONNECT_MS 30000

struct launcher;

/* Borrows b, r, cfg and uids, which must outlive it. With uids (may be
 * NULL: every sandbox runs as its spec's user), every sandbox it creates
 * runs as a uid taken for it alone (sandbox/uids.h), which its socket is
 * given to, and which the reaper gives back once the sandbox is gone.
 * Removes the socket directories a killed daemon left. */
struct launcher *launcher_new(struct backend *b, struct reaper *r, const struct config *cfg,
                              struct uids *uids);
void launcher_free(struct launcher *l);

/* Sets up a sandbox for spec (its io_dir and cmd are the launcher's to
 * change, and its user with sandbox uids: -1 with ERR_TOO_BIG when none is
 * free). Each engine request must end by deadline_ms (util_now_ms time;
 * 0: the engine's usual timeouts). Returns 0 with *id and *stream, which
 * the caller then owns; 1 when stop_fd (-1: none) became readable first;
 * -1 with err. On 1 and -1 nothing is left behind (a created container is
 * handed to the reaper). */
int launch(struct launcher *l, const struct backend_spec *spec, double deadline_ms, int stop_fd,
           char **id, struct backend_stream **stream, struct err *err);

/* "socket" or "attach": how a sandbox of spec would connect now. */
const char *launch_io_name(struct launcher *l, const struct backend_spec *spec);

#endif
