#!/usr/bin/env bash
# The hostile battery (tests/security/battery.test.mjs): programs that try
# to break out of, starve or abuse the sandbox, against real engines.
#
#   tests/security/run.sh [docker] [podman] [runsc] [http]
#
# Each engine pass runs the battery twice: with a warm pool (--pool-size 2,
# runs take pooled sandboxes) and on demand (--pool-size 0). The runsc pass
# is Docker with every sandbox under gVisor (INTEGRATION_RUNTIME=runsc: the
# daemon runs with --runtime runsc). The http pass runs the hostile HTTP
# clients: tests/security/http-abuse.test.mjs (no engine) and
# tests/security/hostile-client.test.mjs (Docker for its runs).
#
# Builds nothing except `npm ci` in tests/ when node_modules is missing or
# stale (make security builds the daemon). Before each pass:
# scripts/engine.sh start <engine>, then DOCKER_HOST=unix://<socket>
# scripts/images.sh.
#
# Prints a summary per pass and finally exactly
#   security: N passed, M failed
# counting tests. Exits non-zero on any failure.
#
# Environment:
#   SECURITY_BIN           daemon binary (default build/mcp-sandboxd)
#   SECURITY_PASS_TIMEOUT  seconds per battery run (default 420)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
readonly TESTS=$ROOT/tests
readonly BIN=${SECURITY_BIN:-build/mcp-sandboxd}
readonly PASS_TIMEOUT=${SECURITY_PASS_TIMEOUT:-420}

log() { printf 'security: %s\n' "$*" >&2; }

# shellcheck source=tests/lib.sh
. "$TESTS/lib.sh"

suite_begin security "docker podman runsc http" "docker podman runsc http" "$@"

# run_pass ENGINE SOCKET [RUNTIME]
run_pass() {
	local engine=$1 sock=$2 runtime=${3:-} bin=$BIN pool t0 rc
	case $bin in /*) ;; *) bin=$ROOT/$bin ;; esac
	local setup_err
	if setup_err=$(pass_setup "$bin" "$engine" "$sock" "$runtime"); then
		setup_err=""
	fi
	local label=$engine
	[ -n "$runtime" ] && label=$runtime
	if [ -n "$setup_err" ]; then
		log "$label: $setup_err"
		summaries+=("$label: SETUP FAILED ($setup_err)")
		total_fail=$((total_fail + 1))
		return
	fi
	for pool in 2 0; do
		local name="$label, pool $pool" tap=$work/$label-$pool.tap
		t0=$(date +%s)
		echo
		echo "=== security pass '$name': ${bin#"$ROOT"/} on $engine ($sock)${runtime:+ under $runtime} ==="
		(cd "$ROOT" && env MCPSANDBOXD_BIN="$bin" MCPSANDBOXD_ENGINE="unix://$sock" \
			INTEGRATION_RUNTIME="$runtime" \
			SECURITY_POOL_SIZE="$pool" timeout --kill-after=10 "$PASS_TIMEOUT" \
			node --test \
			--test-reporter=spec --test-reporter-destination=stdout \
			--test-reporter=tap --test-reporter-destination="$tap" \
			tests/security/battery.test.mjs)
		rc=$?
		tap_totals "$name" "$tap" "$rc" "$PASS_TIMEOUT"
		total_pass=$((total_pass + TAP_PASS))
		total_fail=$((total_fail + TAP_FAIL))
		summaries+=("$name: $TAP_PASS passed, $TAP_FAIL failed (of ${TAP_TESTS:-?} tests) in $(($(date +%s) - t0)) s")
	done
}

# run_http: the hostile HTTP clients, against a daemon with no engine.
run_http() {
	local bin=$BIN tap=$work/http.tap t0 rc setup_err
	case $bin in /*) ;; *) bin=$ROOT/$bin ;; esac
	t0=$(date +%s)
	echo
	echo "=== security pass 'http': ${bin#"$ROOT"/}, hostile HTTP clients (Docker for the runs) ==="
	if setup_err=$(pass_setup "$bin" docker "$DOCKER_SOCK"); then
		setup_err=""
	fi
	if [ -n "$setup_err" ]; then
		log "http: $setup_err"
		summaries+=("http: SETUP FAILED ($setup_err)")
		total_fail=$((total_fail + 1))
		return
	fi
	(cd "$ROOT" && env MCPSANDBOXD_BIN="$bin" MCPSANDBOXD_ENGINE="unix://$DOCKER_SOCK" \
		timeout --kill-after=10 "$PASS_TIMEOUT" \
		node --test \
		--test-reporter=spec --test-reporter-destination=stdout \
		--test-reporter=tap --test-reporter-destination="$tap" \
		tests/security/http-abuse.test.mjs tests/security/hostile-client.test.mjs)
	rc=$?
	tap_totals http "$tap" "$rc" "$PASS_TIMEOUT"
	total_pass=$((total_pass + TAP_PASS))
	total_fail=$((total_fail + TAP_FAIL))
	summaries+=("http: $TAP_PASS passed, $TAP_FAIL failed (of ${TAP_TESTS:-?} tests) in $(($(date +%s) - t0)) s")
}

for p in "${PASSES[@]}"; do
	case $p in
	docker) run_pass docker "$DOCKER_SOCK" ;;
	podman) run_pass podman "$PODMAN_SOCK" ;;
	runsc) run_pass docker "$DOCKER_SOCK" runsc ;;
	http) run_http ;;
	esac
done

echo
echo "=== security summary ==="
for s in "${summaries[@]}"; do
	echo "  $s"
done
print_failures
echo "security: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
