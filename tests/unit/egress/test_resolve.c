/* egress/resolve.c: pins (parsing, lookup), literals, and what is kept or
 * refused by the address rules, with the message naming host, address
 * and rule. No test needs DNS: names are pinned, or "localhost". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/resolve.h"

static struct egress_pins *pins;
static struct egress_addrs addrs;

static int setup(void **state)
{
    (void)state;
    pins = calloc(1, sizeof(*pins));
    return pins ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(pins);
    return 0;
}

static void pin(const char *text)
{
    struct err err = ERR_INIT;
    if (egress_pins_add(pins, text, &err) != 0)
        fail_msg("'%s': %s", text, err_msg(&err));
}

static void pin_bad(const char *text, const char *want)
{
    struct err err = ERR_INIT;
    if (egress_pins_add(pins, text, &err) == 0)
        fail_msg("'%s' should be refused", text);
    if (!strstr(err_msg(&err), want))
        fail_msg("'%s': message '%s' lacks '%s'", text, err_msg(&err), want);
    err_clear(&err);
}

static void text_of(const struct sockaddr_storage *ss, char *out, size_t cap)
{
    egress_addr_format((const struct sockaddr *)ss, out, cap);
}

static unsigned port_of(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* host:port resolves to exactly want (one address). */
static void resolves(const char *host, unsigned port, const struct egress_cidrs *allow,
                     const char *want)
{
    struct err err = ERR_INIT;
    if (egress_resolve(host, port, pins, allow, &addrs, &err) != 0)
        fail_msg("%s: %s", host, err_msg(&err));
    assert_int_equal(addrs.n, 1);
    char text[EGRESS_ADDR_TEXT_CAP];
    text_of(&addrs.items[0], text, sizeof(text));
    assert_string_equal(text, want);
    assert_int_equal(port_of(&addrs.items[0]), port);
}

static void refused(const char *host, unsigned port, const struct egress_cidrs *allow,
                    enum err_code code, const char *want)
{
    struct err err = ERR_INIT;
    if (egress_resolve(host, port, pins, allow, &addrs, &err) == 0)
        fail_msg("%s should be refused", host ? host : "(null)");
    assert_int_equal(err.code, code);
    assert_int_equal(addrs.n, 0);
    if (!strstr(err_msg(&err), want))
        fail_msg("%s: message '%s' lacks '%s'", host ? host : "(null)", err_msg(&err), want);
    err_clear(&err);
}

static void test_pins(void **state)
{
    (void)state;
    pins->n = 0;
    pin("api.test=127.0.0.1");
    pin("V6.Test.=[::1]");
    pin("bare.test=2001:db8::5");
    pin("public.test=8.8.4.4");
    assert_int_equal(pins->n, 4);
    assert_string_equal(pins->items[1].name, "v6.test");
    assert_non_null(egress_pins_find(pins, "API.TEST"));
    assert_non_null(egress_pins_find(pins, "api.test."));
    assert_non_null(egress_pins_find(pins, "v6.test"));
    assert_null(egress_pins_find(pins, "x.api.test"));
    assert_null(egress_pins_find(pins, "127.0.0.1"));
    assert_null(egress_pins_find(NULL, "api.test"));
    char text[EGRESS_ADDR_TEXT_CAP];
    text_of(egress_pins_find(pins, "bare.test"), text, sizeof(text));
    assert_string_equal(text, "2001:db8::5");

    pin_bad("Api.Test=10.0.0.1", "pinned already");
    pin_bad("api.test", "NAME=ADDRESS");
    pin_bad("=1.2.3.4", "DNS name");
    pin_bad("bad_name=1.2.3.4", "DNS name");
    pin_bad("*.a.test=1.2.3.4", "DNS name");
    pin_bad("1.2.3.4=1.2.3.4", "DNS name");
    pin_bad("a.test=", "IPv4 or IPv6");
    pin_bad("a.test=b.test", "IPv4 or IPv6");
    pin_bad("a.test=1.2.3.4:80", "IPv4 or IPv6");
    pin_bad("a.test=1.2.3.4=5", "IPv4 or IPv6");
    pin_bad("a.test= 1.2.3.4", "IPv4 or IPv6");
    pin_bad("bad\nname=1.2.3.4", "bad\\nname");
    char longer[400];
    memset(longer, 'a', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    pin_bad(longer, "longer than");
    assert_int_equal(pins->n, 4);

    /* The cap. */
    pins->n = 0;
    char text2[64];
    for (int i = 0; i < EGRESS_PINS_MAX; i++) {
        snprintf(text2, sizeof(text2), "h%d.test=10.0.0.%d", i, i);
        pin(text2);
    }
    struct err err = ERR_INIT;
    assert_int_equal(egress_pins_add(pins, "one-more.test=10.0.1.1", &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    err_clear(&err);
    pins->n = 0;
}

static void add_cidr(struct egress_cidrs *allow, const char *text)
{
    assert_int_equal(egress_cidrs_add(allow, text, NULL), 0);
}

static void test_pinned(void **state)
{
    (void)state;
    pins->n = 0;
    pin("api.test=127.0.0.1");
    pin("v6.test=::1");
    pin("public.test=8.8.4.4");
    pin("meta.test=169.254.169.254");
    pin("db.test=10.1.2.3");
    pin("mapped.test=::ffff:192.168.0.9");

    resolves("public.test", 443, NULL, "8.8.4.4");
    resolves("PUBLIC.test.", 80, NULL, "8.8.4.4");
    assert_int_equal(addrs.refused, 0);
    refused("api.test", 443, NULL, ERR_INVALID,
            "api.test is pinned to 127.0.0.1, a loopback address; --egress-allow-cidr can "
            "allow it");
    assert_int_equal(addrs.refused, 1);
    refused("meta.test", 80, NULL, ERR_INVALID, "169.254.169.254, the cloud metadata address");
    refused("db.test", 443, NULL, ERR_INVALID, "db.test is pinned to 10.1.2.3, a private address");
    refused("mapped.test", 443, NULL, ERR_INVALID, "::ffff:192.168.0.9, a private address");
    refused("v6.test", 443, NULL, ERR_INVALID, "::1, a loopback address");

    struct egress_cidrs allow = {0};
    add_cidr(&allow, "127.0.0.0/8");
    resolves("api.test", 8080, &allow, "127.0.0.1");
    refused("v6.test", 443, &allow, ERR_INVALID, "loopback");
    refused("db.test", 443, &allow, ERR_INVALID, "private");
    add_cidr(&allow, "::1/128");
    resolves("v6.test", 443, &allow, "::1");
    pins->n = 0;
}

static void test_literals(void **state)
{
    (void)state;
    /* A literal is itself, even when a pin names it (a literal cannot be
     * pinned). */
    pins->n = 0;
    resolves("8.8.8.8", 443, NULL, "8.8.8.8");
    resolves("[2606:4700:4700::1111]", 443, NULL, "2606:4700:4700::1111");
    resolves("2606:4700:4700::1111", 80, NULL, "2606:4700:4700::1111");
    refused("10.1.2.3", 443, NULL, ERR_INVALID,
            "10.1.2.3 is a private address; --egress-allow-cidr can allow it");
    refused("169.254.169.254", 80, NULL, ERR_INVALID,
            "169.254.169.254 is the cloud metadata address");
    refused("[::1]", 443, NULL, ERR_INVALID, "::1 is a loopback address");
    refused("100.64.0.1", 443, NULL, ERR_INVALID, "CGNAT");
    refused("224.0.0.1", 443, NULL, ERR_INVALID, "multicast");
    refused("[fd12::1]", 443, NULL, ERR_INVALID, "unique local");
    refused("[64:ff9b::10.0.0.1]", 443, NULL, ERR_INVALID, "private");
    struct egress_cidrs allow = {0};
    add_cidr(&allow, "10.0.0.0/8");
    resolves("10.1.2.3", 5432, &allow, "10.1.2.3");

    /* Not a host, or no port. */
    refused("bad host", 443, NULL, ERR_INVALID, "'bad host' is not a host name or IP address");
    refused("a\nb", 443, NULL, ERR_INVALID, "'a\\nb'");
    refused("", 443, NULL, ERR_INVALID, "not a host name");
    refused(NULL, 443, NULL, ERR_INVALID, "not a host name");
    refused("127.1", 443, NULL, ERR_INVALID, "not a host name");
    refused("8.8.8.8", 0, NULL, ERR_INVALID, "from 1 to 65535");
    refused("8.8.8.8", 65536, NULL, ERR_INVALID, "from 1 to 65535");
}

/* The system resolver, with the one name it answers without a network. */
static void test_localhost(void **state)
{
    (void)state;
    pins->n = 0;
    refused("localhost", 443, NULL, ERR_INVALID, "localhost resolves to ");
    assert_true(addrs.refused >= 1);
    struct err err = ERR_INIT;
    assert_int_equal(egress_resolve("localhost", 443, pins, NULL, &addrs, &err), -1);
    assert_non_null(strstr(err_msg(&err), "a loopback address"));
    err_clear(&err);

    struct egress_cidrs allow = {0};
    add_cidr(&allow, "127.0.0.0/8");
    add_cidr(&allow, "::1/128");
    assert_int_equal(egress_resolve("LocalHost", 8443, pins, &allow, &addrs, &err), 0);
    assert_true(addrs.n >= 1);
    assert_int_equal(addrs.refused, 0);
    for (size_t i = 0; i < addrs.n; i++) {
        assert_int_equal(port_of(&addrs.items[i]), 8443);
        for (size_t j = 0; j < i; j++)
            assert_memory_not_equal(&addrs.items[i], &addrs.items[j], sizeof(addrs.items[i]));
    }

    /* A pin wins over the system resolver. */
    pin("localhost=8.8.8.8");
    resolves("localhost", 443, NULL, "8.8.8.8");
    pins->n = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pins),
        cmocka_unit_test(test_pinned),
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_localhost),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
