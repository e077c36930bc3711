/* egress/pattern.c: each pattern form and its errors, matching (ASCII
 * case, wildcard depth, never the bare suffix, ports, IP literals), a
 * call's narrowing of its language's list, and the text a list renders
 * back to. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "egress/pattern.h"

static struct egress_patterns list;
static struct egress_patterns other;

static void parse_ok(const char *text, struct egress_pattern *p)
{
    struct err err = ERR_INIT;
    if (egress_pattern_parse(text, strlen(text), p, &err) != 0)
        fail_msg("'%s' should parse: %s", text, err_msg(&err));
    err_clear(&err);
}

/* text is refused with a message holding want. */
static void parse_bad(const char *text, const char *want)
{
    struct err err = ERR_INIT;
    struct egress_pattern p;
    if (egress_pattern_parse(text, strlen(text), &p, &err) == 0)
        fail_msg("'%s' should be refused", text);
    assert_int_equal(err.code, ERR_INVALID);
    if (!strstr(err_msg(&err), want))
        fail_msg("'%s': message '%s' lacks '%s'", text, err_msg(&err), want);
    err_clear(&err);
}

static void list_ok(const char *text)
{
    struct err err = ERR_INIT;
    if (egress_patterns_parse(text, &list, &err) != 0)
        fail_msg("'%s' should parse: %s", text, err_msg(&err));
}

static void test_forms(void **state)
{
    (void)state;
    struct egress_pattern p;
    parse_ok("API.Example.COM", &p);
    assert_int_equal(p.host.kind, EGRESS_HOST_NAME);
    assert_string_equal(p.host.text, "api.example.com");
    assert_false(p.wildcard);
    assert_int_equal(p.port, 0);

    parse_ok("example.com.", &p);
    assert_string_equal(p.host.text, "example.com");
    parse_ok("localhost:8080", &p);
    assert_string_equal(p.host.text, "localhost");
    assert_int_equal(p.port, 8080);
    parse_ok("xn--bcher-kva.example", &p);
    parse_ok("a-b.c0.example", &p);

    parse_ok("*.PyPI.org:443", &p);
    assert_true(p.wildcard);
    assert_string_equal(p.host.text, "pypi.org");
    assert_int_equal(p.port, 443);
    parse_ok("*.internal", &p);
    assert_true(p.wildcard);

    parse_ok("1.2.3.4", &p);
    assert_int_equal(p.host.kind, EGRESS_HOST_IPV4);
    assert_int_equal(p.port, 0);
    parse_ok("1.2.3.4:65535", &p);
    assert_int_equal(p.port, 65535);
    parse_ok("::1", &p);
    assert_int_equal(p.host.kind, EGRESS_HOST_IPV6);
    assert_string_equal(p.host.text, "::1");
    parse_ok("[2001:DB8:0::1]:8443", &p);
    assert_int_equal(p.host.kind, EGRESS_HOST_IPV6);
    assert_string_equal(p.host.text, "2001:db8::1");
    assert_int_equal(p.port, 8443);
    parse_ok("[::ffff:10.0.0.1]", &p);
    assert_int_equal(p.port, 0);
    parse_ok("a.com:1", &p);
    assert_int_equal(p.port, 1);

    /* The longest name and label. */
    char name[EGRESS_NAME_MAX + 2];
    memset(name, 'a', sizeof(name));
    for (size_t i = 63; i < EGRESS_NAME_MAX; i += 64)
        name[i] = '.';
    name[EGRESS_NAME_MAX] = '\0';
    parse_ok(name, &p);
    assert_int_equal(strlen(p.host.text), EGRESS_NAME_MAX);
    name[EGRESS_NAME_MAX] = '.';
    name[EGRESS_NAME_MAX + 1] = '\0';
    parse_ok(name, &p); /* its trailing dot is not counted */
    assert_int_equal(strlen(p.host.text), EGRESS_NAME_MAX);
}

static void test_form_errors(void **state)
{
    (void)state;
    const char *not_host = "not a host";
    parse_bad("", "cannot be empty");
    parse_bad("*", not_host);
    parse_bad("*.", not_host);
    parse_bad("*.*.a.com", not_host);
    parse_bad("a*.com", not_host);
    parse_bad("a..b", not_host);
    parse_bad(".a.com", not_host);
    parse_bad("a.com..", not_host);
    parse_bad("-a.com", not_host);
    parse_bad("a-.com", not_host);
    parse_bad("a_b.com", not_host);
    parse_bad("exa mple.com", not_host);
    parse_bad("ex\xc3\xa9.com", not_host);
    parse_bad("a%2ecom", not_host);
    /* Names a resolver would read as numbers. */
    parse_bad("127.1", not_host);
    parse_bad("0x7f.1", not_host);
    parse_bad("1.2.3", not_host);
    parse_bad("01.2.3.4", not_host);
    parse_bad("1.2.3.4.5", not_host);
    parse_bad("[1.2.3.4]", not_host);
    parse_bad("[::1", "has no ']'");
    parse_bad("[::1]x", "only ':PORT'");
    parse_bad("[::1]:", "port");
    parse_bad("*.1.2.3.4", "a wildcard needs a DNS name");
    parse_bad("*.[::1]:443", not_host);
    parse_bad("fe80::1%eth0", not_host);
    parse_bad("a.com:0", "from 1 to 65535");
    parse_bad("a.com:65536", "from 1 to 65535");
    parse_bad("a.com:", "from 1 to 65535");
    parse_bad("a.com:80x", "from 1 to 65535");
    parse_bad("a.com:-1", "from 1 to 65535");
    parse_bad(":443", not_host);

    char label[70];
    memset(label, 'a', 64);
    snprintf(label + 64, sizeof(label) - 64, ".com");
    parse_bad(label, not_host);
    char name[EGRESS_NAME_MAX + 3];
    memset(name, 'a', sizeof(name));
    for (size_t i = 63; i < sizeof(name) - 1; i += 64)
        name[i] = '.';
    name[EGRESS_NAME_MAX + 1] = '\0'; /* 254 bytes */
    parse_bad(name, not_host);

    /* A NUL inside is refused, not read as the end. */
    struct err err = ERR_INIT;
    struct egress_pattern p;
    assert_int_equal(egress_pattern_parse("a.com\0.evil", 11, &p, &err), -1);
    assert_non_null(strstr(err_msg(&err), "\\x00"));
    err_clear(&err);

    /* What a client sent is escaped and cut in the message. */
    parse_bad("bad\nline", "bad\\nline");
    char longer[600];
    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    assert_int_equal(egress_pattern_parse(longer, strlen(longer), &p, &err), -1);
    assert_non_null(strstr(err_msg(&err), "..."));
    assert_true(strlen(err_msg(&err)) < 200);
    err_clear(&err);
}

static void test_lists(void **state)
{
    (void)state;
    list_ok("api.example.com,*.pypi.org:443,registry.npmjs.org");
    assert_int_equal(list.n, 3);
    assert_string_equal(list.items[1].host.text, "pypi.org");
    list_ok("  a.com ,\tb.org:8080  ");
    assert_int_equal(list.n, 2);
    assert_string_equal(list.items[1].host.text, "b.org");
    list_ok("");
    assert_int_equal(list.n, 0);
    list_ok("   ");
    assert_int_equal(list.n, 0);

    const char *bad[] = {"a.com,,b.com", "a.com,", ",a.com", "a.com, ,b.com", "a.com b.com"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct err err = ERR_INIT;
        list_ok("x.org");
        if (egress_patterns_parse(bad[i], &list, &err) == 0)
            fail_msg("'%s' should be refused", bad[i]);
        assert_int_equal(list.n, 0);
        err_clear(&err);
    }

    /* The cap, and the message when it is passed. */
    char text[EGRESS_PATTERNS_MAX * 16 + 16] = "";
    size_t len = 0;
    for (int i = 0; i < EGRESS_PATTERNS_MAX; i++)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%sh%d.com", i ? "," : "", i);
    list_ok(text);
    assert_int_equal(list.n, EGRESS_PATTERNS_MAX);
    snprintf(text + len, sizeof(text) - len, ",one-more.com");
    struct err err = ERR_INIT;
    assert_int_equal(egress_patterns_parse(text, &list, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    assert_non_null(strstr(err_msg(&err), "one-more.com"));
    assert_non_null(strstr(err_msg(&err), "at most 64"));
    err_clear(&err);

    /* A list text past its cap is refused whole. */
    char *huge = malloc(EGRESS_PATTERNS_TEXT_MAX + 2);
    memset(huge, ' ', EGRESS_PATTERNS_TEXT_MAX + 1);
    huge[EGRESS_PATTERNS_TEXT_MAX + 1] = '\0';
    assert_int_equal(egress_patterns_parse(huge, &list, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    free(huge);
    err_clear(&err);
}

static void test_match(void **state)
{
    (void)state;
    list_ok("api.example.com,*.pypi.org:443,10.0.0.1,[::1]:8080,*.b.example.com:8443");
    /* Exact names, any case, a trailing dot, default ports. */
    assert_int_equal(egress_patterns_match(&list, "api.example.com", 443), 0);
    assert_int_equal(egress_patterns_match(&list, "API.Example.Com", 80), 0);
    assert_int_equal(egress_patterns_match(&list, "api.example.com.", 443), 0);
    assert_int_equal(egress_patterns_match(&list, "api.example.com", 8080), -1);
    assert_int_equal(egress_patterns_match(&list, "x.api.example.com", 443), -1);
    assert_int_equal(egress_patterns_match(&list, "example.com", 443), -1);
    /* Wildcards: one label or more, never the suffix alone, never a
     * name that merely ends in the same letters. */
    assert_int_equal(egress_patterns_match(&list, "files.pypi.org", 443), 1);
    assert_int_equal(egress_patterns_match(&list, "a.b.c.PYPI.org", 443), 1);
    assert_int_equal(egress_patterns_match(&list, "pypi.org", 443), -1);
    assert_int_equal(egress_patterns_match(&list, "evilpypi.org", 443), -1);
    assert_int_equal(egress_patterns_match(&list, "pypi.org.evil.com", 443), -1);
    assert_int_equal(egress_patterns_match(&list, "files.pypi.org", 80), -1);
    assert_int_equal(egress_patterns_match(&list, "x.b.example.com", 8443), 4);
    assert_int_equal(egress_patterns_match(&list, "b.example.com", 8443), -1);
    /* Literals only match an equal literal. */
    assert_int_equal(egress_patterns_match(&list, "10.0.0.1", 80), 2);
    assert_int_equal(egress_patterns_match(&list, "10.0.0.1", 8080), -1);
    assert_int_equal(egress_patterns_match(&list, "10.0.0.2", 80), -1);
    assert_int_equal(egress_patterns_match(&list, "::1", 8080), 3);
    assert_int_equal(egress_patterns_match(&list, "[0:0::1]", 8080), 3);
    assert_int_equal(egress_patterns_match(&list, "::1", 443), -1);
    assert_int_equal(egress_patterns_match(&list, "::ffff:10.0.0.1", 80), -1);
    /* Hosts that are no host match nothing. */
    assert_int_equal(egress_patterns_match(&list, "", 443), -1);
    assert_int_equal(egress_patterns_match(&list, NULL, 443), -1);
    assert_int_equal(egress_patterns_match(&list, "api.example.com:443", 443), -1);
    assert_int_equal(egress_patterns_match(&list, "*.pypi.org", 443), -1);

    /* The first pattern that allows it. */
    list_ok("a.com:8080,*.a.com,a.com");
    assert_int_equal(egress_patterns_match(&list, "a.com", 8080), 0);
    assert_int_equal(egress_patterns_match(&list, "a.com", 443), 2);
    assert_int_equal(egress_patterns_match(&list, "b.a.com", 443), 1);
    list_ok("");
    assert_int_equal(egress_patterns_match(&list, "a.com", 443), -1);
}

static void expect_narrow(const char *base, const char *asked, bool allowed)
{
    struct err err = ERR_INIT;
    list_ok(base);
    if (egress_patterns_parse(asked, &other, &err) != 0)
        fail_msg("'%s': %s", asked, err_msg(&err));
    struct egress_patterns out;
    int rc = egress_patterns_narrow(&list, &other, &out, &err);
    if (allowed && rc != 0)
        fail_msg("'%s' within '%s' should be allowed: %s", asked, base, err_msg(&err));
    if (!allowed && rc == 0)
        fail_msg("'%s' within '%s' should be refused", asked, base);
    if (allowed) {
        assert_int_equal(out.n, other.n);
        assert_memory_equal(out.items, other.items, other.n * sizeof(other.items[0]));
    } else {
        assert_int_equal(err.code, ERR_INVALID);
        assert_non_null(strstr(err_msg(&err), "never widen"));
    }
    err_clear(&err);
}

static void test_narrow(void **state)
{
    (void)state;
    const char *base = "*.example.com,api.other.org:443,10.0.0.1,[::1]:8080";
    expect_narrow(base, "", true);
    expect_narrow(base, "a.example.com", true);
    expect_narrow(base, "A.B.Example.com:443", true);
    expect_narrow(base, "*.example.com", true);
    expect_narrow(base, "*.b.example.com:80", true);
    expect_narrow(base, "api.other.org:443", true);
    expect_narrow(base, "10.0.0.1:80,10.0.0.1", true);
    expect_narrow(base, "[::1]:8080", true);
    expect_narrow(base, "a.example.com,*.x.example.com:443,api.other.org:443", true);

    expect_narrow(base, "example.com", false);         /* the bare suffix */
    expect_narrow(base, "*.com", false);               /* a shorter suffix */
    expect_narrow(base, "a.example.com:8443", false);  /* another port */
    expect_narrow(base, "api.other.org", false);       /* 80 is not allowed */
    expect_narrow(base, "*.api.other.org:443", false); /* wildcard under an exact name */
    expect_narrow(base, "other.org:443", false);
    expect_narrow(base, "10.0.0.2", false);
    expect_narrow(base, "::1", false);                  /* 443 and 80, not 8080 */
    expect_narrow(base, "[::ffff:10.0.0.1]:80", false); /* another literal */
    expect_narrow(base, "a.example.com,evil.net", false);
    expect_narrow("", "a.com", false);

    /* Ports may be covered by different base patterns. */
    expect_narrow("a.com:443,a.com:80", "a.com", true);
    expect_narrow("a.com:443,*.com:80", "a.com", true);
    expect_narrow("a.com:443,b.com:80", "a.com", false);

    /* The message names the pattern that is not allowed; out may be the
     * asked list itself. */
    struct err err = ERR_INIT;
    list_ok("*.example.com");
    assert_int_equal(egress_patterns_parse("a.example.com,EVIL.net:444", &other, &err), 0);
    assert_int_equal(egress_patterns_narrow(&list, &other, &other, &err), -1);
    assert_non_null(strstr(err_msg(&err), "'evil.net:444'"));
    err_clear(&err);
    assert_int_equal(egress_patterns_parse("a.example.com", &other, &err), 0);
    assert_int_equal(egress_patterns_narrow(&list, &other, &other, &err), 0);
    assert_int_equal(other.n, 1);
}

static void test_format(void **state)
{
    (void)state;
    const char *text = "api.example.com,*.pypi.org:443,1.2.3.4,1.2.3.4:8080,::1,[2001:db8::1]:"
                       "8443,localhost:1";
    list_ok(text);
    char *out = egress_patterns_format(&list);
    assert_string_equal(out, text);
    free(out);
    list_ok(" API.example.com. , [::1] ,*.X.org:0443");
    out = egress_patterns_format(&list);
    assert_string_equal(out, "api.example.com,::1,*.x.org:443");
    /* Read back, it is the same list. */
    assert_int_equal(egress_patterns_parse(out, &other, NULL), 0);
    assert_int_equal(other.n, list.n);
    assert_memory_equal(other.items, list.items, list.n * sizeof(list.items[0]));
    free(out);
    list_ok("");
    out = egress_patterns_format(&list);
    assert_string_equal(out, "");
    free(out);

    /* A small buffer is cut, never overrun. */
    char small[6];
    assert_int_equal(egress_pattern_format(&other.items[2], small, sizeof(small)), 5);
    assert_string_equal(small, "*.x.o");
    assert_int_equal(egress_pattern_format(&other.items[2], small, 0), 0);
}

static void test_allows_port(void **state)
{
    (void)state;
    struct egress_pattern p;
    parse_ok("a.com", &p);
    assert_true(egress_pattern_allows_port(&p, 443));
    assert_true(egress_pattern_allows_port(&p, 80));
    assert_false(egress_pattern_allows_port(&p, 8080));
    assert_false(egress_pattern_allows_port(&p, 0));
    parse_ok("a.com:22", &p);
    assert_true(egress_pattern_allows_port(&p, 22));
    assert_false(egress_pattern_allows_port(&p, 443));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms),       cmocka_unit_test(test_form_errors),
        cmocka_unit_test(test_lists),       cmocka_unit_test(test_match),
        cmocka_unit_test(test_narrow),      cmocka_unit_test(test_format),
        cmocka_unit_test(test_allows_port),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
