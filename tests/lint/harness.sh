# shellcheck shell=bash
# What the tests of scripts/lint.sh's rules share, sourced after they set
# CHECK (the lint.sh mode they try): a folder for their small trees, expect,
# and the summary line. Not a program of its own.

# shellcheck disable=SC2034 # the tests copy scripts/lint.sh from it
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
work=$(mktemp -d /tmp/mcpsbx-lint-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

passed=0
failed=0

# expect NAME WANT_STATUS PATTERN: runs the check on tree NAME (under
# $work); WANT_STATUS is pass or fail, and PATTERN (ERE, may be empty) must
# be in what it printed.
expect() {
	local name=$1 want=$2 pattern=$3 out rc
	out=$("$work/$name/scripts/lint.sh" "$CHECK" 2>&1)
	rc=$?
	if { [ "$want" = pass ] && [ $rc -eq 0 ]; } || { [ "$want" = fail ] && [ $rc -ne 0 ]; }; then
		if [ -z "$pattern" ] || grep -qE -- "$pattern" <<<"$out"; then
			echo "ok - $name"
			passed=$((passed + 1))
			return
		fi
	fi
	echo "not ok - $name (wanted $want${pattern:+ with /$pattern/}, exit $rc):"
	printf '    %s\n' "${out//$'\n'/$'\n'    }"
	failed=$((failed + 1))
}

# finish: the summary line; fails when a case did.
finish() {
	echo "lint-test: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
