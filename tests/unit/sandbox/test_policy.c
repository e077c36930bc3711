#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "sandbox/policy.h"

/* The spec carries the operator's limits and the run's own. */
static void test_spec(void **state)
{
    (void)state;
    struct config cfg;
    config_init(&cfg);
    const char *cmd[] = {"python3", "-c", "pass", NULL};
    char *env[] = {"API_KEY=v", NULL};
    struct policy_run run = {.image = "img:1",
                             .cmd = cmd,
                             .memory_mb = 128,
                             .instance = "abc",
                             .owner = "me",
                             .expires = 42};
    struct backend_spec spec;
    policy_spec(&cfg, &run, env, &spec);
    assert_string_equal(spec.image, "img:1");
    assert_ptr_equal(spec.cmd, cmd);
    assert_string_equal(spec.user, "10001:10001");
    assert_string_equal(spec.workdir, POLICY_WORKDIR);
    assert_int_equal(spec.workdir_mb, cfg.tmpfs_mb);
    assert_string_equal(spec.env[0], "API_KEY=v");
    assert_int_equal(spec.memory_bytes, 128LL << 20);
    assert_int_equal(spec.nano_cpus, (long long)(cfg.cpus * 1e9));
    assert_int_equal(spec.pids_limit, cfg.pids_limit);
    assert_true(spec.nofile > 0 && spec.nproc > 0 && spec.fsize > 0 && spec.shm_bytes > 0);
    assert_null(spec.runtime);
    assert_string_equal(spec.instance, "abc");
    assert_string_equal(spec.owner, "me");
    assert_int_equal(spec.expires, 42);

    free(cfg.runtime);
    cfg.runtime = xstrdup("runsc");
    policy_spec(&cfg, &run, env, &spec);
    assert_string_equal(spec.runtime, "runsc");
    config_free(&cfg);
}

static void test_pass_through(void **state)
{
    (void)state;
    struct config cfg;
    config_init(&cfg);
    cfg.pass_through_env.items = xrealloc(cfg.pass_through_env.items, 3 * sizeof(char *));
    cfg.pass_through_env.items[0] = xstrdup("A");
    cfg.pass_through_env.items[1] = xstrdup("MISSING");
    cfg.pass_through_env.items[2] = NULL;
    cfg.pass_through_env.n = 2;
    char *envp[] = {"AB=no", "A=yes=1", "OTHER=x", NULL};
    char **env = policy_env_new(&cfg, envp, NULL);
    /* The fixed base first, then the pass-through variables that are set. */
    size_t n = 0;
    while (env[n])
        n++;
    assert_true(n >= 2);
    assert_string_equal(env[0], "HOME=/tmp");
    assert_string_equal(env[n - 1], "A=yes=1");
    for (size_t i = 0; i < n; i++) {
        assert_null(strstr(env[i], "OTHER"));
        assert_null(strstr(env[i], "AB=no"));
    }
    policy_env_free(env);
    config_free(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec),
        cmocka_unit_test(test_pass_through),
    };
    return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
