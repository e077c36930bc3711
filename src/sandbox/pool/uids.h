/* The sandbox users: each sandbox runs as a uid of its own (its gid the
 * same number) from the operator's range (--sandbox-uid-base,
 * --sandbox-uid-count).
 *
 * Why: the kernel counts RLIMIT_NPROC per uid across the whole user
 * namespace, not per container. Were every sandbox the same uid, a fork
 * bomb in one would use up the count of all of them, and another
 * sandbox's fork, or the engine's exec of its first process, would fail.
 * With a uid each, nproc bounds each sandbox on its own, beside the pids
 * cgroup limit.
 *
 * A uid is taken just before its sandbox is created (pooled or on demand,
 * sandbox/run/launch.h) and given back once the engine has confirmed the
 * sandbox's removal (sandbox/pool/reaper.h), or at once when the create failed:
 * a container that was never started runs nothing as that uid. So no two
 * live sandboxes of this daemon share a uid. The uids of containers that
 * the engine lists for other daemons (or for an earlier run of this one,
 * not yet swept) are skipped too, as of the last sweep (uids_seen).
 * Taking goes round the range from a random place, so a uid comes back
 * into use as late as it can.
 *
 * Thread-safe. */
#ifndef MCPSBX_UIDS_H
#define MCPSBX_UIDS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/config.h"
#include "base/err.h"

/* The largest range: its bitmaps are count / 8 bytes each. */
#define UIDS_MAX_COUNT (1u << 20)
/* The highest uid a range may reach: some tools read uids as signed
 * 32-bit numbers, and (uid_t)-1 and -2 mean "none" and "nobody". */
#define UIDS_MAX_UID 0x7ffffffeu
/* Uids beyond the sandboxes that can be alive at once: sandboxes whose
 * removal is still under way keep theirs until the engine confirms it. */
#define UIDS_MARGIN 64
/* Lines of the host's account files a start names at most. */
#define UIDS_OVERLAPS_SHOWN 4

struct uids;

/* The daemon's sandbox uids from cfg (sandbox_uid_base, sandbox_uid_count)
 * in *out, or NULL when the count is 0 (every sandbox runs as
 * --sandbox-user). alive_max: how many sandboxes can be alive at once
 * (runs and pools); fewer uids than that plus UIDS_MARGIN is ERR_INVALID,
 * refused at start rather than found short under load. Logs a warning for
 * each line of the host's account files the range meets
 * (uids_host_overlaps). */
int uids_configure(const struct config *cfg, long long alive_max, struct uids **out,
                   struct err *err);

/* The range [base, base + count): count at most UIDS_MAX_COUNT, the range
 * within 1..UIDS_MAX_UID (config_load checked both). Taking starts at a
 * random place in it. */
struct uids *uids_new(uid_t base, uid_t count);
void uids_free(struct uids *u);

/* Takes a uid no live sandbox has (nor a listed container of another
 * daemon), in *out. -1 with ERR_TOO_BIG when every one is held, saying how
 * many and by whom. */
int uids_take(struct uids *u, uid_t *out, struct err *err);

/* Gives back uid, taken before (anything else is ignored). */
void uids_give_back(struct uids *u, uid_t uid);

/* The uids that containers not of this daemon carry (n of them; outside
 * the range is fine), as the engine listed them: replaces the last set. */
void uids_seen(struct uids *u, const uid_t *seen, size_t n);

/* Taken and not given back, at this moment. */
size_t uids_held(struct uids *u);

/* Lines of the host's account files that meet [base, base + count):
 * /etc/subuid and /etc/subgid ("name:start:count", the subordinate ids a
 * rootless engine or Docker's userns-remap maps containers to) and
 * /etc/passwd (its uid). Calls found(ctx, path, line) for each (the line
 * without its newline, cut to a sane length), at most max_found in all;
 * a file that cannot be read is skipped. Returns the number found. The
 * paths are arguments so tests can give their own. */
size_t uids_host_overlaps(uid_t base, uid_t count, const char *subuid, const char *subgid,
                          const char *passwd, size_t max_found,
                          void (*found)(const void *ctx, const char *path, const char *line),
                          const void *ctx);

#endif
