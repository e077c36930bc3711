/* One run's gateway: the connections a sandbox makes to its egress
 * listener (backend_stream_egress_fd, a backend's own socket with its own
 * peer checks), taken on a thread of the run's and each served on a
 * thread of its own by egress_serve under the run's policy, until the
 * run ends.
 *
 * Threads: the acceptor, and one per connection being served, at most
 * the run's conns_open cap plus EGRESS_ACCEPTOR_SPARE (the spare ones
 * answer 429 over the cap rather than leave a client waiting). While
 * every thread is busy the acceptor stops taking connections, so those
 * wait in the listener's backlog: a sandbox cannot make the daemon start
 * more threads than that, however fast it connects.
 *
 * The stream's egress listener is the acceptor's between start and
 * finish: the stream's owner goes on using its streams meanwhile and
 * closes it only after finish (backend.h). A code session starts one per
 * call, so a connection made between calls waits for the next call's
 * policy. */
#ifndef MCPSBX_EGRESS_ACCEPTOR_H
#define MCPSBX_EGRESS_ACCEPTOR_H

#include "backend/backend.h"
#include "base/err.h"
#include "egress/policy.h"
#include "egress/summary.h"

/* Connection threads beyond conns_open. */
#define EGRESS_ACCEPTOR_SPARE 2
/* A connection thread's stack: egress_serve keeps its buffers on the
 * heap. */
#define EGRESS_CONN_STACK_BYTES (256 * 1024)

/* What a run's policy is made of: its patterns (already narrowed by the
 * call), the daemon-wide pins, allow CIDRs and caps (which must outlive
 * the run), and a label for log lines. */
struct egress_run_spec {
    const char *label;
    const struct egress_patterns *patterns;
    const struct egress_pins *pins;   /* may be NULL */
    const struct egress_cidrs *allow; /* may be NULL */
    const struct egress_caps *caps;   /* NULL: the defaults */
    /* The run's --secret placeholders (NULL: none); must outlive the run. */
    const struct egress_run_secrets *secrets;
    /* The daemon's CA and the upstream side's TLS context (NULL: no
     * interception; egress/policy.h); must outlive the run. */
    struct egress_tls_ca *ca;
    SSL_CTX *upstream_tls;
};

struct egress_acceptor;

/* Starts taking the connections of stream's egress listener (which it
 * must have) under a policy made from spec. */
int egress_acceptor_start(struct backend_stream *stream, const struct egress_run_spec *spec,
                          struct egress_acceptor **out, struct err *err);

/* Ends the run's egress: no connection is taken any more, the open ones
 * are cut at once, every thread is joined; then the run's summary is
 * copied into *report (NULL: not wanted) and a is freed. NULL is fine. */
void egress_acceptor_finish(struct egress_acceptor *a, struct egress_report *report);

#endif
