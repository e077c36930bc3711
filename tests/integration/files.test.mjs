// Integration tests for files in and out (src/tools/files_arg.c,
// src/sandbox/output/outfiles.c, src/tools/files_result.c, the runners'
// outputs) on a real engine through the official SDK clients: a CSV in
// and a chart out, plt.show() captured, a large file as a resource link
// readable by its own session only, a session over its run-store quota
// evicting its own files rather than another session's, hostile files and
// paths, and an older protocol version.
//
//   node --test tests/integration/files.test.mjs
//
// Environment: as stdio.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
  TEST_TIMEOUT_MS, CALL_TIMEOUT_MS, SdkDaemon, HttpDaemon, RawDaemon, withDaemon, preflight, checkRun,
  checkInvalid, ourContainers, textOf, checkDaemonsAndContainers,
} from './lib.mjs';

const sha256 = (b) => createHash('sha256').update(b).digest('hex');

/** Width and height of a PNG, checking its signature and IHDR chunk. */
function pngSize(buf) {
  assert.ok(buf.length > 33, `PNG of ${buf.length} bytes`);
  assert.deepEqual([...buf.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
  assert.equal(buf.subarray(12, 16).toString('latin1'), 'IHDR');
  const iend = buf.subarray(buf.length - 8, buf.length - 4).toString('latin1');
  assert.equal(iend, 'IEND', 'PNG ends with IEND');
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

const images = (r) => r.content.filter((c) => c.type === 'image');

test('preflight: binary present, engine answers', (tc) => preflight(tc));

const CSV = 'city,temp\nOslo,3.5\nRome,18.25\nLima,19.0\nOslo,4.5\n';

test('a CSV in, a pandas summary and a PNG chart out', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await SdkDaemon.start('files-csv');
  await withDaemon(d, async () => {
    const code = `import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv("data/input.csv")
means = df.groupby("city")["temp"].mean()
print(means.to_string())
ax = means.plot.bar()
ax.figure.savefig("outputs/chart.png", dpi=50)
plt.close("all")
means.to_csv("outputs/means.csv")
`;
    const r = await d.call('run_python_code', { code, files: [{ path: 'data/input.csv', content: CSV }] });
    const sc = r.structuredContent;
    checkRun(r, { status: 'ok', exit_code: 0 });
    assert.match(sc.stdout, /Lima\s+19\.0+\nOslo\s+4\.0+\nRome\s+18\.25/);
    const chart = sc.files.find((f) => f.path === 'outputs/chart.png');
    assert.ok(chart, JSON.stringify(sc.files));
    assert.equal(chart.kind, 'file');
    assert.equal(chart.mime_type, 'image/png');
    assert.equal(chart.delivery, 'image');
    assert.match(chart.uri, /^mcp-sandboxd:\/\/runs\/[0-9a-z-]+\.[0-9a-f]{32}\/files\/outputs\/chart\.png$/);
    const img = images(r);
    assert.equal(img.length, 1, JSON.stringify(r.content.map((c) => c.type)));
    assert.equal(img[0].mimeType, 'image/png');
    const png = Buffer.from(img[0].data, 'base64');
    assert.equal(png.length, chart.size);
    assert.equal(sha256(png), chart.sha256);
    const { width, height } = pngSize(png);
    assert.ok(width >= 200 && width <= 2000 && height >= 100 && height <= 2000, `${width}x${height}`);
    assert.ok(png.length > 2000, `a chart of ${png.length} bytes`);
    // A small text file comes embedded, and the summary names both.
    const csv = r.content.find((c) => c.type === 'resource');
    assert.equal(csv.resource.mimeType, 'text/csv');
    assert.match(csv.resource.text, /^city,temp\nLima,19\.0\n/);
    assert.equal(csv.resource.uri, sc.files.find((f) => f.path === 'outputs/means.csv').uri);
    assert.match(textOf(r), /--- files ---\n(.|\n)*outputs\/chart\.png: image\/png/);
    assert.equal(sc.files_truncated, false);
    assert.deepEqual(sc.files_left_out, []);
    // The run store gives the same bytes back.
    const back = await d.client.readResource({ uri: chart.uri });
    assert.equal(sha256(Buffer.from(back.contents[0].blob, 'base64')), chart.sha256);
    await d.close();
  });
});

test('plt.show() twice gives two images, in the order drawn, and open figures come too', { timeout: TEST_TIMEOUT_MS }, async () => {
  for (const pool of ['1', '0']) {
    const d = await SdkDaemon.start(`files-show-${pool}`, { args: ['--pool-size', pool] });
    await withDaemon(d, async () => {
      const code = `import matplotlib.pyplot as plt
plt.figure(figsize=(2, 2), dpi=50); plt.plot([1, 2, 3]); plt.show()
plt.figure(figsize=(4, 2), dpi=50); plt.plot([3, 1]); plt.show()
print("after", len(plt.get_fignums()))
plt.figure(figsize=(2, 4), dpi=50); plt.plot([0])
`;
      const r = await d.call('run_python_code', { code });
      checkRun(r, { status: 'ok', exit_code: 0, stdout: 'after 0\n' });
      const img = images(r);
      assert.equal(img.length, 3, JSON.stringify(r.structuredContent.files));
      const sizes = img.map((i) => pngSize(Buffer.from(i.data, 'base64')));
      assert.deepEqual(sizes, [{ width: 100, height: 100 }, { width: 200, height: 100 }, { width: 100, height: 200 }]);
      assert.deepEqual(r.structuredContent.files.map((f) => [f.path, f.kind]),
        [['plot-1.png', 'plot'], ['plot-2.png', 'plot'], ['plot-3.png', 'plot']]);
      // A program that picks its own backend keeps it.
      const own = await d.call('run_python_code', { code: 'import matplotlib\nmatplotlib.use("svg")\nimport matplotlib.pyplot as plt\nplt.plot([1])\nplt.show()\nprint(matplotlib.get_backend())' });
      checkRun(own, { status: 'ok', stdout: 'svg\n' });
      assert.equal(images(own).length, 1, 'the figure left open is still taken');
      await d.close();
    });
  }
});

test('--max-plots 0 takes no figures', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await SdkDaemon.start('files-noplots', { args: ['--max-plots', '0'] });
  await withDaemon(d, async () => {
    const r = await d.call('run_python_code', { code: 'import matplotlib.pyplot as plt\nplt.plot([1]); plt.show()' });
    checkRun(r, { status: 'ok', exit_code: 0 });
    assert.equal(images(r).length, 0);
    assert.deepEqual(r.structuredContent.files, []);
    await d.close();
  });
});

test('JavaScript: files in, outputs/ and output_files patterns out', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await SdkDaemon.start('files-js');
  await withDaemon(d, async () => {
    const code = `const fs = require('fs');
const rows = fs.readFileSync('in/data.csv', 'utf8').trim().split('\\n');
const bin = fs.readFileSync('in/raw.bin');
fs.writeFileSync('outputs/count.json', JSON.stringify({ rows: rows.length, bytes: [...bin] }));
fs.mkdirSync('report/deep', { recursive: true });
fs.writeFileSync('report/deep/a.md', '# A');
fs.writeFileSync('report/b.txt', 'b');
fs.writeFileSync('skip.txt', 'not asked for');
`;
    const r = await d.call('run_js_code', {
      code,
      files: [{ path: 'in/data.csv', content: CSV }, { path: './in//raw.bin', content: 'AP+A', encoding: 'base64' }],
      output_files: ['report/**/*.md', 'report/*.txt'],
    });
    checkRun(r, { status: 'ok', exit_code: 0 });
    const files = r.structuredContent.files;
    assert.deepEqual(files.map((f) => f.path), ['outputs/count.json', 'report/deep/a.md', 'report/b.txt']);
    const count = r.content.find((c) => c.type === 'resource' && c.resource.uri === files[0].uri);
    assert.deepEqual(JSON.parse(count.resource.text), { rows: 5, bytes: [0, 255, 128] });
    assert.equal(files[1].mime_type, 'text/markdown');
    await d.close();
  });
});

// The run store of the daemon below: a session keeps up to 7 MB, all
// sessions together 10 MB (each file costs 256 bytes more).
const SESSION_STORE = 7_000_000;
const STORE = 10_000_000;
const MB3 = 3_000_000;

test('a 5 MB file comes back as a resource_link; only its own session may read it; a session over its run-store quota evicts its own oldest files, not another session\'s', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await HttpDaemon.start('files-link', {
    args: ['--run-store-session-max-bytes', String(SESSION_STORE), '--run-store-max-bytes', String(STORE)],
  });
  const sessions = [];
  try {
    for (let i = 0; i < 2; i++) {
      const c = new Client({ name: `files-link-${i}`, version: '1.0.0' });
      await c.connect(new StreamableHTTPClientTransport(new URL(d.url)));
      sessions.push(c);
    }
    const [a, b] = sessions;
    await a.listTools();
    const r = await a.callTool({
      name: 'run_python_code',
      arguments: { code: 'import random\nopen("outputs/big.bin", "wb").write(random.Random(7).randbytes(5_000_000))\nprint(open("outputs/big.bin", "rb").read(4).hex())' },
    }, undefined, { timeout: CALL_TIMEOUT_MS });
    checkRun(r, { status: 'ok', exit_code: 0 });
    const [f] = r.structuredContent.files;
    assert.equal(f.size, 5_000_000);
    assert.equal(f.delivery, 'link');
    assert.equal(f.mime_type, 'application/octet-stream');
    const link = r.content.find((c) => c.type === 'resource_link');
    assert.ok(link, JSON.stringify(r.content.map((c) => c.type)));
    assert.equal(link.uri, f.uri);
    assert.equal(link.name, 'outputs/big.bin');
    assert.equal(link.size, 5_000_000);
    const back = await a.readResource({ uri: f.uri });
    const bytes = Buffer.from(back.contents[0].blob, 'base64');
    assert.equal(bytes.length, 5_000_000);
    assert.equal(sha256(bytes), f.sha256);
    assert.equal(bytes.subarray(0, 4).toString('hex'), r.structuredContent.stdout.trim());
    // Another session: the same answer as for a URI that never existed.
    await assert.rejects(b.readResource({ uri: f.uri }), (e) => {
      assert.equal(e.code, -32002, String(e));
      assert.match(e.message, /session that ran it/);
      return true;
    });
    await assert.rejects(a.readResource({ uri: f.uri.replace(/(runs\/[0-9a-z-]+\.)[0-9a-f]+/, '$100000000000000000000000000000000') }), /-32002/);
    const templates = await a.listResourceTemplates();
    assert.ok(templates.resourceTemplates.some((t) => t.uriTemplate.startsWith('mcp-sandboxd://runs/')));

    // Quotas: a holds big (5 MB); b puts 3 MB, then a three times 3 MB.
    // Each of a's puts over its 7 MB makes room from a's own oldest; with
    // one store-wide FIFO of 10 MB, a's fourth file would have evicted b's
    // (then the oldest).
    const put = async (c, tag) => {
      const r3 = await c.callTool({
        name: 'run_python_code',
        arguments: { code: `import random\nopen("outputs/${tag}.bin", "wb").write(random.Random("${tag}").randbytes(${MB3}))` },
      }, undefined, { timeout: CALL_TIMEOUT_MS });
      checkRun(r3, { status: 'ok', exit_code: 0 });
      assert.equal(r3.structuredContent.files[0].size, MB3);
      return r3.structuredContent.files[0];
    };
    const kept = async (c, file) => {
      try {
        const got = await c.readResource({ uri: file.uri });
        assert.equal(sha256(Buffer.from(got.contents[0].blob, 'base64')), file.sha256);
        return true;
      } catch (e) {
        if (e.code !== -32002) throw e;
        return false;
      }
    };
    const b1 = await put(b, 'b1');
    const a2 = await put(a, 'a2');
    const a3 = await put(a, 'a3');
    const a4 = await put(a, 'a4');
    assert.deepEqual(
      { b1: await kept(b, b1), big: await kept(a, f), a2: await kept(a, a2), a3: await kept(a, a3), a4: await kept(a, a4) },
      { b1: true, big: false, a2: false, a3: true, a4: true },
    );
  } finally {
    for (const c of sessions) await c.close().catch(() => {});
    await d.stop();
  }
  assert.equal(d.exit.code, 0, d.stderr);
});

test('symlinks, FIFOs, devices, hard links and 10,000 files: nothing followed, caps kept, no hang', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await SdkDaemon.start('files-hostile');
  await withDaemon(d, async () => {
    for (const language of ['python', 'javascript']) {
      const code = language === 'python'
        ? `import os
os.symlink("/etc/passwd", "outputs/passwd")
os.symlink("/etc", "outputs/etc")
os.mkfifo("outputs/fifo")
open("secret.txt", "w").write("x")
os.link("secret.txt", "outputs/hardlink")
os.makedirs("outputs/many")
for i in range(10000):
    open("outputs/many/%05d.txt" % i, "w").write(str(i))
print("made")
`
        : `const fs = require('fs');
fs.symlinkSync('/etc/passwd', 'outputs/passwd');
fs.symlinkSync('/etc', 'outputs/etc');
require('child_process').execFileSync('mkfifo', ['outputs/fifo']);
fs.writeFileSync('secret.txt', 'x');
fs.linkSync('secret.txt', 'outputs/hardlink');
fs.mkdirSync('outputs/many');
for (let i = 0; i < 10000; i++) fs.writeFileSync('outputs/many/' + String(i).padStart(5, '0') + '.txt', String(i));
console.log('made');
`;
      const r = await d.call('execute_code', { language, code, output_files: ['outputs/etc/*', '*/passwd'] });
      checkRun(r, { status: 'ok', exit_code: 0, stdout: 'made\n' });
      const sc = r.structuredContent;
      assert.equal(sc.files_truncated, true);
      assert.equal(sc.files.length, 50, `${language}: ${sc.files.length} files`);
      for (const f of sc.files) assert.match(f.path, /^outputs\/many\/000\d\d\.txt$/);
      const reasons = Object.fromEntries(sc.files_left_out.map((l) => [l.path, l.reason]));
      assert.match(reasons['outputs/passwd'], /symbolic link/, JSON.stringify(sc.files_left_out));
      assert.match(reasons['outputs/etc'], /symbolic link/);
      assert.match(reasons['outputs/fifo'], /not a regular file/);
      assert.match(reasons['outputs/hardlink'], /hard-linked/);
      assert.match(textOf(r), /left out: \d+ more/);
      assert.ok(!JSON.stringify(r).includes('root:x:0:0'), 'nothing of /etc/passwd came back');
    }
    await d.close();
  });
});

test('bad files and output_files arguments are refused before any container', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await SdkDaemon.start('files-bad', { args: ['--pool-size', '0', '--max-files-in', '3', '--max-file-in-bytes', '10'] });
  await withDaemon(d, async () => {
    const cases = [
      [{ files: [{ path: '../x', content: '' }] }, "files[0].path", "'..'"],
      [{ files: [{ path: '/etc/x', content: '' }] }, 'absolute'],
      [{ files: [{ path: 'a\u0000b', content: '' }] }, 'control character'],
      [{ files: [{ path: 'a\nb', content: '' }] }, 'control character'],
      [{ files: [{ path: 'x'.repeat(300), content: '' }] }, 'over 255 bytes'],
      [{ files: [{ path: 'main.py', content: '' }] }, "runner's own"],
      [{ files: [{ path: 'd/', content: '' }] }, 'slash'],
      [{ files: [{ path: 'a', content: '' }, { path: 'a/b', content: '' }] }, 'clashes'],
      [{ files: [{ path: 'a', content: '@@@@', encoding: 'base64' }] }, 'not base64'],
      [{ files: [{ path: 'a', content: 'x'.repeat(11) }] }, '--max-file-in-bytes'],
      [{ files: [1, 2, 3, 4].map((i) => ({ path: `f${i}`, content: '' })) }, '--max-files-in'],
      [{ files: [{ path: 'a', content: 'x', encoding: 'utf-16' }] }, 'encoding'],
      [{ output_files: ['../../etc/passwd'] }, "output_files[0]", "'..'"],
      [{ output_files: ['/etc/*'] }, 'absolute'],
      [{ output_files: ['a**b'] }, "'**'"],
    ];
    for (const [args, ...mention] of cases) {
      const r = await d.call('run_python_code', { code: 'print(1)', ...args });
      checkInvalid(r, ...mention);
    }
    assert.deepEqual(await ourContainers(), [], 'no container was made for a refused call');
    await d.close();
  });
});

test('an older protocol (2025-03-26) gets images, embedded text and the link in text', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = new RawDaemon('files-old');
  await withDaemon(d, async () => {
    const init = await d.initialize('2025-03-26', 1);
    assert.equal(init.result.protocolVersion, '2025-03-26');
    const code = `import matplotlib.pyplot as plt
plt.plot([1, 2]); plt.show()
open("outputs/note.txt", "w").write("hello")
open("outputs/big.bin", "wb").write(bytes(range(256)) * 2000)
`;
    const r = (await d.request('tools/call', { name: 'run_python_code', arguments: { code } }, 2)).result;
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.equal(r.structuredContent, undefined);
    assert.deepEqual(r.content.map((c) => c.type), ['text', 'image', 'resource']);
    assert.equal(r.content[2].resource.text, 'hello');
    const m = /outputs\/big\.bin: application\/octet-stream, 500\.0 KiB: (mcp-sandboxd:\/\/runs\/\S+) \(resources\/read/.exec(r.content[0].text);
    assert.ok(m, r.content[0].text);
    const back = await d.request('resources/read', { uri: m[1] }, 3);
    assert.equal(Buffer.from(back.result.contents[0].blob, 'base64').length, 512000);
  });
  await d.close();
});

test('every daemon exited cleanly and left no container', { timeout: TEST_TIMEOUT_MS }, () => checkDaemonsAndContainers());
