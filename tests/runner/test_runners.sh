#!/usr/bin/env bash
# Host tests of the in-container runners: pipes framed requests into
# `python3 -u -c <runner.py>` and `node -e <runner.js>` (each in a fresh temp
# dir) and checks output, exit status and the completion record. The cases
# live in test_runners.py (stdlib Python). PYTHON=/NODE= pick interpreters.
# Ends with "runner: N passed, M failed"; exits non-zero on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec "${PYTHON:-python3}" "$here/test_runners.py" "$@"
