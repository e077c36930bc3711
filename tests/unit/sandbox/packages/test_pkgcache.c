/* pkgcache.c, pkgcache_lease.c and pkgcache_verify.c: keys; the layout an
 * open makes and the directories it refuses; a restart keeps the sets and
 * their order of use, and sweeps what a killed daemon left; HIT, INSTALL
 * and waiting on another caller's install (its set, its failure, a
 * deadline); a staged tree is refused for each thing a set may not hold,
 * leaving neither set nor staging directory; a published one is the
 * daemon's and read-only; spare staging directories are dropped or
 * adopted whole; eviction spares leased sets; and many threads
 * on a few keys (the TSan build's race check). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "sandbox/packages/pkgcache.h"
#include "sandbox/packages/pkgcache_impl.h"
#include "sandbox/packages/pkgcache_verify.h"

/* How long a test waits for a thread to reach a state (not a timing
 * assertion: a bound on a hang). */
#define WAIT_BOUND_MS 20000.0

struct fix {
    char base[64];
    char dir[96];
};

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(p) < 0 && errno != ENOENT ? -1 : 0;
}

static void rm_rf(const char *p)
{
    nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int setup(void **state)
{
    struct fix *f = calloc(1, sizeof(*f));
    snprintf(f->base, sizeof(f->base), "/tmp/pkgcache-test.XXXXXX");
    if (!mkdtemp(f->base))
        return -1;
    snprintf(f->dir, sizeof(f->dir), "%s/cache", f->base);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fix *f = *state;
    rm_rf(f->base);
    free(f);
    return 0;
}

static void key_of(const char *name, char key[PKGCACHE_KEY_LEN + 1])
{
    const char *parts[] = {"test", name};
    assert_int_equal(pkgcache_key(parts, 2, key), 0);
}

static struct pkgcache *open_cache(const struct fix *f, unsigned long long max)
{
    struct pkgcache *c = NULL;
    struct err err = ERR_INIT;
    if (pkgcache_open(f->dir, max, &c, &err) < 0)
        fail_msg("open: %s", err_msg(&err));
    return c;
}

/* Writes n bytes (or text) to rel under dir, with mode. */
static void put(const char *dir, const char *rel, size_t n, const char *text, mode_t mode)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    if (text) {
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    } else {
        char *b = calloc(1, n + 1);
        memset(b, 'x', n);
        assert_int_equal(write(fd, b, n), (ssize_t)n);
        free(b);
    }
    close(fd);
    assert_int_equal(chmod(p, mode), 0);
}

static bool exists_at(const char *dir, const char *rel)
{
    char p[4096];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    return lstat(p, &st) == 0;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static int count_sub(const struct fix *f, const char *sub)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", f->dir, sub);
    return count_entries(p);
}

/* Installs name as one file "data" of n bytes; the lease is released. */
static void install(struct pkgcache *c, const char *name, size_t n)
{
    char key[PKGCACHE_KEY_LEN + 1];
    key_of(name, key);
    struct pkgcache_lease l;
    struct err err = ERR_INIT;
    assert_int_equal(pkgcache_acquire(c, key, util_now_ms() + WAIT_BOUND_MS, &l, &err), 0);
    assert_int_equal(l.kind, PKGCACHE_INSTALL);
    put(l.path, "data", n, NULL, 0644);
    if (pkgcache_publish(c, &l, "{}", &err) < 0)
        fail_msg("publish %s: %s", name, err_msg(&err));
    assert_int_equal(l.kind, PKGCACHE_HIT);
    pkgcache_release(c, &l);
    assert_int_equal(l.kind, PKGCACHE_NONE);
}

/* Whether name is published: a HIT (released at once), or not (the
 * INSTALL aborted). */
static bool cached(struct pkgcache *c, const char *name)
{
    char key[PKGCACHE_KEY_LEN + 1];
    key_of(name, key);
    struct pkgcache_lease l;
    struct err err = ERR_INIT;
    assert_int_equal(pkgcache_acquire(c, key, util_now_ms() + WAIT_BOUND_MS, &l, &err), 0);
    bool hit = l.kind == PKGCACHE_HIT;
    if (hit)
        pkgcache_release(c, &l);
    else
        pkgcache_abort(c, &l, NULL);
    return hit;
}

/* ---- spare staging directories ------------------------------------------- */

/* A spare is a 0777 directory under tmp/ that a drop removes whole; one
 * adopted by an INSTALL lease is what the lease publishes, and leaves no
 * entry of its own; a path that is not a spare is refused and the lease
 * stays as it was. */
static void test_spare_adopted(void **state)
{
    struct fix *f = *state;
    struct pkgcache *c = open_cache(f, 1 << 20);
    struct err err = ERR_INIT;
    char *a = NULL, *b = NULL, p[512];
    assert_int_equal(pkgcache_stage_new(c, &a, &err), 0);
    assert_int_equal(pkgcache_stage_new(c, &b, &err), 0);
    assert_string_not_equal(a, b);
    snprintf(p, sizeof(p), "%s/tmp/spare.", f->dir);
    assert_memory_equal(a, p, strlen(p));
    struct stat st;
    assert_int_equal(lstat(a, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0777);
    put(a, "dropped", 3, NULL, 0644);
    pkgcache_stage_drop(c, a);
    assert_int_equal(lstat(a, &st), -1);
    pkgcache_stage_drop(c, "/etc"); /* not a spare: left alone */
    assert_int_equal(lstat("/etc", &st), 0);
    free(a);

    char key[PKGCACHE_KEY_LEN + 1];
    key_of("spare", key);
    struct pkgcache_lease l;
    assert_int_equal(pkgcache_acquire(c, key, util_now_ms() + 1000, &l, &err), 0);
    assert_int_equal(l.kind, PKGCACHE_INSTALL);
    assert_int_equal(pkgcache_adopt(c, &l, "/tmp", &err), -1);
    assert_int_equal(l.kind, PKGCACHE_INSTALL);
    err_clear(&err);
    put(b, "data", 5, NULL, 0644);
    assert_int_equal(pkgcache_adopt(c, &l, b, &err), 0);
    assert_int_equal(lstat(b, &st), -1);
    assert_true(exists_at(l.path, "data"));
    assert_int_equal(count_sub(f, "tmp"), 1);
    free(b);
    if (pkgcache_publish(c, &l, "{}", &err) < 0)
        fail_msg("publish: %s", err_msg(&err));
    assert_true(exists_at(l.path, "data"));
    assert_int_equal(count_sub(f, "tmp"), 0);
    /* Only an INSTALL lease adopts; the spare goes either way. */
    assert_int_equal(pkgcache_stage_new(c, &a, &err), 0);
    assert_int_equal(pkgcache_adopt(c, &l, a, &err), -1);
    err_clear(&err);
    assert_int_equal(lstat(a, &st), -1);
    free(a);
    pkgcache_release(c, &l);
    pkgcache_close(c);
}

/* ---- keys and the directory ---------------------------------------------- */

static void test_key(void **state)
{
    (void)state;
    char k0[PKGCACHE_KEY_LEN + 1], k1[PKGCACHE_KEY_LEN + 1], k2[PKGCACHE_KEY_LEN + 1];
    assert_int_equal(pkgcache_key(NULL, 0, k0), 0);
    assert_string_equal(k0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    /* Each part behind its length, 8 bytes big-endian. */
    const char *abc[] = {"abc"};
    assert_int_equal(pkgcache_key(abc, 1, k1), 0);
    assert_string_equal(k1, "c3494ca1a2cf8eeb8a11ded316fb55b83c3bbbedb6313cd50415251e5d09e12f");
    const char *ab_c[] = {"ab", "c"}, *a_bc[] = {"a", "bc"};
    assert_int_equal(pkgcache_key(ab_c, 2, k1), 0);
    assert_int_equal(pkgcache_key(a_bc, 2, k2), 0);
    assert_string_not_equal(k1, k2);
    assert_string_equal(k1, "601d5476e2ccfe2c87a2bba7a322659734a05749d5b5aa781f513e4912db0d5f");
    char *big = calloc(1, PKGCACHE_KEY_PART_MAX + 2);
    memset(big, 'a', PKGCACHE_KEY_PART_MAX + 1);
    const char *over[] = {big};
    assert_int_equal(pkgcache_key(over, 1, k1), -1);
    free(big);
}

static void expect_open_refused(const struct fix *f, const char *dir, const char *text)
{
    struct pkgcache *c = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(pkgcache_open(dir, 1 << 20, &c, &err), -1);
    assert_null(c);
    assert_int_equal(err.code, ERR_INVALID);
    if (!strstr(err_msg(&err), text))
        fail_msg("%s: '%s' has no '%s'", f->dir, err_msg(&err), text);
    err_clear(&err);
}

static void test_open_layout(void **state)
{
    struct fix *f = *state;
    struct pkgcache *c = open_cache(f, 1 << 20);
    struct stat st;
    char p[256];
    assert_int_equal(lstat(f->dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);
    snprintf(p, sizeof(p), "%s/sets", f->dir);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);
    snprintf(p, sizeof(p), "%s/tmp", f->dir);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    struct pkgcache_stats s;
    pkgcache_stats(c, &s);
    assert_int_equal(s.sets, 0);
    assert_int_equal(s.bytes, 0);
    /* One daemon per cache: a second open waits for none, it is refused. */
    expect_open_refused(f, f->dir, "in use by another daemon");
    pkgcache_close(c);
    c = open_cache(f, 1 << 20);
    pkgcache_close(c);
}

static void test_open_refuses(void **state)
{
    struct fix *f = *state;
    char p[256];
    /* Others may write it. */
    assert_int_equal(mkdir(f->dir, 0755), 0);
    assert_int_equal(chmod(f->dir, 0777), 0);
    expect_open_refused(f, f->dir, "no one else may write");
    assert_int_equal(chmod(f->dir, 0755), 0);
    /* A link to a directory. */
    snprintf(p, sizeof(p), "%s/link", f->base);
    assert_int_equal(symlink(f->dir, p), 0);
    expect_open_refused(f, p, "not a link");
    /* A file. */
    snprintf(p, sizeof(p), "%s/file", f->base);
    put(f->base, "file", 1, NULL, 0644);
    expect_open_refused(f, p, "must be a directory");
    /* sets/ a link, tmp/ open to others. */
    snprintf(p, sizeof(p), "%s/sets", f->dir);
    assert_int_equal(symlink(f->base, p), 0);
    expect_open_refused(f, f->dir, "sets");
    assert_int_equal(unlink(p), 0);
    snprintf(p, sizeof(p), "%s/tmp", f->dir);
    assert_int_equal(mkdir(p, 0777), 0);
    assert_int_equal(chmod(p, 0777), 0);
    expect_open_refused(f, f->dir, "tmp must be a directory");
    struct pkgcache *c = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(pkgcache_open(f->dir, 0, &c, &err), -1);
    err_clear(&err);
}

/* ---- HIT, INSTALL, the published tree -------------------------------------- */

static void test_install_then_hit(void **state)
{
    struct fix *f = *state;
    struct pkgcache *c = open_cache(f, 1 << 20);
    char key[PKGCACHE_KEY_LEN + 1], p[512];
    key_of("pkg", key);
    struct pkgcache_lease l, h;
    struct err err = ERR_INIT;
    assert_int_equal(pkgcache_acquire(c, key, util_now_ms() + 1000, &l, &err), 0);
    assert_int_equal(l.kind, PKGCACHE_INSTALL);
    assert_int_equal(count_entries(l.path), 0);
    assert_non_null(strstr(l.path, "/tmp/"));
    /* What a sandbox's uid wrote: files, a script, a directory, links. */
    snprintf(p, sizeof(p), "%s/lib", l.path);
    assert_int_equal(mkdir(p, 0777), 0);
    put(l.path, "lib/mod.py", 0, "print(1)\n", 0666);
    put(l.path, "lib/tool", 10, NULL, 0700);
    snprintf(p, sizeof(p), "%s/lib/alias", l.path);
    assert_int_equal(symlink("../lib/./mod.py", p), 0);
    assert_int_equal(lchown(p, 12345, 12345), 0);
    snprintf(p, sizeof(p), "%s/lib/tool", l.path);
    assert_int_equal(chown(p, 12345, 12345), 0);
    assert_int_equal(chown(l.path, 12345, 12345), 0);
    if (pkgcache_publish(c, &l, "{\"packages\":[]}", &err) < 0)
        fail_msg("publish: %s", err_msg(&err));
    assert_int_equal(l.kind, PKGCACHE_HIT);
    snprintf(p, sizeof(p), "%s/sets/%s", f->dir, key);
    assert_string_equal(l.path, p);
    assert_int_equal(count_sub(f, "tmp"), 0);

    struct stat st;
    snprintf(p, sizeof(p), "%s/sets/%s", f->dir, key);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0555);
    assert_int_equal(st.st_uid, geteuid());
    snprintf(p, sizeof(p), "%s/sets/%s/lib", f->dir, key);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0555);
    snprintf(p, sizeof(p), "%s/sets/%s/lib/mod.py", f->dir, key);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0444);
    snprintf(p, sizeof(p), "%s/sets/%s/lib/tool", f->dir, key);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0555);
    assert_int_equal(st.st_uid, geteuid());
    snprintf(p, sizeof(p), "%s/sets/%s/lib/alias", f->dir, key);
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(st.st_uid, geteuid());
    snprintf(p, sizeof(p), "%s/sets/%s/" PKGCACHE_MANIFEST_NAME, f->dir, key);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0444);
    assert_int_equal(st.st_size, strlen("{\"packages\":[]}"));

    assert_int_equal(pkgcache_acquire(c, key, util_now_ms() + 1000, &h, &err), 0);
    assert_int_equal(h.kind, PKGCACHE_HIT);
    assert_string_equal(h.path, l.path);
    pkgcache_release(c, &h);
    pkgcache_release(c, &l);
    struct pkgcache_stats s;
    pkgcache_stats(c, &s);
    assert_int_equal(s.sets, 1);
    assert_int_equal(s.installs, 1);
    assert_int_equal(s.hits, 1);
    assert_int_equal(s.bytes, 9 + 10 + strlen("../lib/./mod.py") + strlen("{\"packages\":[]}"));
    /* Not a key. */
    assert_int_equal(pkgcache_acquire(c, "../x", util_now_ms() + 1000, &h, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    err_clear(&err);
    pkgcache_close(c);
}

/* ---- restarts ---------------------------------------------------------------- */

static void test_restart_keeps_sets_and_order(void **state)
{
    struct fix *f = *state;
    /* Three sets of 902 bytes (900 and the manifest "{}") fit; four do not. */
    struct pkgcache *c = open_cache(f, 3000);
    install(c, "a", 900);
    install(c, "b", 900);
    install(c, "c", 900);
    assert_true(cached(c, "a")); /* a is now the most recently used */
    pkgcache_close(c);

    c = open_cache(f, 3000);
    struct pkgcache_stats s;
    pkgcache_stats(c, &s);
    assert_int_equal(s.sets, 3);
    assert_int_equal(s.bytes, 3 * 902);
    install(c, "d", 900);
    pkgcache_stats(c, &s);
    assert_int_equal(s.evictions, 1);
    assert_int_equal(s.sets, 3);
    assert_int_equal(s.bytes, 3 * 902);
    /* b was the least recently used. */
    assert_true(cached(c, "a"));
    assert_true(cached(c, "c"));
    assert_true(cached(c, "d"));
    assert_false(cached(c, "b"));
    assert_int_equal(count_sub(f, "sets"), 3);
    assert_int_equal(count_sub(f, "tmp"), 0);
    pkgcache_close(c);
}

static void test_stale_entries_swept(void **state)
{
    struct fix *f = *state;
    struct pkgcache *c = open_cache(f, 1 << 20);
    install(c, "kept", 10);
    pkgcache_close(c);
    char p[512], key[PKGCACHE_KEY_LEN + 1];
    /* A half-written staging directory, read-only in parts, and deeper than
     * a removal keeps open. */
    snprintf(p, sizeof(p), "%s/tmp/half", f->dir);
    assert_int_equal(mkdir(p, 0755), 0);
    size_t len = strlen(p);
    for (int i = 0; i < PKGCACHE_REMOVE_DEPTH + 8; i++) {
        len += (size_t)snprintf(p + len, sizeof(p) - len, "/d");
        assert_int_equal(mkdir(p, 0755), 0);
    }
    put(p, "f", 5, NULL, 0444);
    assert_int_equal(chmod(p, 0555), 0);
    put(f->dir, "tmp/loose", 5, NULL, 0644);
    /* In sets/: a name that is no key, and a key's directory without its
     * manifest (never published whole). */
    put(f->dir, "sets/stray", 5, NULL, 0644);
    key_of("nomanifest", key);
    snprintf(p, sizeof(p), "%s/sets/%s", f->dir, key);
    assert_int_equal(mkdir(p, 0755), 0);
    put(p, "data", 5, NULL, 0644);

    c = open_cache(f, 1 << 20);
    assert_int_equal(count_sub(f, "tmp"), 0);
    assert_int_equal(count_sub(f, "sets"), 1);
    struct pkgcache_stats s;
    pkgcache_stats(c, &s);
    assert_int_equal(s.sets, 1);
    assert_true(cached(c, "kept"));
    assert_false(cached(c, "nomanifest"));
    pkgcache_close(c);
}

/* ---- waiting on another caller's install ----------------------------------- */

struct waiter {
    struct pkgcache *c;
    const char *key;
    double deadline;
    int rc;
    enum err_code code;
    char msg[256];
    enum pkgcache_lease_kind kind;
    struct pkgcache_lease lease;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    struct err err = ERR_INIT;
    w->rc = pkgcache_acquire(w->c, w->key, w->deadline, &w->lease, &err);
    w->kind = w->lease.kind;
    w->code = err.code;
    snprintf(w->msg, sizeof(w->msg), "%s", err_msg(&err));
    err_clear(&err);
    return NULL;
}

/* Waits (bounded) until n callers wait on key's install. */
static void await_waiting(struct pkgcache *c, const char *key, unsigned n)
{
    double until = util_now_ms() + WAIT_BOUND_MS;
    for (;;) {
        unsigned now = 0;
        pthread_mutex_lock(&c->lock);
        for (struct pkgcache_install *i = c->installs; i; i = i->next)
            if (strcmp(i->key, key) == 0)
                now = i->waiting;
        pthread_mutex_unlock(&c->lock);
        if (now == n)
            return;
        if (util_now_ms() > until)
            fail_msg("%u callers never waited (%u do)", n, now);
        usleep(1000);
    }
}

static unsigned leases_of(struct pkgcache *c, const char *key)
{
    pthread_mutex_lock(&c->lock);
    const struct set *s = pkgcache_find_set(c, key);
    unsigned n = s ? s->leases : 0;
    pthread_mutex_unlock(&c->lock);
    return n;
}

enum { WAITERS = 4 };

static void start_waiters(struct waiter *w, pthread_t *th, struct pkgcache *c, const char *key,
                          double deadline)
{
    for (int i = 0; i < WAITERS; i++) {
        w[i] = (struct waiter){.c = c, .key = key, .deadline = deadline};
        assert_int_equal(pthread_create(&th[i], NULL, waiter_main, &w[i]), 0);
    }
    await_waiting(c, key, WAITERS);
}

static void test_waiters_share_the_set(void **state)
{
    struct fix *f = *state;
    struct pkgcache *c = open_cache(f, 1 << 20);
    char key[PKGCACHE_KEY_LEN + 1];
    key_of("shared", key);
    struct pkgcache_lease l;
    struct err err = ERR_INIT;
    assert_int_equal(pkgcache_acquire(c, key, util_now_ms() + 1000, &l, &err), 0);
    assert_int_equal(l.kind, PKGCACHE_INSTALL);
    struct waiter w[WAITERS];
    pthread_t th[WAITERS];
    start_waiters(w, th, c, key, util_now_ms() + WAIT_BOUND_MS);
    put(l.path, "data", 3, NULL, 0644);
    assert_int_equal(pkgcache_publish(c, &l, "{}", &err), 0);
    for (int i = 0; i < WAITERS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].rc, 0);
        assert_int_equal(w[i].kind, PKGCACHE_HIT);
        assert_string_equal(w[i].lease.path, l.path);
    }
    /* The publish held the set for each of them. */
    assert_int_equal(leases_of(c, key), 1 + WAITERS);
    for (int i = 0; i < WAITERS; i++)
        pkgcache_release(c, &w[i].lease);
    pkgcache_release(c, &l);
    assert_int_equal(leases_of(c, key), 0);
    struct pkgcache_stats s;
    pkgcache_stats(c, &s);
    assert_int_equal(s.installs, 1);
    assert_int_equal(s.hits, WAITERS);
    pkgcache_close(c);
}

static void test_waiters_share_the_failure_then_retry(void **state)
{
    struct fix *f = *state;
    struct pkgcache *c = open_cache(f, 1 << 20);
    char key[PKGCACHE_KEY_LEN + 1];
    key_of("fails", key);
    struct pkgcache_lease l;
    struct err err = ERR_INIT;
    assert_int_equal(pkgcache_acquire(c, key, util_now_ms() + 1000, &l, &err), 0);
    struct waiter w[WAITERS];
    pthread_t th[WAITERS];
    start_waiters(w, th, c, key, util_now_ms() + WAIT_BOUND_MS);
    struct err why = ERR_INIT;
    err_set(&why, ERR_NOT_FOUND, "no package named 'nosuch'");
    char stage[512];
    snprintf(stage, sizeof(stage), "%s", l.path);
    pkgcache_abort(c, &l, &why);
    assert_int_equal(l.kind, PKGCACHE_NONE);
    assert_false(exists_at(stage, ""));
    for (int i = 0; i < WAITERS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].rc, -1);
        assert_int_equal(w[i].code, ERR_NOT_FOUND);
        assert_string_equal(w[i].msg, err_msg(&why));
    }
    err_clear(&why);
    /* A later caller installs again. */
    assert_int_equal(pkgcache_acquire(c, key, util_now_ms() + 1000, &l, &err), 0);
    assert_int_equal(l.kind, PKGCACHE_INSTALL);
    pkgcache_abort(c, &l, NULL);
    struct pkgcache_stats s;
    pkgcache_stats(c, &s);
    assert_int_equal(s.installs, 2);
    assert_int_equal(s.hits, 0);
    assert_int_equal(count_sub(f, "tmp"), 0);
    pkgcache_close(c);
}

static void test_wait_deadline(void **state)
{
    struct fix *f = *state;
    struct pkgcache *c = open_cache(f, 1 << 20);
    char key[PKGCACHE_KEY_LEN + 1];
    key_of("slow", key);
    struct pkgcache_lease l, h;
    struct err err = ERR_INIT;
    assert_int_equal(pkgcache_acquire(c, key, util_now_ms() + 1000, &l, &err), 0);
    assert_int_equal(pkgcache_acquire(c, key, util_now_ms() + 20, &h, &err), -1);
    assert_int_equal(err.code, ERR_TIMEOUT);
    assert_int_equal(h.kind, PKGCACHE_NONE);
    err_clear(&err);
    put(l.path, "data", 3, NULL, 0644);
    assert_int_equal(pkgcache_publish(c, &l, "{}", &err), 0);
    /* No lease was kept for the caller that gave up. */
    assert_int_equal(leases_of(c, key), 1);
    pkgcache_release(c, &l);
    pkgcache_close(c);
}

/* ---- what a set may not hold --------------------------------------------- */

typedef void (*stager)(const char *dir);

static void stage_link_absolute(const char *dir)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/passwd", dir);
    assert_int_equal(symlink("/etc/passwd", p), 0);
}

static void stage_link_up(const char *dir)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/sub", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/sub/out", dir);
    assert_int_equal(symlink("../../outside", p), 0);
}

/* sub/up -> .. is the root, inside; but sub/x -> up/.. would be the root's
 * parent, though it names no more '..' than sub is deep. */
static void stage_link_up_after_name(const char *dir)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/sub", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/sub/up", dir);
    assert_int_equal(symlink("..", p), 0);
    snprintf(p, sizeof(p), "%s/sub/x", dir);
    assert_int_equal(symlink("up/..", p), 0);
}

static void stage_setuid(const char *dir)
{
    put(dir, "su", 4, NULL, 04755);
}

static void stage_sgid_dir(const char *dir)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/g", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(chmod(p, 02755), 0);
}

static void stage_fifo(const char *dir)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/fifo", dir);
    assert_int_equal(mkfifo(p, 0644), 0);
}

static void stage_hard_link(const char *dir)
{
    char a[512], b[512];
    put(dir, "a", 4, NULL, 0644);
    snprintf(a, sizeof(a), "%s/a", dir);
    snprintf(b, sizeof(b), "%s/b", dir);
    assert_int_equal(link(a, b), 0);
}

static void stage_too_deep(const char *dir)
{
    char p[4096];
    size_t len = (size_t)snprintf(p, sizeof(p), "%s", dir);
    for (int i = 0; i <= PKGCACHE_MAX_DEPTH; i++) {
        len += (size_t)snprintf(p + len, sizeof(p) - len, "/d");
        assert_int_equal(mkdir(p, 0755), 0);
    }
}

static void stage_too_large(const char *dir)
{
    put(dir, "big", 4096, NULL, 0644); /* the cap below is 4000 */
}

static void stage_manifest_name(const char *dir)
{
    put(dir, PKGCACHE_MANIFEST_NAME, 0, "{\"forged\":1}", 0644);
}

static void expect_refused(const struct fix *f, stager stage, enum err_code code, const char *text)
{
    struct pkgcache *c = open_cache(f, 4000);
    char key[PKGCACHE_KEY_LEN + 1], stage_path[512];
    key_of(text, key);
    struct pkgcache_lease l;
    struct err err = ERR_INIT;
    assert_int_equal(pkgcache_acquire(c, key, util_now_ms() + 1000, &l, &err), 0);
    assert_int_equal(l.kind, PKGCACHE_INSTALL);
    snprintf(stage_path, sizeof(stage_path), "%s", l.path);
    put(l.path, "ok.py", 0, "x = 1\n", 0644);
    stage(l.path);
    assert_int_equal(pkgcache_publish(c, &l, "{}", &err), -1);
    assert_int_equal(l.kind, PKGCACHE_NONE);
    if (err.code != code || !strstr(err_msg(&err), text))
        fail_msg("expected %s '%s', got %s '%s'", err_code_name(code), text,
                 err_code_name(err.code), err_msg(&err));
    err_clear(&err);
    /* Neither a set nor its staging directory is left. */
    assert_false(exists_at(stage_path, ""));
    assert_int_equal(count_sub(f, "tmp"), 0);
    assert_int_equal(count_sub(f, "sets"), 0);
    struct pkgcache_stats s;
    pkgcache_stats(c, &s);
    assert_int_equal(s.sets, 0);
    assert_int_equal(s.bytes, 0);
    assert_false(cached(c, text));
    pkgcache_close(c);
}

static void test_refuses(void **state)
{
    struct fix *f = *state;
    expect_refused(f, stage_link_absolute, ERR_INVALID, "symbolic link to an absolute path");
    expect_refused(f, stage_link_up, ERR_INVALID, "symbolic link out of the set");
    expect_refused(f, stage_link_up_after_name, ERR_INVALID, "'..' after a name");
    expect_refused(f, stage_setuid, ERR_INVALID, "setuid");
    expect_refused(f, stage_sgid_dir, ERR_INVALID, "g: a setuid, setgid or sticky bit");
    expect_refused(f, stage_fifo, ERR_INVALID, "fifo: not a file, directory or symbolic link");
    expect_refused(f, stage_hard_link, ERR_INVALID, "more than one hard link");
    expect_refused(f, stage_too_deep, ERR_TOO_BIG, "nest too deep");
    expect_refused(f, stage_too_large, ERR_TOO_BIG, "big: the set is over its size cap");
    expect_refused(f, stage_manifest_name, ERR_INVALID, "a name the cache keeps for itself");
}

/* ---- eviction ---------------------------------------------------------------- */

static void test_eviction_spares_leased(void **state)
{
    struct fix *f = *state;
    struct pkgcache *c = open_cache(f, 2000);
    char key[PKGCACHE_KEY_LEN + 1];
    key_of("held", key);
    struct pkgcache_lease held;
    struct err err = ERR_INIT;
    assert_int_equal(pkgcache_acquire(c, key, util_now_ms() + 1000, &held, &err), 0);
    put(held.path, "data", 900, NULL, 0644);
    assert_int_equal(pkgcache_publish(c, &held, "{}", &err), 0);
    install(c, "b", 900);
    /* held is the oldest but leased: b goes. */
    install(c, "c", 900);
    struct pkgcache_stats s;
    pkgcache_stats(c, &s);
    assert_int_equal(s.evictions, 1);
    assert_int_equal(s.sets, 2);
    assert_true(exists_at(held.path, "data"));
    assert_true(cached(c, "c"));
    assert_false(cached(c, "b"));
    /* A set being published is its installer's: with every other one
     * leased too, the total stays over the cap until a later publish. */
    struct pkgcache_lease c_lease;
    key_of("c", key);
    assert_int_equal(pkgcache_acquire(c, key, util_now_ms() + 1000, &c_lease, &err), 0);
    install(c, "d", 900);
    pkgcache_stats(c, &s);
    assert_int_equal(s.sets, 3);
    assert_int_equal(s.evictions, 1);
    pkgcache_release(c, &c_lease);
    pkgcache_release(c, &held);
    /* Used in the order d, c, held: the next publish evicts d and c. */
    install(c, "e", 900);
    pkgcache_stats(c, &s);
    assert_int_equal(s.evictions, 3);
    assert_int_equal(s.sets, 2);
    assert_int_equal(s.bytes, 2 * 902);
    assert_true(cached(c, "held"));
    assert_true(cached(c, "e"));
    assert_false(cached(c, "c"));
    assert_false(cached(c, "d"));
    assert_int_equal(count_sub(f, "tmp"), 0);
    assert_int_equal(count_sub(f, "sets"), 2);
    pkgcache_close(c);
}

/* ---- many threads ------------------------------------------------------------ */

enum { STRESS_THREADS = 6, STRESS_ROUNDS = 40, STRESS_KEYS = 5 };

struct stress {
    struct pkgcache *c;
    unsigned seed;
    int bad; /* results that break the contract */
    char why[1024];
    int installs, hits, failures;
};

static void stress_install(struct stress *t, struct pkgcache_lease *l)
{
    struct err err = ERR_INIT;
    if (rand_r(&t->seed) % 5 == 0) {
        err_set(&err, ERR_NOT_FOUND, "stress: no such package");
        pkgcache_abort(t->c, l, &err);
        err_clear(&err);
        return;
    }
    char p[512];
    snprintf(p, sizeof(p), "%s/data", l->path);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
    size_t n = 100 + (size_t)(rand_r(&t->seed) % 500);
    char buf[600];
    memset(buf, 'y', sizeof(buf));
    if (fd < 0 || write(fd, buf, n) != (ssize_t)n) {
        t->bad++;
        snprintf(t->why, sizeof(t->why), "cannot write %s", p);
    }
    if (fd >= 0)
        close(fd);
    if (pkgcache_publish(t->c, l, "{}", &err) < 0) {
        t->bad++;
        snprintf(t->why, sizeof(t->why), "publish: %s", err_msg(&err));
        err_clear(&err);
        return;
    }
    pkgcache_release(t->c, l);
}

static void *stress_main(void *arg)
{
    struct stress *t = arg;
    for (int r = 0; r < STRESS_ROUNDS; r++) {
        char name[16], key[PKGCACHE_KEY_LEN + 1], p[512];
        snprintf(name, sizeof(name), "k%u", rand_r(&t->seed) % STRESS_KEYS);
        const char *parts[] = {"test", name};
        pkgcache_key(parts, 2, key);
        struct pkgcache_lease l;
        struct err err = ERR_INIT;
        if (pkgcache_acquire(t->c, key, util_now_ms() + WAIT_BOUND_MS, &l, &err) < 0) {
            /* Only an installer's failure may be shared. */
            if (strcmp(err_msg(&err), "stress: no such package") != 0) {
                t->bad++;
                snprintf(t->why, sizeof(t->why), "acquire: %s", err_msg(&err));
            }
            t->failures++;
            err_clear(&err);
            continue;
        }
        if (l.kind == PKGCACHE_INSTALL) {
            t->installs++;
            stress_install(t, &l);
            continue;
        }
        t->hits++;
        /* A leased set is never evicted under its user. */
        snprintf(p, sizeof(p), "%s/data", l.path);
        if (access(p, R_OK) < 0) {
            t->bad++;
            snprintf(t->why, sizeof(t->why), "%s gone under its lease", p);
        }
        pkgcache_release(t->c, &l);
    }
    return NULL;
}

static void test_stress(void **state)
{
    struct fix *f = *state;
    /* Room for about three sets: evictions all along. */
    struct pkgcache *c = open_cache(f, 1500);
    struct stress t[STRESS_THREADS];
    pthread_t th[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; i++) {
        t[i] = (struct stress){.c = c, .seed = 7u * (unsigned)i + 1};
        assert_int_equal(pthread_create(&th[i], NULL, stress_main, &t[i]), 0);
    }
    unsigned long long installs = 0, hits = 0;
    for (int i = 0; i < STRESS_THREADS; i++) {
        pthread_join(th[i], NULL);
        if (t[i].bad)
            fail_msg("thread %d: %d bad results, the last: %s", i, t[i].bad, t[i].why);
        installs += (unsigned long long)t[i].installs;
        hits += (unsigned long long)t[i].hits;
    }
    struct pkgcache_stats s;
    pkgcache_stats(c, &s);
    assert_int_equal(s.installs, installs);
    assert_int_equal(s.hits, hits);
    assert_int_equal(s.sets, (unsigned long long)count_sub(f, "sets"));
    assert_int_equal(count_sub(f, "tmp"), 0);
    for (const struct set *x = c->sets; x; x = x->next)
        assert_int_equal(x->leases, 0);
    assert_null(c->installs);
    pkgcache_close(c);
    /* What a restart finds is what was there. */
    c = open_cache(f, 1500);
    struct pkgcache_stats again;
    pkgcache_stats(c, &again);
    assert_int_equal(again.sets, s.sets);
    assert_int_equal(again.bytes, s.bytes);
    pkgcache_close(c);
}

int main(void)
{
    log_set_threshold(LOG_LVL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key),
        cmocka_unit_test_setup_teardown(test_open_layout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_install_then_hit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spare_adopted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_keeps_sets_and_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_entries_swept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waiters_share_the_set, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waiters_share_the_failure_then_retry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eviction_spares_leased, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stress, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
