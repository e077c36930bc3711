#include "transport/http_guard.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/codec.h"
#include "transport/http_headers.h"

#define AUTH_REALM "Bearer realm=\"" MCP_SERVER_NAME "\""

/* No early exit, so the time taken does not tell how much of secret matched. */
bool http_secret_equal(const char *given, size_t given_len, const char *secret)
{
    size_t n = strlen(secret);
    unsigned diff = given_len != n;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)secret[i] ^ (unsigned char)(i < given_len ? given[i] : 0);
    return diff == 0;
}

/* DNS rebinding defence: a browser tricked into calling us sends the
 * attacker's name as Host. */
static bool host_allowed(const struct transport_http *t, const char *host)
{
    struct http_host h;
    if (!host || !http_parse_host(host, strlen(host), &h))
        return false;
    bool local = http_is_loopback_name(h.name, h.name_len) ||
                 (t->self_host && http_token_is(h.name, h.name_len, t->self_host));
    if (local && (!h.has_port || h.port == t->port))
        return true;
    for (size_t i = 0; i < t->cfg->allowed_hosts.n; i++) {
        const char *a = t->cfg->allowed_hosts.items[i];
        struct http_host ah;
        if (strcasecmp(a, host) == 0)
            return true;
        /* An entry without a port allows that name on any port (proxies). */
        if (http_parse_host(a, strlen(a), &ah) && !ah.has_port && ah.name_len == h.name_len &&
            strncasecmp(a, host, h.name_len) == 0)
            return true;
    }
    return false;
}

/* The daemon's own origin (http://, a loopback name or the bound address,
 * the bound port) and --allowed-origins: any other page, a loopback one on
 * another port among them, must not drive the daemon from a browser. */
static bool origin_allowed(const struct transport_http *t, const char *origin)
{
    for (size_t i = 0; i < t->cfg->allowed_origins.n; i++)
        if (strcasecmp(t->cfg->allowed_origins.items[i], origin) == 0)
            return true;
    /* The daemon serves plain HTTP: its own pages' origin is http://. */
    struct http_host h;
    if (strncasecmp(origin, "http://", 7) != 0 || !http_parse_origin(origin, &h))
        return false;
    if ((h.has_port ? h.port : 80) != t->port)
        return false;
    return http_is_loopback_name(h.name, h.name_len) ||
           (t->self_host && http_token_is(h.name, h.name_len, t->self_host));
}

static bool auth_ok(const struct transport_http *t, const char *value)
{
    const char *secret = t->cfg->auth_token;
    if (!secret || !*secret)
        return true;
    size_t len = 0;
    const char *given = http_bearer_token(value, &len);
    return given && http_secret_equal(given, len, secret);
}

void http_principal(const struct transport_http *t, const struct request *rq,
                    char out[MCP_PRINCIPAL_CAP])
{
    if (!rq->authenticated) {
        snprintf(out, MCP_PRINCIPAL_CAP, "anonymous");
        return;
    }
    char hex[CODEC_SHA256_HEX_LEN + 1];
    codec_sha256_hex(t->cfg->auth_token, strlen(t->cfg->auth_token), hex);
    snprintf(out, MCP_PRINCIPAL_CAP, "token:%.16s", hex);
}

bool http_guard_admit(const struct transport_http *t, struct MHD_Connection *c, struct request *rq,
                      const char *url, const char *method, enum MHD_Result *ret)
{
    if (!host_allowed(t, http_header(c, "Host"))) {
        *ret = http_reply_error(c, rq, MHD_HTTP_FORBIDDEN, HTTP_ERR_SERVER,
                                "Forbidden: Host header not allowed");
        return false;
    }
    const char *origin = http_header(c, "Origin");
    if (origin) {
        if (!origin_allowed(t, origin)) {
            *ret = http_reply_error(c, rq, MHD_HTTP_FORBIDDEN, HTTP_ERR_SERVER,
                                    "Forbidden: Origin not allowed");
            return false;
        }
        rq->origin = origin;
    }
    /* Preflights carry no credentials; health checks are open. */
    const char *auth = http_header(c, "Authorization");
    bool token_ok = auth_ok(t, auth);
    rq->authenticated = token_ok && t->cfg->auth_token && *t->cfg->auth_token;
    if (strcmp(method, "OPTIONS") == 0 || strcmp(url, "/healthz") == 0 || token_ok)
        return true;
    bool sent = auth != NULL;
    struct MHD_Response *resp =
        http_response_error(HTTP_ERR_SERVER, sent ? "Unauthorized: invalid bearer token"
                                                  : "Unauthorized: a bearer token is required");
    if (resp)
        MHD_add_response_header(resp, "WWW-Authenticate",
                                sent ? AUTH_REALM ", error=\"invalid_token\"" : AUTH_REALM);
    *ret = http_queue(c, rq, MHD_HTTP_UNAUTHORIZED, resp);
    return false;
}
