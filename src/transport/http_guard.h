/* What every request passes before anything else looks at it: the Host
 * and Origin allow-lists (DNS-rebinding defence) and the bearer token. */
#ifndef MCPSBX_HTTP_GUARD_H
#define MCPSBX_HTTP_GUARD_H

#include "transport/http_server.h"

/* given[0..given_len) equals secret, in time independent of where they
 * differ. */
bool http_secret_equal(const char *given, size_t given_len, const char *secret);

/* Who sent rq, once http_guard_admit let it in: "token:" and the first
 * 16 hex digits of the configured bearer token's SHA-256, or "anonymous"
 * when no token is configured (the name of a secret, never the secret). */
void http_principal(const struct transport_http *t, const struct request *rq,
                    char out[MCP_PRINCIPAL_CAP]);

/* True when the request may go on (rq->origin is then an allowed Origin
 * or NULL); otherwise it has been answered with 403 or 401, *ret being
 * MHD's result. Preflights and /healthz need no token. */
bool http_guard_admit(const struct transport_http *t, struct MHD_Connection *c, struct request *rq,
                      const char *url, const char *method, enum MHD_Result *ret);

#endif
