#!/usr/bin/env bash
# `make bench`: the project's performance figures, measured side by side in
# one run (never asserted in tests). Loopback only: every server listens on
# 127.0.0.1 with a free port the kernel picks.
#
#   scripts/bench.sh            (make bench [ENGINE=docker|podman] [RUNTIME=runsc])
#
#   1. tools/list throughput: wrk -t2 -c16 (POST /mcp, tests/bench/tools-list.lua)
#      at build/mcp-sandboxd --http --pool-size 0 --max-code-sessions 0 (the
#      SDK server's five tools; one session, initialized
#      with curl; no pool filling in the background), then
#      the same at the official TypeScript SDK's stateless streamable HTTP
#      server (tests/bench/sdk-server.mjs); reports both and ours/SDK (the
#      goal tracked is >= 5: reported, not enforced), and the same again at
#      a bare libmicrohttpd server (tests/bench/bare-mhd.c: epoll, a polling
#      thread per core, the daemon's tools/list bytes for every request and
#      no work at all), the physical limit; then two more runs of ours and
#      of it, alternating, and reports the best run of ours as a share of
#      the best run of it (the goal tracked is >= 70%).
#   2. survival: wrk -t2 -c64 of the same request at the daemon; it must
#      still be alive and answer tools/list with the 3 tools afterwards.
#   3. hello-world latency: tests/integration/latency.mjs (run_python_code
#      over stdio) on the discovered engine; skipped when it does not answer.
#   4. warm pool: tests/bench/pool.mjs measures, on the same engine, hello
#      world (p50/p95) by every approach: the raw floor (attach to a started,
#      waiting runner with no daemon), the daemon over stdio through the SDK
#      client with its warm pool and with --pool-size 0 (and a pandas
#      program), peers' container per call (create, PUT archive, start,
#      wait, logs, remove), Pyodide in an SDK stdio server (one warm
#      instance; a fresh one per call); runs/s at 1, 4 and 16 concurrent
#      calls next to the engine's own create/start/wait/remove churn; the
#      daemon's VmRSS and fds before and after BENCH_POOL_RUNS runs. Prints
#      the ratios and their targets (reported, not enforced). Skipped when
#      the engine does not answer or RUNTIME is not configured in it.
#   5. languages: tests/bench/languages.mjs, hello world in every language.
#   6. code sessions: tests/bench/sessions.mjs on the same engine:
#      create_session p50 with the pool full; print(1) in a session next to
#      the same one-shot warm call (the ratio, target <= 1.2); a CSV of
#      BENCH_SESSIONS_CSV_MB loaded once in a session and asked again vs
#      re-read by one-shot runs; the daemon's VmRSS and fds before and after
#      BENCH_SESSIONS_CALLS session calls.
#   7. egress gateway: tests/bench/egress.mjs on the same engine: a warm
#      print(1) with an egress list next to one without (target <= 1.1);
#      in-program GETs through the gateway next to the sandbox's own
#      loopback, idle and while other runs load the gateway; a download
#      through a CONNECT tunnel; the daemon's VmRSS, threads and fds over
#      the section's gateway connections.
#   8. packages on demand: tests/bench/packages.mjs on the same engine: first
#      installs (pip from a loopback index, npm from npm's registry) next to
#      the same install run on the host (target <= 1.5); a warm print(1)
#      asking for a cached set next to one without (target <= 1.2), idle and
#      while other runs load the daemon.
#   9. the 2026-07-28 wire ("modern": stateless, params._meta on every
#      request) next to the 2025-11-25 one: tools/list throughput at one
#      daemon started as in section 1, wrk as there on each wire
#      (BENCH_WIRE=2025|modern tests/bench/tools-list.lua), two runs of each
#      alternating, and at the official TypeScript SDK v2 server
#      (tests/bench/sdk2-server.mjs, @modelcontextprotocol/server, stateless
#      createMcpHandler) on both wires; then tests/bench/modern.mjs on the
#      same engine: a warm print(1) over HTTP on each wire (p50/p95), idle
#      and while loops of warm runs load the daemon. Reports modern/2025
#      and ours/SDK v2 (not enforced).
#  10. steady load: tests/bench/steady.mjs on the same engine, the daemon
#      with its defaults (eight languages, pools following the calls):
#      python hello, javascript hello and a pandas program with the pool
#      full and quiet, then one call every 300 ms and every 1 s (hits,
#      misses, the pool's target); the raw floor (and the floor plus the
#      pandas import); a warm Pyodide server at the same paces; refill
#      capacity (ready sandboxes/s) for python and javascript; runs/s at 1,
#      4 and 16 callers next to python's capacity.
#  11. the kubernetes backend: tests/bench/kube.mjs on Docker, a warm
#      python hello (pool full and quiet, then one every 300 ms) and one on
#      demand through the kubernetes backend against the Kubernetes API shim (tests/kube_shim,
#      each Pod a Docker container), next to the same on the docker
#      backend; skipped on Podman, which the shim does not drive.
#   After every wrk run the daemon must be alive and answer a fresh tools/list
#   correctly. Results: build/bench/http-tools-list.json, survival.json,
#   latency.json, pool.json, languages.json, sessions.json, egress.json,
#   packages.json, modern.json, steady.json, kube.json, plus logs in
#   build/bench/logs/; the summary goes to stdout,
#   progress to stderr. Exits non-zero only when something broke (the daemon
#   died, a wrong answer, a tool missing, a server that would not start),
#   never because a figure is low.
#
# Environment:
#   BENCH_SECONDS           duration of each throughput run (default 10)
#   BENCH_SURVIVAL_SECONDS  duration of the survival run (default 60)
#   BENCH_WARMUP_SECONDS    unrecorded wrk run before each throughput run, so
#                           node's JIT is warm too (default 2; 0 skips)
#   BENCH_LATENCY_CALLS     hello-world calls measured (default 20)
#   BENCH_POOL_SAMPLES      samples per warm-pool item (default 30; fresh
#                           Pyodide: BENCH_POOL_FRESH, default 3)
#   BENCH_POOL_SECONDS      each warm-pool throughput and churn run (default 10)
#   BENCH_POOL_RUNS         runs between the daemon's two VmRSS/fd readings
#                           (default 2000)
#   BENCH_SECTIONS          which sections run (default
#                           http,survival,latency,pool,languages,sessions,egress,
#                           packages,modern,steady,kubernetes)
#   BENCH_LANGUAGES_SAMPLES samples per language in the languages section
#                           (tests/bench/languages.mjs; default 20)
#   BENCH_SESSIONS_SAMPLES  samples per item of the sessions section
#                           (tests/bench/sessions.mjs; default 30)
#   BENCH_SESSIONS_CALLS    session calls between the daemon's two VmRSS/fd
#                           readings (default 1000)
#   BENCH_SESSIONS_CSV_MB   the data file loaded once (default 200)
#   BENCH_EGRESS_REQUESTS   GETs per in-program series of the egress section
#                           (tests/bench/egress.mjs; default 200)
#   BENCH_MODERN_SAMPLES    warm runs per wire and item of the modern section
#                           (tests/bench/modern.mjs; default 20)
#   BENCH_STEADY_CALLS      recorded calls per series of the steady section
#                           (tests/bench/steady.mjs; default 30)
#   BENCH_BIN               daemon binary (default build/mcp-sandboxd)
#   ENGINE                  docker, podman or unix:///path: that engine for
#                           every section (started when it does not answer);
#                           unset: MCPSANDBOXD_ENGINE, DOCKER_HOST,
#                           CONTAINER_HOST, as `scripts/engine.sh discover`
#   RUNTIME                 OCI runtime for the warm-pool section, e.g. runsc:
#                           the daemon's --runtime and HostConfig.Runtime of
#                           the floor, peer and churn containers
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT
readonly TESTS=$ROOT/tests
readonly BENCH_DIR=$TESTS/bench
readonly OUT=$ROOT/build/bench
readonly LOGS=$OUT/logs
readonly SECS=${BENCH_SECONDS:-10}
readonly SURVIVAL_SECS=${BENCH_SURVIVAL_SECONDS:-60}
readonly WARMUP_SECS=${BENCH_WARMUP_SECONDS:-2}
readonly LATENCY_CALLS=${BENCH_LATENCY_CALLS:-20}
readonly POOL_SAMPLES=${BENCH_POOL_SAMPLES:-30}
readonly LANGUAGES_SAMPLES=${BENCH_LANGUAGES_SAMPLES:-20}
readonly SESSIONS_SAMPLES=${BENCH_SESSIONS_SAMPLES:-30}
readonly SESSIONS_CALLS=${BENCH_SESSIONS_CALLS:-1000}
readonly SESSIONS_CSV_MB=${BENCH_SESSIONS_CSV_MB:-200}
readonly EGRESS_REQUESTS=${BENCH_EGRESS_REQUESTS:-200}
readonly MODERN_SAMPLES=${BENCH_MODERN_SAMPLES:-20}
readonly POOL_FRESH=${BENCH_POOL_FRESH:-3}
readonly POOL_SECONDS=${BENCH_POOL_SECONDS:-10}
readonly POOL_RUNS=${BENCH_POOL_RUNS:-2000}
readonly STEADY_CALLS=${BENCH_STEADY_CALLS:-30}
readonly SECTIONS=${BENCH_SECTIONS:-http,survival,latency,pool,languages,sessions,egress,packages,modern,steady,kubernetes}
readonly RUNTIME=${RUNTIME:-}
readonly THREADS=2
readonly CONNS=16
readonly SURVIVAL_CONNS=64
readonly START_TIMEOUT=15
readonly LATENCY_TIMEOUT=300
# Far above the section's ~8 minutes (longer on Podman, whose churn is slower).
readonly POOL_TIMEOUT=2400
readonly BARE_BIN=$ROOT/build/bench/bare-mhd
BIN=${BENCH_BIN:-$ROOT/build/mcp-sandboxd}
case $BIN in /*) ;; *) BIN=$ROOT/$BIN ;; esac
readonly BIN

log() { printf 'bench: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

case ${1:-} in
-h | --help)
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0" >&2
	exit 0
	;;
'') ;;
*) die "unknown argument: $1 (settings are environment variables, see --help)" ;;
esac
for v in "$SECS" "$SURVIVAL_SECS" "$WARMUP_SECS" "$LATENCY_CALLS" "$POOL_SAMPLES" "$POOL_FRESH" "$POOL_SECONDS" "$POOL_RUNS" \
	"$SESSIONS_SAMPLES" "$SESSIONS_CALLS" "$SESSIONS_CSV_MB" "$EGRESS_REQUESTS" "$MODERN_SAMPLES"; do
	[[ $v =~ ^[0-9]+$ ]] || die "durations and counts must be whole numbers, got '$v'"
done
((SECS > 0 && SURVIVAL_SECS > 0 && LATENCY_CALLS > 0)) || die "BENCH_SECONDS, BENCH_SURVIVAL_SECONDS and BENCH_LATENCY_CALLS must be > 0"
((POOL_SAMPLES > 0 && POOL_SECONDS > 0 && POOL_RUNS > 0)) || die "BENCH_POOL_SAMPLES, BENCH_POOL_SECONDS and BENCH_POOL_RUNS must be > 0"
((MODERN_SAMPLES > 0)) || die "BENCH_MODERN_SAMPLES must be > 0"
for s in ${SECTIONS//,/ }; do
	case $s in http | survival | latency | pool | languages | sessions | egress | packages | modern | steady | kubernetes) ;; *) die "BENCH_SECTIONS: unknown section '$s' (http, survival, latency, pool, languages, sessions, egress, packages, modern, steady, kubernetes)" ;; esac
done
[[ $RUNTIME =~ ^[A-Za-z0-9._-]*$ ]] || die "RUNTIME must be a runtime name such as runsc, not '$RUNTIME'"

# want SECTION: whether BENCH_SECTIONS names it.
want() { [[ ",$SECTIONS," == *",$1,"* ]]; }

# ---- tools -------------------------------------------------------------------
"$ROOT/scripts/deps.sh" --test
for c in wrk curl node; do
	command -v "$c" >/dev/null || die "$c not found (scripts/deps.sh --test installs it)"
done
if [ ! -f "$TESTS/node_modules/.package-lock.json" ] ||
	[ "$TESTS/package-lock.json" -nt "$TESTS/node_modules/.package-lock.json" ] ||
	[ "$TESTS/package.json" -nt "$TESTS/node_modules/.package-lock.json" ]; then
	log "installing test dependencies (npm ci)"
	(cd "$TESTS" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || die "npm ci failed in $TESTS"
fi
[ -x "$BIN" ] || die "$BIN not found (make builds it)"
[ -x "$BARE_BIN" ] || die "$BARE_BIN not found (make bench builds it)"

# ENGINE (a make variable reaches us in the environment) names an engine;
# unset, the daemon's own discovery rules apply.
sock=$("$ROOT/scripts/engine.sh" use "${ENGINE:-}") || die "the engine ${ENGINE:-the daemon finds} could not be started (scripts/engine.sh use ${ENGINE:-})"
readonly ENGINE_URL=unix://$sock

mkdir -p "$LOGS"
# Logs describe the last run only.
: >"$LOGS/daemon.log"
: >"$LOGS/sdk-server.log"
: >"$LOGS/sdk2-server.log"
: >"$LOGS/curl.log"
work=$(mktemp -d /tmp/mcpsbx-bench.XXXXXX)

# ---- processes we start ------------------------------------------------------
daemon_pid=""
sdk_pid=""
sdk2_pid=""
bare_pid=""
# The warm-pool section labels its containers with this id and lists the
# daemons it starts in $work/pool.pids, so the exit trap can remove whatever
# a killed run left behind.
pool_run_id=bench-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
pool_started=""

# stop_pid PID: SIGTERM, up to 15 s to exit (the daemon drains its
# connections), then SIGKILL.
stop_pid() {
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
	for ((i = 0; i < 150; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	stop_pid "$bare_pid"
	stop_pid "$sdk_pid"
	stop_pid "$sdk2_pid"
	stop_pid "$daemon_pid"
	if [ -n "$pool_started" ]; then
		node "$BENCH_DIR/pool.mjs" --sweep --engine "$ENGINE_URL" --run-id "$pool_run_id" \
			--pidfile "$work/pool.pids" || log "could not sweep the warm-pool containers (label io.mcp-sandboxd.bench=$pool_run_id)"
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# is_alive PID: running (a zombie does not count).
is_alive() {
	local state
	kill -0 "$1" 2>/dev/null || return 1
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ "$state" != Z ]
}

# reap PID: how a process that is no longer alive ended, in $ended. Not in
# a $(subshell): only this shell can wait for its children.
reap() {
	local rc=0
	wait "$1" 2>/dev/null || rc=$?
	if ((rc > 128)); then
		ended="died of SIG$(kill -l $((rc - 128)) 2>/dev/null || echo '?') (status $rc)"
	else
		ended="exited with status $rc"
	fi
}

broken=()
fail() {
	broken+=("$*")
	log "FAILED: $*"
}

# node_section NAME TITLE LANGUAGES -- ARGS...: the section's script (NAME
# and .mjs under tests/bench/) on the engine with ARGS, or its skip saying
# why (no engine; the images of the comma-separated LANGUAGES could not be
# built), with ARGS too; its table joins the summary.
node_section() {
	local name=$1 title=$2 langs=$3 line='' rc=0
	shift 4
	: >"$LOGS/$name.txt"
	# shellcheck disable=SC2086 # the languages are separate arguments
	if ! "$ROOT/scripts/engine.sh" ping "$sock" 2>/dev/null; then
		line=$(node "$BENCH_DIR/$name.mjs" --skip "engine $ENGINE_URL does not answer" --out "$OUT/$name.json" "$@")
	elif ! "$ROOT/scripts/images.sh" --engine "$ENGINE_URL" ${langs//,/ } >&2; then
		line=$(node "$BENCH_DIR/$name.mjs" --skip "the images of $langs could not be built on $ENGINE_URL" --out "$OUT/$name.json" "$@")
	else
		line=$(timeout --kill-after=15 "$POOL_TIMEOUT" node "$BENCH_DIR/$name.mjs" --engine "$ENGINE_URL" \
			--bin "$BIN" --out "$OUT/$name.json" --log-dir "$LOGS" "$@" 2> >(tee -a "$LOGS/$name.txt" >&2)) || rc=$?
		((rc == 0)) || fail "tests/bench/$name.mjs exited with status $rc (see $LOGS/$name.txt and ${OUT#"$ROOT"/}/$name.json \"problems\")"
	fi
	summary+=("${line:-$title: FAILED - no table}")
}

# ---- HTTP helpers ------------------------------------------------------------
H=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
H_2025=(-H 'MCP-Protocol-Version: 2025-11-25')
# The 2026-07-28 wire's tools/list (tests/bench/tools-list.lua's BENCH_WIRE=modern).
H_MODERN=(-H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list')
readonly MODERN_TOOLS_LIST='{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'

# post URL SESSION BODY OUTFILE [HEADER_ARGS...]: prints the HTTP status;
# headers go to OUTFILE.h. HEADER_ARGS (curl -H pairs) name the wire's
# version; without them, 2025-11-25.
post() {
	local url=$1 session=$2 body=$3 out=$4
	shift 4
	local hs=("$@")
	((${#hs[@]})) || hs=("${H_2025[@]}")
	[ -n "$session" ] && hs+=(-H "Mcp-Session-Id: $session")
	curl -sS --max-time 10 -o "$out" -D "$out.h" -w '%{http_code}' "${H[@]}" "${hs[@]}" \
		--data-binary "$body" "$url" 2>>"$LOGS/curl.log" || true
}

# check_tools URL SESSION [WIRE]: a fresh tools/list must get 200 and the
# tools; on WIRE modern (the 2026-07-28 wire: no session; else 2025-11-25)
# the answer must open no session either. Sets $answer ("ok" or why not)
# and $answer_bytes; returns non-zero on a wrong answer.
check_tools() {
	local f=$work/check.body code why
	rm -f "$f"
	if [ "${3:-2025}" = modern ]; then
		code=$(post "$1" "" "$MODERN_TOOLS_LIST" "$f" "${H_MODERN[@]}")
	else
		code=$(post "$1" "$2" '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}' "$f")
	fi
	answer_bytes=$(wc -c <"$f" 2>/dev/null || echo 0)
	if [ "$code" != 200 ]; then
		answer="HTTP ${code:-none}: $(head -c 200 "$f" 2>/dev/null | tr -d '\r\n')"
		[ "$code" = 000 ] && answer="no answer (connection failed)"
		return 1
	fi
	if ! why=$(node "$BENCH_DIR/report.mjs" check "$f"); then
		answer="wrong answer: $why"
		return 1
	fi
	if [ "${3:-2025}" = modern ] && grep -qi '^mcp-session-id:' "$f.h"; then
		answer="wrong answer: a 2026-07-28 tools/list opened a session"
		return 1
	fi
	answer=ok
}

# wait_log_line FILE PID REGEX [FROM]: the first capture group of REGEX
# (sed -E) in FILE past byte FROM (default 0) once it appears; fails when PID
# exits or after $START_TIMEOUT s.
wait_log_line() {
	local i v from=$((${4:-0} + 1))
	for ((i = 0; i < START_TIMEOUT * 10; i++)); do
		v=$(tail -c +"$from" "$1" | sed -En "s#$3#\\1#p" | head -n 1)
		[ -n "$v" ] && { printf '%s\n' "$v"; return 0; }
		is_alive "$2" || return 1
		sleep 0.1
	done
	return 1
}

# ---- our daemon --------------------------------------------------------------
daemon_url=""
sid=""

# start_daemon: daemon on 127.0.0.1:<free port>, one initialized session.
# On failure no daemon is left running.
start_daemon() {
	if ! start_daemon_1; then
		stop_pid "$daemon_pid"
		daemon_pid=""
		return 1
	fi
}

start_daemon_1() {
	local port code from f=$work/init.body
	printf '\n==== %s: %s --http 127.0.0.1:0 --pool-size 0 --max-code-sessions 0 --engine %s\n' "$(date -u +%FT%TZ)" "$BIN" "$ENGINE_URL" >>"$LOGS/daemon.log"
	from=$(stat -c %s "$LOGS/daemon.log")
	# No warm pool: these sections measure the HTTP front end, which a pool
	# filling in the background (the engine busy starting sandboxes) would
	# slow down as it would any server on the machine.
	# No code sessions: the same five tools as the SDK server it is compared with.
	"$BIN" --http 127.0.0.1:0 --pool-size 0 --max-code-sessions 0 --engine "$ENGINE_URL" 2>>"$LOGS/daemon.log" &
	daemon_pid=$!
	# Port 0: the kernel picks a free port; the daemon logs the bound one.
	if ! port=$(wait_log_line "$LOGS/daemon.log" "$daemon_pid" \
		'.*serving MCP over HTTP at http://127\.0\.0\.1:([0-9]+)/mcp.*' "$from"); then
		fail "the daemon did not start serving within ${START_TIMEOUT}s (see $LOGS/daemon.log)"
		return 1
	fi
	daemon_url=http://127.0.0.1:$port/mcp
	code=$(post "$daemon_url" "" '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-sandboxd-bench","version":"1.0.0"}}}' "$f")
	sid=$(sed -n 's/^[Mm][Cc][Pp]-[Ss][Ee][Ss][Ss][Ii][Oo][Nn]-[Ii][Dd]: *\([^[:space:]]*\).*/\1/p' "$f.h" | head -n 1)
	if [ "$code" != 200 ] || [ -z "$sid" ]; then
		fail "initialize at $daemon_url: HTTP ${code:-none}, session '${sid}'"
		return 1
	fi
	code=$(post "$daemon_url" "$sid" '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$f")
	if [ "$code" != 202 ]; then
		fail "notifications/initialized at $daemon_url: HTTP $code, expected 202"
		return 1
	fi
	log "daemon pid $daemon_pid serving $daemon_url, session $sid"
}

# daemon_after RUN [WIRE]: after a wrk run, the daemon must be alive and
# answer (on WIRE, as check_tools). Sets $daemon_state and $answer.
daemon_after() {
	if ! is_alive "$daemon_pid"; then
		reap "$daemon_pid"
		daemon_state=$ended
		answer="none (daemon gone)"
		daemon_pid=""
		fail "the daemon $daemon_state during $1 (log: $LOGS/daemon.log)"
		tail -n 5 "$LOGS/daemon.log" | sed 's/^/    /' >&2
		return 1
	fi
	daemon_state=alive
	if ! check_tools "$daemon_url" "$sid" "${2:-2025}"; then
		fail "tools/list after $1: $answer"
		return 1
	fi
}

# ---- wrk ---------------------------------------------------------------------
# run_wrk NAME URL SESSION CONNECTIONS SECONDS [WIRE]: figures in
# $work/NAME.json, wrk's own report in build/bench/logs/NAME.txt. WIRE:
# tests/bench/tools-list.lua's BENCH_WIRE (2025, the default, or modern).
run_wrk() {
	local name=$1 url=$2 session=$3 conns=$4 secs=$5 wire=${6:-2025} rc=0
	rm -f "$work/$name.json"
	log "wrk -t$THREADS -c$conns -d${secs}s $url ($name)"
	BENCH_WIRE=$wire BENCH_SESSION_ID=$session BENCH_WRK_JSON=$work/$name.json \
		timeout --kill-after=5 $((secs + 30)) \
		wrk -t"$THREADS" -c"$conns" -d"${secs}s" --latency -s "$BENCH_DIR/tools-list.lua" "$url" \
		>"$LOGS/$name.txt" 2>&1 || rc=$?
	((rc == 0)) || log "wrk ($name) exited with status $rc (see $LOGS/$name.txt)"
	[ -s "$work/$name.json" ] || printf 'null\n' >"$work/$name.json"
}

# ---- facts recorded with every result ------------------------------------------
common=(
	"date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	"nproc=$(nproc)"
	"kernel=$(uname -r)"
	"cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	"commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	"bin=${BIN#"$ROOT"/}"
	"threads=$THREADS"
	"warmup_s=$WARMUP_SECS"
	"wrk_version=$({ wrk -v 2>&1 || true; } | sed -n 's/^wrk \([^ ]*\).*/\1/p' | head -n 1)"
)
summary=()

# ==== 1. tools/list throughput: ours, then the SDK ==========================
if want http; then
	log "1/11 tools/list throughput (${SECS}s each)"
	# Other work on the machine skews every figure: the load is recorded.
	load1=$(cut -d' ' -f1-3 /proc/loadavg)
	ours_daemon="not started"
	ours_answer="none"
	ours_bytes=0
	ours_restarted=false
	if start_daemon; then
		if check_tools "$daemon_url" "$sid"; then
			ours_bytes=$answer_bytes
			cp "$work/check.body" "$work/tools-list.body"
			if ((WARMUP_SECS > 0)); then
				run_wrk ours-warmup "$daemon_url" "$sid" "$CONNS" "$WARMUP_SECS"
				# A daemon that died warming up gets a second chance, so the
				# measured run still has figures (the failure stays recorded).
				if ! daemon_after "the warm-up run" && [ -z "$daemon_pid" ]; then
					log "starting a new daemon for the measured run"
					ours_restarted=true
					start_daemon || true
				fi
			fi
			if [ -n "$daemon_pid" ]; then
				run_wrk ours "$daemon_url" "$sid" "$CONNS" "$SECS"
				daemon_after "the throughput run (-c$CONNS)" || true
				ours_daemon=$daemon_state
				ours_answer=$answer
			fi
		else
			fail "tools/list before any load: $answer"
			ours_answer=$answer
			ours_daemon=alive
		fi
	fi
	[ -f "$work/ours.json" ] || printf 'null\n' >"$work/ours.json"

	sdk_answer="none"
	sdk_bytes=0
	printf '\n==== %s\n' "$(date -u +%FT%TZ)" >>"$LOGS/sdk-server.log"
	node "$BENCH_DIR/sdk-server.mjs" 0 >"$work/sdk.out" 2>>"$LOGS/sdk-server.log" &
	sdk_pid=$!
	if sdk_port=$(wait_log_line "$work/sdk.out" "$sdk_pid" '^listening 127\.0\.0\.1:([0-9]+)$'); then
		sdk_url=http://127.0.0.1:$sdk_port/mcp
		log "SDK server pid $sdk_pid serving $sdk_url"
		# Same request as wrk sends, Mcp-Session-Id included: stateless mode
		# ignores it and needs no initialize.
		if check_tools "$sdk_url" "$sid"; then
			sdk_bytes=$answer_bytes
			((WARMUP_SECS > 0)) && run_wrk sdk-warmup "$sdk_url" "$sid" "$CONNS" "$WARMUP_SECS"
			run_wrk sdk "$sdk_url" "$sid" "$CONNS" "$SECS"
			if is_alive "$sdk_pid" && check_tools "$sdk_url" "$sid"; then
				sdk_answer=ok
			else
				sdk_answer=${answer:-"server gone"}
				if ! is_alive "$sdk_pid"; then
					reap "$sdk_pid"
					sdk_answer="none (SDK server $ended)"
				fi
				fail "SDK baseline after its run: $sdk_answer (log: $LOGS/sdk-server.log)"
			fi
		else
			fail "SDK baseline tools/list: $answer (log: $LOGS/sdk-server.log)"
			sdk_answer=$answer
		fi
	else
		fail "the SDK server did not start within ${START_TIMEOUT}s (log: $LOGS/sdk-server.log)"
	fi
	# Not left competing for the CPU with the survival run.
	stop_pid "$sdk_pid"
	sdk_pid=""
	[ -f "$work/sdk.json" ] || printf 'null\n' >"$work/sdk.json"

	# The physical limit: libmicrohttpd alone, answering the daemon's own
	# tools/list bytes to every request.
	bare_answer="none"
	if [ -s "$work/tools-list.body" ]; then
		"$BARE_BIN" 0 "$work/tools-list.body" >"$work/bare.out" 2>>"$LOGS/curl.log" &
		bare_pid=$!
		if bare_port=$(wait_log_line "$work/bare.out" "$bare_pid" '^port ([0-9]+)$'); then
			bare_url=http://127.0.0.1:$bare_port/mcp
			log "bare libmicrohttpd pid $bare_pid serving $bare_url"
			((WARMUP_SECS > 0)) && run_wrk bare-warmup "$bare_url" "$sid" "$CONNS" "$WARMUP_SECS"
			run_wrk bare "$bare_url" "$sid" "$CONNS" "$SECS"
			# Two more rounds of each, alternating: the share compares the
			# best run of each, so a moment of other work on the machine
			# (a virtual machine's neighbours) does not decide it.
			for round in 2 3; do
				if [ -n "$daemon_pid" ] && is_alive "$daemon_pid"; then
					run_wrk "ours$round" "$daemon_url" "$sid" "$CONNS" "$SECS"
					daemon_after "throughput run $round (-c$CONNS)" || true
				fi
				run_wrk "bare$round" "$bare_url" "$sid" "$CONNS" "$SECS"
			done
			if check_tools "$bare_url" "$sid"; then bare_answer=ok; else bare_answer=$answer; fi
		else
			fail "the bare libmicrohttpd server did not start"
		fi
		stop_pid "$bare_pid"
		bare_pid=""
	fi
	for f in bare bare2 bare3 ours2 ours3; do
		[ -f "$work/$f.json" ] || printf 'null\n' >"$work/$f.json"
	done

	sdk_version=$(node -p "require('$TESTS/node_modules/@modelcontextprotocol/sdk/package.json').version" 2>/dev/null || echo unknown)
	summary+=("$(node "$BENCH_DIR/report.mjs" http "$OUT/http-tools-list.json" "${common[@]}" "loadavg=$load1" \
		"connections=$CONNS" "seconds=$SECS" \
		"ours_wrk=@$work/ours.json" "ours_response_bytes=$ours_bytes" \
		"ours_daemon=$ours_daemon" "ours_answer=$ours_answer" "ours_restarted=$ours_restarted" \
		"sdk_wrk=@$work/sdk.json" "sdk_response_bytes=$sdk_bytes" "sdk_answer=$sdk_answer" \
		"sdk_version=$sdk_version" "node_version=$(node --version)" \
		"bare_wrk=@$work/bare.json" "bare_wrk2=@$work/bare2.json" "bare_wrk3=@$work/bare3.json" \
		"ours_wrk2=@$work/ours2.json" "ours_wrk3=@$work/ours3.json" \
		"bare_answer=$bare_answer")")

	# Non-2xx answers to a tools/list are wrong answers.
	non2xx=$(node -p "const w = require('$work/ours.json'); w ? w.errors.non_2xx_3xx : 0")
	((non2xx == 0)) || fail "mcp-sandboxd answered $non2xx tools/list requests with a non-2xx status under load"
fi

# ==== 2. survival ===========================================================
if want survival; then
	log "2/11 survival (${SURVIVAL_SECS}s at -c$SURVIVAL_CONNS)"
	load2=$(cut -d' ' -f1-3 /proc/loadavg)
	restarted=false
	if [ -z "$daemon_pid" ] || ! is_alive "$daemon_pid"; then
		# Without section 1 there was no first daemon: not a restart.
		if want http; then
			log "starting a new daemon: the first one is gone"
			restarted=true
		fi
		[ -n "$daemon_pid" ] && reap "$daemon_pid"
		daemon_pid=""
		start_daemon || true
	fi
	surv_state="not started"
	surv_answer="none"
	surv_result=fail
	if [ -n "$daemon_pid" ] && is_alive "$daemon_pid"; then
		run_wrk survival "$daemon_url" "$sid" "$SURVIVAL_CONNS" "$SURVIVAL_SECS"
		if daemon_after "the survival run (-c$SURVIVAL_CONNS)"; then
			surv_result=pass
		fi
		surv_state=$daemon_state
		surv_answer=$answer
	fi
	[ -f "$work/survival.json" ] || printf 'null\n' >"$work/survival.json"
	non2xx=$(node -p "const w = require('$work/survival.json'); w ? w.errors.non_2xx_3xx : 0")
	if ((non2xx > 0)); then
		fail "mcp-sandboxd answered $non2xx tools/list requests with a non-2xx status in the survival run"
		surv_result=fail
	fi
	summary+=("$(node "$BENCH_DIR/report.mjs" survival "$OUT/survival.json" "${common[@]}" "loadavg=$load2" \
		"connections=$SURVIVAL_CONNS" "seconds=$SURVIVAL_SECS" "wrk=@$work/survival.json" \
		"restarted=$restarted" "daemon=$surv_state" "answer=$surv_answer" "result=$surv_result")")
	# The HTTP daemon is done; the latency client starts its own over stdio.
	stop_pid "$daemon_pid"
	daemon_pid=""
fi

# ==== 3. hello-world latency =================================================
if want latency; then
	log "3/11 hello-world latency on $ENGINE_URL"
	lat_args=("${common[@]}" "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)" "engine=$ENGINE_URL" "calls=$LATENCY_CALLS")
	if ! "$ROOT/scripts/engine.sh" ping "$sock" 2>/dev/null; then
		lat_args+=(result=skipped "reason=engine $ENGINE_URL does not answer (scripts/engine.sh start docker|podman)")
	elif ! kind=$("$ROOT/scripts/engine.sh" kind "$sock" 2>/dev/null); then
		lat_args+=(result=skipped "reason=engine $ENGINE_URL does not say what it is (GET /version)")
	elif ! "$ROOT/scripts/images.sh" --engine "$ENGINE_URL" >&2; then
		lat_args+=(result=skipped "engine_kind=$kind" "reason=the sandbox images could not be built on $ENGINE_URL (scripts/images.sh)")
	else
		rc=0
		(cd "$ROOT" && MCPSANDBOXD_BIN=$BIN MCPSANDBOXD_ENGINE=$ENGINE_URL \
			timeout --kill-after=10 "$LATENCY_TIMEOUT" node tests/integration/latency.mjs "$LATENCY_CALLS") \
			>"$LOGS/latency.txt" 2>&1 || rc=$?
		if ((rc == 0)); then
			lat_args+=(result=ok)
		else
			lat_args+=(result=failed)
			fail "latency.mjs exited with status $rc (see $LOGS/latency.txt)"
		fi
		lat_args+=("engine_kind=$kind" "output=@@$LOGS/latency.txt")
	fi
	lat_line=$(node "$BENCH_DIR/report.mjs" latency "$OUT/latency.json" "${lat_args[@]}")
	summary+=("$lat_line")
	case $lat_line in *SKIPPED*) log "${lat_line#hello-world latency: }" ;; esac
	# Printed without figures only when latency.mjs printed none.
	case $lat_line in *FAILED*) [[ " ${broken[*]} " == *latency.mjs* ]] || fail "latency: no figures in $LOGS/latency.txt" ;; esac
fi

# ==== 4. warm pool ===========================================================
if want pool; then
	log "4/11 warm pool on $ENGINE_URL${RUNTIME:+ (runtime $RUNTIME)}"
	pool_args=(--engine "$ENGINE_URL" --bin "$BIN" --out "$OUT/pool.json" --log-dir "$LOGS"
		--samples "$POOL_SAMPLES" --fresh "$POOL_FRESH" --seconds "$POOL_SECONDS" --runs "$POOL_RUNS"
		--run-id "$pool_run_id" --pidfile "$work/pool.pids")
	[ -n "$RUNTIME" ] && pool_args+=(--runtime "$RUNTIME")
	: >"$LOGS/pool.txt"
	pool_skip=""
	if ! "$ROOT/scripts/engine.sh" ping "$sock" 2>/dev/null; then
		pool_skip="engine $ENGINE_URL does not answer (scripts/engine.sh start docker|podman)"
	elif ! "$ROOT/scripts/images.sh" --engine "$ENGINE_URL" >&2; then
		pool_skip="the sandbox images could not be built on $ENGINE_URL (scripts/images.sh)"
	fi
	if [ -n "$pool_skip" ]; then
		pool_line=$(node "$BENCH_DIR/pool.mjs" --skip "$pool_skip" --engine "$ENGINE_URL" --runtime "$RUNTIME" --out "$OUT/pool.json")
		log "${pool_line#warm pool: }"
	else
		rc=0
		pool_started=1
		# The table comes on stdout; progress goes to the terminal and the log.
		pool_line=$(timeout --kill-after=15 "$POOL_TIMEOUT" node "$BENCH_DIR/pool.mjs" "${pool_args[@]}" \
			2> >(tee -a "$LOGS/pool.txt" >&2)) || rc=$?
		if ((rc != 0)); then
			fail "tests/bench/pool.mjs exited with status $rc (see $LOGS/pool.txt and ${OUT#"$ROOT"/}/pool.json \"problems\")"
			[ -n "$pool_line" ] || pool_line="warm pool: FAILED - no table (see $LOGS/pool.txt)"
		fi
	fi
	summary+=("$pool_line")
fi

# ==== 5. languages ===========================================================
if want languages; then
	log "5/11 languages on $ENGINE_URL"
	: >"$LOGS/languages.txt"
	if ! "$ROOT/scripts/engine.sh" ping "$sock" 2>/dev/null; then
		fail "languages: engine $ENGINE_URL does not answer"
		summary+=("languages: SKIPPED - the engine does not answer")
	elif ! "$ROOT/scripts/images.sh" --engine "$ENGINE_URL" >&2; then
		fail "languages: the sandbox images could not be built on $ENGINE_URL"
		summary+=("languages: SKIPPED - no images")
	else
		rc=0
		lang_line=$(timeout --kill-after=15 "$POOL_TIMEOUT" node "$BENCH_DIR/languages.mjs" --engine "$ENGINE_URL" \
			--bin "$BIN" --out "$OUT/languages.json" --log-dir "$LOGS" --samples "$LANGUAGES_SAMPLES" \
			--run-id "$pool_run_id" 2> >(tee -a "$LOGS/languages.txt" >&2)) || rc=$?
		if ((rc != 0)); then
			fail "tests/bench/languages.mjs exited with status $rc (see $LOGS/languages.txt and ${OUT#"$ROOT"/}/languages.json \"problems\")"
		fi
		summary+=("${lang_line:-languages: FAILED - no table}")
	fi
fi

# ==== 6. code sessions ========================================================
if want sessions; then
	log "6/11 code sessions on $ENGINE_URL"
	: >"$LOGS/sessions.txt"
	if ! "$ROOT/scripts/engine.sh" ping "$sock" 2>/dev/null; then
		sess_line=$(node "$BENCH_DIR/sessions.mjs" --skip "engine $ENGINE_URL does not answer" --out "$OUT/sessions.json")
	elif ! "$ROOT/scripts/images.sh" --engine "$ENGINE_URL" python >&2; then
		sess_line=$(node "$BENCH_DIR/sessions.mjs" --skip "the python image could not be built on $ENGINE_URL" --out "$OUT/sessions.json")
	else
		rc=0
		sess_line=$(timeout --kill-after=15 "$POOL_TIMEOUT" node "$BENCH_DIR/sessions.mjs" --engine "$ENGINE_URL" \
			--bin "$BIN" --out "$OUT/sessions.json" --log-dir "$LOGS" --samples "$SESSIONS_SAMPLES" \
			--calls "$SESSIONS_CALLS" --csv-mb "$SESSIONS_CSV_MB" 2> >(tee -a "$LOGS/sessions.txt" >&2)) || rc=$?
		if ((rc != 0)); then
			fail "tests/bench/sessions.mjs exited with status $rc (see $LOGS/sessions.txt and ${OUT#"$ROOT"/}/sessions.json \"problems\")"
		fi
	fi
	summary+=("${sess_line:-code sessions: FAILED - no table}")
fi

# ==== 7. egress gateway =======================================================
if want egress; then
	log "7/11 egress gateway on $ENGINE_URL"
	node_section egress "egress gateway" python -- --samples "$SESSIONS_SAMPLES" --requests "$EGRESS_REQUESTS"
fi

# ==== 8. packages on demand ===================================================
if want packages; then
	log "8/11 packages on demand on $ENGINE_URL"
	node_section packages "packages on demand" python,javascript -- --samples "$SESSIONS_SAMPLES"
fi

# ==== 9. the 2026-07-28 wire =================================================
# proc_json PID FILE: the process's VmRSS (KiB), threads and open fds, as
# JSON in FILE.
proc_json() {
	local rss threads fds
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || true)
	threads=$(awk '/^Threads:/ { print $2 }' "/proc/$1/status" 2>/dev/null || true)
	fds=$(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	printf '{"rss_kib":%s,"threads":%s,"fds":%s}\n' "${rss:-null}" "${threads:-null}" "$fds" >"$2"
}

# modern_wrk NAME URL WIRE: a measured run (its warm-up done before) whose
# figures go to modern.mjs as NAME=@file; non-2xx answers are wrong ones.
modern_wrk() {
	local non2xx
	run_wrk "modern-$1" "$2" "$sid" "$CONNS" "$SECS" "$3"
	modern_facts+=("$1=@$work/modern-$1.json")
	non2xx=$(node -p "const w = require('$work/modern-$1.json'); w ? w.errors.non_2xx_3xx : 0")
	((non2xx == 0)) || fail "modern: $non2xx tools/list requests of $1 got a non-2xx status"
}

if want modern; then
	log "9/11 the 2026-07-28 wire next to the 2025 one"
	modern_facts=("${common[@]}" "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)" "connections=$CONNS" "seconds=$SECS"
		"node_version=$(node --version)"
		"sdk2_version=$(node -p "require('$TESTS/node_modules/@modelcontextprotocol/server/package.json').version" 2>/dev/null || echo unknown)")
	# tools/list on each wire, at a daemon of its own started as section 1's
	# (the 2025 wire on its initialized session).
	stop_pid "$daemon_pid"
	daemon_pid=""
	m_state="not started"
	m_answer=none
	if start_daemon; then
		m_state=alive
		m_answer=ok
		for wire in 2025 modern; do
			if check_tools "$daemon_url" "$sid" "$wire"; then
				modern_facts+=("daemon_bytes_$wire=$answer_bytes")
			else
				fail "modern: tools/list on the $wire wire before any load: $answer"
				m_answer="$wire wire: $answer"
			fi
		done
	fi
	if [ "$m_answer" = ok ]; then
		proc_json "$daemon_pid" "$work/modern-proc-before.json"
		if ((WARMUP_SECS > 0)); then
			for wire in 2025 modern; do
				run_wrk "modern-daemon-warmup-$wire" "$daemon_url" "$sid" "$CONNS" "$WARMUP_SECS" "$wire"
			done
			daemon_after "the modern section's warm-up runs" modern || { m_state=$daemon_state; m_answer=$answer; }
		fi
		# Alternating, so that neither wire has the machine's quieter moments.
		for run in 2025_1 modern_1 modern_2 2025_2; do
			[ -n "$daemon_pid" ] || break
			modern_wrk "daemon_$run" "$daemon_url" "${run%_*}"
			daemon_after "the ${run%_*} wire's throughput run (-c$CONNS)" "${run%_*}" ||
				{ m_state=$daemon_state; m_answer=$answer; }
		done
		if [ -n "$daemon_pid" ]; then
			proc_json "$daemon_pid" "$work/modern-proc-after.json"
			modern_facts+=("proc_before=@$work/modern-proc-before.json" "proc_after=@$work/modern-proc-after.json")
		fi
	fi
	# Not left competing for the CPU with what follows.
	stop_pid "$daemon_pid"
	daemon_pid=""

	s_answer=none
	printf '\n==== %s\n' "$(date -u +%FT%TZ)" >>"$LOGS/sdk2-server.log"
	node "$BENCH_DIR/sdk2-server.mjs" 0 >"$work/sdk2.out" 2>>"$LOGS/sdk2-server.log" &
	sdk2_pid=$!
	if s_port=$(wait_log_line "$work/sdk2.out" "$sdk2_pid" '^listening 127\.0\.0\.1:([0-9]+)$'); then
		s_url=http://127.0.0.1:$s_port/mcp
		log "SDK v2 server pid $sdk2_pid serving $s_url"
		s_answer=ok
		# On the 2025 wire with the daemon's session id: stateless, it
		# ignores it, as the v1 SDK's server in section 1.
		for wire in modern 2025; do
			if check_tools "$s_url" "$sid" "$wire"; then
				modern_facts+=("sdk2_bytes_$wire=$answer_bytes")
			else
				fail "modern: the SDK v2 server's tools/list on the $wire wire: $answer (log: $LOGS/sdk2-server.log)"
				s_answer="$wire wire: $answer"
			fi
		done
		if [ "$s_answer" = ok ]; then
			for wire in modern 2025; do
				((WARMUP_SECS > 0)) && run_wrk "modern-sdk2-warmup-$wire" "$s_url" "$sid" "$CONNS" "$WARMUP_SECS" "$wire"
				modern_wrk "sdk2_$wire" "$s_url" "$wire"
			done
			if ! is_alive "$sdk2_pid"; then
				reap "$sdk2_pid"
				s_answer="none (SDK v2 server $ended)"
				fail "modern: SDK v2 server after its runs: $s_answer (log: $LOGS/sdk2-server.log)"
			elif ! check_tools "$s_url" "$sid" modern; then
				s_answer=$answer
				fail "modern: SDK v2 server after its runs: $s_answer (log: $LOGS/sdk2-server.log)"
			fi
		fi
	else
		fail "the SDK v2 server did not start within ${START_TIMEOUT}s (log: $LOGS/sdk2-server.log)"
	fi
	stop_pid "$sdk2_pid"
	sdk2_pid=""
	modern_facts+=("daemon_state=$m_state" "daemon_answer=$m_answer" "sdk2_answer=$s_answer")

	# Warm runs over HTTP on each wire, on the engine.
	node_section modern "modern wire" python,javascript -- --samples "$MODERN_SAMPLES" "${modern_facts[@]}"
fi

# ==== 10. steady load ==========================================================
if want steady; then
	log "10/11 warm pool under steady load on $ENGINE_URL"
	# The daemon's defaults: every language's image.
	node_section steady "warm pool under steady load" python,javascript,typescript,bash,c,cpp,ruby,php -- --calls "$STEADY_CALLS"
fi

# ==== 11. the kubernetes backend ================================================
if want kubernetes; then
	log "11/11 the kubernetes backend through the Kubernetes API shim on $ENGINE_URL"
	node_section kube "kubernetes backend" python -- --calls "$STEADY_CALLS"
fi

# ==== summary ================================================================
echo
echo "=== bench ($(date -u +%FT%TZ), nproc $(nproc)) ==="
printf '%s\n' "${summary[@]}"
results=()
want http && results+=(http-tools-list.json)
want survival && results+=(survival.json)
want latency && results+=(latency.json)
want pool && results+=(pool.json)
want languages && results+=(languages.json)
want sessions && results+=(sessions.json)
want egress && results+=(egress.json)
want packages && results+=(packages.json)
want modern && results+=(modern.json)
want steady && results+=(steady.json)
want kubernetes && results+=(kube.json)
echo "results in ${OUT#"$ROOT"/}/: ${results[*]} (logs in ${LOGS#"$ROOT"/}/)"
if ((${#broken[@]})); then
	echo "bench: FAILED (${#broken[@]} problem(s)):"
	printf '  - %s\n' "${broken[@]}"
	exit 1
fi
echo "bench: OK"
