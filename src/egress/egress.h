/* The egress gateway, engine-neutral: what a sandbox may reach, how a
 * request to reach it is read and served, and a run's connections taken
 * from its sandbox's listener (a backend stream's).
 *
 * The egress/ folder: pattern.c (host patterns, --egress and a call's
 * narrowing of them), addr.c (the address ranges the gateway refuses, and
 * the CIDRs that allow some anyway), resolve.c (the gateway's resolver:
 * pins, literals, getaddrinfo, each address judged), proxy_req.c (the head
 * of a forward-proxy request, parsed as it arrives), and the gateway's
 * connection engine: policy.c (one run's policy, caps and usage),
 * summary.c (the run's egress summary), body.c (where a request's body
 * ends), relay.c (the byte pump) and gateway.c (one client connection
 * served to its end); acceptor.c (a run's connections, a bounded thread
 * each); settings.c (the daemon-wide pins, allowed CIDRs and caps, from
 * the options); secrets.c (--secret: the values, a run's placeholders
 * and their substitution in a request's head); intercept.c (a tunnel
 * to a host bound to a secret, its TLS terminated); tls_ca.c and tls_io.c
 * (tls.h: the daemon's CA and its leaves, and TLS connections to a
 * sandbox and to an upstream, on OpenSSL). It includes base/ headers,
 * and backend/backend.h for the acceptor's listener. */
#ifndef MCPSBX_EGRESS_H
#define MCPSBX_EGRESS_H

#include "egress/acceptor.h"
#include "egress/addr.h"
#include "egress/body.h"
#include "egress/gateway.h"
#include "egress/intercept.h"
#include "egress/pattern.h"
#include "egress/policy.h"
#include "egress/proxy_req.h"
#include "egress/relay.h"
#include "egress/resolve.h"
#include "egress/secrets.h"
#include "egress/settings.h"
#include "egress/summary.h"
#include "egress/tls.h"

#endif
