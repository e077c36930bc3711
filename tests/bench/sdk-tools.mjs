// The five tools of mcp-sandboxd as the SDK baselines of `make bench`
// (scripts/bench.sh) register them: tests/bench/sdk-server.mjs (the v1 SDK,
// @modelcontextprotocol/sdk) and tests/bench/sdk2-server.mjs (the v2 SDK,
// @modelcontextprotocol/server). Their titles, descriptions, input/output
// schemas and annotations in short, so a tools/list answer carries bytes of
// the same kind (fewer). The schemas are zod raw shapes, which both SDKs'
// McpServer.registerTool take (v2 wraps them in z.object itself).
//
//   registerTools(server)  registers the five on an McpServer; returns it
//
// The tool handlers are never called by the benchmark; they answer a fixed
// result.

import * as z from 'zod/v4';

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

export function registerTools(server) {
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
