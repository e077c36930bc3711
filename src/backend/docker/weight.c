#include "backend/docker/weight.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* /proc/self/mountinfo is read up to this: hundreds of mounts fit. */
#define MOUNTINFO_MAX (256 * 1024)

/* True when list (n bytes, comma-separated) has the element word. */
static bool list_has(const char *list, size_t n, const char *word)
{
    size_t w = strlen(word);
    const char *p = list, *end = list + n;
    while (p < end) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        size_t len = c ? (size_t)(c - p) : (size_t)(end - p);
        if (len == w && memcmp(p, word, w) == 0)
            return true;
        p += len + 1;
    }
    return false;
}

/* True when a segment of path (between slashes) contains id. */
static bool names_id(const char *path, size_t n, const char *id)
{
    size_t idn = strlen(id);
    const char *p = path, *end = path + n;
    while (p < end) {
        const char *s = memchr(p, '/', (size_t)(end - p));
        size_t len = s ? (size_t)(s - p) : (size_t)(end - p);
        for (size_t i = 0; idn && i + idn <= len; i++)
            if (memcmp(p + i, id, idn) == 0)
                return true;
        p += len + 1;
    }
    return false;
}

int weight_cgroup_path(const char *text, size_t n, const char *id, char out[WEIGHT_PATH_MAX],
                       bool *v2, struct err *err)
{
    const char *unified = NULL;
    size_t unified_n = 0;
    for (const char *line = text, *end = text + n; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t len = nl ? (size_t)(nl - line) : (size_t)(end - line);
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (c2) {
            const char *path = c2 + 1;
            size_t path_n = len - (size_t)(path - line);
            size_t ctl_n = (size_t)(c2 - c1 - 1);
            if (path_n < WEIGHT_PATH_MAX && path[0] == '/' && names_id(path, path_n, id) &&
                !memchr(path, '\\', path_n)) {
                if (list_has(c1 + 1, ctl_n, "cpu")) {
                    memcpy(out, path, path_n);
                    out[path_n] = '\0';
                    *v2 = false;
                    return 0;
                }
                if (ctl_n == 0 && c1 - line == 1 && line[0] == '0') {
                    unified = path;
                    unified_n = path_n;
                }
            }
        }
        line += len + 1;
    }
    if (!unified)
        return err_set(err, ERR_NOT_FOUND, "no cpu cgroup of the container's in its cgroup list");
    memcpy(out, unified, unified_n);
    out[unified_n] = '\0';
    *v2 = true;
    return 0;
}

/* The whole of a small file into a capped, NUL-terminated buffer. */
static char *slurp(const char *path, size_t cap, size_t *n, struct err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err_set(err, ERR_IO, "open %s: %s", path, strerror(errno));
        return NULL;
    }
    char *b = xmalloc(cap + 1);
    size_t have = 0;
    for (;;) {
        ssize_t r = read(fd, b + have, cap - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
        if (have == cap)
            break;
    }
    close(fd);
    b[have] = '\0';
    *n = have;
    return b;
}

/* The mount point of the cgroup hierarchy with the cpu controller (v1) or
 * of the unified one (v2), mounted at its root; -1 when none. */
static int hierarchy_mount(const char *mounts, bool v2, char out[WEIGHT_PATH_MAX], struct err *err)
{
    size_t n = 0;
    char *text = slurp(mounts, MOUNTINFO_MAX, &n, err);
    if (!text)
        return -1;
    int rc = err_set(err, ERR_NOT_FOUND, "no %s hierarchy is mounted here",
                     v2 ? "cgroup2" : "cgroup cpu");
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char root[WEIGHT_PATH_MAX], point[WEIGHT_PATH_MAX], type[32], super[256];
        char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %511s %511s", root, point) != 2 ||
            sscanf(dash + 3, "%31s %*s %255s", type, super) != 2)
            continue;
        if (strcmp(root, "/") != 0 || strchr(point, '\\'))
            continue;
        bool fits = v2 ? strcmp(type, "cgroup2") == 0
                       : strcmp(type, "cgroup") == 0 && list_has(super, strlen(super), "cpu");
        if (fits) {
            err_clear(err);
            snprintf(out, WEIGHT_PATH_MAX, "%s", point);
            rc = 0;
            break;
        }
    }
    free(text);
    return rc;
}

int weight_open(const char *proc, const char *mounts, int pid, const char *id, bool *v2,
                int *idle_fd, struct err *err)
{
    *idle_fd = -1;
    if (pid <= 0)
        return err_set(err, ERR_INVALID, "the container has no process");
    char path[WEIGHT_PATH_MAX], mount[WEIGHT_PATH_MAX], file[2 * WEIGHT_PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/%d/cgroup", proc, pid);
    size_t n = 0;
    char *text = slurp(path, WEIGHT_CGROUP_TEXT_MAX, &n, err);
    if (!text)
        return -1;
    int rc = weight_cgroup_path(text, n, id, path, v2, err);
    free(text);
    if (rc < 0 || hierarchy_mount(mounts, *v2, mount, err) < 0)
        return -1;
    snprintf(file, sizeof(file), "%s%s/%s", mount, path, *v2 ? "cpu.weight" : "cpu.shares");
    int fd = open(file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return err_set(err, ERR_IO, "open %s: %s", file, strerror(errno));
    snprintf(file, sizeof(file), "%s%s/%s", mount, path, WEIGHT_IDLE_FILE);
    *idle_fd = open(file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    return fd;
}
