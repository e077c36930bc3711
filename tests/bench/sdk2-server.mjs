// The official MCP TypeScript SDK v2's HTTP server (@modelcontextprotocol/server
// 2.x), as the anchor of the "modern" section of `make bench`
// (scripts/bench.sh): the same five tools as tests/bench/sdk-server.mjs (the
// v1 SDK's baseline), from tests/bench/sdk-tools.mjs.
//
//   node tests/bench/sdk2-server.mjs [PORT]
//
// Built the way the v2 SDK serves HTTP: createMcpHandler(factory), its
// stateless entry, with a fresh McpServer from the factory per request. It
// serves the 2026-07-28 wire (a request whose params._meta names
// io.modelcontextprotocol/protocolVersion, with the MCP-Protocol-Version and
// Mcp-Method headers; no initialize, no session) and, through its default
// legacy: 'stateless' fallback, the 2025 wire statelessly (any Mcp-Session-Id
// ignored; those answers come as SSE, the fallback's own transport default).
// responseMode stays 'auto': a tools/list answer is one JSON body. The
// handler is web-standard (fetch); @hono/node-server's getRequestListener
// mounts it on node:http (the adapter the v1 SDK's own StreamableHTTP
// transport uses; @modelcontextprotocol/node is not installed here), behind
// the Host and Origin checks the v2 SDK asks for in front of a bare handler
// (the daemon checks both too). Listens on 127.0.0.1:PORT (default 0, a free
// port) and prints exactly one line on stdout once ready:
//   listening 127.0.0.1:<port>

import { createServer } from 'node:http';

import { getRequestListener } from '@hono/node-server';
import {
  McpServer,
  createMcpHandler,
  hostHeaderValidationResponse,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  originValidationResponse,
} from '@modelcontextprotocol/server';

import { registerTools } from './sdk-tools.mjs';

const PORT = Number(process.argv[2] || 0);
const HOSTS = localhostAllowedHostnames();
const ORIGINS = localhostAllowedOrigins();

const handler = createMcpHandler(
  () => registerTools(new McpServer({ name: 'sdk2-baseline', version: '1.0.0' }, { capabilities: { logging: {} } })),
  { onerror: (e) => console.error('sdk2-server:', e?.message ?? e) },
);

const notFound = () =>
  Response.json({ jsonrpc: '2.0', error: { code: -32000, message: 'Not found' }, id: null }, { status: 404 });

async function serve(request) {
  if (new URL(request.url).pathname !== '/mcp') return notFound();
  const rejected = hostHeaderValidationResponse(request, HOSTS) ?? originValidationResponse(request, ORIGINS);
  if (rejected) return rejected;
  try {
    return await handler.fetch(request);
  } catch (error) {
    console.error('sdk2-server: error handling a request:', error);
    return Response.json({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null }, { status: 500 });
  }
}

const httpServer = createServer(getRequestListener(serve));
httpServer.on('error', (error) => {
  console.error(`sdk2-server: cannot listen on 127.0.0.1:${PORT}: ${error.message}`);
  process.exit(1);
});
httpServer.listen(PORT, '127.0.0.1', () => {
  console.log(`listening 127.0.0.1:${httpServer.address().port}`);
});

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => process.exit(0));
}
