/* The sandbox layer as the layers above it see it, and all of it they may
 * include (the lint holds them to this header): a run (run/run.h) and its
 * execution (run/exec.h), the policy words a tool reports
 * (run/policy.h), the language table (languages/langtable.h), and the
 * files a run takes and leaves (output/workpath.h, output/outfiles.h).
 *
 * The rest is the layer's own, one folder per job: run/ (a run from its
 * admission to its record: launch, follow, commands, policy), output/ (the
 * output pipeline: scan, redact, cap, emit; the files left behind), pool/
 * (warm sandboxes, the reaper, the uids in use), languages/ (the table:
 * reading with positions, merging, lookups), runner/ (the in-sandbox
 * runners and their protocol) and session/ (code sessions: sandboxes kept
 * between calls for one owner). */
#ifndef MCPSBX_SANDBOX_H
#define MCPSBX_SANDBOX_H

#include "sandbox/languages/langtable.h"
#include "sandbox/output/outfiles.h"
#include "sandbox/output/workpath.h"
#include "sandbox/run/exec.h"
#include "sandbox/run/policy.h"
#include "sandbox/run/run.h"
#include "sandbox/session/code_session.h"
#include "sandbox/session/session_check.h"
#include "sandbox/session/sessions.h"

#endif
