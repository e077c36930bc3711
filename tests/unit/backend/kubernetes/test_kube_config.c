/* backend/kubernetes/kube_config.c and yaml_json.c: a kubeconfig as
 * kubectl and kind write it read into where the API is and who the daemon
 * is; what the daemon cannot use refused by name; the in-cluster files;
 * YAML that could blow up (aliases, nesting, more documents) refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/kubernetes/kube_config.h"
#include "backend/kubernetes/yaml_json.h"

/* base64 of "CA\n", "CERT\n" and "KEY\n". */
static const char KIND[] = "apiVersion: v1\n"
                           "kind: Config\n"
                           "clusters:\n"
                           "- cluster:\n"
                           "    certificate-authority-data: Q0EK\n"
                           "    server: https://127.0.0.1:6443\n"
                           "  name: kind-kind\n"
                           "- cluster:\n"
                           "    certificate-authority: certs/other-ca.crt\n"
                           "    server: https://other.example:443\n"
                           "  name: other\n"
                           "contexts:\n"
                           "- context:\n"
                           "    cluster: kind-kind\n"
                           "    user: kind-kind\n"
                           "    namespace: sandboxes\n"
                           "  name: kind-kind\n"
                           "- context: {cluster: other, user: robot}\n"
                           "  name: other\n"
                           "- context: {cluster: other, user: plugin}\n"
                           "  name: plugin\n"
                           "- context: {cluster: other, user: halfcert}\n"
                           "  name: halfcert\n"
                           "- context: {cluster: nowhere, user: robot}\n"
                           "  name: nowhere\n"
                           "current-context: kind-kind\n"
                           "preferences: {}\n"
                           "users:\n"
                           "- name: kind-kind\n"
                           "  user:\n"
                           "    client-certificate-data: Q0VSVAo=\n"
                           "    client-key-data: S0VZCg==\n"
                           "- name: robot\n"
                           "  user:\n"
                           "    token: \"abc.def\"\n"
                           "- name: plugin\n"
                           "  user:\n"
                           "    exec:\n"
                           "      apiVersion: client.authentication.k8s.io/v1\n"
                           "      command: aws\n"
                           "- name: halfcert\n"
                           "  user:\n"
                           "    client-certificate: me.crt\n";

static void test_kubeconfig(void **state)
{
    (void)state;
    struct kube_config c;
    struct err err = ERR_INIT;
    if (kube_config_parse(KIND, strlen(KIND), NULL, "/etc/kube", &c, &err) < 0)
        fail_msg("%s", err_msg(&err));
    assert_string_equal(c.server, "https://127.0.0.1:6443");
    assert_string_equal(c.ca_pem, "CA\n");
    assert_null(c.ca_file);
    assert_string_equal(c.cert_pem, "CERT\n");
    assert_string_equal(c.key_pem, "KEY\n");
    assert_null(c.token);
    assert_string_equal(c.namespace, "sandboxes");
    kube_config_free(&c);

    /* Another context: a token, and a CA file relative to the file's
     * directory. */
    assert_int_equal(kube_config_parse(KIND, strlen(KIND), "other", "/etc/kube", &c, &err), 0);
    assert_string_equal(c.server, "https://other.example:443");
    assert_string_equal(c.ca_file, "/etc/kube/certs/other-ca.crt");
    assert_string_equal(c.token, "abc.def");
    assert_null(c.namespace);
    kube_config_free(&c);

    static const struct {
        const char *context, *needle;
    } bad[] = {
        {"plugin", "'exec'"},
        {"halfcert", "needs its key"},
        {"nowhere", "names no cluster"},
        {"absent", "no context 'absent'"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(kube_config_parse(KIND, strlen(KIND), bad[i].context, "/", &c, &err), -1);
        assert_int_equal(err.code, ERR_INVALID);
        if (!strstr(err_msg(&err), bad[i].needle))
            fail_msg("'%s' does not say %s", err_msg(&err), bad[i].needle);
        err_clear(&err);
        assert_null(c.server);
    }
}

static void refused(const char *text, const char *needle)
{
    struct kube_config c;
    struct err err = ERR_INIT;
    assert_int_equal(kube_config_parse(text, strlen(text), NULL, "/", &c, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    if (!strstr(err_msg(&err), needle))
        fail_msg("'%s' does not say %s", err_msg(&err), needle);
    err_clear(&err);
}

static void test_cluster_rules(void **state)
{
    (void)state;
    static const char base[] =
        "contexts: [{name: c, context: {cluster: k, user: u}}]\ncurrent-context: c\n"
        "users: [{name: u, user: {token: t}}]\n";
    char text[512];
    snprintf(text, sizeof(text),
             "%sclusters: [{name: k, cluster: {server: 'https://h', "
             "insecure-skip-tls-verify: true}}]\n",
             base);
    refused(text, "skips TLS verification");
    /* Every YAML 1.1 spelling of true, as client-go reads them. */
    static const char *const trues[] = {"True", "YES", "on", "y"};
    for (size_t i = 0; i < sizeof(trues) / sizeof(trues[0]); i++) {
        snprintf(text, sizeof(text),
                 "%sclusters: [{name: k, cluster: {server: 'https://h', "
                 "insecure-skip-tls-verify: %s}}]\n",
                 base, trues[i]);
        refused(text, "skips TLS verification");
    }
    snprintf(text, sizeof(text), "%sclusters: [{name: k, cluster: {server: 'http://h'}}]\n", base);
    refused(text, "https URL");
    snprintf(text, sizeof(text),
             "%sclusters: [{name: k, cluster: {server: 'https://h', "
             "certificate-authority-data: 'not base64!'}}]\n",
             base);
    refused(text, "not base64");
    refused("", "no context");
    refused("users: [\n", "line");
}

static void test_yaml_limits(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"a: &x [1, 2]\nb: *x\n", "aliases"},
        {"a: 1\n---\nb: 2\n", "more than one document"},
        {"? [1, 2]\n: x\n", "not a plain value"},
        {"a: [\n", "line 2"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_null(yaml_json_parse(bad[i].text, strlen(bad[i].text), "t", &err));
        assert_int_equal(err.code, ERR_INVALID);
        if (!strstr(err_msg(&err), bad[i].needle))
            fail_msg("%s: '%s' does not say %s", bad[i].text, err_msg(&err), bad[i].needle);
        err_clear(&err);
    }
    char deep[4 * YAML_JSON_DEPTH + 8];
    size_t k = 0;
    for (int i = 0; i <= YAML_JSON_DEPTH; i++)
        deep[k++] = '[';
    deep[k] = '\0';
    assert_null(yaml_json_parse(deep, k, "t", &err));
    assert_non_null(strstr(err_msg(&err), "nested too deep"));
    err_clear(&err);

    /* Scalars are strings; the shapes are kept. */
    static const char ok[] = "n: 3\nlist: [a, {b: true}]\nempty:\n";
    json_object *o = yaml_json_parse(ok, strlen(ok), "t", &err);
    assert_non_null(o);
    assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                        "{\"n\":\"3\",\"list\":[\"a\",{\"b\":\"true\"}],\"empty\":\"\"}");
    json_object_put(o);
}

static void put(const char *dir, const char *name, const char *text)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_in_cluster(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_kube_config.XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct kube_config c;
    struct err err = ERR_INIT;
    assert_int_equal(kube_config_in_cluster(dir, NULL, "443", &c, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    err_clear(&err);
    /* No token file. */
    assert_int_equal(kube_config_in_cluster(dir, "10.96.0.1", "443", &c, &err), -1);
    err_clear(&err);

    put(dir, "token", "eyJhbGciOi.token\n");
    put(dir, "namespace", "sandboxes");
    assert_int_equal(kube_config_in_cluster(dir, "10.96.0.1", "443", &c, &err), 0);
    assert_string_equal(c.server, "https://10.96.0.1:443");
    assert_string_equal(c.token, "eyJhbGciOi.token");
    assert_string_equal(c.namespace, "sandboxes");
    char ca[600];
    snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
    assert_string_equal(c.ca_file, ca);
    /* The token is read again from its file as the kubelet rotates it. */
    snprintf(ca, sizeof(ca), "%s/token", dir);
    assert_string_equal(c.token_file, ca);
    kube_config_free(&c);
    assert_int_equal(kube_config_in_cluster(dir, "fd00::1", "6443", &c, &err), 0);
    assert_string_equal(c.server, "https://[fd00::1]:6443");
    kube_config_free(&c);

    /* A token file over its cap, or empty, is refused. */
    char *big = malloc(KUBE_TOKEN_MAX + 2);
    memset(big, 'x', KUBE_TOKEN_MAX + 1);
    big[KUBE_TOKEN_MAX + 1] = '\0';
    put(dir, "token", big);
    free(big);
    assert_int_equal(kube_config_in_cluster(dir, "10.96.0.1", "443", &c, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    assert_null(c.server);
    err_clear(&err);
    put(dir, "token", "\n");
    assert_int_equal(kube_config_in_cluster(dir, "10.96.0.1", "443", &c, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    err_clear(&err);

    /* A kubeconfig file, with its directory for relative names. */
    put(dir, "config", KIND);
    char path[600];
    snprintf(path, sizeof(path), "%s/config", dir);
    assert_int_equal(kube_config_load(path, "other", &c, &err), 0);
    snprintf(ca, sizeof(ca), "%s/certs/other-ca.crt", dir);
    assert_string_equal(c.ca_file, ca);
    kube_config_free(&c);
    assert_int_equal(kube_config_load("/nonexistent/config", NULL, &c, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    err_clear(&err);

    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubeconfig),
        cmocka_unit_test(test_cluster_rules),
        cmocka_unit_test(test_yaml_limits),
        cmocka_unit_test(test_in_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
