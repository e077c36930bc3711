#!/usr/bin/env bash
# Check that the engine runs the sandbox images the way mcp-sandboxd does:
# through the Engine API (curl on the unix socket), with the daemon's own
# create request (`mcp-sandboxd --dry-run-create`: read-only root, tmpfs
# /tmp, Init, no capabilities, no-new-privileges, no network, memory/pids
# limits, explicit ulimits), as its unprivileged user in /tmp. Needs
# build/mcp-sandboxd (make) and python3.
#
#   scripts/smoke.sh [--engine unix:///path] [python] [node]
#
# Inside each container a small program verifies those properties (and, for
# Python, that numpy, pandas, matplotlib (Agg), scipy, sympy and requests
# import); its exit status is the number of failed checks. On failure the run
# is repeated with logging on, to show which checks failed.
# Prints one line per image on stdout; exits non-zero if any check fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ENGINE_SH=$ROOT/scripts/engine.sh
readonly BIN=${MCPSANDBOXD_BIN:-$ROOT/build/mcp-sandboxd}
readonly API=v1.41

log() { printf 'smoke.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

engine_args=()
langs=()
while (($#)); do
	case $1 in
	--engine)
		(($# >= 2)) || die "--engine needs a value (unix:///path)"
		engine_args=(--engine "$2")
		shift
		;;
	--engine=*) engine_args=("$1") ;;
	python | node) langs+=("$1") ;;
	-h | --help)
		sed -n '2,14s/^# \{0,1\}//p' "$0" >&2
		exit 0
		;;
	*) die "unknown argument: $1" ;;
	esac
	shift
done
((${#langs[@]})) || langs=(python node)

sock=$("$ENGINE_SH" discover "${engine_args[@]}")
"$ENGINE_SH" ping "$sock" || die "no engine answers on unix://$sock"
kind=$("$ENGINE_SH" kind "$sock")

# The user and nproc limit the daemon's request sets (a sandbox uid of its
# range, or --sandbox-user), which the checks expect.
read -r want_uid want_gid want_nproc < <("$BIN" --dry-run-create python "${engine_args[@]}" |
	python3 -c '
import json, sys
b = json.load(sys.stdin)
print(*b["User"].split(":"), [u["Soft"] for u in b["HostConfig"]["Ulimits"] if u["Name"] == "nproc"][0])
') || die "mcp-sandboxd --dry-run-create python failed"

# The check programs: no double quotes or backslashes, so that json_str can
# embed them in JSON.
py_check="import os, sys, resource as r
b = []
def c(n, ok):
    ok or b.append(n)
c('uid', os.getuid() == $want_uid and os.getgid() == $want_gid)
c('cwd', os.getcwd() == '/tmp')
open('/tmp/w', 'w').write('x')
c('rootfs-ro', any(l.split()[4] == '/' and 'ro' in l.split()[5].split(',') for l in open('/proc/self/mountinfo')))
c('nofile', r.getrlimit(r.RLIMIT_NOFILE) == (1024, 1024))
c('nproc', r.getrlimit(r.RLIMIT_NPROC) == ($want_nproc, $want_nproc))
c('core', r.getrlimit(r.RLIMIT_CORE) == (0, 0))
c('fsize', r.getrlimit(r.RLIMIT_FSIZE) == (67108864, 67108864))
st = dict(l.split(':', 1) for l in open('/proc/self/status'))
c('caps', int(st['CapEff'], 16) == 0 and int(st['CapBnd'], 16) == 0)
c('no-new-privs', st['NoNewPrivs'].strip() == '1')
c('network-none', os.listdir('/sys/class/net') == ['lo'])
c('init', os.getpid() != 1)
rd = lambda ps: [open(p).read().strip() for p in ps if os.path.exists(p)][:1]
c('memory', rd(['/sys/fs/cgroup/memory/memory.limit_in_bytes', '/sys/fs/cgroup/memory.max']) == ['268435456'])
c('pids', rd(['/sys/fs/cgroup/pids/pids.max', '/sys/fs/cgroup/pids.max']) == ['256'])
import numpy, pandas, matplotlib, scipy, sympy, requests
import matplotlib.pyplot as plt
c('mpl-agg', matplotlib.get_backend().lower() == 'agg')
b and print('failed checks:', *b)
sys.exit(len(b))"
js_check="const b = [], c = (n, ok) => ok || b.push(n);
c('uid', process.getuid() === $want_uid && process.getgid() === $want_gid);
c('cwd', process.cwd() === '/tmp');
require('fs').writeFileSync('/tmp/w', 'x');
c('network-none', require('fs').readdirSync('/sys/class/net').join() === 'lo');
if (b.length) console.log('failed checks:', b.join(' '));
process.exit(b.length);"

# json_str TEXT: TEXT as a JSON string (newlines and tabs escaped).
# create_body LANG LOGTYPE ARGV...: the daemon's own create request for LANG
# (mcp-sandboxd --dry-run-create), with ARGV as the command, stdin off and
# LOGTYPE as the log driver, so the checks run under exactly its policy.
create_body() {
	local lang=$1 logtype=$2
	shift 2
	# The memory check below expects 256 MiB.
	"$BIN" --dry-run-create "$lang" --memory-mb 256 "${engine_args[@]}" |
		python3 -c '
import json, sys
body = json.load(sys.stdin)
body["Cmd"] = sys.argv[2:]
for k in ("AttachStdin", "OpenStdin", "StdinOnce"):
    body[k] = False
body["HostConfig"]["LogConfig"] = {"Type": sys.argv[1]}
json.dump(body, sys.stdout)
' "$logtype" "$@"
}

# api METHOD PATH [BODY]: prints the response body then the HTTP status on
# a last line of its own.
api() {
	local args=(-s --max-time 120 --unix-socket "$sock" -X "$1" -w '\n%{http_code}')
	[[ $# -ge 3 ]] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	curl "${args[@]}" "http://d/$API$2"
}

# run_once LANG IMAGE LOGTYPE ARGV...: create, start, wait, (logs), remove.
# Prints the exit status, then the logs when LOGTYPE is not "none".
run_once() {
	local lang=$1 image=$2 logtype=$3 resp code id status
	shift 3
	resp=$(api POST /containers/create "$(create_body "$lang" "$logtype" "$@")")
	code=${resp##*$'\n'}
	[[ $code == 201 ]] || die "$kind rejected POST /containers/create for $image (HTTP $code): ${resp%$'\n'*}"
	[[ $resp != *'"Warnings":['[^]]* ]] || log "create warnings: ${resp%$'\n'*}"
	id=$(sed -n 's/.*"Id":"\([0-9a-f]*\)".*/\1/p' <<<"${resp%$'\n'*}")
	[[ -n $id ]] || die "no container id in: $resp"
	resp=$(api POST "/containers/$id/start")
	if [[ ${resp##*$'\n'} != 204 ]]; then
		api DELETE "/containers/$id?force=1" >/dev/null || true
		die "$kind failed to start $image: ${resp%$'\n'*}"
	fi
	resp=$(api POST "/containers/$id/wait")
	status=$(sed -n 's/.*"StatusCode":\([0-9-]*\).*/\1/p' <<<"${resp%$'\n'*}")
	printf '%s\n' "${status:-unknown}"
	if [[ $logtype != none ]]; then
		# Strip the 8-byte stream headers (they hold NUL and control bytes).
		curl -s --max-time 30 --unix-socket "$sock" \
			"http://d/$API/containers/$id/logs?stdout=1&stderr=1" |
			tr -d '\000-\010\016-\037' || true
	fi
	api DELETE "/containers/$id?force=1" >/dev/null || true
}

failed=0
for lang in "${langs[@]}"; do
	case $lang in
	python)
		dlang=python
		image=${MCPSANDBOXD_PYTHON_IMAGE:-mcp-sandboxd-python:latest}
		argv=(python3 -u -c "$py_check")
		;;
	node)
		dlang=javascript
		image=${MCPSANDBOXD_JS_IMAGE:-mcp-sandboxd-node:latest}
		argv=(node -e "$js_check")
		;;
	esac
	t0=$(date +%s%N)
	status=$(run_once "$dlang" "$image" none "${argv[@]}")
	ms=$((($(date +%s%N) - t0) / 1000000))
	if [[ $status == 0 ]]; then
		printf '%s: ok (%s unix://%s, create+start+wait+remove %d ms)\n' "$image" "$kind" "$sock" "$ms"
	else
		printf '%s: FAILED (%s unix://%s, exit status %s)\n' "$image" "$kind" "$sock" "$status"
		log "rerunning $image with logs on:"
		logtype=json-file
		[[ $kind == podman ]] && logtype=k8s-file
		run_once "$dlang" "$image" "$logtype" "${argv[@]}" | sed 's/^/  /' >&2
		failed=1
	fi
done
exit "$failed"
