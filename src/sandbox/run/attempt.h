/* Getting a run's code into a sandbox and reading it to its end: a
 * pooled sandbox when one fits the run, else one made for it; the
 * request sent; the output followed (follow.h). A pooled sandbox that
 * failed before the code reached it is replaced. The sandbox goes back
 * to the caller, who decides its end: exec_run removes it at once, a
 * caller that keeps a sandbox between calls holds on to it. */
#ifndef MCPSBX_ATTEMPT_H
#define MCPSBX_ATTEMPT_H

#include <stdbool.h>

#include "backend/backend.h"
#include "base/buf.h"
#include "base/err.h"
#include "sandbox/output/output.h"
#include "sandbox/run/exec_ctx.h"
#include "sandbox/run/run.h"

/* How long sending a request may take at most (and so a part of every
 * container's expiry label). */
#define SEND_TIMEOUT_MS 30000

/* The sandbox a run uses: taken from the pool or made for it. */
struct sandbox {
    char *id;
    struct backend_stream *stream;
    char *dir; /* a pooled installer's target (pool_entry.dir), or NULL */
    bool pooled;
};

/* Sends the framed request, within what is left of req's start deadline.
 * Returns 0, or -1 with err. */
int send_request(struct backend_stream *stream, const struct run *req, const struct buf *request,
                 struct err *err);

/* A sandbox for the run (spec: its container, if one is made; a pooled
 * one only when may_pool and the run's limits are the pool's), request
 * sent, the output read into o until the program ends (follow.h): a
 * pooled sandbox that fails before the code reached it is replaced by
 * another, once, then one is made on demand; its gateway gets secrets,
 * the placeholders request holds (NULL: none). Returns as exec_run (a
 * cancel before the start is 0 with status EXEC_CANCELLED); *sent once
 * the code reached a sandbox. *sb is the caller's on every return: its
 * id and stream (either may be NULL when none was had) to close and
 * remove, and, when pooled, pool_run_end to call. */
int attempt(struct exec_ctx *ctx, const struct run *req, const struct egress_run_secrets *secrets,
            const struct backend_spec *spec, bool may_pool, const struct buf *request,
            struct exec_cancel *cancel, struct output *o, struct sandbox *sb, bool *sent,
            struct err *err);

#endif
