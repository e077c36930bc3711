#!/usr/bin/env bash
# Runs each cmocka unit-test binary; prints a plain summary line.
set -uo pipefail
pass=0
fail=0
for t in "$@"; do
    if "$t"; then
        pass=$((pass + 1))
    else
        echo "FAILED: $t" >&2
        fail=$((fail + 1))
    fi
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
