/* egress/settings.c: the daemon-wide settings from the options: the
 * option table's defaults are policy.h's caps, the options' caps, pins
 * and allowed CIDRs as the gateway reads them, and errors that name the
 * option and the item. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "egress/settings.h"
#include "unit/options.h"

static void test_defaults_are_the_policy_defaults(void **state)
{
    (void)state;
    struct config cfg;
    char *argv[] = {"d", NULL};
    options_load(&cfg, argv);
    struct egress_settings *s = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(egress_settings_new(&cfg, &s, &err), 0);
    struct egress_caps want;
    egress_caps_default(&want);
    assert_int_equal(s->caps.conns_open, want.conns_open);
    assert_int_equal(s->caps.conns_total, want.conns_total);
    assert_true(s->caps.bytes_up == want.bytes_up);
    assert_true(s->caps.bytes_down == want.bytes_down);
    assert_int_equal(s->caps.conn_ms, want.conn_ms);
    assert_int_equal(s->caps.connect_ms, want.connect_ms);
    assert_int_equal(s->caps.head_ms, want.head_ms);
    assert_int_equal(s->pins.n, 0);
    assert_int_equal(s->allow.n, 0);
    egress_settings_free(s);
    config_free(&cfg);
}

static void test_from_options(void **state)
{
    (void)state;
    struct config cfg;
    char *argv[] = {"d",
                    "--egress-resolve",
                    "DB.Example=10.1.2.3",
                    "--egress-resolve",
                    "v6.example=[2001:db8::7]",
                    "--egress-allow-cidr",
                    "10.0.0.0/8,fd00::/8",
                    "--egress-max-connections",
                    "2",
                    "--egress-max-connections-total",
                    "3",
                    "--egress-max-bytes-up",
                    "1000",
                    "--egress-max-bytes-down",
                    "2000",
                    "--egress-connection-timeout-ms",
                    "1500",
                    NULL};
    options_load(&cfg, argv);
    struct egress_settings *s = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(egress_settings_new(&cfg, &s, &err), 0);
    assert_int_equal(s->caps.conns_open, 2);
    assert_int_equal(s->caps.conns_total, 3);
    assert_true(s->caps.bytes_up == 1000);
    assert_true(s->caps.bytes_down == 2000);
    assert_int_equal(s->caps.conn_ms, 1500);
    assert_int_equal(s->caps.connect_ms, EGRESS_CONNECT_MS_DEFAULT);
    assert_int_equal(s->caps.head_ms, EGRESS_HEAD_MS_DEFAULT);

    assert_int_equal(s->pins.n, 2);
    const struct sockaddr_storage *pin = egress_pins_find(&s->pins, "db.example");
    assert_non_null(pin);
    assert_int_equal(pin->ss_family, AF_INET);
    const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)pin;
    assert_int_equal(ntohl(in->sin_addr.s_addr), 0x0a010203);
    pin = egress_pins_find(&s->pins, "v6.example");
    assert_non_null(pin);
    assert_int_equal(pin->ss_family, AF_INET6);

    assert_int_equal(s->allow.n, 2);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(0x0a090807);
    const char *why = NULL;
    assert_false(egress_addr_blocked((const struct sockaddr *)&a, &s->allow, &why));
    a.sin_addr.s_addr = htonl(0xc0a80101); /* 192.168.1.1: not listed */
    assert_true(egress_addr_blocked((const struct sockaddr *)&a, &s->allow, &why));
    egress_settings_free(s);
    config_free(&cfg);
}

static void expect_refused(char **argv, const char *want1, const char *want2)
{
    struct config cfg;
    options_load(&cfg, argv);
    static struct egress_settings before;
    struct egress_settings *s = &before; /* egress_settings_new makes it NULL */
    struct err err = ERR_INIT;
    assert_int_equal(egress_settings_new(&cfg, &s, &err), -1);
    assert_null(s);
    if (!strstr(err_msg(&err), want1) || !strstr(err_msg(&err), want2))
        fail_msg("'%s' lacks '%s' or '%s'", err_msg(&err), want1, want2);
    err_clear(&err);
    config_free(&cfg);
}

static void test_errors_name_the_option(void **state)
{
    (void)state;
    char *a1[] = {"d", "--egress-resolve", "db.example=10.1.2", NULL};
    expect_refused(a1, "--egress-resolve: ", "db.example=10.1.2");
    char *a2[] = {"d", "--egress-resolve", "*.example=10.1.2.3", NULL};
    expect_refused(a2, "--egress-resolve: ", "*.example");
    char *a3[] = {"d", "--egress-resolve", "a.example=10.1.2.3,A.example=10.1.2.4", NULL};
    expect_refused(a3, "--egress-resolve: ", "A.example");
    char *a4[] = {"d", "--egress-allow-cidr", "10.1.2.3/8", NULL};
    expect_refused(a4, "--egress-allow-cidr: ", "10.1.2.3/8");
    char *a5[] = {"d", "--egress-allow-cidr", "10.0.0.0/33", NULL};
    expect_refused(a5, "--egress-allow-cidr: ", "10.0.0.0/33");
    char *a6[] = {"d", "--egress-allow-cidr", "example.com", NULL};
    expect_refused(a6, "--egress-allow-cidr: ", "example.com");
}

static void test_upstream_ca_and_the_daemon_ca(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_settings-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct err err = ERR_INIT;
    /* An upstream CA file: a CA's certificate (this module's own). */
    struct egress_tls_ca *up = NULL;
    assert_int_equal(egress_tls_ca_new(dir, "", &up, &err), 0);
    struct config cfg;
    char ca_path[128];
    snprintf(ca_path, sizeof(ca_path), "%s", egress_tls_ca_path(up));
    char *argv[] = {"d", "--egress-upstream-ca", ca_path, NULL};
    options_load(&cfg, argv);
    struct egress_settings *s = NULL;
    assert_int_equal(egress_settings_new(&cfg, &s, &err), 0);
    assert_non_null(s->upstream_tls);
    assert_null(s->ca);
    char sub[64];
    snprintf(sub, sizeof(sub), "%s/daemon", dir);
    assert_int_equal(egress_settings_tls_ca(s, sub, &err), 0);
    assert_non_null(s->ca);
    struct egress_tls_ca *first = s->ca;
    assert_int_equal(egress_settings_tls_ca(s, sub, &err), 0);
    assert_ptr_equal(s->ca, first);
    assert_int_equal(access(egress_tls_ca_bundle_path(s->ca), R_OK), 0);
    egress_settings_free(s);
    config_free(&cfg);
    assert_int_equal(rmdir(sub), 0); /* its files went with it */

    char missing[64];
    snprintf(missing, sizeof(missing), "%s/none.pem", dir);
    char *bad[] = {"d", "--egress-upstream-ca", missing, NULL};
    options_load(&cfg, bad);
    assert_int_equal(egress_settings_new(&cfg, &s, &err), -1);
    assert_null(s);
    assert_non_null(strstr(err_msg(&err), "--egress-upstream-ca: cannot open"));
    err_clear(&err);
    config_free(&cfg);
    egress_tls_ca_free(up);
    assert_int_equal(rmdir(dir), 0);
}

/* The CA in a fresh "<pid>.<16 hex>" directory under a base made when
 * missing (the shape a dead daemon's leftovers are swept by); all of it
 * gone with the settings. */
static void test_daemon_ca_under_a_base(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_settings-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char base[64];
    snprintf(base, sizeof(base), "%s/io", dir);
    struct config cfg;
    char *argv[] = {"d", NULL};
    options_load(&cfg, argv);
    struct egress_settings *s = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(egress_settings_new(&cfg, &s, &err), 0);
    assert_int_equal(egress_settings_tls_ca_under(s, base, &err), 0);
    assert_non_null(s->ca);
    char prefix[96];
    snprintf(prefix, sizeof(prefix), "%s/%ld.", base, (long)getpid());
    assert_memory_equal(s->ca_dir, prefix, strlen(prefix));
    assert_int_equal(strlen(s->ca_dir), strlen(prefix) + 16);
    assert_int_equal(access(egress_tls_ca_path(s->ca), R_OK), 0);
    struct stat st;
    assert_int_equal(stat(base, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0711);
    egress_settings_free(s);
    config_free(&cfg);
    assert_int_equal(rmdir(base), 0); /* empty: the CA's directory went */
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_are_the_policy_defaults),
        cmocka_unit_test(test_from_options),
        cmocka_unit_test(test_errors_name_the_option),
        cmocka_unit_test(test_upstream_ca_and_the_daemon_ca),
        cmocka_unit_test(test_daemon_ca_under_a_base),
    };
    return cmocka_run_group_tests_name("egress_settings", tests, NULL, NULL);
}
