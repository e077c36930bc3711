/* The package cache's leases (pkgcache.h): acquire, publish, abort,
 * release, and the eviction that follows a publish. */
#include "sandbox/packages/pkgcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "sandbox/packages/pkgcache_impl.h"
#include "sandbox/packages/pkgcache_verify.h"

/* Random bytes in a staging directory's name. */
#define STAGE_RANDOM_BYTES 8
/* The names of staging directories made before their lease (tmp/spare.HEX). */
#define SPARE_PREFIX "spare"

/* The sets one eviction moved out of sets/, removed once the lock is let go. */
struct victims {
    char (*names)[PKGCACHE_TMP_NAME_MAX];
    size_t n, cap;
};

static void lease_reset(struct pkgcache_lease *l)
{
    free(l->path);
    *l = (struct pkgcache_lease){.kind = PKGCACHE_NONE};
}

/* The staging directory's name under tmp/. */
static const char *stage_name(const struct pkgcache_lease *l)
{
    const char *slash = strrchr(l->path, '/');
    return slash ? slash + 1 : l->path;
}

static void hit_lease(const struct pkgcache *c, struct pkgcache_lease *l, const char *key)
{
    l->kind = PKGCACHE_HIT;
    memcpy(l->key, key, PKGCACHE_KEY_LEN + 1);
    l->path = xasprintf("%s/sets/%s", c->root, key);
    l->install = NULL;
}

static bool time_before(struct timespec a, struct timespec b)
{
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

/* Lock held: drops a reference; the last one frees a finished install. */
static void install_unref(struct pkgcache_install *i)
{
    if (--i->refs > 0)
        return;
    free(i->msg);
    free(i);
}

/* Lock held: the install is done (ok or not); later acquires no longer
 * find it, and those waiting wake. */
static void install_finish(struct pkgcache *c, struct pkgcache_install *i, bool ok)
{
    for (struct pkgcache_install **pp = &c->installs; *pp; pp = &(*pp)->next)
        if (*pp == i) {
            *pp = i->next;
            break;
        }
    i->done = true;
    i->ok = ok;
    pthread_cond_broadcast(&c->done);
}

/* Ends an INSTALL lease that published nothing: waiting callers get why. */
static void install_fail(struct pkgcache *c, struct pkgcache_lease *lease, const struct err *why)
{
    pthread_mutex_lock(&c->lock);
    struct pkgcache_install *i = lease->install;
    i->code = why && why->code != ERR_OK ? why->code : ERR_CANCELLED;
    i->msg = xstrdup(why && why->code != ERR_OK ? err_msg(why)
                                                : "the install of the package set was abandoned");
    install_finish(c, i, false);
    install_unref(i);
    pthread_mutex_unlock(&c->lock);
    lease_reset(lease);
}

/* Lock held: waits for another caller's install i until deadline. */
static int wait_install(struct pkgcache *c, struct pkgcache_install *i, double deadline,
                        struct pkgcache_lease *lease, struct err *err)
{
    i->refs++;
    i->waiting++;
    while (!i->done) {
        double left = deadline - util_now_ms();
        if (left <= 0)
            break;
        util_cond_wait_ms(&c->done, &c->lock, left);
    }
    int rc = 0;
    if (i->done && i->ok) {
        /* The publish counted this caller's lease on the set. */
        c->hits++;
        hit_lease(c, lease, i->key);
    } else if (i->done) {
        rc = err_set(err, i->code, "%s", i->msg);
    } else {
        i->waiting--;
        rc = err_set(err, ERR_TIMEOUT,
                     "gave up waiting for another install of the same package set");
    }
    install_unref(i);
    return rc;
}

/* A fresh directory tmp/PREFIX.<random> (mode), its name in name. */
static int make_tmp_dir(struct pkgcache *c, const char *prefix, mode_t mode,
                        char name[PKGCACHE_TMP_NAME_MAX], struct err *err)
{
    unsigned char rnd[STAGE_RANDOM_BYTES];
    char hex[2 * STAGE_RANDOM_BYTES + 1];
    if (util_random_bytes(rnd, sizeof(rnd)) < 0)
        return err_set(err, ERR_INTERNAL, "no random bytes for a staging directory's name");
    util_hex(rnd, sizeof(rnd), hex);
    snprintf(name, PKGCACHE_TMP_NAME_MAX, "%s.%s", prefix, hex);
    /* mkdirat's mode passes through the umask; the mode is what callers bind. */
    if (mkdirat(c->tmp_fd, name, 0700) < 0 || fchmodat(c->tmp_fd, name, mode, 0) < 0)
        return err_set(err, ERR_IO, "cannot make a staging directory in %s/tmp: %s", c->root,
                       strerror(errno));
    return 0;
}

static int make_stage(struct pkgcache *c, struct pkgcache_lease *lease, struct err *err)
{
    char name[PKGCACHE_TMP_NAME_MAX];
    if (make_tmp_dir(c, lease->key, 0755, name, err) < 0)
        return -1;
    lease->path = xasprintf("%s/tmp/%s", c->root, name);
    return 0;
}

/* path's name under tmp/ when it is one pkgcache_stage_new made, or NULL. */
static const char *spare_name(const struct pkgcache *c, const char *path)
{
    size_t n = strlen(c->root);
    if (strncmp(path, c->root, n) != 0 ||
        strncmp(path + n, "/tmp/" SPARE_PREFIX ".", sizeof("/tmp/" SPARE_PREFIX ".") - 1) != 0)
        return NULL;
    const char *name = path + n + sizeof("/tmp/") - 1;
    return strchr(name, '/') || strlen(name) >= PKGCACHE_TMP_NAME_MAX ? NULL : name;
}

int pkgcache_stage_new(struct pkgcache *c, char **path, struct err *err)
{
    char name[PKGCACHE_TMP_NAME_MAX];
    if (make_tmp_dir(c, SPARE_PREFIX, 0777, name, err) < 0)
        return -1;
    *path = xasprintf("%s/tmp/%s", c->root, name);
    return 0;
}

void pkgcache_stage_drop(struct pkgcache *c, const char *path)
{
    const char *name = path ? spare_name(c, path) : NULL;
    if (name && pkgcache_remove_tree(c->tmp_fd, name) < 0)
        log_warn("package cache: cannot remove %s/tmp/%s: %s", c->root, name, strerror(errno));
}

int pkgcache_adopt(struct pkgcache *c, struct pkgcache_lease *lease, const char *path,
                   struct err *err)
{
    const char *name = spare_name(c, path);
    if (lease->kind != PKGCACHE_INSTALL || !name) {
        pkgcache_stage_drop(c, path);
        return err_set(err, ERR_INTERNAL, "adopting a staging directory without an install lease");
    }
    /* Swapped in one step: the lease's path names the filled tree at once,
     * and the empty one it had goes under the spare's name. */
    if (renameat2(c->tmp_fd, name, c->tmp_fd, stage_name(lease), RENAME_EXCHANGE) < 0) {
        int e = errno;
        pkgcache_stage_drop(c, path);
        return err_set(err, ERR_IO, "cannot move a staging directory in %s/tmp: %s", c->root,
                       strerror(e));
    }
    pkgcache_stage_drop(c, path);
    return 0;
}

int pkgcache_acquire(struct pkgcache *c, const char *key, double deadline,
                     struct pkgcache_lease *lease, struct err *err)
{
    *lease = (struct pkgcache_lease){.kind = PKGCACHE_NONE};
    if (!pkgcache_key_valid(key))
        return err_set(err, ERR_INVALID, "not a package set's key");
    pthread_mutex_lock(&c->lock);
    struct set *s = pkgcache_find_set(c, key);
    if (s) {
        s->leases++;
        c->hits++;
        hit_lease(c, lease, key);
        pthread_mutex_unlock(&c->lock);
        return 0;
    }
    for (struct pkgcache_install *i = c->installs; i; i = i->next)
        if (strcmp(i->key, key) == 0) {
            int rc = wait_install(c, i, deadline, lease, err);
            pthread_mutex_unlock(&c->lock);
            return rc;
        }
    struct pkgcache_install *i = xcalloc(1, sizeof(*i));
    memcpy(i->key, key, PKGCACHE_KEY_LEN + 1);
    i->refs = 1;
    i->next = c->installs;
    c->installs = i;
    c->installed++;
    pthread_mutex_unlock(&c->lock);
    lease->kind = PKGCACHE_INSTALL;
    memcpy(lease->key, key, PKGCACHE_KEY_LEN + 1);
    lease->install = i;
    if (make_stage(c, lease, err) < 0) {
        install_fail(c, lease, err);
        return -1;
    }
    return 0;
}

/* The manifest, last into the set, its mtime the set's first use (*used). */
static int write_manifest(int root, const char *text, size_t n, struct timespec *used,
                          struct err *err)
{
    int fd = openat(root, PKGCACHE_MANIFEST_NAME,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
    if (fd < 0)
        return err_set(err, ERR_IO, "cannot write the package set's manifest: %s", strerror(errno));
    clock_gettime(CLOCK_REALTIME, used);
    const struct timespec times[2] = {*used, *used};
    int rc = 0;
    if (util_write_all(fd, text, n) < 0 || futimens(fd, times) < 0 || fsync(fd) < 0)
        rc = err_set(err, ERR_IO, "cannot write the package set's manifest: %s", strerror(errno));
    close(fd);
    return rc;
}

/* Verifies the staged tree, writes its manifest, syncs and renames it
 * into sets/: after a crash either all of it is there or none. */
static int seal(struct pkgcache *c, const struct pkgcache_lease *lease, const char *manifest,
                unsigned long long *bytes, struct timespec *used, struct err *err)
{
    size_t mlen = strnlen(manifest, PKGCACHE_MANIFEST_MAX + 1);
    if (mlen > PKGCACHE_MANIFEST_MAX)
        return err_set(err, ERR_TOO_BIG, "the package set's manifest is over %u bytes",
                       PKGCACHE_MANIFEST_MAX);
    int root =
        openat(c->tmp_fd, stage_name(lease), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root < 0)
        return err_set(err, ERR_IO, "cannot open the staged package set: %s", strerror(errno));
    struct pkgcache_walk w = {.max_bytes = c->max_bytes, .fix = true};
    int rc = -1;
    if (pkgcache_verify_tree(root, &w, err) < 0) {
        err_wrap(err, "the package set was refused (caps: %llu bytes, %d levels, %d entries)",
                 c->max_bytes, PKGCACHE_MAX_DEPTH, PKGCACHE_MAX_ENTRIES);
        goto out;
    }
    if (w.bytes + mlen > c->max_bytes) {
        err_set(err, ERR_TOO_BIG, "the package set is over its size cap of %llu bytes",
                c->max_bytes);
        goto out;
    }
    if (write_manifest(root, manifest, mlen, used, err) < 0)
        goto out;
    if (fchmod(root, 0555) < 0 || syncfs(root) < 0 ||
        renameat2(c->tmp_fd, stage_name(lease), c->sets_fd, lease->key, RENAME_NOREPLACE) < 0) {
        err_set(err, ERR_IO, "cannot publish the package set: %s", strerror(errno));
        goto out;
    }
    (void)fsync(c->sets_fd);
    *bytes = w.bytes + mlen;
    rc = 0;
out:
    close(root);
    return rc;
}

/* Lock held: evicts the least recently used sets no lease holds until the
 * total is at most the cap; what leaves sets/ is listed in v. */
static void evict(struct pkgcache *c, struct victims *v)
{
    while (c->bytes > c->max_bytes) {
        struct set **pick = NULL;
        for (struct set **pp = &c->sets; *pp; pp = &(*pp)->next)
            if ((*pp)->leases == 0 && (!pick || time_before((*pp)->used, (*pick)->used)))
                pick = pp;
        if (!pick)
            return;
        struct set *s = *pick;
        if (v->n == v->cap) {
            v->cap = v->cap ? 2 * v->cap : 4;
            v->names = xrealloc(v->names, v->cap * sizeof(*v->names));
        }
        if (pkgcache_take_out(c, s->key, v->names[v->n]) < 0)
            return;
        v->n++;
        *pick = s->next;
        c->nsets--;
        c->bytes -= s->bytes;
        c->evictions++;
        log_info("package cache: evicted set %s (%llu bytes)", s->key, s->bytes);
        free(s);
    }
}

int pkgcache_publish(struct pkgcache *c, struct pkgcache_lease *lease, const char *manifest,
                     struct err *err)
{
    if (lease->kind != PKGCACHE_INSTALL)
        return err_set(err, ERR_INTERNAL, "publishing a package set without an install lease");
    unsigned long long bytes = 0;
    struct timespec used = {0, 0};
    if (seal(c, lease, manifest, &bytes, &used, err) < 0) {
        (void)pkgcache_remove_tree(c->tmp_fd, stage_name(lease));
        install_fail(c, lease, err);
        return -1;
    }
    struct victims v = {NULL, 0, 0};
    pthread_mutex_lock(&c->lock);
    struct pkgcache_install *i = lease->install;
    struct set *s = pkgcache_add_set(c, lease->key, bytes, used);
    s->leases = 1 + i->waiting;
    install_finish(c, i, true);
    install_unref(i);
    evict(c, &v);
    pthread_mutex_unlock(&c->lock);
    for (size_t k = 0; k < v.n; k++)
        (void)pkgcache_remove_tree(c->tmp_fd, v.names[k]);
    free(v.names);
    log_info("package cache: published set %s (%llu bytes)", lease->key, bytes);
    char key[PKGCACHE_KEY_LEN + 1];
    memcpy(key, lease->key, sizeof(key));
    lease_reset(lease);
    hit_lease(c, lease, key);
    return 0;
}

void pkgcache_abort(struct pkgcache *c, struct pkgcache_lease *lease, const struct err *why)
{
    if (lease->kind != PKGCACHE_INSTALL)
        return;
    (void)pkgcache_remove_tree(c->tmp_fd, stage_name(lease));
    install_fail(c, lease, why);
}

void pkgcache_release(struct pkgcache *c, struct pkgcache_lease *lease)
{
    if (lease->kind != PKGCACHE_HIT)
        return;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    const struct timespec times[2] = {now, now};
    char rel[PKGCACHE_KEY_LEN + sizeof("/" PKGCACHE_MANIFEST_NAME)];
    snprintf(rel, sizeof(rel), "%s/%s", lease->key, PKGCACHE_MANIFEST_NAME);
    /* The set is leased, so still in sets/; the stamp is what a restart reads. */
    if (utimensat(c->sets_fd, rel, times, AT_SYMLINK_NOFOLLOW) < 0)
        log_warn("package cache: cannot record the use of set %s: %s", lease->key, strerror(errno));
    pthread_mutex_lock(&c->lock);
    struct set *s = pkgcache_find_set(c, lease->key);
    if (s) {
        if (s->leases > 0)
            s->leases--;
        if (time_before(s->used, now))
            s->used = now;
    }
    pthread_mutex_unlock(&c->lock);
    lease_reset(lease);
}
