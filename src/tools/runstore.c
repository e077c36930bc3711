#include "tools/runstore.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

struct entry {
    struct entry *next; /* younger */
    char *owner;
    char *uri;
    char *mime;
    char *data;
    size_t size;
    double expires_ms;
};

struct runstore {
    pthread_mutex_t lock;
    double ttl_ms;
    size_t max_bytes;
    struct entry *oldest, *youngest;
    size_t bytes, count;
};

static size_t cost(const struct entry *e)
{
    return e->size + RUNSTORE_ENTRY_OVERHEAD;
}

static void entry_free(struct entry *e)
{
    free(e->owner);
    free(e->uri);
    free(e->mime);
    if (e->data)
        explicit_bzero(e->data, e->size);
    free(e->data);
    free(e);
}

struct runstore *runstore_new(long long ttl_ms, long long max_bytes)
{
    struct runstore *rs = xcalloc(1, sizeof(*rs));
    pthread_mutex_init(&rs->lock, NULL);
    rs->ttl_ms = (double)ttl_ms;
    rs->max_bytes = max_bytes > 0 ? (size_t)max_bytes : 0;
    return rs;
}

static void drop_oldest_locked(struct runstore *rs)
{
    struct entry *e = rs->oldest;
    rs->oldest = e->next;
    if (!rs->oldest)
        rs->youngest = NULL;
    rs->bytes -= cost(e);
    rs->count--;
    entry_free(e);
}

/* Entries are in the order put, and all live equally long: the expired
 * ones are the oldest. */
static void expire_locked(struct runstore *rs, double now)
{
    while (rs->oldest && rs->oldest->expires_ms <= now)
        drop_oldest_locked(rs);
}

void runstore_free(struct runstore *rs)
{
    if (!rs)
        return;
    while (rs->oldest)
        drop_oldest_locked(rs);
    pthread_mutex_destroy(&rs->lock);
    free(rs);
}

int runstore_put(struct runstore *rs, const char *owner, const char *uri, const char *mime,
                 const char *data, size_t size)
{
    if (size > rs->max_bytes || rs->max_bytes - size < RUNSTORE_ENTRY_OVERHEAD)
        return -1;
    struct entry *e = xcalloc(1, sizeof(*e));
    e->owner = xstrdup(owner);
    e->uri = xstrdup(uri);
    e->mime = xstrdup(mime);
    e->data = xmalloc(size + 1);
    memcpy(e->data, data, size);
    e->data[size] = '\0';
    e->size = size;
    double now = util_now_ms();
    e->expires_ms = now + rs->ttl_ms;

    pthread_mutex_lock(&rs->lock);
    expire_locked(rs, now);
    while (rs->oldest && (rs->bytes + cost(e) > rs->max_bytes || rs->count >= RUNSTORE_MAX_ENTRIES))
        drop_oldest_locked(rs);
    if (rs->youngest)
        rs->youngest->next = e;
    else
        rs->oldest = e;
    rs->youngest = e;
    rs->bytes += cost(e);
    rs->count++;
    pthread_mutex_unlock(&rs->lock);
    return 0;
}

int runstore_get(struct runstore *rs, const char *owner, const char *uri, char **mime, char **data,
                 size_t *size)
{
    int rc = -1;
    *mime = NULL;
    *data = NULL;
    *size = 0;
    pthread_mutex_lock(&rs->lock);
    expire_locked(rs, util_now_ms());
    for (struct entry *e = rs->oldest; e; e = e->next) {
        if (strcmp(e->uri, uri) != 0)
            continue;
        if (strcmp(e->owner, owner) == 0) {
            *mime = xstrdup(e->mime);
            *data = xmalloc(e->size + 1);
            memcpy(*data, e->data, e->size + 1);
            *size = e->size;
            rc = 0;
        }
        break;
    }
    pthread_mutex_unlock(&rs->lock);
    return rc;
}

size_t runstore_bytes(struct runstore *rs)
{
    pthread_mutex_lock(&rs->lock);
    size_t n = rs->bytes;
    pthread_mutex_unlock(&rs->lock);
    return n;
}
