#include "backend/docker/egress_sock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/docker/peer.h"
#include "backend/docker/sock_dir.h"
#include "base/util.h"

struct egress_sock {
    struct sock_dir sd;
    uid_t uid;
    char *container_id; /* NULL until set */
    char *ca[2];        /* the CA's files put in sd.dir; NULL: none */
};

/* The largest CA file copied (the bundle holds the host's roots). */
#define CA_COPY_MAX (16 * 1024 * 1024)

int egress_sock_open(const char *base_dir, uid_t uid, gid_t gid, struct egress_sock **out,
                     struct err *err)
{
    *out = NULL;
    struct egress_sock *s = xcalloc(1, sizeof(*s));
    if (sock_dir_open(base_dir, EGRESS_SOCK_NAME, uid, gid, EGRESS_SOCK_BACKLOG, &s->sd, err) < 0) {
        free(s);
        return err_wrap(err, "the sandbox's egress socket");
    }
    s->uid = uid;
    *out = s;
    return 0;
}

const char *egress_sock_dir(const struct egress_sock *s)
{
    return s->sd.dir;
}

void egress_sock_set_container(struct egress_sock *s, const char *container_id)
{
    free(s->container_id);
    s->container_id = xstrdup(container_id);
}

int egress_sock_fd(const struct egress_sock *s)
{
    return s->sd.fd;
}

int egress_sock_accept(struct egress_sock *s, int *fd, struct err *err)
{
    *fd = -1;
    int c = accept4(s->sd.fd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
            return 0;
        return err_set(err, ERR_IO, "accept on the sandbox's egress socket: %s", strerror(errno));
    }
    if (peer_check(c, s->uid, s->container_id, "its egress socket", err) < 0) {
        close(c);
        return -1;
    }
    *fd = c;
    return 0;
}

/* from copied to to (made 0644, never over a file there). */
static int copy_file(const char *from, const char *to, struct err *err)
{
    size_t len = 0;
    int rc = -1;
    char *data = NULL;
    int in = open(from, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (in < 0 || fstat(in, &st) < 0 || st.st_size > CA_COPY_MAX) {
        err_set(err, ERR_IO, "cannot read %s: %s", from, in < 0 ? strerror(errno) : "too large");
        goto out;
    }
    data = xmalloc((size_t)st.st_size + 1);
    for (ssize_t n;
         len < (size_t)st.st_size && (n = read(in, data + len, (size_t)st.st_size - len)) != 0;) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err_set(err, ERR_IO, "cannot read %s: %s", from, strerror(errno));
            goto out;
        }
        len += (size_t)n;
    }
    int fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 || util_write_all(fd, data, len) < 0 || fchmod(fd, 0644) < 0) {
        err_set(err, ERR_IO, "cannot write %s: %s", to, strerror(errno));
        if (fd >= 0)
            close(fd);
        unlink(to);
        goto out;
    }
    close(fd);
    rc = 0;
out:
    if (in >= 0)
        close(in);
    free(data);
    return rc;
}

int egress_sock_add_ca(struct egress_sock *s, const struct backend_spec *spec, struct err *err)
{
    const char *from[2] = {spec->egress_ca_file, spec->egress_ca_bundle};
    const char *inside[2] = {BACKEND_EGRESS_CA_FILE, BACKEND_EGRESS_CA_BUNDLE};
    for (int i = 0; i < 2; i++) {
        if (!from[i])
            continue;
        const char *name = strrchr(inside[i], '/') + 1;
        char *to = xasprintf("%s/%s", s->sd.dir, name);
        if (link(from[i], to) < 0 && copy_file(from[i], to, err) < 0) {
            free(to);
            return err_wrap(err, "the egress CA's file for the sandbox");
        }
        s->ca[i] = to;
    }
    return 0;
}

void egress_sock_close(struct egress_sock *s)
{
    if (!s)
        return;
    for (int i = 0; i < 2; i++)
        if (s->ca[i]) {
            unlink(s->ca[i]);
            free(s->ca[i]);
        }
    sock_dir_remove(&s->sd);
    free(s->container_id);
    free(s);
}
