// Integration tests for the egress gateway on a real engine, through the
// official SDK client over streamable HTTP. Upstreams are test servers on
// loopback (HTTP, and HTTPS under a test CA made here with openssl),
// reached under names the daemon pins to 127.0.0.1 (--egress-resolve) with
// loopback allowed explicitly (--egress-allow-cidr 127.0.0.0/8). The one
// request that leaves the machine goes to the public npm registry, whose
// address comes from npm's own configuration. A --secret is bound to
// allowed.test's plain-HTTP port and to a second HTTPS port of it, whose
// TLS the daemon terminates (its CA trusted in the sandbox through the
// trust variables; the test CA given as --egress-upstream-ca);
// other2.test is allowed but not bound.
//
//   node --test tests/integration/egress.test.mjs
//
// Environment: as stdio.test.mjs. One daemon for the whole file, under
// gVisor too (the engine script runs runsc with --host-uds=open).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import dns from 'node:dns/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
  CALL_TIMEOUT_MS, TEST_TIMEOUT_MS, withDaemon, HttpDaemon, preflight, checkRun, textOf,
  engineFilesContaining,
} from './lib.mjs';
import crypto from 'node:crypto';

// Total connections a run may make: low enough for one run to pass it.
const CONNS_TOTAL = 12;
// A --secret value bound to allowed.test's plain-HTTP port; its '/' is
// percent-encoded in a query.
const SECRET_NAME = 'MCPSBX_EGRESS_KEY';
const SECRET = `sk/test-${crypto.randomBytes(12).toString('hex')}`;

let d;
let c;
let dir;
let ca;
let httpPort;
let httpsPort;
let boundPort; // an HTTPS upstream bound to the --secret
let registryHost;
let registryAllow = []; // --egress-allow-cidr for the registry's address
let registryCa = ''; // the CAs npm here trusts for it
const servers = [];
const seen = []; // what the upstreams received: {server, method, url, host, auth, body}

function makeCerts() {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpsbx-egress-'));
  const f = (n) => path.join(dir, n);
  const ossl = (...a) => execFileSync('openssl', a, { stdio: ['ignore', 'ignore', 'pipe'] });
  ossl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=mcpsbx egress test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign');
  ossl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', f('srv.key'), '-out', f('srv.csr'), '-subj', '/CN=allowed.test');
  fs.writeFileSync(f('ext'), 'subjectAltName=DNS:allowed.test,DNS:other.test\n');
  ossl('x509', '-req', '-in', f('srv.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'),
    '-CAcreateserial', '-out', f('srv.pem'), '-days', '2', '-extfile', f('ext'));
  ca = fs.readFileSync(f('ca.pem'), 'utf8');
  return { key: fs.readFileSync(f('srv.key')), cert: fs.readFileSync(f('srv.pem')) };
}

function handler(server) {
  return (req, res) => {
    let body = '';
    req.on('data', (b) => (body += b));
    req.on('end', () => {
      const got = { server, method: req.method, url: req.url, host: req.headers.host, auth: req.headers.authorization ?? null, body };
      seen.push(got);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(got));
    });
  };
}

const listen = (s) => {
  servers.push(s);
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s.address().port)));
};

async function client(name) {
  const transport = new StreamableHTTPClientTransport(new URL(d.url));
  const cl = new Client({ name, version: '1.0.0' });
  await cl.connect(transport, { timeout: 30_000 });
  return {
    call: (tool, args) => cl.callTool({ name: tool, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS }),
    close: async () => {
      await transport.terminateSession().catch(() => {});
      await cl.close().catch(() => {});
    },
  };
}

/** The daemon's options, for a given set of upstream ports. */
function egressArgs() {
  const up = `allowed.test:${httpPort},allowed.test:${httpsPort},allowed.test:${boundPort}`;
  return [
    '--languages', 'python,javascript,bash',
    '--egress', `python=${up},private.test:${httpPort},169.254.169.254:80,other2.test:${httpPort}`,
    '--egress', `javascript=${up},${registryHost}`,
    '--egress', `bash=${up}`,
    '--egress-resolve', 'allowed.test=127.0.0.1',
    '--egress-resolve', 'other.test=127.0.0.1',
    '--egress-resolve', 'private.test=10.1.2.3',
    '--egress-resolve', 'other2.test=127.0.0.1',
    '--secret', `${SECRET_NAME}=allowed.test:${httpPort},allowed.test:${boundPort}`,
    '--egress-upstream-ca', path.join(dir, 'ca.pem'),
    '--egress-allow-cidr', '127.0.0.0/8',
    '--egress-max-connections-total', String(CONNS_TOTAL),
    ...registryAllow,
  ];
}

/** Runs code and returns the structured content of a finished run. */
async function run(tool, args) {
  const r = await c.call(tool, { files: [{ path: 'ca.pem', content: ca }], ...args });
  return checkRun(r, { status: 'ok', exit_code: 0 }).sc;
}

const entries = (sc, host) => (sc.egress?.connections ?? []).filter((e) => e.host === host);

test('preflight: upstreams on loopback; the daemon starts with egress', async (tc) => {
  await preflight(tc);
  const tlsOpts = makeCerts();
  httpPort = await listen(http.createServer(handler('http')));
  httpsPort = await listen(https.createServer(tlsOpts, handler('https')));
  boundPort = await listen(https.createServer(tlsOpts, handler('bound')));
  registryHost = new URL(execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' }).trim()).hostname;
  // Some hosts reach the registry through a local mirror under an address
  // the gateway refuses by default (a documentation or private range): the
  // registry's address as this host resolves it is allowed explicitly, as
  // the operator of such a host would.
  const { address, family } = await dns.lookup(registryHost);
  registryAllow = ['--egress-allow-cidr', `${address}/${family === 6 ? 128 : 32}`];
  // The same hosts' mirrors present certificates of a CA of their own:
  // the sandbox's client trusts what npm here trusts (its cafile, else
  // Node's extra CAs) besides Node's own roots.
  const cafile = [execFileSync('npm', ['config', 'get', 'cafile'], { encoding: 'utf8' }).trim(), process.env.NODE_EXTRA_CA_CERTS]
    .find((f) => f && f !== 'null' && fs.existsSync(f));
  registryCa = [...tls.rootCertificates, cafile ? fs.readFileSync(cafile, 'utf8') : ''].join('\n');
  d = await HttpDaemon.start('egress', { args: egressArgs(), env: { [SECRET_NAME]: SECRET } });
  c = await client('egress');
});

test('python: allowed names work through requests and urllib; everything else is refused', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(d, async () => {
    const sc = await run('run_python_code', {
      code: `
import json, socket, ssl, urllib.request, requests
out = {}
r = requests.get('http://allowed.test:${httpPort}/py-requests?q=1')
out['requests'] = [r.status_code, r.json()['url'], r.json()['host']]
ctx = ssl.create_default_context(cafile='ca.pem')
with urllib.request.urlopen('https://allowed.test:${httpsPort}/py-urllib', context=ctx) as f:
    out['urllib'] = json.load(f)['url']
for k, u in [('other', 'http://other.test:${httpPort}/'), ('metadata', 'http://169.254.169.254/latest/meta-data/'),
             ('private', 'http://private.test:${httpPort}/'), ('literal', 'http://192.0.2.1/')]:
    r = requests.get(u)
    out[k] = [r.status_code, r.text.strip()]
try:
    requests.get('https://other.test:${httpsPort}/', verify='ca.pem')
    out['other_tls'] = 'reached'
except requests.exceptions.ProxyError as e:
    out['other_tls'] = 'refused: ' + str(e)
s = socket.socket()
s.settimeout(3)
try:
    s.connect(('192.0.2.1', 80))
    out['direct'] = 'connected'
except OSError as e:
    out['direct'] = 'failed: ' + str(e)
print(json.dumps(out))
`,
    });
    const out = JSON.parse(sc.stdout);
    const ctx = JSON.stringify({ out, egress: sc.egress });
    assert.deepEqual(out.requests, [200, '/py-requests?q=1', `allowed.test:${httpPort}`], ctx);
    assert.equal(out.urllib, '/py-urllib', ctx);
    assert.equal(out.other[0], 403, ctx);
    assert.match(out.other[1], /other\.test/, ctx);
    assert.equal(out.metadata[0], 403, ctx);
    assert.match(out.metadata[1], /169\.254\.169\.254/, ctx);
    assert.equal(out.private[0], 403, ctx);
    assert.match(out.private[1], /10\.1\.2\.3.*private/, ctx);
    assert.equal(out.literal[0], 403, ctx);
    assert.match(out.other_tls, /^refused: .*403/, ctx);
    assert.match(out.direct, /^failed: /, ctx);
    // Nothing but the allowed requests reached an upstream.
    assert.deepEqual(seen.map((s) => s.url).sort(), ['/py-requests?q=1', '/py-urllib'], ctx);

    // The summary: every connection, with why for the refused ones.
    const eg = sc.egress;
    assert.equal(eg.allowed, 2, ctx);
    assert.equal(eg.refused, 5, ctx);
    for (const e of entries(sc, 'allowed.test')) {
      assert.equal(e.allowed, true, ctx);
      assert.ok(e.bytes_up > 0 && e.bytes_down > 0, ctx);
    }
    assert.equal(entries(sc, 'other.test').length, 2, ctx);
    for (const e of entries(sc, 'other.test')) assert.equal(e.status, 403, ctx);
    assert.match(entries(sc, 'private.test')[0].reason, /private/, ctx);
    assert.ok(eg.bytes_down >= eg.connections.reduce((n, e) => n + e.bytes_down, 0) - 1, ctx);
    // One log line per connection decision, without paths or queries.
    await new Promise((r) => setTimeout(r, 100));
    assert.match(d.stderr, /egress.*other\.test/, d.stderr.slice(-3000));
    assert.ok(!d.stderr.includes('py-requests'), 'a request path reached the log');
  }));

test('python: the text names refusals; a call narrows its list and may not widen it; the per-run cap holds', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(d, async () => {
    const narrowed = await c.call('run_python_code', {
      egress: [`allowed.test:${httpPort}`],
      code: `
import requests
print(requests.get('http://allowed.test:${httpPort}/narrow').status_code)
try:
    requests.get('https://allowed.test:${httpsPort}/', verify=False)
except requests.exceptions.ProxyError as e:
    print('refused')
`,
    });
    const sc = checkRun(narrowed, { status: 'ok', exit_code: 0 }).sc;
    assert.equal(sc.stdout, '200\nrefused\n', JSON.stringify(sc));
    assert.match(textOf(narrowed), /--- egress refused 1 connection: allowed\.test:\d+ \(/);

    // Narrowed to nothing: refused at once, with the reason, not left to hang.
    const none = await run('run_python_code', {
      egress: [],
      code: `import requests\nr = requests.get('http://allowed.test:${httpPort}/none')\nprint(r.status_code, r.text.strip())`,
    });
    assert.match(none.stdout, /^403 .*allowed\.test/, JSON.stringify(none));

    const wide = await c.call('run_python_code', { egress: ['evil.test'], code: 'print(1)' });
    assert.equal(wide.isError, true, JSON.stringify(wide));
    assert.match(textOf(wide), /evil\.test/);
    const wildcard = await c.call('run_python_code', { egress: ['*.test'], code: 'print(1)' });
    assert.equal(wildcard.isError, true, JSON.stringify(wildcard));

    const capped = await run('run_python_code', {
      code: `
import requests
codes = [requests.get('http://allowed.test:${httpPort}/cap').status_code for _ in range(${CONNS_TOTAL + 2})]
print(codes.count(200), codes.count(429))
`,
    });
    assert.equal(capped.stdout, `${CONNS_TOTAL} 2\n`, JSON.stringify(capped));
    assert.equal(capped.egress.refused, 2);
  }));

test('node: https with the CA and fetch go through the gateway; a refused fetch says why', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(d, async () => {
    const sc = await run('run_js_code', {
      code: `
const https = require('https');
const fs = require('fs');
const get = (u, o = {}) => new Promise((res, rej) =>
  https.get(u, o, (r) => { let b = ''; r.on('data', (x) => (b += x)); r.on('end', () => res([r.statusCode, b])); }).on('error', rej));
(async () => {
  const out = {};
  const [st, b] = await get('https://allowed.test:${httpsPort}/node-https', { ca: fs.readFileSync('ca.pem') });
  out.https = [st, JSON.parse(b).url];
  // The bound port: the daemon's CA, trusted through NODE_EXTRA_CA_CERTS.
  const ph = process.env.${SECRET_NAME};
  const [st2, b2] = await get('https://allowed.test:${boundPort}/node-sec', { headers: { authorization: 'Bearer ' + ph } });
  out.bound = [st2, JSON.parse(b2).url];
  const f = await fetch('http://allowed.test:${httpPort}/node-fetch', { method: 'POST', body: 'abc' });
  const j = await f.json();
  out.fetch = [f.status, j.method, j.body];
  try { await fetch('http://other.test:${httpPort}/'); out.other = 'reached'; }
  catch (e) { out.other = String(e.cause ? e.cause.message : e.message); }
  console.log(JSON.stringify(out));
})();
`,
    });
    const out = JSON.parse(sc.stdout);
    assert.deepEqual(out.https, [200, '/node-https'], sc.stdout);
    assert.deepEqual(out.bound, [200, '/node-sec'], sc.stdout);
    assert.equal(seen.find((x) => x.url === '/node-sec')?.auth, `Bearer ${SECRET}`, sc.stdout);
    // Both bound ports are intercepted (fetch tunnels http:// too); only
    // the request that carried a placeholder had a value put in.
    assert.deepEqual(entries(sc, 'allowed.test').filter((e) => e.intercepted).map((e) => [e.port, e.secrets]).sort(),
      [[boundPort, 1], [httpPort, undefined]].sort(), JSON.stringify(sc.egress));
    assert.deepEqual(out.fetch, [200, 'POST', 'abc'], sc.stdout);
    assert.match(out.other, /refused other\.test:\d+: 403/, sc.stdout);
    assert.equal(sc.egress.refused, 1, JSON.stringify(sc.egress));
  }));

test('bash: curl over plain HTTP and through a CONNECT tunnel; a refusal is a 403', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(d, async () => {
    const sc = await run('execute_code', {
      language: 'bash',
      code: `curl -sS http://allowed.test:${httpPort}/curl; echo
curl -sS --cacert ca.pem https://allowed.test:${httpsPort}/curl-tls; echo
curl -s -o /dev/null -w '%{http_code}\\n' http://other.test:${httpPort}/
curl -sS -H "Authorization: Bearer $${SECRET_NAME}" https://allowed.test:${boundPort}/curl-sec; echo`,
    });
    const [plain, tls, other, bound] = sc.stdout.trim().split('\n');
    assert.equal(JSON.parse(bound).url, '/curl-sec', sc.stdout);
    assert.equal(seen.find((x) => x.url === '/curl-sec')?.auth, `Bearer ${SECRET}`, sc.stdout);
    assert.equal(JSON.parse(plain).url, '/curl', sc.stdout);
    assert.equal(JSON.parse(tls).url, '/curl-tls', sc.stdout);
    assert.equal(other, '403', sc.stdout);
  }));

test('list_languages shows each language\'s list; a session call has its own summary', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(d, async () => {
    const langs = (await c.call('list_languages', {})).structuredContent.languages;
    const py = langs.find((l) => l.language === 'python');
    assert.deepEqual(py.egress, [`allowed.test:${httpPort}`, `allowed.test:${httpsPort}`, `allowed.test:${boundPort}`, `private.test:${httpPort}`, '169.254.169.254:80', `other2.test:${httpPort}`], JSON.stringify(py));
    const s = await c.call('create_session', { language: 'python' });
    const sid = s.structuredContent.session_id;
    try {
      const sc = await run('run_python_code', {
        session_id: sid,
        code: `import requests\nprint(requests.get('http://allowed.test:${httpPort}/session').status_code)`,
      });
      assert.equal(sc.stdout, '200\n');
      assert.equal(sc.egress.allowed, 1, JSON.stringify(sc.egress));
    } finally {
      await c.call('close_session', { session_id: sid });
    }
  }));

test('the public npm registry is reachable as an allowed host; another public host is refused', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(d, async () => {
    const sc = await run('run_js_code', {
      files: [{ path: 'ca.pem', content: registryCa }],
      code: `
const https = require('https');
const ca = require('fs').readFileSync('ca.pem');
const get = (u) => new Promise((res) =>
  https.get(u, { ca }, (r) => { r.resume(); r.on('end', () => res(r.statusCode)); }).on('error', (e) => res(e.message)));
(async () => {
  console.log(JSON.stringify([await get('https://${registryHost}/-/ping'), await get('https://example.com/')]));
})();
`,
    });
    const [ping, other] = JSON.parse(sc.stdout);
    assert.equal(ping, 200, sc.stdout);
    assert.match(String(other), /refused example\.com:443: 403/, sc.stdout);
  }));

test('python: a --secret is a placeholder in the sandbox and the real value only at its bound host', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(d, async () => {
    const sc = await run('run_python_code', {
      code: `
import json, os, requests
ph = os.environ['${SECRET_NAME}']
out = {'ph': ph}
for k, host in [('bound', 'allowed.test'), ('unbound', 'other2.test')]:
    r = requests.get('http://%s:${httpPort}/sec-%s?key=%s' % (host, k, ph), headers={'Authorization': 'Bearer ' + ph})
    out[k] = r.json()
print(json.dumps(out))
`,
    });
    const out = JSON.parse(sc.stdout);
    const ctx = JSON.stringify({ out, egress: sc.egress });
    // The sandbox holds a placeholder of the value's length, never the value.
    assert.match(out.ph, /^mcpsbx_[A-Za-z0-9]+$/, ctx);
    assert.equal(out.ph.length, SECRET.length, ctx);
    // The bound host got the value in the query and the header; its echo
    // of it came back to the program, and the output has it redacted.
    const bound = seen.find((s) => s.url.startsWith('/sec-bound'));
    assert.equal(new URL(bound.url, 'http://x').searchParams.get('key'), SECRET, ctx);
    assert.equal(bound.auth, `Bearer ${SECRET}`, ctx);
    assert.equal(out.bound.auth, 'Bearer [REDACTED:MCPSBX_EGRESS_KEY]', ctx);
    // An allowed but unbound host got the placeholder.
    const unbound = seen.find((s) => s.url.startsWith('/sec-unbound'));
    assert.equal(new URL(unbound.url, 'http://x').searchParams.get('key'), out.ph, ctx);
    assert.equal(unbound.auth, `Bearer ${out.ph}`, ctx);
    // The summary counts the insertions; nothing anywhere holds the value.
    assert.deepEqual(entries(sc, 'allowed.test').map((e) => e.secrets), [2], ctx);
    assert.deepEqual(entries(sc, 'other2.test').map((e) => e.secrets), [undefined], ctx);
    assert.ok(!JSON.stringify(sc).includes(SECRET.slice(3)), ctx);
    await new Promise((r) => setTimeout(r, 100));
    assert.match(d.stderr, /allowed\.test.*2 secrets inserted/, d.stderr.slice(-3000));
    assert.ok(!d.stderr.includes(SECRET.slice(3)), 'the secret reached the log');
    assert.deepEqual(await engineFilesContaining(SECRET.slice(3)), [], 'the engine state holds the secret');
  }));

test('python: HTTPS to a bound host gets the value inside TLS the daemon terminates; requests trusts its CA by itself', { timeout: TEST_TIMEOUT_MS }, () =>
  withDaemon(d, async () => {
    const sc = await run('run_python_code', {
      code: `
import json, os, requests
ph = os.environ['${SECRET_NAME}']
s = requests.Session()
out = {'env': os.environ.get('REQUESTS_CA_BUNDLE')}
for i in range(2):
    r = s.get('https://allowed.test:${boundPort}/tls-py-%d?key=%s' % (i, ph), headers={'Authorization': 'Bearer ' + ph})
    out[str(i)] = [r.status_code, r.json()['server']]
print(json.dumps(out))
`,
    });
    const out = JSON.parse(sc.stdout);
    const ctx = JSON.stringify({ out, egress: sc.egress });
    assert.equal(out.env, '/run/mcpsbx-egress/ca-bundle.pem', ctx);
    assert.deepEqual([out['0'], out['1']], [[200, 'bound'], [200, 'bound']], ctx);
    for (const i of [0, 1]) {
      const got = seen.find((x) => x.url.startsWith(`/tls-py-${i}`));
      assert.equal(new URL(got.url, 'http://x').searchParams.get('key'), SECRET, ctx);
      assert.equal(got.auth, `Bearer ${SECRET}`, ctx);
    }
    // One keep-alive connection, intercepted, four insertions.
    const tlsEntries = entries(sc, 'allowed.test').filter((e) => e.port === boundPort);
    assert.deepEqual(tlsEntries.map((e) => [e.intercepted, e.secrets]), [[true, 4]], ctx);
    assert.ok(!JSON.stringify(sc).includes(SECRET.slice(3)), ctx);
    await new Promise((r) => setTimeout(r, 100));
    assert.match(d.stderr, /allowed\.test.*intercepted.*4 secrets inserted/, d.stderr.slice(-3000));
    assert.ok(!d.stderr.includes(SECRET.slice(3)), 'the secret reached the log');
    assert.deepEqual(await engineFilesContaining(SECRET.slice(3)), [], 'the engine state holds the secret');
  }));

test('stop', async () => {
  await c?.close();
  await d?.stop();
  for (const s of servers) s.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});
