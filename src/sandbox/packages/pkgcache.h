/* The package cache on the host: directory trees ("sets") stored under
 * keys, each read-only once published. It knows nothing of engines or
 * installers: a caller asks for a key and either gets the set (a HIT) or
 * a staging directory to fill (INSTALL) that it then publishes or aborts.
 *
 * Layout under the cache's directory:
 *   sets/KEY                   a published set (0555 dirs, 0444/0555 files),
 *                              what sandboxes see read-only
 *   sets/KEY/.mcpsbx-set.json  its manifest, written last; its mtime is the
 *                              set's last use, so LRU order survives restarts
 *   tmp/                       0700: staging directories (spare ones made
 *                              before their lease too) and sets on their
 *                              way out; emptied at open (a half-written set
 *                              is never used)
 *
 * A set is verified (pkgcache_verify.h) before it is published, and
 * published with one rename(2), after a syncfs: a crash leaves no set or a
 * whole one. After a publish the least recently used sets no lease holds
 * are evicted until the total is at most max_bytes.
 *
 * Two callers asking the same missing key at once share one install: the
 * second waits (bounded by its deadline, on a condition variable) and gets
 * the first one's set or the first one's error. A later acquire after a
 * failure installs again.
 *
 * pkgcache.c opens and scans the directory and makes keys; pkgcache_lease.c
 * hands out, publishes and ends leases and evicts; pkgcache_verify.c walks
 * trees.
 *
 * Thread-safe: one mutex guards the cache's lists and counters; no tree is
 * walked under it (verifying, syncing and removing a tree happen outside,
 * on directories no other caller can reach). The few single system calls
 * made under it (renaming an evicted set out of sets/) keep a key from
 * being installed while its old tree is still in place. */
#ifndef MCPSBX_PKGCACHE_H
#define MCPSBX_PKGCACHE_H

#include <stddef.h>

#include "base/err.h"

/* A key: the hex SHA-256 of its parts. */
#define PKGCACHE_KEY_LEN 64
/* The parts of a key, and the bytes of one part. */
#define PKGCACHE_KEY_MAX_PARTS 4096
#define PKGCACHE_KEY_PART_MAX  (64u * 1024u)
/* The manifest's name inside a set; a staged tree may not use it. */
#define PKGCACHE_MANIFEST_NAME ".mcpsbx-set.json"
/* The manifest's bytes. */
#define PKGCACHE_MANIFEST_MAX (256u * 1024u)
/* The sets a cache holds at most (its scan at open stops there). */
#define PKGCACHE_MAX_SETS 100000
/* The directory's path, as given to pkgcache_open. */
#define PKGCACHE_DIR_MAX 1024

struct pkgcache;
struct pkgcache_install;

enum pkgcache_lease_kind {
    PKGCACHE_NONE = 0,
    PKGCACHE_HIT,     /* path is the published set; end with pkgcache_release */
    PKGCACHE_INSTALL, /* path is an empty staging directory to fill; end with
                       * pkgcache_publish or pkgcache_abort */
};

/* The caller's; install is the cache's own. */
struct pkgcache_lease {
    enum pkgcache_lease_kind kind;
    char key[PKGCACHE_KEY_LEN + 1];
    char *path; /* allocated; "<dir>/sets/KEY" or "<dir>/tmp/KEY.<random>" */
    struct pkgcache_install *install;
};

struct pkgcache_stats {
    unsigned long long sets;
    unsigned long long bytes;
    unsigned long long hits;      /* acquires answered with a set, shared installs too */
    unsigned long long installs;  /* acquires answered with INSTALL */
    unsigned long long evictions; /* sets removed to stay under max_bytes */
};

/* Opens (making it, 0755) the cache at dir: sets/ 0755, tmp/ 0700,
 * tmp/ emptied, sets/ scanned (an entry that is not a whole set is
 * removed). dir must be a directory (not a link) of this process's uid
 * that no one else may write, sets/ and tmp/ likewise. max_bytes is the
 * cap of the total and of any one set. */
int pkgcache_open(const char *dir, unsigned long long max_bytes, struct pkgcache **out,
                  struct err *err);

/* Frees the cache; no lease may be live. Sets stay on disk. */
void pkgcache_close(struct pkgcache *c);

/* The key of parts[0..n) (each NUL-terminated), each length-prefixed so
 * that ("ab","c") and ("a","bc") differ. Returns 0, or -1 for more than
 * PKGCACHE_KEY_MAX_PARTS parts or a part over PKGCACHE_KEY_PART_MAX. */
int pkgcache_key(const char *const *parts, size_t n, char out[PKGCACHE_KEY_LEN + 1]);

/* Fills *lease (kind HIT or INSTALL) for key (PKGCACHE_KEY_LEN lowercase hex
 * digits) and returns 0. While another caller installs key, waits for it
 * until deadline (util_now_ms time): its set is a HIT, its failure is
 * this call's (-1, the same code and text). ERR_TIMEOUT at the deadline. */
int pkgcache_acquire(struct pkgcache *c, const char *key, double deadline,
                     struct pkgcache_lease *lease, struct err *err);

/* Verifies the staged tree of an INSTALL lease, makes it read-only and
 * the daemon's, writes manifest (text, at most PKGCACHE_MANIFEST_MAX) and
 * publishes it: 0, and the lease is now a HIT on the set (release it).
 * -1: the staged tree is removed, the lease ended, and callers waiting on
 * the key get the same error (ERR_TOO_BIG over a cap, ERR_INVALID for
 * what a set may not hold, ERR_IO). Evicts afterwards (see above). */
int pkgcache_publish(struct pkgcache *c, struct pkgcache_lease *lease, const char *manifest,
                     struct err *err);

/* Ends an INSTALL lease without a set: the staging directory is removed,
 * and callers waiting on the key get why (NULL: "abandoned") as their
 * error. */
void pkgcache_abort(struct pkgcache *c, struct pkgcache_lease *lease, const struct err *why);

/* A staging directory made before any lease asks for it (for a sandbox
 * set up ahead of its install): "<dir>/tmp/spare.<random>", mode 0777 (the
 * sandbox's uid fills it; tmp/ keeps everyone else out), in *path
 * (allocated). It ends with pkgcache_stage_drop, or in a lease through
 * pkgcache_adopt. */
int pkgcache_stage_new(struct pkgcache *c, char **path, struct err *err);

/* Removes path, one pkgcache_stage_new made, and all it holds (nothing
 * for any other path). The caller still frees path. */
void pkgcache_stage_drop(struct pkgcache *c, const char *path);

/* An INSTALL lease's staging directory becomes path (one pkgcache_stage_new
 * made, filled or not), its own empty one removed: publish or abort it as
 * usual. -1 with err and path dropped when that cannot be done (the lease
 * is as it was). The caller still frees path. */
int pkgcache_adopt(struct pkgcache *c, struct pkgcache_lease *lease, const char *path,
                   struct err *err);

/* Ends a HIT lease and records the set's last use (the manifest's mtime). */
void pkgcache_release(struct pkgcache *c, struct pkgcache_lease *lease);

void pkgcache_stats(struct pkgcache *c, struct pkgcache_stats *out);

#endif
