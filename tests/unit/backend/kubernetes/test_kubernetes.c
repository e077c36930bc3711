/* backend/kubernetes/kubernetes.c, the backend's table, against an HTTPS
 * server in this process that answers as the API server does: found
 * through a kubeconfig file (its context's namespace), the Pod's name
 * and its gated command, start waiting for the Pod to run then attaching
 * and opening the gate, kill as a delete that wait and inspect then read
 * as a kill, an evicted Pod an error and an OOM-killed one a state, the
 * list's selector, the version, egress refused; and configurations
 * refused before any request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kubernetes/kubernetes.h"
#include "egress/tls.h"
#include "fake_kube/tls_server.h"
#include "fake_kube/ws_peer.h"

#define NS "/api/v1/namespaces/team/pods"

/* What the Pod's reads say. */
enum pod_is { POD_RUNNING, POD_EVICTED, POD_OOM, POD_GONE };

struct server {
    struct tls_server *tls;
    enum pod_is is;
    char reqs[16][256]; /* request lines, in order */
    int nreqs;
    char body[8192]; /* the last POST's body */
    char gate[8];    /* what came on the attach's stdin */
};

static struct egress_tls_ca *g_ca;
static char g_dir[64];

#define META(name)                                                                                 \
    "\"metadata\":{\"name\":\"" name "\",\"namespace\":\"team\",\"resourceVersion\":\"7\","        \
    "\"creationTimestamp\":\"2026-11-28T20:00:00Z\",\"labels\":{\"mcp-sandboxd.io/managed\":"      \
    "\"1\",\"mcp-sandboxd.io/instance\":\"i1\"},\"annotations\":{\"mcp-sandboxd.io/uid\":"         \
    "\"10001\"}}"
#define RUNNING                                                                                    \
    "\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"sandbox\",\"state\":"    \
    "{\"running\":{\"startedAt\":\"2026-11-28T20:00:00Z\"}}}]}"
#define EVICTED                                                                                    \
    "\"status\":{\"phase\":\"Failed\",\"reason\":\"Evicted\",\"message\":\"The node was low on "   \
    "resource: memory.\"}"
#define OOM                                                                                        \
    "\"status\":{\"phase\":\"Failed\",\"containerStatuses\":[{\"name\":\"sandbox\",\"state\":"     \
    "{\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\"}}}]}"
#define NOT_FOUND                                                                                  \
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","           \
    "\"message\":\"pods \\\"x\\\" not found\",\"reason\":\"NotFound\",\"code\":404}"

static void pod(struct server *s, SSL *ssl)
{
    static const char *const bodies[] = {
        [POD_RUNNING] = "{\"kind\":\"Pod\"," META("sbx-1") "," RUNNING "}",
        [POD_EVICTED] = "{\"kind\":\"Pod\"," META("sbx-1") "," EVICTED "}",
        [POD_OOM] = "{\"kind\":\"Pod\"," META("sbx-1") "," OOM "}",
    };
    if (s->is == POD_GONE)
        tls_answer_json(ssl, "404 Not Found", NOT_FOUND);
    else
        tls_answer_json(ssl, "200 OK", bodies[s->is]);
}

/* The attach: upgrade, the channels opened, the gate's line read. */
static void attach(struct server *s, SSL *ssl, const char *head)
{
    ws_upgrade(ssl, head, "v5.channel.k8s.io", false);
    static const unsigned char open1[] = {1}, open2[] = {2}, open3[] = {3};
    ws_frame_out(ssl, 0x82, open1, 1);
    ws_frame_out(ssl, 0x82, open2, 1);
    ws_frame_out(ssl, 0x82, open3, 1);
    struct ws_frame f;
    if (ws_frame_in(ssl, &f) == 0 && f.len > 1 && f.len - 1 < sizeof(s->gate))
        memcpy(s->gate, f.data + 1, f.len - 1);
    tls_drain(ssl);
}

static void handle(void *ctx, SSL *ssl)
{
    struct server *s = ctx;
    char req[16384];
    struct tls_request r;
    if (tls_take_request(ssl, req, sizeof(req), &r) < 0)
        return;
    if (s->nreqs < 16)
        snprintf(s->reqs[s->nreqs++], sizeof(s->reqs[0]), "%s", r.line);
    if (strncmp(req, "GET /version ", 13) == 0) {
        tls_answer_json(ssl, "200 OK",
                        "{\"major\":\"1\",\"minor\":\"31\",\"gitVersion\":\"v1.31.2\"}");
    } else if (strncmp(req, "POST " NS " ", strlen("POST " NS " ")) == 0) {
        if (r.body_len < sizeof(s->body)) {
            memcpy(s->body, r.body, r.body_len);
            s->body[r.body_len] = '\0';
        }
        tls_answer_json(ssl, "201 Created", "{\"kind\":\"Pod\"," META("sbx-1") ",\"status\":{}}");
    } else if (strncmp(req, "GET " NS "/sbx-1/attach?", strlen("GET " NS "/sbx-1/attach?")) == 0) {
        attach(s, ssl, req);
    } else if (strncmp(req, "GET " NS "/sbx-1 ", strlen("GET " NS "/sbx-1 ")) == 0) {
        pod(s, ssl);
    } else if (strncmp(req, "DELETE " NS "/sbx-1 ", strlen("DELETE " NS "/sbx-1 ")) == 0) {
        if (s->is == POD_GONE)
            tls_answer_json(ssl, "404 Not Found", NOT_FOUND);
        else
            tls_answer_json(ssl, "200 OK", "{\"kind\":\"Pod\"," META("sbx-1") "," RUNNING "}");
        s->is = POD_GONE;
    } else if (strncmp(req, "GET " NS "?labelSelector=", strlen("GET " NS "?labelSelector=")) ==
               0) {
        tls_answer_json(ssl, "200 OK",
                        "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[{"
                        "\"kind\":\"Pod\"," META("sbx-1") "," RUNNING "}]}");
    } else {
        tls_answer_json(ssl, "400 Bad Request", "{}");
    }
}

/* A kubeconfig for s in g_dir, its context's namespace "team". */
static void write_kubeconfig(const struct server *s, const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n"
            "    server: %s\n    certificate-authority: %s\nusers:\n- name: u\n  user:\n"
            "    token: t0k3n\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n"
            "    namespace: team\n",
            tls_server_url(s->tls), egress_tls_ca_path(g_ca));
    fclose(f);
}

static struct backend *open_backend(struct server *s)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/kubeconfig", g_dir);
    write_kubeconfig(s, path);
    struct kube_options o = {.kubeconfig = path};
    struct err err = ERR_INIT;
    struct backend *b = kube_backend_open(&o, &err);
    if (!b)
        fail_msg("open: %s", err_msg(&err));
    return b;
}

static const char *const CMD[] = {"python3", "-u", "/runner.py", NULL};

static struct backend_spec spec(void)
{
    return (struct backend_spec){.image = "img:1",
                                 .cmd = CMD,
                                 .uid = 10001,
                                 .gid = 10001,
                                 .workdir = "/work",
                                 .workdir_mb = 64,
                                 .memory_bytes = 256LL << 20,
                                 .nano_cpus = 1000000000LL,
                                 .pids_limit = 64,
                                 .instance = "i1"};
}

static int group_setup(void **state)
{
    (void)state;
    return tls_ca_setup(g_dir, &g_ca);
}

static int group_teardown(void **state)
{
    (void)state;
    return tls_ca_teardown(g_dir, g_ca);
}

static void test_create_start_and_streams(void **state)
{
    (void)state;
    struct server s = {.is = POD_RUNNING};
    s.tls = tls_server_start(g_ca, handle, &s);
    assert_non_null(s.tls);
    struct backend *b = open_backend(&s);
    assert_string_equal(backend_kind(b), "kubernetes");
    assert_non_null(strstr(backend_address_source(b), "--kubeconfig"));
    struct backend_spec sp = spec();
    char *id = NULL;
    struct backend_pending *pending = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(backend_create(b, &sp, false, 0, &id, &pending, &err), 0);
    /* "sbx-" and 16 hex digits, and the gate before the spec's command
     * (its $ doubled: the kubelet reads $$ as $). */
    assert_int_equal(strlen(id), 20);
    assert_int_equal(strspn(id + 4, "0123456789abcdef"), 16);
    assert_non_null(strstr(s.body, "\"command\":[\"\\/bin\\/sh\",\"-c\",\"ulimit -c 0 && read -r "
                                   "_ && exec \\\"$$@\\\"\",\"mcpsbx-gate\",\"python3\",\"-u\","));
    assert_non_null(strstr(s.body, "\"namespace\":\"team\""));
    free(id);
    struct backend_stream *st = NULL;
    assert_int_equal(backend_start(b, "sbx-1", pending, 0, -1, &st, &err), 0);
    assert_non_null(st);
    backend_stream_close(st);
    tls_server_stop(s.tls);
    assert_string_equal(s.gate, "\n");
    backend_free(b);
}

static void test_kill_reads_as_killed(void **state)
{
    (void)state;
    struct server s = {.is = POD_RUNNING};
    s.tls = tls_server_start(g_ca, handle, &s);
    struct backend *b = open_backend(&s);
    struct err err = ERR_INIT;
    struct backend_state st;
    assert_int_equal(backend_inspect(b, "sbx-1", &st, &err), 0);
    assert_true(st.running);
    assert_int_equal(backend_kill(b, "sbx-1", &err), 0);
    assert_int_equal(backend_inspect(b, "sbx-1", &st, &err), 0);
    assert_false(st.running);
    assert_int_equal(st.exit_code, 137);
    assert_int_equal(backend_wait(b, "sbx-1", 5000, &st, &err), 0);
    assert_int_equal(st.exit_code, 137);
    assert_int_equal(backend_kill(b, "sbx-1", &err), 0);   /* gone already: not an error */
    assert_int_equal(backend_remove(b, "sbx-1", &err), 0); /* the same */
    /* Removed: no longer remembered as killed. */
    assert_int_equal(backend_inspect(b, "sbx-1", &st, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    err_clear(&err);
    tls_server_stop(s.tls);
    backend_free(b);
}

static void test_evicted_is_an_error_oom_a_state(void **state)
{
    (void)state;
    struct server s = {.is = POD_EVICTED};
    s.tls = tls_server_start(g_ca, handle, &s);
    struct backend *b = open_backend(&s);
    struct err err = ERR_INIT;
    struct backend_state st;
    assert_int_equal(backend_wait(b, "sbx-1", 5000, &st, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err_msg(&err), "evicted"));
    assert_non_null(strstr(err_msg(&err), "low on resource"));
    err_clear(&err);
    struct backend_stream *out = NULL;
    assert_int_equal(backend_start(b, "sbx-1", NULL, 0, -1, &out, &err), -1);
    assert_non_null(strstr(err_msg(&err), "evicted"));
    assert_null(out);
    err_clear(&err);
    s.is = POD_OOM;
    assert_int_equal(backend_wait(b, "sbx-1", 5000, &st, &err), 0);
    assert_true(st.oom_killed);
    assert_int_equal(st.exit_code, 137);
    tls_server_stop(s.tls);
    backend_free(b);
}

static void test_list_version_egress(void **state)
{
    (void)state;
    struct server s = {.is = POD_RUNNING};
    s.tls = tls_server_start(g_ca, handle, &s);
    struct backend *b = open_backend(&s);
    struct err err = ERR_INIT;
    struct backend_container *l = NULL;
    size_t n = 0;
    assert_int_equal(backend_list(b, 0, &l, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(l[0].id, "sbx-1");
    assert_string_equal(l[0].instance, "i1");
    assert_int_equal(l[0].uid, 10001);
    backend_container_list_free(l, n);
    assert_non_null(strstr(s.reqs[0], "labelSelector=mcp-sandboxd.io%2Fmanaged%3D1"));
    char *name = NULL, *version = NULL;
    assert_int_equal(backend_version(b, &name, &version, &err), 0);
    assert_string_equal(name, "Kubernetes");
    assert_string_equal(version, "v1.31.2");
    free(name);
    free(version);
    assert_int_equal(backend_ping(b, &err), 0);
    struct backend_spec sp = spec();
    assert_int_equal(backend_egress_check(b, &sp, &err), 0);
    sp.egress = true;
    assert_int_equal(backend_egress_check(b, &sp, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    err_clear(&err);
    assert_false(backend_weights_possible(b));
    assert_false(backend_host_dirs_possible(b));
    sp.egress = false;
    /* The rlimits a Pod cannot state, set by the gate. */
    sp.nofile = 256;
    sp.nproc = 64;
    sp.fsize = 1000;
    char *shown = backend_describe_create(b, &sp);
    assert_non_null(strstr(shown, "ulimit -c 0 && ulimit -n 256 && { ulimit -p 64 || ulimit -u "
                                  "64; } 2>/dev/null && ulimit -f 2 && read -r _ && exec"));
    assert_non_null(strstr(shown, "\"readOnlyRootFilesystem\":true"));
    free(shown);
    tls_server_stop(s.tls);
    backend_free(b);
}

static void refused(const struct kube_options *o, enum err_code code, const char *says)
{
    struct err err = ERR_INIT;
    assert_null(kube_backend_open(o, &err));
    assert_int_equal(err.code, code);
    if (!strstr(err_msg(&err), says))
        fail_msg("'%s' does not say '%s'", err_msg(&err), says);
    err_clear(&err);
}

static void test_configurations_refused(void **state)
{
    (void)state;
    struct server s = {0};
    s.tls = tls_server_start(g_ca, handle, &s);
    char path[128];
    snprintf(path, sizeof(path), "%s/kubeconfig", g_dir);
    write_kubeconfig(&s, path);
    refused(&(struct kube_options){.home = "/nonexistent"}, ERR_NOT_FOUND, "--kubeconfig");
    refused(&(struct kube_options){.kubeconfig_env = "/a:/b"}, ERR_INVALID, "several");
    refused(&(struct kube_options){.kubeconfig = path, .namespace = "Not_A_Namespace"}, ERR_INVALID,
            "--kube-namespace");
    refused(&(struct kube_options){.kubeconfig = path, .seccomp_profile = "/etc/x.json"},
            ERR_INVALID, "--kube-seccomp-profile");
    refused(&(struct kube_options){.kubeconfig = path, .seccomp_profile = "../x.json"}, ERR_INVALID,
            "--kube-seccomp-profile");
    refused(&(struct kube_options){.kubeconfig = path, .context = "nope"}, ERR_INVALID, "nope");
    /* KUBECONFIG when no option names a file; the option's namespace wins. */
    struct err err = ERR_INIT;
    struct backend *b = kube_backend_open(
        &(struct kube_options){.kubeconfig_env = path, .namespace = "other"}, &err);
    assert_non_null(b);
    assert_non_null(strstr(backend_address_source(b), "KUBECONFIG"));
    assert_string_equal(backend_address(b), tls_server_url(s.tls));
    backend_free(b);
    tls_server_stop(s.tls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_start_and_streams),
        cmocka_unit_test(test_kill_reads_as_killed),
        cmocka_unit_test(test_evicted_is_an_error_oom_a_state),
        cmocka_unit_test(test_list_version_egress),
        cmocka_unit_test(test_configurations_refused),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
