/* How a sandbox's standard streams reach the daemon under the Docker
 * backend (--sandbox-io): through a socket of the daemon's (channel.h:
 * the command runs the connector, which runs the sandbox's own command)
 * or through the engine's attach stream.
 *
 * The socket when --sandbox-io is socket, the runtime is not gVisor (its
 * file proxy does not pass host sockets) and the host allows it (the
 * daemon can make the socket and give it to the sandbox's uid).
 * Otherwise, or for an image whose sandbox could not connect (no perl in
 * it; a user namespace that maps the uid elsewhere), the attach stream:
 * such a sandbox is discarded and set up again with attach, once
 * (BACKEND_RETRY, backend/backend.h), since its code never reached it,
 * and its image attaches from then on (said once in the log).
 *
 * A sandbox whose spec asks for egress also gets its egress socket
 * (egress_sock.h) in the same directory, whichever way its streams go;
 * its command then starts with the forwarder. There is no fallback for
 * that one: a sandbox that cannot have it is not made.
 *
 * Thread-safe: any thread may set a sandbox up at any time. */
#ifndef MCPSBX_SANDBOX_IO_H
#define MCPSBX_SANDBOX_IO_H

#include <stdbool.h>

#include "backend/backend.h"
#include "backend/docker/channel.h"
#include "backend/docker/egress_sock.h"
#include "backend/docker/engine.h"

/* A run's own deadline aside, how long a sandbox may take to connect to
 * its socket once started. */
#define SANDBOX_IO_CONNECT_MS 30000

struct sandbox_io;

/* mode is --sandbox-io ("socket" or "attach"; NULL: attach), dir
 * --sandbox-io-dir, where the sockets are made (the egress sockets too,
 * whatever mode says; NULL: none can be); both copied. Nothing is
 * touched yet: the socket directories a killed daemon left are removed
 * before the first socket is made. */
struct sandbox_io *sandbox_io_new(const char *mode, const char *dir);
void sandbox_io_free(struct sandbox_io *io);

/* "socket" or "attach": how a sandbox of spec would connect now. */
const char *sandbox_io_name(struct sandbox_io *io, const struct backend_spec *spec);

/* The channel a sandbox of spec connects to, listening for its uid, or
 * NULL when it attaches (fallback asks for that). A channel that cannot
 * be made is logged, never an error: a lasting cause (the directory, no
 * CAP_CHOWN) turns sockets off, a passing one (no descriptors left) costs
 * this sandbox only. */
struct channel *sandbox_io_channel(struct sandbox_io *io, const struct backend_spec *spec,
                                   bool fallback);

/* The part of backend_egress_check that is this module's: no egress
 * without a directory for the socket or the right to give it to spec's
 * uid (tried once, made and removed). */
int sandbox_io_egress_check(struct sandbox_io *io, const struct backend_spec *spec,
                            struct err *err);

/* The egress socket for a sandbox of spec, in *out: NULL without
 * spec.egress. -1 with err when it cannot be made (ERR_INVALID: for
 * any sandbox of spec). */
int sandbox_io_egress(struct sandbox_io *io, const struct backend_spec *spec,
                      struct egress_sock **out, struct err *err);

/* spec's command as the container runs it: after the connector to the
 * channel's socket (channel true), so that what follows has the
 * channel's stdio, then after the egress forwarder (spec.egress);
 * NULL-terminated; the caller frees the array (the strings are
 * borrowed). */
const char **sandbox_io_command(const struct backend_spec *spec, bool channel);

/* Starts container id (of image) and takes its connections on ch, until
 * deadline_ms (0: none; at most SANDBOX_IO_CONNECT_MS from now anyway)
 * or stop_fd (-1: none) readable, asking the engine meanwhile whether it
 * still runs. Returns 0 with *out, 1 when stop_fd became readable,
 * BACKEND_RETRY when the sandbox ended without connecting by itself (its
 * image attaches from now on) or something else took its place on the
 * socket, or -1 with err. ch is spent either way; the caller closes it. */
int sandbox_io_start(struct sandbox_io *io, struct engine *e, const char *id, const char *image,
                     struct channel *ch, double deadline_ms, int stop_fd,
                     struct backend_stream **out, struct err *err);

#endif
