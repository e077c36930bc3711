#include "sandbox/run/follow.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

#include "base/util.h"

/* The stream ended without a completion record: the process was killed or
 * left without the runner's help (os._exit, a crash). Ask the engine. */
static int finish_from_engine(struct backend *backend, struct output *o, const char *id,
                              struct err *err)
{
    struct exec_result *res = o->res;
    struct backend_state st = {0};
    if (backend_wait(backend, id, FOLLOW_WAIT_AFTER_EOF_MS, &st, err) < 0)
        return err_wrap(err, "the program's output ended but its exit status is unknown");
    res->has_exit_code = true;
    res->exit_code = st.exit_code;
    if (st.oom_killed) {
        res->status = EXEC_OOM;
        exec_result_set_message(res,
                                "the program was killed for using more than %lld MiB of memory",
                                o->req->memory_mb);
        return 0;
    }
    res->status = EXEC_OK;
    if (st.exit_code > 128 && st.exit_code < 128 + 65)
        exec_result_set_message(res, "the program was killed by signal %d", st.exit_code - 128);
    return 0;
}

static int output_limit_reached(struct output *o)
{
    o->res->status = EXEC_OUTPUT_LIMIT;
    o->res->truncated = true;
    exec_result_set_message(o->res, "output passed the %zu-byte limit; the program was stopped",
                            o->cap);
    return 0;
}

/* The program's streams ended. */
static int stream_ended(struct backend *backend, struct output *o, const char *id, struct err *err)
{
    output_flush_scans(o);
    if (o->limit_hit)
        return output_limit_reached(o);
    if (output_record_seen(o))
        return output_finish_record(o, err);
    return finish_from_engine(backend, o, id, err);
}

/* How often a run makes sure the engine is still there. A run whose
 * streams come over the daemon's socket would not notice otherwise, and
 * without the engine its sandbox can be neither stopped nor removed: the
 * run ends with what it wrote and an engine error, as when the engine's
 * own stream breaks. */
#define ENGINE_CHECK_MS 1000.0

enum wait_outcome { WAIT_READ, WAIT_AGAIN, WAIT_STOP, WAIT_FAILED };

/* Waits for the stream's bytes, at most until the deadline (WAIT_STOP,
 * res says so), a cancel (WAIT_STOP) or the next engine check
 * (WAIT_AGAIN). */
static enum wait_outcome wait_stream(struct output *o, struct backend_stream *stream, int cancel_fd,
                                     double deadline, double next_check, struct err *err)
{
    if (backend_stream_pending(stream))
        return WAIT_READ;
    const struct run *req = o->req;
    double now = util_now_ms();
    double left = deadline - now;
    if (left <= 0) {
        o->res->status = EXEC_TIMEOUT;
        exec_result_set_message(o->res, "the program was stopped after %lld ms (timeout)",
                                req->timeout_ms);
        return WAIT_STOP;
    }
    struct pollfd pfd[2] = {{.fd = backend_stream_fd(stream), .events = POLLIN},
                            {.fd = cancel_fd, .events = POLLIN}};
    /* Live output is coalesced upstream; wake it up now and then so
     * buffered output goes out while the program is quiet. */
    int wait_ms = (int)(left + 1);
    if (req->on_output && wait_ms > EXEC_TICK_MS)
        wait_ms = EXEC_TICK_MS;
    if (wait_ms > (int)(next_check - now) + 1)
        wait_ms = (int)(next_check - now) + 1;
    int pr = poll(pfd, 2, wait_ms);
    if (pr < 0 && errno != EINTR) {
        err_set(err, ERR_IO, "poll on the sandbox's streams: %s", strerror(errno));
        return WAIT_FAILED;
    }
    if (pr > 0 && (pfd[1].revents & POLLIN)) {
        o->res->status = EXEC_CANCELLED;
        exec_result_set_message(o->res, "the run was cancelled");
        return WAIT_STOP;
    }
    if (pr == 0 && req->on_output)
        req->on_output(req->on_output_ctx, EXEC_TICK, NULL, 0);
    return pr > 0 ? WAIT_READ : WAIT_AGAIN;
}

/* An interrupt under way (follow_interrupted): what stopped the program,
 * kept for its result while its record comes. */
struct stopping {
    const struct follow_interrupt *intr;
    bool sent;
    enum exec_status status;
    char *message;
    bool truncated;
};

/* Asks the program to stop, once: the stop's reason kept, the deadline
 * moved to the grace's end, the cancel no longer watched (it stays
 * readable). */
static int interrupt(struct output *o, struct stopping *st, double *deadline, int *cancel_fd,
                     struct err *err)
{
    st->sent = true;
    st->status = o->res->status;
    st->message = o->res->message ? xstrdup(o->res->message) : NULL;
    st->truncated = o->res->truncated;
    *cancel_fd = -1;
    *deadline = util_now_ms() + st->intr->grace_ms;
    return st->intr->send(st->intr->ctx, err);
}

/* The stop's reason back in the result, over what the record or the
 * engine said, unless the program ran out of memory. */
static void restore_stop(struct output *o, const struct stopping *st)
{
    struct exec_result *res = o->res;
    if (!st->sent || res->status == EXEC_OOM)
        return;
    res->status = st->status;
    res->truncated = st->truncated;
    free(res->message);
    res->message = st->message ? xstrdup(st->message) : NULL;
}

/* read_step's answer when the loop goes on (follow's own are -1, 0,
 * FOLLOW_NOT_STARTED and FOLLOW_GRACE_EXPIRED). */
#define READ_GO_ON (-2)

/* One step of follow_interrupted's loop once the stream had bytes:
 * returns READ_GO_ON, else its answer. */
static int read_step(struct backend *backend, struct output *o, struct backend_stream *stream,
                     const char *id, struct stopping *st, struct err *err)
{
    long n = backend_stream_read(stream, output_feed, o, err);
    if (n == BACKEND_AGAIN)
        return READ_GO_ON;
    if (o->limit_hit && !st->sent) {
        int rc = output_limit_reached(o);
        if (!st->intr)
            return rc; /* else the loop interrupts the program */
    }
    /* A pooled container that died before its runner had the code:
     * the program never ran, another container may run it. */
    if (n <= 0 && !output_started(o))
        return FOLLOW_NOT_STARTED;
    if (n < 0) {
        /* Bytes held back as a possible record start were output. */
        output_flush_scans(o);
        return err_wrap(err, "reading the program's output");
    }
    if (n > 0)
        return READ_GO_ON;
    if (!st->sent)
        return stream_ended(backend, o, id, err);
    output_flush_scans(o);
    int rc = output_record_seen(o) ? output_finish_record(o, err)
                                   : finish_from_engine(backend, o, id, err);
    restore_stop(o, st);
    return rc;
}

int follow(struct backend *backend, struct output *o, struct backend_stream *stream, const char *id,
           int cancel_fd, double deadline, struct err *err)
{
    return follow_interrupted(backend, o, stream, id, cancel_fd, deadline, NULL, err);
}

/* The loop of follow_interrupted; st->message is the caller's to free. */
static int follow_loop(struct backend *backend, struct output *o, struct backend_stream *stream,
                       const char *id, int cancel_fd, double deadline, struct stopping *st,
                       struct err *err)
{
    double next_check = util_now_ms() + ENGINE_CHECK_MS;
    /* Output past the cap is dropped, not a reason to stop reading: the
     * interrupt's record comes after it. */
    o->discard = st->intr != NULL;
    for (;;) {
        if (output_record_done(o)) {
            int rc = output_finish_record(o, err);
            restore_stop(o, st);
            /* The record came with the output past the cap, before the
             * interrupt went: the output was still cut. */
            if (rc == 0 && o->limit_hit && !st->sent && o->res->status == EXEC_OK)
                rc = output_limit_reached(o);
            return rc;
        }
        double now = util_now_ms();
        if (now >= next_check) {
            next_check = now + ENGINE_CHECK_MS;
            if (backend_gone(backend, err)) {
                output_flush_scans(o);
                return err_wrap(err, "the run was cut short");
            }
        }
        enum wait_outcome w = WAIT_STOP;
        /* Past the cap, a program followed with an interrupt is
         * interrupted at once, as at the deadline. */
        if (!o->limit_hit || !st->intr || st->sent)
            w = wait_stream(o, stream, cancel_fd, deadline, next_check, err);
        if (w == WAIT_FAILED)
            return -1;
        if (w == WAIT_STOP && st->sent) {
            restore_stop(o, st);
            return FOLLOW_GRACE_EXPIRED;
        }
        if (w == WAIT_STOP && !st->intr)
            return 0;
        if (w == WAIT_STOP) {
            if (interrupt(o, st, &deadline, &cancel_fd, err) < 0)
                return err_wrap(err, "interrupting the program");
            continue;
        }
        if (w == WAIT_AGAIN)
            continue;
        int rc = read_step(backend, o, stream, id, st, err);
        if (rc != READ_GO_ON)
            return rc;
    }
}

int follow_interrupted(struct backend *backend, struct output *o, struct backend_stream *stream,
                       const char *id, int cancel_fd, double deadline,
                       const struct follow_interrupt *intr, struct err *err)
{
    struct stopping st = {.intr = intr};
    int rc = follow_loop(backend, o, stream, id, cancel_fd, deadline, &st, err);
    free(st.message);
    return rc;
}
