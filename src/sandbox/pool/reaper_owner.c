#include "sandbox/pool/reaper_owner.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define BOOT_ID_LEN 36
#define PID_DIGITS  10

static int read_small_file(const char *path, char *buf, size_t cap)
{
    FILE *fp = fopen(path, "re");
    if (!fp)
        return -1;
    size_t n = fread(buf, 1, cap - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    return 0;
}

/* Field 22 of /proc/<pid>/stat: when the process started, in clock ticks
 * since boot. With the pid it names one process for the life of the boot. */
static int proc_starttime(long pid, unsigned long long *out)
{
    char path[64];
    char stat[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (read_small_file(path, stat, sizeof(stat)) < 0)
        return -1;
    /* comm, in parentheses, may itself hold spaces and parentheses. */
    const char *p = strrchr(stat, ')');
    if (!p)
        return -1;
    p++;
    for (int field = 3; field < 22; field++) {
        p = strchr(p + 1, ' ');
        if (!p)
            return -1;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(p + 1, &end, 10);
    if (errno || end == p + 1)
        return -1;
    *out = v;
    return 0;
}

int reaper_owner_self(char out[REAPER_OWNER_MAX], struct err *err)
{
    char boot[64];
    char ns[64];
    unsigned long long start = 0;
    if (read_small_file("/proc/sys/kernel/random/boot_id", boot, sizeof(boot)) < 0)
        return err_set(err, ERR_IO, "reading the boot id: %s", strerror(errno));
    boot[strcspn(boot, "\n")] = '\0';
    ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);
    if (n < 0)
        return err_set(err, ERR_IO, "reading the pid namespace: %s", strerror(errno));
    ns[n] = '\0';
    unsigned long long nsid = strtoull(ns + strcspn(ns, "0123456789"), NULL, 10);
    if (proc_starttime((long)getpid(), &start) < 0)
        return err_set(err, ERR_IO, "reading this process's start time");
    snprintf(out, REAPER_OWNER_MAX, "%.36s:%llu:%ld:%llu", boot, nsid, (long)getpid(), start);
    return 0;
}

struct owner {
    char boot[BOOT_ID_LEN + 1];
    unsigned long long ns;
    long pid;
    unsigned long long start;
};

/* The value came from a label, which anyone with the engine can set. */
static bool parse_owner(const char *s, struct owner *o)
{
    const char *parts[4];
    size_t lens[4];
    const char *p = s;
    for (int i = 0; i < 4; i++) {
        const char *colon = i < 3 ? strchr(p, ':') : p + strlen(p);
        if (!colon)
            return false;
        parts[i] = p;
        lens[i] = (size_t)(colon - p);
        p = colon + 1;
    }
    if (lens[0] != BOOT_ID_LEN)
        return false;
    for (size_t i = 0; i < BOOT_ID_LEN; i++) {
        char c = parts[0][i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-'))
            return false;
    }
    memcpy(o->boot, parts[0], BOOT_ID_LEN);
    o->boot[BOOT_ID_LEN] = '\0';
    unsigned long long pid = 0;
    if (!util_parse_decimal(parts[1], lens[1], ULLONG_MAX / 2, &o->ns) || lens[2] > PID_DIGITS ||
        !util_parse_decimal(parts[2], lens[2], INT_MAX, &pid) || pid == 0 ||
        !util_parse_decimal(parts[3], lens[3], ULLONG_MAX / 2, &o->start))
        return false;
    o->pid = (long)pid;
    return true;
}

int reaper_owner_alive(const char *owner, const char *self)
{
    struct owner o, me;
    if (!owner || !self || !parse_owner(owner, &o) || !parse_owner(self, &me))
        return -1;
    if (strcmp(o.boot, me.boot) != 0 || o.ns != me.ns)
        return -1;
    unsigned long long start = 0;
    if (proc_starttime(o.pid, &start) < 0)
        return 0; /* no such process */
    return start == o.start ? 1 : 0;
}
