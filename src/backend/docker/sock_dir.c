#include "backend/docker/sock_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/util.h"

/* Every failure here lasts (ERR_INVALID): the caller stops trying. */
static int base_dir_check(const char *base, struct err *err)
{
    struct stat st;
    int rc = util_own_dir(base, 0711, &st);
    if (rc == UTIL_DIR_NOT_OURS)
        return err_set(err, ERR_INVALID,
                       "the sandbox I/O directory %s must be a directory of uid %u that no one "
                       "else may write",
                       base, (unsigned)geteuid());
    if (rc < 0)
        return err_set(err, ERR_INVALID, "cannot make the sandbox I/O directory %s: %s", base,
                       strerror(errno));
    /* Whatever the umask made it or it was: listing it would show the
     * names of the sockets waiting for a sandbox. */
    if ((st.st_mode & 07777) != 0711 && chmod(base, 0711) < 0)
        return err_set(err, ERR_INVALID, "cannot close %s to others: %s", base, strerror(errno));
    return 0;
}

void sock_dir_remove(struct sock_dir *d)
{
    if (d->fd >= 0) {
        close(d->fd);
        d->fd = -1;
    }
    if (d->path) {
        unlink(d->path);
        free(d->path);
        d->path = NULL;
    }
    if (d->dir) {
        rmdir(d->dir);
        free(d->dir);
        d->dir = NULL;
    }
}

/* The fresh directory, this process's, searchable by all (whatever the
 * umask): only the socket in it is the sandbox's. */
static int make_dir(const char *base_dir, struct sock_dir *d, struct err *err)
{
    unsigned char rnd[SOCK_DIR_RANDOM_BYTES];
    char hex[2 * SOCK_DIR_RANDOM_BYTES + 1];
    if (util_random_bytes(rnd, sizeof(rnd)) < 0)
        return err_set(err, ERR_INTERNAL, "no random bytes for a socket directory's name");
    util_hex(rnd, sizeof(rnd), hex);
    char *dir = xasprintf("%s/%ld.%s", base_dir, (long)getpid(), hex);
    if (mkdir(dir, 0711) < 0) {
        err_set(err, ERR_IO, "cannot make %s: %s", dir, strerror(errno));
        free(dir);
        return -1;
    }
    d->dir = dir;
    if (chmod(dir, 0711) < 0)
        return err_set(err, ERR_IO, "cannot open %s to the sandbox: %s", dir, strerror(errno));
    return 0;
}

int sock_dir_open(const char *base_dir, const char *name, uid_t uid, gid_t gid, int backlog,
                  struct sock_dir *d, struct err *err)
{
    *d = (struct sock_dir){.fd = -1};
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    /* "<base>/<pid>.<hex>/<name>": the pid at most 10 digits. */
    if (strlen(base_dir) + 1 + 10 + 1 + 2 * SOCK_DIR_RANDOM_BYTES + 1 + strlen(name) >=
        sizeof(sa.sun_path))
        return err_set(err, ERR_INVALID,
                       "the sandbox I/O directory %s is too deep for a socket path", base_dir);
    if (base_dir_check(base_dir, err) < 0 || make_dir(base_dir, d, err) < 0)
        goto fail;
    char *path = xasprintf("%s/%s", d->dir, name);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    d->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (d->fd < 0) {
        err_set(err, ERR_IO, "socket: %s", strerror(errno));
        free(path);
        goto fail;
    }
    if (bind(d->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        err_set(err, ERR_IO, "bind %s: %s", path, strerror(errno));
        free(path);
        goto fail;
    }
    d->path = path;
    /* Only the sandbox's uid (and root) may connect. */
    if (chmod(path, 0600) < 0 || (uid != geteuid() && chown(path, uid, gid) < 0)) {
        /* Without CAP_CHOWN that is so for every sandbox. */
        err_set(err, errno == EPERM ? ERR_INVALID : ERR_IO, "cannot give %s to uid %u: %s", path,
                (unsigned)uid, strerror(errno));
        goto fail;
    }
    if (listen(d->fd, backlog) < 0) {
        err_set(err, ERR_IO, "listen %s: %s", path, strerror(errno));
        goto fail;
    }
    return 0;
fail:
    sock_dir_remove(d);
    return -1;
}

/* ---- sweeping what a killed daemon left ---------------------------------- */

static bool owner_gone(const char *name)
{
    char *end = NULL;
    errno = 0;
    long pid = strtol(name, &end, 10);
    if (errno || end == name || *end != '.' || pid <= 0 ||
        strlen(end + 1) != 2 * SOCK_DIR_RANDOM_BYTES)
        return false;
    return pid != (long)getpid() && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* What sock_dir_open put in a directory: its socket, nothing else (no
 * one else may write there). Not its subdirectories: there are none. */
static void empty_dir(int dfd, const char *name)
{
    int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0)
        return;
    DIR *d = fdopendir(sub);
    if (!d) {
        close(sub);
        return;
    }
    const struct dirent *e;
    // cppcheck-suppress readdirCalled
    for (int n = 0; n < SOCK_DIR_SWEEP_ENTRIES && (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            unlinkat(sub, e->d_name, 0) == 0)
            n++;
    closedir(d);
}

void sock_dir_sweep(const char *base_dir)
{
    int dfd = open(base_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    const struct dirent *e;
    /* readdir is safe on a stream no other thread sees (readdir_r is the
     * deprecated one). */
    // cppcheck-suppress readdirCalled
    while ((e = readdir(d)) != NULL) {
        if (!owner_gone(e->d_name))
            continue;
        empty_dir(dfd, e->d_name);
        unlinkat(dfd, e->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}
