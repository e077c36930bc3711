/* What making a run's packages ready cost, for its result: each requested
 * name with the version the set holds, whether the set came from the
 * cache or was installed for this call, and the milliseconds that took.
 * Plain C data: it travels with the result to the thread that renders it. */
#ifndef MCPSBX_PACKAGES_REPORT_H
#define MCPSBX_PACKAGES_REPORT_H

#include <stdbool.h>
#include <stddef.h>

/* The longest version text a report keeps (an installer's, cut). */
#define PACKAGES_VERSION_MAX 64

struct packages_report_item {
    char *name;    /* the normalized name (reqs.h) */
    char *version; /* as the set holds it; NULL: not found in the set */
};

struct packages_report {
    struct packages_report_item *items;
    size_t n;
    bool cached; /* the whole set was in the cache: no installer ran */
    double ms;   /* waiting for, or running, the install; looking up a hit */
};

/* Frees what r holds and r itself (NULL is a no-op). */
void packages_report_free(struct packages_report *r);

#endif
