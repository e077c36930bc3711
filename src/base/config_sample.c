/* build/config-sample: prints the sample configuration file from the
 * option table (src/base/config_table.c). `make` compares it with the
 * committed config/mcp-sandboxd.conf; `make config-sample` rewrites that. */
#include <stdio.h>

#include "base/config_doc.h"

int main(void)
{
    config_print_sample(stdout);
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}
