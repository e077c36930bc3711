#include "backend/kubernetes/pod_spec.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"

/* A name part: 1..max characters, alphanumeric at both ends, '-', '_'
 * and '.' inside (empty allowed only where allow_empty). */
static bool name_ok(const char *s, size_t n, size_t max, bool allow_empty)
{
    if (n == 0)
        return allow_empty;
    if (n > max || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
            return false;
    return true;
}

bool pod_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > POD_NAME_MAX)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.') {
            if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-')
                return false;
            continue;
        }
        if (i == start || s[start] == '-' || s[i - 1] == '-' || i - start > POD_LABEL_NAME_MAX)
            return false;
        start = i + 1;
    }
    return true;
}

bool pod_label_ok(const char *key, const char *value)
{
    const char *slash = strchr(key, '/');
    const char *name = slash ? slash + 1 : key;
    if (slash && !pod_name_ok(key, (size_t)(slash - key)))
        return false;
    return name_ok(name, strlen(name), POD_LABEL_NAME_MAX, false) &&
           name_ok(value, strlen(value), POD_LABEL_NAME_MAX, true);
}

static void add_str(json_object *o, const char *key, const char *value)
{
    json_object_object_add(o, key, json_object_new_string(value));
}

static void add_bool(json_object *o, const char *key, bool value)
{
    json_object_object_add(o, key, json_object_new_boolean(value));
}

static json_object *metadata(const struct backend_spec *spec, const struct pod_spec_opts *o,
                             struct err *err)
{
    json_object *md = json_object_new_object();
    add_str(md, "name", o->name);
    add_str(md, "namespace", o->namespace);
    json_object *labels = json_object_new_object();
    json_object_object_add(md, "labels", labels);
    /* The operator's first, so the daemon's own always win. */
    for (const char *const *p = spec->labels; p && *p; p++) {
        const char *eq = strchr(*p, '=');
        char *key = eq ? xstrndup(*p, (size_t)(eq - *p)) : NULL;
        bool ok = key && pod_label_ok(key, eq + 1);
        if (ok)
            add_str(labels, key, eq + 1);
        free(key);
        if (!ok) {
            err_set(err, ERR_INVALID, "label '%.80s' is not one Kubernetes takes", *p);
            json_object_put(md);
            return NULL;
        }
    }
    add_str(labels, POD_LABEL_MANAGED, "1");
    add_str(labels, POD_LABEL_SANDBOX, "1");
    if (!pod_label_ok(POD_LABEL_INSTANCE, spec->instance)) {
        err_set(err, ERR_INVALID, "instance '%.80s' is not a label value", spec->instance);
        json_object_put(md);
        return NULL;
    }
    add_str(labels, POD_LABEL_INSTANCE, spec->instance);
    json_object *notes = json_object_new_object();
    json_object_object_add(md, "annotations", notes);
    if (spec->owner)
        add_str(notes, POD_NOTE_OWNER, spec->owner);
    if (spec->pool)
        add_str(notes, POD_NOTE_POOL, spec->pool);
    char num[24];
    snprintf(num, sizeof(num), "%u", (unsigned)spec->uid);
    add_str(notes, POD_NOTE_UID, num);
    if (spec->expires > 0) {
        snprintf(num, sizeof(num), "%lld", spec->expires);
        add_str(notes, POD_NOTE_EXPIRES, num);
    }
    return md;
}

/* memory, cpu and ephemeral storage, as the API's quantities. */
static json_object *quantities(const struct backend_spec *spec)
{
    json_object *q = json_object_new_object();
    char v[32];
    snprintf(v, sizeof(v), "%lld", spec->memory_bytes);
    add_str(q, "memory", v);
    /* Millicores, at least one: the API's finest CPU step. */
    long long milli = spec->nano_cpus / 1000000;
    snprintf(v, sizeof(v), "%lldm", milli > 0 ? milli : 1);
    add_str(q, "cpu", v);
    snprintf(v, sizeof(v), "%lld", POD_EPHEMERAL_BYTES);
    add_str(q, "ephemeral-storage", v);
    return q;
}

static json_object *security(const struct backend_spec *spec, const struct pod_spec_opts *o,
                             bool pod)
{
    json_object *sc = json_object_new_object();
    add_bool(sc, "runAsNonRoot", true);
    json_object_object_add(sc, "runAsUser", json_object_new_int64((int64_t)spec->uid));
    json_object_object_add(sc, "runAsGroup", json_object_new_int64((int64_t)spec->gid));
    json_object *sp = json_object_new_object();
    bool own = o->seccomp_localhost && spec->syscalls == BACKEND_SYSCALLS_SANDBOX;
    add_str(sp, "type", own ? "Localhost" : "RuntimeDefault");
    if (own)
        add_str(sp, "localhostProfile", o->seccomp_localhost);
    json_object_object_add(sc, "seccompProfile", sp);
    if (pod)
        return sc;
    add_bool(sc, "allowPrivilegeEscalation", false);
    add_bool(sc, "privileged", false);
    add_bool(sc, "readOnlyRootFilesystem", true);
    json_object *caps = json_object_new_object();
    json_object *drop = json_object_new_array();
    json_object_array_add(drop, json_object_new_string("ALL"));
    json_object_object_add(caps, "drop", drop);
    json_object_object_add(sc, "capabilities", caps);
    return sc;
}

static json_object *memory_dir(const char *name, long long bytes)
{
    json_object *v = json_object_new_object();
    add_str(v, "name", name);
    json_object *ed = json_object_new_object();
    add_str(ed, "medium", "Memory");
    char size[32];
    snprintf(size, sizeof(size), "%lld", bytes);
    add_str(ed, "sizeLimit", size);
    json_object_object_add(v, "emptyDir", ed);
    return v;
}

static json_object *mount(const char *name, const char *path)
{
    json_object *m = json_object_new_object();
    add_str(m, "name", name);
    add_str(m, "mountPath", path);
    return m;
}

/* s as Kubernetes must see it to leave it alone: the kubelet expands
 * $(NAME) in a container's command, args and env values from its
 * environment and reads $$ as $, so every $ is doubled. A runner or a
 * passed-through value holding "$$" or "$(HOME)" reaches the sandbox as
 * it was. */
static json_object *k8s_literal(const char *s)
{
    size_t n = 0;
    for (const char *p = s; *p; p++)
        n += *p == '$' ? 2 : 1;
    char *t = xmalloc(n + 1);
    char *q = t;
    for (const char *p = s; *p; p++) {
        if (*p == '$')
            *q++ = '$';
        *q++ = *p;
    }
    *q = '\0';
    json_object *j = json_object_new_string(t);
    free(t);
    return j;
}

static json_object *container(const struct backend_spec *spec, const struct pod_spec_opts *o)
{
    json_object *c = json_object_new_object();
    add_str(c, "name", POD_CONTAINER);
    add_str(c, "image", spec->image);
    add_str(c, "imagePullPolicy", "IfNotPresent");
    /* command, not args: the image's entrypoint never runs. */
    json_object *cmd = json_object_new_array();
    for (const char *const *p = spec->cmd; p && *p; p++)
        json_object_array_add(cmd, k8s_literal(*p));
    json_object_object_add(c, "command", cmd);
    add_str(c, "workingDir", spec->workdir);
    json_object *env = json_object_new_array();
    for (const char *const *p = spec->env; p && *p; p++) {
        const char *eq = strchr(*p, '=');
        if (!eq)
            continue;
        json_object *e = json_object_new_object();
        char *name = xstrndup(*p, (size_t)(eq - *p));
        add_str(e, "name", name);
        free(name);
        json_object_object_add(e, "value", k8s_literal(eq + 1));
        json_object_array_add(env, e);
    }
    json_object_object_add(c, "env", env);
    /* The runner waits on stdin; its end (the daemon gone) ends it. */
    add_bool(c, "stdin", true);
    add_bool(c, "stdinOnce", true);
    add_bool(c, "tty", false);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "limits", quantities(spec));
    json_object_object_add(res, "requests", quantities(spec));
    json_object_object_add(c, "resources", res);
    json_object_object_add(c, "securityContext", security(spec, o, false));
    json_object *mounts = json_object_new_array();
    json_object_array_add(mounts, mount("work", spec->workdir));
    if (spec->shm_bytes > 0)
        json_object_array_add(mounts, mount("shm", "/dev/shm"));
    json_object_object_add(c, "volumeMounts", mounts);
    return c;
}

static json_object *pod_body(const struct backend_spec *spec, const struct pod_spec_opts *o)
{
    json_object *s = json_object_new_object();
    add_str(s, "restartPolicy", "Never");
    long long deadline = spec->expires > 0 ? spec->expires - o->now : POD_DEADLINE_DEFAULT_S;
    json_object_object_add(s, "activeDeadlineSeconds",
                           json_object_new_int64(deadline > 0 ? deadline : 1));
    json_object_object_add(s, "terminationGracePeriodSeconds", json_object_new_int(0));
    add_bool(s, "automountServiceAccountToken", false);
    add_bool(s, "enableServiceLinks", false);
    add_bool(s, "hostNetwork", false);
    add_bool(s, "hostPID", false);
    add_bool(s, "hostIPC", false);
    add_bool(s, "shareProcessNamespace", true);
    if (spec->runtime && *spec->runtime)
        add_str(s, "runtimeClassName", spec->runtime);
    json_object_object_add(s, "securityContext", security(spec, o, true));
    json_object *cs = json_object_new_array();
    json_object_array_add(cs, container(spec, o));
    json_object_object_add(s, "containers", cs);
    json_object *vols = json_object_new_array();
    json_object_array_add(vols, memory_dir("work", spec->workdir_mb << 20));
    if (spec->shm_bytes > 0)
        json_object_array_add(vols, memory_dir("shm", spec->shm_bytes));
    json_object_object_add(s, "volumes", vols);
    return s;
}

json_object *pod_spec_new(const struct backend_spec *spec, const struct pod_spec_opts *o,
                          struct err *err)
{
    if (spec->network || spec->egress) {
        err_set(err, ERR_INVALID,
                "the kubernetes backend gives sandboxes no network and no egress gateway");
        return NULL;
    }
    if (spec->uid == 0 || spec->gid == 0) {
        /* runAsNonRoot would hold it Pending for ever: refused here. */
        err_set(err, ERR_INVALID, "a sandbox Pod runs as a user other than root, not uid or gid 0");
        return NULL;
    }
    if (spec->packages_dir || spec->install_dir) {
        err_set(err, ERR_INVALID,
                "the kubernetes backend cannot show the daemon's package directories to a pod");
        return NULL;
    }
    if (!o->name || !pod_name_ok(o->name, strlen(o->name)) || !o->namespace ||
        !pod_name_ok(o->namespace, strlen(o->namespace))) {
        err_set(err, ERR_INVALID, "a pod needs a Kubernetes name and namespace");
        return NULL;
    }
    json_object *md = metadata(spec, o, err);
    if (!md)
        return NULL;
    json_object *pod = json_object_new_object();
    add_str(pod, "apiVersion", "v1");
    add_str(pod, "kind", "Pod");
    json_object_object_add(pod, "metadata", md);
    json_object_object_add(pod, "spec", pod_body(spec, o));
    return pod;
}
