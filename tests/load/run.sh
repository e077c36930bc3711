#!/usr/bin/env bash
# Load test: many MCP clients at once against the daemon on Docker, over
# loopback HTTP (streamable + legacy SSE) and over stdio (tests/load/load.mjs
# says what it sends and checks).
#
#   tests/load/run.sh
#
# Checks that the daemon stays up, answers every request with well-formed
# JSON-RPC for that request, queues calls past --max-concurrent instead of
# refusing them as busy, leaves no container behind, keeps its memory (VmRSS)
# bounded and exits 0 on SIGTERM / end of stdin. Bounded: fixed client and
# iteration counts, a deadline inside load.mjs, and a hard timeout here; the
# whole run takes about a minute.
#
# Builds nothing except `npm ci` in tests/ when node_modules is missing or
# older than package-lock.json (make load builds the daemon). Before the run:
# scripts/engine.sh start docker, then scripts/images.sh for Docker (both
# quick when already done).
#
# Then the first crash report's reproduction, shortened: wrk -t2 -c64 POSTing
# tools/list on one session for LOAD_WRK_SECONDS (default 10); the daemon
# must survive it, answer every request with 2xx and then a correct tools/list
# (two checks; make bench runs it for 60 s).
#
# Prints each check, the figures (requests per kind, p50/p95 latencies, RSS
# peak and final) and finally exactly
#   load: N passed, M failed
# counting checks (setup failing, or load.mjs ending without its summary,
# counts one failed check). Exits non-zero on any failure.
#
# Environment:
#   LOAD_BIN      daemon binary (default build/mcp-sandboxd)
#   LOAD_TIMEOUT  hard limit in seconds for load.mjs (default 120; it gives
#                 up by itself 10 s before)
#   LOAD_CLIENTS, LOAD_ITERATIONS, LOAD_LEGACY_CLIENTS, LOAD_STDIO_CALLS,
#   LOAD_SEED, LOAD_RSS_LIMIT_MIB, LOAD_PHASES
#                 passed on to load.mjs (see its header)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
readonly TESTS=$ROOT/tests
readonly TIMEOUT=${LOAD_TIMEOUT:-120}
BIN=${LOAD_BIN:-build/mcp-sandboxd}
case $BIN in /*) ;; *) BIN=$ROOT/$BIN ;; esac
readonly BIN

log() { printf 'load: %s\n' "$*" >&2; }

# shellcheck source=tests/lib.sh
. "$TESTS/lib.sh"

# setup_failed MESSAGE: one failed check, the summary line, exit 1.
setup_failed() {
	log "$*"
	echo "load: 0 passed, 1 failed"
	exit 1
}

case ${1:-} in
'') ;;
-h | --help)
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
	exit 0
	;;
*)
	log "no arguments expected (see --help)"
	exit 2
	;;
esac

if ! [[ $TIMEOUT =~ ^[0-9]+$ ]] || [ "$TIMEOUT" -lt 30 ]; then
	log "LOAD_TIMEOUT must be a number of seconds >= 30"
	exit 2
fi

command -v node >/dev/null || setup_failed "node not found"

ensure_node_modules load

# ---- engine, images, binary ----------------------------------------------------
[ -x "$BIN" ] || setup_failed "$BIN not found (make load builds it, or set LOAD_BIN)"
"$ROOT/scripts/engine.sh" start docker || setup_failed "scripts/engine.sh start docker failed"
DOCKER_HOST=unix://$DOCKER_SOCK "$ROOT/scripts/images.sh" >/dev/null ||
	setup_failed "scripts/images.sh failed for docker"

work=$(mktemp -d /tmp/mcpsbx-load.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "=== load: ${BIN#"$ROOT"/} on docker ($DOCKER_SOCK), at most ${TIMEOUT} s ==="
t0=$(date +%s)
# load.mjs stops itself before the hard limit so that it can still report;
# timeout signals its whole process group, daemons included.
(cd "$ROOT" && MCPSANDBOXD_BIN="$BIN" MCPSANDBOXD_ENGINE="unix://$DOCKER_SOCK" \
	LOAD_DEADLINE_S="${LOAD_DEADLINE_S:-$((TIMEOUT - 10))}" \
	timeout --kill-after=10 "$TIMEOUT" node tests/load/load.mjs) 2>&1 | tee "$work/load.out"
rc=${PIPESTATUS[0]}

n=$(sed -n 's/^load checks: \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1/p' "$work/load.out" | tail -n 1)
m=$(sed -n 's/^load checks: \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\2/p' "$work/load.out" | tail -n 1)
if [ -z "$n" ] || [ -z "$m" ]; then
	# No summary: killed by the timeout, or node itself failed. The checks
	# reported so far still count, plus one failure for the run.
	log "load.mjs ended without a summary (exit $rc; timeout ${TIMEOUT}s?)"
	n=$(grep -c '^ok [0-9]' "$work/load.out")
	m=$(($(grep -c '^not ok [0-9]' "$work/load.out") + 1))
elif [ "$rc" -ne 0 ] && [ "$m" -eq 0 ]; then
	log "load.mjs exited $rc with no failed check"
	m=1
fi

# ---- wrk: many connections on one session ---------------------------------
# wrk_phase: prints "ok"/"not ok" lines for its two checks; returns the number
# of failed checks.
wrk_phase() {
	local secs=${LOAD_WRK_SECONDS:-10} log=$work/wrk-daemon.log port="" sid="" pid out rc
	local -a hdr=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
		-H 'MCP-Protocol-Version: 2025-11-25')
	command -v wrk >/dev/null || { echo "not ok - wrk is not installed (scripts/deps.sh --test)"; return 2; }
	"$BIN" --http 127.0.0.1:0 --engine "unix://$DOCKER_SOCK" 2>"$log" &
	pid=$!
	for _ in $(seq 100); do
		port=$(sed -n 's/.*serving MCP over HTTP at http:\/\/127\.0\.0\.1:\([0-9]*\)\/mcp.*/\1/p' "$log" | head -n 1)
		[ -n "$port" ] && break
		sleep 0.1
	done
	if [ -n "$port" ]; then
		sid=$(curl -sS --max-time 10 -D - -o /dev/null "${hdr[@]}" "http://127.0.0.1:$port/mcp" \
			-d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wrk","version":"1"}}}' |
			sed -n 's/^[Mm][Cc][Pp]-[Ss][Ee][Ss][Ss][Ii][Oo][Nn]-[Ii][Dd]: *\([0-9a-z.-]*\).*/\1/p')
	fi
	if [ -z "$sid" ]; then
		echo "not ok - wrk: the daemon did not start or initialize ($(tail -n 3 "$log"))"
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 2
	fi
	out=$(BENCH_SESSION_ID=$sid timeout $((secs + 30)) wrk -t2 -c64 -d"${secs}s" \
		-s "$TESTS/bench/tools-list.lua" "http://127.0.0.1:$port/mcp" 2>&1)
	echo "$out" | sed -n 's/^Requests\/sec: *\(.*\)/wrk -t2 -c64: \1 tools\/list requests\/s/p'
	local failed=0
	if kill -0 "$pid" 2>/dev/null && ! grep -q 'Non-2xx\|Socket errors' <<<"$out" &&
		curl -sS --max-time 10 "${hdr[@]}" -H "Mcp-Session-Id: $sid" "http://127.0.0.1:$port/mcp" \
			-d '{"jsonrpc":"2.0","id":7,"method":"tools/list"}' |
		grep -q '"id":7,"result":{"tools":\[{"name":"run_python_code"'; then
		echo "ok - wrk -t2 -c64 for ${secs} s: the daemon stayed up, every answer 2xx, tools/list correct after"
	else
		echo "not ok - wrk -t2 -c64 for ${secs} s: daemon $(kill -0 "$pid" 2>/dev/null && echo alive || echo DEAD); wrk said: $(grep -E 'Non-2xx|Socket errors|requests in' <<<"$out" | tr '\n' ' ')"
		failed=$((failed + 1))
	fi
	kill "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	if [ "$rc" -eq 0 ]; then
		echo "ok - wrk daemon exited 0 on SIGTERM"
	else
		echo "not ok - wrk daemon exited $rc on SIGTERM ($(tail -n 3 "$log"))"
		failed=$((failed + 1))
	fi
	return "$failed"
}

wrk_phase
wf=$?
n=$((n + 2 - wf))
m=$((m + wf))

echo "=== load: $(($(date +%s) - t0)) s ==="
echo "load: $n passed, $m failed"
[ "$m" -eq 0 ]
