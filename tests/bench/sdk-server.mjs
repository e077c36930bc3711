// The official MCP TypeScript SDK's streamable HTTP server, as the baseline
// for `make bench` (scripts/bench.sh): the same five tools as mcp-sandboxd,
// with their titles, descriptions, input/output schemas and annotations in
// short, so a tools/list answer carries bytes of the same kind (fewer).
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
// The tool handlers are never called by the benchmark; they answer a fixed
// result.

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import * as z from 'zod/v4';

const PORT = Number(process.argv[2] || 0);

// The daemon's texts (default limits), copied so the payloads match.
const COMMON =
  'Each call runs in a fresh, isolated container with no network access; the working directory /tmp ' +
  'is writable and discarded afterwards. Returns stdout, stderr, the exit code and a status (ok, error, ' +
  'timeout, oom, output_limit, cancelled). Default limits: 30000 ms, 512 MiB memory (at most 300000 ms, ' +
  '2048 MiB); output kept up to 1048576 bytes.';

const outputSchema = {
  status: z.enum(['ok', 'error', 'timeout', 'oom', 'output_limit', 'cancelled']),
  exit_code: z.number().int().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  duration_ms: z.number(),
  truncated: z.boolean(),
  language: z.enum(['python', 'javascript']),
  message: z.string().optional(),
};

const annotations = (title) => ({
  title,
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: false,
});

const result = (language) => {
  const structuredContent = {
    status: 'error',
    exit_code: null,
    stdout: '',
    stderr: '',
    duration_ms: 0,
    truncated: false,
    language,
    message: 'this server only answers tools/list for the benchmark; it runs no code',
  };
  return { content: [{ type: 'text', text: structuredContent.message }], structuredContent, isError: true };
};

function getServer() {
  const server = new McpServer({ name: 'sdk-baseline', version: '1.0.0' }, { capabilities: { logging: {} } });
  server.registerTool(
    'run_python_code',
    {
      title: 'Run Python code',
      description:
        'Run Python 3 code and return its output. Print what you want to see. numpy, pandas, scipy, sympy, ' +
        'matplotlib (Agg backend) and requests are installed. ' +
        COMMON,
      inputSchema: { code: z.string().describe('Python 3 source to run as the main program.') },
      outputSchema,
      annotations: annotations('Run Python code'),
    },
    async () => result('python'),
  );
  server.registerTool(
    'run_js_code',
    {
      title: 'Run JavaScript code',
      description:
        "Run JavaScript with Node.js and return its output. Use console.log to print; CommonJS require and ES module import of Node's built-in modules both work. " +
        COMMON,
      inputSchema: {
        code: z.string().describe('JavaScript (Node.js) source to run as the main module; CommonJS or ES module syntax.'),
      },
      outputSchema,
      annotations: annotations('Run JavaScript code'),
    },
    async () => result('javascript'),
  );
  server.registerTool(
    'execute_code',
    {
      title: 'Execute code',
      description:
        "Run Python or JavaScript code with optional stdin and per-call time and memory limits (capped by the server's maximums). " +
        COMMON,
      inputSchema: {
        language: z.enum(['python', 'javascript']).describe('Language of the code.'),
        code: z.string().describe('Source to run as the main program.'),
        stdin: z.string().optional().describe('Text given to the program on standard input (then end of file).'),
        timeout_ms: z
          .number()
          .int()
          .min(1)
          .optional()
          .describe("Wall-clock limit in milliseconds; capped by the server's maximum."),
        memory_mb: z.number().int().min(16).optional().describe("Memory limit in MiB; capped by the server's maximum."),
      },
      outputSchema,
      annotations: annotations('Execute code'),
    },
    async ({ language }) => result(language),
  );
  server.registerTool(
    'validate_code',
    {
      title: 'Check code for syntax errors',
      description:
        "Check Python or JavaScript source for syntax errors without running it, parsed exactly as a run would parse it: Python's compile(); for JavaScript the CommonJS parse, or an ES module's when the code uses import or export. Returns valid, and otherwise the first error with its message and its 1-based line and column.",
      inputSchema: {
        language: z.enum(['python', 'javascript']).describe('Language of the code.'),
        code: z.string().describe('Source to check, as it would be given to execute_code.'),
      },
      outputSchema: {
        valid: z.boolean(),
        language: z.enum(['python', 'javascript']),
        error: z.object({ message: z.string(), line: z.number().int().nullable(), column: z.number().int().nullable() }).nullable(),
        duration_ms: z.number(),
      },
      annotations: { ...annotations('Check code for syntax errors'), readOnlyHint: true },
    },
    async ({ language }) => result(language),
  );
  server.registerTool(
    'list_languages',
    {
      title: 'List languages and sandbox facts',
      description:
        'List the languages this server runs and what a program can count on: for each, its name and aliases, the tools that take it, its image, its compile and run commands, the version and notable installed packages, whether it has a network, and the warm pool size; plus the limits and features.',
      inputSchema: {},
      outputSchema: {
        languages: z.array(z.object({ language: z.string(), aliases: z.array(z.string()), version: z.string().nullable() })),
        limits: z.record(z.string(), z.number()),
        features: z.array(z.string()),
      },
      annotations: { ...annotations('List languages and sandbox facts'), readOnlyHint: true },
    },
    async () => result('python'),
  );
  return server;
}

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
