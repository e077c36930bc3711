/* base/netaddr.c: which listen addresses count as loopback (reachable from
 * this machine only) and which address an answer rests on. Names other
 * than "localhost" need a resolver, so only literals are checked here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/un.h>

#include "base/netaddr.h"

static bool literal_is_loopback(const char *text)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, text, &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
    } else {
        assert_int_equal(inet_pton(AF_INET6, text, &sin6->sin6_addr), 1);
        sin6->sin6_family = AF_INET6;
    }
    return netaddr_is_loopback((struct sockaddr *)&ss);
}

static void test_is_loopback(void **state)
{
    (void)state;
    const char *loopback[] = {"127.0.0.1", "127.0.0.0",        "127.255.255.254", "127.1.2.3",
                              "::1",       "::ffff:127.0.0.1", "::ffff:127.9.9.9"};
    for (size_t i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++)
        if (!literal_is_loopback(loopback[i]))
            fail_msg("%s should be loopback", loopback[i]);
    /* The wildcards listen on every interface. */
    const char *other[] = {"0.0.0.0",  "::",          "128.0.0.1",      "126.255.255.255",
                           "10.0.0.1", "192.168.1.5", "::ffff:0.0.0.0", "::ffff:10.0.0.1",
                           "::2",      "fe80::1",     "::127.0.0.1",    "2001:db8::1"};
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
        if (literal_is_loopback(other[i]))
            fail_msg("%s should not be loopback", other[i]);
    struct sockaddr_un sun;
    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    assert_false(netaddr_is_loopback((struct sockaddr *)&sun));
}

static void expect_listen(const char *host, bool loopback, const char *shown)
{
    bool got = !loopback;
    char text[NETADDR_TEXT_MAX];
    struct err err = ERR_INIT;
    assert_int_equal(netaddr_listen_is_loopback(host, &got, text, sizeof(text), &err), 0);
    if (got != loopback)
        fail_msg("%s: loopback %d, want %d", host ? host : "(null)", got, loopback);
    assert_string_equal(text, shown);
}

/* The transport's rules: empty and "localhost" (any case) are 127.0.0.1. */
static void test_listen_hosts(void **state)
{
    (void)state;
    expect_listen(NULL, true, "127.0.0.1");
    expect_listen("", true, "127.0.0.1");
    expect_listen("localhost", true, "127.0.0.1");
    expect_listen("LocalHost", true, "127.0.0.1");
    expect_listen("127.0.0.1", true, "127.0.0.1");
    expect_listen("127.3.4.5", true, "127.3.4.5");
    expect_listen("::1", true, "::1");
    expect_listen("0.0.0.0", false, "0.0.0.0");
    expect_listen("::", false, "::");
    expect_listen("192.0.2.7", false, "192.0.2.7");
    expect_listen("2001:db8::7", false, "2001:db8::7");

    /* The text is cut to the room given, never overrun. */
    bool got = true;
    char small[5];
    assert_int_equal(netaddr_listen_is_loopback("192.0.2.7", &got, small, sizeof(small), NULL), 0);
    assert_false(got);
    assert_string_equal(small, "192.");
}

/* What the listener binds: the literal itself or 127.0.0.1 for an empty
 * host or localhost, with the port (no name: tests make no DNS query). */
static void test_resolve_listen(void **state)
{
    (void)state;
    struct sockaddr_storage ss;
    struct err err = ERR_INIT;
    assert_int_equal(netaddr_resolve_listen("", 8080, &ss, &err), 0);
    const struct sockaddr_in *sin = (const struct sockaddr_in *)&ss;
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(ntohs(sin->sin_port), 8080);
    assert_int_equal(ntohl(sin->sin_addr.s_addr), 0x7f000001);
    assert_int_equal(netaddr_resolve_listen("LOCALHOST", 1, &ss, &err), 0);
    assert_true(netaddr_is_loopback((const struct sockaddr *)&ss));
    assert_int_equal(netaddr_resolve_listen("::1", 9, &ss, &err), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_int_equal(ntohs(((const struct sockaddr_in6 *)&ss)->sin6_port), 9);
    assert_int_equal(netaddr_resolve_listen("192.0.2.7", 0, &ss, &err), 0);
    assert_false(netaddr_is_loopback((const struct sockaddr *)&ss));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_is_loopback),
        cmocka_unit_test(test_listen_hosts),
        cmocka_unit_test(test_resolve_listen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
