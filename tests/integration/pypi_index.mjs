// A package index (PEP 503's simple API) on loopback, serving the wheels
// and source distributions pypi_index.py builds: what a real pip in an
// installer's sandbox resolves and downloads when no other Python index
// is reachable. Every request is recorded (method, path), so a test can
// tell what reached the index and what did not.

import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

function page(title, links) {
  const body = links.map(([href, text]) => `<a href="${href}">${text}</a><br/>`).join('\n');
  return `<!DOCTYPE html>\n<html><head><title>${title}</title></head><body>\n${body}\n</body></html>\n`;
}

/**
 * Builds the distributions into a fresh directory and serves them on
 * 127.0.0.1. Returns { port, dir, projects, requests, close() }:
 * projects maps a normalized project name to its files; requests lists
 * { method, path } as they came.
 */
export async function startIndex() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpsbx-pypi-'));
  const projects = JSON.parse(execFileSync('python3', [path.join(HERE, 'pypi_index.py'), dir], { encoding: 'utf8' }));
  const sums = {};
  for (const files of Object.values(projects))
    for (const f of files)
      sums[f] = crypto.createHash('sha256').update(fs.readFileSync(path.join(dir, 'files', f))).digest('hex');
  const requests = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://index.invalid');
    requests.push({ method: req.method, path: url.pathname });
    const parts = url.pathname.split('/').filter(Boolean);
    if (req.method !== 'GET') {
      res.writeHead(405).end();
    } else if (parts[0] === 'simple' && parts.length === 1) {
      res.setHeader('content-type', 'text/html');
      res.end(page('Simple index', Object.keys(projects).map((p) => [`${p}/`, p])));
    } else if (parts[0] === 'simple' && parts.length === 2 && projects[parts[1]]) {
      res.setHeader('content-type', 'text/html');
      res.end(page(`Links for ${parts[1]}`, projects[parts[1]].map((f) => [`../../files/${f}#sha256=${sums[f]}`, f])));
    } else if (parts[0] === 'files' && parts.length === 2 && sums[parts[1]]) {
      res.setHeader('content-type', 'application/octet-stream');
      fs.createReadStream(path.join(dir, 'files', parts[1])).pipe(res);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: server.address().port,
    dir,
    projects,
    requests,
    close: async () => {
      await new Promise((resolve) => server.close(resolve));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
