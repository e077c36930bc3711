#!/usr/bin/env bash
# The paths rule of scripts/lint.sh, tried on small trees of its own: a
# clean tree passes (patterns, build/ paths and paths in code rather than
# comments are not checked); a comment in C, in a shell script or in
# README.md naming a file that is not there fails with a message naming
# the file, the line and the path.
#
#   tests/lint/test_paths.sh      prints "lint-test: N passed, M failed"
set -uo pipefail

CHECK=paths
# shellcheck source=tests/lint/harness.sh
. "$(dirname "${BASH_SOURCE[0]}")/harness.sh"

# tree NAME: a copy of the lint script beside a small tree whose comments
# name only what is there, or patterns.
tree() {
	local t=$work/$1
	# The folders the lint script's own comments name.
	mkdir -p "$t/scripts" "$t/src/base" "$t/tests/unit/base" "$t/tests/lint" "$t/containers" "$t/config"
	cp "$ROOT/scripts/lint.sh" "$t/scripts/lint.sh"
	printf '/* The buffer (src/base/buf.h); its tests: tests/unit/base/. */\n' >"$t/src/base/buf.h"
	printf '%s\n' '/* Mirrors src/: tests/unit/<layer>/test_<module>.c, src/tools/defs/*.json,' \
		' * src/… and build/src/gone.c are patterns or generated. */' \
		'static const char *p = "src/base/gone.c"; // src/base/buf.h.' >"$t/tests/unit/base/test_buf.c"
	printf '#!/bin/sh\n# runs tests/unit/base/test_buf.c\necho src/gone.c\n' >"$t/scripts/run.sh"
	printf "# Tree\n\nsrc/base/buf.h and scripts/run.sh.\n" >"$t/README.md"
	printf '%s\n' "$t"
}

tree clean >/dev/null
expect clean pass ""

t=$(tree c-comment)
printf '/* Moved: see src/base/buffer.c. */\n' >>"$t/src/base/buf.h"
expect c-comment fail 'src/base/buf.h:2: names src/base/buffer.c, which is not in the tree'

t=$(tree line-comment)
printf '// as tests/unit/base/test_buffer.c does\n' >>"$t/tests/unit/base/test_buf.c"
expect line-comment fail 'tests/unit/base/test_buf.c:4: names tests/unit/base/test_buffer.c'

t=$(tree hash-comment)
printf '# see scripts/gone.sh\n' >>"$t/scripts/run.sh"
expect hash-comment fail 'scripts/run.sh:4: names scripts/gone.sh'

t=$(tree readme)
printf "\nA language is a runner under src/sandbox/runner/.\n" >>"$t/README.md"
expect readme fail 'README.md:5: names src/sandbox/runner/'

finish
