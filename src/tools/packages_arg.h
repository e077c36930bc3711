/* The packages argument of the tools that run code (run_python_code,
 * run_js_code, execute_code) and of install_packages: requirement strings
 * in the syntax of the run's language's installer (pip's, npm's), parsed,
 * normalized and checked against the language's allow and deny lists
 * (sandbox/packages/reqs.h) when the call is admitted, so that a refused
 * package costs no sandbox. validate_code and create_session do not take
 * it (their schemas refuse it). */
#ifndef MCPSBX_PACKAGES_ARG_H
#define MCPSBX_PACKAGES_ARG_H

#include <json-c/json.h>

#include "base/err.h"
#include "sandbox/sandbox.h"

/* Sets run->packages (NULL before; run->language set) from args'
 * "packages" (the tool's schema has checked its shape): a heap list the
 * run owns, or NULL when the argument is absent, null or [] (no packages,
 * whatever the language) or the run only checks the code. Leaves
 * run->packages_stay as it is. Returns 0, or -1 with a message fit for
 * the caller (ERR_INVALID; ERR_TOO_BIG past reqs.h's caps): packages for
 * a language with no installer, or a requirement reqs_parse refuses
 * ("packages[1]: ..."); run->packages is NULL then. */
int packages_arg_parse(json_object *args, struct run *run, struct err *err);

#endif
