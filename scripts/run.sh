#!/usr/bin/env bash
# `make run`: installs what is missing, starts an engine when none answers,
# builds the images and the daemon, then serves MCP over HTTP on
# 127.0.0.1:8080 (MCPSANDBOXD_HTTP=HOST:PORT to change it). Extra arguments
# go to the daemon, e.g. `make run ARGS="--pass-through-env API_KEY"`.
#
# Every request needs a bearer token: a random one is made at the first run
# in /run/mcp-sandboxd/auth-token (MCPSANDBOXD_AUTH_TOKEN_FILE=FILE for
# another file), mode 0600, kept until reboot and reused by later runs. The
# daemon reads it from that file (--auth-token-file): the token is never on
# a command line or in an environment. The client configurations printed
# at start carry it.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	printf 'make run: %s\n' "$*" >&2
	exit 1
}

# ensure_token FILE: makes FILE hold a new random token unless it holds one
# already. The token is written to a temporary file that mktemp creates
# with mode 0600, then linked to FILE, which therefore never exists with
# another mode or half written; of two runs at once, the first link wins
# and both use its token.
ensure_token() {
	local file=$1 dir tmp mode
	if [[ ! -e $file ]]; then
		dir=$(dirname "$file")
		(umask 022 && mkdir -p "$dir")
		tmp=$(mktemp "$dir/.auth-token.XXXXXX")
		# 32 random bytes as 64 hex digits.
		head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \n' >"$tmp" ||
			{ rm -f "$tmp"; die "cannot write a token to $tmp"; }
		ln "$tmp" "$file" 2>/dev/null || [[ -e $file ]] ||
			{ rm -f "$tmp"; die "cannot create the token file $file"; }
		rm -f "$tmp"
	fi
	[[ -f $file && -O $file ]] || die "$file is not a regular file of $(id -un)'s"
	mode=$(stat -c %a "$file")
	if ((8#$mode & 8#077)); then
		die "$file is open to other users (mode $mode): remove it for a new token, or chmod 600 it"
	fi
}

scripts/deps.sh --engines >&2
scripts/engine.sh ensure >&2
sock=$(scripts/engine.sh discover)
make -s all >&2
# The images of the languages enabled (MCPSANDBOXD_LANGUAGES; default all).
DOCKER_HOST="unix://$sock" scripts/images.sh >&2

listen=${MCPSANDBOXD_HTTP:-127.0.0.1:8080}
token_file=${MCPSANDBOXD_AUTH_TOKEN_FILE:-/run/mcp-sandboxd/auth-token}
ensure_token "$token_file"
token=$(<"$token_file")
token=${token//[[:space:]]/}
[[ -n $token ]] || die "$token_file is empty: remove it for a new token"
# The token as it goes inside a JSON string.
json_token=${token//\\/\\\\}
json_token=${json_token//\"/\\\"}
bin="$PWD/build/mcp-sandboxd"
url="http://$listen/mcp"
qfile=$(printf %q "$token_file")
# cat reads the text on its standard input: the token is on no command line.
cat >&2 <<MSG

mcp-sandboxd is ready; engine: unix://$sock

Streamable HTTP endpoint: $url
Legacy HTTP+SSE endpoint: http://$listen/sse
Health:                   http://$listen/healthz
Bearer token in:          $token_file (mode 0600; later runs reuse it)

Every request needs the header  Authorization: Bearer <token>.
Claude Code (.mcp.json) or Cursor (~/.cursor/mcp.json):

  {
    "mcpServers": {
      "sandbox": {
        "type": "http",
        "url": "$url",
        "headers": { "Authorization": "Bearer $json_token" }
      }
    }
  }

VS Code (.vscode/mcp.json):

  {
    "servers": {
      "sandbox": {
        "type": "http",
        "url": "$url",
        "headers": { "Authorization": "Bearer $json_token" }
      }
    }
  }

From a shell (bash or zsh; curl reads the header from a pipe, so the token
is not on its command line):

  curl -sS $url \\
    -H @<(printf 'Authorization: Bearer %s\n' "\$(cat $qfile)") \\
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'

For a local stdio client, configure the binary instead of the URL (no token:
the client that starts it is the only one it talks to):

  { "mcpServers": { "sandbox": { "command": "$bin",
                                 "args": ["--engine", "unix://$sock"] } } }

Serving until Ctrl-C.
MSG
exec "$bin" --engine "unix://$sock" --http "$listen" --auth-token-file "$token_file" "$@"
