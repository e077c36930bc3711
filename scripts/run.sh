#!/usr/bin/env bash
# `make run`: installs what is missing, starts an engine when none answers,
# builds the images and the daemon, then serves MCP on stdio. Everything but
# the protocol goes to stderr: stdout belongs to the MCP client.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh --engines >&2
scripts/engine.sh ensure >&2
sock=$(scripts/engine.sh discover)
DOCKER_HOST="unix://$sock" scripts/images.sh >&2
make -s all >&2

bin="$PWD/build/mcp-sandboxd"
cat >&2 <<MSG

mcp-sandboxd is ready; engine: unix://$sock

To use it from an MCP client (Claude Desktop, VS Code, Cursor, the SDKs),
configure a stdio server like this:

  {
    "mcpServers": {
      "sandbox": {
        "command": "$bin",
        "args": ["--engine", "unix://$sock"]
      }
    }
  }

Now serving MCP on this terminal's stdin/stdout (one JSON-RPC message per
line); press Ctrl-D or Ctrl-C to stop.
MSG
exec "$bin" --engine "unix://$sock" "$@"
