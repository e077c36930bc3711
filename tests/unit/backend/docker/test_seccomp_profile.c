/* seccomp_profile.c: the sandbox's profile for either kernel, and which
 * runtime names are gVisor's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "backend/docker/seccomp_profile.h"

/* The action the profile takes for syscall name with no argument rules, or
 * NULL when no entry names it (then the default action applies). */
static const char *action_for(json_object *prof, const char *name, bool *conditional)
{
    json_object *calls = json_object_object_get(prof, "syscalls");
    const char *found = NULL;
    *conditional = false;
    for (size_t i = 0; i < json_object_array_length(calls); i++) {
        json_object *e = json_object_array_get_idx(calls, i);
        json_object *names = json_object_object_get(e, "names");
        for (size_t j = 0; j < json_object_array_length(names); j++) {
            if (strcmp(json_object_get_string(json_object_array_get_idx(names, j)), name) != 0)
                continue;
            found = json_object_get_string(json_object_object_get(e, "action"));
            json_object *args = json_object_object_get(e, "args");
            if (args && json_object_array_length(args) > 0)
                *conditional = true;
        }
    }
    return found;
}

/* The embedded profile, for either kernel: denies by default, never allows
 * the interfaces the sandbox must not reach, allows what programs need, and
 * keeps clone from making namespaces. clone3 is denied with ENOSYS for the
 * host's kernel and left to gVisor's (which answers ENOSYS itself). */
static void check_seccomp_profile(enum seccomp_kernel kernel)
{
    struct err err = ERR_INIT;
    char *text = seccomp_profile_new(kernel, &err);
    assert_non_null(text);
    assert_null(strchr(text, '\n')); /* compact: it goes with every create */
    json_object *prof = json_tokener_parse(text);
    assert_non_null(prof);
    assert_string_equal(json_object_get_string(json_object_object_get(prof, "defaultAction")),
                        "SCMP_ACT_ERRNO");
    static const char *const denied[] = {"io_uring_setup",
                                         "io_uring_enter",
                                         "io_uring_register",
                                         "userfaultfd",
                                         "keyctl",
                                         "add_key",
                                         "request_key",
                                         "bpf",
                                         "perf_event_open",
                                         "unshare",
                                         "setns",
                                         "ptrace",
                                         "process_vm_readv",
                                         "process_vm_writev",
                                         "mount",
                                         "umount2",
                                         "fsopen",
                                         "move_mount",
                                         "open_tree",
                                         "pivot_root",
                                         "chroot",
                                         "kexec_load",
                                         "kexec_file_load",
                                         "open_by_handle_at",
                                         "init_module",
                                         "finit_module",
                                         "reboot",
                                         "swapon",
                                         "pidfd_getfd",
                                         "socketcall",
                                         "modify_ldt",
                                         "vm86"};
    for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
        bool cond = false;
        const char *a = action_for(prof, denied[i], &cond);
        if (a && strcmp(a, "SCMP_ACT_ERRNO") != 0)
            fail_msg("%s: %s", denied[i], a);
    }
    static const char *const needed[] = {
        "read",  "write",      "openat",    "mmap",       "futex",        "execve",    "wait4",
        "pipe2", "epoll_wait", "getrandom", "arch_prctl", "rt_sigaction", "prlimit64", "statx"};
    for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
        bool cond = true;
        const char *a = action_for(prof, needed[i], &cond);
        if (!a || strcmp(a, "SCMP_ACT_ALLOW") != 0 || cond)
            fail_msg("%s is not allowed", needed[i]);
    }
    /* clone only without the namespace flags. */
    bool cond = false;
    assert_string_equal(action_for(prof, "clone", &cond), "SCMP_ACT_ALLOW");
    assert_true(cond);
    assert_non_null(strstr(text, "\"value\":2114060288"));
    assert_non_null(strstr(text, "SCMP_CMP_MASKED_EQ"));
    /* One rule names clone3, whichever it is. */
    const char *c3 = action_for(prof, "clone3", &cond);
    assert_non_null(c3);
    assert_null(strstr(strstr(text, "\"clone3\"") + 1, "\"clone3\""));
    assert_null(strstr(text, "\"names\":[]"));
    assert_string_equal(c3, kernel == SECCOMP_KERNEL_GVISOR ? "SCMP_ACT_ALLOW" : "SCMP_ACT_ERRNO");
    assert_false(cond);
    json_object_put(prof);
    free(text);
}

static void test_seccomp_profile(void **state)
{
    (void)state;
    check_seccomp_profile(SECCOMP_KERNEL_HOST);
    check_seccomp_profile(SECCOMP_KERNEL_GVISOR);
}

/* A runtime whose name says gVisor gets the gVisor kernel's profile. */
static void test_gvisor_runtimes(void **state)
{
    (void)state;
    assert_true(seccomp_runtime_is_gvisor("runsc"));
    assert_true(seccomp_runtime_is_gvisor("my-gvisor"));
    assert_true(seccomp_runtime_is_gvisor("runsc-kvm"));
    assert_false(seccomp_runtime_is_gvisor("runc"));
    assert_false(seccomp_runtime_is_gvisor("crun"));
    assert_false(seccomp_runtime_is_gvisor(NULL));
    assert_int_equal(seccomp_kernel_of("runsc"), SECCOMP_KERNEL_GVISOR);
    assert_int_equal(seccomp_kernel_of("runc"), SECCOMP_KERNEL_HOST);
    assert_int_equal(seccomp_kernel_of(NULL), SECCOMP_KERNEL_HOST);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seccomp_profile),
        cmocka_unit_test(test_gvisor_runtimes),
    };
    return cmocka_run_group_tests_name("seccomp_profile", tests, NULL, NULL);
}
