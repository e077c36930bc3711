/* The language table's egress lists: the "egress" key of a languages file
 * (read at load, errors with their line), its normal form (NULL for none,
 * never an empty list), --egress over it in langtable_configure
 * (replacing, removing, by alias, the later item winning), and the
 * refusals: an unknown or disabled language, a bad pattern, a language
 * with both the engine's network and an egress list. */
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

/* l's list as egress_patterns_format writes it; "(none)" for NULL. */
static void assert_egress(const struct langtable_lang *l, const char *want)
{
    assert_non_null(l);
    if (!l->egress) {
        assert_string_equal("(none)", want);
        return;
    }
    assert_true(l->egress->n > 0);
    char *text = egress_patterns_format(l->egress);
    assert_string_equal(text, want);
    free(text);
}

/* ---- the key -------------------------------------------------------------------- */

static void test_builtin_has_none(void **state)
{
    (void)state;
    struct langtable *t = load_ok(NULL);
    for (size_t i = 0; i < langtable_count(t); i++)
        assert_null(langtable_get(t, i)->egress);
    langtable_free(t);
}

static const char python_egress[] =
    "{\"languages\": [\n"
    "  {\"name\": \"python\",\n"
    "   \"egress\": [\"PyPI.org\", \"*.pythonhosted.org:443\", \"[2001:db8::1]:8443\",\n"
    "              \"10.0.0.1\"]},\n"
    "  {\"name\": \"ruby\", \"egress\": []},\n"
    "  {\"name\": \"bash\", \"egress\": null},\n"
    "  {\"name\": \"perl\", \"image\": \"mcp-sandboxd-bash:latest\", \"source_file\": "
    "\"main.pl\",\n"
    "   \"runner\": \"generic\", \"run\": [\"perl\", \"{source}\"],\n"
    "   \"egress\": [\"www.cpan.org\"]}\n"
    "]}\n";

static void test_key(void **state)
{
    (void)state;
    struct langtable *t = load_ok(python_egress);
    assert_egress(langtable_find(t, "python"),
                  "pypi.org,*.pythonhosted.org:443,[2001:db8::1]:8443,10.0.0.1");
    /* [] and null are none, as when absent. */
    assert_egress(langtable_find(t, "ruby"), "(none)");
    assert_egress(langtable_find(t, "bash"), "(none)");
    assert_egress(langtable_find(t, "javascript"), "(none)");
    assert_egress(langtable_find(t, "perl"), "www.cpan.org");
    langtable_free(t);
}

static void test_key_errors(void **state)
{
    (void)state;
    bad("{\"languages\": [\n"
        "  {\"name\": \"python\",\n"
        "   \"egress\": [\"pypi.org\", \"a..b\"]}\n"
        "]}\n",
        "test.json:3: ", "language 'python': 'egress'[1]: egress pattern 'a..b'");
    bad("{\"languages\": [\n"
        "  {\"name\": \"python\",\n"
        "\n"
        "   \"egress\": \"pypi.org\"}\n"
        "]}\n",
        "test.json:4: ", "'egress' must be an array of host patterns");
    bad("{\"languages\": [{\"name\": \"python\", \"egress\": [\"pypi.org\", 443]}]}",
        "test.json:1: ", "'egress'[1] must be a string");
    bad("{\"languages\": [{\"name\": \"python\", \"egress\": [\"pypi.org,npmjs.org\"]}]}",
        "test.json:1: ", "'egress'[0]: egress pattern 'pypi.org,npmjs.org'");
    bad("{\"languages\": [{\"name\": \"python\", \"egress\": [\"*.org:0\"]}]}",
        "test.json:1: ", "'egress'[0]");
    bad("{\"languages\": [{\"name\": \"python\", \"egress\": [\"\"]}]}",
        "test.json:1: ", "cannot be empty");
    /* One pattern more than a list holds. */
    char text[4096];
    size_t k = (size_t)snprintf(text, sizeof(text),
                                "{\"languages\": [{\"name\": \"python\", \"egress\": [");
    for (int i = 0; i <= EGRESS_PATTERNS_MAX; i++)
        k += (size_t)snprintf(text + k, sizeof(text) - k, "%s\"h%d.example\"", i ? ", " : "", i);
    snprintf(text + k, sizeof(text) - k, "]}]}");
    bad(text, "test.json:1: ", "'egress' has more than 64 items");
    /* A disabled language takes no other key, egress neither. */
    bad("{\"languages\": [{\"name\": \"php\", \"disabled\": true, \"egress\": []}]}",
        "test.json:1: ", "a disabled language takes no other key");
}

/* ---- --egress --------------------------------------------------------------------- */

static void test_option_replaces_and_removes(void **state)
{
    (void)state;
    /* By alias, in any case; replacing the file's list; "=" alone removes
     * one; a language the option does not name keeps the file's. */
    char *a1[] = {"d",     "--egress", "PY = files.example, *.cdn.example:8443", "--egress",
                  "perl=", "--egress", "JS=registry.npmjs.org;rb=rubygems.org",  NULL};
    struct langtable *t = configure_ok(a1, python_egress);
    assert_egress(langtable_find(t, "python"), "files.example,*.cdn.example:8443");
    assert_egress(langtable_find(t, "perl"), "(none)");
    assert_egress(langtable_find(t, "javascript"), "registry.npmjs.org");
    assert_egress(langtable_find(t, "ruby"), "rubygems.org");
    assert_egress(langtable_find(t, "bash"), "(none)");
    langtable_free(t);

    /* Of two items for one language, the later: the command line's over
     * the environment's and the file's (config.c keeps them in that
     * order: test_config). */
    char *a2[] = {"d", "--egress", "python=a.example", "--egress", "python3=b.example", NULL};
    t = configure_ok(a2, NULL);
    assert_egress(langtable_find(t, "python"), "b.example");
    langtable_free(t);

    /* Only the enabled languages; the others are gone with their lists. */
    char *a3[] = {"d", "--languages", "python", "--egress", "python=a.example", NULL};
    t = configure_ok(a3, python_egress);
    assert_int_equal(langtable_count(t), 1);
    assert_egress(langtable_get(t, 0), "a.example");
    langtable_free(t);
}

static void test_option_errors(void **state)
{
    (void)state;
    char *b1[] = {"d", "--egress", "cobol=a.example", NULL};
    configure_bad(b1, NULL, "--egress", "'cobol' is not a language of the table");
    char *b2[] = {"d", "--languages", "python", "--egress", "ruby=rubygems.org", NULL};
    configure_bad(b2, NULL, "--egress", "'ruby'");
    char *b3[] = {"d", "--egress", "php=x.example", NULL};
    configure_bad(b3, "{\"languages\": [{\"name\": \"php\", \"disabled\": true}]}", "--egress",
                  "'php'");
    char *b4[] = {"d", "--egress", "py=pypi.org,,x.example", NULL};
    configure_bad(b4, NULL, "--egress python: ", "cannot be empty");
    char *b5[] = {"d", "--egress", "python=pypi.org:99999", NULL};
    configure_bad(b5, NULL, "--egress python: ", "pypi.org:99999");
    char *b6[] = {"d", "--egress", "python=*.1", NULL};
    configure_bad(b6, NULL, "--egress python: ", "*.1");
}

/* The engine's network and the gateway are two answers to one question:
 * a language gets one of them. */
static void test_network_or_egress(void **state)
{
    (void)state;
    char *b1[] = {"d", "--allow-network", "python", "--egress", "py=pypi.org", NULL};
    configure_bad(b1, NULL, "--allow-network and --egress: language 'python'", "choose one");
    char *b2[] = {"d", "--allow-network", "python3", NULL};
    configure_bad(b2, python_egress, "language 'python'", "choose one");
    /* Removing the file's list settles it; so does another language. */
    char *a1[] = {"d", "--allow-network", "python", "--egress", "python=", NULL};
    struct langtable *t = configure_ok(a1, python_egress);
    assert_null(langtable_find(t, "python")->egress);
    langtable_free(t);
    char *a2[] = {"d", "--allow-network", "javascript", "--egress", "python=pypi.org", NULL};
    t = configure_ok(a2, NULL);
    assert_egress(langtable_find(t, "python"), "pypi.org");
    langtable_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_has_none), cmocka_unit_test(test_key),
        cmocka_unit_test(test_key_errors),       cmocka_unit_test(test_option_replaces_and_removes),
        cmocka_unit_test(test_option_errors),    cmocka_unit_test(test_network_or_egress),
    };
    return cmocka_run_group_tests_name("langtable_egress", tests, NULL, NULL);
}
