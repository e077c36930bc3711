/* The rig of the tests of a sandbox's sockets (test_channel.c,
 * test_egress_sock.c): a fresh base directory, searchable as sock_dir
 * makes it so peers of other users can reach a socket in it, and the
 * container's id played by a line of this process's own /proc/self/cgroup,
 * so its children (the peers) are "in" it. Include after cmocka.h. */
#ifndef MCPSBX_TEST_SOCK_RIG_H
#define MCPSBX_TEST_SOCK_RIG_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

struct rig {
    char cg[256];
    char base[64];
    uid_t uid; /* the "sandbox's": 10001 as root, else our own */
    gid_t gid;
};

static inline int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (const struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* A rig whose base directory is /tmp/NAME.XXXXXX. */
static inline int rig_setup(void **state, const char *name)
{
    struct rig *g = xcalloc(1, sizeof(*g));
    *state = g;
    snprintf(g->base, sizeof(g->base), "/tmp/%s.XXXXXX", name);
    if (!mkdtemp(g->base) || chmod(g->base, 0711) < 0)
        return -1;
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f || !fgets(g->cg, sizeof(g->cg), f))
        return -1;
    fclose(f);
    g->cg[strcspn(g->cg, "\n")] = '\0';
    g->uid = geteuid() == 0 ? 10001 : geteuid();
    g->gid = geteuid() == 0 ? 10001 : getegid();
    return 0;
}

/* Removes the base directory and frees g; fails the test when anything
 * was left in it. */
static inline int rig_teardown(struct rig *g)
{
    int left = dir_entries(g->base);
    rmdir(g->base);
    free(g);
    if (left != 0)
        fail_msg("%d entries left in the base directory", left);
    return 0;
}

#endif
