#include "sandbox/packages/pkgcache_verify.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "sandbox/packages/pkgcache.h"

/* The mode bits a set's entry may not carry. */
#define SPECIAL_BITS (S_ISUID | S_ISGID | S_ISVTX)

/* One walk: the caller's counters and caps, and the relative path of the
 * entry at hand (cut at the cap), for errors. */
struct walk {
    struct pkgcache_walk *w;
    struct err *err;
    char path[PKGCACHE_LINK_MAX + 1];
    size_t len;
};

/* Appends "/name" to the path; returns the length to restore. */
static size_t path_push(struct walk *k, const char *name)
{
    size_t was = k->len, room = sizeof(k->path) - k->len;
    int n = snprintf(k->path + k->len, room, "%s%s", k->len ? "/" : "", name);
    k->len = n < 0 || (size_t)n >= room ? sizeof(k->path) - 1 : k->len + (size_t)n;
    return was;
}

static void path_pop(struct walk *k, size_t was)
{
    k->len = was;
    k->path[was] = '\0';
}

/* Fails with code, naming the entry at hand (escaped: names and link
 * targets are the sandbox's), what is wrong and detail (may be NULL). */
static int refuse(struct walk *k, enum err_code code, const char *what, const char *detail)
{
    char shown[PKGCACHE_PATH_SHOWN];
    char more[PKGCACHE_PATH_SHOWN];
    util_escape(shown, sizeof(shown), k->len ? k->path : ".", k->len ? k->len : 1);
    if (!detail)
        return err_set(k->err, code, "%s: %s", shown, what);
    util_escape(more, sizeof(more), detail, strlen(detail));
    return err_set(k->err, code, "%s: %s %s", shown, what, more);
}

static int io_fail(struct walk *k, const char *op)
{
    return refuse(k, ERR_IO, op, strerror(errno));
}

/* A link's target stays inside the tree: relative, its ".." all at its
 * start and no more of them than the link's directory is deep (depth: 0
 * for the root's entries). A ".." after a name could climb out of the
 * directory a link among those names points to, so it is refused even
 * where it would come back. Every link being so, resolving any of them
 * from inside the tree ends inside it. */
static int check_link_target(struct walk *k, const char *target, int depth)
{
    if (!*target)
        return refuse(k, ERR_INVALID, "a symbolic link with an empty target", NULL);
    if (target[0] == '/')
        return refuse(k, ERR_INVALID, "a symbolic link to an absolute path:", target);
    int ups = 0;
    bool named = false;
    for (const char *p = target; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (named)
                return refuse(k, ERR_INVALID, "a symbolic link with '..' after a name:", target);
            ups++;
        } else if (n > 0 && !(n == 1 && p[0] == '.')) {
            named = true;
        }
        p += n;
        p += *p == '/';
    }
    if (ups > depth)
        return refuse(k, ERR_INVALID, "a symbolic link out of the set:", target);
    return 0;
}

static int visit_link(struct walk *k, int dir, const char *name, const struct stat *st, int depth)
{
    char target[PKGCACHE_LINK_MAX + 1];
    ssize_t n = readlinkat(dir, name, target, sizeof(target));
    if (n < 0)
        return io_fail(k, "readlink");
    if ((size_t)n >= sizeof(target))
        return refuse(k, ERR_TOO_BIG, "a symbolic link's target is over the cap", NULL);
    target[n] = '\0';
    if (check_link_target(k, target, depth) < 0)
        return -1;
    if (k->w->fix && (st->st_uid != geteuid() || st->st_gid != getegid()) &&
        fchownat(dir, name, geteuid(), getegid(), AT_SYMLINK_NOFOLLOW) < 0)
        return io_fail(k, "lchown");
    return 0;
}

/* Makes the open object fd (what st describes) the daemon's, read-only. */
static int fix_mode(struct walk *k, int fd, const struct stat *st, mode_t mode)
{
    if ((st->st_uid != geteuid() || st->st_gid != getegid()) &&
        fchown(fd, geteuid(), getegid()) < 0)
        return io_fail(k, "chown");
    if ((st->st_mode & 07777) != mode && fchmod(fd, mode) < 0)
        return io_fail(k, "chmod");
    return 0;
}

/* Opens name (what lstat found as *st) without following a link and
 * checks it is still that object, not a swapped one. */
static int open_same(struct walk *k, int dir, const char *name, const struct stat *st, int flags)
{
    int fd = openat(dir, name, flags | O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return io_fail(k, "open");
    struct stat now;
    if (fstat(fd, &now) < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino ||
        (now.st_mode & S_IFMT) != (st->st_mode & S_IFMT)) {
        close(fd);
        return refuse(k, ERR_INVALID, "changed while it was checked", NULL);
    }
    return fd;
}

static int visit_file(struct walk *k, int dir, const char *name, const struct stat *st)
{
    /* A second link could tie the set's file to one outside it. */
    if (st->st_nlink != 1)
        return refuse(k, ERR_INVALID, "a file with more than one hard link", NULL);
    if (!k->w->fix)
        return 0;
    int fd = open_same(k, dir, name, st, 0);
    if (fd < 0)
        return -1;
    int rc = fix_mode(k, fd, st, st->st_mode & 0111 ? 0555 : 0444);
    close(fd);
    return rc;
}

static int walk_dir(struct walk *k, int fd, const struct stat *st, int depth);

static int visit(struct walk *k, int dir, const char *name, int depth)
{
    struct stat st;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return io_fail(k, "stat");
    if (st.st_mode & SPECIAL_BITS)
        return refuse(k, ERR_INVALID, "a setuid, setgid or sticky bit", NULL);
    if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
        if ((unsigned long long)st.st_size > k->w->max_bytes - k->w->bytes)
            return refuse(k, ERR_TOO_BIG, "the set is over its size cap", NULL);
        k->w->bytes += (unsigned long long)st.st_size;
        return S_ISREG(st.st_mode) ? visit_file(k, dir, name, &st)
                                   : visit_link(k, dir, name, &st, depth);
    }
    if (!S_ISDIR(st.st_mode))
        return refuse(k, ERR_INVALID, "not a file, directory or symbolic link", NULL);
    if (depth + 1 > PKGCACHE_MAX_DEPTH)
        return refuse(k, ERR_TOO_BIG, "the set's directories nest too deep", NULL);
    int fd = open_same(k, dir, name, &st, O_DIRECTORY);
    if (fd < 0)
        return -1;
    return walk_dir(k, fd, &st, depth + 1);
}

/* Walks the directory fd (consumed), depth below the root, then fixes it. */
static int walk_dir(struct walk *k, int fd, const struct stat *st, int depth)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return io_fail(k, "opendir");
    }
    int rc = 0;
    const struct dirent *e;
    errno = 0;
    // cppcheck-suppress readdirCalled
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        size_t was = path_push(k, e->d_name);
        if (++k->w->entries > PKGCACHE_MAX_ENTRIES)
            rc = refuse(k, ERR_TOO_BIG, "the set has too many entries", NULL);
        else if (depth == 0 && strcmp(e->d_name, PKGCACHE_MANIFEST_NAME) == 0)
            rc = k->w->fix ? refuse(k, ERR_INVALID, "a name the cache keeps for itself", NULL) : 0;
        else
            rc = visit(k, dirfd(d), e->d_name, depth);
        if (rc == 0)
            path_pop(k, was);
        errno = 0;
    }
    if (rc == 0 && errno)
        rc = io_fail(k, "readdir");
    if (rc == 0 && k->w->fix)
        rc = fix_mode(k, dirfd(d), st, depth == 0 ? 0755 : 0555);
    closedir(d);
    return rc;
}

int pkgcache_verify_tree(int root, struct pkgcache_walk *w, struct err *err)
{
    struct walk *k = xcalloc(1, sizeof(*k));
    k->w = w;
    k->err = err;
    w->bytes = 0;
    w->entries = 0;
    int rc = -1;
    struct stat st;
    int fd = fcntl(root, F_DUPFD_CLOEXEC, 0);
    if (fd < 0 || fstat(fd, &st) < 0) {
        io_fail(k, "stat");
        if (fd >= 0)
            close(fd);
        goto out;
    }
    if (!S_ISDIR(st.st_mode)) {
        close(fd);
        refuse(k, ERR_INVALID, "not a directory", NULL);
        goto out;
    }
    if (st.st_mode & SPECIAL_BITS) {
        close(fd);
        refuse(k, ERR_INVALID, "a setuid, setgid or sticky bit", NULL);
        goto out;
    }
    rc = walk_dir(k, fd, &st, 0);
out:
    free(k);
    return rc;
}

/* ---- removal --------------------------------------------------------------- */

/* The ".rm-" names of directories moved up, unique in the process (two
 * removals may share a directory). */
static atomic_uint moved_seq;

struct removal {
    int top;
    unsigned *ids; /* the ".rm-" names this removal made */
    size_t n, cap;
};

static void moved_name(char out[64], unsigned id)
{
    snprintf(out, 64, ".rm-%ld-%u", (long)getpid(), id);
}

/* Moves name (a directory under dir, too deep to open) up into top. */
static void move_up(struct removal *r, int dir, const char *name)
{
    char up[64];
    unsigned id = atomic_fetch_add(&moved_seq, 1);
    moved_name(up, id);
    if (renameat(dir, name, r->top, up) < 0)
        return;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->ids = xrealloc(r->ids, r->cap * sizeof(*r->ids));
    }
    r->ids[r->n++] = id;
}

/* Empties the directory fd (consumed), depth below the removal's start. */
static void empty_dir(struct removal *r, int fd, int depth)
{
    (void)fchmod(fd, 0700); /* a published set's directories are 0555 */
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    const struct dirent *e;
    // cppcheck-suppress readdirCalled
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0 || errno == ENOENT)
            continue;
        if (depth >= PKGCACHE_REMOVE_DEPTH) {
            move_up(r, dirfd(d), e->d_name);
            continue;
        }
        int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0)
            continue;
        empty_dir(r, sub, depth + 1);
        (void)unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

static int remove_one(struct removal *r, const char *name)
{
    if (unlinkat(r->top, name, 0) == 0 || errno == ENOENT)
        return 0;
    int fd = openat(r->top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    empty_dir(r, fd, 0);
    return unlinkat(r->top, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

int pkgcache_remove_tree(int dir, const char *name)
{
    struct removal r = {.top = dir};
    int rc = remove_one(&r, name);
    int saved = errno;
    /* What went up is removed the same way, and may send more up. */
    for (size_t i = 0; i < r.n; i++) {
        char up[64];
        moved_name(up, r.ids[i]);
        (void)remove_one(&r, up);
    }
    free(r.ids);
    errno = saved;
    return rc;
}
