#!/usr/bin/env bash
# Fault tests: the daemon against a dying, killed or stalled engine, a
# SIGKILLed predecessor, clients that vanish mid-stream, and a soak run.
#
#   tests/faults/run.sh [docker] [podman]
#
# Passes (default: both, in this order):
#   docker   build/mcp-sandboxd on Docker (/var/run/docker.sock)
#   podman   build/mcp-sandboxd on Podman (/run/podman/podman.sock)
# Each pass runs every tests/faults/*.test.mjs with node --test, one file
# at a time (they kill and stop the engine, so they must not overlap):
#   daemon-kill   a SIGKILLed daemon's container is removed by its successor
#   disconnect    HTTP and stdio clients dropping connections at random
#   engine-kill   the engine SIGKILLed mid-run, then restarted
#   engine-stall  the engine SIGSTOPped, then continued
#   soak          FAULTS_SOAK_RUNS hello-world runs, RSS and fds flat
# These tests SIGKILL and SIGSTOP the engine: anything else using it at the
# same time sees it die. After each pass (and on exit) the engine is
# continued and restarted if need be, so it is left running and healthy.
#
# Builds nothing except `npm ci` in tests/ when node_modules is missing or
# stale (make faults builds the daemon). Before each pass: SIGCONT to the
# engine (in case an earlier run left it stopped), scripts/engine.sh start
# <engine>, then DOCKER_HOST=unix://<socket> scripts/images.sh.
#
# Prints a summary per pass and finally exactly
#   faults: N passed, M failed
# counting tests (a pass whose setup fails, or that leaves the engine
# unhealthy, counts one more failed test). Exits non-zero on any failure.
#
# Environment:
#   FAULTS_BIN           daemon binary (default build/mcp-sandboxd)
#   FAULTS_SOAK_RUNS     soak runs per pass (default 1000)
#   FAULTS_PASS_TIMEOUT  seconds per pass (default 600 + FAULTS_SOAK_RUNS / 2),
#                        after which the pass is killed and counted failed
#   FAULTS_SEED, FAULTS_DISCONNECT_ROUNDS, FAULTS_STDIO_ROUNDS,
#   FAULTS_SOAK_CONCURRENCY  see the test files
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
readonly TESTS=$ROOT/tests
readonly ENGINE_SH=$ROOT/scripts/engine.sh
readonly BIN=${FAULTS_BIN:-build/mcp-sandboxd}
SOAK_RUNS=${FAULTS_SOAK_RUNS:-1000}
[[ $SOAK_RUNS =~ ^[0-9]+$ ]] || SOAK_RUNS=1000
readonly SOAK_RUNS
readonly PASS_TIMEOUT=${FAULTS_PASS_TIMEOUT:-$((600 + SOAK_RUNS / 2))}

log() { printf 'faults: %s\n' "$*" >&2; }

# shellcheck source=tests/lib.sh
. "$TESTS/lib.sh"

suite_begin faults "docker podman" "docker podman" "$@"

# recover ENGINE: continue it if a test left it stopped, start it if a test
# left it dead. Fails when it still does not answer.
recover() {
	local pid
	if pid=$("$ENGINE_SH" pid "$1" 2>/dev/null); then
		kill -CONT "$pid" 2>/dev/null || true
	fi
	timeout 150 "$ENGINE_SH" start "$1"
}

# These tests must own the engine process: under systemd socket activation
# a killed engine comes straight back and a stopped one still has a
# listener. Stop such units for the run (started again on exit).
units_stopped=()
take_engine() {
	local u units
	units=$("$ENGINE_SH" systemd-units "$1") || return 1
	for u in $units; do
		log "$1: stopping systemd unit $u for the fault tests (started again at the end)"
		systemctl stop "$u" || return 1
		units_stopped+=("$1:$u")
	done
}

# Whatever ends this script (a timeout, ^C), leave the engines running: the
# systemd units it stopped, else the ones scripts/engine.sh started.
touched=()
cleanup() {
	local e u
	for e in "${touched[@]}"; do
		if printf '%s\n' "${units_stopped[@]}" | grep -q "^$e:"; then
			"$ENGINE_SH" stop "$e" >/dev/null 2>&1 || true
			for u in "${units_stopped[@]}"; do
				[[ $u == "$e:"* ]] && { systemctl start "${u#"$e":}" || log "could not start ${u#"$e":} again"; }
			done
			continue
		fi
		recover "$e" >/dev/null 2>&1 || log "could not bring $e back (scripts/engine.sh start $e)"
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

total_pass=0
total_fail=0
summaries=()

# run_pass ENGINE SOCKET
run_pass() {
	local engine=$1 sock=$2 bin=$BIN
	local t0 pass fail tests tap=$work/$engine.tap rc
	t0=$(date +%s)
	case $bin in /*) ;; *) bin=$ROOT/$bin ;; esac
	echo
	echo "=== faults pass '$engine': ${bin#"$ROOT"/} on $engine ($sock) ==="

	local setup_err=""
	touched+=("$engine")
	if [ ! -x "$bin" ]; then
		setup_err="$bin not found (make faults builds it)"
	elif ! take_engine "$engine"; then
		setup_err="could not stop the systemd units serving $engine"
	elif ! recover "$engine"; then
		setup_err="scripts/engine.sh start $engine failed"
	elif ! DOCKER_HOST=unix://$sock "$ROOT/scripts/images.sh"; then
		setup_err="scripts/images.sh failed for $engine"
	fi
	if [ -n "$setup_err" ]; then
		log "$engine: $setup_err"
		summaries+=("$engine: SETUP FAILED ($setup_err)")
		total_fail=$((total_fail + 1))
		return
	fi

	# One file at a time: they kill and stop the shared engine.
	(cd "$ROOT" && env MCPSANDBOXD_BIN="$bin" MCPSANDBOXD_ENGINE="unix://$sock" FAULTS_ENGINE="$engine" \
		FAULTS_SOAK_RUNS="$SOAK_RUNS" timeout --kill-after=10 "$PASS_TIMEOUT" \
		node --test --test-concurrency=1 \
		--test-reporter=spec --test-reporter-destination=stdout \
		--test-reporter=tap --test-reporter-destination="$tap" \
		tests/faults/*.test.mjs)
	rc=$?
	tap_totals "$engine" "$tap" "$rc" "$PASS_TIMEOUT"
	pass=$TAP_PASS fail=$TAP_FAIL tests=$TAP_TESTS

	# The tests restore the engine themselves; a killed run could not.
	local extra=""
	if ! recover "$engine" || ! "$ENGINE_SH" ping "$sock"; then
		fail=$((fail + 1))
		extra="; ENGINE NOT HEALTHY AFTER THE PASS"
		log "$engine: the engine does not answer on $sock after the pass"
	fi

	total_pass=$((total_pass + pass))
	total_fail=$((total_fail + fail))
	summaries+=("$engine: $pass passed, $fail failed (of ${tests:-?} tests) in $(($(date +%s) - t0)) s$extra")
}

for p in "${PASSES[@]}"; do
	case $p in
	docker) run_pass docker "$DOCKER_SOCK" ;;
	podman) run_pass podman "$PODMAN_SOCK" ;;
	esac
done

echo
echo "=== faults summary ==="
for s in "${summaries[@]}"; do
	echo "  $s"
done
print_failures
echo "faults: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
