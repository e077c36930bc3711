/* For the unit tests that make an execution context: the package cache in
 * a directory of the test process's own, removed when it exits, so that
 * no test opens (or, as root, makes) the daemon's default one. */
#ifndef MCPSBX_TEST_CACHE_DIR_H
#define MCPSBX_TEST_CACHE_DIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/config.h"
#include "base/util.h"

static char test_cache_base[] = "/tmp/mcpsbx-unit-cache.XXXXXX";

static inline int test_cache_rm_one(const char *path, const struct stat *st, int flag,
                                    struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    (void)remove(path); /* best effort: what is left is in /tmp */
    return 0;
}

static inline void test_cache_rm(void)
{
    nftw(test_cache_base, test_cache_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Points cfg's package cache at the process's directory (made once). */
static inline void test_cache_dir(struct config *cfg)
{
    static int made;
    if (!made) {
        if (!mkdtemp(test_cache_base))
            abort();
        atexit(test_cache_rm);
        made = 1;
    }
    free(cfg->packages_cache_dir);
    cfg->packages_cache_dir = xasprintf("%s/packages", test_cache_base);
}

#endif
