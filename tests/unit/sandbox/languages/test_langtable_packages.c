/* The language table's installs on demand: the "packages" object (read at
 * load, errors with their line), its defaults (the built-in table's pip
 * and npm, the installer its runner takes), its rules normalized and its
 * preinstall list parsed against them, built-in installs dropped with a
 * runner or run command the operator changed, the older "packages" array
 * read as image_packages, and --packages-index over it in
 * langtable_configure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "sandbox/languages/langtable.h"
#include "unit/options.h"
#include "langtable_rig.h"

static const struct langtable_packages *pkgs(const struct langtable *t, const char *name)
{
    const struct langtable_lang *l = langtable_find(t, name);
    assert_non_null(l);
    return l->packages;
}

/* s's items joined with ' ', "" for none. */
static void assert_strv(const struct langtable_strv *s, const char *want)
{
    char got[1024] = "";
    size_t k = 0;
    assert_non_null(s->v);
    assert_null(s->v[s->n]);
    for (size_t i = 0; i < s->n; i++)
        k += (size_t)snprintf(got + k, sizeof(got) - k, "%s%s", i ? " " : "", s->v[i]);
    assert_string_equal(got, want);
}

static void test_builtin(void **state)
{
    (void)state;
    struct langtable *t = load_ok(NULL);
    const struct langtable_packages *p = pkgs(t, "python");
    assert_non_null(p);
    assert_int_equal(p->installer, REQS_PIP);
    assert_strv(&p->index, "");
    assert_true(p->scripts);
    assert_int_equal(p->timeout_ms, LANGTABLE_PKG_TIMEOUT_DEFAULT_MS);
    assert_int_equal(p->max_bytes, LANGTABLE_PKG_MAX_BYTES_DEFAULT);
    assert_strv(&p->allow, "");
    assert_strv(&p->preinstall, "");
    assert_int_equal(pkgs(t, "javascript")->installer, REQS_NPM);
    assert_int_equal(pkgs(t, "typescript")->installer, REQS_NPM);
    assert_int_equal(pkgs(t, "ruby")->installer, REQS_GEM);
    const char *none[] = {"bash", "c", "cpp", "php"};
    for (size_t i = 0; i < ARRAY_SIZE(none); i++)
        assert_null(pkgs(t, none[i]));
    assert_true(langtable_find(t, "python")->image_packages.n > 0);
    langtable_free(t);
}

static const char python_packages[] =
    "{\"languages\": [\n"
    "  {\"name\": \"python\",\n"
    "   \"packages\": {\"index\": [\"https://pypi.example:8443/simple/\", "
    "\"http://[2001:db8::1]/pypi\"],\n"
    "                \"allow\": [\"Requests\", \"Django_*\"], \"deny\": [\"django.evil\"],\n"
    "                \"scripts\": false, \"timeout_ms\": 5000, \"max_bytes\": 1048576,\n"
    "                \"preinstall\": [\"Requests==2.*\", \"Django_Filter\"]}},\n"
    "  {\"name\": \"javascript\", \"packages\": null},\n"
    "  {\"name\": \"ruby\", \"packages\": [\"ruby\", \"ruby-dev\"]},\n"
    "  {\"name\": \"deno-ts\", \"image\": \"x:1\", \"source_file\": \"main.js\",\n"
    "   \"runner\": \"generic\", \"run\": [\"/usr/bin/node\", \"{source}\"],\n"
    "   \"packages\": {\"deny\": [\"@evil/*\"], \"preinstall\": [\"zod@^3\", "
    "\"@types/node@20\"]}}\n"
    "]}\n";

static void test_key(void **state)
{
    (void)state;
    struct langtable *t = load_ok(python_packages);
    const struct langtable_packages *p = pkgs(t, "python");
    assert_int_equal(p->installer, REQS_PIP);
    assert_strv(&p->index, "https://pypi.example:8443/simple/ http://[2001:db8::1]/pypi");
    assert_strv(&p->allow, "requests django-*");
    assert_strv(&p->deny, "django-evil");
    assert_false(p->scripts);
    assert_int_equal(p->timeout_ms, 5000);
    assert_int_equal(p->max_bytes, 1048576);
    assert_strv(&p->preinstall, "django-filter requests==2.*");
    assert_null(pkgs(t, "javascript"));
    /* The older key's array is the image's Debian packages; the
     * installs stay the built-in table's. */
    assert_int_equal(pkgs(t, "ruby")->installer, REQS_GEM);
    assert_strv(&langtable_find(t, "ruby")->image_packages, "ruby ruby-dev");
    p = pkgs(t, "deno-ts");
    assert_int_equal(p->installer, REQS_NPM);
    assert_strv(&p->preinstall, "@types/node@20 zod@^3");
    langtable_free(t);
}

/* Built-in installs go with a runner or a run command the operator
 * changed. */
static void test_follows_runner(void **state)
{
    (void)state;
    struct langtable *t =
        load_ok("{\"languages\": [\n"
                "  {\"name\": \"python\", \"runner\": \"generic\", "
                "\"preload\": [], \"run\": [\"python3\", \"{source}\"]},\n"
                "  {\"name\": \"typescript\", \"run\": [\"deno\", \"{stem}.js\"]}\n"
                "]}\n");
    assert_null(pkgs(t, "python"));
    assert_null(pkgs(t, "typescript"));
    assert_non_null(pkgs(t, "javascript"));
    langtable_free(t);
}

static void test_key_errors(void **state)
{
    (void)state;
    bad("{\"languages\": [\n  {\"name\": \"python\",\n   \"packages\": \"numpy\"}\n]}\n",
        "test.json:3: ", "language 'python': 'packages' must be an object");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"installer\": \"composer\"}}]}",
        "test.json:1: ", "'packages': installs with composer are not supported yet");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"installer\": \"cargo\"}}]}",
        "test.json:1: ", "'installer' must be \"pip\", \"npm\" or \"gem\"");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"installer\": \"gem\"}}]}",
        "test.json:1: ", "gem does not fit its python runner");
    bad("{\"languages\": [{\"name\": \"ruby\", \"packages\": {\"scripts\": false}}]}",
        "test.json:1: ", "'scripts' must stay true");
    bad("{\"languages\": [\n{\"name\": \"python\",\n \"packages\": {\"installer\": \"npm\"}}]}",
        "test.json:3: ", "language 'python': 'packages': npm does not fit its python runner");
    bad("{\"languages\": [{\"name\": \"bash\", \"packages\": {}}]}",
        "test.json:1: ", "language 'bash': 'packages': its generic runner has no installer");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"index\": "
        "[\"ftp://x.example\"]}}]}",
        "test.json:1: ", "'index'[0] \"ftp://x.example\": an index URL starts with http");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"index\": "
        "[\"https://u:pw@x.example/simple\"]}}]}",
        "test.json:1: ", "credentials (USER@) are not allowed");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"index\": "
        "[\"https://x.example/simple?a=b\"]}}]}",
        "test.json:1: ", "no query, fragment");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"index\": "
        "[\"https:///simple\"]}}]}",
        "test.json:1: ", "needs a host");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"index\": "
        "[\"https://x.example:99999/\"]}}]}",
        "test.json:1: ", ":PORT (1 to 65535)");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"index\": "
        "[\"https://a\", \"https://b\", \"https://c\", \"https://d\", \"https://e\"]}}]}",
        "test.json:1: ", "'index' has more than 4 items");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"scripts\": 1}}]}",
        "test.json:1: ", "'scripts' must be true or false");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"timeout_ms\": 10}}]}",
        "test.json:1: ", "'timeout_ms' must be an integer in [1000, 3600000]");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"max_bytes\": \"1G\"}}]}",
        "test.json:1: ", "'max_bytes' must be an integer");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"indexes\": []}}]}",
        "test.json:1: ", "unknown key 'indexes'");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"allow\": [\"a*b\"]}}]}",
        "test.json:1: ", "'allow'[0]: \"a*b\": '*' may only end a rule");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"deny\": [\"numpy\"], "
        "\"preinstall\": [\"NumPy>=1\"]}}]}",
        "test.json:1: ", "'preinstall'[0]: package 'numpy' is refused by the deny list");
    bad("{\"languages\": [{\"name\": \"python\", \"packages\": {\"preinstall\": "
        "[\"--index-url=https://evil.example\"]}}]}",
        "test.json:1: ", "may not start with '-'");
    bad("{\"languages\": [{\"name\": \"javascript\", \"packages\": {\"preinstall\": "
        "[\"x@git+ssh://h/r\"]}}]}",
        "test.json:1: ", "git, URL and file specs are not allowed");
}

/* ---- --packages-index ---------------------------------------------------------- */

static void test_option(void **state)
{
    (void)state;
    char *a1[] = {"d",
                  "--packages-index",
                  "PY = https://a.example/simple, https://b.example/s",
                  "--packages-index",
                  "deno-ts=http://registry.local:4873/;ts=https://r.example/",
                  NULL};
    struct langtable *t = configure_ok(a1, python_packages);
    assert_strv(&pkgs(t, "python")->index, "https://a.example/simple https://b.example/s");
    assert_strv(&pkgs(t, "typescript")->index, "https://r.example/");
    assert_strv(&pkgs(t, "deno-ts")->index, "http://registry.local:4873/");
    langtable_free(t);
    /* The later item wins; "LANGUAGE=" is the installer's own. */
    char *a2[] = {
        "d", "--packages-index", "python=https://a.example/", "--packages-index", "python=", NULL};
    t = configure_ok(a2, python_packages);
    assert_strv(&pkgs(t, "python")->index, "");
    langtable_free(t);

    char *b1[] = {"d", "--packages-index", "cobol=https://a.example/", NULL};
    configure_bad(b1, NULL, "--packages-index", "'cobol' is not a language of the table");
    char *b2[] = {"d", "--packages-index", "bash=https://a.example/", NULL};
    configure_bad(b2, NULL, "--packages-index", "language 'bash' installs no packages");
    char *b3[] = {"d", "--packages-index", "python=file:///srv/pypi", NULL};
    configure_bad(b3, NULL, "--packages-index python: 'file:///srv/pypi'", "http:// or https://");
    char *b4[] = {"d", "--packages-index",
                  "python=https://a,https://b,https://c,https://d,https://e", NULL};
    configure_bad(b4, NULL, "--packages-index python", "more than 4 URLs");
    char *b5[] = {"d", "--languages", "python", "--packages-index", "js=https://a.example/", NULL};
    configure_bad(b5, NULL, "--packages-index", "(or not enabled)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin),        cmocka_unit_test(test_key),
        cmocka_unit_test(test_follows_runner), cmocka_unit_test(test_key_errors),
        cmocka_unit_test(test_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
