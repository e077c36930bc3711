/* The Pod a sandbox runs as on Kubernetes (POST
 * /api/v1/namespaces/NS/pods): the hardening every backend promises
 * (backend/backend.h) in the Pod API's terms, the spec's limits and the
 * marks the sweep reads. Kept apart from the code that sends it, as
 * docker/create_body.c is, so it is the one place the hardening is
 * written, read and tested.
 *
 * How each promise is kept:
 *   no network          the pod carries POD_LABEL_SANDBOX, which the
 *                       deny-all NetworkPolicies of deploy/kubernetes/
 *                       select; a spec asking for a network or for the
 *                       egress gateway is refused here
 *   read-only root      readOnlyRootFilesystem, the working directory an
 *                       emptyDir of medium Memory with a sizeLimit
 *   no capabilities     capabilities.drop ALL, allowPrivilegeEscalation
 *                       false, privileged false, runAsNonRoot with the
 *                       spec's uid and gid
 *   system calls        seccompProfile: Localhost naming the project's
 *                       profile where the operator installed it on the
 *                       nodes (pod_spec_opts.seccomp_localhost), else
 *                       RuntimeDefault
 *   an init as PID 1    shareProcessNamespace: the pod's pause process is
 *                       PID 1 and reaps orphans (one container per pod,
 *                       so nothing else is shared)
 *   private IPC         hostIPC, hostPID and hostNetwork false
 *   limits              requests equal to limits for memory, CPU and
 *                       ephemeral storage; /dev/shm an emptyDir of its
 *                       own size; activeDeadlineSeconds from the expiry
 *   nothing from the    automountServiceAccountToken and
 *   cluster             enableServiceLinks false
 * What a Pod cannot say: a per-pod process limit (the kubelet's
 * podPidsLimit holds it, set by the operator), rlimits (the backend's
 * gate sets them: kubernetes.h), and "keep no logs" (the node's runtime
 * logs stdout and stderr, within the pod's ephemeral storage). */
#ifndef MCPSBX_KUBERNETES_POD_SPEC_H
#define MCPSBX_KUBERNETES_POD_SPEC_H

#include <json-c/json.h>

#include "backend/backend.h"
#include "base/err.h"

/* Labels: what list and watch select on. */
#define POD_LABEL_MANAGED  "mcp-sandboxd.io/managed"
#define POD_LABEL_INSTANCE "mcp-sandboxd.io/instance"
#define POD_LABEL_SANDBOX  "mcp-sandboxd.io/sandbox"
/* Annotations: marks read back, in a form labels cannot hold. */
#define POD_NOTE_OWNER   "mcp-sandboxd.io/owner"
#define POD_NOTE_EXPIRES "mcp-sandboxd.io/expires"
#define POD_NOTE_POOL    "mcp-sandboxd.io/pool"
#define POD_NOTE_UID     "mcp-sandboxd.io/uid"

/* The one container's name (attach names it). */
#define POD_CONTAINER "sandbox"
/* Ephemeral storage each pod asks for and is held to: the root is
 * read-only and the working directory is memory, so this is the node's
 * log of the pod's output and little else. */
#define POD_EPHEMERAL_BYTES (64LL << 20)
/* activeDeadlineSeconds of a spec without an expiry. */
#define POD_DEADLINE_DEFAULT_S 86400LL
/* A Kubernetes name: an object's (RFC 1123 subdomain) and a label's. */
#define POD_NAME_MAX       253
#define POD_LABEL_NAME_MAX 63

struct pod_spec_opts {
    const char *name;      /* metadata.name */
    const char *namespace; /* metadata.namespace */
    /* The project's seccomp profile as the nodes have it, relative to
     * the kubelet's seccomp directory; NULL: RuntimeDefault. */
    const char *seccomp_localhost;
    long long now; /* unix seconds, for activeDeadlineSeconds */
};

/* Whether s[0..n) is a name Kubernetes gives objects (an RFC 1123
 * subdomain: labels of [a-z0-9-], 63 at most, joined by '.', at most
 * POD_NAME_MAX in all). */
bool pod_name_ok(const char *s, size_t n);

/* Whether key=value is a label Kubernetes takes: an optional DNS
 * subdomain prefix and "/", a name of at most 63 characters, and a value
 * of at most 63, each alphanumeric at both ends with '-', '_', '.'
 * inside. */
bool pod_label_ok(const char *key, const char *value);

/* The Pod for spec (caller owns), or NULL with err: ERR_INVALID for what
 * this backend cannot give a sandbox (a network, the egress gateway, the
 * host's package directories) and for an operator's label Kubernetes
 * would refuse, naming it. */
json_object *pod_spec_new(const struct backend_spec *spec, const struct pod_spec_opts *o,
                          struct err *err);

#endif
