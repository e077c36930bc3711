#include "tools/runstore.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "base/util.h"

/* Owners with files, hashed by token. */
#define OWNER_BUCKETS 256

struct owner;

struct entry {
    TAILQ_ENTRY(entry) link;        /* all entries, oldest first */
    STAILQ_ENTRY(entry) owner_link; /* its owner's, oldest first */
    struct owner *owner;
    char *uri;
    char *mime;
    char *data;
    size_t size;
    double expires_ms;
};

/* Exists while it has entries. */
struct owner {
    SLIST_ENTRY(owner) link; /* in its bucket */
    char *token;
    STAILQ_HEAD(owner_entries, entry) entries;
    size_t bytes, count;
};

SLIST_HEAD(owner_bucket, owner);

struct runstore {
    pthread_mutex_t lock;
    double ttl_ms;
    size_t max_bytes, owner_max_bytes;
    size_t owner_max_entries;
    TAILQ_HEAD(entry_list, entry) entries;
    /* Written under the lock; runstore_bytes reads it without. */
    atomic_size_t bytes;
    size_t count;
    struct owner_bucket owners[OWNER_BUCKETS];
};

static size_t cost(const struct entry *e)
{
    return e->size + RUNSTORE_ENTRY_OVERHEAD;
}

static struct owner_bucket *bucket_of(struct runstore *rs, const char *token)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)token; *p; p++)
        h = (h ^ *p) * 16777619u;
    return &rs->owners[h % OWNER_BUCKETS];
}

static struct owner *owner_find(struct runstore *rs, const char *token)
{
    for (struct owner *o = SLIST_FIRST(bucket_of(rs, token)); o; o = SLIST_NEXT(o, link))
        if (strcmp(o->token, token) == 0)
            return o;
    return NULL;
}

static struct owner *owner_get(struct runstore *rs, const char *token)
{
    struct owner *o = owner_find(rs, token);
    if (!o) {
        o = xcalloc(1, sizeof(*o));
        o->token = xstrdup(token);
        STAILQ_INIT(&o->entries);
        struct owner_bucket *b = bucket_of(rs, token);
        SLIST_INSERT_HEAD(b, o, link);
    }
    return o;
}

static void owner_drop(struct runstore *rs, struct owner *o)
{
    struct owner_bucket *b = bucket_of(rs, o->token);
    SLIST_REMOVE(b, o, owner, link);
    free(o->token);
    free(o);
}

static void entry_free(struct entry *e)
{
    free(e->uri);
    free(e->mime);
    if (e->data)
        explicit_bzero(e->data, e->size);
    free(e->data);
    free(e);
}

struct runstore *runstore_new(long long ttl_ms, long long max_bytes, long long owner_max_bytes)
{
    struct runstore *rs = xcalloc(1, sizeof(*rs));
    TAILQ_INIT(&rs->entries);
    pthread_mutex_init(&rs->lock, NULL);
    rs->ttl_ms = (double)ttl_ms;
    rs->max_bytes = max_bytes > 0 ? (size_t)max_bytes : 0;
    rs->owner_max_bytes = owner_max_bytes > 0 && (size_t)owner_max_bytes < rs->max_bytes
                              ? (size_t)owner_max_bytes
                              : rs->max_bytes;
    rs->owner_max_entries = RUNSTORE_MAX_ENTRIES;
    if (rs->owner_max_bytes < rs->max_bytes)
        rs->owner_max_entries = (size_t)((double)RUNSTORE_MAX_ENTRIES *
                                         (double)rs->owner_max_bytes / (double)rs->max_bytes);
    if (rs->owner_max_entries == 0)
        rs->owner_max_entries = 1;
    return rs;
}

/* Every entry that goes is its owner's oldest: the store's oldest (expiry,
 * the last-resort eviction) or an owner's own (its quota). */
static void drop_locked(struct runstore *rs, struct entry *e)
{
    TAILQ_REMOVE(&rs->entries, e, link);
    struct owner *o = e->owner;
    STAILQ_REMOVE_HEAD(&o->entries, owner_link);
    o->bytes -= cost(e);
    o->count--;
    rs->bytes -= cost(e);
    rs->count--;
    if (o->count == 0)
        owner_drop(rs, o);
    entry_free(e);
}

/* Entries are in the order put, and all live equally long: the expired
 * ones are the oldest. */
static void expire_locked(struct runstore *rs, double now)
{
    struct entry *e = TAILQ_FIRST(&rs->entries);
    while (e && e->expires_ms <= now) {
        struct entry *next = TAILQ_NEXT(e, link);
        drop_locked(rs, e);
        e = next;
    }
}

void runstore_free(struct runstore *rs)
{
    if (!rs)
        return;
    expire_locked(rs, INFINITY); /* every entry */
    pthread_mutex_destroy(&rs->lock);
    free(rs);
}

static void append_locked(struct runstore *rs, struct entry *e, const char *token)
{
    struct owner *o = owner_get(rs, token);
    e->owner = o;
    TAILQ_INSERT_TAIL(&rs->entries, e, link);
    STAILQ_INSERT_TAIL(&o->entries, e, owner_link);
    o->bytes += cost(e);
    o->count++;
    rs->bytes += cost(e);
    rs->count++;
}

int runstore_put(struct runstore *rs, const char *owner, const char *uri, const char *mime,
                 const char *data, size_t size)
{
    return runstore_put_for(rs, owner, uri, mime, data, size, 0);
}

int runstore_put_for(struct runstore *rs, const char *owner, const char *uri, const char *mime,
                     const char *data, size_t size, long long ttl_ms)
{
    if (size > rs->owner_max_bytes || rs->owner_max_bytes - size < RUNSTORE_ENTRY_OVERHEAD)
        return -1;
    struct entry *e = xcalloc(1, sizeof(*e));
    e->uri = xstrdup(uri);
    e->mime = xstrdup(mime);
    e->data = xmalloc(size + 1);
    memcpy(e->data, data, size);
    e->data[size] = '\0';
    e->size = size;
    double now = util_now_ms();
    e->expires_ms = now + (ttl_ms > 0 ? (double)ttl_ms : rs->ttl_ms);

    pthread_mutex_lock(&rs->lock);
    expire_locked(rs, now);
    /* The owner's own oldest make room first (its owner record goes with
     * its last entry, so look it up each time). */
    struct owner *o;
    while ((o = owner_find(rs, owner)) &&
           (o->bytes + cost(e) > rs->owner_max_bytes || o->count >= rs->owner_max_entries))
        drop_locked(rs, STAILQ_FIRST(&o->entries));
    /* Owners within their share can still fill the store together: then
     * the oldest of all go. */
    struct entry *old = TAILQ_FIRST(&rs->entries);
    while (old && (rs->bytes + cost(e) > rs->max_bytes || rs->count >= RUNSTORE_MAX_ENTRIES)) {
        struct entry *next = TAILQ_NEXT(old, link);
        drop_locked(rs, old);
        old = next;
    }
    append_locked(rs, e, owner);
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
    double now = util_now_ms();
    expire_locked(rs, now);
    const struct owner *o = owner_find(rs, owner);
    for (const struct entry *e = o ? STAILQ_FIRST(&o->entries) : NULL; e;
         e = STAILQ_NEXT(e, owner_link)) {
        /* One put with a shorter time of its own may have expired behind
         * an older one that has not: past its time, it is gone. */
        if (strcmp(e->uri, uri) == 0 && e->expires_ms > now) {
            *mime = xstrdup(e->mime);
            *data = xmalloc(e->size + 1);
            memcpy(*data, e->data, e->size + 1);
            *size = e->size;
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&rs->lock);
    return rc;
}

size_t runstore_bytes(struct runstore *rs)
{
    return atomic_load(&rs->bytes);
}

size_t runstore_owner_bytes(struct runstore *rs, const char *owner)
{
    pthread_mutex_lock(&rs->lock);
    const struct owner *o = owner_find(rs, owner);
    size_t n = o ? o->bytes : 0;
    pthread_mutex_unlock(&rs->lock);
    return n;
}
