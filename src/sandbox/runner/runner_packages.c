/* Package sets in a runner request (see runner_packages.h). */
#include "sandbox/runner/runner_packages.h"

#include <string.h>

#include "base/util.h"

static bool component_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

bool runner_package_dir_valid(const char *dir)
{
    static const char root[] = RUNNER_PACKAGES_ROOT "/";
    if (!dir || strnlen(dir, RUNNER_MAX_PACKAGE_PATH + 1) > RUNNER_MAX_PACKAGE_PATH ||
        strncmp(dir, root, sizeof(root) - 1) != 0)
        return false;
    const char *p = dir + sizeof(root) - 1;
    /* Component by component: each non-empty, of allowed bytes, not a dot
     * name (so "..", ".", "//" and a trailing "/" all fail). */
    for (;;) {
        size_t n = 0;
        while (p[n] && p[n] != '/') {
            if (!component_char(p[n]))
                return false;
            n++;
        }
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (!p[n])
            return true;
        p += n + 1;
    }
}

int runner_packages_add(json_object *obj, const char *key, char *const *dirs, size_t n,
                        struct err *err)
{
    if (n == 0)
        return 0;
    if (n > RUNNER_MAX_PACKAGE_SETS)
        return err_set(err, ERR_INVALID, "runner request: %zu package sets, at most %d", n,
                       RUNNER_MAX_PACKAGE_SETS);
    for (size_t i = 0; i < n; i++)
        if (!runner_package_dir_valid(dirs[i]))
            return err_set(
                err, ERR_INVALID,
                "runner request: package set %zu is not a directory under " RUNNER_PACKAGES_ROOT,
                i);
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(a, json_object_new_string(dirs[i]));
    json_object_object_add(obj, key, a);
    return 0;
}
