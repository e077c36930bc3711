/* Where the Kubernetes API is and how the daemon proves who it is: from
 * the pod it runs in (the service account's token and CA, and
 * KUBERNETES_SERVICE_HOST and _PORT), or from a kubeconfig file (its
 * current context, or the one named: the cluster's server and CA, the
 * user's token or client certificate, the context's namespace).
 *
 * Only what libcurl can use without running anything is taken: a user
 * with an exec or auth-provider plugin, or a cluster that skips TLS
 * verification, is refused by name rather than half-used. A file is
 * read whole, KUBE_CONFIG_MAX at most. */
#ifndef MCPSBX_KUBERNETES_KUBE_CONFIG_H
#define MCPSBX_KUBERNETES_KUBE_CONFIG_H

#include <stddef.h>

#include "base/err.h"

#define KUBE_CONFIG_MAX (1u << 20)
/* The longest token file read (a service account's JWT is 1 to 2 KiB). */
#define KUBE_TOKEN_MAX (64u * 1024u)
/* The longest namespace file read (a name is 63 bytes at most). */
#define KUBE_NAME_TEXT_MAX 256u
/* Where a pod finds its service account's files. */
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Each NULL when not given. PEM texts are the decoded *-data members. */
struct kube_config {
    char *server;     /* "https://host:port" */
    char *ca_file;    /* the cluster's CA, a file */
    char *ca_pem;     /* or inline */
    char *token;      /* a bearer token */
    char *token_file; /* where it was read, to read again as it rotates */
    char *cert_file;  /* a client certificate and its key: files */
    char *key_file;
    char *cert_pem; /* or inline */
    char *key_pem;
    char *namespace;
};

/* From the pod's own service account: sa_dir (KUBE_SA_DIR) and the
 * environment's KUBERNETES_SERVICE_HOST and _PORT. -1 with err
 * (ERR_NOT_FOUND) when not in a pod. */
int kube_config_in_cluster(const char *sa_dir, const char *host, const char *port,
                           struct kube_config *out, struct err *err);

/* From a kubeconfig's text; context NULL: its current-context. Relative
 * file names are taken from dir (the file's own directory). -1 with err
 * (ERR_INVALID) naming what is missing or refused. */
int kube_config_parse(const char *text, size_t n, const char *context, const char *dir,
                      struct kube_config *out, struct err *err);

/* kube_config_parse of the file at path. */
int kube_config_load(const char *path, const char *context, struct kube_config *out,
                     struct err *err);

void kube_config_free(struct kube_config *c);

/* A token file's text without its line end (caller frees), KUBE_TOKEN_MAX
 * at most, or NULL with err; what names the file in messages. */
char *kube_config_read_token(const char *path, const char *what, struct err *err);

#endif
