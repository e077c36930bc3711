#include "backend/docker/egress_sock.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backend/docker/peer.h"
#include "backend/docker/sock_dir.h"
#include "base/util.h"

struct egress_sock {
    struct sock_dir sd;
    uid_t uid;
    char *container_id; /* NULL until set */
};

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

void egress_sock_close(struct egress_sock *s)
{
    if (!s)
        return;
    sock_dir_remove(&s->sd);
    free(s->container_id);
    free(s);
}
