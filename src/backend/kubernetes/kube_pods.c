/* The Pod requests (kube_pods.h). */
#include "backend/kubernetes/kube_pods.h"

#include <stdio.h>
#include <string.h>

#include "backend/kubernetes/pod_spec.h"
#include "base/json.h"
#include "base/util.h"

/* The longest resourceVersion or continue token carried into a query. */
#define TOKEN_MAX 1024u
/* A watch never asks the server for longer than this; a wait goes on
 * with a new watch. */
#define WATCH_MAX_S 60L

#define PODS_PATH "/api/v1/namespaces/%s/pods"
/* Deeper than any Pod the API serves (about 10 levels). */
#define JSON_DEPTH 64

/* o's member key, or NULL; o may be NULL. */
static json_object *member(json_object *o, const char *key)
{
    json_object *v = NULL;
    return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* data[0..n) as a JSON object, or NULL. */
static json_object *parse_object(const char *data, size_t n)
{
    json_object *o = NULL;
    struct json_exact why;
    if (json_parse_exact(data ? data : "", n, JSON_DEPTH, 0, &o, &why) < 0)
        return NULL;
    if (!json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

static int check_names(const char *ns, const char *name, struct err *err)
{
    if (!ns || !pod_name_ok(ns, strlen(ns)))
        return err_set(err, ERR_INVALID, "not a Kubernetes namespace name");
    if (name && !pod_name_ok(name, strlen(name)))
        return err_set(err, ERR_INVALID, "not a Kubernetes Pod name");
    return 0;
}

int kube_pods_escape(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~';
        if (o + (plain ? 1 : 3) >= cap)
            return -1;
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    if (o >= cap)
        return -1;
    out[o] = '\0';
    return 0;
}

/* The answer's JSON object, or NULL with err (ERR_PROTOCOL). */
static json_object *parse_answer(const struct buf *b, const char *what, struct err *err)
{
    json_object *o = parse_object(b->data, b->len);
    if (!o)
        err_set(err, ERR_PROTOCOL, "the Kubernetes API's answer to %s is not a JSON object", what);
    return o;
}

int kube_pod_create(struct kube_api *a, const char *ns, json_object *pod, long timeout_ms,
                    struct err *err)
{
    const char *name = json_get_string(member(pod, "metadata"), "name", NULL);
    if (check_names(ns, name ? name : "", err) < 0)
        return -1;
    char path[KUBE_API_MAX_PATH];
    snprintf(path, sizeof(path), PODS_PATH, ns);
    size_t len = 0;
    const char *body = json_object_to_json_string_length(pod, JSON_C_TO_STRING_PLAIN, &len);
    struct buf resp;
    buf_init(&resp, KUBE_API_MAX_RESPONSE);
    long status = 0;
    int rc = kube_api_request(a, "POST", path, body, len, timeout_ms, &status, &resp, err);
    if (rc == 0 && (status < 200 || status > 202)) {
        char what[POD_NAME_MAX + 32];
        snprintf(what, sizeof(what), "creating pod %s", name);
        rc = kube_api_refusal(status, resp.data, resp.len, what, err);
    }
    buf_free(&resp);
    return rc;
}

/* GET of Pod name's object into *out (the caller puts it). */
static int get_pod(struct kube_api *a, const char *ns, const char *name, long timeout_ms,
                   json_object **out, struct err *err)
{
    *out = NULL;
    if (check_names(ns, name, err) < 0)
        return -1;
    char path[KUBE_API_MAX_PATH], what[POD_NAME_MAX + 32];
    snprintf(path, sizeof(path), PODS_PATH "/%s", ns, name);
    snprintf(what, sizeof(what), "reading pod %s", name);
    struct buf resp;
    buf_init(&resp, KUBE_API_MAX_RESPONSE);
    long status = 0;
    int rc = kube_api_request(a, "GET", path, NULL, 0, timeout_ms, &status, &resp, err);
    if (rc == 0 && status != 200)
        rc = kube_api_refusal(status, resp.data, resp.len, what, err);
    if (rc == 0 && !(*out = parse_answer(&resp, what, err)))
        rc = -1;
    buf_free(&resp);
    return rc;
}

int kube_pod_get(struct kube_api *a, const char *ns, const char *name, long timeout_ms,
                 struct pod_state *out, struct err *err)
{
    json_object *pod = NULL;
    if (get_pod(a, ns, name, timeout_ms, &pod, err) < 0)
        return -1;
    int rc = pod_state_read(pod, out, err);
    json_object_put(pod);
    return rc;
}

int kube_pod_delete(struct kube_api *a, const char *ns, const char *name, long timeout_ms,
                    struct err *err)
{
    if (check_names(ns, name, err) < 0)
        return -1;
    char path[KUBE_API_MAX_PATH];
    snprintf(path, sizeof(path), PODS_PATH "/%s", ns, name);
    /* Grace 0: the sandbox's program is not asked to stop, it is stopped. */
    static const char body[] = "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
                               "\"gracePeriodSeconds\":0,\"propagationPolicy\":\"Background\"}";
    struct buf resp;
    buf_init(&resp, KUBE_API_MAX_RESPONSE);
    long status = 0;
    int rc = kube_api_request(a, "DELETE", path, body, sizeof(body) - 1, timeout_ms, &status, &resp,
                              err);
    if (rc == 0 && status != 200 && status != 202) {
        char what[POD_NAME_MAX + 32];
        snprintf(what, sizeof(what), "deleting pod %s", name);
        rc = kube_api_refusal(status, resp.data, resp.len, what, err);
    }
    buf_free(&resp);
    return rc;
}

/* Adds one page's items to *list; sets next to its continue token ("" at
 * the end). */
static int take_page(json_object *page, struct backend_container **list, size_t *n, size_t *cap,
                     char *next, size_t next_cap, struct err *err)
{
    json_object *items = member(page, "items");
    if (!items || !json_object_is_type(items, json_type_array))
        return err_set(err, ERR_PROTOCOL, "the Kubernetes API's Pod list has no items");
    size_t k = json_object_array_length(items);
    if (k > KUBE_PODS_LIST_MAX - *n)
        return err_set(err, ERR_TOO_BIG, "the namespace holds more than %d matching Pods",
                       KUBE_PODS_LIST_MAX);
    for (size_t i = 0; i < k; i++) {
        struct backend_container c;
        struct err skip = ERR_INIT;
        if (pod_container_read(json_object_array_get_idx(items, i), &c, &skip) < 0) {
            err_clear(&skip);
            continue;
        }
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 16;
            *list = xrealloc(*list, *cap * sizeof(**list));
        }
        (*list)[(*n)++] = c;
    }
    size_t tl = 0;
    const char *token = json_get_string(member(page, "metadata"), "continue", &tl);
    next[0] = '\0';
    if (token && tl > 0 && kube_pods_escape(token, next, next_cap) < 0)
        return err_set(err, ERR_TOO_BIG, "the Kubernetes API's continue token is too long");
    return 0;
}

int kube_pod_list(struct kube_api *a, const char *ns, const char *selector, long timeout_ms,
                  struct backend_container **out, size_t *n, struct err *err)
{
    *out = NULL;
    *n = 0;
    char sel[512], next[3 * TOKEN_MAX + 1] = "", path[KUBE_API_MAX_PATH];
    if (check_names(ns, NULL, err) < 0)
        return -1;
    if (kube_pods_escape(selector, sel, sizeof(sel)) < 0)
        return err_set(err, ERR_INVALID, "the label selector is too long");
    struct buf resp;
    buf_init(&resp, KUBE_API_MAX_RESPONSE);
    size_t cap = 0;
    int rc = 0;
    bool restarted = false;
    double deadline = util_now_ms() + (double)timeout_ms;
    for (;;) {
        long left = (long)(deadline - util_now_ms());
        if (left <= 0) {
            rc = err_set(err, ERR_TIMEOUT, "listing pods took over %ld ms", timeout_ms);
            break;
        }
        snprintf(path, sizeof(path), PODS_PATH "?labelSelector=%s&limit=%d%s%s", ns, sel,
                 KUBE_PODS_PAGE, next[0] ? "&continue=" : "", next);
        long status = 0;
        rc = kube_api_request(a, "GET", path, NULL, 0, left, &status, &resp, err);
        if (rc == 0 && status == 410 && next[0] && !restarted) {
            /* The continue token outlived the server's history (410
             * Expired): the list starts again from the first page, once,
             * as client-go's pager does. */
            backend_container_list_free(*out, *n);
            *out = NULL;
            *n = cap = 0;
            next[0] = '\0';
            restarted = true;
            continue;
        }
        if (rc == 0 && status != 200)
            rc = kube_api_refusal(status, resp.data, resp.len, "listing pods", err);
        json_object *page = rc == 0 ? parse_answer(&resp, "listing pods", err) : NULL;
        if (rc == 0 && !page)
            rc = -1;
        if (rc == 0)
            rc = take_page(page, out, n, &cap, next, sizeof(next), err);
        json_object_put(page);
        if (rc < 0 || !next[0])
            break;
    }
    buf_free(&resp);
    if (rc < 0) {
        backend_container_list_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

/* ---- waiting ---------------------------------------------------------- */

struct waiter {
    kube_pod_done_fn done;
    struct pod_state *out;
    int outcome; /* 0 going on, 1 done, 2 deleted, 3 restart the watch, -1 error */
    struct err err;
};

enum kube_pod_event kube_pods_event(const char *line, size_t n, struct pod_state *out,
                                    struct err *err)
{
    json_object *ev = parse_object(line, n);
    const char *type = json_get_string(ev, "type", NULL);
    json_object *obj = member(ev, "object");
    enum kube_pod_event e = KUBE_POD_OTHER;
    if (!type || !obj || !json_object_is_type(obj, json_type_object)) {
        err_set(err, ERR_PROTOCOL, "the Kubernetes API sent a watch event without a type");
        e = KUBE_POD_BAD;
    } else if (strcmp(type, "DELETED") == 0) {
        e = KUBE_POD_DELETED;
    } else if (strcmp(type, "ERROR") == 0) {
        e = KUBE_POD_ERROR;
    } else if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
        e = pod_state_read(obj, out, err) < 0 ? KUBE_POD_BAD : KUBE_POD_STATE;
    }
    json_object_put(ev);
    return e;
}

static int on_event(void *ctx, const char *line, size_t n)
{
    struct waiter *w = ctx;
    switch (kube_pods_event(line, n, w->out, &w->err)) {
    case KUBE_POD_BAD:
        w->outcome = -1;
        break;
    case KUBE_POD_DELETED:
        w->outcome = 2;
        break;
    case KUBE_POD_ERROR:
        /* A Status: most often 410, the version is too old to watch from. */
        w->outcome = 3;
        break;
    case KUBE_POD_STATE:
        if (w->done(w->out))
            w->outcome = 1;
        break;
    case KUBE_POD_OTHER:
        break;
    }
    return w->outcome != 0;
}

/* One watch from version rv (escaped), for at most left_ms. */
static int watch_once(struct kube_api *a, const char *ns, const char *name, const char *rv,
                      long left_ms, const atomic_bool *stop, struct waiter *w, struct err *err)
{
    char path[KUBE_API_MAX_PATH];
    long secs = left_ms / 1000 + 1;
    snprintf(path, sizeof(path),
             PODS_PATH "?watch=1&fieldSelector=metadata.name%%3D%s&resourceVersion=%s"
                       "&timeoutSeconds=%ld",
             ns, name, rv, secs < WATCH_MAX_S ? secs : WATCH_MAX_S);
    bool timed_out = false;
    w->outcome = 0;
    return kube_api_watch(a, path, left_ms, on_event, w, stop, &timed_out, err);
}

int kube_pod_wait(struct kube_api *a, const char *ns, const char *name, kube_pod_done_fn done,
                  long timeout_ms, const atomic_bool *stop, struct pod_state *out, struct err *err)
{
    double deadline = util_now_ms() + (double)timeout_ms;
    struct waiter w = {.done = done, .out = out, .err = ERR_INIT};
    for (;;) {
        long left = (long)(deadline - util_now_ms());
        if (stop && atomic_load(stop))
            return err_set(err, ERR_CANCELLED, "waiting for pod %s was cancelled", name);
        if (left <= 0)
            return err_set(err, ERR_TIMEOUT, "pod %s did not get there within %ld ms", name,
                           timeout_ms);
        json_object *pod = NULL;
        if (get_pod(a, ns, name, left, &pod, err) < 0)
            return -1;
        int rc = pod_state_read(pod, out, err);
        char rv[3 * TOKEN_MAX + 1] = "";
        const char *v = json_get_string(member(pod, "metadata"), "resourceVersion", NULL);
        if (rc == 0 && (!v || kube_pods_escape(v, rv, sizeof(rv)) < 0))
            rc = err_set(err, ERR_PROTOCOL, "pod %s has no usable resourceVersion", name);
        json_object_put(pod);
        if (rc < 0)
            return -1;
        if (done(out))
            return 0;
        left = (long)(deadline - util_now_ms());
        if (left <= 0)
            continue;
        if (watch_once(a, ns, name, rv, left, stop, &w, err) < 0)
            return -1;
        if (w.outcome == 1)
            return 0;
        if (w.outcome == 2)
            return err_set(err, ERR_NOT_FOUND, "pod %s was deleted", name);
        if (w.outcome < 0) {
            err_set(err, w.err.code, "%s", err_msg(&w.err));
            err_clear(&w.err);
            return -1;
        }
        /* The watch ended (its time, the server's, or a version too old):
         * read the pod again and watch from there. */
    }
}
