#!/usr/bin/env bash
# libFuzzer harnesses (tests/fuzz/fuzz_*.c) for the parsers that read
# untrusted bytes.
#
#   scripts/fuzz.sh build            build every harness into build/fuzz/
#   scripts/fuzz.sh smoke            build, then fuzz each for FUZZ_SECONDS (20),
#                                    FUZZ_JOBS harnesses at a time
#   scripts/fuzz.sh replay           build, then run each over its corpus once
#   scripts/fuzz.sh run NAME [ARGS]  build, then fuzz one harness by hand, e.g.
#                                    scripts/fuzz.sh run fuzz_jsonrpc -max_total_time=600
#
# A harness replays a single input given as a file: build/fuzz/fuzz_jsonrpc FILE.
# Smoke runs never write into the repository: new inputs go to a temporary
# directory (the first corpus directory), tests/fuzz/corpus/<name> is read only.
# Seeds that are files of the tree (fuzz_langtable's: the built-in language
# table) are copied into that directory at run time rather than kept in the
# corpus, so they are always the current ones.
# Crashes are saved as build/fuzz/artifacts/NAME-crash-*; logs in build/fuzz/logs/.
#
# Environment: FUZZ_CC (clang), FUZZ_SECONDS (20), FUZZ_RSS_MB (2048),
# FUZZ_JOBS (2: parallel compiles, and harnesses fuzzed at once).
set -uo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.." || exit 1

FUZZ_CC=${FUZZ_CC:-clang}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
FUZZ_RSS_MB=${FUZZ_RSS_MB:-2048}
FUZZ_JOBS=${FUZZ_JOBS:-2}
OUT=build/fuzz
# The generated sources, as the Makefile names them.
read -ra GEN <<<"$(make -s --no-print-directory gen-srcs)"
# shellcheck disable=SC2054 # the commas belong to the flags
SAN=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

usage() {
    sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

HARNESSES=()
for f in tests/fuzz/fuzz_*.c; do
    HARNESSES+=("$(basename "$f" .c)")
done

build() {
    if ! command -v "$FUZZ_CC" >/dev/null 2>&1; then
        echo "fuzz: $FUZZ_CC is not installed (Debian: apt-get install clang libclang-rt-14-dev)" >&2
        return 1
    fi
    local pkg_cflags pkg_libs
    if ! pkg_cflags=$(pkg-config --cflags libcurl json-c libmicrohttpd nettle openssl yaml-0.1) ||
        ! pkg_libs=$(pkg-config --libs libcurl json-c libmicrohttpd nettle openssl yaml-0.1); then
        echo "fuzz: pkg-config cannot find libcurl, json-c, libmicrohttpd, nettle, openssl and yaml-0.1 (scripts/deps.sh)" >&2
        return 1
    fi
    # Probe first: on Debian the fuzzer runtime is a separate package.
    mkdir -p "$OUT/obj" "$OUT/logs" "$OUT/artifacts"
    printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)\n{ (void)d; (void)n; return 0; }\n' \
        >"$OUT/probe.c"
    if ! "$FUZZ_CC" -fsanitize=fuzzer "${SAN[@]}" -o "$OUT/probe" "$OUT/probe.c" \
        >"$OUT/logs/probe.log" 2>&1; then
        cat "$OUT/logs/probe.log" >&2
        echo "fuzz: $FUZZ_CC cannot link -fsanitize=fuzzer; on Debian 12 install libclang-rt-14-dev" \
            "(libFuzzer and the sanitizer runtimes; only recommended by clang-14)" >&2
        return 1
    fi
    rm -f "$OUT/probe" "$OUT/probe.c"

    if ! make -s "${GEN[@]}"; then
        echo "fuzz: cannot generate ${GEN[*]}" >&2
        return 1
    fi

    local cflags=(-std=gnu11 -D_GNU_SOURCE '-DMCPSBX_VERSION="fuzz"' -Isrc -Ibuild/gen -g -O1
        -pthread -Wall -Wextra "${SAN[@]}")
    # shellcheck disable=SC2206 # pkg-config output is a list of words
    cflags+=($pkg_cflags)
    # shellcheck disable=SC2206
    local libs=($pkg_libs -lwslay -pthread)

    # The daemon's code once, instrumented for coverage (fuzzer-no-link),
    # then one link per harness.
    local srcs=() s
    for s in src/*/*.c src/*/*/*.c; do
        # Programs of the build (a main of their own, like the Makefile's
        # PROGRAMS) are not the daemon's code.
        grep -q '^int main(' "$s" && continue
        srcs+=("$s")
    done
    srcs+=("${GEN[@]}")
    rm -f "$OUT"/obj/*.o
    export FUZZ_CC OUT
    # Objects are named for the whole path (src/egress/policy.c is
    # src_egress_policy.o): two folders may hold files of the same name.
    # shellcheck disable=SC2016 # expanded by the inner sh
    if ! printf '%s\0' "${srcs[@]}" | xargs -0 -P "$FUZZ_JOBS" -I{} sh -c \
        '"$FUZZ_CC" "$@" -c -o "$OUT/obj/$(printf %s "${0%.c}" | tr / _).o" "$0" || exit 255' \
        {} -fsanitize=fuzzer-no-link "${cflags[@]}"; then
        echo "fuzz: compiling the daemon's sources failed" >&2
        return 1
    fi
    local h ok=0 bad=0
    for h in "${HARNESSES[@]}"; do
        if "$FUZZ_CC" -fsanitize=fuzzer "${cflags[@]}" -Werror -o "$OUT/$h" "tests/fuzz/$h.c" \
            "$OUT"/obj/*.o "${libs[@]}"; then
            ok=$((ok + 1))
        else
            echo "fuzz: building $h failed" >&2
            bad=$((bad + 1))
        fi
    done
    if [ "$bad" -eq 0 ]; then
        echo "fuzz: built $ok harness(es) into $OUT/"
    else
        echo "fuzz: built $ok harness(es) into $OUT/, $bad failed"
    fi
    [ "$bad" -eq 0 ]
}

# seed NAME DIR: copies NAME's seeds that are files of the tree into DIR.
seed() {
    case $1 in
    fuzz_langtable) cp src/sandbox/languages/builtin.json "$2/builtin.json" ;;
    esac
}

# fuzz_one NAME SECONDS: fuzzes from a scratch copy of the corpus.
fuzz_one() {
    local h=$1 secs=$2 scratch rc
    scratch=$(mktemp -d)
    seed "$h" "$scratch"
    local corpus=tests/fuzz/corpus/$h
    local dirs=("$scratch")
    [ -d "$corpus" ] && dirs+=("$corpus")
    "$OUT/$h" -max_total_time="$secs" -rss_limit_mb="$FUZZ_RSS_MB" -timeout=25 "$LEAKS" \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$h-" \
        "${dirs[@]}" >"$OUT/logs/$h.log" 2>&1
    rc=$?
    rm -rf "$scratch"
    return $rc
}

# LeakSanitizer needs ptrace; some containers forbid it, and then every run
# dies with "LeakSanitizer has encountered a fatal error". Fuzz without leak
# detection there rather than fail for the machine's sake (and say so).
LEAKS=-detect_leaks=1
probe_lsan() {
    local empty
    empty=$(mktemp -d)
    if ! "$OUT/${HARNESSES[0]}" -runs=1 "$empty" >"$OUT/logs/lsan-probe.log" 2>&1 &&
        grep -q 'LeakSanitizer has encountered a fatal error' "$OUT/logs/lsan-probe.log"; then
        echo "fuzz: LeakSanitizer cannot run here (ptrace not permitted): fuzzing without leak checks"
        LEAKS=-detect_leaks=0
        export ASAN_OPTIONS=${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0}
    fi
    rm -rf "$empty"
}

smoke() {
    build || return 1
    probe_lsan
    local h rc pass=0 fail=0 stats
    echo "fuzz: ${#HARNESSES[@]} harnesses for ${FUZZ_SECONDS}s each, $FUZZ_JOBS at a time"
    for h in "${HARNESSES[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$FUZZ_JOBS" ]; do
            wait -n
        done
        rm -f "$OUT/logs/$h.rc"
        (
            fuzz_one "$h" "$FUZZ_SECONDS"
            echo $? >"$OUT/logs/$h.rc"
        ) &
    done
    wait
    for h in "${HARNESSES[@]}"; do
        rc=$(cat "$OUT/logs/$h.rc" 2>/dev/null || echo 1)
        if [ "$rc" = 0 ]; then
            pass=$((pass + 1))
            stats=$(grep -E '^stat::(number_of_executed_units|peak_rss_mb):' "$OUT/logs/$h.log" |
                sed 's/^stat:://' | tr -s ' \n' ' ')
            echo "fuzz: $h ok ($stats)"
        else
            fail=$((fail + 1))
            echo "fuzz: $h FAILED; log: $OUT/logs/$h.log; crash input: $OUT/artifacts/$h-*"
            grep -m1 -A30 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|check failed' \
                "$OUT/logs/$h.log" | sed 's/^/    /'
        fi
    done
    echo "fuzz: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}

replay() {
    build || return 1
    probe_lsan
    local h pass=0 fail=0 seeds
    for h in "${HARNESSES[@]}"; do
        seeds=$(mktemp -d)
        seed "$h" "$seeds"
        if "$OUT/$h" -runs=0 "$LEAKS" "$seeds" "tests/fuzz/corpus/$h" >"$OUT/logs/$h.replay.log" 2>&1; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "fuzz: replaying tests/fuzz/corpus/$h FAILED; log: $OUT/logs/$h.replay.log"
        fi
        rm -rf "$seeds"
    done
    echo "fuzz: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}

[ ${#HARNESSES[@]} -gt 0 ] || {
    echo "fuzz: no harnesses in tests/fuzz/" >&2
    exit 1
}

case "${1:-}" in
build) build ;;
smoke) smoke ;;
replay) replay ;;
run)
    [ -n "${2:-}" ] || usage
    h=$2
    shift 2
    build || exit 1
    mkdir -p "$OUT/corpus/$h"
    seed "$h" "$OUT/corpus/$h"
    exec "$OUT/$h" -rss_limit_mb="$FUZZ_RSS_MB" -artifact_prefix="$OUT/artifacts/$h-" "$@" \
        "$OUT/corpus/$h" "tests/fuzz/corpus/$h"
    ;;
*) usage ;;
esac
