#include "sandbox/packages/report.h"

#include <stdlib.h>

void packages_report_free(struct packages_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->items[i].name);
        free(r->items[i].version);
    }
    free(r->items);
    free(r);
}
