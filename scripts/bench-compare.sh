#!/usr/bin/env bash
# `make bench-compare BASE=<commit>`: the daemon built at BASE and the one
# built from this tree, measured side by side in one run, for a change
# that must not cost speed (figures reported, never asserted). Loopback
# only.
#
#   scripts/bench-compare.sh BASE
#
#   1. tools/list throughput: wrk -t2 -c16 (tests/bench/tools-list.lua) at
#      each daemon (--http 127.0.0.1:0 --pool-size 0, one initialized
#      session), ROUNDS rounds alternating base, this tree; the best run of
#      each and this tree's as a share of the base's.
#   2. warm runs: tests/integration/latency.mjs (run_python_code hello
#      world over stdio through the SDK client, the default warm pool) at
#      each, ROUNDS rounds alternating; the median and p95 of each round,
#      and the best round's of each.
# BASE is built in a temporary worktree (removed afterwards). The engine is
# the one scripts/engine.sh discovers (ENGINE=docker|podman|unix://... to
# choose). Results: build/bench/compare.json; the summary on stdout.
#
# Environment: BENCH_SECONDS (each wrk run, default 10), BENCH_ROUNDS
# (default 3), BENCH_LATENCY_CALLS (default 30).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT
readonly OUT=$ROOT/build/bench
readonly LOGS=$OUT/logs
readonly SECS=${BENCH_SECONDS:-10}
readonly ROUNDS=${BENCH_ROUNDS:-3}
readonly CALLS=${BENCH_LATENCY_CALLS:-30}
readonly START_TIMEOUT=15

log() { printf 'bench-compare: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

[ $# -eq 1 ] || die "usage: $0 BASE (a commit)"
for v in "$SECS" "$ROUNDS" "$CALLS"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || die "BENCH_SECONDS, BENCH_ROUNDS, BENCH_LATENCY_CALLS: whole numbers > 0"
done
base_rev=$(git -C "$ROOT" rev-parse --verify --quiet "$1^{commit}") || die "'$1' is not a commit"
head_rev=$(git -C "$ROOT" rev-parse --short HEAD)
for c in wrk curl node; do
	command -v "$c" >/dev/null || die "$c not found (scripts/deps.sh --test installs it)"
done
[ -x "$ROOT/build/mcp-sandboxd" ] || die "build/mcp-sandboxd not found (make builds it)"
[ -d "$ROOT/tests/node_modules" ] || die "tests/node_modules missing (make bench installs it)"
ENGINE_URL=unix://$("$ROOT/scripts/engine.sh" use "${ENGINE:-}") || die "no engine could be started"
readonly ENGINE_URL

mkdir -p "$OUT" "$LOGS"
work=$(mktemp -d /tmp/mcpsbx-bench-compare.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	git -C "$ROOT" worktree remove --force "$work/base" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

log "building the daemon at ${base_rev:0:12}"
git -C "$ROOT" worktree add --detach --quiet "$work/base" "$base_rev"
make -C "$work/base" -j"$(nproc)" build/mcp-sandboxd >"$LOGS/compare-build.log" 2>&1 ||
	die "building $base_rev failed (see $LOGS/compare-build.log)"
declare -A BIN=([base]=$work/base/build/mcp-sandboxd [head]=$ROOT/build/mcp-sandboxd)

# start NAME: that daemon over HTTP with one initialized session; sets
# url[NAME], sid[NAME].
declare -A url sid pid
start() {
	local name=$1 lf=$LOGS/compare-$1.log port f=$work/$1.init
	"${BIN[$name]}" --http 127.0.0.1:0 --pool-size 0 --engine "$ENGINE_URL" 2>"$lf" &
	pid[$name]=$!
	pids+=("${pid[$name]}")
	for ((i = 0; i < START_TIMEOUT * 10; i++)); do
		port=$(sed -En 's#.*serving MCP over HTTP at http://127\.0\.0\.1:([0-9]+)/mcp.*#\1#p' "$lf" | head -n 1)
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || die "the $name daemon did not start (see $lf)"
	url[$name]=http://127.0.0.1:$port/mcp
	curl -sS --max-time 10 -o "$f" -D "$f.h" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' --data-binary \
		'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench-compare","version":"1"}}}' \
		"${url[$name]}" >/dev/null
	sid[$name]=$(sed -n 's/^[Mm][Cc][Pp]-[Ss][Ee][Ss][Ss][Ii][Oo][Nn]-[Ii][Dd]: *\([^[:space:]]*\).*/\1/p' "$f.h" | head -n 1)
	[ -n "${sid[$name]}" ] || die "initialize at the $name daemon failed"
	curl -sS --max-time 10 -o /dev/null -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' -H "Mcp-Session-Id: ${sid[$name]}" \
		--data-binary '{"jsonrpc":"2.0","method":"notifications/initialized"}' "${url[$name]}"
}

# wrk_run NAME ROUND: requests per second into $work/NAME-ROUND.json.
wrk_run() {
	BENCH_SESSION_ID=${sid[$1]} BENCH_WRK_JSON=$work/$1-$2.json \
		timeout --kill-after=5 $((SECS + 30)) wrk -t2 -c16 -d"${SECS}s" --latency \
		-s "$ROOT/tests/bench/tools-list.lua" "${url[$1]}" >"$LOGS/compare-wrk-$1-$2.txt" 2>&1 || true
	[ -s "$work/$1-$2.json" ] || printf 'null\n' >"$work/$1-$2.json"
	kill -0 "${pid[$1]}" 2>/dev/null || die "the $1 daemon died under load (see $LOGS/compare-$1.log)"
}

# latency_run NAME ROUND: latency.mjs's output into $work/lat-NAME-ROUND.txt.
latency_run() {
	(cd "$ROOT" && MCPSANDBOXD_BIN=${BIN[$1]} MCPSANDBOXD_ENGINE=$ENGINE_URL \
		timeout 300 node tests/integration/latency.mjs "$CALLS") >"$work/lat-$1-$2.txt" 2>&1 ||
		die "latency.mjs failed for the $1 daemon: $(tail -n 3 "$work/lat-$1-$2.txt")"
}

log "1/2 tools/list throughput, ${ROUNDS} rounds of ${SECS}s each, alternating"
start base
start head
load1=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= ROUNDS; r++)); do
	for name in base head; do wrk_run "$name" "$r"; done
done
kill "${pid[base]}" "${pid[head]}" 2>/dev/null || true
wait "${pid[base]}" "${pid[head]}" 2>/dev/null || true

log "2/2 warm runs (latency.mjs $CALLS calls), ${ROUNDS} rounds, alternating"
load2=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= ROUNDS; r++)); do
	for name in base head; do latency_run "$name" "$r"; done
done

node - "$work" "$ROUNDS" "$OUT/compare.json" "${base_rev:0:12}" "$head_rev" "$ENGINE_URL" \
	"$load1" "$load2" "$SECS" "$CALLS" <<'EOF'
const fs = require('fs');
const [work, rounds, out, base, head, engine, load1, load2, secs, calls] = process.argv.slice(2);
// The best of the rounds: the one least disturbed by other work.
const best = (xs, pick) => {
  const ok = xs.filter((x) => x !== null);
  return ok.length ? pick(...ok) : null;
};
const res = { base, head, engine, loadavg_http: load1, loadavg_warm: load2, seconds: +secs, calls: +calls };
for (const name of ['base', 'head']) {
  const rps = [], med = [], p95 = [];
  for (let r = 1; r <= +rounds; r++) {
    const w = JSON.parse(fs.readFileSync(`${work}/${name}-${r}.json`, 'utf8'));
    rps.push(w ? w.requests_per_s : null);
    const t = fs.readFileSync(`${work}/lat-${name}-${r}.txt`, 'utf8');
    const m = t.match(/client round trip: min [\d.]+ \/ median ([\d.]+) \/ p95 ([\d.]+)/);
    med.push(m ? +m[1] : null);
    p95.push(m ? +m[2] : null);
  }
  res[name] = { requests_per_sec: rps, warm_median_ms: med, warm_p95_ms: p95,
    best_requests_per_sec: best(rps, Math.max),
    best_warm_median_ms: best(med, Math.min),
    best_warm_p95_ms: best(p95, Math.min) };
}
const ratio = (a, b) => (a === null || b === null || b === 0 ? null : +(a / b).toFixed(3));
res.throughput_head_over_base = ratio(res.head.best_requests_per_sec, res.base.best_requests_per_sec);
res.warm_median_head_over_base = ratio(res.head.best_warm_median_ms, res.base.best_warm_median_ms);
fs.writeFileSync(out, JSON.stringify(res, null, 2) + '\n');
const f = (x) => (x === null || !Number.isFinite(x) ? '-' : x.toFixed(1));
console.log(`bench-compare: base ${base}, head ${head}, engine ${engine}`);
for (const name of ['base', 'head']) {
  const x = res[name];
  console.log(`  ${name}: tools/list ${x.requests_per_sec.map(f).join(' / ')} req/s (best ${f(x.best_requests_per_sec)}); ` +
    `warm run median ${x.warm_median_ms.map(f).join(' / ')} ms, p95 ${x.warm_p95_ms.map(f).join(' / ')} ms`);
}
console.log(`  head/base: throughput ${res.throughput_head_over_base}, warm median ${res.warm_median_head_over_base} (load ${load1} | ${load2})`);
EOF
