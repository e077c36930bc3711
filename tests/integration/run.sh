#!/usr/bin/env bash
# Integration suite: the daemon over stdio and HTTP, driven by the official
# MCP SDK clients, against real engines; plus the official MCP conformance
# suite against the HTTP transport.
#
#   tests/integration/run.sh [docker] [kubernetes] [podman] [runsc] [asan] [conformance]
#
# Passes (default: all six, in this order):
#   docker       build/mcp-sandboxd      on Docker  (/var/run/docker.sock)
#   kubernetes   build/mcp-sandboxd --backend kubernetes, against the
#                Kubernetes API shim (tests/kube_shim: each Pod a container
#                of Docker): the shim's own test, the backend conformance
#                suite, the manifests and Pods against the API's schemas
#                (tests/deploy), the daemon's image run as the Deployment
#                runs it (tests/deploy/daemon_image.mjs), then KUBE_FILES:
#                the suite's files on runs, live output, cancellation,
#                files, variables, sessions, tasks and the pool. Not those
#                on what this backend refuses (egress, packages,
#                --sandbox-io), nor those on the protocol alone, nor
#                polyglot.test.mjs: a language's Pod differs from another's
#                only in its command, which the Pod spec's unit test covers
#   podman       build/mcp-sandboxd      on Podman  (/run/podman/podman.sock)
#   runsc        build/mcp-sandboxd      on Docker under gVisor: with
#                INTEGRATION_RUNTIME=runsc every daemon runs with --runtime
#                runsc (scripts/engine.sh registers it with dockerd)
#   asan         build/asan/mcp-sandboxd on Docker, ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
#                (a leak or sanitizer report at exit fails the test that
#                closed that daemon), with INTEGRATION_POOL_SIZE=0: every
#                daemon runs with --pool-size 0 (every sandbox on demand)
#                unless a test asks for a pool
#   conformance  build/mcp-sandboxd --http on Docker: tests/conformance/run.sh
#                (counts one test per scenario; unexpected failures fail)
# The docker, podman, runsc and asan passes run every tests/integration/*.test.mjs
# (stdio.test.mjs, http.test.mjs, inspector.test.mjs) with node --test.
#
# Builds nothing except `npm ci` in tests/ when node_modules is missing or
# older than package-lock.json (make integration builds both binaries);
# tests/conformance/run.sh does the same in tests/conformance/.
# Before each pass: scripts/engine.sh start <engine>, then
# DOCKER_HOST=unix://<socket> scripts/images.sh. The docker and podman passes
# also print hello-world latency (tests/integration/latency.mjs; figures
# only, never asserted), and run the backend conformance suite
# (tests/backend_conformance, build/backend-conformance) against the
# backend main opens for that engine, each of its cases counted as a test.
#
# Prints a summary per pass and finally exactly
#   integration: N passed, M failed
# counting tests (a pass whose setup fails counts as one failed test).
# Exits non-zero on any failure.
#
# Environment:
#   INTEGRATION_RUNSC_PASS_TIMEOUT  the same for the runsc pass (default 660)
#   INTEGRATION_PASS_TIMEOUT  seconds per suite run (default 600; a normal
#                             docker or podman pass takes about 5 min with
#                             polyglot.test.mjs's eight languages)
#   INTEGRATION_BIN           daemon for the docker/podman passes (default build/mcp-sandboxd)
#   INTEGRATION_ASAN_BIN      daemon for the asan pass (default build/asan/mcp-sandboxd)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
readonly TESTS=$ROOT/tests
readonly PASS_TIMEOUT=${INTEGRATION_PASS_TIMEOUT:-600}
# gVisor starts each sandbox in about a second: the suite takes ~6 min.
readonly RUNSC_PASS_TIMEOUT=${INTEGRATION_RUNSC_PASS_TIMEOUT:-660}
readonly LATENCY_TIMEOUT=90
readonly CONFORMANCE_PASS_TIMEOUT=330
readonly BIN=${INTEGRATION_BIN:-build/mcp-sandboxd}
readonly ASAN_BIN=${INTEGRATION_ASAN_BIN:-build/asan/mcp-sandboxd}

log() { printf 'integration: %s\n' "$*" >&2; }

# shellcheck source=tests/lib.sh
. "$TESTS/lib.sh"

suite_begin integration "docker kubernetes podman runsc asan conformance" \
	"docker kubernetes podman runsc asan conformance" "$@"

# run_pass NAME ENGINE SOCKET BINARY [latency]
run_pass() {
	local name=$1 engine=$2 sock=$3 bin=$4 latency=${5:-}
	local t0 pass fail tests tap=$work/$name.tap rc
	t0=$(date +%s)
	case $bin in /*) ;; *) bin=$ROOT/$bin ;; esac
	echo
	echo "=== integration pass '$name': ${bin#"$ROOT"/} on $engine ($sock) ==="

	local setup_err runtime=""
	[ "$name" = runsc ] && runtime=runsc
	if setup_err=$(pass_setup "$bin" "$engine" "$sock" "$runtime"); then
		setup_err=""
	fi
	if [ -n "$setup_err" ]; then
		log "$name: $setup_err"
		summaries+=("$name: SETUP FAILED ($setup_err)")
		total_fail=$((total_fail + 1))
		return
	fi

	local -a env=(MCPSANDBOXD_BIN="$bin" MCPSANDBOXD_ENGINE="unix://$sock")
	local pass_timeout=$PASS_TIMEOUT
	if [ "$name" = runsc ]; then
		env+=(INTEGRATION_RUNTIME=runsc)
		pass_timeout=$RUNSC_PASS_TIMEOUT
	fi
	if [ "$name" = asan ]; then
		# abort_on_error turns any report (leaks at exit included) into
		# SIGABRT; the suite checks every daemon exited 0 with no sanitizer
		# output. LeakSanitizer needs to stop the process's threads the way a
		# debugger does; where that is forbidden (some CI containers and
		# sandboxes) it dies with "LeakSanitizer has encountered a fatal
		# error" - only then run without leak checking, and say so.
		local lsan=1
		if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$bin" --version >/dev/null 2>"$work/lsan.err"; then
			if grep -q 'LeakSanitizer has encountered a fatal error' "$work/lsan.err"; then
				lsan=0
				log "asan: LeakSanitizer cannot run here (ptrace not permitted); detect_leaks=0"
			fi
		fi
		env+=("ASAN_OPTIONS=detect_leaks=$lsan:abort_on_error=1"
			UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 INTEGRATION_POOL_SIZE=0)
	fi

	(cd "$ROOT" && env "${env[@]}" timeout --kill-after=10 "$pass_timeout" \
		node --test \
		--test-reporter=spec --test-reporter-destination=stdout \
		--test-reporter=tap --test-reporter-destination="$tap" \
		tests/integration/*.test.mjs)
	rc=$?
	tap_totals "$name" "$tap" "$rc" "$pass_timeout"
	pass=$TAP_PASS fail=$TAP_FAIL tests=$TAP_TESTS

	local extra=""
	if [ -n "$latency" ]; then
		local lat
		if lat=$(cd "$ROOT" && env "${env[@]}" timeout "$LATENCY_TIMEOUT" node tests/integration/latency.mjs 20 2>&1); then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
		fi
		echo "$lat"
		extra=$(printf '%s' "$lat" | sed -n 's/.*client round trip: /latency /p')
		backend_conformance "$name" "unix://$sock"
	fi

	total_pass=$((total_pass + pass))
	total_fail=$((total_fail + fail))
	summaries+=("$name: $pass passed, $fail failed (of ${tests:-?} tests$([ -n "$latency" ] && echo " + latency")) in $(($(date +%s) - t0)) s${extra:+; $extra}")
}

# backend_conformance NAME ADDRESS: the backend conformance suite on one
# engine (ADDRESS: its unix:// socket, or a kubeconfig file for NAME
# kubernetes); adds its cases to pass and fail (a run that reports none
# fails).
readonly BACKEND_CONFORMANCE=$ROOT/build/backend-conformance
readonly BACKEND_CONFORMANCE_IMAGE=mcp-sandboxd-python:latest
backend_conformance() {
	local name=$1 address=$2 out=$work/$1.backend ok bad
	timeout --kill-after=10 120 "$BACKEND_CONFORMANCE" "$name" "$address" \
		"$BACKEND_CONFORMANCE_IMAGE" >"$out" 2>&1
	ok=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -1)
	bad=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -1)
	if [ -z "$ok" ] && [ -z "$bad" ]; then
		bad=1
	fi
	if [ "${bad:-0}" -gt 0 ]; then
		log "$name: backend conformance failed:"
		grep -v ' info: ' "$out" | sed 's/^/  /' >&2
	fi
	pass=$((pass + ${ok:-0}))
	fail=$((fail + ${bad:-0}))
	echo "backend conformance on $name: ${ok:-0} passed, ${bad:-0} failed"
}

# deploy_check BIN: deploy/kubernetes's manifests and the Pods BIN's
# kubernetes backend sends, against the Kubernetes API's schemas
# (tests/deploy/validate.mjs); one test.
deploy_check() {
	if (cd "$ROOT" && timeout 120 node tests/deploy/validate.mjs --bin "$1" >"$work/deploy.out" 2>&1); then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		log "the Kubernetes manifests or Pods do not validate:"
		sed 's/^/  /' "$work/deploy.out" >&2
	fi
	tail -n 1 "$work/deploy.out"
}

# daemon_image_check SHIM_DIR SERVER: the daemon's image (make daemon-image)
# run as deploy/kubernetes' Deployment runs it, against the shim
# (tests/deploy/daemon_image.mjs); one test.
daemon_image_check() {
	local out=$work/daemon-image.out
	if DOCKER_HOST=unix://$DOCKER_SOCK "$ROOT/scripts/images.sh" --daemon >"$out" 2>&1 &&
		(cd "$ROOT" && timeout --kill-after=10 120 \
			node tests/deploy/daemon_image.mjs --shim-dir "$1" --server "$2" >>"$out" 2>&1); then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		log "kubernetes: the daemon's image does not run as the Deployment runs it:"
		tail -n 40 "$out" | sed 's/^/  /' >&2
	fi
	tail -n 1 "$out"
}

# run_kubernetes: the kubernetes pass. The Kubernetes API shim runs as a
# coprocess; it ends when its stdin closes (at the latest when this script
# exits) and removes what it made.
readonly KUBE_SHIM=$TESTS/kube_shim/shim.mjs
readonly KUBE_FILES="stdio files variables sessions pool modern http"
run_kubernetes() {
	local t0 dir=$work/kube-shim line n m pass=0 fail=0 tests bin=$ROOT/$BIN rc setup_err
	local tap=$dir/suite.tap
	t0=$(date +%s)
	case $BIN in /*) bin=$BIN ;; esac
	echo
	echo "=== integration pass 'kubernetes': ${bin#"$ROOT"/} --backend kubernetes, Kubernetes API shim on docker ($DOCKER_SOCK) ==="
	if ! setup_err=$(pass_setup "$bin" docker "$DOCKER_SOCK"); then
		log "kubernetes: $setup_err"
		summaries+=("kubernetes: SETUP FAILED ($setup_err)")
		total_fail=$((total_fail + 1))
		return
	fi
	mkdir -p "$dir"
	deploy_check "$bin"
	# The shim's own test first: the API's answers as the backend expects
	# them (each of its tests counted).
	(cd "$ROOT" && timeout --kill-after=10 120 \
		node --test --test-reporter=tap tests/kube_shim/shim.test.mjs) >"$dir/shim-test.out" 2>&1
	n=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$dir/shim-test.out" | tail -n 1)
	m=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$dir/shim-test.out" | tail -n 1)
	[ -z "$n" ] && m=$((${m:-0} + 1))
	if [ "${m:-0}" -gt 0 ]; then
		log "kubernetes: the Kubernetes API shim's test failed:"
		grep -v '^    at ' "$dir/shim-test.out" | tail -n 60 | sed 's/^/  /' >&2
	fi
	pass=$((pass + ${n:-0}))
	fail=$((fail + ${m:-0}))
	echo "Kubernetes API shim: ${n:-0} passed, ${m:-0} failed"
	coproc KSHIM { exec node "$KUBE_SHIM" --dir "$dir" --engine "unix://$DOCKER_SOCK" 2>"$dir/stderr"; }
	# Unset already when the shim died at once (bash reaped it).
	local pid=${KSHIM_PID:-} in=${KSHIM[1]:-} out=${KSHIM[0]:-}
	if [ -z "$out" ] || ! read -r -t 30 line <&"$out" || [[ $line != "kube-shim: ready "* ]]; then
		log "kubernetes: the Kubernetes API shim did not start:"
		sed 's/^/  /' "$dir/stderr" >&2
		fail=$((fail + 1))
		tests=0
	else
		backend_conformance kubernetes "$dir/kubeconfig"
		daemon_image_check "$dir" "${line#kube-shim: ready }"
		local -a files=()
		local f
		for f in $KUBE_FILES; do files+=("tests/integration/$f.test.mjs"); done
		(cd "$ROOT" && env MCPSANDBOXD_BIN="$bin" MCPSANDBOXD_ENGINE="unix://$DOCKER_SOCK" \
			INTEGRATION_KUBECONFIG="$dir/kubeconfig" timeout --kill-after=10 "$PASS_TIMEOUT" \
			node --test \
			--test-reporter=spec --test-reporter-destination=stdout \
			--test-reporter=tap --test-reporter-destination="$tap" \
			"${files[@]}")
		rc=$?
		tap_totals kubernetes "$tap" "$rc" "$PASS_TIMEOUT"
		pass=$((pass + TAP_PASS)) fail=$((fail + TAP_FAIL)) tests=$TAP_TESTS
	fi
	[ -n "$in" ] && exec {in}>&-
	[ -n "$pid" ] && wait "$pid" 2>/dev/null
	total_pass=$((total_pass + pass))
	total_fail=$((total_fail + fail))
	summaries+=("kubernetes: $pass passed, $fail failed (of ${tests:-?} tests + shim, conformance, manifests, image) in $(($(date +%s) - t0)) s")
}

# run_conformance: the official conformance suite against Docker, once.
run_conformance() {
	local t0 out=$work/conformance.out rc n m bin=$BIN
	t0=$(date +%s)
	case $bin in /*) ;; *) bin=$ROOT/$bin ;; esac
	echo
	echo "=== integration pass 'conformance': ${bin#"$ROOT"/} --http on docker ($DOCKER_SOCK) ==="
	if ! "$ROOT/scripts/engine.sh" start docker; then
		log "conformance: scripts/engine.sh start docker failed"
		summaries+=("conformance: SETUP FAILED (scripts/engine.sh start docker failed)")
		total_fail=$((total_fail + 1))
		return
	fi
	CONFORMANCE_BIN=$bin CONFORMANCE_ENGINE=unix://$DOCKER_SOCK \
		timeout --kill-after=10 "$CONFORMANCE_PASS_TIMEOUT" "$TESTS/conformance/run.sh" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	n=$(sed -n 's/^conformance: \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1/p' "$out" | tail -n 1)
	m=$(sed -n 's/^conformance: \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\2/p' "$out" | tail -n 1)
	if [ -z "$n" ] || [ -z "$m" ]; then
		log "conformance: no summary line (exit $rc; timeout ${CONFORMANCE_PASS_TIMEOUT}s?)"
		n=${n:-0}
		m=$((${m:-0} + 1))
	elif [ "$rc" -ne 0 ] && [ "$m" -eq 0 ]; then
		log "conformance: run.sh exited $rc with no failed scenario"
		m=1
	fi
	total_pass=$((total_pass + n))
	total_fail=$((total_fail + m))
	summaries+=("conformance: $n passed, $m failed (scenarios; expected failures not counted) in $(($(date +%s) - t0)) s")
}

for p in "${PASSES[@]}"; do
	case $p in
	docker) run_pass docker docker "$DOCKER_SOCK" "$BIN" latency ;;
	kubernetes) run_kubernetes ;;
	podman) run_pass podman podman "$PODMAN_SOCK" "$BIN" latency ;;
	runsc) run_pass runsc docker "$DOCKER_SOCK" "$BIN" ;;
	asan) run_pass asan docker "$DOCKER_SOCK" "$ASAN_BIN" ;;
	conformance) run_conformance ;;
	esac
done

echo
echo "=== integration summary ==="
for s in "${summaries[@]}"; do
	echo "  $s"
done
print_failures
echo "integration: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
