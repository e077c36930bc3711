/* A run's packages report (sandbox/packages/report.h) in its result: the
 * "packages" member of the structured content, an array of
 * {name, version, source, ms}, and one line of the readable text naming
 * each package and its version and saying whether the set came from the
 * cache or was installed for the call, and how long that took. The
 * versions come from the set an installer wrote, so they are made valid
 * UTF-8 and cut before they are shown. */
#ifndef MCPSBX_PACKAGES_RESULT_H
#define MCPSBX_PACKAGES_RESULT_H

#include <json-c/json.h>

#include "base/buf.h"
#include "sandbox/sandbox.h"

/* The most packages the text names; the rest are counted. */
#define PACKAGES_RESULT_TEXT_ITEMS REQS_MAX_COUNT
/* Room that line takes in the text at most. */
#define PACKAGES_RESULT_TEXT_MAX                                                                   \
    (PACKAGES_RESULT_TEXT_ITEMS * (REQS_NAME_MAX + PACKAGES_VERSION_MAX + 3) + 96)

/* The report (NULL: none) as the "packages" array: one object per item,
 * each with the report's source and ms; [] for none. */
json_object *packages_result_json(const struct packages_report *r);

/* Adds "packages" to sc. */
void packages_result_add(const struct packages_report *r, json_object *sc);

/* Appends "--- packages: NAME VERSION, ... (installed in N ms) ---" (or
 * "(cached, N ms)") on a line of its own when r has items; returns what
 * buf_addf does. */
int packages_result_text(const struct packages_report *r, struct buf *text);

#endif
