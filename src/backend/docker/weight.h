/* A sandbox's CPU weight, set by the daemon in the container's own cgroup.
 *
 * Why not the engine: Docker's POST /containers/{id}/update takes 10-12 ms
 * here, longer than a warm run; Podman 4.3 has no compat update at all
 * (404) and its libpod one fails under cgroup v1 (runc update, 500). A
 * write to the cgroup's weight file costs about 20 us, so a pool sandbox
 * can wait at a low weight and be raised when a run takes it, within the
 * take. That needs the engine on this host and the right to write its
 * cgroups; otherwise weights are off (weight_open says why).
 *
 * The file is found from the container's init pid (/proc/<pid>/cgroup)
 * and opened once, while the container waits: a pid reused later cannot
 * redirect the write, and a path that does not name the container's id
 * is refused, so nothing but that container's cgroup is ever written. */
#ifndef MCPSBX_DOCKER_WEIGHT_H
#define MCPSBX_DOCKER_WEIGHT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

/* /proc/<pid>/cgroup is read up to this; a container's is a few lines. */
#define WEIGHT_CGROUP_TEXT_MAX 8192
#define WEIGHT_PATH_MAX        512

/* The cgroup's idle flag (cgroup v1 and v2 alike): "1" makes its tasks
 * SCHED_IDLE towards the rest of the machine, so a woken task of a run,
 * the daemon or its client takes the CPU from a waiting sandbox's preload
 * at once. The least weight alone does not: the scheduler lets the task
 * it just picked run out its slice first (about 3 ms here), and each of a
 * warm run's hops (client, daemon, runner) can wait that long. */
#define WEIGHT_IDLE_FILE "cpu.idle"

/* What a run gets: the defaults of cgroup v1's cpu.shares and v2's
 * cpu.weight (the engine sets the low one at create, from CpuShares). */
#define WEIGHT_V1_NORMAL "1024"
#define WEIGHT_V2_NORMAL "100"

/* Which cgroup and file: from text (n bytes of /proc/<pid>/cgroup), the
 * path under the hierarchy's mount of the cpu controller (v1 line
 * "N:...cpu...:PATH") or else of the unified one ("0::PATH"), when PATH
 * names id (a whole path segment containing it). out gets PATH; *v2 says
 * which. -1 with ERR_NOT_FOUND when no line fits. */
int weight_cgroup_path(const char *text, size_t n, const char *id, char out[WEIGHT_PATH_MAX],
                       bool *v2, struct err *err);

/* The weight file of container id, whose init is pid, opened for writing
 * (close it after use); mounts is /proc/self/mountinfo's path and proc
 * "/proc" (tests give others). -1 with err saying why weights cannot be
 * set here. *idle_fd gets the same cgroup's WEIGHT_IDLE_FILE opened for
 * writing, or -1 where the kernel has none (before 5.15). */
int weight_open(const char *proc, const char *mounts, int pid, const char *id, bool *v2,
                int *idle_fd, struct err *err);

#endif
