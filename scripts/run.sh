#!/usr/bin/env bash
# `make run`: installs what is missing, starts an engine when none answers,
# builds the images and the daemon, then serves MCP over HTTP on
# 127.0.0.1:8080 (MCPSANDBOXD_HTTP=HOST:PORT to change it). Extra arguments
# go to the daemon, e.g. `make run ARGS="--pass-through-env API_KEY"`.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh --engines >&2
scripts/engine.sh ensure >&2
sock=$(scripts/engine.sh discover)
make -s all >&2
# The images of the languages enabled (MCPSANDBOXD_LANGUAGES; default all).
DOCKER_HOST="unix://$sock" scripts/images.sh >&2

listen=${MCPSANDBOXD_HTTP:-127.0.0.1:8080}
bin="$PWD/build/mcp-sandboxd"
url="http://$listen/mcp"
cat >&2 <<MSG

mcp-sandboxd is ready; engine: unix://$sock

Streamable HTTP endpoint: $url
Legacy HTTP+SSE endpoint: http://$listen/sse
Health:                   http://$listen/healthz

Connect a client that speaks streamable HTTP (Claude Code, VS Code, Cursor,
the SDKs' StreamableHTTPClientTransport):

  {
    "mcpServers": {
      "sandbox": { "type": "http", "url": "$url" }
    }
  }

or, from a shell:  claude mcp add --transport http sandbox $url

For a local stdio client, configure the binary instead of the URL:

  { "mcpServers": { "sandbox": { "command": "$bin",
                                 "args": ["--engine", "unix://$sock"] } } }

Serving until Ctrl-C.
MSG
exec "$bin" --engine "unix://$sock" --http "$listen" "$@"
