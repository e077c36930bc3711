/* libFuzzer harness for the requests a sandbox sends inside a tunnel
 * whose TLS the gateway terminates (src/egress/intercept.h): a stream of
 * origin-form heads (proxy_req_init_origin) each followed by the body it
 * announces (src/egress/body.h), read as the gateway reads a keep-alive
 * connection, and each head as the gateway writes it upstream
 * (proxy_req_upstream_head).
 *
 * Checks, beyond "no crash":
 *   - whole or in pieces, every head of the stream ends in the same state
 *     at the same byte, and every body ends at the same byte;
 *   - a finished head keeps the tunnel's host and port, its target is
 *     printable ASCII beginning with '/' without '#', and it is never a
 *     CONNECT; a refusal has a documented status and a reason;
 *   - the head written upstream fits its cap, ends in an empty line, and
 *     read again in origin mode gives the same method, target, framing
 *     and no hop-by-hop field; with close it asks to close.
 *
 * Replay one input: build/fuzz/fuzz_inner_req FILE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "egress/body.h"
#include "egress/gateway.h"
#include "egress/pattern.h"
#include "egress/proxy_req.h"
#include "fuzz.h"

/* Heads read from one input at most (a stream of small ones). */
#define HEADS_MAX 64

static struct proxy_req *req;
static struct proxy_req *again;
static struct egress_host host;
static char out[EGRESS_UPSTREAM_HEAD_MAX];

static enum egress_body_kind kind_of(const struct proxy_req *r)
{
    return proxy_req_chunked(r)              ? EGRESS_BODY_CHUNKED
           : proxy_req_has_content_length(r) ? EGRESS_BODY_LENGTH
                                             : EGRESS_BODY_NONE;
}

static void check_upstream_head(const struct proxy_req *r)
{
    bool close = proxy_req_wants_close(r);
    size_t n = proxy_req_upstream_head(r, "api.test", 8, close, out, sizeof(out));
    CHECK(n > 0 && n <= sizeof(out));
    CHECK(n >= 4 && memcmp(out + n - 4, "\r\n\r\n", 4) == 0);
    /* Its own Host, Transfer-Encoding and Connection may take it past
     * the parser's field cap, which binds the client alone. */
    if (proxy_req_field_count(r) + 3 > PROXY_REQ_FIELDS_MAX)
        return;
    proxy_req_init_origin(again, &host, 443);
    size_t used = 0;
    CHECK(proxy_req_feed(again, out, n, &used) == PROXY_REQ_DONE && used == n);
    CHECK(proxy_req_method(again) == proxy_req_method(r));
    CHECK(strcmp(proxy_req_target(again, NULL), proxy_req_target(r, NULL)) == 0);
    CHECK(proxy_req_chunked(again) == proxy_req_chunked(r));
    CHECK(proxy_req_has_content_length(again) == proxy_req_has_content_length(r));
    CHECK(proxy_req_content_length(again) == proxy_req_content_length(r));
    CHECK(proxy_req_wants_close(again) == close);
    for (size_t i = 0; i < proxy_req_field_count(again); i++) {
        const char *name = NULL;
        const char *value = NULL;
        size_t nl = 0;
        size_t vl = 0;
        proxy_req_field(again, i, &name, &nl, &value, &vl);
        /* The gateway's own fields, and one called "close" that its
         * Connection: close names (the client's, passed on). */
        bool ours = (nl == 10 && strncasecmp(name, "connection", 10) == 0) ||
                    (nl == 17 && strncasecmp(name, "transfer-encoding", 17) == 0) ||
                    (close && nl == 5 && strncasecmp(name, "close", 5) == 0);
        CHECK(ours || !proxy_req_field_hop_by_hop(again, i));
    }
}

static void check_done(const struct proxy_req *r)
{
    CHECK(proxy_req_method(r) != PROXY_CONNECT);
    CHECK(strcmp(proxy_req_host(r)->text, "api.test") == 0 && proxy_req_port(r) == 443);
    size_t len = 0;
    const char *target = proxy_req_target(r, &len);
    CHECK(len >= 1 && target[0] == '/' && strlen(target) == len);
    for (size_t i = 0; i < len; i++)
        CHECK(target[i] > 0x20 && target[i] < 0x7f && target[i] != '#');
    CHECK(!(proxy_req_has_content_length(r) && proxy_req_chunked(r)));
    check_upstream_head(r);
}

/* Reads data as the gateway does, piece sizes cycling up to step (0:
 * whole). Writes where each head and body ended into ends[]; returns
 * how many it wrote. */
static size_t read_stream(const uint8_t *data, size_t size, size_t step, size_t *ends)
{
    size_t at = 0;
    size_t n_ends = 0;
    bool in_body = false;
    struct egress_body body;
    proxy_req_init_origin(req, &host, 443);
    for (size_t k = 0; at < size && n_ends < 2 * HEADS_MAX; k++) {
        size_t n = step ? k % step + 1 : size - at;
        if (n > size - at)
            n = size - at;
        const char *p = (const char *)data + at;
        if (!in_body) {
            size_t used = 0;
            enum proxy_req_state st = proxy_req_feed(req, p, n, &used);
            CHECK(used <= n);
            at += used;
            if (st == PROXY_REQ_ERROR) {
                int s = proxy_req_status(req);
                CHECK(s == 400 || s == 405 || s == 414 || s == 431 || s == 501 || s == 505);
                CHECK(proxy_req_reason(req) && *proxy_req_reason(req));
                ends[n_ends++] = at;
                break;
            }
            if (st == PROXY_REQ_DONE) {
                check_done(req);
                ends[n_ends++] = at;
                egress_body_init(&body, kind_of(req), proxy_req_content_length(req));
                in_body = !egress_body_done(&body);
                if (!in_body)
                    proxy_req_init_origin(req, &host, 443);
            }
            continue;
        }
        size_t took = egress_body_take(&body, p, n);
        CHECK(took <= n);
        at += took;
        if (egress_body_error(&body)) {
            ends[n_ends++] = at;
            break;
        }
        if (egress_body_done(&body)) {
            ends[n_ends++] = at;
            in_body = false;
            proxy_req_init_origin(req, &host, 443);
        }
    }
    return n_ends;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static size_t whole[2 * HEADS_MAX];
    static size_t pieces[2 * HEADS_MAX];
    if (!req) {
        req = malloc(sizeof(*req));
        again = malloc(sizeof(*again));
        CHECK(req && again && egress_host_parse("api.test", 8, &host));
    }
    size_t a = read_stream(data, size, 0, whole);
    size_t b = read_stream(data, size, 7, pieces);
    CHECK(a == b);
    CHECK(memcmp(whole, pieces, a * sizeof(whole[0])) == 0);
    return 0;
}
