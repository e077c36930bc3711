/* The options' documentation, printed from the option table
 * (config_table.h): --help, and the sample configuration file that is
 * committed as config/mcp-sandboxd.conf (`make` checks the two agree). */
#ifndef MCPSBX_CONFIG_DOC_H
#define MCPSBX_CONFIG_DOC_H

#include <stdio.h>

/* Writes --help text to fp. */
void config_usage(FILE *fp, const char *argv0);

/* Writes the sample configuration file to fp: every option a file may
 * set, commented out, with its help and its default. */
void config_print_sample(FILE *fp);

#endif
