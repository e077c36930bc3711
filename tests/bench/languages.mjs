// The "languages" section of `make bench` (scripts/bench.sh): a hello world
// in every language of the table, warm, next to the raw floor of that
// language's image, and for the compiled ones the compile step's share.
//
//   node tests/bench/languages.mjs --engine unix:///SOCK --out FILE.json [options]
//       measures, writes FILE.json, prints the table on stdout (progress on
//       stderr); exits 1 when something broke (a wrong answer, a daemon that
//       died), never because a figure is low
//   node tests/bench/languages.mjs --print FILE.json    prints the table again
//
// Options: --bin (default build/mcp-sandboxd), --samples N (default 20),
// --run-id ID (labels the floor's containers), --log-dir DIR.
//
// Per language (p50/p95 of each):
//   warm:  execute_code through the official SDK client over stdio on one
//          daemon with every language and --pool-size 1; each sample starts
//          once that language's pool is full again (a hit), for TypeScript
//          3 s later (its sandbox's checker has loaded)
//   floor: the same image and hardened create request as the daemon's
//          (--dry-run-create), the runner started and waiting; timed: attach,
//          the request (with the language's program for the generic
//          runner), until the completion record; for TypeScript the runner
//          keeps the warm checker a pooled sandbox has (tscheck.js), given
//          3 s to load before the request
//   compile share (compiled languages): the generic runner's own timing of
//          its compile and type-check steps (steps_ms in the record) over the
//          floor's whole run
// Ratios are reported, never asserted.

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { BENCH_LABEL, Demux, Engine, RECORD_PREFIX, newNonce, sleep, stats } from './engine.mjs';
import { prepareWarm } from './floor.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const ENV_URI = 'mcp-sandboxd://environment';
const CALL_TIMEOUT_MS = 120_000;
const POOL_WAIT_MS = 90_000;

const HELLO = {
  python: 'print("hello")',
  javascript: 'console.log("hello")',
  typescript: 'const s: string = "hello";\nconsole.log(s);',
  bash: 'echo hello',
  c: '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n',
  cpp: '#include <iostream>\nint main() { std::cout << "hello" << std::endl; }\n',
  ruby: 'puts "hello"',
  php: '<?php echo "hello\\n";',
};

const log = (m) => process.stderr.write(`languages: ${m}\n`);
const r3 = (x) => (typeof x === 'number' && Number.isFinite(x) ? Math.round(x * 1000) / 1000 : null);
const f1 = (x) => (typeof x === 'number' ? x.toFixed(1) : '-');

const { values: opt } = parseArgs({
  options: {
    engine: { type: 'string' },
    bin: { type: 'string', default: path.join(ROOT, 'build/mcp-sandboxd') },
    out: { type: 'string' },
    print: { type: 'string' },
    samples: { type: 'string', default: '20' },
    'run-id': { type: 'string', default: `languages-${randomBytes(4).toString('hex')}` },
    'log-dir': { type: 'string', default: path.join(ROOT, 'build/bench/logs') },
  },
});

function format(doc) {
  const lines = [`languages (${doc.engine_url}, ${doc.samples} samples each, nproc ${os.availableParallelism()}): hello world, p50/p95 ms`];
  lines.push('  language     warm p50/p95      floor p50/p95     warm/floor  compile share');
  for (const [name, x] of Object.entries(doc.languages || {})) {
    const w = x.warm?.stats;
    const fl = x.floor?.stats;
    const share = x.floor?.compile_share != null ? `${Math.round(x.floor.compile_share * 100)}% (${f1(x.floor.steps_ms_p50?.compile ?? 0)}+${f1(x.floor.steps_ms_p50?.typecheck ?? 0)} ms)` : '-';
    const err = x.warm?.error || x.floor?.error;
    lines.push(
      `  ${name.padEnd(12)} ${`${f1(w?.p50)}/${f1(w?.p95)}`.padEnd(17)} ${`${f1(fl?.p50)}/${f1(fl?.p95)}`.padEnd(17)} ` +
        `${(w && fl ? (w.p50 / fl.p50).toFixed(2) : '-').padEnd(11)} ${share}${err ? `  ERROR ${String(err).slice(0, 120)}` : ''}`,
    );
  }
  return lines.join('\n');
}

if (opt.print) {
  console.log(format(JSON.parse(readFileSync(opt.print, 'utf8'))));
  process.exit(0);
}
if (!opt.engine || !opt.out) {
  console.error('usage: languages.mjs --engine unix:///SOCK --out FILE.json [--bin B] [--samples N]');
  process.exit(2);
}

/** The daemon's create body for lang, its runner in warm mode, labelled for
 * the benchmark (no daemon's reaper touches it). */
/** The argv a warm TypeScript runner gives its checker, as exec.c builds
 * it: the daemon's tscheck.js with the typecheck's arguments but the first
 * (tsc) and the source file. null for a language without one. */
function checkerArgv(l) {
  if (!l.typecheck || l.typecheck[0] !== 'tsc') return null;
  const src = readFileSync(path.join(ROOT, 'src/sandbox/runner/tscheck.js'), 'utf8');
  return ['node', '-e', src, '--', ...l.typecheck.slice(1).filter((a) => a !== l.source_file)];
}

function warmBody(lang, kind, checker) {
  const r = spawnSync(opt.bin, ['--dry-run-create', lang], { encoding: 'utf8', env: { PATH: process.env.PATH } });
  if (r.status !== 0) throw new Error(`--dry-run-create ${lang}: ${r.stderr.trim().slice(0, 300)}`);
  const body = JSON.parse(r.stdout);
  // Podman takes a seccomp profile only as a path, as the daemon hands it one.
  if (kind === 'podman') {
    body.HostConfig.SecurityOpt = (body.HostConfig.SecurityOpt || []).map((o) => {
      if (!o.startsWith('seccomp={')) return o;
      const file = path.resolve(path.dirname(opt.out), `seccomp-${lang}.json`);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, o.slice('seccomp='.length), { mode: 0o644 });
      return `seccomp=${file}`;
    });
  }
  const generic = body.Cmd[0] === 'perl';
  body.Cmd = [...body.Cmd, generic ? 'warm' : '', ...(checker || [])];
  body.Labels = { [BENCH_LABEL]: 'pending' };
  return body;
}

/** Reads the attach stream until the record line; resolves {stdout, record}. */
function readRecord(socket, rest, marker, timeoutMs) {
  return new Promise((resolve, reject) => {
    let out = Buffer.alloc(0);
    const timer = setTimeout(() => reject(new Error(`no record after ${timeoutMs} ms: ${out.toString('latin1').slice(0, 300)}`)), timeoutMs);
    const demux = new Demux((s, p) => {
      if (s !== 1) return;
      out = Buffer.concat([out, p]);
      const i = out.indexOf(marker);
      const nl = i >= 0 ? out.indexOf(0x0a, i) : -1;
      if (nl >= 0) {
        clearTimeout(timer);
        socket.removeAllListeners('data');
        resolve({ stdout: out.subarray(0, i), record: JSON.parse(out.subarray(i + marker.length, nl).toString('utf8')) });
      }
    });
    socket.on('data', (c) => demux.push(c));
    socket.on('error', reject);
    if (rest.length) demux.push(rest);
    socket.resume();
  });
}

/** One floor sample: a started warm runner of lang, attach + request + record. */
async function floorSample(engine, body, lang, program, settleMs) {
  const prepared = await prepareWarm(engine, body);
  try {
    await sleep(settleMs); // the engine's start bookkeeping settles, a checker loads
    const nonce = newNonce();
    const marker = Buffer.concat([RECORD_PREFIX, Buffer.from(`${nonce}:`)]);
    const req = { nonce, code: HELLO[lang], stdin: '', env: {} };
    if (program) req.program = program;
    const payload = Buffer.from(JSON.stringify(req));
    const t0 = performance.now();
    const { socket, rest } = await engine.attach(prepared.id);
    let r;
    try {
      socket.write(Buffer.concat([Buffer.from(`mcpsbx/1 ${payload.length}\n`), payload]));
      r = await readRecord(socket, rest, marker, 60_000);
    } finally {
      socket.destroy();
    }
    const ms = performance.now() - t0;
    const text = r.stdout.toString('utf8');
    if (!text.endsWith('hello\n') || r.record.exit_code !== 0) throw new Error(`floor ${lang}: stdout ${JSON.stringify(text)}, record ${JSON.stringify(r.record)}`);
    return { ms, steps: r.record.steps_ms || null };
  } finally {
    await engine.remove(prepared.id).catch(() => {});
  }
}

async function main() {
  const samples = Math.max(1, Number(opt.samples) || 20);
  const engineUrl = opt.engine.startsWith('unix://') ? opt.engine : `unix://${opt.engine}`;
  const engine = new Engine(engineUrl.slice('unix://'.length), opt['run-id']);
  const doc = { benchmark: 'languages: hello world per language, warm and floor (tests/bench/languages.mjs)', engine_url: engineUrl, samples, languages: {}, problems: [] };
  mkdirSync(opt['log-dir'], { recursive: true });
  const logStream = createWriteStream(path.join(opt['log-dir'], 'languages-daemon.log'));
  const transport = new StdioClientTransport({
    command: opt.bin,
    args: ['--engine', engineUrl, '--pool-size', '1', '--log-level', 'info'],
    env: { PATH: process.env.PATH, HOME: process.env.HOME ?? '/root' },
    stderr: 'pipe',
  });
  transport.stderr.on('data', (c) => logStream.write(c));
  const client = new Client({ name: 'mcp-sandboxd-bench-languages', version: '1.0.0' });
  await client.connect(transport, { timeout: 30_000 });
  await client.listTools();
  let failed = false;
  const v = await engine.call('GET', '/version', null, [200]);
  const kind = (v.Components || []).some((c) => c.Name === 'Podman Engine') ? 'podman' : 'docker';
  doc.engine_kind = kind;
  try {
    const list = (await client.callTool({ name: 'list_languages', arguments: {} }, undefined, { timeout: CALL_TIMEOUT_MS })).structuredContent;
    const env = async () => JSON.parse((await client.readResource({ uri: ENV_URI })).contents[0].text);
    const waitFull = async (lang) => {
      const deadline = performance.now() + POOL_WAIT_MS;
      for (;;) {
        const p = (await env()).pool.profiles.filter((x) => x.language === lang);
        if ((p.length && p.every((x) => x.ready >= x.size)) || performance.now() > deadline) return;
        await sleep(20);
      }
    };
    for (const l of list.languages) {
      const lang = l.language;
      const x = { version: l.version, image: l.image, compile: l.compile };
      doc.languages[lang] = x;
      if (!HELLO[lang]) {
        x.skipped = 'no hello world for it in this script';
        continue;
      }
      try {
        const call = async () => {
          const t0 = performance.now();
          const r = await client.callTool({ name: 'execute_code', arguments: { language: lang, code: HELLO[lang] } }, undefined, { timeout: CALL_TIMEOUT_MS });
          const ms = performance.now() - t0;
          if (r.isError || r.structuredContent?.stdout !== 'hello\n') throw new Error(`${lang}: ${JSON.stringify(r.structuredContent ?? r).slice(0, 400)}`);
          return ms;
        };
        // A pooled sandbox is ready for a run at once; its checker (if it
        // keeps one) loads for about a second more. The samples start once
        // it has.
        const settle = checkerArgv(l) ? 3000 : 0;
        await waitFull(lang);
        await call(); // warm-up
        const s = [];
        for (let i = 0; i < samples; i++) {
          await waitFull(lang);
          await sleep(settle);
          s.push(await call());
        }
        x.warm = { stats: stats(s), samples: s.map(r3) };
        log(`${lang} warm: p50 ${x.warm.stats.p50} ms, p95 ${x.warm.stats.p95} ms`);
      } catch (e) {
        x.warm = { error: String(e.message || e) };
        doc.problems.push(`${lang} warm: ${x.warm.error}`);
        failed = true;
      }
      try {
        const checker = checkerArgv(l);
        const body = warmBody(lang, kind, checker);
        const program = l.runner === 'generic' ? { source_file: l.source_file, run: l.run } : null;
        if (program && l.compile) Object.assign(program, { compile: l.compile, compile_timeout_ms: 60000 });
        if (program && l.typecheck) Object.assign(program, { typecheck: l.typecheck, typecheck_blocks: false });
        const s = [];
        const steps = [];
        for (let i = 0; i < samples; i++) {
          const r = await floorSample(engine, body, lang, program, checker ? 3000 : 100);
          s.push(r.ms);
          if (r.steps) steps.push(r.steps);
        }
        x.floor = { stats: stats(s), samples: s.map(r3) };
        if (l.compile && steps.length) {
          const p50 = (k) => stats(steps.map((t) => t[k] ?? 0)).p50;
          x.floor.steps_ms_p50 = { compile: p50('compile'), typecheck: p50('typecheck'), run: p50('run') };
          x.floor.compile_share = r3((x.floor.steps_ms_p50.compile + x.floor.steps_ms_p50.typecheck) / x.floor.stats.p50);
        }
        log(`${lang} floor: p50 ${x.floor.stats.p50} ms, p95 ${x.floor.stats.p95} ms`);
      } catch (e) {
        x.floor = { error: String(e.message || e) };
        doc.problems.push(`${lang} floor: ${x.floor.error}`);
        failed = true;
      }
    }
  } finally {
    await client.close().catch(() => {});
    await engine.cleanup().catch(() => {});
    logStream.end();
  }
  mkdirSync(path.dirname(opt.out), { recursive: true });
  writeFileSync(opt.out, `${JSON.stringify(doc, null, 2)}\n`);
  console.log(format(doc));
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  log(`FAILED: ${e.stack || e}`);
  process.exit(1);
});
