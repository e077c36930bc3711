/* Package requirements (sandbox/packages/reqs.h): what pip, npm and gem
 * strings normalize to, what is refused and why (options, URLs, paths,
 * markers, aliases, git, archives, control bytes), the list's caps,
 * merging and sorting, and the allow and deny rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/packages/reqs.h"

static void ok(enum reqs_installer i, const char *s, const char *name, const char *text)
{
    struct reqs_item it;
    struct err err = ERR_INIT;
    if (reqs_parse_one(i, s, strlen(s), &it, &err) < 0)
        fail_msg("%s refused \"%s\": %s", reqs_installer_name(i), s, err_msg(&err));
    if (strcmp(it.name, name) != 0 || strcmp(it.text, text) != 0)
        fail_msg("\"%s\" gave name '%s' text '%s', not '%s' '%s'", s, it.name, it.text, name, text);
    reqs_item_free(&it);
}

/* s[0..n) refused with ERR_INVALID (or ERR_TOO_BIG), the message quoting
 * it first and holding why. */
static void bad_n(enum reqs_installer i, const char *s, size_t n, const char *why)
{
    struct reqs_item it;
    struct err err = ERR_INIT;
    if (reqs_parse_one(i, s, n, &it, &err) == 0)
        fail_msg("%s accepted \"%.*s\" as '%s'", reqs_installer_name(i), (int)n, s, it.text);
    assert_null(it.name);
    assert_true(err.code == ERR_INVALID || err.code == ERR_TOO_BIG);
    const char *msg = err_msg(&err);
    if (msg[0] != '"' || !strstr(msg, why))
        fail_msg("\"%.*s\": message '%s' does not mention '%s'", (int)n, s, msg, why);
    err_clear(&err);
}

static void bad(enum reqs_installer i, const char *s, const char *why)
{
    bad_n(i, s, strlen(s), why);
}

static void test_pip_forms(void **state)
{
    (void)state;
    ok(REQS_PIP, "tqdm", "tqdm", "tqdm");
    ok(REQS_PIP, "Django_REST.framework", "django-rest-framework", "django-rest-framework");
    ok(REQS_PIP, "a__b--c", "a-b-c", "a-b-c");
    ok(REQS_PIP, "httpx==0.27.*", "httpx", "httpx==0.27.*");
    ok(REQS_PIP, "httpx>=1,<2", "httpx", "httpx<2,>=1");
    ok(REQS_PIP, "httpx <2 , >=1", "httpx", "httpx<2,>=1");
    ok(REQS_PIP, "httpx>=1,>=1", "httpx", "httpx>=1");
    ok(REQS_PIP, "requests~=2.31", "requests", "requests~=2.31");
    ok(REQS_PIP, "numpy!=1.25.0", "numpy", "numpy!=1.25.0");
    ok(REQS_PIP, "Foo[Socks, b_x,socks]>=1.0RC1", "foo", "foo[b-x,socks]>=1.0rc1");
    ok(REQS_PIP, "foo [x]", "foo", "foo[x]");
    ok(REQS_PIP, "x==1!2.0.post1.dev3", "x", "x==1!2.0.post1.dev3");
    ok(REQS_PIP, "x==1.0a1", "x", "x==1.0a1");
    ok(REQS_PIP, "x==1.0-1", "x", "x==1.0-1");
    ok(REQS_PIP, "x<=3", "x", "x<=3");
    ok(REQS_PIP, "x>3", "x", "x>3");
    ok(REQS_PIP, "A", "a", "a");
    ok(REQS_PIP, "x!=1.*", "x", "x!=1.*");
}

static void test_pip_refusals(void **state)
{
    (void)state;
    bad(REQS_PIP, "--index-url=https://evil.example/simple", "may not start with '-'");
    bad(REQS_PIP, "-e", "may not start with '-'");
    bad(REQS_PIP, "-r requirements.txt", "may not start with '-'");
    bad(REQS_PIP, "foo @ https://evil.example/foo.whl", "direct references");
    bad(REQS_PIP, "https://evil.example/foo.whl", "URLs");
    bad(REQS_PIP, "git+https://x/y", "URLs");
    bad(REQS_PIP, "./foo", "paths");
    bad(REQS_PIP, "/tmp/foo", "paths");
    bad(REQS_PIP, "foo/bar", "paths");
    bad(REQS_PIP, "..\\foo", "paths");
    bad(REQS_PIP, "~user", "paths");
    bad(REQS_PIP, "foo; python_version < '3.8'", "environment markers");
    bad(REQS_PIP, "foo (>=1.0)", "parenthesized");
    bad(REQS_PIP, "foo===1.0", "arbitrary equality");
    bad(REQS_PIP, "foo==1.0+local", "local version");
    bad(REQS_PIP, "foo bar", "expected a version clause");
    bad(REQS_PIP, "foo==1.0 extra", "unexpected 'e'");
    bad(REQS_PIP, "foo>=1.*", "needs == or !=");
    bad(REQS_PIP, "foo~=1", "at least two parts");
    bad(REQS_PIP, "foo==", "a version must be numbers");
    bad(REQS_PIP, "foo==abc", "a version must be numbers");
    bad(REQS_PIP, "foo[", "an extra must be a name");
    bad(REQS_PIP, "foo[a", "not closed");
    bad(REQS_PIP, "foo[a]]", "expected a version clause");
    bad(REQS_PIP, "_foo", "starts with a package name");
    bad(REQS_PIP, "foo\n--index-url x", "control characters");
    bad(REQS_PIP, "foo\t", "control characters");
    bad_n(REQS_PIP, "foo\0bar", 7, "control characters");
    bad(REQS_PIP, "f\xc3\xb6o", "only ASCII");
    bad(REQS_PIP, " foo", "spaces at either end");
    bad(REQS_PIP, "foo ", "spaces at either end");
    bad(REQS_PIP, "", "empty");
    bad(REQS_PIP, "foo,bar", "expected a version clause");
    bad(REQS_PIP, "foo>=1,<2,>3,<4,>5,<6,>7,<8,>9", "more than 8 version clauses");
    char big[REQS_MAX_LEN + 2];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    bad(REQS_PIP, big, "longer than 200 bytes");
    /* The message quotes the string escaped: no raw newline in it. */
    struct reqs_item it;
    struct err err = ERR_INIT;
    assert_int_equal(reqs_parse_one(REQS_PIP, "a\nb", 3, &it, &err), -1);
    assert_string_equal(err_msg(&err), "\"a\\nb\": control characters are not allowed");
    err_clear(&err);
}

static void test_npm_forms(void **state)
{
    (void)state;
    ok(REQS_NPM, "lodash", "lodash", "lodash");
    ok(REQS_NPM, "lodash@4", "lodash", "lodash@4");
    ok(REQS_NPM, "zod@^3.22.0", "zod", "zod@^3.22.0");
    ok(REQS_NPM, "@types/node@20", "@types/node", "@types/node@20");
    ok(REQS_NPM, "@scope/pkg@^1", "@scope/pkg", "@scope/pkg@^1");
    ok(REQS_NPM, "react@latest", "react", "react@latest");
    ok(REQS_NPM, "react@>=16  <18", "react", "react@>=16 <18");
    ok(REQS_NPM, "react@>= 16", "react", "react@>=16");
    ok(REQS_NPM, "x@1.x||2", "x", "x@1.x || 2");
    ok(REQS_NPM, "x@1.2.3 - 2.3.4", "x", "x@1.2.3 - 2.3.4");
    ok(REQS_NPM, "x@~1.2.3-beta.1+build.5", "x", "x@~1.2.3-beta.1+build.5");
    ok(REQS_NPM, "x@*", "x", "x@*");
    ok(REQS_NPM, "x@v1.0.0", "x", "x@v1.0.0");
    ok(REQS_NPM, "x@next", "x", "x@next");
    ok(REQS_NPM, "socket.io@4", "socket.io", "socket.io@4");
    ok(REQS_NPM, "a-b_c.d", "a-b_c.d", "a-b_c.d");
}

static void test_npm_refusals(void **state)
{
    (void)state;
    bad(REQS_NPM, "--registry=https://evil.example", "may not start with '-'");
    bad(REQS_NPM, "-g", "may not start with '-'");
    bad(REQS_NPM, "x@npm:evil", "aliases");
    bad(REQS_NPM, "npm:evil@1", "aliases");
    bad(REQS_NPM, "git+https://github.com/a/b.git", "git, URL and file");
    bad(REQS_NPM, "https://evil.example/x.tgz", "git, URL and file");
    bad(REQS_NPM, "x@https://evil.example/x.tgz", "git, URL and file");
    bad(REQS_NPM, "x@file:../y", "git, URL and file");
    bad(REQS_NPM, "github:user/repo", "git, URL and file");
    bad(REQS_NPM, "git@github.com:a/b", "git, URL and file");
    bad(REQS_NPM, "user/repo", "GitHub shortcuts");
    bad(REQS_NPM, "x@user/repo", "paths, GitHub shortcuts");
    bad(REQS_NPM, "x@#v1", "git specs");
    bad(REQS_NPM, "./x", "paths");
    bad(REQS_NPM, "/x", "paths");
    bad(REQS_NPM, "~/x", "paths");
    bad(REQS_NPM, "x.tgz", "local file");
    bad(REQS_NPM, "x@a.tar", "local file");
    bad(REQS_NPM, "Lodash", "lowercase");
    bad(REQS_NPM, ".x", "paths");
    bad(REQS_NPM, "_x", "may not start with '.' or '_'");
    bad(REQS_NPM, "@_s/x", "may not start with '.' or '_'");
    bad(REQS_NPM, "@s/.x", "may not start with '.' or '_'");
    bad(REQS_NPM, "@s", "@SCOPE/NAME");
    bad(REQS_NPM, "@/x", "the scope is empty");
    bad(REQS_NPM, "node_modules", "not a name npm allows");
    bad(REQS_NPM, "@s/favicon.ico", "not a name npm allows");
    bad(REQS_NPM, "x@", "nothing after '@'");
    bad(REQS_NPM, "x@1 -", "a version, a semver range");
    bad(REQS_NPM, "x@1 ||", "a version, a semver range");
    bad(REQS_NPM, "x@bad tag", "a version, a semver range");
    bad(REQS_NPM, "x@-1", "a version, a semver range");
    bad(REQS_NPM, "x y", "unexpected ' '");
    bad(REQS_NPM, "x!", "unexpected '!'");
    bad(REQS_NPM, "x@1\x7f", "control characters");
    char big[REQS_NAME_MAX + 2];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    bad(REQS_NPM, big, "longer than 200 bytes");
}

static void test_gem_forms(void **state)
{
    (void)state;
    ok(REQS_GEM, "rake", "rake", "rake");
    ok(REQS_GEM, "RedCloth", "redcloth", "RedCloth");
    ok(REQS_GEM, "net-http_x.2", "net-http_x.2", "net-http_x.2");
    ok(REQS_GEM, "rake:13.0.6", "rake", "rake:= 13.0.6");
    ok(REQS_GEM, "rack:~> 2.2", "rack", "rack:~> 2.2");
    ok(REQS_GEM, "rack: >=2", "rack", "rack:>= 2");
    ok(REQS_GEM, "rack:!=2.0.0.rc1", "rack", "rack:!= 2.0.0.rc1");
    ok(REQS_GEM, "rack:<3.0-beta", "rack", "rack:< 3.0-beta");
    ok(REQS_GEM, "3scale:1", "3scale", "3scale:= 1");
}

static void test_gem_refusals(void **state)
{
    (void)state;
    bad(REQS_GEM, "-v", "installer options");
    bad(REQS_GEM, "_x", "starts with a letter or a digit");
    bad(REQS_GEM, "x.gem", "local file");
    bad(REQS_GEM, "./x", "starts with a letter or a digit");
    bad(REQS_GEM, "a/b", "NAME or NAME:VERSION");
    bad(REQS_GEM, "rack 2", "NAME or NAME:VERSION");
    bad(REQS_GEM, "rack:", "starts with a digit");
    bad(REQS_GEM, "rack:latest", "starts with a digit");
    bad(REQS_GEM, "rack:>= 1, < 3", "one version requirement only");
    bad(REQS_GEM, "rack:1..2", "between parts");
    bad(REQS_GEM, "rack:1.", "between parts");
    bad(REQS_GEM, "rack:=>1", "starts with a digit");
    bad(REQS_GEM, "http://x/y", "starts with a digit");
}

static void test_unsupported(void **state)
{
    (void)state;
    bad(REQS_COMPOSER, "monolog/monolog", "installing composer packages is not supported yet");
    enum reqs_installer i;
    assert_true(reqs_installer_from_name("npm", 3, &i) && i == REQS_NPM);
    assert_true(reqs_installer_from_name("composer", 8, &i) && i == REQS_COMPOSER);
    assert_false(reqs_installer_from_name("pipx", 4, &i));
    assert_false(reqs_installer_from_name("pi", 2, &i));
    assert_true(reqs_installer_supported(REQS_PIP));
    assert_true(reqs_installer_supported(REQS_GEM));
    assert_false(reqs_installer_supported(REQS_COMPOSER));
}

static int parse(enum reqs_installer i, const char *const *strs, size_t n,
                 const struct reqs_rules *rules, struct reqs_list *l, struct err *err)
{
    return reqs_parse(i, strs, NULL, n, rules, "packages", l, err);
}

static void parse_bad(enum reqs_installer i, const char *const *strs, size_t n,
                      const struct reqs_rules *rules, const char *why)
{
    struct reqs_list l;
    struct err err = ERR_INIT;
    if (parse(i, strs, n, rules, &l, &err) == 0)
        fail_msg("accepted %zu strings", n);
    assert_int_equal(l.n, 0);
    assert_null(l.v);
    if (!strstr(err_msg(&err), why))
        fail_msg("message '%s' does not mention '%s'", err_msg(&err), why);
    err_clear(&err);
}

static void test_list(void **state)
{
    (void)state;
    const char *in[] = {"tqdm", "Httpx>=0.27", "attrs", "httpx >=0.27", "A_B"};
    struct reqs_list l;
    struct err err = ERR_INIT;
    assert_int_equal(parse(REQS_PIP, in, 5, NULL, &l, &err), 0);
    assert_int_equal(l.n, 4);
    char *canon = reqs_canonical(&l);
    assert_string_equal(canon, "a-b\nattrs\nhttpx>=0.27\ntqdm");
    free(canon);
    const char **argv = reqs_argv(&l);
    assert_string_equal(argv[0], "a-b");
    assert_string_equal(argv[2], "httpx>=0.27");
    assert_null(argv[4]);
    free(argv);
    reqs_list_free(&l);

    assert_int_equal(reqs_parse(REQS_NPM, NULL, NULL, 0, NULL, "packages", &l, &err), 0);
    assert_int_equal(l.n, 0);
    canon = reqs_canonical(&l);
    assert_string_equal(canon, "");
    free(canon);
    reqs_list_free(&l);

    const char *dup[] = {"zod@3", "lodash", "zod@^3"};
    parse_bad(REQS_NPM, dup, 3, NULL,
              "packages[0] and packages[2] both ask for 'zod', differently (\"zod@3\" and "
              "\"zod@^3\")");
    const char *second_bad[] = {"lodash", "--save"};
    parse_bad(REQS_NPM, second_bad, 2, NULL, "packages[1]: \"--save\": may not start with '-'");
    const char *many[REQS_MAX_COUNT + 1];
    for (size_t k = 0; k < ARRAY_SIZE(many); k++)
        many[k] = "x";
    parse_bad(REQS_PIP, many, ARRAY_SIZE(many), NULL, "packages: more than 32 requirements");
    /* Each under the per-string cap, together over the total. */
    char long_req[REQS_MAX_LEN + 1];
    memset(long_req, 'a', REQS_MAX_LEN);
    long_req[REQS_MAX_LEN] = '\0';
    const char *heavy[REQS_MAX_COUNT];
    for (size_t k = 0; k < ARRAY_SIZE(heavy); k++)
        heavy[k] = long_req;
    parse_bad(REQS_PIP, heavy, ARRAY_SIZE(heavy), NULL, "more than 4096 bytes together");
    /* lens: a string with a NUL inside is one string, refused. */
    const char *with_nul[] = {"ab\0c"};
    size_t lens[] = {4};
    assert_int_equal(reqs_parse(REQS_PIP, with_nul, lens, 1, NULL, "preinstall", &l, &err), -1);
    assert_non_null(strstr(err_msg(&err), "preinstall[0]: \"ab\\x00c\": control characters"));
    err_clear(&err);
}

static void test_rules(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    char *r = NULL;
    assert_int_equal(reqs_rule_normalize(REQS_PIP, "Django_*", 8, &r, &err), 0);
    assert_string_equal(r, "django-*");
    free(r);
    assert_int_equal(reqs_rule_normalize(REQS_PIP, "*", 1, &r, &err), 0);
    assert_string_equal(r, "*");
    free(r);
    assert_int_equal(reqs_rule_normalize(REQS_PIP, "Typing.Extensions", 17, &r, &err), 0);
    assert_string_equal(r, "typing-extensions");
    free(r);
    assert_int_equal(reqs_rule_normalize(REQS_NPM, "@types/*", 8, &r, &err), 0);
    assert_string_equal(r, "@types/*");
    free(r);
    assert_int_equal(reqs_rule_normalize(REQS_NPM, "@scope/pkg", 10, &r, &err), 0);
    free(r);
    assert_int_equal(reqs_rule_normalize(REQS_GEM, "Red*", 4, &r, &err), 0);
    assert_string_equal(r, "red*");
    free(r);
    static const char *const bad_rules[][2] = {
        {"pip", "a*b"}, {"pip", "-x"}, {"pip", "a b"},  {"pip", ""},    {"npm", "X"},
        {"npm", "a b"}, {"npm", "a*"}, {"npm", "../x"}, {"gem", "a b"}, {"gem", "x:1"},
    };
    for (size_t k = 0; k < ARRAY_SIZE(bad_rules); k++) {
        enum reqs_installer i;
        assert_true(reqs_installer_from_name(bad_rules[k][0], 3, &i));
        const char *s = bad_rules[k][1];
        int rc = reqs_rule_normalize(i, s, strlen(s), &r, &err);
        if (k == 6) { /* "a*" is a fine npm prefix */
            assert_int_equal(rc, 0);
            free(r);
            continue;
        }
        if (rc == 0)
            fail_msg("rule '%s' accepted as '%s'", s, r);
        assert_null(r);
        assert_int_equal(err_msg(&err)[0], '"');
        err_clear(&err);
    }

    const char *allow[] = {"requests", "django-*"};
    const char *deny[] = {"django-evil"};
    struct reqs_rules rules = {.allow = allow, .n_allow = 2, .deny = deny, .n_deny = 1};
    const char *fine[] = {"Django_Filter", "requests==2.*"};
    struct reqs_list l;
    assert_int_equal(parse(REQS_PIP, fine, 2, &rules, &l, &err), 0);
    reqs_list_free(&l);
    const char *denied[] = {"requests", "django.evil"};
    parse_bad(REQS_PIP, denied, 2, &rules,
              "packages[1]: package 'django-evil' is refused by the deny list (rule "
              "'django-evil')");
    const char *unlisted[] = {"numpy"};
    parse_bad(REQS_PIP, unlisted, 1, &rules,
              "packages[0]: package 'numpy' is not on the allow list (2 rules");
    const char *deny_all[] = {"*"};
    struct reqs_rules none = {.deny = deny_all, .n_deny = 1};
    parse_bad(REQS_NPM, (const char *[]){"lodash"}, 1, &none, "rule '*'");
    assert_int_equal(reqs_check_rules(NULL, "x", &err), 0);
    struct reqs_rules empty = {0};
    assert_int_equal(reqs_check_rules(&empty, "x", &err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pip_forms),   cmocka_unit_test(test_pip_refusals),
        cmocka_unit_test(test_npm_forms),   cmocka_unit_test(test_npm_refusals),
        cmocka_unit_test(test_gem_forms),   cmocka_unit_test(test_gem_refusals),
        cmocka_unit_test(test_unsupported), cmocka_unit_test(test_list),
        cmocka_unit_test(test_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
