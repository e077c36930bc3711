/* packages_run.c's ready installers, over the pool's rig (the fake
 * backend): one waits per language with installs, in the installer's
 * image, loading what its installer needs (npm's library) and none of the
 * language's preloads, with a spare staging directory of its own bound as
 * its target; runs of the language never take it; every spare goes with
 * the daemon.
 * An install taking one needs the egress gateway, which the fake's
 * sandboxes lack: tests/integration/packages.test.mjs covers that. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <sys/stat.h>

#include "sandbox/packages/install.h"
#include "unit/sandbox/pool/pool_rig.h"

static struct exec_pool_stats installer_stats(struct rig *g, const struct langtable_lang *lang)
{
    struct exec_pool_stats st;
    assert_true(exec_installer_stats(g->exec, lang, &st));
    return st;
}

/* Waits until lang has one ready installer (hang guard). */
static void wait_installer(struct rig *g, const struct langtable_lang *lang)
{
    for (int i = 0; i < GUARD / 5; i++) {
        if (installer_stats(g, lang).ready == 1)
            return;
        usleep(5000);
    }
    struct exec_pool_stats st = installer_stats(g, lang);
    fail_msg("%s installers: %zu ready, %llu failed (%s)", lang->name, st.ready, st.failed,
             st.last_error);
}

/* The ready installers made so far, in order, as the fake saw them. */
static size_t installers(struct rig *g, struct fake_sandbox_info *out, size_t max)
{
    size_t n = 0, k = 0;
    struct fake_sandbox_info *all = fake_backend_all(g->fake, &n);
    for (size_t i = 0; i < n && k < max; i++)
        if (strstr(all[i].pool, "-installer"))
            out[k++] = all[i];
    free(all);
    return k;
}

static bool is_dir(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int setup_installs(void **state)
{
    setup(state);
    struct rig *g = *state;
    g->cfg.packages_offline = false;
    return 0;
}

static void test_one_waits_per_language(void **state)
{
    struct rig *g = *state;
    rig_open(g);
    wait_installer(g, PY);
    wait_installer(g, JS);
    struct fake_sandbox_info in[4];
    assert_int_equal(installers(g, in, 4), 2);
    char spare[1100];
    snprintf(spare, sizeof(spare), "%s/tmp/spare.", g->cfg.packages_cache_dir);
    for (size_t i = 0; i < 2; i++) {
        bool py = strcmp(in[i].pool, "python-installer") == 0;
        assert_string_equal(in[i].image, py ? INSTALL_IMAGE_PIP : INSTALL_IMAGE_NPM);
        assert_true(in[i].warm);
        /* npm's library loaded while it waits; none of python's preloads. */
        assert_string_equal(in[i].preload, py ? "" : install_preload(REQS_NPM));
        assert_memory_equal(in[i].install_dir, spare, strlen(spare));
        assert_true(is_dir(in[i].install_dir));
    }
    assert_string_not_equal(in[0].install_dir, in[1].install_dir);
    /* A run of the language takes the language's sandbox, never these. */
    struct run req = request(JS, "console.log(1)", g->cfg.memory_mb);
    run_ok(g, &req, "");
    assert_true(installer_stats(g, JS).hits == 0);
    rig_close(g);
    assert_all_gone(g);
    for (size_t i = 0; i < 2; i++)
        assert_false(is_dir(in[i].install_dir));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_waits_per_language, setup_installs, teardown),
    };
    return cmocka_run_group_tests_name("packages_run", tests, NULL, NULL);
}
