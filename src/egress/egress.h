/* The egress gateway's building blocks, pure and engine-neutral: what a
 * sandbox may reach and how a request to reach it is read.
 *
 * The egress/ folder: pattern.c (host patterns, --egress and a call's
 * narrowing of them), addr.c (the address ranges the gateway refuses, and
 * the CIDRs that allow some anyway), resolve.c (the gateway's resolver:
 * pins, literals, getaddrinfo, each address judged), proxy_req.c (the head
 * of a forward-proxy request, parsed as it arrives). It includes only
 * base/ headers. */
#ifndef MCPSBX_EGRESS_H
#define MCPSBX_EGRESS_H

#include "egress/addr.h"
#include "egress/pattern.h"
#include "egress/proxy_req.h"
#include "egress/resolve.h"

#endif
