/* The egress gateway's connection engine: one client connection from a
 * sandbox (a connected stream socket) served to its end under one run's
 * policy, engine-neutral. How the connection reached the daemon, and
 * whose it is, is the caller's business (the backend's socket and its
 * peer checks).
 *
 * egress_serve reads the head of one forward-proxy request
 * (egress/proxy_req.h) within the head time cap, then:
 *   - refuses with a one-line text answer and closes: 429 over the run's
 *     connection caps; 403 for a host:port not in the run's list, or one
 *     the resolver refuses (a private, loopback, metadata... address);
 *     502 for a name that does not resolve or an upstream that cannot be
 *     reached, 504 for one that does not answer within the connect cap;
 *     the parser's status for a malformed head; 408 for a head that does
 *     not arrive in time;
 *   - CONNECT: connects to the addresses egress_resolve gave (in order,
 *     never resolving again), answers 200 and relays bytes both ways
 *     untouched; but to a host:port bound to one of the run's secrets,
 *     with the daemon's CA, the tunnel's TLS is terminated and its
 *     requests served with the values in place (egress/intercept.h);
 *   - absolute-form HTTP: connects likewise and sends a head it writes
 *     itself ("METHOD /target HTTP/1.x", Host, the client's fields but
 *     Host, the hop-by-hop ones and any Proxy-*, and "Connection: close"),
 *     with the run's --secret values in place of their placeholders where
 *     the host and port are bound to them (egress/secrets.h), then
 *     exactly the request's body, and relays the response as it comes
 *     until the upstream closes. One request per connection: the gateway
 *     closes the client's connection after it.
 * Each connection's bytes count against the run's caps, and its life
 * against the connection time cap. Every connection adds one entry to the
 * run's summary and writes one log line (the host escaped; never a
 * payload or a field's value; how many secrets were inserted, never
 * which value).
 *
 * The run's end stops its connections at once through a struct
 * egress_cancel: every wait of the gateway polls its descriptor with the
 * sockets, so no slow upstream or client holds the run's end. The one
 * wait it cannot cut short is a name's resolution through getaddrinfo
 * (pinned names and literals never wait): that lasts as long as the
 * system's resolver allows (resolv.conf's timeout and attempts). */
#ifndef MCPSBX_EGRESS_GATEWAY_H
#define MCPSBX_EGRESS_GATEWAY_H

#include <stdatomic.h>
#include <stdbool.h>

#include "base/err.h"
#include "egress/policy.h"
#include "egress/summary.h"

/* How long the gateway gives a client to take one of its own answers. */
#define EGRESS_ANSWER_MS 5000
/* The longest head the gateway writes upstream: the client's head (less
 * what it drops) and its own Host, Transfer-Encoding and Connection. */
#define EGRESS_UPSTREAM_HEAD_MAX (PROXY_REQ_HEAD_MAX + 1024)

/* Room for one of the gateway's own answers: status line, fields, and
 * the reason as its one-line body. */
#define EGRESS_ANSWER_CAP (EGRESS_SUMMARY_REASON_CAP + 256)

/* The reason phrase of a status the gateway answers ("Bad Gateway" for
 * any it does not know). */
const char *egress_status_text(int status);
/* One of the gateway's own answers for status, with reason (text, no
 * payload) as its one-line body, in out: its length, or 0 when it does
 * not fit in cap. */
size_t egress_answer_format(int status, const char *reason, char *out, size_t cap);

/* A run's stop: an eventfd that becomes readable, and stays so, once
 * fired. Fire it from any thread; then join the connection threads. */
struct egress_cancel {
    int fd;
    atomic_bool fired;
};

int egress_cancel_init(struct egress_cancel *c, struct err *err);
void egress_cancel_fire(struct egress_cancel *c);
bool egress_cancel_fired(const struct egress_cancel *c);
void egress_cancel_destroy(struct egress_cancel *c);

/* Serves the client's connection on client_fd to its end, blocking (run
 * it on a thread of its own), and closes client_fd. p, u and s are the
 * run's, shared by its connections (u and s initialised); stop may be
 * NULL (never stopped but by the caps). */
void egress_serve(const struct egress_policy *p, struct egress_usage *u, struct egress_summary *s,
                  int client_fd, const struct egress_cancel *stop);

#endif
