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

/* follow_interrupted's answer when the program sent no record within the
 * grace after its interrupt. */
#define FOLLOW_GRACE_EXPIRED 2

/* How a program kept between calls is stopped without ending it: at the
 * deadline, a cancel or the output cap, send (given ctx) asks it to stop
 * (returns 0, or -1 with err), and the program has grace_ms more to send
 * its record; output past the cap is read and dropped meanwhile. */
struct follow_interrupt {
    int (*send)(void *ctx, struct err *err);
    void *ctx;
    double grace_ms;
};

/* Reads the program in container id through stream until it ends or
 * deadline (util_now_ms() time) passes; cancel_fd (or -1) becomes
 * readable when the caller cancels. Returns 0 (o->res says how the
 * program ended), FOLLOW_NOT_STARTED, or -1 with err. */
int follow(struct backend *backend, struct output *o, struct backend_stream *stream, const char *id,
           int cancel_fd, double deadline, struct err *err);

/* follow, stopping the program through intr (NULL: as follow does). A
 * record within the grace leaves res's status what stopped it (timeout,
 * cancelled, output_limit), unless the record says it ran out of memory;
 * no record within it is FOLLOW_GRACE_EXPIRED. */
int follow_interrupted(struct backend *backend, struct output *o, struct backend_stream *stream,
                       const char *id, int cancel_fd, double deadline,
                       const struct follow_interrupt *intr, struct err *err);

#endif
