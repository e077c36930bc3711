/* Each language's container command: its runner (runner.h) started the
 * way the language table says, on demand and for the pool; and its
 * environment (policy_env_new). */
#ifndef MCPSBX_COMMANDS_H
#define MCPSBX_COMMANDS_H

#include <stdbool.h>

#include "sandbox/languages/langtable.h"

/* One language's commands: on demand, and for the pool with and without
 * its preloads (lean NULL: none to leave out). NULL-terminated arrays of
 * strings borrowed from the table and the embedded runners. */
struct lang_cmds {
    const char **cmd;
    const char **warm;
    const char **lean;
    const char **env; /* policy_env_new: the base and the language's own */
};

/* Per language of langs, by index; commands_free with the same count.
 * egress_ca: the daemon has its CA (the trust variables go in the
 * environments of the languages with egress). */
struct lang_cmds *commands_new(const struct langtable *langs, bool egress_ca);
void commands_free(struct lang_cmds *c, size_t n);

/* lang's on-demand command; caller frees the array (not its strings). */
const char **commands_on_demand(const struct langtable_lang *lang);
/* lang's warm runner with modules as its modules argument (a python or
 * node runner's; caller frees). */
const char **commands_warm(const struct langtable_lang *lang, const char *modules);

#endif
