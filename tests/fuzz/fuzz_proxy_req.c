/* libFuzzer harness for what the egress gateway reads from a sandbox: the
 * head of a proxy request (src/egress/proxy_req.h), and egress patterns
 * and CIDRs (src/egress/pattern.h, src/egress/addr.h), which a call may
 * send. The input is fed to the request parser whole and in small pieces,
 * and given, up to its first NUL, to the pattern and CIDR parsers.
 *
 * Checks, beyond "no crash":
 *   - whole or in pieces, the parser ends in the same state with the same
 *     status, head length and fields;
 *   - a finished head: its bytes end in an empty line, its host reads back
 *     to itself, its port is 1..65535, a CONNECT has no target and any
 *     other target is printable ASCII beginning with '/', field names are
 *     tokens and values hold no CR, LF or NUL, Content-Length and
 *     Transfer-Encoding are never both there;
 *   - a refusal has one of the documented statuses and a reason;
 *   - what follows a finished head, scanned for the end of the body it
 *     announces (src/egress/body.h) whole and in pieces, ends at the same
 *     byte the same way; a Content-Length body is exactly its length (or
 *     all there is), a finished chunked body ends in a CRLF;
 *   - a parsed pattern list renders to text that parses to the same list,
 *     narrows to itself, and each exact pattern matches its own host;
 *   - a parsed CIDR renders to text that parses to the same CIDR.
 *
 * Replay one input: build/fuzz/fuzz_proxy_req FILE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/addr.h"
#include "egress/body.h"
#include "egress/pattern.h"
#include "egress/proxy_req.h"
#include "fuzz.h"

static struct proxy_req *whole;
static struct proxy_req *pieces;
static struct egress_patterns *list;
static struct egress_patterns *again;

static bool tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static void check_done(const struct proxy_req *r, size_t consumed)
{
    size_t head = proxy_req_head_len(r);
    CHECK(head == consumed && head >= 4 && head <= PROXY_REQ_HEAD_MAX);
    const char *bytes = r->head;
    CHECK(bytes[head - 1] == '\n');
    CHECK(bytes[head - 2] == '\n' || (bytes[head - 2] == '\r' && bytes[head - 3] == '\n'));

    const struct egress_host *h = proxy_req_host(r);
    struct egress_host back;
    CHECK(egress_host_parse(h->text, strlen(h->text), &back));
    CHECK(back.kind == h->kind && strcmp(back.text, h->text) == 0);
    CHECK(proxy_req_port(r) >= 1 && proxy_req_port(r) <= 65535);

    size_t len = 0;
    const char *target = proxy_req_target(r, &len);
    CHECK(strlen(target) == len);
    if (proxy_req_method(r) == PROXY_CONNECT) {
        CHECK(len == 0);
    } else {
        CHECK(len >= 1 && target[0] == '/');
        for (size_t i = 0; i < len; i++)
            CHECK(target[i] > 0x20 && target[i] < 0x7f && target[i] != '#');
    }
    CHECK(!(proxy_req_has_content_length(r) && proxy_req_chunked(r)));
    CHECK(proxy_req_field_count(r) <= PROXY_REQ_FIELDS_MAX);
    for (size_t i = 0; i < proxy_req_field_count(r); i++) {
        const char *name = NULL;
        const char *value = NULL;
        size_t nl = 0;
        size_t vl = 0;
        proxy_req_field(r, i, &name, &nl, &value, &vl);
        CHECK(nl >= 1);
        for (size_t k = 0; k < nl; k++)
            CHECK(tchar((unsigned char)name[k]));
        CHECK(!memchr(value, '\r', vl) && !memchr(value, '\n', vl) && !memchr(value, '\0', vl));
        CHECK(vl == 0 || (value[0] != ' ' && value[vl - 1] != ' '));
        (void)proxy_req_field_hop_by_hop(r, i);
    }
}

static void check_same(const struct proxy_req *a, const struct proxy_req *b)
{
    CHECK(proxy_req_status(a) == proxy_req_status(b));
    if (a->state != PROXY_REQ_DONE)
        return;
    CHECK(proxy_req_head_len(a) == proxy_req_head_len(b));
    CHECK(proxy_req_method(a) == proxy_req_method(b));
    CHECK(strcmp(proxy_req_host(a)->text, proxy_req_host(b)->text) == 0);
    CHECK(proxy_req_port(a) == proxy_req_port(b));
    CHECK(strcmp(proxy_req_target(a, NULL), proxy_req_target(b, NULL)) == 0);
    CHECK(proxy_req_field_count(a) == proxy_req_field_count(b));
    CHECK(memcmp(a->fields, b->fields, a->nfields * sizeof(a->fields[0])) == 0);
}

/* The body after a finished head, as the gateway would forward it. */
static void check_body(const struct proxy_req *r, const uint8_t *rest, size_t n)
{
    if (proxy_req_method(r) == PROXY_CONNECT)
        return;
    enum egress_body_kind kind = proxy_req_chunked(r)              ? EGRESS_BODY_CHUNKED
                                 : proxy_req_has_content_length(r) ? EGRESS_BODY_LENGTH
                                                                   : EGRESS_BODY_NONE;
    struct egress_body whole_body;
    struct egress_body piece_body;
    egress_body_init(&whole_body, kind, proxy_req_content_length(r));
    egress_body_init(&piece_body, kind, proxy_req_content_length(r));
    const char *p = (const char *)rest;
    size_t took = egress_body_take(&whole_body, p, n);
    CHECK(took <= n);
    size_t at = 0;
    size_t piece_took = 0;
    for (size_t k = 0; at < n; k++) {
        size_t len = k % 5 + 1;
        if (len > n - at)
            len = n - at;
        size_t t = egress_body_take(&piece_body, p + at, len);
        CHECK(t <= len);
        piece_took += t;
        if (t < len)
            break;
        at += len;
    }
    CHECK(took == piece_took);
    CHECK(egress_body_done(&whole_body) == egress_body_done(&piece_body));
    CHECK((egress_body_error(&whole_body) == NULL) == (egress_body_error(&piece_body) == NULL));
    CHECK(!(egress_body_done(&whole_body) && egress_body_error(&whole_body)));
    if (kind == EGRESS_BODY_NONE)
        CHECK(took == 0 && egress_body_done(&whole_body));
    if (kind == EGRESS_BODY_LENGTH) {
        unsigned long long want = proxy_req_content_length(r);
        CHECK(took == (want < n ? want : n));
        CHECK(egress_body_done(&whole_body) == (want <= n));
    }
    if (kind == EGRESS_BODY_CHUNKED && egress_body_done(&whole_body))
        CHECK(took >= 5 && p[took - 2] == '\r' && p[took - 1] == '\n');
    if (!egress_body_done(&whole_body) && !egress_body_error(&whole_body))
        CHECK(took == n);
}

static void check_request(const uint8_t *data, size_t size)
{
    size_t consumed = 0;
    proxy_req_init(whole);
    enum proxy_req_state st = proxy_req_feed(whole, data, size, &consumed);
    CHECK(consumed <= size);
    switch (st) {
    case PROXY_REQ_MORE:
        CHECK(consumed == size && size < PROXY_REQ_HEAD_MAX);
        CHECK(proxy_req_status(whole) == 0 && proxy_req_reason(whole) == NULL);
        break;
    case PROXY_REQ_DONE:
        check_done(whole, consumed);
        check_body(whole, data + consumed, size - consumed);
        break;
    case PROXY_REQ_ERROR: {
        int s = proxy_req_status(whole);
        CHECK(s == 400 || s == 405 || s == 414 || s == 431 || s == 501 || s == 505);
        CHECK(proxy_req_reason(whole) && *proxy_req_reason(whole));
        break;
    }
    }

    /* Pieces of 1 to 7 bytes. */
    proxy_req_init(pieces);
    size_t at = 0;
    size_t total = 0;
    enum proxy_req_state ps = PROXY_REQ_MORE;
    for (size_t k = 0; at < size && ps == PROXY_REQ_MORE; k++) {
        size_t n = k % 7 + 1;
        if (n > size - at)
            n = size - at;
        size_t took = 0;
        ps = proxy_req_feed(pieces, data + at, n, &took);
        CHECK(took <= n);
        total += took;
        at += n;
    }
    CHECK(ps == st);
    if (st == PROXY_REQ_DONE)
        CHECK(total == consumed);
    check_same(whole, pieces);
}

static void check_patterns(const char *s)
{
    if (egress_patterns_parse(s, list, NULL) < 0) {
        CHECK(list->n == 0);
        return;
    }
    char *text = egress_patterns_format(list);
    CHECK(egress_patterns_parse(text, again, NULL) == 0);
    CHECK(again->n == list->n);
    CHECK(memcmp(again->items, list->items, list->n * sizeof(list->items[0])) == 0);
    free(text);
    CHECK(egress_patterns_narrow(list, list, again, NULL) == 0);
    for (size_t i = 0; i < list->n; i++) {
        const struct egress_pattern *p = &list->items[i];
        unsigned port = p->port ? p->port : EGRESS_PORT_HTTPS;
        if (!p->wildcard)
            CHECK(egress_patterns_match(list, p->host.text, port) >= 0);
        else
            CHECK(egress_patterns_match(list, p->host.text, port) != (int)i);
    }
}

static void check_cidr(const char *s)
{
    struct egress_cidr c;
    if (egress_cidr_parse(s, &c, NULL) < 0)
        return;
    char text[EGRESS_CIDR_TEXT_CAP];
    egress_cidr_format(&c, text, sizeof(text));
    struct egress_cidr back;
    CHECK(egress_cidr_parse(text, &back, NULL) == 0);
    CHECK(back.family == c.family && back.prefix == c.prefix);
    CHECK(memcmp(back.addr, c.addr, sizeof(c.addr)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!whole) {
        whole = malloc(sizeof(*whole));
        pieces = malloc(sizeof(*pieces));
        list = malloc(sizeof(*list));
        again = malloc(sizeof(*again));
        CHECK(whole && pieces && list && again);
    }
    check_request(data, size);

    char *s = malloc(size + 1);
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    check_patterns(s);
    check_cidr(s);
    free(s);
    return 0;
}
