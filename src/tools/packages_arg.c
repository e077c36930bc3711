#include "tools/packages_arg.h"

#include <stdlib.h>

#include "base/util.h"

/* The array's strings as reqs_parse takes them (borrowed from arr); the
 * caller has checked the count. */
static int read_strings(json_object *arr, size_t n, const char **strs, size_t *lens,
                        struct err *err)
{
    for (size_t i = 0; i < n; i++) {
        json_object *item = json_object_array_get_idx(arr, i);
        if (!json_object_is_type(item, json_type_string))
            return err_set(err, ERR_INVALID, "argument 'packages[%zu]' must be a string", i);
        strs[i] = json_object_get_string(item);
        lens[i] = (size_t)json_object_get_string_len(item);
    }
    return 0;
}

int packages_arg_parse(json_object *args, struct run *run, struct err *err)
{
    const struct langtable_lang *lang = run->language;
    json_object *arg = NULL;
    bool given = json_object_object_get_ex(args, "packages", &arg) && arg;
    run->packages = NULL;
    if (given && !json_object_is_type(arg, json_type_array))
        return err_set(err, ERR_INVALID, "argument 'packages' must be an array of requirements");
    size_t n = given ? json_object_array_length(arg) : 0;
    /* Nothing asked, or a syntax check (which runs nothing). */
    if (n == 0 || run->check_only)
        return 0;
    if (!lang->packages)
        return err_set(err, ERR_INVALID,
                       "language %s has no package installer; list_languages says which do",
                       lang->name);
    if (n > REQS_MAX_COUNT)
        return err_set(err, ERR_TOO_BIG, "argument 'packages': more than %d requirements",
                       REQS_MAX_COUNT);
    const char **strs = xcalloc(n, sizeof(*strs));
    size_t *lens = xcalloc(n, sizeof(*lens));
    struct reqs_list *list = xcalloc(1, sizeof(*list));
    struct reqs_rules rules = langtable_packages_rules(lang->packages);
    int rc = read_strings(arg, n, strs, lens, err);
    if (rc == 0)
        rc = reqs_parse(lang->packages->installer, strs, lens, n, &rules, "packages", list, err);
    free(strs);
    free(lens);
    if (rc < 0 || list->n == 0) {
        reqs_list_free(list);
        free(list);
        return rc;
    }
    run->packages = list;
    return 0;
}
