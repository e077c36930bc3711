#include "backend/kubernetes/kubernetes.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/kubernetes/kube_api.h"
#include "backend/kubernetes/kube_config.h"
#include "backend/kubernetes/kube_pods.h"
#include "backend/kubernetes/kube_stream.h"
#include "backend/kubernetes/pod_spec.h"
#include "backend/kubernetes/pod_state.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/util.h"

/* Requests that only read or delete one object, or list. */
#define KUBE_CONTROL_MS 10000L
#define KUBE_CREATE_MS  30000L
#define KUBE_PING_MS    2000L
/* From create to running, without a run's deadline: a cluster may have to
 * place the Pod and pull its image first. */
#define KUBE_START_MS 120000L
/* While start waits for a Pod, how often stop_fd is looked at. */
#define KUBE_STOP_SLICE_MS 1000L
/* Killed Pods remembered (their names), the oldest forgotten first: a
 * run waits on its sandbox within seconds of killing it. */
#define KUBE_KILLED_MAX 1024
/* What a killed sandbox's exit status reads as: 128 + SIGKILL, as an
 * engine reports it. */
#define KUBE_KILLED_EXIT 137
/* The longest /version answer read as text. */
#define KUBE_VERSION_TEXT_MAX 64

/* The line the gate reads before the sandbox's own command runs. */
static const char GATE_LINE[] = "\n";
/* The gate's script: the spec's rlimits, which a Pod cannot state, set by
 * the shell before it waits (lowering one needs no privilege; its hard
 * limit goes down with it), then the line, then the command. dash calls
 * the process limit -p, bash and BusyBox -u; -f counts 512-byte blocks in
 * each (bash as sh is POSIX). */
#define KUBE_GATE_MAX 320

struct kube {
    struct backend base;
    struct kube_api *api;
    char *namespace;
    char *source; /* where the configuration came from, for messages */
    char *seccomp_profile;
    pthread_mutex_t lock;
    char *killed[KUBE_KILLED_MAX]; /* a ring of names */
    size_t killed_next;
};

/* Between create and start: the Pod's image, for start's messages. */
struct backend_pending {
    char *image;
};

struct kube_bstream {
    struct backend_stream base;
    struct kube_stream *ks;
};

static const struct backend_ops kube_ops;

static struct kube *kube_of(struct backend *b)
{
    return (struct kube *)b;
}

static struct kube_stream *ks_of(const struct backend_stream *s)
{
    return ((const struct kube_bstream *)s)->ks;
}

/* The usual timeout, or what is left before deadline_ms when that is
 * sooner (at least 1 ms: the request then fails as timed out). */
static long budget(double deadline_ms, long usual)
{
    if (deadline_ms <= 0)
        return usual;
    double left = deadline_ms - util_now_ms();
    if (left < 1)
        return 1;
    return left < (double)usual ? (long)left : usual;
}

/* ---- killed Pods ---------------------------------------------------------- */

static void killed_add(struct kube *k, const char *name)
{
    pthread_mutex_lock(&k->lock);
    free(k->killed[k->killed_next]);
    k->killed[k->killed_next] = xstrdup(name);
    k->killed_next = (k->killed_next + 1) % KUBE_KILLED_MAX;
    pthread_mutex_unlock(&k->lock);
}

/* Whether name was killed; forget drops it (a Pod killed twice is in
 * the ring twice). */
static bool killed_find(struct kube *k, const char *name, bool forget)
{
    bool found = false;
    pthread_mutex_lock(&k->lock);
    for (size_t i = 0; i < KUBE_KILLED_MAX && (forget || !found); i++) {
        if (!k->killed[i] || strcmp(k->killed[i], name) != 0)
            continue;
        found = true;
        if (forget) {
            free(k->killed[i]);
            k->killed[i] = NULL;
        }
    }
    pthread_mutex_unlock(&k->lock);
    return found;
}

static void killed_state(struct backend_state *st)
{
    *st = (struct backend_state){.running = false, .exit_code = KUBE_KILLED_EXIT};
}

/* An id that cannot name a Pod names none: NOT_FOUND, as an engine
 * answers for an unknown container (and never a request). */
static int pod_named(const char *id, struct err *err)
{
    size_t n = strlen(id);
    if (pod_name_ok(id, n))
        return 0;
    char shown[72];
    util_printable_ascii(shown, sizeof(shown), id, n, true);
    return err_set(err, ERR_NOT_FOUND, "no sandbox Pod is named %s", shown);
}

/* ---- operations ------------------------------------------------------------ */

static void kube_free(struct backend *b)
{
    struct kube *k = kube_of(b);
    kube_api_free(k->api);
    free(k->namespace);
    free(k->source);
    free(k->seccomp_profile);
    for (size_t i = 0; i < KUBE_KILLED_MAX; i++)
        free(k->killed[i]);
    pthread_mutex_destroy(&k->lock);
    free(k);
}

static const char *kube_address(const struct backend *b)
{
    return kube_api_server(((const struct kube *)b)->api);
}

static const char *kube_address_source(const struct backend *b)
{
    return ((const struct kube *)b)->source;
}

/* GET /version, which every authenticated client may read: *doc. */
static int get_version(struct kube *k, long timeout_ms, json_object **doc, struct err *err)
{
    struct buf resp;
    buf_init(&resp, KUBE_API_MAX_RESPONSE);
    long status = 0;
    int rc = kube_api_request(k->api, "GET", "/version", NULL, 0, timeout_ms, &status, &resp, err);
    if (rc == 0 && status != 200)
        rc = kube_api_refusal(status, resp.data, resp.len, "reading the API server's version", err);
    struct json_exact why = {0};
    if (rc == 0 && json_parse_exact(resp.data, resp.len, 8, 0, doc, &why) < 0)
        rc = err_set(err, ERR_PROTOCOL, "the API server's /version is not JSON (%s)",
                     why.why ? why.why : "?");
    if (rc == 0 && !json_object_is_type(*doc, json_type_object)) {
        json_object_put(*doc);
        *doc = NULL;
        rc = err_set(err, ERR_PROTOCOL, "the API server's /version is not an object");
    }
    buf_free(&resp);
    return rc;
}

static int kube_ping(struct backend *b, struct err *err)
{
    json_object *doc = NULL;
    if (get_version(kube_of(b), KUBE_PING_MS, &doc, err) < 0)
        return -1;
    json_object_put(doc);
    return 0;
}

static int kube_version(struct backend *b, char **name, char **version, struct err *err)
{
    json_object *doc = NULL;
    if (get_version(kube_of(b), KUBE_CONTROL_MS, &doc, err) < 0)
        return -1;
    size_t n = 0;
    const char *v = json_get_string(doc, "gitVersion", &n);
    *name = xstrdup("Kubernetes");
    *version = v ? backend_text(v, n < KUBE_VERSION_TEXT_MAX ? n : KUBE_VERSION_TEXT_MAX)
                 : xstrdup("unknown");
    json_object_put(doc);
    return 0;
}

/* The gate's script for spec into script. */
static void gate_script(const struct backend_spec *spec, char script[KUBE_GATE_MAX])
{
    char nofile[48] = "", nproc[96] = "", fsize[48] = "";
    if (spec->nofile > 0)
        snprintf(nofile, sizeof(nofile), "ulimit -n %lld && ", spec->nofile);
    if (spec->nproc > 0)
        snprintf(nproc, sizeof(nproc), "{ ulimit -p %lld || ulimit -u %lld; } 2>/dev/null && ",
                 spec->nproc, spec->nproc);
    if (spec->fsize > 0)
        snprintf(fsize, sizeof(fsize), "ulimit -f %lld && ", (spec->fsize + 511) / 512);
    snprintf(script, KUBE_GATE_MAX, "ulimit -c 0 && %s%s%sread -r _ && exec \"$@\"", nofile, nproc,
             fsize);
}

/* spec's command behind the gate (caller frees the argv; script holds
 * the gate's text). */
static const char **gated(const struct backend_spec *spec, char script[KUBE_GATE_MAX])
{
    gate_script(spec, script);
    const char *gate[] = {"/bin/sh", "-c", script, "mcpsbx-gate"};
    size_t n = 0;
    while (spec->cmd && spec->cmd[n])
        n++;
    const char **argv = xcalloc(ARRAY_SIZE(gate) + n + 1, sizeof(*argv));
    memcpy(argv, gate, sizeof(gate));
    for (size_t i = 0; i < n; i++)
        argv[ARRAY_SIZE(gate) + i] = spec->cmd[i];
    return argv;
}

static json_object *pod_of(const struct kube *k, const struct backend_spec *spec, const char *name,
                           struct err *err)
{
    char script[KUBE_GATE_MAX];
    cleanup_free const char **argv = gated(spec, script);
    struct backend_spec s = *spec;
    s.cmd = argv;
    struct pod_spec_opts o = {.name = name,
                              .namespace = k->namespace,
                              .seccomp_localhost = k->seccomp_profile,
                              .now = (long long)time(NULL)};
    return pod_spec_new(&s, &o, err);
}

static char *kube_describe_create(const struct backend *b, const struct backend_spec *spec)
{
    struct err err = ERR_INIT;
    json_object *pod = pod_of((const struct kube *)b, spec, "sbx-0000000000000000", &err);
    char *s = pod ? xstrdup(json_object_to_json_string_ext(pod, JSON_C_TO_STRING_PRETTY |
                                                                    JSON_C_TO_STRING_NOSLASHESCAPE))
                  : xasprintf("(no Pod: %s)", err_msg(&err));
    json_object_put(pod);
    err_clear(&err);
    return s;
}

static int kube_egress_check(struct backend *b, const struct backend_spec *spec, struct err *err)
{
    (void)b;
    if (!spec->egress)
        return 0;
    return err_set(err, ERR_INVALID,
                   "the kubernetes backend has no way from a sandbox Pod to the daemon's egress "
                   "gateway: languages with --egress run on the docker backend");
}

static void kube_pending_free(struct backend_pending *p)
{
    if (!p)
        return;
    free(p->image);
    free(p);
}

static int kube_create(struct backend *b, const struct backend_spec *spec, bool fallback,
                       double deadline_ms, char **id, struct backend_pending **pending,
                       struct err *err)
{
    (void)fallback; /* one way only: the attach */
    struct kube *k = kube_of(b);
    *id = NULL;
    *pending = NULL;
    unsigned char r[8];
    if (util_random_bytes(r, sizeof(r)) < 0)
        return err_set(err, ERR_INTERNAL, "no random bytes for a Pod's name");
    char name[4 + 2 * sizeof(r) + 1] = "sbx-";
    util_hex(r, sizeof(r), name + 4);
    json_object *pod = pod_of(k, spec, name, err);
    if (!pod)
        return -1;
    int rc = kube_pod_create(k->api, k->namespace, pod, budget(deadline_ms, KUBE_CREATE_MS), err);
    json_object_put(pod);
    if (rc < 0)
        return -1;
    *id = xstrdup(name);
    *pending = xcalloc(1, sizeof(**pending));
    (*pending)->image = xstrdup(spec->image);
    return 0;
}

static bool running_or_over(const struct pod_state *st)
{
    return st->st.running || st->ended || st->reason[0];
}

static bool over(const struct pod_state *st)
{
    return st->ended || st->reason[0];
}

/* Waits for name to run, in slices so stop_fd is seen: 0 running, 1
 * stopped, -1 with err (its end or the cluster's reason among them). */
static int wait_running(struct kube *k, const char *name, const char *image, double deadline_ms,
                        int stop_fd, struct err *err)
{
    long total = budget(deadline_ms, KUBE_START_MS);
    double by = util_now_ms() + (double)total;
    for (;;) {
        long left = (long)(by - util_now_ms());
        if (left <= 0)
            return err_set(err, ERR_TIMEOUT, "pod %s was not running within %ld ms", name, total);
        long slice = stop_fd >= 0 && left > KUBE_STOP_SLICE_MS ? KUBE_STOP_SLICE_MS : left;
        struct pod_state st;
        int rc = kube_pod_wait(k->api, k->namespace, name, running_or_over, slice, NULL, &st, err);
        if (util_fd_signalled(stop_fd)) {
            err_clear(err);
            return 1;
        }
        if (rc < 0 && err->code == ERR_TIMEOUT) {
            err_clear(err);
            continue;
        }
        if (rc < 0)
            return -1;
        /* As a missing image fails an engine's create. */
        if (st.no_image)
            return err_set(err, ERR_NOT_FOUND, "image %s: pod %s %s", image, name, st.reason);
        if (st.reason[0])
            return err_set(err, ERR_ENGINE, "pod %s %s", name, st.reason);
        if (st.ended)
            return err_set(err, ERR_ENGINE, "pod %s ended (status %d) before it was attached", name,
                           st.st.exit_code);
        return 0;
    }
}

static int kube_start(struct backend *b, const char *id, struct backend_pending *pending,
                      double deadline_ms, int stop_fd, struct backend_stream **out, struct err *err)
{
    struct kube *k = kube_of(b);
    *out = NULL;
    if (pod_named(id, err) < 0) {
        kube_pending_free(pending);
        return -1;
    }
    int rc = wait_running(k, id, pending ? pending->image : "?", deadline_ms, stop_fd, err);
    kube_pending_free(pending);
    if (rc != 0)
        return rc;
    struct kube_stream *ks = NULL;
    if (kube_stream_open(k->api, k->namespace, id, budget(deadline_ms, KUBE_CONTROL_MS), &ks, err) <
        0)
        return -1;
    if (kube_stream_send(ks, GATE_LINE, sizeof(GATE_LINE) - 1, budget(deadline_ms, KUBE_CONTROL_MS),
                         err) < 0) {
        kube_stream_close(ks);
        return -1;
    }
    struct kube_bstream *s = xcalloc(1, sizeof(*s));
    s->base.ops = &kube_ops;
    s->ks = ks;
    *out = &s->base;
    return 0;
}

static const char *kube_io_name(struct backend *b, const struct backend_spec *spec)
{
    (void)b;
    (void)spec;
    return "attach";
}

static int kube_wait(struct backend *b, const char *id, long timeout_ms, struct backend_state *st,
                     struct err *err)
{
    struct kube *k = kube_of(b);
    struct pod_state ps;
    if (pod_named(id, err) < 0)
        return -1;
    if (kube_pod_wait(k->api, k->namespace, id, over, timeout_ms, NULL, &ps, err) < 0) {
        if (err->code != ERR_NOT_FOUND || !killed_find(k, id, false))
            return -1;
        err_clear(err);
        killed_state(st);
        return 0;
    }
    /* The container's own end, OOM among them, is a state; the cluster's
     * reasons are not. */
    if (ps.reason[0] && !ps.st.oom_killed)
        return err_set(err, ERR_ENGINE, "pod %s %s", id, ps.reason);
    *st = ps.st;
    return 0;
}

static int kube_kill(struct backend *b, const char *id, struct err *err)
{
    struct kube *k = kube_of(b);
    if (!pod_name_ok(id, strlen(id)))
        return 0; /* no such Pod: nothing to kill */
    killed_add(k, id);
    if (kube_pod_delete(k->api, k->namespace, id, KUBE_CONTROL_MS, err) == 0)
        return 0;
    if (err->code != ERR_NOT_FOUND)
        return -1;
    err_clear(err);
    return 0;
}

static int kube_remove(struct backend *b, const char *id, struct err *err)
{
    struct kube *k = kube_of(b);
    if (!pod_name_ok(id, strlen(id)))
        return 0; /* no such Pod: removed */
    int rc = kube_pod_delete(k->api, k->namespace, id, KUBE_CONTROL_MS, err);
    if (rc < 0 && err->code == ERR_NOT_FOUND) {
        err_clear(err);
        rc = 0;
    }
    if (rc == 0)
        killed_find(k, id, true);
    return rc;
}

static int kube_inspect(struct backend *b, const char *id, struct backend_state *st,
                        struct err *err)
{
    struct kube *k = kube_of(b);
    struct pod_state ps;
    if (pod_named(id, err) < 0)
        return -1;
    if (kube_pod_get(k->api, k->namespace, id, KUBE_CONTROL_MS, &ps, err) == 0) {
        *st = ps.st;
        return 0;
    }
    if (err->code != ERR_NOT_FOUND || !killed_find(k, id, false))
        return -1;
    err_clear(err);
    killed_state(st);
    return 0;
}

static int kube_list(struct backend *b, long timeout_ms, struct backend_container **out, size_t *n,
                     struct err *err)
{
    struct kube *k = kube_of(b);
    return kube_pod_list(k->api, k->namespace, POD_LABEL_MANAGED "=1",
                         timeout_ms > 0 ? timeout_ms : KUBE_CONTROL_MS, out, n, err);
}

static int kube_stream_fd_op(const struct backend_stream *s)
{
    return kube_stream_fd(ks_of(s));
}

static bool kube_stream_pending_op(const struct backend_stream *s)
{
    return kube_stream_pending(ks_of(s));
}

static int kube_stream_send_op(struct backend_stream *s, const void *data, size_t n,
                               long timeout_ms, struct err *err)
{
    return kube_stream_send(ks_of(s), data, n, timeout_ms, err);
}

static long kube_stream_read_op(struct backend_stream *s, backend_output_cb cb, void *ctx,
                                struct err *err)
{
    return kube_stream_read(ks_of(s), cb, ctx, err);
}

static void kube_stream_close_op(struct backend_stream *s)
{
    kube_stream_close(ks_of(s));
    free(s);
}

static const struct backend_ops kube_ops = {
    .kind = "kubernetes",
    .host_dirs = false,
    .network = false,
    .free = kube_free,
    .address = kube_address,
    .address_source = kube_address_source,
    .ping = kube_ping,
    .egress_check = kube_egress_check,
    .gone = NULL,
    .version = kube_version,
    .describe_create = kube_describe_create,
    .create = kube_create,
    .start = kube_start,
    .pending_free = kube_pending_free,
    .io_name = kube_io_name,
    .wait = kube_wait,
    .kill = kube_kill,
    .remove = kube_remove,
    .inspect = kube_inspect,
    .list = kube_list,
    .weight_open = NULL,
    .stream_fd = kube_stream_fd_op,
    .stream_pending = kube_stream_pending_op,
    .stream_send = kube_stream_send_op,
    .stream_read = kube_stream_read_op,
    .stream_close = kube_stream_close_op,
    .stream_egress_fd = NULL,
    .stream_egress_accept = NULL,
};

/* ---- opening ------------------------------------------------------------------ */

/* The configuration in client-go's order; *source says which. */
static int find_config(const struct kube_options *o, struct kube_config *cfg, char **source,
                       struct err *err)
{
    const char *file = o->kubeconfig;
    const char *from = "--kubeconfig";
    if (!file && o->kubeconfig_env && *o->kubeconfig_env) {
        if (strchr(o->kubeconfig_env, ':'))
            return err_set(err, ERR_INVALID,
                           "KUBECONFIG names several files; give one with --kubeconfig");
        file = o->kubeconfig_env;
        from = "KUBECONFIG";
    }
    if (!file && o->service_host && *o->service_host) {
        if (kube_config_in_cluster(KUBE_SA_DIR, o->service_host, o->service_port, cfg, err) < 0)
            return -1;
        *source = xstrdup("the pod's service account");
        return 0;
    }
    cleanup_free char *home_file = NULL;
    if (!file && o->home && *o->home) {
        home_file = xasprintf("%s/.kube/config", o->home);
        if (access(home_file, F_OK) == 0) {
            file = home_file;
            from = "~/.kube/config";
        }
    }
    if (!file)
        return err_set(err, ERR_NOT_FOUND,
                       "the kubernetes backend found no cluster: give --kubeconfig FILE, or run "
                       "the daemon in a pod with a service account");
    if (kube_config_load(file, o->context, cfg, err) < 0)
        return -1;
    *source = o->context ? xasprintf("%s %s, context %s", from, file, o->context)
                         : xasprintf("%s %s", from, file);
    return 0;
}

struct backend *kube_backend_open(const struct kube_options *o, struct err *err)
{
    struct kube_config cfg = {0};
    char *source = NULL;
    struct kube_api *api = NULL;
    if (find_config(o, &cfg, &source, err) < 0)
        goto fail;
    const char *ns = o->namespace && *o->namespace     ? o->namespace
                     : cfg.namespace && *cfg.namespace ? cfg.namespace
                                                       : "default";
    if (!pod_name_ok(ns, strlen(ns))) {
        err_set(err, ERR_INVALID, "--kube-namespace: '%.64s' is not a Kubernetes namespace", ns);
        goto fail;
    }
    if (o->seccomp_profile && (!*o->seccomp_profile || o->seccomp_profile[0] == '/' ||
                               strstr(o->seccomp_profile, ".."))) {
        err_set(err, ERR_INVALID,
                "--kube-seccomp-profile: a path relative to the kubelet's seccomp directory");
        goto fail;
    }
    if (kube_api_new(&cfg, &api, err) < 0)
        goto fail;
    struct kube *k = xcalloc(1, sizeof(*k));
    k->base.ops = &kube_ops;
    k->api = api;
    k->namespace = xstrdup(ns);
    k->source = source;
    k->seccomp_profile = o->seccomp_profile ? xstrdup(o->seccomp_profile) : NULL;
    pthread_mutex_init(&k->lock, NULL);
    kube_config_free(&cfg);
    return &k->base;
fail:
    kube_config_free(&cfg);
    free(source);
    return NULL;
}
