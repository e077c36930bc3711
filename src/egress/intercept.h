/* A tunnel to a host bound to a --secret, served with its TLS terminated
 * in the gateway, so that the run's placeholders can be replaced by their
 * values inside (egress/secrets.h): the one place the gateway reads what
 * a sandbox sends in a tunnel. Tunnels to any other host stay untouched
 * (gateway.c decides).
 *
 * Once the gateway has answered the CONNECT with 200 and holds a TCP
 * connection to the upstream (its address judged and connected as for
 * any tunnel), egress_intercept:
 *   - accepts the sandbox's TLS with a leaf for the host, signed by the
 *     daemon's CA (a client that does not trust it fails its handshake:
 *     the entry says so);
 *   - connects TLS to the upstream, verifying its certificate and name
 *     against the host's trust store and --egress-upstream-ca (one that
 *     does not verify: a 502 inside the sandbox's TLS, and the entry's
 *     reason);
 *   - then reads request heads from the sandbox's stream, origin form
 *     (proxy_req_init_origin: the same caps and framing checks as any
 *     request), writes each upstream as the gateway does for plain HTTP
 *     (its own Host, no hop-by-hop field) with the secrets in place, and
 *     passes its body exactly (egress/body.h); the next head is read
 *     where the body ends, so keep-alive and pipelining work. The
 *     upstream's bytes go back to the sandbox as they come, unparsed:
 *     responses come in the order of the requests.
 * A client that tunnels plain HTTP (its first byte opens no TLS
 * handshake: Node's fetch through the runner's agents does so for
 * http://) is served the same way in the clear, both sides plain.
 * Bytes count against the run's caps; the connection ends when either
 * side closes, at a cap, at the deadline, or at once when stop_fd fires.
 * A buffer that held a value is zeroed before it is reused or freed; no
 * value is ever in the entry or a log line (a count of insertions). */
#ifndef MCPSBX_EGRESS_INTERCEPT_H
#define MCPSBX_EGRESS_INTERCEPT_H

#include "egress/pattern.h"
#include "egress/policy.h"
#include "egress/summary.h"

struct egress_intercept {
    const struct egress_policy *p; /* with secrets, ca and upstream_tls */
    struct egress_usage *u;
    int stop_fd; /* -1: none */
    int client;  /* the sandbox's side, non-blocking, past the CONNECT */
    int upstream;
    double deadline; /* the connection time cap's (util_now_ms time) */
    const struct egress_host *host;
    unsigned port;
};

/* Serves the tunnel to its end (blocking), adding to e: bytes each way,
 * secrets inserted, the reason when it was cut or failed (status 502
 * when the upstream's TLS failed), intercepted. Closes neither socket. */
void egress_intercept(const struct egress_intercept *ic, struct egress_entry *e);

#endif
