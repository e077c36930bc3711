#include "backend/docker/seccomp_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

#define DIR_NAME "mcp-sandboxd"

/* FNV-1a: names the file for its content, nothing more. */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = 14695981039346656037ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static char *profile_dir(void)
{
    const char *rt = getenv("RUNTIME_DIRECTORY");
    if (rt && rt[0] == '/') /* may list several, ':'-separated: the first */
        return xstrndup(rt, strcspn(rt, ":"));
    if (geteuid() == 0)
        return xstrdup("/run/" DIR_NAME);
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && xdg[0] == '/')
        return xasprintf("%s/" DIR_NAME, xdg);
    return NULL;
}

static int check_dir(const char *dir, struct err *err)
{
    int rc = util_own_dir(dir, 0755, NULL);
    if (rc == UTIL_DIR_NOT_OURS)
        return err_set(err, ERR_IO,
                       "%s must be a directory of uid %u that only it can write (it holds the "
                       "seccomp profile the engine reads)",
                       dir, (unsigned)geteuid());
    if (rc < 0)
        return err_set(err, ERR_IO, "cannot create %s for the seccomp profile: %s", dir,
                       strerror(errno));
    return 0;
}

static int write_file(const char *dir, const char *path, const char *profile, struct err *err)
{
    cleanup_free char *tmp = xasprintf("%s/.seccomp-XXXXXX", dir);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return err_set(err, ERR_IO, "cannot write the seccomp profile in %s: %s", dir,
                       strerror(errno));
    int rc = -1;
    if (fchmod(fd, 0644) < 0 || util_write_all(fd, profile, strlen(profile)) < 0 || fsync(fd) < 0) {
        err_set(err, ERR_IO, "cannot write the seccomp profile %s: %s", tmp, strerror(errno));
        goto out;
    }
    if (rename(tmp, path) < 0) {
        err_set(err, ERR_IO, "cannot rename the seccomp profile to %s: %s", path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    close(fd);
    if (rc < 0)
        unlink(tmp);
    return rc;
}

char *seccomp_file_write(const char *profile, struct err *err)
{
    cleanup_free char *dir = profile_dir();
    if (!dir) {
        err_set(err, ERR_IO,
                "no directory for the seccomp profile Podman reads: set XDG_RUNTIME_DIR or "
                "RUNTIME_DIRECTORY");
        return NULL;
    }
    if (check_dir(dir, err) < 0)
        return NULL;
    char *path = xasprintf("%s/seccomp-%016" PRIx64 ".json", dir, fnv1a(profile));
    if (write_file(dir, path, profile, err) < 0) {
        free(path);
        return NULL;
    }
    return path;
}
