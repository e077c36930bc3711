/* The Pod requests the Kubernetes backend makes, on kube_api: create,
 * read, delete, list by label and wait on a watch. Names and namespaces
 * are checked (pod_name_ok) before they go into a path; a label selector
 * is percent-encoded. Answers are read strictly (pod_state.h); a refusal
 * is kube_api_refusal's error, naming the pod. */
#ifndef MCPSBX_KUBERNETES_KUBE_PODS_H
#define MCPSBX_KUBERNETES_KUBE_PODS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "backend/backend.h"
#include "backend/kubernetes/kube_api.h"
#include "backend/kubernetes/pod_state.h"
#include "base/err.h"

/* Pods asked for per page of a list (the API's limit). */
#define KUBE_PODS_PAGE 500
/* The most pods a list gathers over its pages: a daemon's sweep never
 * needs more, and a namespace with more is refused, not half-read. */
#define KUBE_PODS_LIST_MAX 10000

/* Creates the Pod pod (pod_spec_new's) in namespace ns. A name already
 * taken is ERR_ENGINE with the API's AlreadyExists message. */
int kube_pod_create(struct kube_api *a, const char *ns, json_object *pod, long timeout_ms,
                    struct err *err);

/* Reads Pod name's state. ERR_NOT_FOUND when there is none. */
int kube_pod_get(struct kube_api *a, const char *ns, const char *name, long timeout_ms,
                 struct pod_state *out, struct err *err);

/* Deletes Pod name at once (grace period 0). ERR_NOT_FOUND when there is
 * none. */
int kube_pod_delete(struct kube_api *a, const char *ns, const char *name, long timeout_ms,
                    struct err *err);

/* The Pods of ns whose labels match selector ("k=v,k2=v2"), every page,
 * as containers (pod_container_read); an item that is not a Pod's shape
 * is skipped. Caller frees with backend_container_list_free. */
int kube_pod_list(struct kube_api *a, const char *ns, const char *selector, long timeout_ms,
                  struct backend_container **out, size_t *n, struct err *err);

/* Decides, from a state, whether a wait is over. */
typedef bool (*kube_pod_done_fn)(const struct pod_state *st);

/* Waits for Pod name to reach a state done() accepts: reads it, then
 * watches it from that version, reading it again when a watch ends early
 * (the API server ends watches on its own). *out is the state done()
 * accepted. ERR_TIMEOUT past timeout_ms; ERR_NOT_FOUND when the Pod is
 * deleted meanwhile; stop (may be NULL) ends the wait with
 * ERR_CANCELLED. */
int kube_pod_wait(struct kube_api *a, const char *ns, const char *name, kube_pod_done_fn done,
                  long timeout_ms, const atomic_bool *stop, struct pod_state *out, struct err *err);

/* What one watch event line says of a Pod. */
enum kube_pod_event {
    KUBE_POD_STATE,   /* ADDED or MODIFIED: *out holds its state */
    KUBE_POD_DELETED, /* the Pod is gone */
    KUBE_POD_ERROR,   /* the watch failed (a Status; 410: watch again) */
    KUBE_POD_OTHER,   /* a BOOKMARK, or a type not known: nothing */
    KUBE_POD_BAD,     /* not an event, or not a Pod's shape: err says */
};

/* Reads a watch event line[0..n) (the API's {"type", "object"}). Pure. */
enum kube_pod_event kube_pods_event(const char *line, size_t n, struct pod_state *out,
                                    struct err *err);

/* selector percent-encoded for a query into out (NUL-terminated); -1
 * when it does not fit in cap. Pure. */
int kube_pods_escape(const char *s, char *out, size_t cap);

#endif
