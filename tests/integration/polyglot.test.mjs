// Every language of the built-in table through the whole path, on a real
// engine with the official SDK client: hello world, stdin, a non-zero exit,
// a runtime error on stderr, a compile error where there is a compile step,
// a timeout, files in and out, variables, live output, cancellation, and
// the hostile cases that matter per language (fork bomb, memory bomb,
// output flood, network attempt); TypeScript's type check, reported and
// blocking, and checked by the warm checker of a pooled sandbox; aliases
// and unknown names; and Perl, a language added only by a languages file.
// The Docker and Podman passes run all of it; the gVisor and ASan passes
// (INTEGRATION_RUNTIME, INTEGRATION_POOL_SIZE=0) a hello world per
// language and one compile error, to keep them in time.
//
//   node --test tests/integration/polyglot.test.mjs
//
// Environment: as stdio.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import {
  TEST_TIMEOUT_MS, SdkDaemon, withDaemon, preflight, checkRun, checkInvalid, ourContainers,
  checkDaemonsAndContainers, sleep, tail, GVISOR, POOL_SIZE,
} from './lib.mjs';

const FULL = !GVISOR && POOL_SIZE !== '0';
const LANGS = ['python', 'javascript', 'typescript', 'bash', 'c', 'cpp', 'ruby', 'php'];
const ALL = ['--languages', LANGS.join(',')];

const C_HEAD = '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <unistd.h>\n';
const CPP_HEAD = '#include <iostream>\n#include <fstream>\n#include <string>\n#include <cstdlib>\n#include <unistd.h>\n';
const NET_C = `#include <arpa/inet.h>\n#include <sys/socket.h>\nint main(void) {\n  int s = socket(AF_INET, SOCK_STREAM, 0);\n  struct sockaddr_in a = {0};\n  a.sin_family = AF_INET;\n  a.sin_port = htons(80);\n  inet_pton(AF_INET, "169.254.169.254", &a.sin_addr);\n  puts(s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0 ? "connected" : "failed");\n  return 0;\n}\n`;

// Per language: the programs. files: reads in/data.txt, writes
// outputs/result.txt. live: five lines 0.3 s apart. vars: prints the
// variables n and s, however the language gets them.
const P = {
  python: {
    hello: 'print("hello")',
    stdin: 'import sys\nprint("got " + sys.stdin.readline().strip())',
    exit3: 'import sys\nsys.exit(3)',
    runtime: 'raise ValueError("boom-marker")',
    spin: 'while True:\n    pass',
    files: 'print(open("in/data.txt").read(), end="")\nopen("outputs/result.txt", "w").write("out-marker\\n")',
    live: 'import time\nfor i in range(5):\n    print(f"tick {i}", flush=True)\n    time.sleep(0.3)',
    sleep: 'import time\ntime.sleep(60)',
    vars: 'print(n, s)',
    fork: 'import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass',
    memory: 'l = []\nwhile True:\n    l.append(b"x" * 10**6)',
    flood: 'while True:\n    print("flood")',
    net: 'import socket\ntry:\n    socket.create_connection(("169.254.169.254", 80), timeout=3)\n    print("connected")\nexcept OSError:\n    print("failed")',
  },
  javascript: {
    hello: 'console.log("hello")',
    stdin: 'console.log("got " + require("fs").readFileSync(0, "utf8").split("\\n")[0])',
    exit3: 'process.exit(3)',
    runtime: 'throw new Error("boom-marker")',
    spin: 'for (;;) {}',
    files: 'const fs = require("fs");\nprocess.stdout.write(fs.readFileSync("in/data.txt", "utf8"));\nfs.writeFileSync("outputs/result.txt", "out-marker\\n");',
    live: 'let i = 0;\nconst t = setInterval(() => { console.log(`tick ${i}`); if (++i === 5) clearInterval(t); }, 300);',
    sleep: 'setTimeout(() => {}, 60000)',
    vars: 'console.log(n, s)',
    fork: 'const { spawn } = require("child_process");\nfor (;;) { try { spawn("sleep", ["60"]); } catch (e) {} }',
    memory: 'const a = [];\nfor (;;) a.push(new Array(1e6).fill(1));',
    flood: 'for (;;) console.log("flood")',
    net: 'require("net").connect(80, "169.254.169.254").on("connect", () => { console.log("connected"); process.exit(0); }).on("error", () => console.log("failed"))',
  },
  typescript: {
    hello: 'const greeting: string = "hello";\nconsole.log(greeting);',
    stdin: 'import * as fs from "fs";\nconsole.log("got " + fs.readFileSync(0, "utf8").split("\\n")[0]);',
    exit3: 'process.exit(3);',
    runtime: 'throw new Error("boom-marker");',
    compile: 'const x: number = ;\n',
    spin: 'for (;;) {}',
    files: 'import * as fs from "fs";\nprocess.stdout.write(fs.readFileSync("in/data.txt", "utf8"));\nfs.writeFileSync("outputs/result.txt", "out-marker\\n");',
    live: 'let i = 0;\nconst t = setInterval(() => { console.log(`tick ${i}`); if (++i === 5) clearInterval(t); }, 300);',
    sleep: 'setTimeout(() => {}, 60000);',
    vars: 'console.log(process.env.n, process.env.s);',
    fork: 'import { spawn } from "child_process";\nfor (;;) { try { spawn("sleep", ["60"]); } catch (e) {} }',
    memory: 'const a: number[][] = [];\nfor (;;) a.push(new Array(1e6).fill(1));',
    flood: 'for (;;) console.log("flood");',
    net: 'import * as net from "net";\nnet.connect(80, "169.254.169.254").on("connect", () => { console.log("connected"); process.exit(0); }).on("error", () => console.log("failed"));',
  },
  bash: {
    hello: 'echo hello',
    stdin: 'read -r x\necho "got $x"',
    exit3: 'exit 3',
    runtime: 'echo boom-marker >&2\nnosuch_command_xyz',
    spin: 'while :; do :; done',
    files: 'cat in/data.txt\necho out-marker > outputs/result.txt',
    live: 'for i in 0 1 2 3 4; do echo "tick $i"; sleep 0.3; done',
    sleep: 'sleep 60',
    vars: 'echo "$n $s"',
    fork: ':(){ :|:& };:\nsleep 60',
    memory: 'a=x; while :; do a=$a$a; done',
    flood: 'yes flood',
    net: '(exec 3<>/dev/tcp/169.254.169.254/80) 2>/dev/null && echo connected || echo failed',
  },
  c: {
    hello: `${C_HEAD}int main(void) { puts("hello"); return 0; }\n`,
    stdin: `${C_HEAD}int main(void) { char b[100] = ""; if (!fgets(b, sizeof b, stdin)) return 1; b[strcspn(b, "\\n")] = 0; printf("got %s\\n", b); return 0; }\n`,
    exit3: `${C_HEAD}int main(void) { return 3; }\n`,
    runtime: `${C_HEAD}int main(void) { fprintf(stderr, "boom-marker\\n"); abort(); }\n`,
    compile: `${C_HEAD}int main(void) { return undefined_variable; }\n`,
    spin: `${C_HEAD}int main(void) { volatile unsigned long x = 0; for (;;) x++; }\n`,
    files: `${C_HEAD}int main(void) { char b[256] = ""; FILE *f = fopen("in/data.txt", "r"); if (!f) return 1; size_t n = fread(b, 1, sizeof b - 1, f); fwrite(b, 1, n, stdout); FILE *o = fopen("outputs/result.txt", "w"); if (!o) return 2; fputs("out-marker\\n", o); fclose(o); return 0; }\n`,
    live: `${C_HEAD}int main(void) { for (int i = 0; i < 5; i++) { printf("tick %d\\n", i); fflush(stdout); usleep(300000); } return 0; }\n`,
    sleep: `${C_HEAD}int main(void) { sleep(60); return 0; }\n`,
    vars: `${C_HEAD}int main(void) { printf("%s %s\\n", getenv("n"), getenv("s")); return 0; }\n`,
    fork: `${C_HEAD}int main(void) { for (;;) fork(); }\n`,
    memory: `${C_HEAD}int main(void) { for (;;) { char *p = malloc(1 << 20); if (!p) return 1; memset(p, 1, 1 << 20); } }\n`,
    flood: `${C_HEAD}int main(void) { for (;;) puts("flood"); }\n`,
    net: NET_C,
  },
  cpp: {
    hello: `${CPP_HEAD}int main() { std::cout << "hello" << std::endl; }\n`,
    stdin: `${CPP_HEAD}int main() { std::string x; std::getline(std::cin, x); std::cout << "got " << x << std::endl; }\n`,
    exit3: `${CPP_HEAD}int main() { return 3; }\n`,
    runtime: `${CPP_HEAD}#include <stdexcept>\nint main() { throw std::runtime_error("boom-marker"); }\n`,
    compile: `${CPP_HEAD}int main() { undefined_function(); }\n`,
    spin: `${CPP_HEAD}int main() { volatile unsigned long x = 0; for (;;) x++; }\n`,
    files: `${CPP_HEAD}int main() { std::ifstream in("in/data.txt"); std::cout << in.rdbuf(); std::ofstream("outputs/result.txt") << "out-marker\\n"; }\n`,
    live: `${CPP_HEAD}int main() { for (int i = 0; i < 5; i++) { std::cout << "tick " << i << std::endl; usleep(300000); } }\n`,
    sleep: `${CPP_HEAD}int main() { sleep(60); }\n`,
    vars: `${CPP_HEAD}int main() { std::cout << std::getenv("n") << " " << std::getenv("s") << std::endl; }\n`,
    fork: `${CPP_HEAD}int main() { for (;;) fork(); }\n`,
    memory: `${CPP_HEAD}#include <vector>\nint main() { std::vector<std::string> v; for (;;) v.emplace_back(1 << 20, 'x'); }\n`,
    flood: `${CPP_HEAD}int main() { for (;;) std::cout << "flood\\n"; }\n`,
    net: NET_C.replace('#include <arpa/inet.h>', '#include <cstdio>\n#include <arpa/inet.h>'),
  },
  ruby: {
    hello: 'puts "hello"',
    stdin: 'puts "got " + STDIN.gets.strip',
    exit3: 'exit 3',
    runtime: 'raise "boom-marker"',
    spin: 'loop { }',
    files: 'print File.read("in/data.txt")\nFile.write("outputs/result.txt", "out-marker\\n")',
    live: '5.times { |i| puts "tick #{i}"; STDOUT.flush; sleep 0.3 }',
    sleep: 'sleep 60',
    vars: 'puts "#{ENV["n"]} #{ENV["s"]}"',
    fork: 'loop { fork rescue nil }',
    memory: 'a = []\nloop { a << "x" * 1_000_000 }',
    flood: 'loop { puts "flood" }',
    net: 'require "socket"\nbegin\n  Socket.tcp("169.254.169.254", 80, connect_timeout: 3)\n  puts "connected"\nrescue StandardError\n  puts "failed"\nend',
  },
  php: {
    hello: '<?php echo "hello\\n";',
    stdin: '<?php $l = trim(fgets(STDIN)); echo "got $l\\n";',
    exit3: '<?php exit(3);',
    runtime: '<?php throw new Exception("boom-marker");',
    spin: '<?php while (true) {}',
    files: '<?php echo file_get_contents("in/data.txt"); file_put_contents("outputs/result.txt", "out-marker\\n");',
    live: '<?php for ($i = 0; $i < 5; $i++) { echo "tick $i\\n"; flush(); usleep(300000); }',
    sleep: '<?php sleep(60);',
    vars: '<?php echo getenv("n") . " " . getenv("s") . "\\n";',
    fork: '<?php for (;;) { if (function_exists("pcntl_fork")) { @pcntl_fork(); } else { @proc_open("sleep 60", [], $p); } }',
    memory: '<?php ini_set("memory_limit", "-1"); $a = []; for (;;) { $a[] = str_repeat("x", 1000000); }',
    flood: '<?php for (;;) { echo "flood\\n"; }',
    net: '<?php $s = @fsockopen("169.254.169.254", 80, $no, $msg, 3); echo $s ? "connected\\n" : "failed\\n";',
  },
};

const COMPILED = ['typescript', 'c', 'cpp'];

async function exec(d, language, code, extra = {}) {
  return d.call('execute_code', { language, code, ...extra });
}

test('preflight: binary present, engine answers', (tc) => preflight(tc));

test('hello world in every language, and a compile error', { timeout: TEST_TIMEOUT_MS * 2 }, async () => {
  const d = await SdkDaemon.start('polyglot-hello', { args: [...ALL, '--pool-size', POOL_SIZE ?? '1'] });
  await withDaemon(d, async () => {
    const e = d.tools.find((t) => t.name === 'execute_code');
    const names = e.inputSchema.properties.language.enum;
    for (const l of LANGS) assert.ok(names.includes(l), `execute_code's enum lacks ${l}: ${names}`);
    for (const l of LANGS) {
      checkRun(await exec(d, l, P[l].hello), { status: 'ok', exit_code: 0, stdout: 'hello\n', language: l });
    }
    const { sc } = checkRun(await exec(d, 'c', P.c.compile), { status: 'compile_error', language: 'c' });
    assert.ok(sc.exit_code !== 0 && sc.exit_code !== null, JSON.stringify(sc));
    assert.match(sc.stderr, /undefined_variable/);
    assert.match(sc.stderr, /error/);
    assert.equal(sc.stdout, '');
    await d.close();
  });
});

if (FULL) {
  for (const l of LANGS) {
    test(`${l}: stdin, exit codes, errors, timeout, files, variables`, { timeout: TEST_TIMEOUT_MS * 2 }, async () => {
      const d = await SdkDaemon.start(`polyglot-${l}`, { args: ['--languages', l, '--pool-size', '1'] });
      await withDaemon(d, async () => {
        const p = P[l];
        checkRun(await exec(d, l, p.stdin, { stdin: 'line one\nline two\n' }), { status: 'ok', exit_code: 0, stdout: 'got line one\n' });
        checkRun(await exec(d, l, p.exit3), { status: 'ok', exit_code: 3 });
        let { sc } = checkRun(await exec(d, l, p.runtime), { status: 'ok' });
        assert.notEqual(sc.exit_code, 0, JSON.stringify(sc));
        assert.ok(sc.stderr.includes(l === 'bash' ? 'nosuch_command_xyz' : 'boom-marker'), JSON.stringify(sc));
        if (COMPILED.includes(l)) {
          ({ sc } = checkRun(await exec(d, l, p.compile), { status: 'compile_error', stdout: '' }));
          assert.ok(Number.isInteger(sc.exit_code) && sc.exit_code !== 0, JSON.stringify(sc));
          assert.ok(sc.stderr.length > 0, 'the compiler says why on stderr');
        }
        ({ sc } = checkRun(await exec(d, l, p.spin, { timeout_ms: 2500 }), { status: 'timeout' }));
        const files = [{ path: 'in/data.txt', content: 'in-marker\n' }];
        ({ sc } = checkRun(await exec(d, l, p.files, { files }), { status: 'ok', exit_code: 0, stdout: 'in-marker\n' }));
        const f = (sc.files || []).find((x) => x.path === 'outputs/result.txt');
        assert.ok(f, `outputs/result.txt comes back: ${JSON.stringify(sc.files)}`);
        assert.equal(f.size, 'out-marker\n'.length);
        checkRun(await exec(d, l, p.vars, { variables: { n: 42, s: 'str' } }), { status: 'ok', exit_code: 0, stdout: '42 str\n' });
        // A reserved name is refused before any container.
        checkInvalid(await exec(d, l, p.hello, { files: [{ path: 'main', content: 'x' }] }), 'main');
        await d.close();
      });
    });

    test(`${l}: live output and cancellation`, { timeout: TEST_TIMEOUT_MS }, async () => {
      const d = await SdkDaemon.start(`polyglot-live-${l}`, { args: ['--languages', l, '--pool-size', '0'] });
      await withDaemon(d, async () => {
        const events = [];
        const t0 = Date.now();
        const r = await d.call('execute_code', { language: l, code: P[l].live }, { onprogress: (e) => events.push({ t: Date.now() - t0, ...e }) });
        const tEnd = Date.now() - t0;
        checkRun(r, { status: 'ok', exit_code: 0, stdout: [0, 1, 2, 3, 4].map((i) => `tick ${i}\n`).join('') });
        const out = events.filter((e) => e._meta?.['dev.mcp-sandboxd/stream'] === 'stdout');
        assert.ok(out.length >= 2, `live chunks: ${JSON.stringify(events)}`);
        assert.ok(out[0].t < tEnd - 600, `the first line arrives before the end: ${JSON.stringify(events)} end ${tEnd}`);

        const ac = new AbortController();
        const pending = d.call('execute_code', { language: l, code: P[l].sleep, timeout_ms: 120000 }, { signal: ac.signal });
        pending.catch(() => {});
        // Its own container: other tests' daemons keep pooled ones.
        const running = async () => (await ourContainers()).filter((c) => c.state === 'running' && !c.pool);
        for (let i = 0; i < 100 && (await running()).length === 0; i++) await sleep(100);
        await sleep(COMPILED.includes(l) ? 1500 : 300);
        ac.abort(new Error('the test cancels'));
        await assert.rejects(pending);
        let left = [];
        for (let i = 0; i < 50; i++) {
          left = await running();
          if (left.length === 0) break;
          await sleep(100);
        }
        assert.deepEqual(left, [], 'the cancelled run\'s container is gone');
        checkRun(await exec(d, l, P[l].hello), { status: 'ok', stdout: 'hello\n' });
        await d.close();
      });
    });

    test(`${l}: fork bomb, memory bomb, output flood, no network`, { timeout: TEST_TIMEOUT_MS * 2 }, async () => {
      const d = await SdkDaemon.start(`polyglot-hostile-${l}`, { args: ['--languages', l, '--pool-size', '0', '--max-output-bytes', '65536'] });
      await withDaemon(d, async () => {
        let { sc } = checkRun(await exec(d, l, P[l].fork, { timeout_ms: 3000 }), {});
        // Failed forks may also fill the output with the language's warnings.
        assert.ok(['timeout', 'ok', 'oom', 'output_limit'].includes(sc.status), JSON.stringify(sc).slice(0, 500));
        ({ sc } = checkRun(await exec(d, l, P[l].memory, { memory_mb: 128, timeout_ms: 20000 }), {}));
        // bash reports its own failed allocation and exits; the others are killed.
        if (l === 'bash') assert.ok(sc.status === 'oom' || (sc.status === 'ok' && sc.exit_code !== 0), JSON.stringify(sc).slice(0, 500));
        else assert.equal(sc.status, 'oom', JSON.stringify(sc).slice(0, 500));
        ({ sc } = checkRun(await exec(d, l, P[l].flood, { timeout_ms: 20000 }), {}));
        // Every language's flood ends at the cap; node programs (JavaScript's
        // runner, TypeScript's under the generic runner) write blocking.
        assert.equal(sc.status, 'output_limit', JSON.stringify(sc).slice(0, 300));
        const t0 = Date.now();
        checkRun(await exec(d, l, P[l].net, { timeout_ms: 20000 }), { status: 'ok', stdout: 'failed\n' });
        assert.ok(Date.now() - t0 < 10000, 'no network fails fast');
        checkRun(await exec(d, l, P[l].hello), { status: 'ok', stdout: 'hello\n' });
        await d.close();
      });
    });
  }

  test('typescript: type errors shown on stderr, or a compile error when asked', { timeout: TEST_TIMEOUT_MS }, async () => {
    const d = await SdkDaemon.start('polyglot-ts-types', { args: ['--languages', 'typescript', '--pool-size', '0'] });
    await withDaemon(d, async () => {
      const code = 'const n: number = "not a number";\nconsole.log("ran", n);';
      let { sc } = checkRun(await exec(d, 'ts', code), { status: 'ok', exit_code: 0, stdout: 'ran not a number\n', language: 'typescript' });
      assert.match(sc.stderr, /TS2322/);
      ({ sc } = checkRun(await exec(d, 'typescript', code, { fail_on_type_errors: true }), { status: 'compile_error', stdout: '' }));
      assert.match(sc.stderr, /TS2322/);
      checkRun(await exec(d, 'typescript', P.typescript.hello, { fail_on_type_errors: true }), { status: 'ok', stdout: 'hello\n' });
    });
  });

  test('typescript: a warm sandbox type-checks with the checker it keeps ready, as a cold one does', { timeout: TEST_TIMEOUT_MS * 2 }, async () => {
    const code = 'const n: number = "not a number";\nconsole.log("ran", n);';
    const warm = await SdkDaemon.start('polyglot-ts-warm', { args: ['--languages', 'typescript', '--pool-size', '1', '--log-level', 'debug'] });
    const cold = await SdkDaemon.start('polyglot-ts-cold', { args: ['--languages', 'typescript', '--pool-size', '0'] });
    await withDaemon([warm, cold], async () => {
      const pool = async () => {
        const r = await warm.client.readResource({ uri: 'mcp-sandboxd://environment' });
        return JSON.parse(r.contents[0].text).pool.profiles.find((p) => p.language === 'typescript');
      };
      const ready = async (hits) => {
        let p;
        for (let i = 0; i < 900; i++) {
          p = await pool();
          if (p.ready === p.size && p.hits === hits) return;
          await sleep(100);
        }
        assert.fail(`the typescript pool never got ready: ${JSON.stringify(p)}`);
      };
      const c = checkRun(await exec(cold, 'ts', code), { status: 'ok', exit_code: 0, stdout: 'ran not a number\n' }).sc;
      assert.match(c.stderr, /TS2322/);
      const runs = [
        [code, {}, { status: 'ok', exit_code: 0, stdout: 'ran not a number\n' }, c.stderr],
        [code, { fail_on_type_errors: true }, { status: 'compile_error', stdout: '' }, c.stderr],
        [P.typescript.hello, { fail_on_type_errors: true }, { status: 'ok', exit_code: 0, stdout: 'hello\n' }, ''],
      ];
      for (const [i, [src, extra, want, stderr]] of runs.entries()) {
        await ready(i);
        const { sc } = checkRun(await exec(warm, 'ts', src, extra), want);
        assert.equal(sc.stderr, stderr, `run ${i + 1}: the diagnostics of a cold check`);
      }
      assert.equal((await pool()).hits, runs.length);
      const byWarm = warm.stderr.split('typescript run: typecheck by the warm checker').length - 1;
      assert.equal(byWarm, runs.length, `every pooled run was checked by the warm checker:\n${tail(warm.stderr, 3000)}`);
    });
    await warm.close();
    await cold.close();
  });

  test('aliases answer as their language; unknown and disabled names are refused before any container', { timeout: TEST_TIMEOUT_MS }, async () => {
    const d = await SdkDaemon.start('polyglot-names', { args: ['--languages', 'bash,c,cpp,typescript,ruby', '--pool-size', '0'] });
    await withDaemon(d, async () => {
      checkRun(await exec(d, 'sh', P.bash.hello), { status: 'ok', stdout: 'hello\n', language: 'bash' });
      checkRun(await exec(d, 'c++', P.cpp.hello), { status: 'ok', stdout: 'hello\n', language: 'cpp' });
      checkRun(await exec(d, 'rb', P.ruby.hello), { status: 'ok', stdout: 'hello\n', language: 'ruby' });
      const ids = async () => (await ourContainers()).filter((c) => !c.pool).map((c) => c.id);
      const before = new Set(await ids());
      checkInvalid(await exec(d, 'cobol', 'DISPLAY "HI".'), 'language');
      checkInvalid(await exec(d, 'php', P.php.hello), 'language');
      checkInvalid(await exec(d, 'bash', 'echo x', { variables: { PATH: '/evil' } }), 'PATH');
      checkInvalid(await exec(d, 'bash', 'echo x', { variables: { LD_PRELOAD: '/x.so' } }), 'LD_PRELOAD');
      assert.deepEqual((await ids()).filter((id) => !before.has(id)), [], 'no container for a refused call');
      const r = await d.call('run_python_code', { code: 'print(1)' });
      assert.equal(r.isError, true);
      assert.match(r.content[0].text, /not enabled/);
      const list = await d.call('list_languages', {});
      assert.deepEqual(list.structuredContent.languages.map((x) => x.language), ['typescript', 'bash', 'c', 'cpp', 'ruby']);
      const c = list.structuredContent.languages.find((x) => x.language === 'c');
      assert.match(c.version ?? '', /^\d+\.\d+/, JSON.stringify(c));
      assert.deepEqual(c.compile.slice(0, 1), ['gcc']);
    });
  });
}

test('a language added by configuration alone (Perl) runs through the whole path', { timeout: TEST_TIMEOUT_MS }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcpsbx-perl-'));
  const file = path.join(dir, 'languages.json');
  writeFileSync(file, JSON.stringify({
    languages: [{
      name: 'perl', aliases: ['pl'], image: 'mcp-sandboxd-bash:latest', source_file: 'main.pl',
      runner: 'generic', run: ['perl', '{source}'], version: ['perl', '-e', 'print "perl $^V\\n"'], pool_size: 1,
    }],
  }));
  try {
    const d = await SdkDaemon.start('polyglot-perl', { args: ['--languages-file', file, '--languages', 'perl,python'] });
    await withDaemon(d, async () => {
      const e = d.tools.find((t) => t.name === 'execute_code');
      assert.ok(e.inputSchema.properties.language.enum.includes('perl'), JSON.stringify(e.inputSchema.properties.language));
      checkRun(await exec(d, 'perl', 'print "hello\\n";'), { status: 'ok', exit_code: 0, stdout: 'hello\n', language: 'perl' });
      checkRun(await exec(d, 'pl', 'my $l = <STDIN>; chomp $l; print "got $l\\n"; exit 3;', { stdin: 'x\n' }), { status: 'ok', exit_code: 3, stdout: 'got x\n' });
      const { sc } = checkRun(await exec(d, 'perl', 'open my $f, "<", "in/a.txt" or die; print <$f>; open my $o, ">", "outputs/b.txt" or die; print $o "b\\n"; print "$ENV{n}\\n";',
        { files: [{ path: 'in/a.txt', content: 'a\n' }], variables: { n: 7 } }), { status: 'ok', stdout: 'a\n7\n' });
      assert.ok((sc.files || []).some((f) => f.path === 'outputs/b.txt'), JSON.stringify(sc.files));
      checkRun(await exec(d, 'perl', 'die "boom-marker\\n";'), { status: 'ok', exit_code: 255, stderr: 'boom-marker\n' });
      checkRun(await exec(d, 'perl', '1 while 1;', { timeout_ms: 2000 }), { status: 'timeout' });
      const list = await d.call('list_languages', {});
      const perl = list.structuredContent.languages.find((x) => x.language === 'perl');
      assert.ok(perl, JSON.stringify(list.structuredContent.languages));
      assert.match(perl.version ?? '', /^5\.\d+/, JSON.stringify(perl));
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('no daemon failed and no container is left', { timeout: TEST_TIMEOUT_MS }, () => checkDaemonsAndContainers());
