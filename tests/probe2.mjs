import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
const tr = new StdioClientTransport({ command: '/tmp/mcpsbx-bin/mcp-sandboxd', args: ['--engine','unix:///run/podman/podman.sock','--log-level','debug'], stderr: 'pipe' });
let err=''; tr.stderr.on('data', c => err += c);
const c = new Client({ name: 'probe', version: '1' });
await c.connect(tr); await c.listTools();
const codes = process.argv.slice(2);
for (const code of codes) { const r = await c.callTool({name:'run_js_code', arguments:{code}}); console.log(JSON.stringify(r.structuredContent)); }
await tr._process.stdin.end(); await new Promise(r => tr._process.once('exit', r));
console.log(err);
