// Integration tests for validate_code (src/tools/tools.c's check result,
// the runners' check mode) on a real engine through the official SDK
// client, which also checks each structuredContent against the tool's own
// outputSchema: good and bad code in both languages, CommonJS and ES
// modules, pooled and on demand; nothing of the code runs.
//
//   node --test tests/integration/validate.test.mjs
//
// Environment: as stdio.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  TEST_TIMEOUT_MS, SdkDaemon, withDaemon, preflight, checkInvalid, textOf, checkDaemonsAndContainers,
} from './lib.mjs';

// [language, code, expected structuredContent.error (null: valid)]
const CASES = [
  ['python', 'import time\ntime.sleep(30)\nprint("ran")\n', null],
  ['python', 'x = 1\ny = (\n', { message: "SyntaxError: '(' was never closed", line: 2, column: 5 }],
  ['python', 'def f():\nreturn 1\n', { message: 'IndentationError: expected an indented block after function definition on line 1', line: 2, column: 1 }],
  ['javascript', 'const t = Date.now();\nwhile (Date.now() - t < 30000);\nconsole.log("ran");\n', null],
  ['javascript', 'let x = 1;\nlet y = (;\n', { message: "SyntaxError: Unexpected token ';'", line: 2, column: 10 }],
  ['javascript', "import fs from 'fs';\nawait new Promise((r) => setTimeout(r, 30000));\nexport const a = fs;\n", null],
  ['javascript', "import fs from 'fs';\nconst = 2;\n", { message: "SyntaxError: Unexpected token '='", line: 2, column: 7 }],
];

test('preflight: binary present, engine answers', (tc) => preflight(tc));

for (const pool of ['1', '0']) {
  test(`validate_code answers valid or the first error, running nothing (pool size ${pool})`, { timeout: TEST_TIMEOUT_MS }, async () => {
    const d = await SdkDaemon.start(`validate-pool${pool}`, { args: ['--pool-size', pool] });
    await withDaemon(d, async () => {
      const tools = (await d.client.listTools()).tools;
      const def = tools.find((t) => t.name === 'validate_code');
      assert.ok(def, 'validate_code is listed');
      assert.equal(def.annotations.readOnlyHint, true);
      for (const [language, code, error] of CASES) {
        const t0 = Date.now();
        const r = await d.call('validate_code', { language, code });
        const ctx = `${language} ${JSON.stringify(code.slice(0, 30))}: ${JSON.stringify(r)}`;
        // The programs above would take 30 s if anything of them ran.
        assert.ok(Date.now() - t0 < 20_000, `took ${Date.now() - t0} ms; ${ctx}`);
        assert.equal(r.isError, false, ctx);
        const sc = r.structuredContent;
        assert.equal(sc.language, language, ctx);
        assert.equal(sc.valid, error === null, ctx);
        assert.deepEqual(sc.error, error, ctx);
        assert.ok(textOf(r).startsWith(error === null ? `valid ${language}` : `invalid ${language}: line ${error.line}`), ctx);
      }
      checkInvalid(await d.call('validate_code', { language: 'ruby', code: 'x' }), 'language');
      checkInvalid(await d.call('validate_code', { language: 'python' }), "'code'");
      await d.close();
      assert.equal(d.exit.code, 0);
    });
  });
}

test('every daemon exited cleanly and no container is left', async () => {
  await checkDaemonsAndContainers();
});
