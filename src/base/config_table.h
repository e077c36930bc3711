/* The daemon's options as data: one row per option holds its name, type,
 * field of struct config, bounds, default and help. Everything else reads
 * the rows: config_init takes the defaults from them, config_load parses
 * the command line, MCPSANDBOXD_* variables and the config file by them,
 * and --help and config/mcp-sandboxd.conf are printed from them
 * (config_doc.h), so a fact about an option is written once, here. */
#ifndef MCPSBX_CONFIG_TABLE_H
#define MCPSBX_CONFIG_TABLE_H

#include <stdbool.h>
#include <stddef.h>

enum config_opt_type { OPT_STR, OPT_INT, OPT_DOUBLE, OPT_LIST, OPT_FLAG };

struct config_opt {
    const char *name; /* the long option; also the file key and MCPSANDBOXD_<NAME> */
    size_t offset;    /* of the field in struct config, of the row's type */
    long long min, max;
    const char *arg; /* the value's form in --help, e.g. "N"; NULL for flags */
    const char *help;
    /* The value config_init gives the field: def for OPT_STR (NULL leaves
     * it NULL) and OPT_LIST (comma-separated), def_int for OPT_INT,
     * def_real for OPT_DOUBLE; flags start false (a flag that is a
     * setting, not cli_only, says so in def: "false"). */
    const char *def;
    long long def_int;
    double def_real;
    /* What the default means where the value does not say it: decided
     * at run time, or "not given" so that another table's value holds
     * (e.g. "the language table's"). --help shows it instead. */
    const char *def_doc;
    int (*check_item)(const char *s, size_t n); /* OPT_LIST items */
    enum config_opt_type type;
    /* An action rather than a setting: a config file or a variable left
     * in the environment must never turn a daemon into a one-shot command. */
    bool cli_only;
    /* OPT_LIST: what separates items in one value; 0 is ','. */
    char sep;
};

extern const struct config_opt config_opts[];
extern const size_t config_opts_n;

/* The row named name[0..n), or NULL. */
const struct config_opt *config_opt_find(const char *name, size_t n);

/* Writes MCPSANDBOXD_<NAME> ('-' -> '_', upper case) into out. */
void config_opt_env_name(const struct config_opt *o, char *out, size_t outsz);

#endif
