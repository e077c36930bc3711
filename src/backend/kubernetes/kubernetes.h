/* The Kubernetes backend: the backend operations (backend/backend.h) as
 * Pods of one namespace, through the cluster's API server.
 *
 * A sandbox is a Pod (pod_spec.c: the hardening) named "sbx-" and 16
 * random hex digits, that name its id. The cluster starts a Pod by
 * itself once it is created, so start waits for it to run and attaches
 * to it (kube_stream.c). An attach sees only what is written after it
 * connects, so a Pod runs a gate first: a shell that sets the spec's
 * rlimits (which a Pod cannot state), reads one line of stdin (`read`
 * takes no byte past its line) and execs the command; start sends that
 * line once attached, so nothing the sandbox writes is lost.
 *
 * The API has no signal for a Pod: kill deletes it at once (grace 0; its
 * kubelet kills the container) and the backend remembers, for a while,
 * that it did, so wait and inspect report it killed as a container
 * engine would. An evicted, preempted or deadline-ended Pod, or one whose
 * image cannot be pulled or that cannot be scheduled, is an error of
 * wait or start that says so, never a state that looks like an exit.
 *
 * The backend/kubernetes/ folder: kubernetes.c (this table), kube_config.c
 * (where the API is, and the credential), kube_api.c (HTTPS to it), kube_ws.c
 * (the attach's WebSocket), kube_stream.c (a Pod's streams over it),
 * kube_pods.c (the Pod requests), pod_spec.c (the Pod a sandbox runs as),
 * pod_state.c (what a Pod's status says), yaml_json.c (a kubeconfig's
 * YAML as JSON). */
#ifndef MCPSBX_KUBERNETES_H
#define MCPSBX_KUBERNETES_H

#include "backend/backend.h"

/* The daemon's options the backend reads (borrowed for the call). */
struct kube_options {
    /* A kubeconfig file (--kubeconfig), else KUBECONFIG's, else the
     * pod's own service account when in a cluster, else
     * ~/.kube/config: client-go's order. */
    const char *kubeconfig;
    const char *kubeconfig_env; /* KUBECONFIG: one file */
    const char *service_host;   /* KUBERNETES_SERVICE_HOST, _PORT */
    const char *service_port;
    const char *home; /* HOME */
    const char *context;
    /* The sandboxes' namespace; NULL: the configuration's, else
     * "default". */
    const char *namespace;
    /* The project's seccomp profile as the nodes have it (pod_spec.h);
     * NULL: RuntimeDefault. */
    const char *seccomp_profile;
};

/* NULL with err when no configuration is found or it is refused. Call
 * after curl's global set-up (backends_init). */
struct backend *kube_backend_open(const struct kube_options *o, struct err *err);

#endif
