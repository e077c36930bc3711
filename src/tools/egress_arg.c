#include "tools/egress_arg.h"

#include <stdlib.h>

#include "base/util.h"

/* The call's patterns, each read as the gateway reads the operator's
 * (the schema holds the count to EGRESS_PATTERNS_MAX). */
static int read_asked(json_object *arr, struct egress_patterns *asked, struct err *err)
{
    size_t n = json_object_array_length(arr);
    asked->n = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *item = json_object_array_get_idx(arr, i);
        if (!json_object_is_type(item, json_type_string))
            return err_set(err, ERR_INVALID, "argument 'egress[%zu]' must be a string", i);
        if (egress_patterns_add(asked, json_object_get_string(item),
                                (size_t)json_object_get_string_len(item), err) < 0)
            return err_wrap(err, "argument 'egress[%zu]'", i);
    }
    return 0;
}

json_object *egress_arg_list_json(const struct egress_patterns *list)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; list && i < list->n; i++) {
        char text[EGRESS_PATTERN_TEXT_MAX + 1];
        size_t n = egress_pattern_format(&list->items[i], text, sizeof(text));
        json_object_array_add(a, json_object_new_string_len(text, (int)n));
    }
    return a;
}

int egress_arg_parse(json_object *args, struct run *run, struct err *err)
{
    const struct egress_patterns *base = run->language->egress;
    json_object *arg = NULL;
    bool given = json_object_object_get_ex(args, "egress", &arg) && arg;
    run->egress = NULL;
    if (given && !json_object_is_type(arg, json_type_array))
        return err_set(err, ERR_INVALID, "argument 'egress' must be an array of host patterns");
    size_t n = given ? json_object_array_length(arg) : 0;
    if (!base && n)
        return err_set(err, ERR_INVALID,
                       "%s has no egress allow-list here; the operator sets one with --egress",
                       run->language->name);
    /* No list, a call that asks for no host at all, or a syntax check
     * (which runs nothing): no egress. */
    if (!base || (given && n == 0) || run->check_only)
        return 0;
    struct egress_patterns *list = xmalloc(sizeof(*list));
    if (!given) {
        *list = *base;
    } else if (read_asked(arg, list, err) < 0) {
        free(list);
        return -1;
    } else if (egress_patterns_narrow(base, list, list, err) < 0) {
        free(list);
        return err_wrap(err, "argument 'egress'");
    }
    run->egress = list;
    return 0;
}
