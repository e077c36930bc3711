/* egress/addr.c: every refused range at its first and last address and
 * the neighbours outside it, the IPv6 forms judged by the IPv4 address
 * they carry, allow CIDRs overriding, and CIDR parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "egress/addr.h"

static struct sockaddr_storage sa_of(const char *text)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, text, &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
    } else if (inet_pton(AF_INET6, text, &sin6->sin6_addr) == 1) {
        sin6->sin6_family = AF_INET6;
    } else {
        fail_msg("'%s' is not an address", text);
    }
    return ss;
}

/* want NULL: allowed; else refused with a why holding want. */
static void expect(const char *text, const struct egress_cidrs *allow, const char *want)
{
    struct sockaddr_storage ss = sa_of(text);
    const char *why = NULL;
    bool blocked = egress_addr_blocked((const struct sockaddr *)&ss, allow, &why);
    if (!want && blocked)
        fail_msg("%s should be allowed, refused as %s", text, why);
    if (want && !blocked)
        fail_msg("%s should be refused (%s)", text, want);
    if (want && !strstr(why, want))
        fail_msg("%s: refused as '%s', want '%s'", text, why, want);
}

struct row {
    const char *addr;
    const char *why; /* NULL: allowed */
};

static void expect_rows(const struct row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        expect(rows[i].addr, NULL, rows[i].why);
}

static void test_ipv4_ranges(void **state)
{
    (void)state;
    static const struct row rows[] = {
        {"0.0.0.0", "this-network"},
        {"0.255.255.255", "this-network"},
        {"1.0.0.0", NULL},
        {"9.255.255.255", NULL},
        {"10.0.0.0", "private"},
        {"10.255.255.255", "private"},
        {"11.0.0.0", NULL},
        {"100.63.255.255", NULL},
        {"100.64.0.0", "CGNAT"},
        {"100.127.255.255", "CGNAT"},
        {"100.128.0.0", NULL},
        {"126.255.255.255", NULL},
        {"127.0.0.0", "loopback"},
        {"127.0.0.1", "loopback"},
        {"127.255.255.255", "loopback"},
        {"128.0.0.0", NULL},
        {"169.253.255.255", NULL},
        {"169.254.0.0", "link-local"},
        {"169.254.169.253", "link-local"},
        {"169.254.169.254", "the cloud metadata address"},
        {"169.254.169.255", "link-local"},
        {"169.254.255.255", "link-local"},
        {"169.255.0.0", NULL},
        {"172.15.255.255", NULL},
        {"172.16.0.0", "private"},
        {"172.31.255.255", "private"},
        {"172.32.0.0", NULL},
        {"191.255.255.255", NULL},
        {"192.0.0.0", "IETF protocol"},
        {"192.0.0.255", "IETF protocol"},
        {"192.0.1.0", NULL},
        {"192.0.1.255", NULL},
        {"192.0.2.0", "documentation"},
        {"192.0.2.255", "documentation"},
        {"192.0.3.0", NULL},
        {"192.167.255.255", NULL},
        {"192.168.0.0", "private"},
        {"192.168.255.255", "private"},
        {"192.169.0.0", NULL},
        {"198.17.255.255", NULL},
        {"198.18.0.0", "benchmarking"},
        {"198.19.255.255", "benchmarking"},
        {"198.20.0.0", NULL},
        {"198.51.99.255", NULL},
        {"198.51.100.0", "documentation"},
        {"198.51.100.255", "documentation"},
        {"198.51.101.0", NULL},
        {"203.0.112.255", NULL},
        {"203.0.113.0", "documentation"},
        {"203.0.113.255", "documentation"},
        {"203.0.114.0", NULL},
        {"223.255.255.255", NULL},
        {"224.0.0.0", "multicast"},
        {"239.255.255.255", "multicast"},
        {"240.0.0.0", "reserved"},
        {"255.255.255.254", "reserved"},
        {"255.255.255.255", "broadcast"},
        {"8.8.8.8", NULL},
        {"1.1.1.1", NULL},
        {"151.101.0.1", NULL},
    };
    expect_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

static void test_ipv6_ranges(void **state)
{
    (void)state;
    static const struct row rows[] = {
        {"::", "unspecified"},
        {"::1", "loopback"},
        {"::2", "IPv4-compatible"},
        {"::ffff:ffff", "IPv4-compatible"},
        {"0:0:0:0:0:1::", NULL},
        {"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL},
        {"fc00::", "unique local"},
        {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unique local"},
        {"fd00:ec2::254", "the cloud metadata address"},
        {"fd00:ec2::253", "unique local"},
        {"fe00::", NULL},
        {"fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL},
        {"fe80::", "link-local"},
        {"fe80::1", "link-local"},
        {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"},
        {"fec0::", "site-local"},
        {"feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "site-local"},
        {"ff00::", "multicast"},
        {"ff02::1", "multicast"},
        {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"},
        {"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", NULL},
        {"2001:db8::", "documentation"},
        {"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"},
        {"2001:db9::", NULL},
        {"ff::ffff:ffff:ffff:ffff", NULL},
        {"100::", "discard-only"},
        {"100::ffff:ffff:ffff:ffff", "discard-only"},
        {"100:0:0:1::", NULL},
        {"64:ff9b:0:ffff:ffff:ffff:ffff:ffff", NULL},
        {"64:ff9b:1::", "local-use NAT64"},
        {"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "local-use NAT64"},
        {"64:ff9b:2::", NULL},
        {"2606:4700:4700::1111", NULL},
        {"2001:4860:4860::8888", NULL},
    };
    expect_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

/* IPv4-mapped, IPv4-translated, NAT64 and 6to4 are judged by the IPv4
 * address inside. */
static void test_carriers(void **state)
{
    (void)state;
    static const struct row rows[] = {
        {"::ffff:127.0.0.1", "loopback"},
        {"::ffff:10.1.2.3", "private"},
        {"::ffff:169.254.169.254", "the cloud metadata address"},
        {"::ffff:0.0.0.0", "this-network"},
        {"::ffff:8.8.8.8", NULL},
        {"::ffff:0:10.0.0.1", "private"},
        {"::ffff:0:8.8.8.8", NULL},
        {"64:ff9b::127.0.0.1", "loopback"},
        {"64:ff9b::192.168.1.1", "private"},
        {"64:ff9b::100.64.0.1", "CGNAT"},
        {"64:ff9b::8.8.8.8", NULL},
        {"64:ff9b::1:8.8.8.8", NULL}, /* outside /96: not NAT64, a public address */
        {"2002:a00:1::", "private"},
        {"2002:7f00:1::1", "loopback"},
        {"2002:a9fe:a9fe::", "the cloud metadata address"},
        {"2002:808:808::", NULL},
    };
    expect_rows(rows, sizeof(rows) / sizeof(rows[0]));

    /* Not an IP address at all. */
    struct sockaddr_un sun;
    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    const char *why = NULL;
    assert_true(egress_addr_blocked((const struct sockaddr *)&sun, NULL, &why));
    assert_string_equal(why, "not an IP address");
    assert_true(egress_addr_blocked((const struct sockaddr *)&sun, NULL, NULL));
}

static void add(struct egress_cidrs *list, const char *text)
{
    struct err err = ERR_INIT;
    if (egress_cidrs_add(list, text, &err) != 0)
        fail_msg("'%s': %s", text, err_msg(&err));
}

static void test_allow(void **state)
{
    (void)state;
    struct egress_cidrs allow = {0};
    add(&allow, "127.0.0.0/8");
    expect("127.0.0.1", &allow, NULL);
    expect("127.255.255.255", &allow, NULL);
    expect("::ffff:127.0.0.1", &allow, NULL);
    expect("64:ff9b::127.0.0.1", &allow, NULL);
    expect("::1", &allow, "loopback");
    expect("10.0.0.1", &allow, "private");
    expect("169.254.169.254", &allow, "metadata");

    add(&allow, "::1/128");
    add(&allow, "10.1.0.0/16");
    expect("::1", &allow, NULL);
    expect("10.1.255.255", &allow, NULL);
    expect("10.2.0.0", &allow, "private");
    expect("172.16.0.1", &allow, "private");
    expect("fd00::1", &allow, "unique local");

    struct egress_cidrs one = {0};
    add(&one, "169.254.169.254");
    expect("169.254.169.254", &one, NULL);
    expect("169.254.169.253", &one, "link-local");
    add(&one, "fd00::/8");
    expect("fd00:ec2::254", &one, NULL);
    expect("fc00::1", &one, "unique local");

    /* Allowing the IPv6 form itself works too. */
    struct egress_cidrs nat64 = {0};
    add(&nat64, "64:ff9b::/96");
    expect("64:ff9b::10.0.0.1", &nat64, NULL);
    expect("10.0.0.1", &nat64, "private");

    /* The whole family: every IPv4 address, no IPv6 one. */
    struct egress_cidrs all = {0};
    add(&all, "0.0.0.0/0");
    expect("169.254.169.254", &all, NULL);
    expect("255.255.255.255", &all, NULL);
    expect("::ffff:10.0.0.1", &all, NULL);
    expect("fc00::1", &all, "unique local");
}

static void cidr_bad(const char *text, const char *want)
{
    struct err err = ERR_INIT;
    struct egress_cidr c;
    if (egress_cidr_parse(text, &c, &err) == 0)
        fail_msg("'%s' should be refused", text);
    assert_int_equal(err.code, ERR_INVALID);
    if (!strstr(err_msg(&err), want))
        fail_msg("'%s': message '%s' lacks '%s'", text, err_msg(&err), want);
    err_clear(&err);
}

static void cidr_is(const char *text, const char *shown)
{
    struct err err = ERR_INIT;
    struct egress_cidr c;
    if (egress_cidr_parse(text, &c, &err) != 0)
        fail_msg("'%s': %s", text, err_msg(&err));
    char out[EGRESS_CIDR_TEXT_CAP];
    egress_cidr_format(&c, out, sizeof(out));
    assert_string_equal(out, shown);
}

static void test_cidr_parse(void **state)
{
    (void)state;
    cidr_is("10.0.0.0/8", "10.0.0.0/8");
    cidr_is("127.0.0.0/8", "127.0.0.0/8");
    cidr_is("::1/128", "::1/128");
    cidr_is("10.1.2.3", "10.1.2.3/32");
    cidr_is("::1", "::1/128");
    cidr_is("0.0.0.0/0", "0.0.0.0/0");
    cidr_is("FC00::/7", "fc00::/7");
    cidr_is("192.168.1.128/25", "192.168.1.128/25");
    cidr_is("::ffff:0:0/96", "::ffff:0.0.0.0/96");

    cidr_bad("10.0.0.1/8", "the network is 10.0.0.0/8");
    cidr_bad("192.168.1.1/24", "the network is 192.168.1.0/24");
    cidr_bad("fc00::1/7", "the network is fc00::/7");
    cidr_bad("10.0.0.0/33", "from 0 to 32");
    cidr_bad("::/129", "from 0 to 128");
    cidr_bad("10.0.0.0/", "from 0 to 32");
    cidr_bad("10.0.0.0/8x", "from 0 to 32");
    cidr_bad("10.0.0.0/-1", "from 0 to 32");
    cidr_bad("10.0.0.0/8/8", "from 0 to 32");
    cidr_bad("/8", "ADDRESS/PREFIX");
    cidr_bad("", "ADDRESS/PREFIX");
    cidr_bad("10.0.0/8", "ADDRESS/PREFIX");
    cidr_bad("example.com/32", "ADDRESS/PREFIX");
    cidr_bad("[::1]/128", "ADDRESS/PREFIX");
    cidr_bad(" 10.0.0.0/8", "ADDRESS/PREFIX");
    cidr_bad("bad\ncidr", "bad\\ncidr");

    /* The cap. */
    struct egress_cidrs list = {0};
    char text[32];
    for (int i = 0; i < EGRESS_CIDRS_MAX; i++) {
        snprintf(text, sizeof(text), "10.%d.0.0/16", i);
        add(&list, text);
    }
    struct err err = ERR_INIT;
    assert_int_equal(egress_cidrs_add(&list, "10.200.0.0/16", &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    assert_int_equal(list.n, EGRESS_CIDRS_MAX);
    err_clear(&err);
}

static void test_contains(void **state)
{
    (void)state;
    struct egress_cidr c;
    assert_int_equal(egress_cidr_parse("172.16.0.0/12", &c, NULL), 0);
    struct sockaddr_storage ss = sa_of("172.31.255.255");
    assert_true(egress_cidr_contains(&c, (const struct sockaddr *)&ss));
    ss = sa_of("172.32.0.0");
    assert_false(egress_cidr_contains(&c, (const struct sockaddr *)&ss));
    ss = sa_of("::ffff:172.16.0.1"); /* another family */
    assert_false(egress_cidr_contains(&c, (const struct sockaddr *)&ss));
    assert_int_equal(egress_cidr_parse("::/0", &c, NULL), 0);
    ss = sa_of("2606:4700::1");
    assert_true(egress_cidr_contains(&c, (const struct sockaddr *)&ss));
    ss = sa_of("1.2.3.4");
    assert_false(egress_cidr_contains(&c, (const struct sockaddr *)&ss));
}

static void test_format(void **state)
{
    (void)state;
    char out[EGRESS_ADDR_TEXT_CAP];
    struct sockaddr_storage ss = sa_of("10.1.2.3");
    assert_int_equal(egress_addr_format((const struct sockaddr *)&ss, out, sizeof(out)), 8);
    assert_string_equal(out, "10.1.2.3");
    ss = sa_of("::ffff:127.0.0.1");
    egress_addr_format((const struct sockaddr *)&ss, out, sizeof(out));
    assert_string_equal(out, "::ffff:127.0.0.1");
    ss = sa_of("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255");
    egress_addr_format((const struct sockaddr *)&ss, out, sizeof(out));
    assert_string_equal(out, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    char small[4];
    ss = sa_of("10.1.2.3");
    assert_int_equal(egress_addr_format((const struct sockaddr *)&ss, small, sizeof(small)), 3);
    assert_string_equal(small, "10.");
    struct sockaddr_un sun;
    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    egress_addr_format((const struct sockaddr *)&sun, out, sizeof(out));
    assert_string_equal(out, "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ipv4_ranges), cmocka_unit_test(test_ipv6_ranges),
        cmocka_unit_test(test_carriers),    cmocka_unit_test(test_allow),
        cmocka_unit_test(test_cidr_parse),  cmocka_unit_test(test_contains),
        cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
