/* The egress argument of the tools that run code (run_python_code,
 * run_js_code, execute_code): host patterns (egress/pattern.h) that
 * narrow the run's language's egress list for this one call, never widen
 * it. validate_code and create_session do not take it (their schemas
 * refuse it): a check reaches nothing, and a code session's calls give
 * their own. */
#ifndef MCPSBX_EGRESS_ARG_H
#define MCPSBX_EGRESS_ARG_H

#include <json-c/json.h>

#include "base/err.h"
#include "sandbox/sandbox.h"

/* Sets run->egress (NULL before; run->language set) from its language's
 * list and args' "egress" (absent or null: the whole list; the tool's
 * schema has checked its shape): a copy of the list, narrowed to the
 * call's patterns when it gives some; NULL when the language has none,
 * the call gives an empty array (for any language: it asks for nothing)
 * or the run only checks the code. Returns 0, or -1 with an ERR_INVALID
 * message fit for the caller: a malformed pattern ("argument
 * 'egress[1]': ..."), one the list does not allow, or patterns for a
 * language without a list; run->egress is NULL then. */
int egress_arg_parse(json_object *args, struct run *run, struct err *err);

/* list (NULL: none) as list_languages and the environment resource show
 * it: an array of patterns as egress_pattern_format writes them, [] for
 * none. */
json_object *egress_arg_list_json(const struct egress_patterns *list);

#endif
