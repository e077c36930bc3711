/* backend/kubernetes/pod_spec.c: the Pod of a typical run, whole, against
 * the text a reader checks the hardening in; what the backend cannot
 * give refused by name; Kubernetes' label rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "backend/kubernetes/pod_spec.h"
#include "unit/json_get.h"

static const char *const CMD[] = {"python3", "-u", "-c", "print(1)", NULL};
static const char *const ENV[] = {"HOME=/work", "LANG=C.UTF-8", NULL};
static const char *const LABELS[] = {"team=agents", "example.com/tier=sandbox", NULL};

static struct backend_spec typical(void)
{
    return (struct backend_spec){
        .image = "mcp-sandboxd-python:latest",
        .cmd = CMD,
        .uid = 61000,
        .gid = 61000,
        .workdir = "/work",
        .workdir_mb = 64,
        .env = ENV,
        .memory_bytes = 512LL << 20,
        .nano_cpus = 1000000000LL,
        .cpu_shares = BACKEND_CPU_SHARES_LOW,
        .pids_limit = 128,
        .shm_bytes = 64LL << 20,
        .runtime = "gvisor",
        .instance = "857d9be4",
        .owner = "boot:4026531836:42:1234",
        .expires = 1800000600LL,
        .pool = "python",
        .labels = LABELS,
    };
}

static const struct pod_spec_opts OPTS = {
    .name = "mcpsbx-857d9be4-1",
    .namespace = "sandboxes",
    .seccomp_localhost = "mcp-sandboxd.json",
    .now = 1800000000LL,
};

/* Every field of the list, and nothing the API would refuse. */
static const char WANT[] =
    "{\"apiVersion\": \"v1\", \"kind\": \"Pod\","
    " \"metadata\": {\"name\": \"mcpsbx-857d9be4-1\", \"namespace\": \"sandboxes\","
    "  \"labels\": {\"team\": \"agents\", \"example.com/tier\": \"sandbox\","
    "   \"mcp-sandboxd.io/managed\": \"1\", \"mcp-sandboxd.io/sandbox\": \"1\","
    "   \"mcp-sandboxd.io/instance\": \"857d9be4\"},"
    "  \"annotations\": {\"mcp-sandboxd.io/owner\": \"boot:4026531836:42:1234\","
    "   \"mcp-sandboxd.io/pool\": \"python\", \"mcp-sandboxd.io/uid\": \"61000\","
    "   \"mcp-sandboxd.io/expires\": \"1800000600\"}},"
    " \"spec\": {\"restartPolicy\": \"Never\", \"activeDeadlineSeconds\": 600,"
    "  \"terminationGracePeriodSeconds\": 0, \"automountServiceAccountToken\": false,"
    "  \"enableServiceLinks\": false, \"hostNetwork\": false, \"hostPID\": false,"
    "  \"hostIPC\": false, \"shareProcessNamespace\": true, \"runtimeClassName\": \"gvisor\","
    "  \"securityContext\": {\"runAsNonRoot\": true, \"runAsUser\": 61000, \"runAsGroup\": 61000,"
    "   \"seccompProfile\": {\"type\": \"Localhost\", \"localhostProfile\": "
    "\"mcp-sandboxd.json\"}},"
    "  \"containers\": [{\"name\": \"sandbox\", \"image\": \"mcp-sandboxd-python:latest\","
    "   \"imagePullPolicy\": \"IfNotPresent\","
    "   \"command\": [\"python3\", \"-u\", \"-c\", \"print(1)\"], \"workingDir\": \"/work\","
    "   \"env\": [{\"name\": \"HOME\", \"value\": \"/work\"},"
    "    {\"name\": \"LANG\", \"value\": \"C.UTF-8\"}],"
    "   \"stdin\": true, \"stdinOnce\": true, \"tty\": false,"
    "   \"resources\": {"
    "    \"limits\": {\"memory\": \"536870912\", \"cpu\": \"1000m\","
    "     \"ephemeral-storage\": \"67108864\"},"
    "    \"requests\": {\"memory\": \"536870912\", \"cpu\": \"1000m\","
    "     \"ephemeral-storage\": \"67108864\"}},"
    "   \"securityContext\": {\"runAsNonRoot\": true, \"runAsUser\": 61000,"
    "    \"runAsGroup\": 61000,"
    "    \"seccompProfile\": {\"type\": \"Localhost\","
    "     \"localhostProfile\": \"mcp-sandboxd.json\"},"
    "    \"allowPrivilegeEscalation\": false, \"privileged\": false,"
    "    \"readOnlyRootFilesystem\": true, \"capabilities\": {\"drop\": [\"ALL\"]}},"
    "   \"volumeMounts\": [{\"name\": \"work\", \"mountPath\": \"/work\"},"
    "    {\"name\": \"shm\", \"mountPath\": \"/dev/shm\"}]}],"
    "  \"volumes\": [{\"name\": \"work\","
    "    \"emptyDir\": {\"medium\": \"Memory\", \"sizeLimit\": \"67108864\"}},"
    "   {\"name\": \"shm\", \"emptyDir\": {\"medium\": \"Memory\", \"sizeLimit\": "
    "\"67108864\"}}]}}";

static void test_typical(void **state)
{
    (void)state;
    struct backend_spec spec = typical();
    struct err err = ERR_INIT;
    json_object *got = pod_spec_new(&spec, &OPTS, &err);
    if (!got)
        fail_msg("%s", err_msg(&err));
    json_object *want = json_parse_or_fail("WANT", WANT);
    if (!json_object_equal(got, want))
        fail_msg("got %s", json_object_to_json_string_ext(got, JSON_C_TO_STRING_PRETTY |
                                                                   JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(want);
    json_object_put(got);
}

/* The runtime's own filter where asked for, or where the nodes have no
 * copy of the project's; no runtime class unless one is named; the
 * deadline at least a second, a day without an expiry. */
static void test_variants(void **state)
{
    (void)state;
    struct backend_spec spec = typical();
    spec.syscalls = BACKEND_SYSCALLS_RUNTIME_DEFAULT;
    spec.runtime = NULL;
    spec.expires = OPTS.now - 5;
    spec.shm_bytes = 0;
    struct err err = ERR_INIT;
    json_object *pod = pod_spec_new(&spec, &OPTS, &err);
    assert_non_null(pod);
    json_object *s = json_get(pod, "spec");
    json_object *sp = json_get(json_get(s, "securityContext"), "seccompProfile");
    assert_string_equal(json_object_get_string(json_get(sp, "type")), "RuntimeDefault");
    assert_false(json_object_object_get_ex(sp, "localhostProfile", NULL));
    assert_false(json_object_object_get_ex(s, "runtimeClassName", NULL));
    assert_int_equal(json_object_get_int64(json_get(s, "activeDeadlineSeconds")), 1);
    assert_int_equal(json_object_array_length(json_get(s, "volumes")), 1);
    json_object_put(pod);

    spec = typical();
    spec.expires = 0;
    struct pod_spec_opts o = OPTS;
    o.seccomp_localhost = NULL;
    pod = pod_spec_new(&spec, &o, &err);
    assert_non_null(pod);
    s = json_get(pod, "spec");
    sp = json_get(json_get(s, "securityContext"), "seccompProfile");
    assert_string_equal(json_object_get_string(json_get(sp, "type")), "RuntimeDefault");
    assert_int_equal(json_object_get_int64(json_get(s, "activeDeadlineSeconds")),
                     POD_DEADLINE_DEFAULT_S);
    assert_false(json_object_object_get_ex(json_get(json_get(pod, "metadata"), "annotations"),
                                           POD_NOTE_EXPIRES, NULL));
    json_object_put(pod);
}

static void refused(struct backend_spec spec, struct pod_spec_opts o, const char *needle)
{
    struct err err = ERR_INIT;
    assert_null(pod_spec_new(&spec, &o, &err));
    assert_int_equal(err.code, ERR_INVALID);
    if (!strstr(err_msg(&err), needle))
        fail_msg("'%s' does not say '%s'", err_msg(&err), needle);
    err_clear(&err);
}

/* The kubelet expands $(NAME) and reads $$ as $ in the command and in
 * env values: each $ goes doubled, so the sandbox gets the bytes sent. */
static void test_dollars(void **state)
{
    (void)state;
    static const char *const cmd[] = {"perl", "-e", "my $t = \"x-$$\"; print \"$(HOME)\"", NULL};
    static const char *const env[] = {"TOKEN=a$b$$c$(PATH)", "PLAIN=ok", NULL};
    struct backend_spec spec = typical();
    spec.cmd = cmd;
    spec.env = env;
    struct err err = ERR_INIT;
    json_object *pod = pod_spec_new(&spec, &OPTS, &err);
    assert_non_null(pod);
    json_object *c = json_object_array_get_idx(json_get(json_get(pod, "spec"), "containers"), 0);
    json_object *argv = json_get(c, "command");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(argv, 2)),
                        "my $$t = \"x-$$$$\"; print \"$$(HOME)\"");
    json_object *e = json_get(c, "env");
    assert_string_equal(json_object_get_string(json_get(json_object_array_get_idx(e, 0), "value")),
                        "a$$b$$$$c$$(PATH)");
    assert_string_equal(json_object_get_string(json_get(json_object_array_get_idx(e, 1), "value")),
                        "ok");
    json_object_put(pod);
}

static void test_refused(void **state)
{
    (void)state;
    struct backend_spec spec = typical();
    spec.network = true;
    refused(spec, OPTS, "no network");
    spec = typical();
    spec.egress = true;
    refused(spec, OPTS, "egress");
    spec = typical();
    spec.packages_dir = "/var/cache/mcp-sandboxd/packages/x";
    refused(spec, OPTS, "package directories");
    spec = typical();
    spec.uid = 0;
    refused(spec, OPTS, "not uid or gid 0");
    spec = typical();
    static const char *const bad[] = {"Bad Key=1", NULL};
    spec.labels = bad;
    refused(spec, OPTS, "Bad Key=1");
    spec = typical();
    struct pod_spec_opts o = OPTS;
    o.namespace = "Sandboxes";
    refused(spec, o, "namespace");
    o = OPTS;
    o.name = NULL;
    refused(spec, o, "name");
}

static void test_label_rules(void **state)
{
    (void)state;
    assert_true(pod_label_ok("app", "x"));
    assert_true(pod_label_ok("app", ""));
    assert_true(pod_label_ok("example.com/app.v1_b-c", "A.b_c-9"));
    char long_name[80];
    memset(long_name, 'a', 63);
    long_name[63] = '\0';
    assert_true(pod_label_ok(long_name, long_name));
    long_name[63] = 'a';
    long_name[64] = '\0';
    assert_false(pod_label_ok(long_name, "x"));
    assert_false(pod_label_ok("app", long_name));
    static const char *const bad_keys[] = {"",        "-app",       "app-",        "a b",
                                           "/app",    "Ex.com/app", "ex..com/app", "ex.com/",
                                           "-ex/app", "ex.com/a/b"};
    for (size_t i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++)
        if (pod_label_ok(bad_keys[i], "x"))
            fail_msg("key '%s' taken", bad_keys[i]);
    static const char *const bad_values[] = {"-x", "x-", "a:b", "a b", "a/b"};
    for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++)
        if (pod_label_ok("app", bad_values[i]))
            fail_msg("value '%s' taken", bad_values[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_typical),     cmocka_unit_test(test_variants),
        cmocka_unit_test(test_dollars),     cmocka_unit_test(test_refused),
        cmocka_unit_test(test_label_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
