#include "sandbox/packages/pkgcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <limits.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "sandbox/packages/pkgcache_impl.h"
#include "sandbox/packages/pkgcache_verify.h"

/* Passes over tmp/ at open: removing a deep tree moves parts of it up
 * into tmp/, which the next pass removes. */
#define SWEEP_PASSES 8

/* ---- keys and the directory ------------------------------------------------ */

int pkgcache_key(const char *const *parts, size_t n, char out[PKGCACHE_KEY_LEN + 1])
{
    if (n > PKGCACHE_KEY_MAX_PARTS)
        return -1;
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    for (size_t i = 0; i < n; i++) {
        size_t len = strnlen(parts[i], PKGCACHE_KEY_PART_MAX + 1);
        if (len > PKGCACHE_KEY_PART_MAX)
            return -1;
        uint8_t prefix[8];
        for (int b = 0; b < 8; b++)
            prefix[b] = (uint8_t)((unsigned long long)len >> (56 - 8 * b));
        sha256_update(&ctx, sizeof(prefix), prefix);
        sha256_update(&ctx, len, (const uint8_t *)parts[i]);
    }
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_digest(&ctx, sizeof(digest), digest);
    util_hex(digest, sizeof(digest), out);
    return 0;
}

bool pkgcache_key_valid(const char *key)
{
    size_t n = strnlen(key, PKGCACHE_KEY_LEN + 1);
    if (n != PKGCACHE_KEY_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((key[i] >= '0' && key[i] <= '9') || (key[i] >= 'a' && key[i] <= 'f')))
            return false;
    return true;
}

/* Opens (making it) name under parent: a directory, not a link, of this
 * uid, no one else may write it; its mode made exactly mode. */
static int sub_dir(int parent, const char *root, const char *name, mode_t mode, struct err *err)
{
    if (mkdirat(parent, name, mode) < 0 && errno != EEXIST)
        return err_set(err, ERR_IO, "cannot make %s/%s: %s", root, name, strerror(errno));
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        err_set(err, ERR_INVALID, "%s/%s is not a directory the cache can open: %s", root, name,
                strerror(errno));
        goto fail;
    }
    if (st.st_uid != geteuid() || (st.st_mode & 022)) {
        err_set(err, ERR_INVALID, "%s/%s must be a directory of uid %u that no one else may write",
                root, name, (unsigned)geteuid());
        goto fail;
    }
    if ((st.st_mode & 07777) != mode && fchmod(fd, mode) < 0) {
        err_set(err, ERR_IO, "cannot chmod %s/%s: %s", root, name, strerror(errno));
        goto fail;
    }
    return fd;
fail:
    if (fd >= 0)
        close(fd);
    return -1;
}

static int open_dirs(struct pkgcache *c, const char *dir, struct err *err)
{
    struct stat st, now;
    int rc = util_own_dir(dir, 0755, &st);
    if (rc == UTIL_DIR_NOT_OURS)
        return err_set(err, ERR_INVALID,
                       "the package cache directory %s must be a directory (not a link) of uid %u "
                       "that no one else may write",
                       dir, (unsigned)geteuid());
    if (rc < 0)
        return err_set(err, ERR_INVALID, "cannot make the package cache directory %s: %s", dir,
                       strerror(errno));
    c->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (c->dir_fd < 0 || fstat(c->dir_fd, &now) < 0 || now.st_ino != st.st_ino ||
        now.st_dev != st.st_dev)
        return err_set(err, ERR_INVALID, "the package cache directory %s changed while opened",
                       dir);
    /* One daemon per cache: another's open would empty tmp/ under its
     * installs and evict sets its sandboxes use. Held until close. */
    if (flock(c->dir_fd, LOCK_EX | LOCK_NB) < 0)
        return err_set(err, ERR_INVALID, "%s is in use by another daemon (%s)", dir,
                       strerror(errno));
    c->root = realpath(dir, NULL);
    if (!c->root)
        return err_set(err, ERR_IO, "cannot resolve %s: %s", dir, strerror(errno));
    c->sets_fd = sub_dir(c->dir_fd, c->root, "sets", 0755, err);
    if (c->sets_fd < 0)
        return -1;
    c->tmp_fd = sub_dir(c->dir_fd, c->root, "tmp", 0700, err);
    return c->tmp_fd < 0 ? -1 : 0;
}

/* Empties tmp/: staging directories and sets on their way out that a
 * killed daemon left. */
static void sweep_tmp(struct pkgcache *c)
{
    for (int pass = 0; pass < SWEEP_PASSES; pass++) {
        int fd = fcntl(c->tmp_fd, F_DUPFD_CLOEXEC, 0);
        DIR *d = fd < 0 ? NULL : fdopendir(fd);
        if (!d) {
            if (fd >= 0)
                close(fd);
            return;
        }
        unsigned removed = 0;
        const struct dirent *e;
        // cppcheck-suppress readdirCalled
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                pkgcache_remove_tree(c->tmp_fd, e->d_name) == 0)
                removed++;
        closedir(d);
        if (removed == 0)
            return;
        log_info("package cache: removed %u unfinished entries from %s/tmp", removed, c->root);
    }
}

/* ---- the sets -------------------------------------------------------------- */

struct set *pkgcache_find_set(struct pkgcache *c, const char *key)
{
    for (struct set *s = c->sets; s; s = s->next)
        if (strcmp(s->key, key) == 0)
            return s;
    return NULL;
}

struct set *pkgcache_add_set(struct pkgcache *c, const char *key, unsigned long long bytes,
                             struct timespec used)
{
    struct set *s = xcalloc(1, sizeof(*s));
    memcpy(s->key, key, PKGCACHE_KEY_LEN + 1);
    s->bytes = bytes;
    s->used = used;
    s->next = c->sets;
    c->sets = s;
    c->nsets++;
    c->bytes += bytes;
    return s;
}

int pkgcache_take_out(struct pkgcache *c, const char *name, char out[PKGCACHE_TMP_NAME_MAX])
{
    char shown[PKGCACHE_KEY_LEN + 1];
    util_printable_ascii(shown, sizeof(shown), name, strlen(name), false);
    snprintf(out, PKGCACHE_TMP_NAME_MAX, "evict.%s.%u", shown, c->evict_seq++);
    if (renameat(c->sets_fd, name, c->tmp_fd, out) < 0) {
        log_warn("package cache: cannot move %s/sets/%s out: %s", c->root, shown, strerror(errno));
        return -1;
    }
    return 0;
}

static void drop_entry(struct pkgcache *c, const char *name, const char *why)
{
    char out[PKGCACHE_TMP_NAME_MAX];
    log_warn("package cache: removing %s/sets/%s: %s", c->root, LOG_FIELD(name), why);
    if (pkgcache_take_out(c, name, out) == 0)
        pkgcache_remove_tree(c->tmp_fd, out);
}

/* Adds sets/name when it is a whole set (a key's name, a manifest, a tree
 * that passes the checks); removes it otherwise. */
static void scan_one(struct pkgcache *c, const char *name)
{
    if (!pkgcache_key_valid(name))
        return drop_entry(c, name, "not a set's name");
    int fd = openat(c->sets_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return drop_entry(c, name, "not a directory");
    struct stat st;
    struct err err = ERR_INIT;
    if (fstatat(fd, PKGCACHE_MANIFEST_NAME, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return drop_entry(c, name, "no manifest");
    }
    struct pkgcache_walk w = {.max_bytes = c->max_bytes, .fix = false};
    if (pkgcache_verify_tree(fd, &w, &err) < 0) {
        close(fd);
        drop_entry(c, name, err_msg(&err));
        err_clear(&err);
        return;
    }
    close(fd);
    pkgcache_add_set(c, name, w.bytes + (unsigned long long)st.st_size, st.st_mtim);
}

static void scan_sets(struct pkgcache *c)
{
    int fd = fcntl(c->sets_fd, F_DUPFD_CLOEXEC, 0);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    const struct dirent *e;
    // cppcheck-suppress readdirCalled
    while ((e = readdir(d)) != NULL && c->nsets < PKGCACHE_MAX_SETS)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            scan_one(c, e->d_name);
    closedir(d);
}

int pkgcache_open(const char *dir, unsigned long long max_bytes, struct pkgcache **out,
                  struct err *err)
{
    *out = NULL;
    if (strnlen(dir, PKGCACHE_DIR_MAX + 1) > PKGCACHE_DIR_MAX || !*dir)
        return err_set(err, ERR_INVALID, "the package cache directory's path is empty or too long");
    if (max_bytes == 0)
        return err_set(err, ERR_INVALID, "the package cache's size cap must be above 0");
    struct pkgcache *c = xcalloc(1, sizeof(*c));
    c->dir_fd = c->sets_fd = c->tmp_fd = -1;
    c->max_bytes = max_bytes;
    pthread_mutex_init(&c->lock, NULL);
    util_cond_init_monotonic(&c->done);
    if (open_dirs(c, dir, err) < 0) {
        pkgcache_close(c);
        return -1;
    }
    sweep_tmp(c);
    scan_sets(c);
    log_info("package cache %s: %llu sets, %llu bytes", c->root, c->nsets, c->bytes);
    *out = c;
    return 0;
}

void pkgcache_close(struct pkgcache *c)
{
    if (!c)
        return;
    for (struct set *s = c->sets, *next; s; s = next) {
        next = s->next;
        free(s);
    }
    for (struct pkgcache_install *i = c->installs, *next; i; i = next) {
        next = i->next;
        free(i->msg);
        free(i);
    }
    if (c->dir_fd >= 0)
        close(c->dir_fd);
    if (c->sets_fd >= 0)
        close(c->sets_fd);
    if (c->tmp_fd >= 0)
        close(c->tmp_fd);
    pthread_cond_destroy(&c->done);
    pthread_mutex_destroy(&c->lock);
    free(c->root);
    free(c);
}

void pkgcache_stats(struct pkgcache *c, struct pkgcache_stats *out)
{
    pthread_mutex_lock(&c->lock);
    *out = (struct pkgcache_stats){
        .sets = c->nsets,
        .bytes = c->bytes,
        .hits = c->hits,
        .installs = c->installed,
        .evictions = c->evictions,
    };
    pthread_mutex_unlock(&c->lock);
}
