/* A run's egress summary (egress/summary.h) in its result: the "egress"
 * member of the structured content, and a line in the readable text that
 * names what the gateway refused, so a reader of the text alone learns
 * why a request failed. */
#ifndef MCPSBX_EGRESS_RESULT_H
#define MCPSBX_EGRESS_RESULT_H

#include <json-c/json.h>

#include "base/buf.h"
#include "egress/summary.h"

/* The most refusals the text names; the rest are counted. */
#define EGRESS_RESULT_TEXT_REFUSALS 3
/* Room that line takes in the text at most. */
#define EGRESS_RESULT_TEXT_MAX                                                                     \
    (EGRESS_RESULT_TEXT_REFUSALS * (EGRESS_SUMMARY_HOST_CAP + EGRESS_SUMMARY_REASON_CAP + 16) + 96)

/* Adds "egress" to sc. */
void egress_result_add(const struct egress_report *r, json_object *sc);

/* Appends the refusals' line to text when there were any; returns what
 * buf_addf does. */
int egress_result_text(const struct egress_report *r, struct buf *text);

#endif
