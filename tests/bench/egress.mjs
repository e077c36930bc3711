// The "egress" section of `make bench` (scripts/bench.sh): the egress
// gateway measured beside a sandbox's own loopback, in one run, on one
// engine. Upstreams are servers of this process on 127.0.0.1, reached as
// up.test (--egress-resolve, --egress-allow-cidr 127.0.0.0/8).
//
//   node tests/bench/egress.mjs --engine unix:///SOCK --out FILE.json [options]
//       measures, writes FILE.json, prints the table on stdout (progress on
//       stderr); exits 1 when something broke, never because a figure is low
//   node tests/bench/egress.mjs --skip REASON --out FILE.json
//
// Options: --bin, --samples N (warm calls per side, default 30), --requests N
// (per in-program series, default 200), --mb N (the tunnel's download,
// default 64), --load N (runs making requests meanwhile, default 3),
// --log-dir DIR.
//
// What is measured (p50/p95), over stdio with the official SDK:
//   1. a warm print(1) run of python with an egress list next to one
//      without (two daemons, pool full before each call): what beginning
//      and ending a run's gateway costs; target ratio <= 1.1
//   2. in the program: --requests sequential requests.get through the
//      gateway (absolute-form HTTP, a connection each) next to the same to
//      an http.server the program runs on its own loopback
//   3. a --mb MiB download through a CONNECT tunnel next to the same over
//      the sandbox's own loopback (MB/s, in the program)
//   4. item 2's gateway series again while --load other runs make
//      requests through the gateway all along (steady load)
//   5. the daemon's VmRSS, threads and fds before and after every run
//      above plus --requests * 5 more gateway connections
// Ratios and targets are reported, never asserted.

import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { stats } from './engine.mjs';
import { StdioDaemon, countOption, procStats, sectionBegin } from './stdio_daemon.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const TARGETS = { egress_over_plain_run_max: 1.1 };
const CHUNK = Buffer.alloc(1 << 16, 0x61);

const log = (m) => process.stderr.write(`egress: ${m}\n`);
const r2 = (x) => (typeof x === 'number' && Number.isFinite(x) ? Math.round(x * 100) / 100 : null);

const { values: opt } = parseArgs({
  options: {
    engine: { type: 'string' },
    bin: { type: 'string', default: path.join(ROOT, 'build', 'mcp-sandboxd') },
    out: { type: 'string' },
    samples: { type: 'string', default: '30' },
    requests: { type: 'string', default: '200' },
    mb: { type: 'string', default: '64' },
    load: { type: 'string', default: '3' },
    'log-dir': { type: 'string', default: path.join(ROOT, 'build', 'bench', 'logs') },
    skip: { type: 'string' },
  },
  strict: true,
});

const count = (name, min) => countOption(opt, name, min, 'egress.mjs');

const start = (name, args) =>
  StdioDaemon.start('egress', name, args, { bin: opt.bin, engine: opt.engine, logDir: opt['log-dir'] }, log);

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

/** A small answer per GET; a byte stream of the asked MiB per connection
 * on the blob port (the first line the client sends is the size). */
async function upstreams() {
  const web = http.createServer((req, res) => res.end('ok'));
  const blob = net.createServer((sock) => {
    let want = null;
    sock.once('data', (d) => {
      want = Number(String(d).trim()) * 1048576;
      const pump = () => {
        while (want > 0) {
          const n = Math.min(want, CHUNK.length);
          want -= n;
          if (!sock.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))) return void sock.once('drain', pump);
        }
        sock.end();
      };
      pump();
    });
    sock.on('error', () => {});
  });
  return { web, blob, webPort: await listen(web), blobPort: await listen(blob) };
}

function expectOk(sc, what) {
  if (sc?.status !== 'ok') throw new Error(`${what}: ${JSON.stringify(sc).slice(0, 600)}`);
  return sc;
}

// ---- programs (python) ----------------------------------------------------------------

// n sequential GETs of url, each timed: JSON list of ms.
const SERIES = (url, n, local) => `
import json, time, requests, threading, http.server
${local ? `class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers(); self.wfile.write(b'ok')
    def log_message(self, *a): pass
srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
url = 'http://127.0.0.1:%d/' % srv.server_address[1]` : `url = ${JSON.stringify(url)}`}
out = []
for _ in range(${n}):
    t0 = time.perf_counter()
    r = requests.get(url)
    assert r.status_code == 200 and r.text == 'ok', (r.status_code, r.text[:200])
    out.append((time.perf_counter() - t0) * 1000)
print(json.dumps(out))
`;

// mb MiB read through a CONNECT tunnel to the blob upstream, or from a
// server on the sandbox's loopback: MB/s.
const DOWNLOAD = (port, mb, local) => `
import socket, threading, time
MB = ${mb}
def read_all(s):
    n = 0
    while True:
        b = s.recv(1 << 16)
        if not b: return n
        n += len(b)
${local ? `ls = socket.socket(); ls.bind(('127.0.0.1', 0)); ls.listen(1)
def serve():
    c, _ = ls.accept(); c.recv(64); chunk = b'a' * 65536
    for _ in range(MB * 16): c.sendall(chunk)
    c.close()
threading.Thread(target=serve, daemon=True).start()
s = socket.create_connection(('127.0.0.1', ls.getsockname()[1]))` : `s = socket.create_connection(('127.0.0.1', 3128))
s.sendall(b'CONNECT up.test:${port} HTTP/1.1\\r\\n\\r\\n')
head = b''
while b'\\r\\n\\r\\n' not in head: head += s.recv(1)
assert head.startswith(b'HTTP/1.1 200'), head`}
t0 = time.perf_counter()
s.sendall(b'%d\\n' % MB)
n = read_all(s)
dt = time.perf_counter() - t0
assert n == MB * 1048576, n
print('%.1f' % (MB / dt))
`;

// ---- the items ----------------------------------------------------------------------------

// Both pools full before each call: neither call shares the machine with
// the other daemon's refill.
async function warmRuns(plain, egress, n) {
  const a = [];
  const b = [];
  const full = () => Promise.all([plain.poolFull(), egress.poolFull()]);
  for (let i = 0; i < n; i++) {
    await full();
    a.push((await plain.call('run_python_code', { code: 'print(1)' })).ms);
    await full();
    b.push((await egress.call('run_python_code', { code: 'print(1)' })).ms);
  }
  return { plain: stats(a), egress: stats(b) };
}

async function series(d, url, n, local) {
  const { sc } = await d.call('execute_code', { language: 'python', code: SERIES(url, n, local), timeout_ms: 300_000 });
  return stats(JSON.parse(expectOk(sc, 'series').stdout));
}

async function download(d, port, mb, local) {
  const { sc } = await d.call('execute_code', { language: 'python', code: DOWNLOAD(port, mb, local), timeout_ms: 300_000 });
  return Number(expectOk(sc, 'download').stdout);
}

async function underLoad(d, url, n, load) {
  let stop = false;
  const loops = [];
  for (let i = 0; i < load; i++) {
    loops.push(
      (async () => {
        while (!stop) await d.call('execute_code', { language: 'python', code: SERIES(url, 20, false), timeout_ms: 300_000 });
      })(),
    );
  }
  try {
    return await series(d, url, n, false);
  } finally {
    stop = true;
    await Promise.all(loops);
  }
}

function table(res) {
  const p = (s) => (s ? `p50 ${s.p50} / p95 ${s.p95} ms` : 'n/a');
  const lines = [];
  if (res.runs) {
    lines.push(`  1 warm print(1): with an egress list ${p(res.runs.egress)}, without ${p(res.runs.plain)}; ratio p50 ${res.ratio_run} (target <= ${TARGETS.egress_over_plain_run_max})`);
  }
  if (res.requests) {
    lines.push(`  2 ${res.requests.n} GETs in the program: through the gateway ${p(res.requests.gateway)}, own loopback ${p(res.requests.loopback)}; ratio p50 ${res.ratio_request}`);
  }
  if (res.download) {
    lines.push(`  3 ${res.download.mb} MiB: CONNECT tunnel ${res.download.tunnel_mb_s} MB/s, own loopback ${res.download.loopback_mb_s} MB/s`);
  }
  if (res.load) lines.push(`  4 GETs through the gateway while ${res.load.runs} runs load it: ${p(res.load.gateway)}`);
  if (res.rss) {
    lines.push(`  5 daemon: VmRSS ${res.rss.before.rss_kib} -> ${res.rss.after.rss_kib} KiB, threads ${res.rss.before.threads} -> ${res.rss.after.threads}, fds ${res.rss.before.fds} -> ${res.rss.after.fds}`);
  }
  return `egress gateway (python, ${res.engine}):\n${lines.join('\n')}`;
}

async function measure(res, up) {
  const n = count('samples', 1);
  const reqs = count('requests', 1);
  const mb = count('mb', 1);
  const load = count('load', 0);
  const url = `http://up.test:${up.webPort}/`;
  const plain = await start('plain', ['--languages', 'python', '--pool-size', '2']);
  const egress = await start('gateway', [
    '--languages', 'python', '--pool-size', '2',
    '--egress', `python=up.test:${up.webPort},up.test:${up.blobPort}`,
    '--egress-resolve', 'up.test=127.0.0.1', '--egress-allow-cidr', '127.0.0.0/8',
    '--egress-max-connections', '64', '--egress-max-connections-total', '100000',
    '--egress-max-bytes-down', String(4 * mb * 1048576),
  ]);
  try {
    log(`1: warm print(1), ${n} samples each`);
    res.runs = await warmRuns(plain, egress, n);
    res.ratio_run = r2(res.runs.egress.p50 / res.runs.plain.p50);
    await plain.close();
    const before = procStats(egress.pid);
    log(`2: ${reqs} GETs through the gateway and to the sandbox's own loopback`);
    res.requests = { n: reqs, gateway: await series(egress, url, reqs, false), loopback: await series(egress, url, reqs, true) };
    res.ratio_request = r2(res.requests.gateway.p50 / res.requests.loopback.p50);
    log(`3: ${mb} MiB through a tunnel and over the sandbox's loopback`);
    res.download = { mb, tunnel_mb_s: await download(egress, up.blobPort, mb, false), loopback_mb_s: await download(egress, up.blobPort, mb, true) };
    log(`4: ${reqs} GETs while ${load} runs load the gateway`);
    res.load = { runs: load, gateway: await underLoad(egress, url, reqs, load) };
    log(`5: ${reqs * 5} more gateway connections`);
    for (let i = 0; i < 5; i++) await series(egress, url, reqs, false);
    res.rss = { before, after: procStats(egress.pid) };
  } finally {
    await plain.close();
    await egress.close();
  }
}

async function main() {
  if (!sectionBegin(opt, 'egress.mjs', 'egress gateway')) return;
  const res = { engine: opt.engine, targets: TARGETS, problems: [] };
  const up = await upstreams();
  try {
    await measure(res, up);
  } catch (e) {
    res.problems.push(String(e.stack || e));
  } finally {
    up.web.close();
    up.blob.close();
  }
  writeFileSync(opt.out, `${JSON.stringify(res, null, 2)}\n`);
  console.log(table(res));
  if (res.problems.length) {
    for (const p of res.problems) log(`problem: ${p}`);
    process.exit(1);
  }
}

await main();
