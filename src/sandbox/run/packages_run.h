/* A run's packages made ready before its sandbox is taken (run.packages):
 * the set from the package cache (sandbox/packages/pkgcache.h), or
 * installed first by an install run (sandbox/packages/install.h) in a
 * sandbox of its own, then published to the cache. The set's directory
 * goes in the run's request (runner.h's "packages", or "add_packages"
 * for a session that keeps it); the cache's sets are bound read-only into
 * every sandbox of a language with installs, pooled ones too, so a hit
 * costs no container start.
 *
 * An install run: the language's runner in the installer's image
 * (install_image), its program install_code, its egress the index hosts
 * alone, the staging directory writable at BACKEND_INSTALL_DIR (a ready
 * installer's own, adopted by the lease), and none of the daemon's secrets: neither
 * --pass-through-env values nor
 * --secret placeholders reach install scripts. */
#ifndef MCPSBX_PACKAGES_RUN_H
#define MCPSBX_PACKAGES_RUN_H

#include <pthread.h>
#include <stdbool.h>

#include "sandbox/packages/pkgcache.h"
#include "sandbox/run/exec.h"
#include "sandbox/run/exec_ctx.h"

/* The daemon's package settings, made at start (packages_start). */
struct packages_ctx {
    struct pkgcache *cache; /* NULL: installs off (why in off_reason) */
    char *sets_dir;         /* the cache's sets/: bound into sandboxes */
    char *off_reason;
    /* Per language (by index): an install run's environment; NULL for a
     * language without installs. */
    const char ***install_env;
    /* Per language (by index), once the pool started: the pool's profile
     * of its ready installers (-1: none), that profile's name and command.
     * NULL without them. */
    int *spare_profile;
    char **spare_names;
    const char ***spare_cmds; /* its command when not the host's own */
    size_t n_langs;
    /* The languages' preinstall lists, installed at start by a thread of
     * their own (packages_warm_start) that packages_warm_stop cancels. */
    pthread_t warm;
    bool warming;
    struct exec_cancel *warm_cancel;
};

/* A ready set, held (against eviction) until packages_run_done. */
struct packages_use {
    struct pkgcache_lease lease;
    char dir[sizeof(BACKEND_PACKAGES_DIR) + PKGCACHE_KEY_LEN + 2]; /* inside sandboxes; "" none */
    bool cold; /* the set holds a module the pool preloads: take no pooled sandbox */
};

/* Opens the cache when some language has installs. A cache that cannot be
 * opened (another daemon holds it, no right to the directory) turns
 * installs off with a warning rather than failing the start. */
void packages_start(struct exec_ctx *ctx);
void packages_stop(struct exec_ctx *ctx);

/* Installs the languages' preinstall lists into the cache, one after the
 * other, on a thread of its own (once the runs' machinery is up); nothing
 * without a list, offline, or without a cache. */
void packages_warm_start(struct exec_ctx *ctx);
/* Cancels what is left of them and joins the thread (before the runs'
 * machinery stops). */
void packages_warm_stop(struct exec_ctx *ctx);

/* Ready installers (--packages-ready-installers per language with
 * installs, while its language keeps a pool, installs can reach an index
 * and the cache is open) are pool profiles filled after the languages':
 * set up ahead, an install pays neither create, start nor the runner's own
 * start. Each waits with a staging directory of its own
 * (pkgcache_stage_new) bound as its target, which the install adopts. */
/* The pool's profiles of ready installers, written to out (room for one
 * per language), numbered from first; returns how many. Called once, by
 * the pool's start. */
size_t packages_pool_profiles(struct exec_ctx *ctx, struct pool_profile *out, size_t first);

/* The longest an install may take (0 without installs): a ready
 * installer's expiry label covers it. */
long long packages_longest_install_ms(const struct exec_ctx *ctx);

/* Removes and frees a ready installer's directory that no install adopted. */
void packages_spare_drop(struct exec_ctx *ctx, char *dir);

/* The host directory to bind for lang's sandboxes, or NULL. */
const char *packages_sets_dir(const struct exec_ctx *ctx, const struct langtable_lang *lang);

/* Makes req.packages ready: 0 with *use filled and res->packages set (an
 * empty use without req.packages); -1 with err (ERR_INVALID for what the
 * call can mend: a package that does not install, offline and not cached;
 * the installer's last lines quoted) and res->packages as far as known. */
int packages_run_ready(struct exec_ctx *ctx, const struct run *req, struct packages_use *use,
                       struct exec_result *res, struct err *err);

/* Releases what packages_run_ready held. */
void packages_run_done(struct exec_ctx *ctx, struct packages_use *use);

/* The sets a code session added, held against eviction for its life: its
 * interpreter keeps them on its import path. The session's owner locks. */
struct packages_held {
    struct pkgcache_lease *v;
    size_t n;
};

/* The sets a session may add: each one held is a tree the cache's cap
 * cannot evict. */
#define PACKAGES_SESSION_SETS_MAX 64

/* Whether held has room for one more set. */
bool packages_held_room(const struct packages_held *held);

/* Moves use's set into held (released instead when held has it already or
 * is full); use is empty afterwards. */
void packages_hold(struct exec_ctx *ctx, struct packages_held *held, struct packages_use *use);

/* Releases every set held (the session is gone). */
void packages_held_release(struct exec_ctx *ctx, struct packages_held *held);

#endif
