#include "transport/http_conns.h"

#include <stdlib.h>
#include <sys/socket.h>

#include "base/log.h"
#include "base/util.h"

static struct conn_list *list_of(struct conn_table *tab, enum conn_phase phase)
{
    switch (phase) {
    case CONN_HEAD:
        return &tab->head;
    case CONN_BODY:
        return &tab->body;
    case CONN_ADMITTED:
    case CONN_CLOSING:
        break;
    }
    return NULL;
}

/* Takes c out of its phase's list, if its phase has one (lock held). */
static void unlist_locked(struct conn_table *tab, struct conn *c)
{
    struct conn_list *l = list_of(tab, c->phase);
    if (l)
        TAILQ_REMOVE(l, c, link);
}

/* Moves c to phase, with a deadline of ms from now in the timed phases
 * (lock held). A connection we shut down stays CLOSING. */
static void move_locked(struct conn_table *tab, struct conn *c, enum conn_phase phase, double ms)
{
    if (c->phase == CONN_CLOSING)
        return;
    unlist_locked(tab, c);
    c->phase = phase;
    struct conn_list *to = list_of(tab, phase);
    if (to) {
        c->deadline = util_now_ms() + ms;
        TAILQ_INSERT_TAIL(to, c, link);
    }
}

/* The client sees its connection end; MHD sees end of input and closes it
 * on its own thread, reporting it to conns_closed first. */
static void shut_locked(struct conn_table *tab, struct conn *c)
{
    unlist_locked(tab, c);
    c->phase = CONN_CLOSING;
    shutdown(c->fd, SHUT_RDWR);
}

void conns_init(struct conn_table *tab, size_t max_connections, size_t headroom, double head_ms,
                double body_ms)
{
    *tab = (struct conn_table){0};
    TAILQ_INIT(&tab->head);
    TAILQ_INIT(&tab->body);
    pthread_mutex_init(&tab->lock, NULL);
    tab->evict_at = max_connections > headroom ? max_connections - headroom : 1;
    tab->head_ms = head_ms;
    tab->body_ms = body_ms;
}

void conns_destroy(struct conn_table *tab)
{
    pthread_mutex_destroy(&tab->lock);
}

struct conn *conns_opened(struct conn_table *tab, int fd)
{
    struct conn *c = xcalloc(1, sizeof(*c));
    c->fd = fd;
    c->phase = CONN_ADMITTED; /* so move_locked finds it in no list */
    pthread_mutex_lock(&tab->lock);
    tab->open++;
    bool evicted = false;
    if (tab->open > tab->evict_at && !TAILQ_EMPTY(&tab->head)) {
        shut_locked(tab, TAILQ_FIRST(&tab->head));
        tab->evicted++;
        evicted = true;
    }
    move_locked(tab, c, CONN_HEAD, tab->head_ms);
    pthread_mutex_unlock(&tab->lock);
    if (evicted)
        log_debug("http: connections near the limit: closed the oldest without a request head");
    return c;
}

void conns_closed(struct conn_table *tab, struct conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&tab->lock);
    unlist_locked(tab, c);
    tab->open--;
    pthread_mutex_unlock(&tab->lock);
    free(c);
}

void conns_head_done(struct conn_table *tab, struct conn *c, bool body_follows)
{
    pthread_mutex_lock(&tab->lock);
    move_locked(tab, c, body_follows ? CONN_BODY : CONN_ADMITTED, tab->body_ms);
    pthread_mutex_unlock(&tab->lock);
}

void conns_body_done(struct conn_table *tab, struct conn *c)
{
    pthread_mutex_lock(&tab->lock);
    move_locked(tab, c, CONN_ADMITTED, 0);
    pthread_mutex_unlock(&tab->lock);
}

void conns_request_done(struct conn_table *tab, struct conn *c)
{
    pthread_mutex_lock(&tab->lock);
    move_locked(tab, c, CONN_HEAD, tab->head_ms);
    pthread_mutex_unlock(&tab->lock);
}

size_t conns_expire(struct conn_table *tab, double now)
{
    size_t n = 0;
    pthread_mutex_lock(&tab->lock);
    struct conn_list *lists[] = {&tab->head, &tab->body};
    for (size_t i = 0; i < ARRAY_SIZE(lists); i++) {
        struct conn *c;
        while ((c = TAILQ_FIRST(lists[i])) && c->deadline <= now) {
            shut_locked(tab, c);
            n++;
        }
    }
    tab->expired += n;
    pthread_mutex_unlock(&tab->lock);
    if (n)
        log_debug("http: closed %zu connection(s) past their head or body deadline", n);
    return n;
}
