/* For the unit tests' concurrency checks: how many threads this process
 * runs now, from /proc/self/task (-1 when it cannot tell). */
#ifndef MCPSBX_TEST_THREADS_H
#define MCPSBX_TEST_THREADS_H

#include <dirent.h>

static inline int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

#endif
