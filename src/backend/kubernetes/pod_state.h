/* What a Pod object (a GET's answer, a list's item, a watch event's
 * object) says of its sandbox: running, how it ended, and why the
 * cluster ended it or could not start it. An eviction, a preemption, a
 * deadline or an image that cannot be pulled is a reason the caller
 * reports as an error, never one it retries in silence.
 *
 * The object comes from the API server: read strictly (a member of the
 * wrong type is a protocol error), its texts capped and made printable
 * before anyone logs them. */
#ifndef MCPSBX_KUBERNETES_POD_STATE_H
#define MCPSBX_KUBERNETES_POD_STATE_H

#include <json-c/json.h>

#include "backend/backend.h"
#include "base/err.h"

/* Room for a reason and the API's message with it. */
#define POD_REASON_MAX 200

struct pod_state {
    struct backend_state st; /* pid is always 0: the pod's node is not this host */
    bool ended;              /* the container terminated, or the pod failed */
    bool no_image;           /* reason says its image cannot be pulled or is no name */
    /* Empty, or why the cluster ended the pod or cannot start its
     * container, e.g. "evicted: The node was low on resource: memory." */
    char reason[POD_REASON_MAX];
};

/* Reads pod (the Pod's JSON; the container named POD_CONTAINER) into
 * *out. -1 with err (ERR_PROTOCOL) when the object is not a Pod's shape. */
int pod_state_read(json_object *pod, struct pod_state *out, struct err *err);

/* A listed Pod as the sweep sees a container: its name (the id the
 * backend's operations take), creationTimestamp and marks (pod_spec.h).
 * -1 with err (ERR_PROTOCOL) when it has no name Kubernetes would have
 * given; out's strings are the caller's (backend_container_list_free). */
int pod_container_read(json_object *pod, struct backend_container *out, struct err *err);

/* An RFC 3339 time as the API server writes it ("2026-11-28T20:00:00Z",
 * seconds, UTC) in unix seconds; 0 for anything else. */
long long pod_time(const char *s, size_t n);

#endif
