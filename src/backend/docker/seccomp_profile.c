#include "backend/docker/seccomp_profile.h"

#include <json-c/json.h>
#include <string.h>

#include "base/util.h"

bool seccomp_runtime_is_gvisor(const char *runtime)
{
    return runtime && (strncmp(runtime, "runsc", 5) == 0 || strstr(runtime, "gvisor"));
}

enum seccomp_kernel seccomp_kernel_of(const char *runtime)
{
    return seccomp_runtime_is_gvisor(runtime) ? SECCOMP_KERNEL_GVISOR : SECCOMP_KERNEL_HOST;
}

/* Drops clone3 from every rule that names it and allows it: gVisor's own
 * answer (ENOSYS) is what libc needs. */
static int allow_clone3(json_object *syscalls)
{
    size_t n = json_object_array_length(syscalls);
    for (size_t i = 0; i < n;) {
        json_object *rule = json_object_array_get_idx(syscalls, i);
        json_object *names = NULL;
        if (!json_object_object_get_ex(rule, "names", &names) ||
            !json_object_is_type(names, json_type_array))
            return -1;
        for (size_t j = json_object_array_length(names); j-- > 0;) {
            const char *s = json_object_get_string(json_object_array_get_idx(names, j));
            if (s && strcmp(s, "clone3") == 0)
                json_object_array_del_idx(names, j, 1);
        }
        if (json_object_array_length(names) == 0) {
            json_object_array_del_idx(syscalls, i, 1); /* a rule for nothing */
            n--;
        } else {
            i++;
        }
    }
    json_object *rule = json_object_new_object();
    json_object *names = json_object_new_array();
    json_object_array_add(names, json_object_new_string("clone3"));
    json_object_object_add(rule, "names", names);
    json_object_object_add(rule, "action", json_object_new_string("SCMP_ACT_ALLOW"));
    json_object_array_add(syscalls, rule);
    return 0;
}

char *seccomp_profile_new(enum seccomp_kernel kernel, struct err *err)
{
    json_object *p = json_tokener_parse(seccomp_profile_src);
    json_object *syscalls = NULL;
    if (!p || !json_object_is_type(p, json_type_object) ||
        !json_object_object_get_ex(p, "syscalls", &syscalls) ||
        !json_object_is_type(syscalls, json_type_array) ||
        (kernel == SECCOMP_KERNEL_GVISOR && allow_clone3(syscalls) < 0)) {
        json_object_put(p);
        err_set(err, ERR_INTERNAL, "the embedded seccomp profile is not a profile");
        return NULL;
    }
    /* Sent with every create: without the file's indentation. */
    char *out = xstrdup(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN));
    json_object_put(p);
    return out;
}
