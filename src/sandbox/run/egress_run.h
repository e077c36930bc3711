/* A run's way out through the daemon's egress gateway (egress/acceptor.h):
 * begun once its sandbox is there and before its code is sent, ended once
 * the run is followed to its end, for a one-shot run and a session's call
 * alike. The result carries the run's egress summary.
 *
 * A run's --secret placeholders (egress/secrets.h) have one owner, the
 * caller of egress_run_secrets_for: exec_run for a one-shot run, the code
 * session for all its calls (a value kept in the interpreter between
 * calls stays valid). They go into the run's request (the runner sets
 * them in the program's environment) and into its gateway's policy. */
#ifndef MCPSBX_EGRESS_RUN_H
#define MCPSBX_EGRESS_RUN_H

#include "egress/acceptor.h"
#include "egress/secrets.h"
#include "sandbox/run/exec_ctx.h"

struct exec_result;

/* For a sandbox with a way to the gateway (its language has egress), the
 * gateway of the sandbox id on stream under req's patterns (none when the
 * call narrowed them to nothing), secrets (NULL: none) and the daemon's
 * pins, allow CIDRs and caps: *a to pass to egress_run_end; NULL for a
 * sandbox without. A run with patterns on a sandbox without the way fails
 * (it never goes on without its gateway, nor with more). */
int egress_run_begin(const struct exec_ctx *ctx, const struct run *req,
                     const struct egress_run_secrets *secrets, struct backend_stream *stream,
                     const char *id, struct egress_acceptor **a, struct err *err);

/* Ends a's connections and puts the run's summary in res (replacing one
 * an earlier attempt left). NULL is fine. */
void egress_run_end(struct egress_acceptor *a, struct exec_result *res);

/* Fresh placeholders for a run of req's language: *out NULL when the
 * language has no egress (it could not use them) or there is no
 * --secret. Free with egress_run_secrets_free once the run has ended. */
int egress_run_secrets_for(const struct exec_ctx *ctx, const struct run *req,
                           struct egress_run_secrets **out, struct err *err);

/* At start: warns about each --secret host that no language's egress list
 * allows (it could never be reached). */
void egress_run_check_secrets(const struct exec_ctx *ctx);

#endif
