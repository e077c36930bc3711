/* egress/proxy_req.c: good requests (CONNECT, absolute form with a query,
 * IPv6 literal hosts, bodies after the head, pieces fed one byte at a
 * time) and hostile ones (too long, too many fields, methods, smuggling
 * framing, NUL bytes, CONNECT without a port, userinfo, stray spaces,
 * non-ASCII hosts), each with the status the gateway answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/proxy_req.h"

static struct proxy_req *req;
static struct proxy_req *other;

static int setup(void **state)
{
    (void)state;
    req = malloc(sizeof(*req));
    other = malloc(sizeof(*other));
    return req && other ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(req);
    free(other);
    return 0;
}

/* Feeds all of s[0..n) at once; returns the state, *consumed the count. */
static enum proxy_req_state feed_all(struct proxy_req *r, const char *s, size_t n, size_t *consumed)
{
    proxy_req_init(r);
    return proxy_req_feed(r, s, n, consumed);
}

/* Feeds s one byte at a time; returns the state and the total taken. */
static enum proxy_req_state feed_bytes(struct proxy_req *r, const char *s, size_t n,
                                       size_t *consumed)
{
    proxy_req_init(r);
    size_t total = 0;
    enum proxy_req_state st = PROXY_REQ_MORE;
    for (size_t i = 0; i < n && st == PROXY_REQ_MORE; i++) {
        size_t took = 99;
        st = proxy_req_feed(r, s + i, 1, &took);
        assert_int_equal(took, 1);
        total += took;
    }
    *consumed = total;
    return st;
}

/* s parses whole, with or without a tail after the head, at once and a
 * byte at a time, to the same result; req holds it. */
static void good(const char *s)
{
    size_t head = strlen(s);
    char *with_tail = malloc(head + 6);
    memcpy(with_tail, s, head);
    memcpy(with_tail + head, "BODY!", 6);
    size_t consumed = 0;
    enum proxy_req_state st = feed_bytes(other, s, head, &consumed);
    if (st != PROXY_REQ_DONE)
        fail_msg("'%s' byte by byte: state %d, %d %s", s, st, proxy_req_status(other),
                 proxy_req_reason(other) ? proxy_req_reason(other) : "");
    assert_int_equal(consumed, head);
    st = feed_all(req, with_tail, head + 5, &consumed);
    if (st != PROXY_REQ_DONE)
        fail_msg("'%s': state %d, %d %s", s, st, proxy_req_status(req),
                 proxy_req_reason(req) ? proxy_req_reason(req) : "");
    assert_int_equal(consumed, head);
    assert_int_equal(proxy_req_head_len(req), head);
    /* Done stays done, taking nothing. */
    assert_int_equal(proxy_req_feed(req, "more", 4, &consumed), PROXY_REQ_DONE);
    assert_int_equal(consumed, 0);
    /* Both ways read the same. */
    assert_int_equal(proxy_req_method(req), proxy_req_method(other));
    assert_string_equal(proxy_req_host(req)->text, proxy_req_host(other)->text);
    assert_int_equal(proxy_req_port(req), proxy_req_port(other));
    assert_string_equal(proxy_req_target(req, NULL), proxy_req_target(other, NULL));
    assert_int_equal(proxy_req_field_count(req), proxy_req_field_count(other));
    assert_int_equal(proxy_req_status(req), 0);
    assert_null(proxy_req_reason(req));
    free(with_tail);
}

/* s[0..n) is refused with status, a reason holding want, at once and
 * byte by byte. */
static void bad_n(const char *s, size_t n, int status, const char *want)
{
    size_t consumed = 0;
    for (int way = 0; way < 2; way++) {
        enum proxy_req_state st =
            way ? feed_bytes(req, s, n, &consumed) : feed_all(req, s, n, &consumed);
        if (st != PROXY_REQ_ERROR)
            fail_msg("'%.60s' (%s) should be refused, state %d", s, way ? "bytes" : "whole", st);
        if (proxy_req_status(req) != status)
            fail_msg("'%.60s': status %d, want %d (%s)", s, proxy_req_status(req), status,
                     proxy_req_reason(req));
        if (!strstr(proxy_req_reason(req), want))
            fail_msg("'%.60s': reason '%s' lacks '%s'", s, proxy_req_reason(req), want);
    }
    /* An error stays, taking nothing. */
    assert_int_equal(proxy_req_feed(req, "x", 1, &consumed), PROXY_REQ_ERROR);
    assert_int_equal(consumed, 0);
}

static void bad(const char *s, int status, const char *want)
{
    bad_n(s, strlen(s), status, want);
}

static void expect_field(size_t i, const char *name, const char *value)
{
    const char *n = NULL;
    const char *v = NULL;
    size_t nl = 0;
    size_t vl = 0;
    proxy_req_field(req, i, &n, &nl, &v, &vl);
    if (nl != strlen(name) || memcmp(n, name, nl) != 0 || vl != strlen(value) ||
        memcmp(v, value, vl) != 0)
        fail_msg("field %zu is '%.*s: %.*s', want '%s: %s'", i, (int)nl, n, (int)vl, v, name,
                 value);
}

static void test_connect(void **state)
{
    (void)state;
    good("CONNECT api.Example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n"
         "Proxy-Authorization: Basic eDp5\r\nUser-Agent: curl/8\r\n\r\n");
    assert_int_equal(proxy_req_method(req), PROXY_CONNECT);
    assert_string_equal(proxy_method_name(proxy_req_method(req)), "CONNECT");
    assert_int_equal(proxy_req_minor(req), 1);
    assert_int_equal(proxy_req_host(req)->kind, EGRESS_HOST_NAME);
    assert_string_equal(proxy_req_host(req)->text, "api.example.com");
    assert_int_equal(proxy_req_port(req), 443);
    size_t len = 99;
    assert_string_equal(proxy_req_target(req, &len), "");
    assert_int_equal(len, 0);
    assert_int_equal(proxy_req_field_count(req), 3);
    expect_field(0, "Host", "api.example.com:443");
    expect_field(1, "Proxy-Authorization", "Basic eDp5");
    assert_false(proxy_req_field_hop_by_hop(req, 0));
    assert_true(proxy_req_field_hop_by_hop(req, 1));
    assert_false(proxy_req_field_hop_by_hop(req, 2));

    good("CONNECT [2001:DB8::1]:8443 HTTP/1.0\r\n\r\n");
    assert_int_equal(proxy_req_host(req)->kind, EGRESS_HOST_IPV6);
    assert_string_equal(proxy_req_host(req)->text, "2001:db8::1");
    assert_int_equal(proxy_req_port(req), 8443);
    assert_int_equal(proxy_req_minor(req), 0);
    assert_int_equal(proxy_req_field_count(req), 0);

    good("CONNECT 10.1.2.3:22 HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    assert_int_equal(proxy_req_host(req)->kind, EGRESS_HOST_IPV4);
    assert_string_equal(proxy_req_host(req)->text, "10.1.2.3");
    assert_int_equal(proxy_req_port(req), 22);

    /* The tunnel's first bytes arrive with the head: they are not taken. */
    const char tls[] = "CONNECT a.com:443 HTTP/1.1\r\n\r\n\x16\x03\x01\x02\x00";
    size_t consumed = 0;
    assert_int_equal(feed_all(req, tls, sizeof(tls) - 1, &consumed), PROXY_REQ_DONE);
    assert_int_equal(consumed, sizeof(tls) - 1 - 5);
}

static void test_absolute(void **state)
{
    (void)state;
    good("GET http://Example.COM/path/a?x=1&y=%20&z=PLACEHOLDER HTTP/1.1\r\n"
         "Host: example.com\r\nAccept: */*\r\nX-Key:   abc def  \r\n\r\n");
    assert_int_equal(proxy_req_method(req), PROXY_GET);
    assert_string_equal(proxy_req_host(req)->text, "example.com");
    assert_int_equal(proxy_req_port(req), 80);
    size_t len = 0;
    assert_string_equal(proxy_req_target(req, &len), "/path/a?x=1&y=%20&z=PLACEHOLDER");
    assert_int_equal(len, strlen("/path/a?x=1&y=%20&z=PLACEHOLDER"));
    expect_field(2, "X-Key", "abc def");
    assert_false(proxy_req_has_content_length(req));
    assert_false(proxy_req_chunked(req));

    good("GET http://example.com:8080 HTTP/1.0\r\n\r\n");
    assert_string_equal(proxy_req_target(req, NULL), "/");
    assert_int_equal(proxy_req_port(req), 8080);
    good("HEAD http://example.com?q=1 HTTP/1.1\r\n\r\n");
    assert_string_equal(proxy_req_target(req, NULL), "/?q=1");
    assert_int_equal(proxy_req_method(req), PROXY_HEAD);
    good("GET HTTP://example.com./ HTTP/1.1\r\n\r\n");
    assert_string_equal(proxy_req_host(req)->text, "example.com");
    good("DELETE http://[::1]:8080/x HTTP/1.1\r\n\r\n");
    assert_int_equal(proxy_req_host(req)->kind, EGRESS_HOST_IPV6);
    assert_string_equal(proxy_req_host(req)->text, "::1");
    assert_int_equal(proxy_req_port(req), 8080);
    assert_string_equal(proxy_req_target(req, NULL), "/x");
    good("OPTIONS http://10.1.2.3/ HTTP/1.1\r\n\r\n");
    assert_int_equal(proxy_req_host(req)->kind, EGRESS_HOST_IPV4);

    const char *methods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        char line[128];
        snprintf(line, sizeof(line), "%s http://a.com/ HTTP/1.1\r\n\r\n", methods[i]);
        good(line);
        assert_string_equal(proxy_method_name(proxy_req_method(req)), methods[i]);
    }

    /* Bare LF line ends. */
    good("GET http://a.com/ HTTP/1.1\nHost: a.com\n\n");
    assert_int_equal(proxy_req_field_count(req), 1);
    good("GET http://a.com/ HTTP/1.1\r\nHost: a.com\n\r\n");
    /* obs-text in a value; an empty value. */
    good("GET http://a.com/ HTTP/1.1\r\nX-Name: caf\xc3\xa9\r\nX-Empty:\r\n\r\n");
    expect_field(0, "X-Name", "caf\xc3\xa9");
    expect_field(1, "X-Empty", "");
}

static void test_bodies(void **state)
{
    (void)state;
    const char post[] = "POST http://a.com/upload HTTP/1.1\r\nContent-Length: 5\r\n"
                        "Content-Length: 5\r\n\r\nhello";
    size_t consumed = 0;
    assert_int_equal(feed_all(req, post, sizeof(post) - 1, &consumed), PROXY_REQ_DONE);
    assert_int_equal(consumed, sizeof(post) - 1 - 5);
    assert_true(proxy_req_has_content_length(req));
    assert_int_equal(proxy_req_content_length(req), 5);
    assert_false(proxy_req_chunked(req));

    good("PUT http://a.com/ HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n");
    assert_true(proxy_req_chunked(req));
    assert_false(proxy_req_has_content_length(req));
    assert_true(proxy_req_field_hop_by_hop(req, 0));

    good("POST http://a.com/ HTTP/1.1\r\nContent-Length: 9007199254740992\r\n\r\n");
    assert_int_equal(proxy_req_content_length(req), PROXY_REQ_CONTENT_LENGTH_MAX);

    /* Split at every point, the head still ends where it ends. */
    size_t head = sizeof(post) - 1 - 5;
    for (size_t cut = 0; cut <= sizeof(post) - 1; cut++) {
        proxy_req_init(req);
        size_t a = 0;
        size_t b = 0;
        enum proxy_req_state st = proxy_req_feed(req, post, cut, &a);
        if (st == PROXY_REQ_MORE)
            st = proxy_req_feed(req, post + cut, sizeof(post) - 1 - cut, &b);
        assert_int_equal(st, PROXY_REQ_DONE);
        assert_int_equal(a + b, head);
    }
}

static void test_hop_by_hop(void **state)
{
    (void)state;
    good("GET http://a.com/ HTTP/1.1\r\nConnection: keep-alive, X-Secret ,Upgrade\r\n"
         "Keep-Alive: 5\r\nX-Secret: 1\r\nx-secret2: 2\r\nProxy-Connection: close\r\n"
         "TE: trailers\r\nTrailer: X\r\nUpgrade: h2c\r\nProxy-Authenticate: x\r\n"
         "Authorization: Bearer PLACEHOLDER\r\nHost: a.com\r\n\r\n");
    bool want[] = {true, true, true, false, true, true, true, true, true, false, false};
    assert_int_equal(proxy_req_field_count(req), sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (proxy_req_field_hop_by_hop(req, i) != want[i])
            fail_msg("field %zu: hop-by-hop %d, want %d", i, !want[i], want[i]);
}

static void test_request_line(void **state)
{
    (void)state;
    bad("FOO http://a.com/ HTTP/1.1\r\n\r\n", 405, "only CONNECT");
    bad("get http://a.com/ HTTP/1.1\r\n\r\n", 405, "only CONNECT");
    bad("TRACE http://a.com/ HTTP/1.1\r\n\r\n", 405, "only CONNECT");
    bad("G@T http://a.com/ HTTP/1.1\r\n\r\n", 400, "METHOD TARGET");
    bad("GET / HTTP/1.1\r\nHost: a.com\r\n\r\n", 400, "this is a proxy");
    bad("OPTIONS * HTTP/1.1\r\n\r\n", 400, "this is a proxy");
    bad("GET https://a.com/ HTTP/1.1\r\n\r\n", 400, "CONNECT");
    bad("GET ftp://a.com/ HTTP/1.1\r\n\r\n", 400, "only http://");
    bad("GET a.com:80 HTTP/1.1\r\n\r\n", 400, "only http://");
    bad("GET http://a.com/#frag HTTP/1.1\r\n\r\n", 400, "fragment");
    bad("GET http://a.com#frag HTTP/1.1\r\n\r\n", 400, "fragment");
    bad("GET http:///x HTTP/1.1\r\n\r\n", 400, "no host");
    bad("GET http://a.com:/ HTTP/1.1\r\n\r\n", 400, "port");
    bad("GET http://a.com:0/ HTTP/1.1\r\n\r\n", 400, "port");
    bad("GET http://[::1/ HTTP/1.1\r\n\r\n", 400, "closing ']'");
    bad("GET http://::1/ HTTP/1.1\r\n\r\n", 400, "in brackets");
    bad("CONNECT 2001:db8::1:443 HTTP/1.1\r\n\r\n", 400, "in brackets");
    /* Versions. */
    bad("GET http://a.com/ HTTP/2.0\r\n\r\n", 505, "HTTP/1.0");
    bad("GET http://a.com/ HTTP/1.2\r\n\r\n", 505, "HTTP/1.0");
    bad("GET http://a.com/ HTTP/1.1x\r\n\r\n", 400, "METHOD TARGET");
    bad("GET http://a.com/ HTTPS/1.1\r\n\r\n", 400, "METHOD TARGET");
    bad("GET http://a.com/ http/1.1\r\n\r\n", 400, "METHOD TARGET");
    bad("GET http://a.com/\r\n\r\n", 400, "METHOD TARGET");
    /* Spaces. */
    bad("GET  http://a.com/ HTTP/1.1\r\n\r\n", 400, "METHOD TARGET");
    bad("GET http://a.com/ x HTTP/1.1\r\n\r\n", 400, "METHOD TARGET");
    bad("GET http://a.com/ HTTP/1.1 \r\n\r\n", 400, "METHOD TARGET");
    bad(" GET http://a.com/ HTTP/1.1\r\n\r\n", 400, "METHOD TARGET");
    bad("GET\thttp://a.com/ HTTP/1.1\r\n\r\n", 400, "METHOD TARGET");
    bad("\r\nGET http://a.com/ HTTP/1.1\r\n\r\n", 400, "empty line");
}

static void test_hosts(void **state)
{
    (void)state;
    bad("CONNECT a.com HTTP/1.1\r\n\r\n", 400, "CONNECT needs host:port");
    bad("CONNECT [::1] HTTP/1.1\r\n\r\n", 400, "CONNECT needs host:port");
    bad("CONNECT a.com: HTTP/1.1\r\n\r\n", 400, "port");
    bad("CONNECT a.com:65536 HTTP/1.1\r\n\r\n", 400, "port");
    bad("CONNECT a.com:0 HTTP/1.1\r\n\r\n", 400, "port");
    bad("CONNECT a.com:443x HTTP/1.1\r\n\r\n", 400, "port");
    bad("CONNECT a.com:443/x HTTP/1.1\r\n\r\n", 400, "port");
    bad("CONNECT http://a.com:443 HTTP/1.1\r\n\r\n", 400, "not host:port");
    bad("CONNECT user@a.com:443 HTTP/1.1\r\n\r\n", 400, "userinfo");
    bad("GET http://user@a.com/ HTTP/1.1\r\n\r\n", 400, "userinfo");
    bad("GET http://user:pw@a.com/ HTTP/1.1\r\n\r\n", 400, "userinfo");
    bad("GET http://evil.com\\@good.com/ HTTP/1.1\r\n\r\n", 400, "userinfo");
    bad("GET http://ex\xc3\xa9.com/ HTTP/1.1\r\n\r\n", 400, "printable ASCII");
    bad("CONNECT ex\xc3\xa9.com:443 HTTP/1.1\r\n\r\n", 400, "printable ASCII");
    bad("GET http://a%2ecom/ HTTP/1.1\r\n\r\n", 400, "not a DNS name");
    bad("GET http://127.1/ HTTP/1.1\r\n\r\n", 400, "not a DNS name");
    bad("GET http://a_b.com/ HTTP/1.1\r\n\r\n", 400, "not a DNS name");
    bad("GET http://*.a.com/ HTTP/1.1\r\n\r\n", 400, "not a DNS name");
    bad("CONNECT [1.2.3.4]:443 HTTP/1.1\r\n\r\n", 400, "not a DNS name");
    bad("GET http://a.com/\x7f HTTP/1.1\r\n\r\n", 400, "printable ASCII");
}

static void test_fields(void **state)
{
    (void)state;
    bad("GET http://a.com/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400, "obs-fold");
    bad("GET http://a.com/ HTTP/1.1\r\n\tX: a\r\n\r\n", 400, "obs-fold");
    bad("GET http://a.com/ HTTP/1.1\r\nX a\r\n\r\n", 400, "NAME: VALUE");
    bad("GET http://a.com/ HTTP/1.1\r\n: a\r\n\r\n", 400, "not a token");
    bad("GET http://a.com/ HTTP/1.1\r\nX : a\r\n\r\n", 400, "not a token");
    bad("GET http://a.com/ HTTP/1.1\r\nX\xc3\xa9: a\r\n\r\n", 400, "not a token");
    bad("GET http://a.com/ HTTP/1.1\r\nX: a\x01"
        "b\r\n\r\n",
        400, "control character");
    bad("GET http://a.com/ HTTP/1.1\r\nX: a\x7f\r\n\r\n", 400, "control character");
    bad("GET http://a.com/ HTTP/1.1\r\nX: a\rb\r\n\r\n", 400, "CR");
    bad("GET http://a.com/ HTTP/1.1\r\r\n\r\n", 400, "CR");
    bad("GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nhost: b.com\r\n\r\n", 400,
        "more than one Host");

    /* A NUL anywhere, request line or field. */
    const char nul1[] = "GET http://a.com/\0 HTTP/1.1\r\n\r\n";
    bad_n(nul1, sizeof(nul1) - 1, 400, "NUL");
    const char nul2[] = "GET http://a.com/ HTTP/1.1\r\nX: a\0b\r\n\r\n";
    bad_n(nul2, sizeof(nul2) - 1, 400, "NUL");
}

static void test_smuggling(void **state)
{
    (void)state;
    const char *line = "POST http://a.com/ HTTP/1.1\r\n";
    struct {
        const char *fields;
        int status;
        const char *why;
    } cases[] = {
        {"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", 400, "both"},
        {"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400, "both"},
        {"Transfer-Encoding: gzip, chunked\r\n", 501, "chunked"},
        {"Transfer-Encoding: identity\r\n", 501, "chunked"},
        {"Transfer-Encoding: chunked, chunked\r\n", 501, "chunked"},
        {"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400, "more than one"},
        {"Transfer-Encoding : chunked\r\n", 400, "not a token"},
        {"Transfer-Encoding: \x0b"
         "chunked\r\n",
         400, "control"},
        {"Content-Length: 5, 5\r\n", 400, "not a number"},
        {"Content-Length: abc\r\n", 400, "not a number"},
        {"Content-Length: -1\r\n", 400, "not a number"},
        {"Content-Length: +5\r\n", 400, "not a number"},
        {"Content-Length: 0x5\r\n", 400, "not a number"},
        {"Content-Length:\r\n", 400, "not a number"},
        {"Content-Length: 9007199254740993\r\n", 400, "too large"},
        {"Content-Length: 99999999999999999999999\r\n", 400, "not a number"},
        {"Content-Length: 5\r\nContent-Length: 6\r\n", 400, "differ"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text), "%s%s\r\n", line, cases[i].fields);
        bad(text, cases[i].status, cases[i].why);
    }
    bad("POST http://a.com/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0");
    bad("CONNECT a.com:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\n", 400, "no body");
    bad("CONNECT a.com:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "no body");
}

static void test_caps(void **state)
{
    (void)state;
    /* A request line past its cap is refused before its end arrives. */
    size_t n = PROXY_REQ_LINE_MAX + 64;
    char *s = malloc(n + 1);
    memcpy(s, "GET http://a.com/", 17);
    memset(s + 17, 'a', n - 17);
    s[n] = '\0';
    bad(s, 414, "request line");
    /* The longest request line taken, and one byte more. */
    const char *suffix = " HTTP/1.1\r\n";
    size_t path = PROXY_REQ_LINE_MAX - 17 - 9;
    size_t len = 17 + path;
    memset(s + 17, 'a', path);
    memcpy(s + len, suffix, strlen(suffix) + 1);
    memcpy(s + len + strlen(suffix), "\r\n", 3);
    good(s);
    assert_int_equal(strlen(proxy_req_target(req, NULL)), path + 1);
    memset(s + 17, 'a', path + 1);
    memcpy(s + len + 1, suffix, strlen(suffix) + 1);
    memcpy(s + len + 1 + strlen(suffix), "\r\n", 3);
    bad(s, 414, "request line");
    free(s);

    /* The head's cap. */
    n = PROXY_REQ_HEAD_MAX + 100;
    s = malloc(n + 1);
    size_t k = (size_t)snprintf(s, n + 1, "GET http://a.com/ HTTP/1.1\r\n");
    while (k + 1100 < n)
        k += (size_t)snprintf(s + k, n + 1 - k, "X-Big: %01000d\r\n", 0);
    memset(s + k, 'x', n - k);
    s[n] = '\0';
    bad(s, 431, "16 KiB");
    /* Exactly at the cap a head is taken. */
    k = (size_t)snprintf(s, n + 1, "GET http://a.com/ HTTP/1.1\r\nX: ");
    size_t fill = PROXY_REQ_HEAD_MAX - k - 4;
    memset(s + k, 'v', fill);
    memcpy(s + k + fill, "\r\n\r\n", 5);
    good(s);
    assert_int_equal(proxy_req_head_len(req), PROXY_REQ_HEAD_MAX);
    free(s);

    /* The number of fields. */
    char many[4096];
    k = (size_t)snprintf(many, sizeof(many), "GET http://a.com/ HTTP/1.1\r\n");
    for (int i = 0; i < PROXY_REQ_FIELDS_MAX; i++)
        k += (size_t)snprintf(many + k, sizeof(many) - k, "X-%d: v\r\n", i);
    snprintf(many + k, sizeof(many) - k, "\r\n");
    good(many);
    assert_int_equal(proxy_req_field_count(req), PROXY_REQ_FIELDS_MAX);
    snprintf(many + k, sizeof(many) - k, "X-last: v\r\n\r\n");
    bad(many, 431, "header fields");
}

/* Origin mode: inside a tunnel, "/path" targets with the tunnel's host
 * and port; absolute form, CONNECT and a fragment refused; the same
 * smuggling checks. */
static enum proxy_req_state origin(const char *s, size_t *used)
{
    struct egress_host h;
    assert_true(egress_host_parse("api.test", 8, &h));
    proxy_req_init_origin(req, &h, 8443);
    return proxy_req_feed(req, s, strlen(s), used);
}

static void test_origin_mode(void **state)
{
    (void)state;
    size_t used = 0;
    const char *two = "GET /a?b=c HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\n\r\n";
    assert_int_equal(origin(two, &used), PROXY_REQ_DONE);
    assert_int_equal(used, strlen("GET /a?b=c HTTP/1.1\r\nHost: x\r\n\r\n"));
    assert_string_equal(proxy_req_host(req)->text, "api.test");
    assert_int_equal(proxy_req_port(req), 8443);
    assert_string_equal(proxy_req_target(req, NULL), "/a?b=c");
    assert_false(proxy_req_wants_close(req));
    static const struct {
        const char *head;
        int status;
    } refused[] = {
        {"GET http://a.test/ HTTP/1.1\r\n\r\n", 400},
        {"CONNECT a.test:443 HTTP/1.1\r\n\r\n", 405},
        {"GET * HTTP/1.1\r\n\r\n", 400},
        {"GET /a#f HTTP/1.1\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        assert_int_equal(origin(refused[i].head, &used), PROXY_REQ_ERROR);
        assert_int_equal(proxy_req_status(req), refused[i].status);
    }
}

/* The head written upstream: the gateway's Host, no hop-by-hop or
 * Proxy-* field, Connection: close only when asked. */
static void test_upstream_head(void **state)
{
    (void)state;
    size_t used = 0;
    const char *h = "POST /p HTTP/1.1\r\nHost: evil.test\r\nConnection: close, X-Hop\r\n"
                    "X-Hop: 1\r\nProxy-Authorization: a\r\nX-Keep: 2\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n";
    assert_int_equal(origin(h, &used), PROXY_REQ_DONE);
    assert_true(proxy_req_wants_close(req));
    char out[1024];
    size_t n = proxy_req_upstream_head(req, "api.test:8443", 13, true, out, sizeof(out));
    assert_true(n > 0);
    out[n] = '\0';
    assert_string_equal(out, "POST /p HTTP/1.1\r\nHost: api.test:8443\r\nX-Keep: 2\r\n"
                             "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    assert_int_equal(proxy_req_upstream_head(req, "api.test", 8, false, out, 20), 0);
    assert_int_equal(origin("GET / HTTP/1.0\r\n\r\n", &used), PROXY_REQ_DONE);
    assert_true(proxy_req_wants_close(req));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connect),       cmocka_unit_test(test_absolute),
        cmocka_unit_test(test_bodies),        cmocka_unit_test(test_hop_by_hop),
        cmocka_unit_test(test_request_line),  cmocka_unit_test(test_hosts),
        cmocka_unit_test(test_fields),        cmocka_unit_test(test_smuggling),
        cmocka_unit_test(test_caps),          cmocka_unit_test(test_origin_mode),
        cmocka_unit_test(test_upstream_head),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
