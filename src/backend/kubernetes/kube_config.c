#include "backend/kubernetes/kube_config.h"

#include <errno.h>
#include <json-c/json.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/kubernetes/yaml_json.h"
#include "base/buf.h"
#include "base/codec.h"
#include "base/json.h"
#include "base/util.h"

/* Drops the newlines a file's text may end in (a header value must not). */
static void chomp(char *s, size_t *n)
{
    while (*n > 0 && (s[*n - 1] == '\n' || s[*n - 1] == '\r'))
        s[--*n] = '\0';
}

/* path's text, cap bytes at most (caller frees), or NULL with err. */
static char *read_text(const char *path, const char *what, size_t cap, size_t *len, struct err *err)
{
    FILE *fp = fopen(path, "re");
    if (!fp) {
        err_set(err, ERR_NOT_FOUND, "%s %s: %s", what, path, strerror(errno));
        return NULL;
    }
    char *text = xmalloc(cap + 1);
    size_t n = fread(text, 1, cap + 1, fp);
    bool bad = ferror(fp) != 0;
    fclose(fp);
    if (bad || n > cap) {
        if (bad)
            err_set(err, ERR_INVALID, "%s %s: cannot be read", what, path);
        else
            err_set(err, ERR_TOO_BIG, "%s %s: is larger than %zu bytes", what, path, cap);
        free(text);
        return NULL;
    }
    text[n] = '\0';
    *len = n;
    return text;
}

char *kube_config_read_token(const char *path, const char *what, struct err *err)
{
    size_t n = 0;
    char *token = read_text(path, what, KUBE_TOKEN_MAX, &n, err);
    if (!token)
        return NULL;
    chomp(token, &n);
    if (n == 0 || strlen(token) != n) {
        err_set(err, ERR_INVALID, "%s %s: %s", what, path,
                n == 0 ? "is empty" : "holds a NUL byte");
        free(token);
        return NULL;
    }
    return token;
}

int kube_config_in_cluster(const char *sa_dir, const char *host, const char *port,
                           struct kube_config *out, struct err *err)
{
    *out = (struct kube_config){0};
    if (!host || !*host || !port || !*port)
        return err_set(err, ERR_NOT_FOUND,
                       "not in a Kubernetes pod (KUBERNETES_SERVICE_HOST and _PORT are not set)");
    out->token_file = xasprintf("%s/token", sa_dir);
    out->token = kube_config_read_token(out->token_file, "the service account's token", err);
    if (!out->token) {
        kube_config_free(out);
        return -1;
    }
    out->ca_file = xasprintf("%s/ca.crt", sa_dir);
    /* IPv6 literals go in brackets in a URL. */
    bool v6 = strchr(host, ':') != NULL;
    out->server = xasprintf("https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
    char *path = xasprintf("%s/namespace", sa_dir);
    struct err ignored = ERR_INIT;
    size_t n = 0;
    out->namespace = read_text(path, "namespace", KUBE_NAME_TEXT_MAX, &n, &ignored);
    if (out->namespace)
        chomp(out->namespace, &n);
    err_clear(&ignored);
    free(path);
    return 0;
}

/* The entry named name in list (kubeconfig's [{name, KEY: {...}}]), its
 * KEY member; NULL when there is none. */
static json_object *named(json_object *root, const char *list, const char *key, const char *name)
{
    json_object *a = NULL;
    if (!json_object_object_get_ex(root, list, &a) || !json_object_is_type(a, json_type_array))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(a); i++) {
        json_object *e = json_object_array_get_idx(a, i);
        const char *n = json_get_string(e, "name", NULL);
        json_object *v = NULL;
        if (n && strcmp(n, name) == 0 && json_object_object_get_ex(e, key, &v) &&
            json_object_is_type(v, json_type_object))
            return v;
    }
    return NULL;
}

static char *text_of(json_object *o, const char *key)
{
    size_t n = 0;
    const char *s = json_get_string(o, key, &n);
    return s && n ? xstrndup(s, n) : NULL;
}

/* A file member, made absolute against dir. */
static char *file_of(json_object *o, const char *key, const char *dir)
{
    char *f = text_of(o, key);
    if (!f || f[0] == '/' || !dir)
        return f;
    char *abs = xasprintf("%s/%s", dir, f);
    free(f);
    return abs;
}

/* A *-data member decoded; -1 with err when it is not base64. */
static int data_of(json_object *o, const char *key, char **out, struct err *err)
{
    size_t n = 0;
    const char *s = json_get_string(o, key, &n);
    *out = NULL;
    if (!s)
        return 0;
    struct buf b;
    buf_init(&b, KUBE_CONFIG_MAX);
    if (codec_base64_decode(s, n, &b) < 0) {
        buf_free(&b);
        return err_set(err, ERR_INVALID, "kubeconfig: %s is not base64", key);
    }
    *out = buf_take(&b, &n);
    return 0;
}

/* A YAML 1.1 true, as client-go's YAML reader takes one (every scalar
 * here is a string). */
static bool yaml_true(const char *s)
{
    static const char *const yes[] = {"true", "yes", "on", "y"};
    for (size_t i = 0; s && i < ARRAY_SIZE(yes); i++)
        if (strcasecmp(s, yes[i]) == 0)
            return true;
    return false;
}

static int take_cluster(json_object *c, const char *dir, struct kube_config *out, struct err *err)
{
    const char *skip = json_get_string(c, "insecure-skip-tls-verify", NULL);
    if (yaml_true(skip))
        return err_set(err, ERR_INVALID,
                       "kubeconfig: the cluster skips TLS verification; "
                       "the daemon does not");
    out->server = text_of(c, "server");
    if (!out->server || strncmp(out->server, "https://", 8) != 0)
        return err_set(err, ERR_INVALID, "kubeconfig: the cluster's server must be an https URL");
    out->ca_file = file_of(c, "certificate-authority", dir);
    return data_of(c, "certificate-authority-data", &out->ca_pem, err);
}

static int take_user(json_object *u, const char *dir, struct kube_config *out, struct err *err)
{
    static const char *const plugins[] = {"exec", "auth-provider", "username", "password"};
    for (size_t i = 0; u && i < ARRAY_SIZE(plugins); i++)
        if (json_object_object_get_ex(u, plugins[i], NULL))
            return err_set(err, ERR_INVALID,
                           "kubeconfig: the user authenticates with '%s', which the daemon does "
                           "not run; give it a token or a client certificate",
                           plugins[i]);
    out->token = text_of(u, "token");
    if (!out->token) {
        out->token_file = file_of(u, "tokenFile", dir);
        if (out->token_file) {
            out->token = kube_config_read_token(out->token_file, "kubeconfig: the token file", err);
            if (!out->token)
                return -1;
        }
    }
    out->cert_file = file_of(u, "client-certificate", dir);
    out->key_file = file_of(u, "client-key", dir);
    if (data_of(u, "client-certificate-data", &out->cert_pem, err) < 0 ||
        data_of(u, "client-key-data", &out->key_pem, err) < 0)
        return -1;
    bool cert = out->cert_file || out->cert_pem, key = out->key_file || out->key_pem;
    if (cert != key)
        return err_set(err, ERR_INVALID, "kubeconfig: a client certificate needs its key");
    if (!out->token && !cert)
        return err_set(err, ERR_INVALID,
                       "kubeconfig: the user has neither a token nor a "
                       "client certificate");
    return 0;
}

int kube_config_parse(const char *text, size_t n, const char *context, const char *dir,
                      struct kube_config *out, struct err *err)
{
    *out = (struct kube_config){0};
    json_object *root = yaml_json_parse(text, n, "kubeconfig", err);
    if (!root)
        return -1;
    int rc = -1;
    const char *name = context ? context : json_get_string(root, "current-context", NULL);
    json_object *ctx = name ? named(root, "contexts", "context", name) : NULL;
    if (!ctx) {
        err_set(err, ERR_INVALID, "kubeconfig: no context '%.100s'", name ? name : "(current)");
        goto out;
    }
    const char *cluster = json_get_string(ctx, "cluster", NULL);
    const char *user = json_get_string(ctx, "user", NULL);
    json_object *c = cluster ? named(root, "clusters", "cluster", cluster) : NULL;
    json_object *u = user ? named(root, "users", "user", user) : NULL;
    if (!c || !u) {
        err_set(err, ERR_INVALID, "kubeconfig: context '%.100s' names no %s", name,
                c ? "user" : "cluster");
        goto out;
    }
    if (take_cluster(c, dir, out, err) < 0 || take_user(u, dir, out, err) < 0)
        goto out;
    out->namespace = text_of(ctx, "namespace");
    rc = 0;
out:
    json_object_put(root);
    if (rc < 0)
        kube_config_free(out);
    return rc;
}

int kube_config_load(const char *path, const char *context, struct kube_config *out,
                     struct err *err)
{
    *out = (struct kube_config){0};
    size_t n = 0;
    char *text = read_text(path, "kubeconfig", KUBE_CONFIG_MAX, &n, err);
    if (!text)
        return -1;
    char *copy = xstrdup(path);
    int rc = kube_config_parse(text, n, context, dirname(copy), out, err);
    free(copy);
    free(text);
    return rc;
}

void kube_config_free(struct kube_config *c)
{
    free(c->server);
    free(c->ca_file);
    free(c->ca_pem);
    free(c->token);
    free(c->token_file);
    free(c->cert_file);
    free(c->key_file);
    free(c->cert_pem);
    free(c->key_pem);
    free(c->namespace);
    *c = (struct kube_config){0};
}
