/* Following a started program until it ends: its output read into the
 * run's output pipeline (output.h) until the runner's completion record,
 * the end of its streams, the deadline, the output cap or a cancel, with
 * the engine checked now and then. */
#ifndef MCPSBX_FOLLOW_H
#define MCPSBX_FOLLOW_H

#include "backend/backend.h"
#include "base/err.h"
#include "sandbox/output/output.h"

/* How long the engine may take to report the exit after the stream ended. */
#define FOLLOW_WAIT_AFTER_EOF_MS 10000

/* follow's answer when the stream ended before the runner had the code. */
#define FOLLOW_NOT_STARTED 1

/* Reads the program in container id through stream until it ends or
 * deadline (util_now_ms() time) passes; cancel_fd (or -1) becomes
 * readable when the caller cancels. Returns 0 (o->res says how the
 * program ended), FOLLOW_NOT_STARTED, or -1 with err. */
int follow(struct backend *backend, struct output *o, struct backend_stream *stream, const char *id,
           int cancel_fd, double deadline, struct err *err);

#endif
