#include "backend/docker/engine.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"

#define API "/" ENGINE_API_VERSION

/* Request timeouts. Create can be slow on a busy engine (layer setup).
 * Podman 4.3 answers /version in 0.5-1 s (it runs conmon and runc to
 * report their versions), so that probe gets more than a "fast" budget. */
#define ENGINE_TIMEOUT_CONTROL_MS 10000L
#define ENGINE_TIMEOUT_CREATE_MS  30000L
/* Starting boots the runtime's sandbox: a second or more under gVisor, and
 * many at once on a small machine take far longer. */
#define ENGINE_TIMEOUT_START_MS   30000L
#define ENGINE_TIMEOUT_REMOVE_MS  30000L
#define ENGINE_TIMEOUT_PING_MS    2000
#define ENGINE_TIMEOUT_VERSION_MS 5000L

/* filters={"label":["<managed label>"]}, URL-encoded. The label is made of
 * characters a URL carries as they are (letters, '.', '-'). */
#define LIST_FILTER "%7B%22label%22%3A%5B%22" ENGINE_LABEL_MANAGED "%22%5D%7D"

#define ENGINE_JSON_DEPTH 32

struct engine {
    char *socket;
    /* 1 when the engine is known to report OOMKilled (Docker), 0 when it is
     * known not to (Podman 4 leaves it false), -1 before /version answered. */
    atomic_int oom_flag_reliable;
    atomic_int podman; /* 1 or 0 once /version answered, -1 before */
};

struct engine *engine_new(const char *socket_path)
{
    struct engine *e = xcalloc(1, sizeof(*e));
    e->socket = xstrdup(socket_path);
    atomic_init(&e->oom_flag_reliable, -1);
    atomic_init(&e->podman, -1);
    return e;
}

void engine_free(struct engine *e)
{
    if (!e)
        return;
    free(e->socket);
    free(e);
}

const char *engine_socket(const struct engine *e)
{
    return e->socket;
}

/* Container ids go into URL paths: accept only what engines generate. */
static bool id_valid(const char *id)
{
    size_t n = 0;
    for (; id[n]; n++) {
        char c = id[n];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) || n >= 64)
            return false;
    }
    return n >= 12;
}

static int check_id(const char *id, struct err *err)
{
    if (!id || !id_valid(id))
        return err_set(err, ERR_INVALID, "invalid container id");
    return 0;
}

/* Parses a whole response body as JSON (trailing whitespace allowed). */
static json_object *parse_json(const struct buf *b, const char *what, struct err *err)
{
    if (b->len == 0 || b->len > ENGINE_HTTP_MAX_RESPONSE) {
        err_set(err, ERR_PROTOCOL, "the container engine's answer to %s is empty", what);
        return NULL;
    }
    json_object *o = NULL;
    struct json_exact why;
    if (json_parse_exact(b->data, b->len, ENGINE_JSON_DEPTH, 0, &o, &why) < 0 || !o) {
        if (why.status == JSON_EXACT_TRAILING)
            err_set(err, ERR_PROTOCOL, "the container engine's answer to %s has trailing bytes",
                    what);
        else
            err_set(err, ERR_PROTOCOL, "the container engine's answer to %s is not valid JSON",
                    what);
        return NULL;
    }
    return o;
}

/* Sets err from an unexpected status, with the engine's message. */
static int status_error(const struct engine *e, long status, const struct buf *resp,
                        const char *what, struct err *err)
{
    cleanup_free char *msg = engine_http_message(resp->data, resp->len);
    return err_set(err, status == 404 ? ERR_NOT_FOUND : ERR_ENGINE,
                   "the container engine at unix://%s refused to %s (HTTP %ld): %s", e->socket,
                   what, status, msg ? msg : "no message");
}

static int call(struct engine *e, const char *method, const char *path, const char *body,
                long timeout_ms, long *status, struct buf *resp, struct err *err)
{
    return engine_http_request(e->socket, method, path, body, body ? strlen(body) : 0, timeout_ms,
                               status, resp, err);
}

/* Sends method path with no body and parses the 200 answer as JSON (caller
 * owns it). action is what the engine was asked, for a refusal; what names
 * the request, for an answer that is not JSON. NULL with err otherwise. */
static json_object *call_json(struct engine *e, const char *method, const char *path,
                              long timeout_ms, const char *action, const char *what,
                              struct err *err)
{
    struct buf resp;
    buf_init(&resp, ENGINE_HTTP_MAX_RESPONSE);
    long status = 0;
    json_object *root = NULL;
    if (call(e, method, path, NULL, timeout_ms, &status, &resp, err) == 0) {
        if (status != 200)
            status_error(e, status, &resp, action, err);
        else
            root = parse_json(&resp, what, err);
    }
    buf_free(&resp);
    return root;
}

static int version_within(struct engine *e, long timeout_ms, char **name, char **version,
                          struct err *err)
{
    json_object *root =
        call_json(e, "GET", API "/version", timeout_ms, "report its version", "GET /version", err);
    if (!root)
        return -1;

    /* Podman lists "Podman Engine" among its components, Docker "Engine". */
    const char *n = NULL, *v = NULL;
    size_t nl = 0, vl = 0;
    json_object *comps = NULL;
    if (json_object_object_get_ex(root, "Components", &comps) &&
        json_object_is_type(comps, json_type_array)) {
        size_t count = json_object_array_length(comps);
        for (size_t i = 0; i < count; i++) {
            json_object *c = json_object_array_get_idx(comps, i);
            size_t cl = 0;
            const char *cn = json_get_string(c, "Name", &cl);
            if (!cn)
                continue;
            if (strcmp(cn, "Podman Engine") == 0) {
                n = "Podman Engine";
                atomic_store(&e->oom_flag_reliable, 0);
                v = json_get_string(c, "Version", &vl);
                break;
            }
            if (strcmp(cn, "Engine") == 0 && !n) {
                n = "Docker Engine";
                atomic_store(&e->oom_flag_reliable, 1);
                v = json_get_string(c, "Version", &vl);
            }
        }
    }
    if (!n) {
        json_object *plat = NULL;
        if (json_object_object_get_ex(root, "Platform", &plat))
            n = json_get_string(plat, "Name", &nl);
        if (!n || nl == 0) {
            n = "unknown engine";
            nl = 0;
        }
    }
    atomic_store(&e->podman, strcmp(n, "Podman Engine") == 0);
    if (!v)
        v = json_get_string(root, "Version", &vl);
    if (!v) {
        v = "unknown";
        vl = strlen(v);
    }
    *name = backend_text(n, nl ? nl : strlen(n));
    *version = backend_text(v, vl);
    json_object_put(root);
    return 0;
}

int engine_version(struct engine *e, char **name, char **version, struct err *err)
{
    return version_within(e, ENGINE_TIMEOUT_VERSION_MS, name, version, err);
}

static int image_missing(const struct engine *e, json_object *body, const struct buf *resp,
                         struct err *err)
{
    size_t il = 0;
    const char *image = json_get_string(body, "Image", &il);
    cleanup_free char *img = backend_text(image ? image : "?", image ? il : 1);
    cleanup_free char *msg = engine_http_message(resp->data, resp->len);
    return err_set(err, ERR_NOT_FOUND,
                   "image '%s' is not present in the engine at unix://%s: build it with "
                   "`make images` (engine: %s)",
                   img, e->socket, msg ? msg : "no message");
}

/* A request's timeout: its usual one, cut to what is left before deadline_ms
 * (util_now_ms() time; 0 = none). Fails once the deadline has passed. */
static int budget(const struct engine *e, long usual_ms, double deadline_ms, const char *what,
                  long *out, struct err *err)
{
    *out = usual_ms;
    if (deadline_ms <= 0)
        return 0;
    double left = deadline_ms - util_now_ms();
    if (left < 1.0)
        return err_set(err, ERR_TIMEOUT,
                       "the container engine at unix://%s took too long: no time was left to %s "
                       "within the run's time limit",
                       e->socket, what);
    if (left < (double)usual_ms)
        *out = (long)left;
    return 0;
}

int engine_create(struct engine *e, json_object *body, double deadline_ms, char **id,
                  struct err *err)
{
    const char *json = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
    struct buf resp;
    buf_init(&resp, ENGINE_HTTP_MAX_RESPONSE);
    long status = 0;
    int ret = -1;
    json_object *root = NULL;
    long timeout_ms = 0;

    if (budget(e, ENGINE_TIMEOUT_CREATE_MS, deadline_ms, "create a container", &timeout_ms, err) <
            0 ||
        call(e, "POST", API "/containers/create", json, timeout_ms, &status, &resp, err) < 0)
        goto out;
    if (status == 404) {
        image_missing(e, body, &resp, err);
        goto out;
    }
    if (status != 201) {
        status_error(e, status, &resp, "create a container", err);
        goto out;
    }
    root = parse_json(&resp, "POST /containers/create", err);
    if (!root)
        goto out;
    const char *cid = json_get_string(root, "Id", NULL);
    if (!cid || !id_valid(cid)) {
        err_set(err, ERR_PROTOCOL, "the container engine returned an invalid container id");
        goto out;
    }
    json_object *warn = NULL;
    if (json_object_object_get_ex(root, "Warnings", &warn) &&
        json_object_is_type(warn, json_type_array) && json_object_array_length(warn) > 0)
        log_warn("engine warnings creating %.12s: %s", cid,
                 json_object_to_json_string_ext(warn, JSON_C_TO_STRING_PLAIN));
    *id = xstrdup(cid);
    ret = 0;
out:
    json_object_put(root);
    buf_free(&resp);
    return ret;
}

int engine_attach(struct engine *e, const char *id, double deadline_ms,
                  struct engine_http_conn **out, struct err *err)
{
    long timeout_ms = 0;
    if (check_id(id, err) < 0 ||
        budget(e, ENGINE_TIMEOUT_CONTROL_MS, deadline_ms, "attach", &timeout_ms, err) < 0)
        return -1;
    cleanup_free char *path =
        xasprintf(API "/containers/%s/attach?stream=1&stdin=1&stdout=1&stderr=1", id);
    /* Its error already names the attach request and the container. */
    return engine_http_upgrade(e->socket, path, timeout_ms, out, err);
}

/* POSTs path with no body and accepts the listed statuses. */
static int simple_call(struct engine *e, const char *method, const char *path, long timeout_ms,
                       const long *ok, size_t nok, const char *what, struct err *err)
{
    struct buf resp;
    buf_init(&resp, ENGINE_HTTP_MAX_RESPONSE);
    long status = 0;
    int ret = call(e, method, path, NULL, timeout_ms, &status, &resp, err);
    if (ret == 0) {
        ret = -1;
        for (size_t i = 0; i < nok; i++)
            if (status == ok[i])
                ret = 0;
        if (ret < 0)
            status_error(e, status, &resp, what, err);
    }
    buf_free(&resp);
    return ret;
}

int engine_start(struct engine *e, const char *id, double deadline_ms, struct err *err)
{
    long timeout_ms = 0;
    if (check_id(id, err) < 0 || budget(e, ENGINE_TIMEOUT_START_MS, deadline_ms,
                                        "start the container", &timeout_ms, err) < 0)
        return -1;
    static const long ok[] = {204, 304};
    cleanup_free char *path = xasprintf(API "/containers/%s/start", id);
    cleanup_free char *what = xasprintf("start container %.12s", id);
    return simple_call(e, "POST", path, timeout_ms, ok, ARRAY_SIZE(ok), what, err);
}

/* True when a kill answered with status left nothing running. */
static bool kill_moot(struct engine *e, const char *id, long status)
{
    /* 404: gone; 409 (Docker): not running. */
    if (status == 404 || status == 409)
        return true;
    if (status != 500)
        return false;
    /* Podman answers 500 "container state improper" for a stopped
     * container: ask for the state rather than parse its wording. */
    struct backend_state st = {0};
    struct err ierr = ERR_INIT;
    int irc = engine_inspect_state(e, id, &st, &ierr);
    bool moot = (irc == 0 && !st.running) || (irc < 0 && ierr.code == ERR_NOT_FOUND);
    err_clear(&ierr);
    return moot;
}

int engine_kill(struct engine *e, const char *id, struct err *err)
{
    if (check_id(id, err) < 0)
        return -1;
    cleanup_free char *path = xasprintf(API "/containers/%s/kill?signal=SIGKILL", id);
    struct buf resp;
    buf_init(&resp, ENGINE_HTTP_MAX_RESPONSE);
    long status = 0;
    int ret = call(e, "POST", path, NULL, ENGINE_TIMEOUT_CONTROL_MS, &status, &resp, err);
    if (ret == 0 && status != 204 && !kill_moot(e, id, status)) {
        cleanup_free char *what = xasprintf("kill container %.12s", id);
        ret = status_error(e, status, &resp, what, err);
    }
    buf_free(&resp);
    return ret;
}

int engine_remove(struct engine *e, const char *id, struct err *err)
{
    if (check_id(id, err) < 0)
        return -1;
    static const long ok[] = {204, 404};
    cleanup_free char *path = xasprintf(API "/containers/%s?force=1&v=1", id);
    cleanup_free char *what = xasprintf("remove container %.12s", id);
    return simple_call(e, "DELETE", path, ENGINE_TIMEOUT_REMOVE_MS, ok, ARRAY_SIZE(ok), what, err);
}

static bool get_bool(json_object *o, const char *key)
{
    json_object *v = NULL;
    return o && json_object_object_get_ex(o, key, &v) &&
           json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

static bool get_int(json_object *o, const char *key, int64_t *out)
{
    json_object *v = NULL;
    if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
        return false;
    *out = json_object_get_int64(v);
    return true;
}

/* State, and HostConfig.Runtime into runtime (cap bytes, "" when the
 * engine names none) when runtime is not NULL. */
static int inspect(struct engine *e, const char *id, struct backend_state *st, char *runtime,
                   size_t cap, struct err *err)
{
    if (check_id(id, err) < 0)
        return -1;
    char *path = xasprintf(API "/containers/%s/json", id);
    int ret = -1;
    json_object *root = call_json(e, "GET", path, ENGINE_TIMEOUT_CONTROL_MS,
                                  "inspect the container", "GET /containers/{id}/json", err);
    if (!root)
        goto out;
    json_object *state = NULL, *hc = NULL;
    if (!json_object_object_get_ex(root, "State", &state) ||
        !json_object_is_type(state, json_type_object)) {
        err_set(err, ERR_PROTOCOL, "the container engine's inspect answer has no State");
        goto out;
    }
    int64_t code = 0;
    st->running = get_bool(state, "Running");
    st->oom_killed = get_bool(state, "OOMKilled");
    st->exit_code = get_int(state, "ExitCode", &code) ? (int)code : -1;
    int64_t pid = 0;
    st->pid =
        st->running && get_int(state, "Pid", &pid) && pid > 0 && pid <= INT32_MAX ? (int)pid : 0;
    if (runtime) {
        json_object_object_get_ex(root, "HostConfig", &hc);
        const char *r = json_get_string(hc, "Runtime", NULL);
        snprintf(runtime, cap, "%s", r ? r : ""); /* a longer name is cut */
    }
    ret = 0;
out:
    free(path);
    json_object_put(root);
    return ret;
}

int engine_inspect_state(struct engine *e, const char *id, struct backend_state *st,
                         struct err *err)
{
    return inspect(e, id, st, NULL, 0, err);
}

int engine_wait(struct engine *e, const char *id, long timeout_ms, struct backend_state *st,
                char runtime[ENGINE_RUNTIME_MAX], struct err *err)
{
    if (check_id(id, err) < 0)
        return -1;
    char *path = xasprintf(API "/containers/%s/wait?condition=not-running", id);
    int ret = -1;
    json_object *root = call_json(e, "POST", path, timeout_ms, "wait for the container",
                                  "POST /containers/{id}/wait", err);
    if (!root)
        goto out;
    int64_t code = 0;
    if (!get_int(root, "StatusCode", &code)) {
        err_set(err, ERR_PROTOCOL, "the container engine's wait answer has no StatusCode");
        goto out;
    }

    /* The wait answer does not say why the container died; inspect does. */
    struct backend_state ins = {0};
    struct err ierr = ERR_INIT;
    runtime[0] = '\0';
    if (inspect(e, id, &ins, runtime, ENGINE_RUNTIME_MAX, &ierr) < 0) {
        /* Gone already (removed by someone else): the exit code stands. */
        if (ierr.code != ERR_NOT_FOUND) {
            err_set(err, ierr.code, "%s", err_msg(&ierr));
            err_clear(&ierr);
            goto out;
        }
        err_clear(&ierr);
    }
    st->running = false;
    st->exit_code = (int)code;
    st->oom_killed = ins.oom_killed;
    ret = 0;
out:
    free(path);
    json_object_put(root);
    return ret;
}

int engine_list_managed(struct engine *e, long timeout_ms, struct backend_container **out,
                        size_t *n, struct err *err)
{
    int ret = -1;
    struct backend_container *list = NULL;
    size_t count = 0;
    json_object *root = call_json(e, "GET", API "/containers/json?all=1&filters=" LIST_FILTER,
                                  timeout_ms > 0 ? timeout_ms : ENGINE_TIMEOUT_CONTROL_MS,
                                  "list containers", "GET /containers/json", err);
    if (!root)
        goto out;
    if (!json_object_is_type(root, json_type_array)) {
        err_set(err, ERR_PROTOCOL, "the container engine's container list is not an array");
        goto out;
    }
    size_t total = json_object_array_length(root);
    list = xcalloc(total ? total : 1, sizeof(*list));
    for (size_t i = 0; i < total; i++) {
        json_object *c = json_object_array_get_idx(root, i);
        const char *cid = json_get_string(c, "Id", NULL);
        if (!cid || !id_valid(cid)) {
            log_warn("engine listed a container with an invalid id; skipped");
            continue;
        }
        struct backend_container *ci = &list[count++];
        ci->id = xstrdup(cid);
        int64_t created = 0;
        ci->created = get_int(c, "Created", &created) ? (long long)created : 0;
        json_object *labels = NULL;
        struct backend_marks m = {0};
        if (json_object_object_get_ex(c, "Labels", &labels)) {
            m.instance = json_get_string(labels, ENGINE_LABEL_INSTANCE, &m.instance_len);
            m.owner = json_get_string(labels, ENGINE_LABEL_OWNER, &m.owner_len);
            m.expires = json_get_string(labels, ENGINE_LABEL_EXPIRES, &m.expires_len);
            m.uid = json_get_string(labels, ENGINE_LABEL_UID, &m.uid_len);
        }
        backend_container_marks(ci, &m);
    }
    *out = list;
    *n = count;
    list = NULL;
    ret = 0;
out:
    backend_container_list_free(list, count);
    json_object_put(root);
    return ret;
}

int engine_oom_flag_reliable(const struct engine *e)
{
    return atomic_load(&e->oom_flag_reliable);
}

int engine_is_podman(struct engine *e, double deadline_ms, struct err *err)
{
    if (atomic_load(&e->podman) < 0) {
        char *name = NULL, *version = NULL;
        long timeout_ms = 0;
        if (budget(e, ENGINE_TIMEOUT_VERSION_MS, deadline_ms, "tell its kind", &timeout_ms, err) <
                0 ||
            version_within(e, timeout_ms, &name, &version, err) < 0)
            return -1;
        free(name);
        free(version);
    }
    return atomic_load(&e->podman);
}

/* Whether one of runtime's arguments is a runsc flag that lets a sandbox
 * connect to a host socket: --host-uds=open or =all (one dash works as
 * well as two), or the older --fsgofer-host-uds. */
static bool passes_host_uds(const char *arg)
{
    if (arg[0] == '-' && arg[1] == '-')
        arg++;
    return strcmp(arg, "-host-uds=open") == 0 || strcmp(arg, "-host-uds=all") == 0 ||
           strcmp(arg, "-fsgofer-host-uds") == 0 || strcmp(arg, "-fsgofer-host-uds=true") == 0;
}

int engine_runtime_host_uds(struct engine *e, const char *runtime, struct err *err)
{
    json_object *root = call_json(e, "GET", API "/info", ENGINE_TIMEOUT_VERSION_MS,
                                  "describe itself", "/info", err);
    if (!root)
        return -1;
    json_object *runtimes = NULL, *rt = NULL, *args = NULL;
    int yes = 0;
    if (json_object_object_get_ex(root, "Runtimes", &runtimes) &&
        json_object_object_get_ex(runtimes, runtime, &rt) &&
        json_object_object_get_ex(rt, "runtimeArgs", &args) &&
        json_object_is_type(args, json_type_array)) {
        size_t n = json_object_array_length(args);
        for (size_t i = 0; i < n && !yes; i++) {
            json_object *a = json_object_array_get_idx(args, i);
            yes = json_object_is_type(a, json_type_string) &&
                  passes_host_uds(json_object_get_string(a));
        }
    }
    json_object_put(root);
    return yes;
}

int engine_ping(struct engine *e, struct err *err)
{
    static const long ok[] = {200};
    return simple_call(e, "GET", API "/_ping", ENGINE_TIMEOUT_PING_MS, ok, ARRAY_SIZE(ok),
                       "answer a ping", err);
}
