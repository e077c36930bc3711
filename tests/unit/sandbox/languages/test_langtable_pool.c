/* A language's pool bounds: the table's pool_size (the least) and
 * pool_max (the most, 4 x pool_size unless given, never below pool_size),
 * then the options over them in langtable_configure: --pool-size fixing
 * both for every language, --pool-min and --pool-max moving single ones
 * (a bound given moves the other to meet it, two given that cross are
 * refused), and the items' refusals. */
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

static void assert_bounds(const struct langtable *t, const char *name, long long min, long long max)
{
    const struct langtable_lang *l = langtable_find(t, name);
    assert_non_null(l);
    if (l->pool_size != min || l->pool_max != max)
        fail_msg("%s: pool %lld to %lld, wanted %lld to %lld", name, l->pool_size, l->pool_max, min,
                 max);
}

static void test_table_bounds(void **state)
{
    (void)state;
    struct langtable *t = load_ok(NULL);
    assert_bounds(t, "python", 2, 2 * LANGTABLE_POOL_GROWTH);
    assert_bounds(t, "ruby", 1, LANGTABLE_POOL_GROWTH);
    langtable_free(t);
    /* A file that raises pool_size alone raises the default maximum with
     * it; one that gives pool_max keeps it; pool_size 0 has no pool. */
    t = load_ok("{\"languages\": [{\"name\": \"ruby\", \"pool_size\": 3},\n"
                "  {\"name\": \"python\", \"pool_max\": 5},\n"
                "  {\"name\": \"php\", \"pool_size\": 0},\n"
                "  {\"name\": \"c\", \"pool_size\": 20}]}");
    assert_bounds(t, "ruby", 3, 3 * LANGTABLE_POOL_GROWTH);
    assert_bounds(t, "python", 2, 5);
    assert_bounds(t, "php", 0, 0);
    assert_bounds(t, "c", 20, LANGTABLE_POOL_MAX);
    langtable_free(t);
    bad("{\"languages\": [{\"name\": \"ruby\",\n \"pool_size\": 3, \"pool_max\": 2}]}",
        "test.json:", "'pool_max' 2 is below 'pool_size' 3");
    bad("{\"languages\": [{\"name\": \"ruby\",\n \"pool_max\": 65}]}",
        "test.json:", "'pool_max' must be in [0, 64]");
}

static void test_options(void **state)
{
    (void)state;
    /* --pool-size fixes every language; items then move single ones. */
    char *a1[] = {"d", "--pool-size", "2", "--pool-max", "python=5", "--pool-min", "js=0", NULL};
    struct langtable *t = configure_ok(a1, NULL);
    assert_bounds(t, "python", 2, 5);
    assert_bounds(t, "javascript", 0, 2);
    assert_bounds(t, "ruby", 2, 2);
    langtable_free(t);
    /* A bound given moves the table's other one to meet it; of two items
     * the later holds. */
    char *a2[] = {"d",          "--pool-min", "python=12",  "--pool-max", "ruby=0",
                  "--pool-max", "bash=3",     "--pool-max", "bash=6",     NULL};
    t = configure_ok(a2, NULL);
    assert_bounds(t, "python", 12, 12);
    assert_bounds(t, "ruby", 0, 0);
    assert_bounds(t, "bash", 1, 6);
    langtable_free(t);
}

static void test_option_errors(void **state)
{
    (void)state;
    char *a1[] = {"d", "--pool-min", "python=5", "--pool-max", "python=3", NULL};
    configure_bad(a1, NULL, "--pool-min python=5", "above --pool-max python=3");
    char *a2[] = {"d", "--pool-max", "cobol=3", NULL};
    configure_bad(a2, NULL, "--pool-max", "'cobol' is not a language");
    /* The item's form is checked with the options. */
    char forms[][16] = {"python", "python=", "python=65", "python=-1", "python=2x", "=2"};
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        char *argv[] = {"d", "--pool-max", forms[i], NULL};
        char *none[] = {NULL};
        struct config cfg;
        struct err err = ERR_INIT;
        config_init(&cfg);
        int rc = config_load(&cfg, 3, argv, none, &err);
        config_free(&cfg);
        if (rc == 0)
            fail_msg("--pool-max %s accepted", forms[i]);
        assert_non_null(strstr(err_msg(&err), "--pool-max"));
        err_clear(&err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_bounds),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_option_errors),
    };
    return cmocka_run_group_tests_name("langtable_pool", tests, NULL, NULL);
}
