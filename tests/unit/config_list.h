/* For the unit tests that set a list option (--languages, --allow-network,
 * --pass-through-env, --allowed-hosts, ...): the list as the daemon's
 * configuration holds it, NULL-terminated. */
#ifndef MCPSBX_TEST_CONFIG_LIST_H
#define MCPSBX_TEST_CONFIG_LIST_H

#include <stdlib.h>

#include "base/config.h"
#include "base/util.h"

/* Sets l to the n names given (copies), freeing what it held. */
static inline void set_list(struct config_list *l, const char *const *names, size_t n)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i]);
    l->items = xrealloc(l->items, (n + 1) * sizeof(char *));
    for (size_t i = 0; i < n; i++)
        l->items[i] = xstrdup(names[i]);
    l->items[n] = NULL;
    l->n = n;
}

#endif
