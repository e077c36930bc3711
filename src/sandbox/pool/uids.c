#include "sandbox/pool/uids.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"

/* A line of an account file longer than this is not one the host made. */
#define LINE_MAX_BYTES 1024
/* What a found line shows of itself. */
#define LINE_SHOWN 160

struct uids {
    uid_t base;
    uid_t count;
    pthread_mutex_t lock;
    unsigned char *held;    /* bit k: base + k is taken */
    unsigned char *foreign; /* bit k: another daemon's container has it */
    uid_t next;             /* where the next search starts, 0..count-1 */
    size_t n_held;
    size_t n_foreign; /* bits set in foreign and not in held */
};

static bool bit(const unsigned char *map, uid_t k)
{
    return (map[k / 8] >> (k % 8)) & 1u;
}

static void set_bit(unsigned char *map, uid_t k, bool on)
{
    unsigned char m = (unsigned char)(1u << (k % 8));
    if (on)
        map[k / 8] |= m;
    else
        map[k / 8] &= (unsigned char)~m;
}

struct uids *uids_new(uid_t base, uid_t count)
{
    struct uids *u = xcalloc(1, sizeof(*u));
    u->base = base;
    u->count = count ? count : 1;
    size_t bytes = (u->count + 7) / 8;
    u->held = xcalloc(bytes, 1);
    u->foreign = xcalloc(bytes, 1);
    uint32_t r = 0;
    /* A restarted daemon, before its first sweep, is unlikely to start where
     * the containers a killed one left still run. */
    if (util_random_bytes(&r, sizeof(r)) == 0)
        u->next = (uid_t)(r % u->count);
    pthread_mutex_init(&u->lock, NULL);
    return u;
}

void uids_free(struct uids *u)
{
    if (!u)
        return;
    pthread_mutex_destroy(&u->lock);
    free(u->held);
    free(u->foreign);
    free(u);
}

int uids_take(struct uids *u, uid_t *out, struct err *err)
{
    pthread_mutex_lock(&u->lock);
    for (uid_t i = 0; i < u->count; i++) {
        uid_t k = u->next + i;
        if (k >= u->count)
            k -= u->count;
        if (bit(u->held, k) || bit(u->foreign, k))
            continue;
        set_bit(u->held, k, true);
        u->n_held++;
        u->next = k + 1 < u->count ? k + 1 : 0;
        *out = u->base + k;
        pthread_mutex_unlock(&u->lock);
        return 0;
    }
    size_t held = u->n_held, foreign = u->n_foreign;
    pthread_mutex_unlock(&u->lock);
    return err_set(err, ERR_TOO_BIG,
                   "no sandbox uid is free: all %u of %u-%u are held, %zu by this daemon's "
                   "sandboxes (running, waiting in the pool or being removed) and %zu by other "
                   "containers the engine lists; raise --sandbox-uid-count",
                   (unsigned)u->count, (unsigned)u->base, (unsigned)(u->base + u->count - 1), held,
                   foreign);
}

void uids_give_back(struct uids *u, uid_t uid)
{
    if (uid < u->base || uid - u->base >= u->count)
        return;
    uid_t k = uid - u->base;
    pthread_mutex_lock(&u->lock);
    if (bit(u->held, k)) {
        set_bit(u->held, k, false);
        u->n_held--;
        if (bit(u->foreign, k))
            u->n_foreign++;
    }
    pthread_mutex_unlock(&u->lock);
}

void uids_seen(struct uids *u, const uid_t *seen, size_t n)
{
    pthread_mutex_lock(&u->lock);
    memset(u->foreign, 0, (u->count + 7) / 8);
    u->n_foreign = 0;
    for (size_t i = 0; i < n; i++) {
        if (seen[i] < u->base || seen[i] - u->base >= u->count)
            continue;
        uid_t k = seen[i] - u->base;
        if (bit(u->foreign, k))
            continue;
        set_bit(u->foreign, k, true);
        if (!bit(u->held, k))
            u->n_foreign++;
    }
    pthread_mutex_unlock(&u->lock);
}

size_t uids_held(struct uids *u)
{
    pthread_mutex_lock(&u->lock);
    size_t n = u->n_held;
    pthread_mutex_unlock(&u->lock);
    return n;
}

/* ---- the host's account files ------------------------------------------ */

/* Field i (0-based) of a ':'-separated line as a number; false when it is
 * missing, not all digits or past ULLONG_MAX / 2, so that an id and a
 * count add up without wrapping. */
static bool field_number(const char *line, int i, unsigned long long *out)
{
    const char *p = line;
    for (int k = 0; k < i; k++) {
        p = strchr(p, ':');
        if (!p)
            return false;
        p++;
    }
    return util_parse_decimal(p, strcspn(p, ":"), ULLONG_MAX / 2, out);
}

struct scan {
    unsigned long long lo, hi; /* the range, hi excluded */
    size_t found, max_found;
    void (*cb)(const void *ctx, const char *path, const char *line);
    const void *ctx;
};

/* id_field: the first id; count_field: how many from it, or -1 for one. */
static void scan_file(struct scan *s, const char *path, int id_field, int count_field)
{
    FILE *fp = fopen(path, "re");
    if (!fp)
        return;
    char line[LINE_MAX_BYTES];
    while (s->found < s->max_found && fgets(line, sizeof(line), fp)) {
        line[strcspn(line, "\n")] = '\0';
        unsigned long long start = 0, n = 1;
        if (line[0] == '#' || !field_number(line, id_field, &start) ||
            (count_field >= 0 && !field_number(line, count_field, &n)))
            continue;
        if (n == 0 || start >= s->hi || start + n <= s->lo)
            continue;
        char shown[LINE_SHOWN + 1];
        util_printable_ascii(shown, sizeof(shown), line, strlen(line), true);
        s->cb(s->ctx, path, shown);
        s->found++;
    }
    fclose(fp);
}

size_t uids_host_overlaps(uid_t base, uid_t count, const char *subuid, const char *subgid,
                          const char *passwd, size_t max_found,
                          void (*found)(const void *ctx, const char *path, const char *line),
                          const void *ctx)
{
    struct scan s = {.lo = base,
                     .hi = (unsigned long long)base + count,
                     .max_found = max_found,
                     .cb = found,
                     .ctx = ctx};
    scan_file(&s, subuid, 1, 2);
    scan_file(&s, subgid, 1, 2);
    scan_file(&s, passwd, 2, -1);
    return s.found;
}

/* ---- from the configuration ----------------------------------------------- */

static void warn_overlap(const void *ctx, const char *path, const char *line)
{
    const struct config *cfg = ctx;
    log_warn("--sandbox-uid-base %lld, --sandbox-uid-count %lld: the range meets '%s' in %s; "
             "where the engine does not map users (rootful, without userns-remap) a process of "
             "such a uid outside the sandboxes shares nproc and file ownership with one; choose "
             "a range clear of it",
             cfg->sandbox_uid_base, cfg->sandbox_uid_count, line, path);
}

int uids_configure(const struct config *cfg, long long alive_max, struct uids **out,
                   struct err *err)
{
    *out = NULL;
    if (cfg->sandbox_uid_count <= 0)
        return 0;
    long long need = alive_max + UIDS_MARGIN;
    if (cfg->sandbox_uid_count < need)
        return err_set(err, ERR_INVALID,
                       "--sandbox-uid-count %lld is too few: %lld sandboxes can be alive at once "
                       "(--max-concurrent and the pools) and %d more being removed; give at least "
                       "%lld, or 0 to run every sandbox as --sandbox-user",
                       cfg->sandbox_uid_count, alive_max, UIDS_MARGIN, need);
    uid_t base = (uid_t)cfg->sandbox_uid_base, count = (uid_t)cfg->sandbox_uid_count;
    uids_host_overlaps(base, count, "/etc/subuid", "/etc/subgid", "/etc/passwd",
                       UIDS_OVERLAPS_SHOWN, warn_overlap, cfg);
    *out = uids_new(base, count);
    return 0;
}
