#!/usr/bin/env bash
# `make valgrind`: memcheck over the unit tests and a short stdio session of
# the daemon.
#
#   scripts/valgrind.sh [UNIT_TEST_BINARY...]
#
# 1. Each binary runs under valgrind; any memory error or definite/indirect
#    leak fails it.
# 2. build/mcp-sandboxd (DAEMON=...) runs under valgrind with no engine
#    (--engine unix:///nonexistent.sock) and a 2048-byte message cap. A node
#    script plays the client: initialize, notifications/initialized, ping,
#    tools/list, a tools/call of run_python_code (which fails fast with an
#    engine error result), a malformed line, a 5000-byte line, a last ping,
#    then end of input. It checks one JSON reply per request id, the error
#    replies with a null id, that the tools/call result has isError true
#    and names the socket, and that the daemon exits 0 with no valgrind
#    errors or leaks.
#
# Environment: DAEMON (build/mcp-sandboxd), VALGRIND_TIMEOUT (seconds per
# binary, 120). Prints "valgrind: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

DAEMON=${DAEMON:-build/mcp-sandboxd}
VALGRIND_TIMEOUT=${VALGRIND_TIMEOUT:-120}
# shellcheck disable=SC2054 # the commas belong to the flags
VG=(valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect
    --track-fds=no -q)

for tool in valgrind node; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "valgrind: $tool is not installed (scripts/deps.sh --test)" >&2
        echo "valgrind: 0 passed, 1 failed"
        exit 1
    fi
done

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

for bin in "$@"; do
    name=$(basename "$bin")
    t0=$(date +%s)
    timeout -k 5 "$VALGRIND_TIMEOUT" "${VG[@]}" --log-file="$TMP/$name.vg" "$bin" \
        >"$TMP/$name.out" 2>&1
    rc=$?
    t1=$(date +%s)
    if [ $rc -eq 0 ] && [ ! -s "$TMP/$name.vg" ]; then
        pass=$((pass + 1))
        echo "valgrind: $name ok ($((t1 - t0))s)"
    else
        fail=$((fail + 1))
        case $rc in
        99) why="memory errors or leaks" ;;
        124 | 137) why="timed out after ${VALGRIND_TIMEOUT}s" ;;
        *) why="exit status $rc" ;;
        esac
        echo "valgrind: $name FAILED ($why)"
        sed 's/^/    /' "$TMP/$name.vg"
        tail -n 20 "$TMP/$name.out" | sed 's/^/    | /'
    fi
done

# ---- the daemon over stdio -------------------------------------------------
cat >"$TMP/session.js" <<'EOF'
'use strict';
// Plays an MCP client against the daemon under valgrind; exits non-zero
// with a reason when a reply is missing or wrong.
const { spawn } = require('child_process');
const [vgArgs, daemon, vgLog, errLog] = [JSON.parse(process.argv[2]), ...process.argv.slice(3)];
const fs = require('fs');

const child = spawn(vgArgs[0], [...vgArgs.slice(1), `--log-file=${vgLog}`, daemon,
    '--engine', 'unix:///nonexistent.sock', '--max-message-bytes', '2048',
    '--max-code-bytes', '1024', '--log-level', 'debug'],
    { stdio: ['pipe', 'pipe', fs.openSync(errLog, 'w')] });

const problems = [];
const replies = [];
let pending = '';
let waiter = null;

child.stdout.setEncoding('utf8');
child.stdout.on('data', (d) => {
    pending += d;
    let nl;
    while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        let msg;
        try {
            msg = JSON.parse(line);
        } catch (e) {
            problems.push(`stdout line is not JSON: ${line.slice(0, 200)}`);
            continue;
        }
        if (!msg || typeof msg !== 'object' || Array.isArray(msg) || msg.jsonrpc !== '2.0')
            problems.push(`not a JSON-RPC 2.0 message: ${line.slice(0, 200)}`);
        replies.push(msg);
        if (waiter) waiter();
    }
});

const send = (obj) => child.stdin.write((typeof obj === 'string' ? obj : JSON.stringify(obj)) + '\n');

// Resolves when pred(replies) holds, or after ms with false.
function until(pred, ms) {
    return new Promise((resolve) => {
        const timer = setTimeout(() => { waiter = null; resolve(false); }, ms);
        waiter = () => { if (pred()) { clearTimeout(timer); waiter = null; resolve(true); } };
        waiter();
    });
}
const byId = (id) => replies.filter((r) => r.id === id);
const nullIdErrors = () => replies.filter((r) => r.id === null && r.error);

(async () => {
    const exited = new Promise((resolve) => child.on('exit', (code, sig) => resolve({ code, sig })));
    send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
        protocolVersion: '2025-06-18', capabilities: {},
        clientInfo: { name: 'valgrind.sh', version: '0' } } });
    if (!(await until(() => byId(1).length > 0, 60000)))
        problems.push('no answer to initialize within 60s');
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 2, method: 'ping' });
    send({ jsonrpc: '2.0', id: 3, method: 'tools/list' });
    send({ jsonrpc: '2.0', id: 4, method: 'tools/call',
        params: { name: 'run_python_code', arguments: { code: 'print(1)' } } });
    send('{"jsonrpc":"2.0","id":5,"method":');                        // malformed
    send(JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'ping',
        params: { pad: 'x'.repeat(5000) } }));                        // over the cap
    send({ jsonrpc: '2.0', id: 7, method: 'ping' });                 // still served
    await until(() => [1, 2, 3, 4, 7].every((id) => byId(id).length > 0) &&
        nullIdErrors().length >= 2, 90000);
    child.stdin.end();
    const timer = setTimeout(() => { problems.push('no exit 60s after end of input'); child.kill('SIGKILL'); }, 60000);
    const { code, sig } = await exited;
    clearTimeout(timer);

    for (const id of [1, 2, 3, 4, 7]) {
        const n = byId(id).length;
        if (n !== 1) problems.push(`expected one reply to id ${id}, got ${n}`);
    }
    for (const id of [5, 6])
        if (byId(id).length) problems.push(`id ${id} could not be read, but a reply carries it`);
    const init = byId(1)[0];
    if (init && !(init.result && init.result.protocolVersion && init.result.serverInfo &&
        init.result.capabilities && init.result.capabilities.tools))
        problems.push(`initialize result is incomplete: ${JSON.stringify(init)}`);
    const ping = byId(2)[0];
    if (ping && !(ping.result && Object.keys(ping.result).length === 0))
        problems.push(`ping should answer {}: ${JSON.stringify(ping)}`);
    const list = byId(3)[0];
    if (list && !(list.result && Array.isArray(list.result.tools) &&
        list.result.tools.some((t) => t.name === 'run_python_code')))
        problems.push(`tools/list lacks run_python_code: ${JSON.stringify(list).slice(0, 300)}`);
    const call = byId(4)[0];
    if (call && !(call.result && call.result.isError === true &&
        Array.isArray(call.result.content) && JSON.stringify(call.result).includes('nonexistent.sock')))
        problems.push(`tools/call should be an isError result naming the socket: ${JSON.stringify(call).slice(0, 500)}`);
    const codes = nullIdErrors().map((r) => r.error.code).sort();
    if (JSON.stringify(codes) !== JSON.stringify([-32700, -32600].sort()))
        problems.push(`expected a -32700 and a -32600 error with a null id, got ${JSON.stringify(codes)}`);
    const extra = replies.filter((r) => ![1, 2, 3, 4, 7, null].includes(r.id));
    if (extra.length) problems.push(`unexpected replies: ${JSON.stringify(extra).slice(0, 300)}`);
    if (code === 99) problems.push('valgrind reported errors or leaks');
    else if (code !== 0) problems.push(`daemon exited with ${code === null ? 'signal ' + sig : 'status ' + code}`);

    if (problems.length) {
        console.log(problems.map((p) => '  ' + p).join('\n'));
        process.exit(1);
    }
    console.log(`  ${replies.length} replies, all as expected`);
})();
EOF

if [ ! -x "$DAEMON" ]; then
    echo "valgrind: $DAEMON is missing (make all)"
    fail=$((fail + 1))
else
    t0=$(date +%s)
    vg_json=$(printf '%s\n' "${VG[@]}" | node -e \
        'console.log(JSON.stringify(require("fs").readFileSync(0,"utf8").trim().split("\n")))')
    timeout -k 5 240 node "$TMP/session.js" "$vg_json" "$DAEMON" "$TMP/daemon.vg" \
        "$TMP/daemon.stderr" >"$TMP/session.out" 2>&1
    rc=$?
    t1=$(date +%s)
    if [ $rc -eq 0 ] && [ ! -s "$TMP/daemon.vg" ]; then
        pass=$((pass + 1))
        echo "valgrind: mcp-sandboxd stdio session ok ($((t1 - t0))s;$(cat "$TMP/session.out"))"
    else
        fail=$((fail + 1))
        echo "valgrind: mcp-sandboxd stdio session FAILED"
        cat "$TMP/session.out"
        sed 's/^/    /' "$TMP/daemon.vg"
        echo "  daemon stderr (last 20 lines):"
        tail -n 20 "$TMP/daemon.stderr" | sed 's/^/    | /'
    fi
fi

echo "valgrind: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
