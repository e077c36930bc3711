#!/usr/bin/env bash
# Mechanical gates (`make lint`, `make format-check`).
#
#   scripts/lint.sh [all]     every check below
#   scripts/lint.sh format    only the clang-format check
#   scripts/lint.sh layering  only the layering check (tests/lint runs it on
#                             trees of its own)
#   scripts/lint.sh paths     only the check of paths named in comments
#
# Checks: format (clang-format), cppcheck, clang-tidy (.clang-tidy), banned
# functions, shellcheck, layering (the LAYERS table below), paths named in
# comments, the systemd unit (systemd-analyze verify). A check whose
# tool is missing is skipped with a note, except when CI is set: there a
# missing tool fails the check. Exit status is non-zero when any check fails.
#
# Environment: CLANG_FORMAT, CLANG_TIDY, CPPCHECK, SHELLCHECK name the tools;
# LINT_JOBS (default 2) is how many files clang-tidy runs at once.
set -uo pipefail
shopt -s nullglob globstar
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD

CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
CLANG_TIDY=${CLANG_TIDY:-clang-tidy}
CPPCHECK=${CPPCHECK:-cppcheck}
SHELLCHECK=${SHELLCHECK:-shellcheck}
LINT_JOBS=${LINT_JOBS:-2}

mode=${1:-all}
case "$mode" in
all | format | layering | paths) ;;
*)
    echo "usage: $0 [all|format|layering|paths]" >&2
    exit 2
    ;;
esac

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

passed=0
failed=0
skipped=()
failed_names=()

# Returns 0 when the tool exists; otherwise 77 (skip) outside CI, 1 in CI.
need() {
    if command -v "$1" >/dev/null 2>&1; then
        return 0
    fi
    if [ -n "${CI:-}" ]; then
        echo "  $1 is not installed (required when CI is set)"
        return 1
    fi
    echo "  $1 is not installed: skipped (it is required when CI is set)"
    return 77
}

# run_check NAME FUNCTION: runs FUNCTION, counts the result.
run_check() {
    local name=$1 fn=$2 rc t0 t1
    echo "lint: $name"
    t0=$(date +%s)
    "$fn"
    rc=$?
    t1=$(date +%s)
    case $rc in
    0)
        passed=$((passed + 1))
        echo "lint: $name ok ($((t1 - t0))s)"
        ;;
    77)
        skipped+=("$name")
        ;;
    *)
        failed=$((failed + 1))
        failed_names+=("$name")
        echo "lint: $name FAILED"
        ;;
    esac
}

C_SOURCES=(src/**/*.c)
C_HEADERS=(src/**/*.h)
TEST_SOURCES=(tests/unit/**/*.[ch] tests/fake_engine/*.[ch] tests/fake_backend/*.[ch] tests/fake_program/*.[ch] tests/fake_kube/*.[ch] tests/backend_conformance/*.[ch] tests/fuzz/*.[ch])

# ---- (a) formatting -------------------------------------------------------
check_format() {
    need "$CLANG_FORMAT" || return
    local files=("${C_SOURCES[@]}" "${C_HEADERS[@]}" "${TEST_SOURCES[@]}")
    if "$CLANG_FORMAT" --dry-run -Werror "${files[@]}" >"$TMP/fmt" 2>&1; then
        return 0
    fi
    if ! grep -q 'clang-format-violations' "$TMP/fmt"; then
        sed 's/^/  /' "$TMP/fmt" # clang-format itself failed
        return 1
    fi
    local f
    for f in $(grep -oE '^[^:]+:[0-9]+:[0-9]+: error' "$TMP/fmt" | cut -d: -f1 | uniq); do
        echo "  $f is not clang-formatted (run: make format), first difference:"
        grep -m1 -A2 "^$f:" "$TMP/fmt" | sed 's/^/    /'
    done
    return 1
}

# ---- (b) cppcheck -----------------------------------------------------------
# System headers are left out on purpose (missingIncludeSystem): cppcheck's
# own library models (--library=posix) describe libc better than parsing
# glibc does, and it stays fast. False positives go in .cppcheck-suppressions
# (with a reason) or inline as `// cppcheck-suppress id`.
check_cppcheck() {
    need "$CPPCHECK" || return
    "$CPPCHECK" --enable=warning,performance,portability --error-exitcode=1 --inline-suppr -q \
        --std=c11 --library=posix -D_GNU_SOURCE '-DMCPSBX_VERSION="lint"' -Isrc -Ibuild/gen \
        --suppress=missingIncludeSystem --suppressions-list=.cppcheck-suppressions \
        --template='  {file}:{line}:{column}: {severity}: {message} [{id}]' \
        "${C_SOURCES[@]}" tests/fuzz/*.c
}

# ---- (c) clang-tidy ---------------------------------------------------------
# Every diagnostic fails the check unless a line of .clang-tidy-suppressions
# matches it: "<check> <file> <text>", where text must occur on the flagged
# source line (so entries survive code moving up and down).
tidy_one() {
    # $1 = source file; the remaining arguments are compiler flags.
    local f=$1
    shift
    local model=(-include scripts/lint/analyzer-model.h)
    # err.c defines the functions the model turns into macros.
    [ "$f" = src/base/err.c ] && model=()
    "$CLANG_TIDY" -quiet --warnings-as-errors='*' "$f" -- "$@" "${model[@]}" \
        >"$TMP/tidy.$(basename "$f").out" 2>&1
    echo $? >"$TMP/tidy.$(basename "$f").rc"
}
export -f tidy_one
export CLANG_TIDY TMP

check_tidy() {
    need "$CLANG_TIDY" || return
    local pkg_cflags
    if ! pkg_cflags=$(pkg-config --cflags libcurl json-c libmicrohttpd nettle openssl yaml-0.1); then
        echo "  pkg-config cannot find libcurl, json-c and libmicrohttpd (scripts/deps.sh)"
        return 1
    fi
    local flags=(-std=gnu11 -D_GNU_SOURCE '-DMCPSBX_VERSION="lint"' -Isrc -Ibuild/gen)
    # shellcheck disable=SC2206 # pkg-config output is a list of words
    flags+=($pkg_cflags)
    printf '%s\0' "${C_SOURCES[@]}" |
        xargs -0 -P "$LINT_JOBS" -I{} bash -c 'tidy_one "$@"' _ {} "${flags[@]}"

    local f rc tool_failed=0
    for f in "${C_SOURCES[@]}"; do
        rc=$(cat "$TMP/tidy.$(basename "$f").rc" 2>/dev/null || echo 1)
        cat "$TMP/tidy.$(basename "$f").out"
        # Non-zero with no diagnostic at all means clang-tidy itself failed.
        if [ "$rc" != 0 ] &&
            ! grep -qE '(warning|error): .*\[[^]]+\]$' "$TMP/tidy.$(basename "$f").out"; then
            echo "  clang-tidy failed on $f (exit $rc)"
            tool_failed=1
        fi
    done >"$TMP/tidy.all"

    # Reduce to unique diagnostics: file:line:col: kind: message [checks].
    grep -E '^[^ ].*(warning|error): .*\[[^]]+\]$' "$TMP/tidy.all" | sed "s|^$ROOT/||" |
        sort -u >"$TMP/tidy.diags"
    local bad=0 line file lno check text sup_check sup_file sup_text matched
    while IFS= read -r line; do
        check=${line##*[}
        check=${check%]}
        check=${check%,-warnings-as-errors}
        file=$(printf '%s' "$line" | cut -d: -f1)
        lno=$(printf '%s' "$line" | cut -d: -f2)
        text=
        if [ -f "$file" ] && [[ $lno =~ ^[0-9]+$ ]]; then
            text=$(sed -n "${lno}p" "$file")
        fi
        matched=0
        while read -r sup_check sup_file sup_text; do
            [ -z "$sup_check" ] && continue
            [[ $sup_check == \#* ]] && continue
            if [ "$sup_check" = "$check" ] && [ "$sup_file" = "$file" ] && [ -n "$sup_text" ] &&
                [[ $text == *"$sup_text"* ]]; then
                matched=1
                echo "$sup_check $sup_file $sup_text" >>"$TMP/tidy.used"
                break
            fi
        done <.clang-tidy-suppressions
        if [ $matched = 0 ]; then
            echo "  $line"
            bad=1
        fi
    done <"$TMP/tidy.diags"
    if [ $bad = 1 ]; then
        if [ -n "${LINT_VERBOSE:-}" ]; then
            sed 's/^/    /' "$TMP/tidy.all"
        else
            echo "  (rerun with LINT_VERBOSE=1 for the full output, with the analyzer's paths)"
        fi
    fi
    # Entries that matched nothing are stale: say so, but do not fail (the
    # code they were about may simply have been fixed).
    while read -r sup_check sup_file sup_text; do
        [ -z "$sup_check" ] && continue
        [[ $sup_check == \#* ]] && continue
        if ! grep -qxF "$sup_check $sup_file $sup_text" "$TMP/tidy.used" 2>/dev/null; then
            echo "  note: stale entry in .clang-tidy-suppressions: $sup_check $sup_file $sup_text"
        fi
    done <.clang-tidy-suppressions
    [ $tool_failed = 0 ] && [ $bad = 0 ]
}

# ---- (d) banned functions ---------------------------------------------------
# Comments, string and character literals are blanked first, so prose such
# as "file system (...)" does not count. snprintf/vsnprintf are allowed.
BANNED='sprintf|vsprintf|strcpy|strcat|gets|system|strtok'
check_banned() {
    need perl || return
    # shellcheck disable=SC2016 # $-variables belong to perl
    perl -e '
        my $bad = 0;
        for my $f (@ARGV) {
            open(my $fh, "<", $f) or die "$f: $!";
            local $/;
            my $s = <$fh>;
            # Blank comments and literals, keeping newlines for line numbers.
            $s =~ s{(/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\x27(?:\\.|[^\x27\\\n])*\x27)}
                   {my $m = $1; $m =~ s/[^\n]/ /g; $m}gse;
            my $n = 0;
            for my $line (split /\n/, $s, -1) {
                $n++;
                while ($line =~ /(?<![\w.>])('"$BANNED"')\s*\(/g) {
                    print "  $f:$n: $1() is banned (use snprintf, buf_addf, memcpy with a length, strtok_r)\n";
                    $bad = 1;
                }
            }
        }
        exit $bad;
    ' "${C_SOURCES[@]}" "${C_HEADERS[@]}"
}

# ---- (e) shellcheck ---------------------------------------------------------
check_shellcheck() {
    need "$SHELLCHECK" || return
    local files=(scripts/*.sh) f
    for f in tests/**/*.sh; do
        [[ $f == */node_modules/* ]] || files+=("$f")
    done
    [ -f .ci/run ] && files+=(.ci/run)
    [ ${#files[@]} -eq 0 ] && return 0
    "$SHELLCHECK" -x "${files[@]}"
}

# ---- systemd unit ------------------------------------------------------------
# systemd-analyze verify parses the unit as systemd would; the binary need
# not be installed for that, so the check points ExecStart at /bin/true.
check_systemd_unit() {
    need systemd-analyze || return
    local unit=$TMP/mcp-sandboxd.service
    sed 's#/usr/local/bin/mcp-sandboxd#/bin/true#' config/mcp-sandboxd.service >"$unit"
    local out
    out=$(systemd-analyze verify "$unit" 2>&1)
    [ -z "$out" ] && return 0
    printf '%s\n' "$out" | sed 's/^/  /'
    return 1
}

# ---- (f) layering -----------------------------------------------------------
# The folders of src/ are the layers, lowest first; a file may include
# headers of its own folder's layer or a lower one, so dependencies point
# down only. Includes name headers by their path under src/ (the folder is
# in the include). A folder not in this table fails the check.
LAYERS=(base backend egress sandbox tools mcp transport)

# layer_of PATH (under src/, e.g. "mcp/mcp.h" or "main.c"): its layer number,
# or nothing when its folder is not a layer. The daemon's main.c, the only
# file directly in src/, is above all; any other file there has no layer
# (a module, or a program such as tools/tooldefs_check.c, goes in the folder
# of what it is about).
layer_of() {
    local top=${1%%/*} i
    [ "$1" = main.c ] && { echo "${#LAYERS[@]}"; return; }
    [[ $1 != */* ]] && return
    for i in "${!LAYERS[@]}"; do
        [ "${LAYERS[$i]}" = "$top" ] && { echo "$i"; return; }
    done
}

check_layering() {
    local f rel dep lno inc mine theirs bad=0
    for f in "${C_SOURCES[@]}" "${C_HEADERS[@]}"; do
        rel=${f#src/}
        mine=$(layer_of "$rel")
        if [ -z "$mine" ] && [[ $rel != */* ]]; then
            echo "  $f: only main.c sits directly in src/; a file goes in its layer's folder"
            bad=1
            continue
        elif [ -z "$mine" ]; then
            echo "  $f: folder '${rel%%/*}' is not a layer (LAYERS in scripts/lint.sh)"
            bad=1
            continue
        fi
        while IFS=: read -r lno inc; do
            dep=$(printf '%s' "$inc" | sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^">]+)[">].*/\1/')
            # Only this project's headers: quoted, or angled but found in src/.
            case "$inc" in
            *'<'*) [ -f "src/$dep" ] || continue ;;
            esac
            if [ ! -f "src/$dep" ]; then
                echo "  $f:$lno: includes \"$dep\", which is not a path under src/"
                bad=1
                continue
            fi
            # A backend's implementation (backend/NAME/) is its own: only
            # its folder and backends.c, which picks one, see its headers.
            if [[ $dep == backend/*/* ]] && [ "$rel" != backend/backends.c ] &&
                [[ $rel != "${dep%/*}"/* ]]; then
                echo "  $f:$lno: includes $dep: only ${dep%/*}/ and backend/backends.c" \
                    "may include a backend implementation's headers"
                bad=1
                continue
            fi
            theirs=$(layer_of "$dep")
            # The layers above the sandbox see it through its facade.
            if [[ $dep == sandbox/* ]] && [ "$dep" != sandbox/sandbox.h ] &&
                [ -n "$theirs" ] && [ "$mine" -gt "$theirs" ]; then
                echo "  $f:$lno: includes $dep: above the sandbox layer only" \
                    "sandbox/sandbox.h, its facade, may be included"
                bad=1
                continue
            fi
            if [ -z "$theirs" ] || [ "$theirs" -gt "$mine" ]; then
                echo "  $f:$lno: ${rel%%/*} (layer $mine) must not include $dep" \
                    "(layer ${theirs:-none}): dependencies point down only"
                bad=1
            fi
        done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$f")
    done
    check_fake_backend_only || bad=1
    return $bad
}

# The unit tests of these layers reach sandboxes through the tests' fake
# backend alone, never through an implementation's headers: what they
# prove must hold for any backend.
FAKE_BACKEND_LAYERS=(sandbox tools mcp transport)

check_fake_backend_only() {
    local layer f lno inc bad=0
    for layer in "${FAKE_BACKEND_LAYERS[@]}"; do
        for f in tests/unit/"$layer"/**/*.[ch]; do
            [ -f "$f" ] || continue
            while IFS=: read -r lno inc; do
                echo "  $f:$lno: includes ${inc#*include }: the $layer tests use the fake" \
                    "backend (tests/fake_backend), not an implementation's headers"
                bad=1
            done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"backend/[^/"]+/' "$f")
        done
    done
    return $bad
}

# ---- paths named in comments -----------------------------------------------
# A comment (all of a Markdown file) that names src/..., tests/...,
# scripts/..., containers/... or config/... names something in the tree: a
# moved file leaves no stale pointer behind. A path with a placeholder
# (<layer>, *, …, ...) is a pattern and not checked; build/ is generated,
# and a path inside it is not read as one of the tree's. Comments are what follows
# // or sits in /* */ in C and JavaScript, -- in Lua, and # (at a line's
# start or after a space) in everything else.
PATH_ROOTS='src|tests|scripts|containers|config'
path_files() {
    local f
    for f in src/** tests/** scripts/** containers/** config/** Makefile README.md; do
        [ -f "$f" ] || continue
        case "$f" in
        */node_modules/* | tests/fuzz/corpus/* | *.json | *.png) continue ;;
        esac
        printf '%s\n' "$f"
    done
}

check_paths() {
    need perl || return
    # shellcheck disable=SC2016 # $-variables belong to perl
    path_files | perl -e '
        my $bad = 0;
        while (my $f = <STDIN>) {
            chomp $f;
            open(my $fh, "<", $f) or die "$f: $!";
            local $/;
            my $s = <$fh>;
            close $fh;
            next if $s =~ /\0/;
            my @comments; # [line, text]
            my $line_of = sub { 1 + (substr($s, 0, $_[0]) =~ tr/\n//) };
            if ($f =~ /\.md$/) {
                push @comments, [1, $s];
            } elsif ($f =~ /\.(c|h|js|mjs)$/) {
                while ($s =~ m{(/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\x27(?:\\.|[^\x27\\\n])*\x27)}gs) {
                    my ($m, $at) = ($1, $-[1]);
                    push @comments, [$line_of->($at), $m] if $m =~ m{^/[/*]};
                }
            } else {
                my $mark = $f =~ /\.lua$/ ? qr/--/ : qr/#/;
                my $n = 0;
                for my $l (split /\n/, $s, -1) {
                    $n++;
                    push @comments, [$n, $1] if $l =~ /(?:^|\s)$mark(.*)/;
                }
            }
            for my $c (@comments) {
                my ($first, $text) = @$c;
                my $n = 0;
                for my $l (split /\n/, $text, -1) {
                    while ($l =~ m{(?<![\w./\$%-])((?:'"$PATH_ROOTS"')/[\w./<>*\[\]{}\$%\xe2\x80\xa6+-]*)}g) {
                        my $p = $1;
                        $p =~ s/[.,:;+-]+$//;
                        next if $p =~ m{[<>*\[\]{}\$%]|\xe2\x80\xa6|\.\.\.};
                        next if -e $p;
                        print "  $f:", $first + $n, ": names $p, which is not in the tree\n";
                        $bad = 1;
                    }
                    $n++;
                }
            }
        }
        exit $bad;
    '
}

if [ "$mode" = layering ]; then
    run_check layering check_layering
elif [ "$mode" = paths ]; then
    run_check paths check_paths
else
    run_check format check_format
fi
if [ "$mode" = all ]; then
    run_check cppcheck check_cppcheck
    run_check clang-tidy check_tidy
    run_check banned-functions check_banned
    run_check shellcheck check_shellcheck
    run_check layering check_layering
    run_check paths check_paths
    run_check systemd-unit check_systemd_unit
fi

summary="lint: $passed passed, $failed failed"
[ ${#skipped[@]} -gt 0 ] && summary+=" (skipped, tool not installed: ${skipped[*]})"
[ "$failed" -gt 0 ] && echo "lint: failed checks: ${failed_names[*]}"
echo "$summary"
[ "$failed" -eq 0 ]
