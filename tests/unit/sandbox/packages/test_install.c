/* What an install runs (sandbox/packages/install.h): the program for pip,
 * npm and gem with the requirement words and index URLs as string literals,
 * the index hosts it may reach, and what is read back from a sandbox that
 * ran install scripts: the report line (the last one, capped, only its
 * strings) and the installer's last lines, made printable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "sandbox/packages/install.h"

static struct reqs_list parse(enum reqs_installer i, const char *const *strs, size_t n)
{
    struct reqs_list l;
    struct err err = ERR_INIT;
    if (reqs_parse(i, strs, NULL, n, NULL, "packages", &l, &err) < 0)
        fail_msg("%s", err_msg(&err));
    return l;
}

static struct langtable_packages pk(enum reqs_installer i, char **index, size_t n_index,
                                    bool scripts)
{
    return (struct langtable_packages){
        .installer = i, .index = {.v = index, .n = n_index}, .scripts = scripts};
}

static void test_pip_code(void **state)
{
    (void)state;
    const char *strs[] = {"httpx==0.27.*", "tqdm"};
    struct reqs_list l = parse(REQS_PIP, strs, 2);
    char *index[] = {"https://mirror.test/simple/", "http://extra.test:8080/x/", NULL};
    struct langtable_packages p = pk(REQS_PIP, index, 2, false);
    struct err err = ERR_INIT;
    char *code = install_code(&p, &l, &err);
    assert_non_null(code);
    /* Words and URLs as literals, '/' unescaped (no "\/" in Python). */
    assert_non_null(strstr(code, "[\"httpx==0.27.*\",\"tqdm\"]"));
    assert_non_null(
        strstr(code, "[\"https://mirror.test/simple/\",\"http://extra.test:8080/x/\"]"));
    assert_non_null(strstr(code, "[\"" BACKEND_INSTALL_DIR "\"][0]"));
    assert_non_null(strstr(code, "if not False:"));
    assert_null(strstr(code, "\\/"));
    free(code);
    reqs_list_free(&l);
}

static void test_npm_code(void **state)
{
    (void)state;
    const char *strs[] = {"@types/node@20", "lodash@4"};
    struct reqs_list l = parse(REQS_NPM, strs, 2);
    struct langtable_packages p = pk(REQS_NPM, NULL, 0, true);
    struct err err = ERR_INIT;
    char *code = install_code(&p, &l, &err);
    assert_non_null(code);
    assert_non_null(strstr(code, "reqs = [\"@types/node@20\",\"lodash@4\"]"));
    assert_non_null(strstr(code, "names = [\"@types/node\",\"lodash\"]"));
    assert_non_null(strstr(code, "if (!true)"));
    free(code);
    reqs_list_free(&l);
    p.installer = REQS_COMPOSER;
    assert_null(install_code(&p, &l, &err));
    assert_non_null(strstr(err_msg(&err), "not supported"));
    err_clear(&err);
}

/* Ruby reads the same literals, but for '#' (an interpolation inside its
 * double quotes), spelled as an escape. */
static void test_gem_code(void **state)
{
    (void)state;
    const char *strs[] = {"rack:~>2.2", "Rake"};
    struct reqs_list l = parse(REQS_GEM, strs, 2);
    char *index[] = {"http://gems.test:8080/#{`id`}", NULL};
    struct langtable_packages p = pk(REQS_GEM, index, 1, true);
    struct err err = ERR_INIT;
    char *code = install_code(&p, &l, &err);
    assert_non_null(code);
    assert_non_null(strstr(code, "reqs = [\"rack:~> 2.2\",\"Rake\"]"));
    assert_non_null(strstr(code, "idx = [\"http://gems.test:8080/\\u0023{`id`}\"]"));
    assert_null(strchr(strstr(code, "idx = ["), '#'));
    assert_non_null(strstr(code, "'--remote'"));
    assert_null(strstr(code, "'--'"));
    assert_non_null(strstr(code, "'--clear-sources'"));
    free(code);
    reqs_list_free(&l);
}

static void expect_hosts(const struct langtable_packages *p, const char *want)
{
    struct egress_patterns pats;
    struct err err = ERR_INIT;
    if (install_egress(p, &pats, &err) < 0)
        fail_msg("%s", err_msg(&err));
    char *text = egress_patterns_format(&pats);
    if (strcmp(text, want) != 0)
        fail_msg("hosts '%s', not '%s'", text, want);
    free(text);
}

static void test_egress(void **state)
{
    (void)state;
    struct langtable_packages p = pk(REQS_PIP, NULL, 0, true);
    expect_hosts(&p, "pypi.org:443,files.pythonhosted.org:443");
    p.installer = REQS_NPM;
    expect_hosts(&p, "registry.npmjs.org:443");
    p.installer = REQS_GEM;
    expect_hosts(&p, "rubygems.org:443,index.rubygems.org:443");
    char *index[] = {"https://mirror.test/simple/", "http://pypi.test:8080/simple/",
                     "http://[::1]/x", NULL};
    p = pk(REQS_PIP, index, 3, true);
    expect_hosts(&p, "mirror.test:443,pypi.test:8080,[::1]:80");
    char *creds[] = {"https://u:p@mirror.test/", NULL};
    p = pk(REQS_PIP, creds, 1, true);
    struct egress_patterns pats;
    struct err err = ERR_INIT;
    assert_int_equal(install_egress(&p, &pats, &err), -1);
    assert_non_null(strstr(err_msg(&err), "credentials"));
    err_clear(&err);
}

static void test_report(void **state)
{
    (void)state;
    const char *strs[] = {"a", "b", "c"};
    struct reqs_list l = parse(REQS_PIP, strs, 3);
    /* The last line with the mark counts; a version that is not a
     * string, or a name not asked, is ignored; control bytes go. */
    const char out[] = "noise\nMCPSBX-PACKAGES {\"a\":\"0.1\"}\n"
                       "MCPSBX-PACKAGES {\"a\":\"1.0\",\"b\":2,\"z\":\"9\",\"c\":\"3\\u0001x\"}\n"
                       "trailing\n";
    struct packages_report *r = install_report(&l, out, sizeof(out) - 1);
    assert_int_equal(r->n, 3);
    assert_string_equal(r->items[0].name, "a");
    assert_string_equal(r->items[0].version, "1.0");
    assert_null(r->items[1].version);
    assert_string_equal(r->items[2].version, "3?x");
    packages_report_free(r);
    /* No line, or a broken one: names without versions. */
    r = install_report(&l, "MCPSBX-PACKAGES {\"a\":", 21);
    assert_null(r->items[0].version);
    packages_report_free(r);
    reqs_list_free(&l);
}

static void test_quote(void **state)
{
    (void)state;
    const char *t = "one\ntwo\x01\nthree\n\n";
    char *q = install_quote(t, strlen(t));
    assert_string_equal(q, "one\ntwo?\nthree");
    free(q);
    char many[2000];
    size_t n = 0;
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(many + n, sizeof(many) - n, "line %d\n", i);
    q = install_quote(many, n);
    assert_null(strstr(q, "line 27\n"));
    assert_non_null(strstr(q, "line 28\n"));
    assert_non_null(strstr(q, "line 39"));
    free(q);
    q = install_quote("", 0);
    assert_string_equal(q, "");
    free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pip_code), cmocka_unit_test(test_npm_code),
        cmocka_unit_test(test_gem_code), cmocka_unit_test(test_egress),
        cmocka_unit_test(test_report),   cmocka_unit_test(test_quote),
    };
    return cmocka_run_group_tests_name("install", tests, NULL, NULL);
}
