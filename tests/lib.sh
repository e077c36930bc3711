# shellcheck shell=bash
# Helpers shared by the test drivers (tests/*/run.sh), sourced after they set
# TESTS (the tests/ folder) and define log(). Not a program of its own.

# The engines' sockets, where scripts/engine.sh starts them.
# shellcheck disable=SC2034 # the drivers'
readonly DOCKER_SOCK=/var/run/docker.sock PODMAN_SOCK=/run/podman/podman.sock

# ensure_node_modules SUITE: `npm ci` in tests/ when node_modules is missing
# or older than package.json / package-lock.json. When that fails, prints
# the suite's summary line "SUITE: 0 passed, 1 failed" and exits 1.
ensure_node_modules() {
	local suite=$1 stamp=$TESTS/node_modules/.package-lock.json
	if [ -f "$stamp" ] && [ ! "$TESTS/package-lock.json" -nt "$stamp" ] &&
		[ ! "$TESTS/package.json" -nt "$stamp" ]; then
		return 0
	fi
	command -v npm >/dev/null || { log "npm not found"; exit 2; }
	log "installing test dependencies (npm ci)"
	if ! (cd "$TESTS" && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
		log "npm ci failed in $TESTS"
		echo "$suite: 0 passed, 1 failed"
		exit 1
	fi
}

# tap_count FILE KEY: the number on the "# KEY N" line of a TAP summary.
tap_count() {
	local n
	n=$(sed -n "s/^# $2 \([0-9][0-9]*\)\$/\1/p" "$1" 2>/dev/null | tail -n 1)
	echo "${n:-}"
}

# tap_failures TAP [LINES]: each failed test in node --test's TAP file with
# the first LINES (default 40) lines of its error, which carries the
# daemon's stderr; printed after a summary so the reason ends up in the
# last lines of a long log.
tap_failures() {
	[ -f "$1" ] || return 0
	awk -v max="${2:-40}" '
		function indent(s) { match(s, /^ */); return RLENGTH }
		/^ *not ok [0-9]+ - / {
			name = $0; sub(/^ *not ok [0-9]+ - /, "", name)
			print "  FAILED: " name; infail = 1; inerr = 0; n = 0; next
		}
		infail && /^ *\.\.\.$/ { infail = 0; inerr = 0; next }
		infail && /^ *error: / {
			inerr = 1; errind = indent($0); line = $0
			sub(/^ *error: (\|-)? ?/, "", line); gsub(/^\x27|\x27$/, "", line)
			if (line != "") { print "    " substr(line, 1, 300); n++ }
			next
		}
		infail && inerr {
			if ($0 != "" && indent($0) <= errind) { inerr = 0; next }
			if (n < max) { line = $0; sub(/^ */, "", line); print "    " substr(line, 1, 300) }
			else if (n == max) print "    (more in the log above)"
			n++
		}
	' "$1"
}

# tap_totals NAME TAP RC TIMEOUT: reads node --test's TAP summary into
# TAP_PASS, TAP_FAIL and TAP_TESTS. Cancelled tests count as failed; a run
# with no summary (killed at its TIMEOUT seconds, or crashed) counts one more
# failure, and so does a non-zero exit with nothing failed.
# shellcheck disable=SC2034 # TAP_* are the caller's to read
tap_totals() {
	local name=$1 tap=$2 rc=$3 timeout=$4 cancelled
	TAP_PASS=$(tap_count "$tap" pass)
	TAP_FAIL=$(tap_count "$tap" fail)
	TAP_TESTS=$(tap_count "$tap" tests)
	cancelled=$(tap_count "$tap" cancelled)
	if [ -z "$TAP_PASS" ] || [ -z "$TAP_FAIL" ]; then
		TAP_PASS=${TAP_PASS:-0}
		TAP_FAIL=$((${TAP_FAIL:-0} + 1))
		log "$name: the test run ended without a summary (exit $rc; timeout ${timeout}s?)"
	fi
	TAP_FAIL=$((TAP_FAIL + ${cancelled:-0}))
	if [ "$rc" -ne 0 ] && [ "$TAP_FAIL" -eq 0 ]; then
		TAP_FAIL=1
		log "$name: node --test exited $rc with no failed test"
	fi
	[ "$TAP_FAIL" -gt 0 ] && FAILED_TAPS+=("$name" "$tap")
	return 0
}

# print_failures: after a driver's summary, the failed tests of every pass
# tap_totals saw fail, with their errors (see tap_failures).
FAILED_TAPS=()
print_failures() {
	local i
	[ ${#FAILED_TAPS[@]} -eq 0 ] && return 0
	echo
	echo "=== failed tests ==="
	for ((i = 0; i < ${#FAILED_TAPS[@]}; i += 2)); do
		echo "${FAILED_TAPS[i]}:"
		tap_failures "${FAILED_TAPS[i + 1]}"
	done
}

# engine_has_runtime SOCKET NAME: true when the engine at SOCKET lists the
# OCI runtime NAME in GET /info.
engine_has_runtime() {
	curl -sf --max-time 10 --unix-socket "$1" http://d/info |
		node -e 'let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => process.exit(Object.keys(JSON.parse(s).Runtimes ?? {}).includes(process.argv[1]) ? 0 : 1))' "$2"
}

# parse_passes "DEFAULT ..." "ALLOWED ..." ARG...: sets PASSES to the
# passes named in ARG (DEFAULT when none); -h/--help prints the calling
# script's header comment and exits 0; an unknown pass exits 2.
# shellcheck disable=SC2034 # PASSES is the caller's to read
parse_passes() {
	local defaults=$1 allowed=$2 p
	shift 2
	PASSES=("$@")
	# shellcheck disable=SC2206 # word lists on purpose
	[ ${#PASSES[@]} -eq 0 ] && PASSES=($defaults)
	for p in "${PASSES[@]}"; do
		case $p in
		-h | --help)
			awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
			exit 0
			;;
		esac
		case " $allowed " in
		*" $p "*) ;;
		*)
			log "unknown pass '$p' (${allowed// /, })"
			exit 2
			;;
		esac
	done
}

# suite_begin SUITE "DEFAULT ..." "ALLOWED ..." ARG...: what every driver
# does first: PASSES from ARG (parse_passes), node and the test
# dependencies there (ensure_node_modules), $work, a fresh folder of the
# suite's under /tmp removed at exit (a driver with more to clean sets a
# trap of its own), and the totals at zero.
suite_begin() {
	local suite=$1
	parse_passes "$2" "$3" "${@:4}"
	command -v node >/dev/null || {
		log "node not found"
		exit 2
	}
	ensure_node_modules "$suite"
	work=$(mktemp -d "/tmp/mcpsbx-$suite.XXXXXX")
	# shellcheck disable=SC2064 # $work is known now
	trap "rm -rf '$work'" EXIT
	# shellcheck disable=SC2034 # the caller's
	total_pass=0 total_fail=0 summaries=()
}

# pass_setup BIN ENGINE SOCKET [RUNTIME]: the daemon binary exists, the
# engine answers, the images are built in it, and it has RUNTIME when one is
# named. Prints what is wrong and fails otherwise.
pass_setup() {
	local bin=$1 engine=$2 sock=$3 runtime=${4:-}
	if [ ! -x "$bin" ]; then
		echo "$bin not found (make builds it)"
	elif ! timeout 150 "$ROOT/scripts/engine.sh" start "$engine" >&2; then
		echo "scripts/engine.sh start $engine failed"
	elif ! DOCKER_HOST=unix://$sock "$ROOT/scripts/images.sh" >&2; then
		echo "scripts/images.sh failed for $engine"
	elif [ -n "$runtime" ] && ! engine_has_runtime "$sock" "$runtime"; then
		echo "the engine at $sock has no $runtime runtime (scripts/deps.sh --gvisor, then scripts/engine.sh start $engine)"
	else
		return 0
	fi
	return 1
}
