/* Container garbage collection, so no container outlives its use whatever
 * happens to a daemon or the engine:
 *  - removal off the request's path, retried with backoff until the engine
 *    confirms it (a removal that failed while the engine was down or
 *    stalled is not forgotten);
 *  - a sweep at start and every REAPER_SWEEP_MS that removes managed
 *    containers nobody needs any more, whoever created them: past the
 *    expiry (backend_spec.expires), or created by a daemon
 *    process on this host that no longer runs (backend_spec.owner). The
 *    live containers of another running daemon are never touched before
 *    their expiry; nor are this daemon's own runs. A container of this
 *    daemon that no run holds (the engine created it after the run gave
 *    up waiting, e.g. while stalled) is removed by a sweep that sees no
 *    create in flight;
 *  - each removed sandbox's own uid given back (sandbox/pool/uids.h) once the
 *    engine has confirmed the removal, never before: until then something
 *    may still run as it.
 * Threads: REAPER_THREADS removal workers and one sweeper, all owned here. */
#ifndef MCPSBX_REAPER_H
#define MCPSBX_REAPER_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backend.h"
#include "base/err.h"
#include "sandbox/pool/reaper_owner.h"
#include "sandbox/pool/uids.h"

#define REAPER_THREADS  4
#define REAPER_SWEEP_MS 5000
/* Stopping, a removal the engine refused is retried for this long: a
 * container that is just exiting can be refused for a moment (Podman). */
#define REAPER_STOP_RETRY_MS 3000

/* Containers without an expiry label (made before labels carried one) are
 * stale once older than this many seconds. */
#define REAPER_LEGACY_MARGIN_S 300

struct reaper;

/* backend is borrowed; instance is this daemon's backend_spec.instance
 * value; containers without an expiry label count as stale once older than
 * legacy_max_age_s. sweep_ms is the period between sweeps, the first at
 * once (0 = none, for tests that sweep by hand); nothing else starts one.
 * uids (borrowed, may be NULL) gets back each sandbox uid once its
 * container is confirmed gone, and hears from every sweep which uids other
 * daemons' containers carry (uids_seen). */
struct reaper *reaper_new(struct backend *backend, const char *instance, long long legacy_max_age_s,
                          long sweep_ms, struct uids *uids, struct err *err);

/* Stops sweeping (a sweep under way finishes and queues what it found),
 * then tries every pending removal at once, retries the refused ones for
 * up to REAPER_STOP_RETRY_MS, joins, frees. */
void reaper_free(struct reaper *r);

/* This process's backend_spec.owner value. */
const char *reaper_owner(const struct reaper *r);

/* A run brackets its create request with these, so the sweep can tell a
 * container a run holds from one whose create the run gave up on. id is
 * the created container, or NULL when the create failed. uid is the
 * sandbox uid it was created with (sandbox/pool/uids.h), which the reaper gives
 * back once the container is gone, or -1 for none. */
void reaper_create_begin(struct reaper *r);
void reaper_create_end(struct reaper *r, const char *id, long long uid);

/* Removes container id off the caller's path, retrying until it is gone;
 * the run no longer holds it. */
void reaper_remove(struct reaper *r, const char *id);

/* The same, first tried delay_ms from now: for a container whose program
 * has ended by itself, so killing and removing it keeps off the engine
 * (and the CPUs) while the run's answer goes out. Stopping the reaper
 * does not wait for the delay. */
void reaper_remove_after(struct reaper *r, const char *id, long delay_ms);

/* One sweep now. A container this daemon removed while the sweep was under
 * way is not queued again, though the engine's list may still show it.
 * Returns how many containers it queued for removal, or -1 with err when
 * the engine could not list them. */
int reaper_sweep(struct reaper *r, struct err *err);

/* Waits up to timeout_ms for the periodic sweeper's first sweep to end
 * (found nothing, queued what it found, or could not list), so a daemon
 * clears what an earlier one left before it creates containers to keep.
 * True when it has ended, or when there is no periodic sweep. */
bool reaper_wait_first_sweep(struct reaper *r, long timeout_ms);

/* Removals queued or being retried. */
size_t reaper_pending(struct reaper *r);

#endif
