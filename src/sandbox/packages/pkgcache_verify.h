/* The package cache's tree walks (pkgcache.h): verifying a staged set
 * before it is published, and removing a tree whatever it holds.
 *
 * A staged tree was written by a sandbox's uid: every name, mode, link
 * target and owner in it is the sandbox's choice. The walks go by
 * directory descriptors (openat/fstatat with O_NOFOLLOW and
 * AT_SYMLINK_NOFOLLOW), each object opened is checked to be the one
 * looked at, and nothing is ever reached through a path string, so no
 * link or swapped name leads them out of the tree. */
#ifndef MCPSBX_PKGCACHE_VERIFY_H
#define MCPSBX_PKGCACHE_VERIFY_H

#include <stdbool.h>

#include "base/err.h"

/* Directories below a set's root at most (node_modules nests; 64 is far
 * past what an installer makes). */
#define PKGCACHE_MAX_DEPTH 64
/* Entries (files, directories, links) in one set at most. */
#define PKGCACHE_MAX_ENTRIES 200000
/* A symbolic link's target, in bytes. */
#define PKGCACHE_LINK_MAX 4096
/* The relative path an error names, escaped, in bytes. */
#define PKGCACHE_PATH_SHOWN 512
/* How deep a removal holds directory descriptors open; a deeper directory
 * is moved up beside the tree and removed from there. */
#define PKGCACHE_REMOVE_DEPTH 32

struct pkgcache_walk {
    unsigned long long max_bytes; /* cap of bytes */
    bool fix;                     /* publishing: make it the daemon's and read-only, refuse the
                                   * manifest's name; otherwise only check (a scan at open) */
    unsigned long long bytes;     /* out: st_size of its files and links */
    unsigned long long entries;   /* out */
};

/* Walks the tree at root (a directory descriptor, not consumed): only
 * regular files with one link, directories and symbolic links whose target
 * stays inside the tree; no setuid, setgid or sticky bit; at most
 * PKGCACHE_MAX_DEPTH deep, PKGCACHE_MAX_ENTRIES entries and w->max_bytes.
 * With w->fix, chowns (lchown for links) to this process's uid and gid and
 * makes files 0444 (0555 if executable by anyone) and directories 0555,
 * except root itself, left 0755 for the manifest (pkgcache.c closes it).
 * -1 with ERR_TOO_BIG over a cap, ERR_INVALID for what a set may not hold
 * (the message names the entry), ERR_IO. */
int pkgcache_verify_tree(int root, struct pkgcache_walk *w, struct err *err);

/* Removes name under dir (a file, a link, or a directory with all it
 * holds, read-only ones too) without following any link. Directories past
 * PKGCACHE_REMOVE_DEPTH are moved into dir under ".rm-" names first.
 * Best effort: returns 0 when name is gone, -1 (errno) otherwise. */
int pkgcache_remove_tree(int dir, const char *name);

#endif
