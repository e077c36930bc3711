/* The language table's "packages" key (sandbox/languages/langtable.h):
 * read from a file's object, settled once the language is whole (its
 * installer defaulted from and checked against its runner, the rules
 * normalized, the preinstall list parsed by sandbox/packages/reqs.h), and
 * the index URLs' form, which --packages-index shares. Internal to the
 * language table. */
#ifndef MCPSBX_LANGTABLE_PACKAGES_H
#define MCPSBX_LANGTABLE_PACKAGES_H

#include <json-c/json.h>

#include "base/err.h"
#include "sandbox/languages/langtable_read.h"

/* The object's value as read (caller frees with langtable_packages_free);
 * -1 with err ("'packages': ..."). Rules and preinstall items are checked
 * for form only until langtable_packages_settle. */
int langtable_packages_read(json_object *v, struct langtable_packages **out, struct err *err);

void langtable_packages_free(struct langtable_packages *p);

/* d's packages, once d is merged: the installer its runner takes where
 * none was given, refused where it does not fit the runner (dropped
 * instead when it came with a runner the operator then changed), the
 * allow and deny rules normalized, the preinstall list parsed and checked
 * against them. */
int langtable_packages_settle(struct draft *d, struct err *err);

/* Whether s[0..n) is an index URL: http:// or https://, a host (a DNS
 * name, an IPv4 address or a bracketed IPv6 one), an optional :PORT, an
 * optional path; no credentials, query, fragment, space, ',' or ';'.
 * 0, or -1 with err saying what is wrong. */
int langtable_index_url_check(const char *s, size_t n, struct err *err);

#endif
