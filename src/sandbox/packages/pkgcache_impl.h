/* What pkgcache.c (the directory, its scan, keys) and pkgcache_lease.c
 * (acquire, publish, abort, release, eviction) share: the cache's state.
 * Every field below the lock is read and written with it held. */
#ifndef MCPSBX_PKGCACHE_IMPL_H
#define MCPSBX_PKGCACHE_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "sandbox/packages/pkgcache.h"

/* Room for a name this module makes under tmp/ ("evict.KEY.N", "KEY.HEX"). */
#define PKGCACHE_TMP_NAME_MAX (PKGCACHE_KEY_LEN + 32)

/* A published set. */
struct set {
    char key[PKGCACHE_KEY_LEN + 1];
    unsigned long long bytes;
    struct timespec used; /* last use: the manifest's mtime */
    unsigned leases;      /* live HIT leases: never evicted while > 0 */
    struct set *next;
};

/* An install under way, shared by its installer and those waiting. */
struct pkgcache_install {
    char key[PKGCACHE_KEY_LEN + 1];
    bool done, ok;
    enum err_code code; /* the failure, when done and not ok */
    char *msg;
    unsigned waiting; /* waiters that take a lease on the set when ok */
    unsigned refs;    /* the installer's lease and the waiters */
    struct pkgcache_install *next;
};

struct pkgcache {
    char *root; /* the directory, resolved */
    int dir_fd, sets_fd, tmp_fd;
    unsigned long long max_bytes;
    pthread_mutex_t lock;
    pthread_cond_t done; /* an install finished */
    struct set *sets;
    unsigned long long nsets, bytes;
    struct pkgcache_install *installs; /* not done */
    unsigned long long hits, installed, evictions;
    unsigned evict_seq; /* names of sets on their way out */
};

/* PKGCACHE_KEY_LEN lowercase hex digits. */
bool pkgcache_key_valid(const char *key);

/* Lock held. */
struct set *pkgcache_find_set(struct pkgcache *c, const char *key);
struct set *pkgcache_add_set(struct pkgcache *c, const char *key, unsigned long long bytes,
                             struct timespec used);

/* Moves sets/name into tmp/ (one rename: it leaves sets/ at once) under a
 * name of its own, written to out; -1 (logged) when it could not. Lock
 * held once the cache is shared. */
int pkgcache_take_out(struct pkgcache *c, const char *name, char out[PKGCACHE_TMP_NAME_MAX]);

#endif
