// A gem source on loopback: the gems and the static Marshal index
// (specs.4.8.gz, quick/Marshal.4.8/*.gemspec.rz, gems/*.gem) that a real
// `gem install` in an installer's sandbox resolves and downloads when no
// other gem source is reachable. No gem registry is reachable from the
// test machines and the host need not have Ruby, so the gems are built and
// indexed inside the ruby image itself, with its own `gem build` and
// `gem generate_index`. Every request is recorded (method, path), so a
// test can tell what reached the source and what did not.
//
// The gems:
//
//   mcpsbx_gbase  1.0.0 and 1.1.0: MCPSBX_GBASE names the version (so a
//                 pin can be told from the newest)
//   mcpsbx_gdep   2.0.0: needs mcpsbx_gbase >= 1.0 (a dependency gem must
//                 resolve from the same source); MCPSBX_GDEP

import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

const IMAGE = 'mcp-sandboxd-ruby:latest';

function gemspec(name, version, deps = []) {
  const lines = [
    'Gem::Specification.new do |s|',
    `  s.name = ${JSON.stringify(name)}`,
    `  s.version = ${JSON.stringify(version)}`,
    '  s.summary = "mcp-sandboxd test gem"',
    '  s.authors = ["mcp-sandboxd tests"]',
    '  s.license = "MIT"',
    `  s.files = ["lib/${name}.rb"]`,
    ...deps.map(([dep, req]) => `  s.add_runtime_dependency ${JSON.stringify(dep)}, ${JSON.stringify(req)}`),
    'end',
  ];
  return lines.join('\n') + '\n';
}

const GEMS = [
  { name: 'mcpsbx_gbase', version: '1.0.0', lib: 'MCPSBX_GBASE = "gbase 1.0.0"\n' },
  { name: 'mcpsbx_gbase', version: '1.1.0', lib: 'MCPSBX_GBASE = "gbase 1.1.0"\n' },
  {
    name: 'mcpsbx_gdep', version: '2.0.0', deps: [['mcpsbx_gbase', '>= 1.0']],
    lib: 'require "mcpsbx_gbase"\nMCPSBX_GDEP = "gdep 2.0.0 on " + MCPSBX_GBASE\n',
  },
];

// One container for the whole build: starting one costs more than building.
// `gem build` writes the .gem into the current directory, hence the cd.
const BUILD = [
  'set -e',
  'mkdir -p /w/out/gems',
  'for d in /w/src/*/; do (cd "$d" && gem build --silent ./*.gemspec && mv ./*.gem /w/out/gems/); done',
  'gem generate_index --silent --directory /w/out',
].join('\n');

/** The engine CLI and its leading arguments, from MCPSANDBOXD_ENGINE as
 * lib.mjs reads it: a Podman socket is driven by `podman --url`. */
function engineCli() {
  const sock = process.env.MCPSANDBOXD_ENGINE || process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';
  return sock.includes('podman') ? ['podman', ['--url', sock]] : ['docker', ['-H', sock]];
}

/**
 * Builds the gems and their index into a fresh directory and serves it on
 * 127.0.0.1. Returns { port, dir, gems, requests, close() }: gems lists
 * "name-version" as built; requests lists { method, path } as they came.
 */
export async function startGemIndex() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpsbx-gems-'));
  for (const g of GEMS) {
    const src = path.join(dir, 'src', `${g.name}-${g.version}`);
    fs.mkdirSync(path.join(src, 'lib'), { recursive: true });
    fs.writeFileSync(path.join(src, `${g.name}.gemspec`), gemspec(g.name, g.version, g.deps));
    fs.writeFileSync(path.join(src, 'lib', `${g.name}.rb`), g.lib);
  }
  // As the caller's uid, so that close() can remove what the container
  // wrote; HOME is /tmp because that uid has no home in the image. Both
  // ulimits explicit, as the daemon sets them: Podman's remote client
  // otherwise asks for a nofile limit above this machine's hard limit, and
  // runc fails to set it.
  const [cli, pre] = engineCli();
  try {
    execFileSync(cli, [...pre, 'run', '--rm', '--network', 'none',
      '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=4096:4096',
      '-u', `${process.getuid()}:${process.getgid()}`, '-e', 'HOME=/tmp',
      '-v', `${dir}:/w`, IMAGE, 'sh', '-c', BUILD], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`building the test gems with ${cli} failed: ${e.stderr || e.message}`);
  }
  const out = path.join(dir, 'out');
  const requests = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://index.invalid');
    requests.push({ method: req.method, path: url.pathname });
    // Static files only: resolve inside out/ and refuse anything that
    // would leave it. "/" must stay a 404: gem probes it (HEAD) and, when
    // it answers, asks /info/NAME of a compact index first.
    let wanted = '/';
    try { wanted = decodeURIComponent(url.pathname); } catch { /* malformed: a 404 */ }
    const file = path.join(out, path.normalize(wanted));
    let st = null;
    if (file.startsWith(out + path.sep)) {
      try { st = fs.statSync(file); } catch { /* not there */ }
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405).end();
    } else if (!st || !st.isFile()) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    } else {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': st.size });
      if (req.method === 'HEAD') res.end();
      else fs.createReadStream(file).pipe(res);
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: server.address().port,
    dir,
    gems: GEMS.map((g) => `${g.name}-${g.version}`),
    requests,
    close: async () => {
      await new Promise((resolve) => server.close(resolve));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
