/* egress/secrets.c: the table from --secret's items and the environment
 * (errors, missing names, values refused), the run's placeholders (length,
 * prefix, alphabet, no two alike), and the substitution: bound host only
 * (exact, wildcard, port), field values and the query only (never the
 * method, path, field names or what follows the head), several secrets,
 * percent-encoding in the query, the output cap and its zeroing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/secrets.h"

#define KEY   "sk-live-0123456789abcdefghij"     /* 28 bytes */
#define TOKEN "tok/with+odd=chars&more~ok_12345" /* needs encoding in a query */
#define SHORT "abc"

static char *env[] = {"API_KEY=" KEY, "TOKEN=" TOKEN, "SHORT=" SHORT, "OTHER=x", NULL};

static char missing_seen[64];

static void missing(const char *name)
{
    snprintf(missing_seen, sizeof(missing_seen), "%s", name);
}

static struct egress_secrets *table_of(char **items, size_t n)
{
    struct err err = ERR_INIT;
    struct egress_secrets *t = NULL;
    if (egress_secrets_new(items, n, env, missing, &t, &err) != 0)
        fail_msg("table: %s", err_msg(&err));
    return t;
}

static void table_bad(char *item, const char *want)
{
    struct err err = ERR_INIT;
    struct egress_secrets *t = NULL;
    char *items[] = {item, item};
    size_t n = strcmp(want, "twice") == 0 ? 2 : 1;
    assert_int_equal(egress_secrets_new(items, n, env, NULL, &t, &err), -1);
    assert_null(t);
    assert_int_equal(err.code, ERR_INVALID);
    if (!strstr(err_msg(&err), want))
        fail_msg("'%s': message '%s' lacks '%s'", item, err_msg(&err), want);
    /* Never a value in a message. */
    assert_null(strstr(err_msg(&err), KEY));
    err_clear(&err);
}

static void test_table(void **state)
{
    (void)state;
    char *items[] = {"API_KEY=api.example.com,*.example.org:8443", " NOPE = a.test",
                     "SHORT=a.test"};
    missing_seen[0] = '\0';
    struct egress_secrets *t = table_of(items, 3);
    assert_string_equal(missing_seen, "NOPE");
    assert_int_equal(t->n, 2);
    assert_string_equal(t->items[0].name, "API_KEY");
    assert_string_equal(t->items[0].value, KEY);
    assert_int_equal(t->items[0].len, strlen(KEY));
    assert_int_equal(t->items[0].hosts.n, 2);
    assert_string_equal(t->items[1].name, "SHORT");
    egress_secrets_free(t);

    table_bad("API_KEY", "NAME=HOST");
    table_bad("1BAD=a.test", "NAME=HOST");
    table_bad("API_KEY=", "no host");
    table_bad("API_KEY=bad..host", "API_KEY");
    table_bad("API_KEY=a.test", "twice");
    egress_secrets_free(NULL);
}

static void test_values_refused(void **state)
{
    (void)state;
    char *bad_env[] = {"CRLF=a\r\nX-Evil: 1", "EMPTY=", NULL};
    char *items[] = {"CRLF=a.test", "EMPTY=a.test"};
    for (size_t i = 0; i < 2; i++) {
        struct err err = ERR_INIT;
        struct egress_secrets *t = NULL;
        assert_int_equal(egress_secrets_new(items + i, 1, bad_env, NULL, &t, &err), -1);
        assert_non_null(strstr(err_msg(&err), "printable ASCII"));
        assert_null(strstr(err_msg(&err), "Evil"));
        err_clear(&err);
    }
    char *many[EGRESS_SECRETS_MAX + 1];
    for (size_t i = 0; i < EGRESS_SECRETS_MAX + 1; i++)
        many[i] = "API_KEY=a.test";
    struct err err = ERR_INIT;
    struct egress_secrets *t = NULL;
    assert_int_equal(egress_secrets_new(many, EGRESS_SECRETS_MAX + 1, env, NULL, &t, &err), -1);
    err_clear(&err);
}

static void test_placeholders(void **state)
{
    (void)state;
    char *items[] = {"API_KEY=a.test", "TOKEN=a.test", "SHORT=a.test"};
    struct egress_secrets *t = table_of(items, 3);
    struct err err = ERR_INIT;
    struct egress_run_secrets *a = NULL;
    struct egress_run_secrets *b = NULL;
    assert_int_equal(egress_run_secrets_new(t, &a, &err), 0);
    assert_int_equal(egress_run_secrets_new(t, &b, &err), 0);
    assert_int_equal(a->n, 3);
    assert_string_equal(a->names[1], "TOKEN");
    assert_int_equal(strlen(a->placeholders[0]), strlen(KEY));
    assert_int_equal(strlen(a->placeholders[1]), strlen(TOKEN));
    assert_int_equal(strlen(a->placeholders[2]), EGRESS_PLACEHOLDER_MIN);
    for (size_t i = 0; i < a->n; i++) {
        const char *p = a->placeholders[i];
        assert_memory_equal(p, EGRESS_PLACEHOLDER_PREFIX, strlen(EGRESS_PLACEHOLDER_PREFIX));
        for (size_t k = strlen(EGRESS_PLACEHOLDER_PREFIX); p[k]; k++)
            assert_true(isalnum((unsigned char)p[k]));
        /* Fresh per run, and none the prefix of another. */
        assert_string_not_equal(p, b->placeholders[i]);
        for (size_t j = 0; j < a->n; j++)
            if (j != i)
                assert_int_not_equal(strncmp(p, a->placeholders[j], EGRESS_PLACEHOLDER_MIN), 0);
        assert_null(strstr(p, t->items[i].value));
    }
    egress_run_secrets_free(a);
    egress_run_secrets_free(b);
    /* No secrets: no run secrets. */
    struct egress_secrets *none = table_of(NULL, 0);
    assert_int_equal(egress_run_secrets_new(none, &a, &err), 0);
    assert_null(a);
    assert_int_equal(egress_run_secrets_new(NULL, &a, &err), 0);
    assert_null(a);
    egress_secrets_free(none);
    egress_secrets_free(t);
}

/* ---- substitution ------------------------------------------------------- */

static struct egress_secrets *subst_table;
static struct egress_run_secrets *rs;
static char out[EGRESS_SECRETS_HEAD_MAX];

static int setup(void **state)
{
    (void)state;
    char *items[] = {"API_KEY=api.example.com,*.example.org:8443", "TOKEN=api.example.com:80"};
    struct err err = ERR_INIT;
    if (egress_secrets_new(items, 2, env, NULL, &subst_table, &err) < 0 ||
        egress_run_secrets_new(subst_table, &rs, &err) < 0)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    egress_run_secrets_free(rs);
    egress_secrets_free(subst_table);
    return 0;
}

/* t with {A} and {B} the run's placeholders for API_KEY and TOKEN, {K}
 * and {T} their values, {TQ} TOKEN's value percent-encoded. */
static char *fill(const char *t)
{
    const char *const keys[] = {"{A}", "{B}", "{K}", "{TQ}", "{T}"};
    const char *vals[] = {rs->placeholders[0], rs->placeholders[1], KEY,
                          "tok%2Fwith%2Bodd%3Dchars%26more~ok_12345", TOKEN};
    char *o = calloc(1, 4096);
    size_t n = 0;
    assert_non_null(o);
    while (*t) {
        size_t k = 0;
        while (k < 5 && strncmp(t, keys[k], strlen(keys[k])) != 0)
            k++;
        const char *piece = k < 5 ? vals[k] : t;
        size_t len = k < 5 ? strlen(vals[k]) : 1;
        assert_true(n + len < 4096);
        memcpy(o + n, piece, len);
        n += len;
        t += k < 5 ? strlen(keys[k]) : 1;
    }
    return o;
}

/* The head t sent to host:port comes out as want, with n substitutions. */
static void subst(const char *host, unsigned port, const char *t, const char *w, int n)
{
    char *head = fill(t);
    char *want = fill(w);
    size_t len = 0;
    struct err err = ERR_INIT;
    int got = egress_secrets_substitute_head(rs, host, port, head, strlen(head), out, sizeof(out),
                                             &len, &err);
    if (got != n)
        fail_msg("%s:%u: %d substitutions, not %d (%s)", host, port, got, n, err_msg(&err));
    assert_int_equal(len, strlen(want));
    assert_memory_equal(out, want, len);
    free(head);
    free(want);
}

#define FULL                                                                                       \
    "GET /v1/{A}/x?key={A}&t={B} HTTP/1.1\r\nHost: api.example.com\r\n"                            \
    "Authorization: Bearer {A}\r\nX-{A}: {B}\r\nConnection: close\r\n\r\n"

static void test_bound_host(void **state)
{
    (void)state;
    /* Port 443 (no port in the pattern): API_KEY only, in the query and
     * field values; never in the path or a field's name. */
    subst("api.example.com", 443, FULL,
          "GET /v1/{A}/x?key={K}&t={B} HTTP/1.1\r\nHost: api.example.com\r\n"
          "Authorization: Bearer {K}\r\nX-{A}: {B}\r\nConnection: close\r\n\r\n",
          2);
    /* Port 80 binds TOKEN only (named with :80): percent-encoded in the
     * query, as it is in a value; any case of the host. API_KEY's pattern
     * has no port, so it is bound on 443 alone: never sent in the clear. */
    subst("API.example.com", 80, "GET /{A}?t={B}&k={A} HTTP/1.1\r\nX-A: {B}\r\nX-B: a{A}b\r\n\r\n",
          "GET /{A}?t={TQ}&k={A} HTTP/1.1\r\nX-A: {T}\r\nX-B: a{A}b\r\n\r\n", 2);
}

static void test_unbound(void **state)
{
    (void)state;
    /* Another host, the bare suffix of a wildcard, a port not bound, a
     * literal, none: the placeholders stay. */
    subst("evil.test", 443, FULL, FULL, 0);
    subst("example.org", 8443, FULL, FULL, 0);
    subst("a.example.org", 443, FULL, FULL, 0);
    subst("api.example.com", 8080, FULL, FULL, 0);
    subst("127.0.0.1", 443, FULL, FULL, 0);
    subst("", 0, FULL, FULL, 0);
    size_t len = 0;
    assert_int_equal(egress_secrets_substitute_head(NULL, "api.example.com", 443,
                                                    "GET / HTTP/1.1\r\n\r\n", 18, out, sizeof(out),
                                                    &len, NULL),
                     0);
    assert_int_equal(len, 18);
}

/* Which host:port a tunnel is intercepted for: the bound ones only. */
static void test_bound_query(void **state)
{
    (void)state;
    assert_true(egress_secrets_bound(rs, "api.example.com", 443));
    assert_true(egress_secrets_bound(rs, "api.example.com", 80));
    assert_true(egress_secrets_bound(rs, "a.example.org", 8443));
    assert_false(egress_secrets_bound(rs, "api.example.com", 8080));
    assert_false(egress_secrets_bound(rs, "example.org", 8443));
    assert_false(egress_secrets_bound(rs, "evil.test", 443));
    assert_false(egress_secrets_bound(NULL, "api.example.com", 443));
}

static void test_wildcard_and_port(void **state)
{
    (void)state;
    subst("a.b.example.org", 8443, "GET /?k={A} HTTP/1.1\r\nX-K: {A} {B}\r\n\r\n",
          "GET /?k={K} HTTP/1.1\r\nX-K: {K} {B}\r\n\r\n", 2);
}

static void test_body_untouched(void **state)
{
    (void)state;
    /* After the empty line nothing is touched, CRLF or bare LF. */
    subst("api.example.com", 443, "POST /x HTTP/1.1\r\nA: {A}\r\n\r\nbody {A}\r\nB: {A}\r\n",
          "POST /x HTTP/1.1\r\nA: {K}\r\n\r\nbody {A}\r\nB: {A}\r\n", 1);
    subst("api.example.com", 443, "POST /x HTTP/1.1\nA: {A}\n\nB: {A}\n",
          "POST /x HTTP/1.1\nA: {K}\n\nB: {A}\n", 1);
    /* Nor a line without a colon, nor a placeholder cut short. */
    char cut[128];
    snprintf(cut, sizeof(cut), "GET /?a=%.*s HTTP/1.1\r\nA: %.*s\r\nnocolon {A}\r\n\r\n",
             EGRESS_PLACEHOLDER_MIN - 1, rs->placeholders[0], EGRESS_PLACEHOLDER_MIN - 1,
             rs->placeholders[0]);
    subst("api.example.com", 443, cut, cut, 0);
    /* A query without a version; a request line without a blank. */
    subst("api.example.com", 443, "GET /?a={A}\r\n\r\n", "GET /?a={K}\r\n\r\n", 1);
    subst("api.example.com", 443, "GET{A}\r\n\r\n", "GET{A}\r\n\r\n", 0);
}

static void test_cap(void **state)
{
    (void)state;
    char *head = fill("GET /?a={B} HTTP/1.1\r\nA: {A}\r\n\r\n");
    size_t len = strlen(head);
    size_t got_len = 99;
    struct err err = ERR_INIT;
    /* Room for the head as it is, not for the encoded value. */
    char small[256];
    memset(small, 'z', sizeof(small));
    size_t cap = len + 2;
    assert_int_equal(egress_secrets_substitute_head(rs, "api.example.com", 80, head, len, small,
                                                    cap, &got_len, &err),
                     -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    assert_int_equal(got_len, 0);
    /* What was written before the cap is zeroed: no value left behind. */
    for (size_t i = 0; i < cap; i++)
        assert_true(small[i] == '\0' || small[i] == 'z');
    assert_null(memmem(small, sizeof(small), TOKEN, 3));
    err_clear(&err);
    /* Unbound, a head over the cap fails too. */
    assert_int_equal(
        egress_secrets_substitute_head(rs, "x.test", 80, head, len, small, len - 1, &got_len, &err),
        -1);
    err_clear(&err);
    free(head);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_values_refused),
        cmocka_unit_test(test_placeholders),
        cmocka_unit_test_setup_teardown(test_bound_host, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unbound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bound_query, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wildcard_and_port, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_untouched, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
