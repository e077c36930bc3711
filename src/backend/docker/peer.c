#include "backend/docker/peer.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Whether process pid is in the container's cgroup. Another process of
 * the same uid is not. */
static bool in_container(pid_t pid, const char *container_id)
{
    if (!container_id || !*container_id)
        return false;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/cgroup", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[PEER_CGROUP_MAX];
    size_t have = 0;
    ssize_t n;
    while (have < sizeof(buf) - 1 && (n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0)
        have += (size_t)n;
    close(fd);
    buf[have] = '\0';
    return strstr(buf, container_id) != NULL;
}

int peer_check(int fd, uid_t sandbox_uid, const char *container_id, const char *what,
               struct err *err)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred))
        return err_set(err, ERR_IO, "no peer credentials on %s", what);
    if (cred.uid == geteuid())
        return 0;
    /* Under gVisor the runtime's file proxy connects for the sandbox, as
     * root, from the container's cgroup; no sandbox process runs as root
     * (every sandbox has its own uid and no way to gain privileges). */
    if (cred.uid == 0 && in_container(cred.pid, container_id))
        return 0;
    if (cred.uid != sandbox_uid)
        return err_set(err, ERR_PROTOCOL,
                       "a process of uid %u, not the sandbox's %u, connected to %s",
                       (unsigned)cred.uid, (unsigned)sandbox_uid, what);
    if (!in_container(cred.pid, container_id))
        return err_set(err, ERR_PROTOCOL, "a process outside the sandbox (pid %ld) connected to %s",
                       (long)cred.pid, what);
    return 0;
}
