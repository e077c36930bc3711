#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "backend/docker/docker.h"
#include "sandbox/policy.h"

static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v))
        fail_msg("no '%s'", key);
    return v;
}

static int array_has(json_object *arr, const char *s)
{
    for (size_t i = 0; i < json_object_array_length(arr); i++)
        if (strcmp(json_object_get_string(json_object_array_get_idx(arr, i)), s) == 0)
            return 1;
    return 0;
}

static void test_hardened_body(void **state)
{
    (void)state;
    struct config cfg;
    config_init(&cfg);
    const char *cmd[] = {"python3", "-c", "pass", NULL};
    char *env[] = {"API_KEY=v", NULL};
    struct policy_run run = {.image = "img:1", .cmd = cmd, .memory_mb = 128, .instance = "abc"};
    struct backend_spec spec;
    policy_spec(&cfg, &run, env, &spec);
    json_object *b = docker_create_body(&spec);
    assert_string_equal(json_object_get_string(get(b, "Image")), "img:1");
    assert_string_equal(json_object_get_string(get(b, "User")), "10001:10001");
    assert_true(array_has(get(b, "Env"), "API_KEY=v"));
    assert_false(json_object_get_boolean(get(b, "Tty")));
    json_object *hc = get(b, "HostConfig");
    assert_string_equal(json_object_get_string(get(hc, "NetworkMode")), "none");
    assert_true(json_object_get_boolean(get(hc, "ReadonlyRootfs")));
    assert_true(array_has(get(hc, "CapDrop"), "ALL"));
    assert_true(array_has(get(hc, "SecurityOpt"), "no-new-privileges:true"));
    assert_int_equal(json_object_get_int64(get(hc, "Memory")), 128LL << 20);
    assert_int_equal(json_object_get_int64(get(hc, "MemorySwap")), 128LL << 20);
    assert_int_equal(json_object_get_int64(get(hc, "PidsLimit")), cfg.pids_limit);
    assert_true(json_object_get_boolean(get(hc, "Init")));
    assert_false(json_object_get_boolean(get(hc, "Privileged")));
    assert_non_null(strstr(json_object_get_string(get(get(hc, "Tmpfs"), "/tmp")), "size=64m"));
    assert_int_equal(json_object_array_length(get(hc, "Ulimits")), 4);
    assert_false(json_object_object_get_ex(hc, "Binds", NULL));
    assert_false(json_object_object_get_ex(hc, "Runtime", NULL));
    assert_string_equal(json_object_get_string(get(get(b, "Labels"), "io.mcp-sandboxd.instance")),
                        "abc");
    json_object_put(b);

    free(cfg.runtime);
    cfg.runtime = xstrdup("runsc");
    policy_spec(&cfg, &run, env, &spec);
    b = docker_create_body(&spec);
    assert_string_equal(json_object_get_string(get(get(b, "HostConfig"), "Runtime")), "runsc");
    json_object_put(b);
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
        cmocka_unit_test(test_hardened_body),
        cmocka_unit_test(test_pass_through),
    };
    return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
