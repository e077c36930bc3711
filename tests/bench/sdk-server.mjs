// The official MCP TypeScript SDK's streamable HTTP server, as the baseline
// for `make bench` (scripts/bench.sh): the same five tools as mcp-sandboxd,
// with their titles, descriptions, input/output schemas and annotations in
// short (tests/bench/sdk-tools.mjs), so a tools/list answer carries bytes of
// the same kind (fewer).
//
//   node tests/bench/sdk-server.mjs [PORT]
//
// Built the way the SDK's own stateless example
// (examples/server/simpleStatelessStreamableHttp.js) is: createMcpExpressApp()
// (express.json() + localhost Host checks, like the daemon's Host checks),
// and a new McpServer + StreamableHTTPServerTransport per POST with
// sessionIdGenerator: undefined (stateless: no initialize needed, any
// Mcp-Session-Id ignored), plus enableJsonResponse: true so answers are plain
// JSON like the daemon's tools/list. Listens on 127.0.0.1:PORT (default 0, a
// free port) and prints exactly one line on stdout once ready:
//   listening 127.0.0.1:<port>

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';

import { registerTools } from './sdk-tools.mjs';

const PORT = Number(process.argv[2] || 0);

const getServer = () =>
  registerTools(new McpServer({ name: 'sdk-baseline', version: '1.0.0' }, { capabilities: { logging: {} } }));

const app = createMcpExpressApp();

app.post('/mcp', async (req, res) => {
  const server = getServer();
  try {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    // Registered before handling so a fast answer cannot close first.
    res.on('close', () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  } catch (error) {
    console.error('sdk-server: error handling a request:', error);
    if (!res.headersSent) {
      res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null });
    }
  }
});

// Stateless: no standalone stream and no session to end (as in the example).
const notAllowed = (req, res) => {
  res.status(405).json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null });
};
app.get('/mcp', notAllowed);
app.delete('/mcp', notAllowed);

const httpServer = app.listen(PORT, '127.0.0.1', (error) => {
  if (error) {
    console.error(`sdk-server: cannot listen on 127.0.0.1:${PORT}: ${error.message}`);
    process.exit(1);
  }
  console.log(`listening 127.0.0.1:${httpServer.address().port}`);
});

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => process.exit(0));
}
