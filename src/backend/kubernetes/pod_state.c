#include "backend/kubernetes/pod_state.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend/kubernetes/pod_spec.h"
#include "base/json.h"
#include "base/util.h"

/* Waiting reasons that no wait cures: the container will not start. The
 * first NO_IMAGE are its image's. */
static const char *const CANNOT_START[] = {
    "ErrImagePull",      "ImagePullBackOff",           "InvalidImageName",
    "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError",
    "RunContainerError",
};
#define NO_IMAGE 4

/* o's member key: absent (NULL) or of type t; -1 with err otherwise. */
static int member(json_object *o, const char *key, json_type t, json_object **v, struct err *err)
{
    *v = NULL;
    if (!o || !json_object_object_get_ex(o, key, v) || !*v) {
        *v = NULL;
        return 0;
    }
    if (!json_object_is_type(*v, t))
        return err_set(err, ERR_PROTOCOL, "the API server sent a Pod whose '%s' is not a %s", key,
                       json_type_to_name(t));
    return 0;
}

/* Sets out->reason to "what: the API's reason: its message", printable. */
static void say(struct pod_state *out, const char *what, json_object *o)
{
    size_t rl = 0, ml = 0;
    const char *r = json_get_string(o, "reason", &rl);
    const char *m = json_get_string(o, "message", &ml);
    char reason[64] = "", message[POD_REASON_MAX] = "";
    if (r)
        util_printable_ascii(reason, sizeof(reason), r, rl, true);
    if (m)
        util_printable_ascii(message, sizeof(message), m, ml, true);
    snprintf(out->reason, sizeof(out->reason), "%s%s%s%s%s", what, *reason ? ": " : "", reason,
             *message ? ": " : "", message);
}

/* The sandbox container's state, from status.containerStatuses. */
static int read_container(json_object *status, struct pod_state *out, struct err *err)
{
    json_object *list = NULL, *mine = NULL;
    if (member(status, "containerStatuses", json_type_array, &list, err) < 0)
        return -1;
    for (size_t i = 0; list && i < json_object_array_length(list) && !mine; i++) {
        json_object *c = json_object_array_get_idx(list, i);
        const char *name = json_get_string(c, "name", NULL);
        if (name && strcmp(name, POD_CONTAINER) == 0)
            mine = c;
    }
    json_object *state = NULL, *running = NULL, *term = NULL, *waiting = NULL;
    if (member(mine, "state", json_type_object, &state, err) < 0 ||
        member(state, "running", json_type_object, &running, err) < 0 ||
        member(state, "terminated", json_type_object, &term, err) < 0 ||
        member(state, "waiting", json_type_object, &waiting, err) < 0)
        return -1;
    if (term) {
        json_object *code = NULL;
        if (member(term, "exitCode", json_type_int, &code, err) < 0)
            return -1;
        if (!code)
            return err_set(err, ERR_PROTOCOL, "the API server sent a Pod ended without exitCode");
        int64_t v = json_object_get_int64(code);
        out->st.exit_code = v >= 0 && v <= 255 ? (int)v : -1;
        const char *r = json_get_string(term, "reason", NULL);
        out->st.oom_killed = r && strcmp(r, "OOMKilled") == 0;
        out->ended = true;
    } else if (running) {
        out->st.running = true;
    } else if (waiting) {
        const char *r = json_get_string(waiting, "reason", NULL);
        for (size_t i = 0; r && i < ARRAY_SIZE(CANNOT_START); i++) {
            if (strcmp(r, CANNOT_START[i]) != 0)
                continue;
            say(out, "cannot start", waiting);
            out->no_image = i < NO_IMAGE;
        }
    }
    return 0;
}

/* Why the cluster ended the pod or will not place it, from the pod's
 * reason and its conditions. */
static int read_cluster(json_object *status, bool failed, struct pod_state *out, struct err *err)
{
    json_object *conds = NULL;
    if (member(status, "conditions", json_type_array, &conds, err) < 0)
        return -1;
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *type = json_get_string(c, "type", NULL);
        const char *is = json_get_string(c, "status", NULL);
        const char *r = json_get_string(c, "reason", NULL);
        if (!type || !is)
            continue;
        if (strcmp(type, "DisruptionTarget") == 0 && strcmp(is, "True") == 0)
            say(out, r && strstr(r, "Preemption") ? "preempted" : "disrupted", c);
        else if (strcmp(type, "PodScheduled") == 0 && strcmp(is, "False") == 0 && r &&
                 strcmp(r, "Unschedulable") == 0 && !*out->reason)
            say(out, "cannot be scheduled", c);
    }
    const char *r = json_get_string(status, "reason", NULL);
    if (r && strcmp(r, "Evicted") == 0)
        say(out, "evicted", status);
    else if (r && strcmp(r, "DeadlineExceeded") == 0)
        say(out, "past its deadline", status);
    else if (failed && !*out->reason && out->st.exit_code < 0)
        say(out, "failed", status);
    return 0;
}

int pod_state_read(json_object *pod, struct pod_state *out, struct err *err)
{
    *out = (struct pod_state){.st = {.exit_code = -1}};
    if (!pod || !json_object_is_type(pod, json_type_object))
        return err_set(err, ERR_PROTOCOL, "the API server sent a Pod that is not an object");
    json_object *status = NULL;
    if (member(pod, "status", json_type_object, &status, err) < 0)
        return -1;
    const char *phase = json_get_string(status, "phase", NULL);
    bool failed = phase && strcmp(phase, "Failed") == 0;
    if (read_container(status, out, err) < 0 || read_cluster(status, failed, out, err) < 0)
        return -1;
    if (failed || (phase && strcmp(phase, "Succeeded") == 0)) {
        out->ended = true;
        out->st.running = false;
    }
    return 0;
}

long long pod_time(const char *s, size_t n)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
    if (n != sizeof(shape) - 1)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
            return 0;
    int v[6];
    static const size_t at[6] = {0, 5, 8, 11, 14, 17};
    for (size_t k = 0; k < 6; k++) {
        size_t len = k == 0 ? 4 : 2;
        v[k] = 0;
        for (size_t i = 0; i < len; i++)
            v[k] = v[k] * 10 + (s[at[k] + i] - '0');
    }
    if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 || v[5] > 60)
        return 0;
    struct tm tm = {.tm_year = v[0] - 1900,
                    .tm_mon = v[1] - 1,
                    .tm_mday = v[2],
                    .tm_hour = v[3],
                    .tm_min = v[4],
                    .tm_sec = v[5]};
    time_t t = timegm(&tm);
    return t > 0 ? (long long)t : 0;
}

int pod_container_read(json_object *pod, struct backend_container *out, struct err *err)
{
    *out = (struct backend_container){.uid = -1};
    json_object *md = NULL, *labels = NULL, *notes = NULL;
    if (member(pod, "metadata", json_type_object, &md, err) < 0 ||
        member(md, "labels", json_type_object, &labels, err) < 0 ||
        member(md, "annotations", json_type_object, &notes, err) < 0)
        return -1;
    size_t nl = 0, tl = 0;
    const char *name = json_get_string(md, "name", &nl);
    if (!name || !pod_name_ok(name, nl))
        return err_set(err, ERR_PROTOCOL, "the API server listed a Pod without a valid name");
    const char *created = json_get_string(md, "creationTimestamp", &tl);
    struct backend_marks m = {0};
    m.instance = json_get_string(labels, POD_LABEL_INSTANCE, &m.instance_len);
    m.owner = json_get_string(notes, POD_NOTE_OWNER, &m.owner_len);
    m.expires = json_get_string(notes, POD_NOTE_EXPIRES, &m.expires_len);
    m.uid = json_get_string(notes, POD_NOTE_UID, &m.uid_len);
    out->id = xstrndup(name, nl);
    out->created = created ? pod_time(created, tl) : 0;
    backend_container_marks(out, &m);
    return 0;
}
