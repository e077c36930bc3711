/* A run's request as its runner reads it (sandbox/runner/runner.h): the
 * call's code, inputs and expected outputs, its language's program for
 * the generic runner, the pass-through secrets and the run's --secret
 * placeholders (set in the program's environment alike). Apart from exec.c so
 * that a sandbox kept between calls can be sent requests the same way. */
#ifndef MCPSBX_REQUEST_H
#define MCPSBX_REQUEST_H

#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"
#include "sandbox/run/exec_ctx.h"
#include "sandbox/run/run.h"

/* The most bytes req's framed request can take, ctx's pass-through
 * secrets and the placeholders (NULL: none) included: JSON escaping grows
 * a byte to at most six (\u0000). */
size_t request_cap(const struct exec_ctx *ctx, const struct run *req,
                   const struct egress_run_secrets *placeholders);

/* req as the runner reads it (sandbox/runner/runner.h), with the
 * placeholders' variables after the pass-through ones (neither for an
 * install run: install scripts get no secret), package_set (a set's
 * directory inside the sandbox; NULL or "": none) on its import path
 * for this run, or for the session's rest (req.packages_stay in a cell),
 * under nonce,
 * as the session part kind (RUNNER_SESSION_NONE: a one-shot run),
 * appended to request. Returns 0, or -1 with err. The request holds the
 * secrets: the caller zeroes it before freeing it. */
int encode_request(const struct exec_ctx *ctx, const struct run *req,
                   const struct egress_run_secrets *placeholders, const char *package_set,
                   const char *nonce, enum runner_session_kind kind, struct buf *request,
                   struct err *err);

#endif
