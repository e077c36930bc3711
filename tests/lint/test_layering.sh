#!/usr/bin/env bash
# The layering rule of scripts/lint.sh, tried on small trees of its own: a
# clean tree passes; an upward include, an include that is not a path under
# src/, a folder that is not a layer, a file directly in src/ other than
# main.c, a backend implementation's header included outside its
# folder and backends.c, a sandbox header other than its facade included
# from above, and a backend implementation's header included by a unit
# test that must use the fake backend each fail with a message naming the
# file (and line).
#
#   tests/lint/test_layering.sh      prints "lint-test: N passed, M failed"
set -uo pipefail

CHECK=layering
# shellcheck source=tests/lint/harness.sh
. "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

# tree NAME: a copy of the lint script beside a minimal clean src/.
tree() {
	local t=$work/$1
	mkdir -p "$t/scripts" "$t/src/base" "$t/src/mcp" "$t/src/transport"
	cp "$ROOT/scripts/lint.sh" "$t/scripts/lint.sh"
	printf '#include <stdio.h>\n' >"$t/src/base/util.h"
	printf '#include "base/util.h"\n' >"$t/src/mcp/mcp.h"
	printf '#include "mcp/mcp.h"\n#include "base/util.h"\n' >"$t/src/transport/stdio.c"
	printf '#include "transport/stdio.c"\n' >"$t/src/main.c"
	printf '%s\n' "$t"
}

tree clean >/dev/null
expect clean pass ""

t=$(tree upward)
printf '#include "transport/stdio.c"\n' >>"$t/src/mcp/mcp.h"
expect upward fail 'src/mcp/mcp.h:2: mcp \(layer [0-9]+\) must not include transport/stdio.c'

t=$(tree bare)
printf '#include "util.h"\n' >>"$t/src/mcp/mcp.h"
expect bare fail 'src/mcp/mcp.h:2: includes "util.h", which is not a path under src/'

t=$(tree stray)
mkdir -p "$t/src/misc"
printf '#include "base/util.h"\n' >"$t/src/misc/x.c"
expect stray fail "folder 'misc' is not a layer"

t=$(tree loose)
printf '#include "base/util.h"\n' >"$t/src/helper.c"
expect loose fail 'src/helper.c: only main.c sits directly in src/'

t=$(tree base-up)
printf '#include "mcp/mcp.h"\n' >>"$t/src/base/util.h"
expect base-up fail 'src/base/util.h:2: base \(layer 0\) must not include mcp/mcp.h'

t=$(tree backend-impl)
mkdir -p "$t/src/backend/docker"
printf '#include "base/util.h"\n' >"$t/src/backend/docker/docker.h"
printf '#include "backend/docker/docker.h"\n' >"$t/src/backend/docker/docker.c"
printf '#include "backend/docker/docker.h"\n' >"$t/src/backend/backends.c"
printf '#include "backend/docker/docker.h"\n' >>"$t/src/mcp/mcp.h"
expect backend-impl fail 'src/mcp/mcp.h:2: includes backend/docker/docker.h: only backend/docker/ and backend/backends.c'

t=$(tree facade)
mkdir -p "$t/src/sandbox/run"
printf '#include "base/util.h"\n' >"$t/src/sandbox/run/exec.h"
printf '#include "sandbox/run/exec.h"\n' >"$t/src/sandbox/sandbox.h"
printf '#include "sandbox/sandbox.h"\n' >>"$t/src/mcp/mcp.h"
expect facade pass ""
printf '#include "sandbox/run/exec.h"\n' >>"$t/src/mcp/mcp.h"
expect facade fail 'src/mcp/mcp.h:3: includes sandbox/run/exec.h: above the sandbox layer only sandbox/sandbox.h'

t=$(tree test-impl)
mkdir -p "$t/tests/unit/mcp"
printf '#include "mcp/mcp.h"\n' >"$t/tests/unit/mcp/test_ok.c"
expect test-impl pass ""
printf '#include "mcp/mcp.h"\n#include "backend/docker/engine.h"\n' >"$t/tests/unit/mcp/test_mcp.c"
expect test-impl fail 'tests/unit/mcp/test_mcp.c:2: includes "backend/docker/engine.h": the mcp tests use the fake backend'

finish
