/* For the unit tests that set the daemon's options: from a command line,
 * as main loads them, or a list option (--languages, --allow-network,
 * --pass-through-env, --allowed-hosts, ...) as the configuration holds
 * it, NULL-terminated. Include after cmocka.h. */
#ifndef MCPSBX_TEST_OPTIONS_H
#define MCPSBX_TEST_OPTIONS_H

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

/* cfg initialised and loaded from the command line argv (argv[0] the
 * program's name; NULL-terminated) with no environment; an option
 * config_load refuses fails the test. Free with config_free. */
static inline void options_load(struct config *cfg, char **argv)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    char *none[] = {NULL};
    struct err err = ERR_INIT;
    config_init(cfg);
    if (config_load(cfg, argc, argv, none, &err) < 0)
        fail_msg("config_load: %s", err_msg(&err));
}

/* A cmocka setup and teardown: the test's state is a configuration with
 * the defaults, for the test to change. */
static inline int options_setup(void **state)
{
    struct config *cfg = xcalloc(1, sizeof(*cfg));
    config_init(cfg);
    *state = cfg;
    return 0;
}

static inline int options_teardown(void **state)
{
    config_free(*state);
    free(*state);
    return 0;
}

#endif
