#include "egress/acceptor.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/log.h"
#include "base/threads.h"
#include "base/util.h"
#include "egress/gateway.h"

/* The pause after a connection the backend could not hand over. */
#define ACCEPT_PAUSE_MS 20

struct slot {
    struct egress_acceptor *a;
    pthread_t thread;
    bool used;        /* a thread runs or ended unjoined (acceptor's) */
    atomic_bool done; /* its connection ended (the thread's) */
    int fd;
};

struct egress_acceptor {
    struct backend_stream *stream;
    struct egress_policy policy;
    struct egress_usage usage;
    struct egress_summary summary;
    struct egress_cancel stop;
    int wake; /* eventfd: a connection thread ended */
    pthread_t thread;
    bool started;
    size_t n_slots;
    struct slot *slots;
};

static void *conn_main(void *arg)
{
    struct slot *s = arg;
    struct egress_acceptor *a = s->a;
    egress_serve(&a->policy, &a->usage, &a->summary, s->fd, &a->stop);
    atomic_store(&s->done, true);
    uint64_t one = 1;
    ssize_t w = write(a->wake, &one, sizeof(one));
    (void)w;
    return NULL;
}

/* Joins the threads whose connections ended; returns how many run. */
static size_t reap(struct egress_acceptor *a)
{
    size_t live = 0;
    for (size_t i = 0; i < a->n_slots; i++) {
        struct slot *s = &a->slots[i];
        if (s->used && atomic_load(&s->done)) {
            pthread_join(s->thread, NULL);
            s->used = false;
        }
        live += s->used;
    }
    return live;
}

static struct slot *free_slot(struct egress_acceptor *a)
{
    for (size_t i = 0; i < a->n_slots; i++)
        if (!a->slots[i].used)
            return &a->slots[i];
    return NULL;
}

/* One waiting connection, served on a thread of its own; a connection
 * the backend refused (not the sandbox's) or no thread left is logged
 * and the run goes on. */
static void take(struct egress_acceptor *a)
{
    struct slot *s = free_slot(a);
    if (!s)
        return;
    int fd = -1;
    struct err err = ERR_INIT;
    if (backend_stream_egress_accept(a->stream, &fd, &err) < 0) {
        log_warn("egress %s: %s", a->policy.label, err_msg(&err));
        err_clear(&err);
        /* A failed accept may leave the connection waiting: no spinning
         * on it, but the run's end still comes at once. */
        struct pollfd p = {.fd = a->stop.fd, .events = POLLIN};
        poll(&p, 1, ACCEPT_PAUSE_MS);
        return;
    }
    if (fd < 0)
        return;
    s->a = a;
    s->fd = fd;
    atomic_store(&s->done, false);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, EGRESS_CONN_STACK_BYTES);
    int rc = pthread_create(&s->thread, &attr, conn_main, s);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        log_warn("egress %s: no thread for a connection: %s", a->policy.label, strerror(rc));
        close(fd);
        return;
    }
    s->used = true;
}

static void *acceptor_main(void *arg)
{
    struct egress_acceptor *a = arg;
    int listen_fd = backend_stream_egress_fd(a->stream);
    for (;;) {
        bool room = reap(a) < a->n_slots;
        struct pollfd p[3] = {
            {.fd = a->stop.fd, .events = POLLIN},
            {.fd = a->wake, .events = POLLIN},
            {.fd = room ? listen_fd : -1, .events = POLLIN},
        };
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            log_warn("egress %s: poll: %s", a->policy.label, strerror(errno));
            break;
        }
        if (p[0].revents)
            break;
        if (p[1].revents) {
            uint64_t n;
            ssize_t r = read(a->wake, &n, sizeof(n));
            (void)r;
        }
        if (p[2].revents & (POLLERR | POLLNVAL)) {
            log_warn("egress %s: the sandbox's egress listener failed", a->policy.label);
            break;
        }
        if (p[2].revents)
            take(a);
    }
    return NULL;
}

static void acceptor_free(struct egress_acceptor *a)
{
    if (a->wake >= 0)
        close(a->wake);
    egress_cancel_destroy(&a->stop);
    egress_summary_destroy(&a->summary);
    egress_usage_destroy(&a->usage);
    free(a->slots);
    free(a);
}

int egress_acceptor_start(struct backend_stream *stream, const struct egress_run_spec *spec,
                          struct egress_acceptor **out, struct err *err)
{
    *out = NULL;
    if (backend_stream_egress_fd(stream) < 0)
        return err_set(err, ERR_INTERNAL, "this sandbox has no egress listener");
    struct egress_acceptor *a = xcalloc(1, sizeof(*a));
    a->stream = stream;
    a->wake = -1;
    a->stop.fd = -1;
    egress_usage_init(&a->usage);
    egress_summary_init(&a->summary);
    int rc = -1;
    if (egress_policy_init(&a->policy, spec->label, spec->patterns, spec->pins, spec->allow,
                           spec->caps, err) < 0 ||
        egress_cancel_init(&a->stop, err) < 0)
        goto out;
    a->policy.secrets = spec->secrets;
    a->policy.ca = spec->ca;
    a->policy.upstream_tls = spec->upstream_tls;
    a->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (a->wake < 0) {
        err_set(err, ERR_INTERNAL, "eventfd for a run's egress: %s", strerror(errno));
        goto out;
    }
    a->n_slots = (size_t)a->policy.caps.conns_open + EGRESS_ACCEPTOR_SPARE;
    a->slots = xcalloc(a->n_slots, sizeof(*a->slots));
    if (thread_start(&a->thread, &a->started, acceptor_main, a, "a run's egress acceptor", err) < 0)
        goto out;
    *out = a;
    rc = 0;
out:
    if (rc < 0)
        acceptor_free(a);
    return rc;
}

void egress_acceptor_finish(struct egress_acceptor *a, struct egress_report *report)
{
    if (!a)
        return;
    egress_cancel_fire(&a->stop);
    if (a->started)
        pthread_join(a->thread, NULL);
    for (size_t i = 0; i < a->n_slots; i++)
        if (a->slots[i].used)
            pthread_join(a->slots[i].thread, NULL);
    if (report)
        egress_summary_copy(&a->summary, report);
    acceptor_free(a);
}
