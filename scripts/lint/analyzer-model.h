/* Force-included (-include) by scripts/lint.sh into every translation unit
 * that clang-tidy analyses, except src/base/err.c, which defines these functions.
 *
 * Why: the static analyzer looks at one translation unit at a time, so it
 * cannot see that err_set() and err_wrap() always return -1 (the contract
 * written in src/base/err.h). It then explores "return err_set(...)" paths as if
 * they returned >= 0 and reports garbage or NULL values that callers only
 * read on success. Modelling the contract here keeps those checks on for
 * real bugs. Nothing here is compiled into the daemon. If err.h ever makes
 * these macros itself, the #ifndef guards make this file a no-op. */
#ifndef MCPSBX_LINT_ANALYZER_MODEL_H
#define MCPSBX_LINT_ANALYZER_MODEL_H

#include "base/err.h"

#ifndef err_set
#define err_set(...) ((err_set)(__VA_ARGS__), -1)
#endif
#ifndef err_wrap
#define err_wrap(...) ((err_wrap)(__VA_ARGS__), -1)
#endif

#endif
