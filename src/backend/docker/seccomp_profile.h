/* The seccomp profile a spec's syscall policy (backend_spec.syscalls)
 * names, in the engine's JSON format, for the kernel that will judge it;
 * and which OCI runtime names are gVisor's.
 *
 * BACKEND_SYSCALLS_SANDBOX is src/backend/docker/seccomp_profile.json,
 * embedded as seccomp_profile_src: the engine's default allow-list less
 * the kernel interfaces no program here needs (namespaces and mounts,
 * io_uring, keyrings, BPF, perf, ptrace, userfaultfd, ...). */
#ifndef MCPSBX_SECCOMP_PROFILE_H
#define MCPSBX_SECCOMP_PROFILE_H

#include <stdbool.h>

#include "base/err.h"

/* Which kernel judges the profile: the host's (runc, crun), or gVisor's
 * (runsc registered with --oci-seccomp). This gVisor answers every denial
 * with EPERM whatever errnoRet says, and libc starts threads with clone3
 * and falls back to clone only on ENOSYS; so under gVisor clone3 is left
 * to gVisor, which answers ENOSYS itself, and namespace flags are still
 * stopped on clone. */
enum seccomp_kernel { SECCOMP_KERNEL_HOST, SECCOMP_KERNEL_GVISOR };

/* True for a runtime name that is gVisor's (runsc, runsc-kvm, ..., or a
 * name with gvisor in it); NULL (the engine's default) is not. */
bool seccomp_runtime_is_gvisor(const char *runtime);

/* The kernel that judges a sandbox under runtime. */
enum seccomp_kernel seccomp_kernel_of(const char *runtime);

/* The sandbox profile for kernel as compact JSON text; caller frees.
 * NULL with err when the embedded text is not a profile (a build that
 * should not have passed its tests). */
char *seccomp_profile_new(enum seccomp_kernel kernel, struct err *err);

extern const char seccomp_profile_src[];

#endif
