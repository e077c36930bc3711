/* backend/kubernetes/kube_pods.c against an HTTPS server in this process
 * that answers as the API server does (paths, status codes, Status
 * bodies, list pages with continue tokens, watch events): create (and a
 * name taken), get (and a Pod missing), delete with grace 0, a list over
 * two pages with a malformed item skipped, a wait that watches from the
 * read version until the Pod runs, and one that finds the Pod deleted;
 * names refused before any request; the selector's escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kubernetes/kube_pods.h"
#include "backend/kubernetes/pod_spec.h"
#include "egress/tls.h"
#include "fake_kube/tls_server.h"

#define FAR_MS 10000L
#define NS     "/api/v1/namespaces/ns/pods"

struct server {
    struct tls_server *tls;
    bool conflict;     /* a create finds the name taken */
    bool deleted;      /* the watch reports the Pod deleted */
    int expire;        /* continue tokens answered 410 Expired, this many times */
    char reqs[8][512]; /* request lines, in order */
    int nreqs;
    char body[4096]; /* the last request's body */
};

static struct egress_tls_ca *g_ca;
static char g_dir[64];

#define CS_PENDING                                                                                 \
    "\"status\":{\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"sandbox\",\"state\":"    \
    "{\"waiting\":{\"reason\":\"ContainerCreating\"}}}]}"
#define CS_RUNNING                                                                                 \
    "\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"sandbox\",\"state\":"    \
    "{\"running\":{\"startedAt\":\"2026-11-28T20:00:00Z\"}}}]}"
#define POD(name, rv, status)                                                                      \
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name "\","                 \
    "\"namespace\":\"ns\",\"resourceVersion\":\"" rv "\",\"creationTimestamp\":"                   \
    "\"2026-11-28T20:00:00Z\",\"labels\":{\"mcp-sandboxd.io/managed\":\"true\","                   \
    "\"mcp-sandboxd.io/instance\":\"i1\"},\"annotations\":{\"mcp-sandboxd.io/expires\":"           \
    "\"1800000000\",\"mcp-sandboxd.io/uid\":\"10001\"}}," status "}"

static void watch(struct server *s, SSL *ssl)
{
    tls_puts(ssl, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n");
    tls_chunk(ssl, "{\"type\":\"MODIFIED\",\"object\":" POD("p", "42", CS_PENDING) "}\n");
    if (s->deleted)
        tls_chunk(ssl, "{\"type\":\"DELETED\",\"object\":" POD("p", "43", CS_PENDING) "}\n");
    else
        tls_chunk(ssl, "{\"type\":\"MODIFIED\",\"object\":" POD("p", "43", CS_RUNNING) "}\n");
    tls_drain(ssl);
}

static void handle(void *ctx, SSL *ssl)
{
    struct server *s = ctx;
    char req[8192];
    struct tls_request r;
    if (tls_take_request(ssl, req, sizeof(req), &r) < 0)
        return;
    if (s->nreqs < 8)
        snprintf(s->reqs[s->nreqs++], sizeof(s->reqs[0]), "%s", r.line);
    if (r.body_len < sizeof(s->body)) {
        memcpy(s->body, r.body, r.body_len);
        s->body[r.body_len] = '\0';
    }
    if (strncmp(req, "POST " NS " ", 5 + strlen(NS) + 1) == 0)
        tls_answer_json(
            ssl, s->conflict ? "409 Conflict" : "201 Created",
            s->conflict ? "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"pods "
                          "\\\"p\\\" already exists\",\"reason\":\"AlreadyExists\",\"code\":409}"
                        : POD("p", "41", CS_PENDING));
    else if (strncmp(req, "GET " NS "/p ", 4 + strlen(NS) + 3) == 0)
        tls_answer_json(ssl, "200 OK", POD("p", "41", CS_PENDING));
    else if (strncmp(req, "GET " NS "/missing ", 4 + strlen(NS) + 9) == 0)
        tls_answer_json(
            ssl, "404 Not Found",
            "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"pods \\\"missing\\\" not "
            "found\",\"reason\":\"NotFound\",\"code\":404}");
    else if (strncmp(req, "DELETE " NS "/p ", 7 + strlen(NS) + 3) == 0)
        tls_answer_json(ssl, "200 OK", POD("p", "44", CS_RUNNING));
    else if (strncmp(req, "GET " NS "?watch=1", 4 + strlen(NS) + 8) == 0)
        watch(s, ssl);
    else if (strstr(req, "&continue=") && s->expire > 0 && s->expire--)
        tls_answer_json(ssl, "410 Gone",
                        "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"The provided "
                        "continue parameter is too old\",\"reason\":\"Expired\",\"code\":410}");
    else if (strncmp(req, "GET " NS "?labelSelector=", 4 + strlen(NS) + 15) == 0 &&
             !strstr(req, "&continue="))
        tls_answer_json(
            ssl, "200 OK",
            "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"continue\":\"tok/1=\"},"
            "\"items\":[" POD("a", "1", CS_RUNNING) "," POD(
                "b", "2", CS_PENDING) ","
                                      "{\"metadata\":{\"name\":\"Not_A_Name\",\"labels\":{},"
                                      "\"annotations\":{}}}]}");
    else if (strncmp(req, "GET " NS "?labelSelector=", 4 + strlen(NS) + 15) == 0)
        tls_answer_json(
            ssl, "200 OK",
            "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[" POD(
                "c", "3", CS_RUNNING) "]}");
    else
        tls_answer_json(ssl, "400 Bad Request", "{}");
}

static struct kube_api *client(struct server *s, bool conflict, bool deleted)
{
    memset(s, 0, sizeof(*s));
    s->conflict = conflict;
    s->deleted = deleted;
    s->tls = tls_server_start(g_ca, handle, s);
    assert_non_null(s->tls);
    struct kube_api *a = tls_server_client(s->tls, g_ca, NULL);
    assert_non_null(a);
    return a;
}

static void test_create_get_delete(void **state)
{
    (void)state;
    struct server s;
    struct kube_api *a = client(&s, false, false);
    struct err err = ERR_INIT;
    json_object *pod = json_tokener_parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{}}");
    assert_int_equal(kube_pod_create(a, "ns", pod, FAR_MS, &err), 0);
    assert_string_equal(s.reqs[0], "POST " NS " HTTP/1.1");
    assert_string_equal(s.body, "{\"metadata\":{\"name\":\"p\"},\"spec\":{}}");
    struct pod_state st;
    assert_int_equal(kube_pod_get(a, "ns", "p", FAR_MS, &st, &err), 0);
    assert_false(st.st.running);
    assert_false(st.ended);
    assert_int_equal(kube_pod_get(a, "ns", "missing", FAR_MS, &st, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    assert_non_null(strstr(err_msg(&err), "reading pod missing: 404 NotFound"));
    err_clear(&err);
    assert_int_equal(kube_pod_delete(a, "ns", "p", FAR_MS, &err), 0);
    assert_string_equal(s.reqs[3], "DELETE " NS "/p HTTP/1.1");
    assert_non_null(strstr(s.body, "\"gracePeriodSeconds\":0"));
    /* Names that cannot be a Pod's never reach a path. */
    assert_int_equal(kube_pod_delete(a, "ns", "../../x", FAR_MS, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    err_clear(&err);
    assert_int_equal(kube_pod_get(a, "NS?x", "p", FAR_MS, &st, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    err_clear(&err);
    assert_int_equal(s.nreqs, 4);
    tls_server_stop(s.tls);
    kube_api_free(a);

    a = client(&s, true, false);
    assert_int_equal(kube_pod_create(a, "ns", pod, FAR_MS, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err_msg(&err), "creating pod p: 409 AlreadyExists"));
    err_clear(&err);
    json_object_put(pod);
    tls_server_stop(s.tls);
    kube_api_free(a);
}

static void test_list_pages(void **state)
{
    (void)state;
    struct server s;
    struct kube_api *a = client(&s, false, false);
    struct err err = ERR_INIT;
    struct backend_container *list = NULL;
    size_t n = 0;
    assert_int_equal(kube_pod_list(a, "ns", POD_LABEL_INSTANCE "=i1", FAR_MS, &list, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_string_equal(list[0].id, "a");
    assert_string_equal(list[1].id, "b");
    assert_string_equal(list[2].id, "c");
    assert_string_equal(list[0].instance, "i1");
    assert_int_equal(list[0].expires, 1800000000LL);
    assert_int_equal(list[0].uid, 10001);
    assert_int_equal(s.nreqs, 2);
    assert_string_equal(s.reqs[0], "GET " NS "?labelSelector=mcp-sandboxd.io%2Finstance%3Di1"
                                   "&limit=500 HTTP/1.1");
    assert_string_equal(s.reqs[1], "GET " NS "?labelSelector=mcp-sandboxd.io%2Finstance%3Di1"
                                   "&limit=500&continue=tok%2F1%3D HTTP/1.1");
    backend_container_list_free(list, n);
    /* A token that expired: the list starts again, once; twice fails. */
    s.nreqs = 0;
    s.expire = 1;
    assert_int_equal(kube_pod_list(a, "ns", POD_LABEL_INSTANCE "=i1", FAR_MS, &list, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(s.nreqs, 4);
    backend_container_list_free(list, n);
    s.expire = 2;
    assert_int_equal(kube_pod_list(a, "ns", POD_LABEL_INSTANCE "=i1", FAR_MS, &list, &n, &err), -1);
    assert_null(list);
    assert_non_null(strstr(err_msg(&err), "too old"));
    err_clear(&err);
    tls_server_stop(s.tls);
    kube_api_free(a);
}

static bool running(const struct pod_state *st)
{
    return st->st.running || st->ended;
}

static void test_wait(void **state)
{
    (void)state;
    struct server s;
    struct kube_api *a = client(&s, false, false);
    struct err err = ERR_INIT;
    struct pod_state st;
    assert_int_equal(kube_pod_wait(a, "ns", "p", running, FAR_MS, NULL, &st, &err), 0);
    assert_true(st.st.running);
    assert_int_equal(s.nreqs, 2);
    assert_string_equal(s.reqs[0], "GET " NS "/p HTTP/1.1");
    assert_non_null(strstr(s.reqs[1], "?watch=1&fieldSelector=metadata.name%3Dp"
                                      "&resourceVersion=41&timeoutSeconds="));
    tls_server_stop(s.tls);
    kube_api_free(a);

    a = client(&s, false, true);
    assert_int_equal(kube_pod_wait(a, "ns", "p", running, FAR_MS, NULL, &st, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    err_clear(&err);
    /* A stop asked for ends the wait before any request. */
    atomic_bool stop = true;
    int before = s.nreqs;
    assert_int_equal(kube_pod_wait(a, "ns", "p", running, FAR_MS, &stop, &st, &err), -1);
    assert_int_equal(err.code, ERR_CANCELLED);
    assert_int_equal(s.nreqs, before);
    err_clear(&err);
    tls_server_stop(s.tls);
    kube_api_free(a);
}

static void test_escape(void **state)
{
    (void)state;
    char out[32];
    assert_int_equal(kube_pods_escape("a.b-c_d~e", out, sizeof(out)), 0);
    assert_string_equal(out, "a.b-c_d~e");
    assert_int_equal(kube_pods_escape("k/x=v,y!=z &#", out, sizeof(out)), 0);
    assert_string_equal(out, "k%2Fx%3Dv%2Cy%21%3Dz%20%26%23");
    assert_int_equal(kube_pods_escape("////////////", out, sizeof(out)), -1);
    assert_int_equal(kube_pods_escape("abc", out, 4), 0);
    assert_int_equal(kube_pods_escape("abcd", out, 4), -1);
}

static int setup(void **state)
{
    (void)state;
    return tls_ca_setup(g_dir, &g_ca);
}

static int teardown(void **state)
{
    (void)state;
    return tls_ca_teardown(g_dir, g_ca);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_get_delete),
        cmocka_unit_test(test_list_pages),
        cmocka_unit_test(test_wait),
        cmocka_unit_test(test_escape),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
