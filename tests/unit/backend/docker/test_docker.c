#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "backend/backends.h"
#include "backend/docker/channel.h"
#include "backend/docker/create_body.h"
#include "backend/docker/discover.h"
#include "backend/docker/egress_sock.h"
#include "backend/docker/docker.h"
#include "backend/docker/engine.h"
#include "backend/docker/seccomp_profile.h"
#include "unit/backend/docker/docker_rig.h"
#include "unit/json_get.h"

static int array_has(json_object *arr, const char *s)
{
    for (size_t i = 0; i < json_object_array_length(arr); i++)
        if (strcmp(json_object_get_string(json_object_array_get_idx(arr, i)), s) == 0)
            return 1;
    return 0;
}

static const char *const env[] = {"HOME=/tmp", "API_KEY=v", NULL};

/* The rig's sandbox, with values of its own to find in the body. */
static struct backend_spec spec_of(void)
{
    struct backend_spec s = docker_rig_spec("img:1");
    s.uid = s.gid = 10001;
    s.env = env;
    s.pids_limit = 256;
    s.nproc = 4096;
    s.fsize = 64LL << 20;
    s.shm_bytes = 16LL << 20;
    s.instance = "abc";
    s.owner = "me";
    s.expires = 42;
    return s;
}

/* What backend.h promises every container gets, in Docker's terms, plus
 * the spec's own values. */
static void test_create_body_hardening(void **state)
{
    (void)state;
    struct backend_spec spec = spec_of();
    json_object *b = create_body_new(&spec, NULL, NULL);
    assert_string_equal(json_object_get_string(json_get(b, "Image")), "img:1");
    assert_string_equal(json_object_get_string(json_get(b, "User")), "10001:10001");
    assert_string_equal(json_object_get_string(json_get(b, "WorkingDir")), "/tmp");
    assert_int_equal(json_object_array_length(json_get(b, "Entrypoint")), 0);
    assert_int_equal(json_object_array_length(json_get(b, "Cmd")), 3);
    assert_int_equal(json_object_array_length(json_get(b, "Env")), 2);
    assert_true(array_has(json_get(b, "Env"), "API_KEY=v"));
    assert_false(json_object_get_boolean(json_get(b, "Tty")));
    assert_true(json_object_get_boolean(json_get(b, "OpenStdin")));
    assert_true(json_object_get_boolean(json_get(b, "StdinOnce")));
    assert_true(json_object_get_boolean(json_get(b, "NetworkDisabled")));
    json_object *hc = json_get(b, "HostConfig");
    assert_string_equal(json_object_get_string(json_get(hc, "NetworkMode")), "none");
    assert_true(json_object_get_boolean(json_get(hc, "ReadonlyRootfs")));
    assert_true(array_has(json_get(hc, "CapDrop"), "ALL"));
    assert_true(array_has(json_get(hc, "SecurityOpt"), "no-new-privileges:true"));
    assert_int_equal(json_object_get_int64(json_get(hc, "Memory")), 128LL << 20);
    assert_int_equal(json_object_get_int64(json_get(hc, "MemorySwap")), 128LL << 20);
    assert_int_equal(json_object_get_int64(json_get(hc, "NanoCpus")), 1000000000LL);
    assert_int_equal(json_object_get_int64(json_get(hc, "PidsLimit")), 256);
    assert_true(json_object_get_boolean(json_get(hc, "Init")));
    assert_false(json_object_get_boolean(json_get(hc, "Privileged")));
    assert_string_equal(json_object_get_string(json_get(hc, "IpcMode")), "private");
    assert_string_equal(json_object_get_string(json_get(json_get(hc, "LogConfig"), "Type")),
                        "none");
    assert_non_null(
        strstr(json_object_get_string(json_get(json_get(hc, "Tmpfs"), "/tmp")), "size=64m"));
    /* The only writable tmpfs: Podman's own on /run and /var/tmp are
     * replaced by read-only ones. */
    assert_string_equal(json_object_get_string(json_get(json_get(hc, "Tmpfs"), "/run")),
                        "ro,nosuid,nodev,noexec,size=64k");
    assert_string_equal(json_object_get_string(json_get(json_get(hc, "Tmpfs"), "/var/tmp")),
                        "ro,nosuid,nodev,noexec,size=64k");
    assert_int_equal(json_object_array_length(json_get(hc, "Ulimits")), 4);
    assert_false(json_object_object_get_ex(hc, "Binds", NULL));
    assert_false(json_object_object_get_ex(hc, "Runtime", NULL));
    json_object *labels = json_get(b, "Labels");
    assert_string_equal(json_object_get_string(json_get(labels, ENGINE_LABEL_MANAGED)), "1");
    assert_string_equal(json_object_get_string(json_get(labels, ENGINE_LABEL_INSTANCE)), "abc");
    assert_string_equal(json_object_get_string(json_get(labels, ENGINE_LABEL_OWNER)), "me");
    assert_string_equal(json_object_get_string(json_get(labels, ENGINE_LABEL_EXPIRES)), "42");
    assert_string_equal(json_object_get_string(json_get(labels, ENGINE_LABEL_UID)), "10001");
    json_object_put(b);
}

/* Each sandbox's own uid (sandbox/pool/uids.h) reaches the engine as its User,
 * gid and all, and as the label the list shows; nproc is the spec's. */
static void test_create_body_users(void **state)
{
    (void)state;
    struct backend_spec a = spec_of(), c = spec_of();
    a.uid = a.gid = 2000000000;
    a.nproc = 256;
    c.uid = 2000004095;
    c.gid = 2000004095;
    json_object *ba = create_body_new(&a, NULL, NULL);
    json_object *bc = create_body_new(&c, NULL, NULL);
    assert_string_equal(json_object_get_string(json_get(ba, "User")), "2000000000:2000000000");
    assert_string_equal(json_object_get_string(json_get(bc, "User")), "2000004095:2000004095");
    assert_string_equal(json_object_get_string(json_get(json_get(ba, "Labels"), ENGINE_LABEL_UID)),
                        "2000000000");
    assert_string_equal(json_object_get_string(json_get(json_get(bc, "Labels"), ENGINE_LABEL_UID)),
                        "2000004095");
    json_object *ul = json_get(json_get(ba, "HostConfig"), "Ulimits");
    bool found = false;
    for (size_t i = 0; i < json_object_array_length(ul); i++) {
        json_object *u = json_object_array_get_idx(ul, i);
        if (strcmp(json_object_get_string(json_get(u, "Name")), "nproc") != 0)
            continue;
        assert_int_equal(json_object_get_int64(json_get(u, "Soft")), 256);
        assert_int_equal(json_object_get_int64(json_get(u, "Hard")), 256);
        found = true;
    }
    assert_true(found);
    json_object_put(ba);
    json_object_put(bc);
}

static void test_create_body_options(void **state)
{
    (void)state;
    struct backend_spec spec = spec_of();
    spec.runtime = "runsc";
    spec.owner = NULL;
    spec.expires = 0;
    static const char *const extra[] = {"team=ml", "empty=", NULL};
    spec.labels = extra;
    json_object *b = create_body_new(&spec, NULL, NULL);
    assert_string_equal(json_object_get_string(json_get(json_get(b, "Labels"), "team")), "ml");
    assert_string_equal(json_object_get_string(json_get(json_get(b, "Labels"), "empty")), "");
    assert_string_equal(json_object_get_string(json_get(json_get(b, "HostConfig"), "Runtime")),
                        "runsc");
    json_object *labels = json_get(b, "Labels");
    assert_false(json_object_object_get_ex(labels, ENGINE_LABEL_OWNER, NULL));
    assert_false(json_object_object_get_ex(labels, ENGINE_LABEL_EXPIRES, NULL));
    json_object_put(b);
}

/* A sandbox on a channel (channel.h): its directory bound read-only at
 * CHANNEL_TARGET, and nothing attached or held open by the engine. */
static void test_create_body_channel(void **state)
{
    (void)state;
    struct backend_spec spec = spec_of();
    json_object *b = create_body_new(&spec, NULL, &(struct create_binds){.io_dir = "/run/io/1.ab"});
    json_object *binds = json_get(json_get(b, "HostConfig"), "Binds");
    assert_int_equal(json_object_array_length(binds), 1);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(binds, 0)),
                        "/run/io/1.ab:" CHANNEL_TARGET ":ro");
    static const char *const off[] = {"AttachStdin", "AttachStdout", "AttachStderr", "OpenStdin",
                                      "StdinOnce"};
    for (size_t i = 0; i < ARRAY_SIZE(off); i++)
        assert_false(json_object_get_boolean(json_get(b, off[i])));
    json_object_put(b);
}

/* A sandbox with egress: the egress socket's directory bound read-only
 * at EGRESS_SOCK_TARGET, beside the channel's or alone (its streams then
 * attached); never a network. */
static void test_create_body_egress(void **state)
{
    (void)state;
    struct backend_spec spec = spec_of();
    spec.egress = true;
    json_object *b = create_body_new(
        &spec, NULL,
        &(struct create_binds){.io_dir = "/run/io/1.ab", .egress_dir = "/run/io/1.cd"});
    json_object *hc = json_get(b, "HostConfig");
    json_object *binds = json_get(hc, "Binds");
    assert_int_equal(json_object_array_length(binds), 2);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(binds, 0)),
                        "/run/io/1.ab:" CHANNEL_TARGET ":ro");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(binds, 1)),
                        "/run/io/1.cd:" EGRESS_SOCK_TARGET ":ro");
    assert_string_equal(json_object_get_string(json_get(hc, "NetworkMode")), "none");
    assert_true(json_object_get_boolean(json_get(b, "NetworkDisabled")));
    json_object_put(b);

    b = create_body_new(&spec, NULL, &(struct create_binds){.egress_dir = "/run/io/1.cd"});
    binds = json_get(json_get(b, "HostConfig"), "Binds");
    assert_int_equal(json_object_array_length(binds), 1);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(binds, 0)),
                        "/run/io/1.cd:" EGRESS_SOCK_TARGET ":ro");
    assert_true(json_object_get_boolean(json_get(b, "OpenStdin")));
    assert_true(json_object_get_boolean(json_get(b, "AttachStdout")));
    json_object_put(b);
}

/* A package cache is shown read-only, an installer's target writable,
 * with or without the daemon's other directories. */
static void test_create_body_packages(void **state)
{
    (void)state;
    struct backend_spec spec = spec_of();
    spec.packages_dir = "/var/cache/pk/sets";
    json_object *b = create_body_new(&spec, NULL, NULL);
    json_object *binds = json_get(json_get(b, "HostConfig"), "Binds");
    assert_int_equal(json_object_array_length(binds), 1);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(binds, 0)),
                        "/var/cache/pk/sets:" BACKEND_PACKAGES_DIR ":ro");
    json_object_put(b);

    spec.packages_dir = NULL;
    spec.install_dir = "/var/cache/pk/tmp/i.1";
    b = create_body_new(&spec, NULL, &(struct create_binds){.io_dir = "/run/io/1.ab"});
    binds = json_get(json_get(b, "HostConfig"), "Binds");
    assert_int_equal(json_object_array_length(binds), 2);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(binds, 0)),
                        "/run/io/1.ab:" CHANNEL_TARGET ":ro");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(binds, 1)),
                        "/var/cache/pk/tmp/i.1:" BACKEND_INSTALL_DIR ":rw");
    assert_true(json_object_get_boolean(json_get(json_get(b, "HostConfig"), "ReadonlyRootfs")));
    json_object_put(b);
}

/* The seccomp profile: inline for Docker, a path for Podman, and no
 * option at all without one (the engine's default). */
static void test_create_body_seccomp(void **state)
{
    (void)state;
    struct backend_spec spec = spec_of();
    json_object *b = create_body_new(&spec, NULL, NULL);
    json_object *opts = json_get(json_get(b, "HostConfig"), "SecurityOpt");
    assert_int_equal(json_object_array_length(opts), 1);
    json_object_put(b);

    b = create_body_new(&spec, "{\"defaultAction\":\"SCMP_ACT_ERRNO\"}", NULL);
    opts = json_get(json_get(b, "HostConfig"), "SecurityOpt");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(opts, 0)),
                        "no-new-privileges:true");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(opts, 1)),
                        "seccomp={\"defaultAction\":\"SCMP_ACT_ERRNO\"}");
    json_object_put(b);

    b = create_body_new(&spec, "/run/x/seccomp-1.json", NULL);
    opts = json_get(json_get(b, "HostConfig"), "SecurityOpt");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(opts, 1)),
                        "seccomp=/run/x/seccomp-1.json");
    json_object_put(b);
}

/* The SecurityOpt seccomp entry of a described create request, or NULL. */
static char *described_seccomp(struct backend *b, const struct backend_spec *spec)
{
    char *text = backend_describe_create(b, spec);
    json_object *o = json_tokener_parse(text);
    assert_non_null(o);
    json_object *opts = json_get(json_get(o, "HostConfig"), "SecurityOpt");
    char *found = NULL;
    for (size_t i = 0; i < json_object_array_length(opts); i++) {
        const char *v = json_object_get_string(json_object_array_get_idx(opts, i));
        if (strncmp(v, "seccomp=", 8) == 0)
            found = xstrdup(v + 8);
    }
    json_object_put(o);
    free(text);
    return found;
}

/* The spec names the policy; the backend renders the profile for the
 * kernel of the spec's runtime: gVisor's for a gVisor runtime, the host's
 * otherwise, none for the runtime's own default. */
static void test_syscall_policy(void **state)
{
    (void)state;
    struct backend *b = docker_backend_new("/nonexistent/mcpsbx-render.sock", NULL, NULL);
    struct err err = ERR_INIT;
    char *host = seccomp_profile_new(SECCOMP_KERNEL_HOST, &err);
    char *gvisor = seccomp_profile_new(SECCOMP_KERNEL_GVISOR, &err);
    assert_non_null(host);
    assert_non_null(gvisor);
    assert_string_not_equal(host, gvisor);
    struct backend_spec spec = spec_of();
    char *got = described_seccomp(b, &spec);
    assert_string_equal(got, host);
    free(got);
    spec.runtime = "runc";
    got = described_seccomp(b, &spec);
    assert_string_equal(got, host);
    free(got);
    static const char *const gvisor_names[] = {"runsc", "runsc-kvm", "my-gvisor"};
    for (size_t i = 0; i < ARRAY_SIZE(gvisor_names); i++) {
        spec.runtime = gvisor_names[i];
        got = described_seccomp(b, &spec);
        assert_string_equal(got, gvisor);
        free(got);
    }
    spec.syscalls = BACKEND_SYSCALLS_RUNTIME_DEFAULT;
    assert_null(described_seccomp(b, &spec));
    free(host);
    free(gvisor);
    backend_free(b);
}

/* --dry-run-create's text is the body, and sends nothing. */
static void test_describe_create(void **state)
{
    (void)state;
    struct backend *b = docker_backend_new("/nonexistent/mcpsbx-render.sock", NULL, NULL);
    struct backend_spec spec = spec_of();
    char *text = backend_describe_create(b, &spec);
    json_object *o = json_tokener_parse(text);
    assert_non_null(o);
    assert_string_equal(json_object_get_string(json_get(o, "Image")), "img:1");
    json_object_put(o);
    free(text);
    /* With egress: the forwarder first in the command, no bind shown. */
    spec.egress = true;
    text = backend_describe_create(b, &spec);
    o = json_tokener_parse(text);
    assert_non_null(o);
    json_object *cmd = json_get(o, "Cmd");
    assert_int_equal(json_object_array_length(cmd), 8);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 0)), "perl");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 2)),
                        egress_forward_src);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 3)),
                        EGRESS_SOCK_PATH);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 4)), "3128");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 5)), "python3");
    assert_false(json_object_object_get_ex(json_get(o, "HostConfig"), "Binds", NULL));
    json_object_put(o);
    free(text);
    assert_string_equal(backend_kind(b), "docker");
    assert_string_equal(backend_address(b), "/nonexistent/mcpsbx-render.sock");
    backend_free(b);
}

static void test_discover(void **state)
{
    (void)state;
    char *path = NULL, *src = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(
        discover_engine("unix:///a.sock", "unix:///b.sock", "unix:///c.sock", &path, &src, &err),
        0);
    assert_string_equal(path, "/a.sock");
    assert_string_equal(src, "--engine");
    free(path), free(src);
    assert_int_equal(discover_engine(NULL, "", "unix:///c.sock", &path, &src, &err), 0);
    assert_string_equal(path, "/c.sock");
    assert_string_equal(src, "CONTAINER_HOST");
    free(path), free(src);
    assert_int_equal(discover_engine("", "/b.sock", NULL, &path, &src, &err), 0);
    assert_string_equal(path, "/b.sock");
    assert_string_equal(src, "DOCKER_HOST");
    free(path), free(src);
    assert_int_equal(discover_engine(NULL, NULL, NULL, &path, &src, &err), 0);
    assert_string_equal(src, "default");
    free(path), free(src);
    assert_int_equal(discover_engine("tcp://h:2375", NULL, NULL, &path, &src, &err), -1);
    assert_non_null(strstr(err_msg(&err), "--engine: only unix:// engine sockets"));
    err_clear(&err);
    assert_int_equal(discover_engine(NULL, "unix://rel.sock", NULL, &path, &src, &err), -1);
    assert_non_null(strstr(err_msg(&err), "DOCKER_HOST: engine socket path must be absolute"));
    err_clear(&err);
}

/* The backend named by --backend, at the address it finds itself. */
static void test_backends_open(void **state)
{
    (void)state;
    struct config cfg;
    struct err err = ERR_INIT;
    config_init(&cfg);
    char *envp[] = {"PATH=/bin", "DOCKER_HOST=unix:///run/x.sock", NULL};
    struct backend *b = backends_open(&cfg, envp, &err);
    assert_non_null(b);
    assert_string_equal(backend_address(b), "/run/x.sock");
    assert_string_equal(backend_address_source(b), "DOCKER_HOST");
    backend_free(b);
    free(cfg.engine);
    cfg.engine = xstrdup("unix:///run/y.sock");
    b = backends_open(&cfg, envp, &err);
    assert_string_equal(backend_address(b), "/run/y.sock");
    assert_string_equal(backend_address_source(b), "--engine");
    backend_free(b);
    free(cfg.engine);
    cfg.engine = xstrdup("http://x");
    assert_null(backends_open(&cfg, envp, &err));
    assert_non_null(strstr(err_msg(&err), "only unix://"));
    err_clear(&err);
    free(cfg.backend);
    cfg.backend = xstrdup("nomad");
    assert_null(backends_open(&cfg, envp, &err));
    assert_string_equal(err_msg(&err),
                        "--backend: 'nomad' is not a backend of this build (docker, kubernetes)");
    err_clear(&err);
    /* The other row: with no cluster anywhere in envp, it says where to
     * point it. */
    free(cfg.backend);
    cfg.backend = xstrdup("kubernetes");
    assert_null(backends_open(&cfg, envp, &err));
    assert_int_equal(err.code, ERR_NOT_FOUND);
    assert_non_null(strstr(err_msg(&err), "--kubeconfig"));
    err_clear(&err);
    config_free(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_body_hardening), cmocka_unit_test(test_create_body_options),
        cmocka_unit_test(test_create_body_users),     cmocka_unit_test(test_create_body_seccomp),
        cmocka_unit_test(test_describe_create),       cmocka_unit_test(test_discover),
        cmocka_unit_test(test_backends_open),         cmocka_unit_test(test_syscall_policy),
        cmocka_unit_test(test_create_body_channel),   cmocka_unit_test(test_create_body_egress),
        cmocka_unit_test(test_create_body_packages),
    };
    return cmocka_run_group_tests_name("docker", tests, NULL, NULL);
}
