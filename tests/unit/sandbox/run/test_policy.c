#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "sandbox/run/policy.h"
#include "unit/options.h"

static const char *const X[] = {"x", NULL};

/* The spec carries the operator's limits and the run's own. */
static void test_spec(void **state)
{
    struct config *cfg = *state;
    const char *cmd[] = {"python3", "-c", "pass", NULL};
    struct policy_run run = {.image = "img:1",
                             .cmd = cmd,
                             .memory_mb = 128,
                             .instance = "abc",
                             .owner = "me",
                             .expires = 42};
    struct backend_spec spec;
    policy_spec(cfg, &run, &spec);
    assert_string_equal(spec.image, "img:1");
    assert_ptr_equal(spec.cmd, cmd);
    /* A uid of the sandboxes' own range; nproc is each one's own bound. */
    assert_int_equal(spec.uid, cfg->sandbox_uid_base);
    assert_int_equal(spec.gid, cfg->sandbox_uid_base);
    assert_int_equal(spec.nproc, cfg->pids_limit);
    assert_string_equal(spec.workdir, POLICY_WORKDIR);
    assert_int_equal(spec.workdir_mb, cfg->tmpfs_mb);
    assert_string_equal(spec.env[0], "HOME=" POLICY_WORKDIR);
    assert_int_equal(spec.memory_bytes, 128LL << 20);
    assert_int_equal(spec.nano_cpus, (long long)(cfg->cpus * 1e9));
    assert_int_equal(spec.pids_limit, cfg->pids_limit);
    assert_true(spec.nofile > 0 && spec.nproc > 0 && spec.fsize > 0 && spec.shm_bytes > 0);
    assert_null(spec.runtime);
    assert_string_equal(spec.instance, "abc");
    assert_string_equal(spec.owner, "me");
    assert_int_equal(spec.expires, 42);
    assert_int_equal(spec.syscalls, BACKEND_SYSCALLS_SANDBOX);

    /* The language's runtime as the caller resolved it (langtable_runtime). */
    run.runtime = "runsc";
    policy_spec(cfg, &run, &spec);
    assert_string_equal(spec.runtime, "runsc");

    /* A file may be as large as the working directory holds, 64 MiB at
     * least. */
    assert_int_equal(spec.fsize, 64LL << 20);
    long long tmpfs_mb = cfg->tmpfs_mb;
    cfg->tmpfs_mb = 512;
    policy_spec(cfg, &run, &spec);
    assert_int_equal(spec.fsize, 512LL << 20);
    cfg->tmpfs_mb = tmpfs_mb;

    /* One user for all (--sandbox-uid-count 0): --sandbox-user's, and
     * nproc a loose backstop above the pids limit, since all count. */
    cfg->sandbox_uid_count = 0;
    free(cfg->sandbox_user);
    cfg->sandbox_user = xstrdup("10002:10003");
    policy_spec(cfg, &run, &spec);
    assert_int_equal(spec.uid, 10002);
    assert_int_equal(spec.gid, 10003);
    assert_true(spec.nproc > cfg->pids_limit);
}

/* The network is the caller's decision (langtable_network): policy
 * passes it on and reads no option of its own. */
static void test_network_is_the_callers(void **state)
{
    struct config *cfg = *state;
    struct policy_run run = {.image = "i", .cmd = X, .memory_mb = 64, .instance = "x"};
    struct backend_spec spec;
    policy_spec(cfg, &run, &spec);
    assert_false(spec.network);
    run.network = true;
    policy_spec(cfg, &run, &spec);
    assert_true(spec.network);
    /* --allow-network naming the language changes nothing here. */
    set_list(&cfg->allow_network, (const char *const[]){"python"}, 1);
    run.network = false;
    policy_spec(cfg, &run, &spec);
    assert_false(spec.network);
    run.network = true;
    policy_spec(cfg, &run, &spec);
    assert_true(spec.network);
}

static int missing_calls;
static char missing_name[32];
static void on_missing(const char *name)
{
    missing_calls++;
    snprintf(missing_name, sizeof(missing_name), "%s", name);
}

/* Only the named variables that are set, values as they are; the
 * container's environment is the fixed base whatever the daemon's holds. */
static void test_pass_through(void **state)
{
    struct config *cfg = *state;
    set_list(&cfg->pass_through_env, (const char *const[]){"A", "MISSING"}, 2);
    char *envp[] = {"AB=no", "A=yes=1", "OTHER=x", NULL};
    struct policy_secrets sec;
    policy_secrets_init(&sec, cfg, envp, on_missing);
    assert_int_equal(sec.n, 1);
    assert_string_equal(sec.names[0], "A");
    assert_string_equal(sec.values[0], "yes=1");
    assert_int_equal(missing_calls, 1);
    assert_string_equal(missing_name, "MISSING");

    struct policy_run run = {.image = "i", .memory_mb = 1, .instance = "x"};
    struct backend_spec spec;
    policy_spec(cfg, &run, &spec);
    size_t n = 0;
    for (; spec.env[n]; n++) {
        assert_null(strstr(spec.env[n], "A=yes"));
        assert_null(strstr(spec.env[n], "OTHER"));
    }
    assert_true(n >= 2);
    assert_string_equal(spec.env[0], "HOME=/tmp");
    policy_secrets_free(&sec);
    assert_int_equal(sec.n, 0);
}

/* Every sandbox runs under the project's syscall allow-list; the runtime
 * is the operator's, per language, by name (the backend renders both). */
static void test_syscalls_and_runtime(void **state)
{
    struct config *cfg = *state;
    struct policy_run run = {.image = "i", .cmd = X, .memory_mb = 64};
    struct backend_spec spec;
    run.runtime = "runsc";
    policy_spec(cfg, &run, &spec);
    assert_string_equal(spec.runtime, "runsc");
    assert_int_equal(spec.syscalls, BACKEND_SYSCALLS_SANDBOX);
    run.runtime = NULL;
    policy_spec(cfg, &run, &spec);
    assert_null(spec.runtime);
    assert_int_equal(spec.syscalls, BACKEND_SYSCALLS_SANDBOX);
    run.runtime = "runc";
    policy_spec(cfg, &run, &spec);
    assert_string_equal(spec.runtime, "runc");
    assert_int_equal(spec.syscalls, BACKEND_SYSCALLS_SANDBOX);
}

/* The environment: the daemon's own base, then the language's own
 * variables; the base names are the daemon's alone. */
static void test_language_env(void **state)
{
    struct config *cfg = *state;
    const char *own[] = {"MPLBACKEND=Agg", "X=1=2", NULL};
    const char **env = policy_env_new(own, false, false);
    struct policy_run run = {.image = "i", .memory_mb = 1, .instance = "x", .env = env};
    struct backend_spec spec;
    policy_spec(cfg, &run, &spec);
    static const char *const want[] = {"HOME=" POLICY_WORKDIR, "TMPDIR=" POLICY_WORKDIR,
                                       "LANG=C.UTF-8", "MPLBACKEND=Agg", "X=1=2"};
    for (size_t i = 0; i < ARRAY_SIZE(want); i++)
        assert_string_equal(spec.env[i], want[i]);
    assert_null(spec.env[ARRAY_SIZE(want)]);
    free(env);
    /* None of its own: the base alone, as without any. */
    env = policy_env_new(NULL, false, false);
    run.env = env;
    policy_spec(cfg, &run, &spec);
    assert_null(spec.env[3]);
    free(env);
    run.env = NULL;
    policy_spec(cfg, &run, &spec);
    assert_string_equal(spec.env[2], "LANG=C.UTF-8");
    assert_null(spec.env[3]);
    assert_true(policy_env_is_base("HOME", 4));
    assert_true(policy_env_is_base("LANG=x", 4));
    assert_false(policy_env_is_base("HOM", 3));
    assert_false(policy_env_is_base("MPLBACKEND", 10));
}

/* With egress: the proxy variables between the base and the language's
 * own, pointing at the backend's loopback proxy; and the spec says so. */
static void test_egress_env(void **state)
{
    struct config *cfg = *state;
    const char *own[] = {"X=1", NULL};
    const char **env = policy_env_new(own, true, false);
    struct policy_run run = {
        .image = "i", .memory_mb = 1, .instance = "x", .env = env, .egress = true};
    struct backend_spec spec;
    policy_spec(cfg, &run, &spec);
    assert_true(spec.egress);
    assert_false(spec.network);
    char want[64];
    snprintf(want, sizeof(want), "HTTPS_PROXY=http://127.0.0.1:%d", BACKEND_EGRESS_PORT);
    bool https = false, lower = false, no_proxy = false;
    size_t i = 3;
    for (; spec.env[i] && strcmp(spec.env[i], "X=1") != 0; i++) {
        https |= strcmp(spec.env[i], want) == 0;
        lower |= strncmp(spec.env[i], "http_proxy=http://127.0.0.1:", 28) == 0;
        no_proxy |= strcmp(spec.env[i], "NO_PROXY=localhost,127.0.0.1,::1") == 0;
    }
    assert_true(https && lower && no_proxy);
    assert_string_equal(spec.env[i], "X=1");
    assert_null(spec.env[i + 1]);
    free(env);
}

/* With the daemon's CA: the trust variables name its files inside, and
 * the spec carries the host's files; without egress, neither. */
static void test_egress_ca_env(void **state)
{
    struct config *cfg = *state;
    const char **env = policy_env_new(NULL, true, true);
    struct policy_run run = {.image = "i",
                             .memory_mb = 1,
                             .instance = "x",
                             .env = env,
                             .egress = true,
                             .egress_ca_file = "/h/ca.pem",
                             .egress_ca_bundle = "/h/bundle.pem"};
    struct backend_spec spec;
    policy_spec(cfg, &run, &spec);
    assert_string_equal(spec.egress_ca_file, "/h/ca.pem");
    assert_string_equal(spec.egress_ca_bundle, "/h/bundle.pem");
    const char *want[] = {
        "SSL_CERT_FILE=" BACKEND_EGRESS_CA_BUNDLE, "REQUESTS_CA_BUNDLE=" BACKEND_EGRESS_CA_BUNDLE,
        "CURL_CA_BUNDLE=" BACKEND_EGRESS_CA_BUNDLE, "PIP_CERT=" BACKEND_EGRESS_CA_BUNDLE,
        "NODE_EXTRA_CA_CERTS=" BACKEND_EGRESS_CA_FILE};
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        bool found = false;
        for (size_t i = 0; spec.env[i]; i++)
            found |= strcmp(spec.env[i], want[k]) == 0;
        assert_true(found);
    }
    free(env);
    env = policy_env_new(NULL, false, true);
    for (size_t i = 0; env[i]; i++)
        assert_null(strstr(env[i], "SSL_CERT_FILE"));
    free(env);
    run.egress = false;
    policy_spec(cfg, &run, &spec);
    assert_null(spec.egress_ca_file);
    assert_null(spec.egress_ca_bundle);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, options_setup, options_teardown)
    const struct CMUnitTest tests[] = {
        T(test_spec),         T(test_network_is_the_callers), T(test_egress_ca_env),
        T(test_pass_through), T(test_syscalls_and_runtime),   T(test_language_env),
        T(test_egress_env),
    };
#undef T
    return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
