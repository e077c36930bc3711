// Integration tests for the `variables` argument (src/tools/variables.c,
// the runners' binding) on a real engine through the official SDK client:
// every JSON type in both languages, pooled and on demand, and names that
// would hide something of the language refused before any container.
//
//   node --test tests/integration/variables.test.mjs
//
// Environment: as stdio.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  TEST_TIMEOUT_MS, SdkDaemon, withDaemon, preflight, checkRun, checkInvalid, ourContainers,
  checkDaemonsAndContainers,
} from './lib.mjs';

const VARIABLES = {
  s: 'h\u00e9llo \u{1F600}\n"quoted"',
  i: -42,
  big: 2 ** 53,
  f: 2.5,
  t: true,
  n: null,
  arr: [1, 'two', [3.5], { k: null }],
  // JSON.parse keeps "__proto__" as an own key; an object literal would not.
  obj: JSON.parse('{"a":{"b":[false]},"__proto__":1,"constructor":"c"}'),
  empty: {},
};

const NAMES = Object.keys(VARIABLES);
const sorted = (v) => JSON.stringify(v, (k, x) => (x && typeof x === 'object' && !Array.isArray(x)
  ? Object.fromEntries(Object.keys(x).sort().map((y) => [y, x[y]])) : x));

const PROGRAMS = {
  python: `import json
for k in ${JSON.stringify(NAMES)}:
    v = globals()[k]
    print(k, type(v).__name__, json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
`,
  javascript: `const sk = ${sorted.toString()};
const all = { ${NAMES.join(', ')} };
for (const k of Object.keys(all)) console.log(k, all[k] === null ? 'null' : Array.isArray(all[k]) ? 'array' : typeof all[k], sk(all[k]));
try { s = 'x'; } catch (e) { console.log(e.constructor.name); }
`,
};
const TYPES = {
  python: ['str', 'int', 'int', 'float', 'bool', 'NoneType', 'list', 'dict', 'dict'],
  javascript: ['string', 'number', 'number', 'number', 'boolean', 'null', 'array', 'object', 'object'],
};

function expected(language) {
  let want = '';
  NAMES.forEach((k, i) => { want += `${k} ${TYPES[language][i]} ${sorted(VARIABLES[k])}\n`; });
  if (language === 'javascript') want += 'TypeError\n';
  return want;
}

test('preflight: binary present, engine answers', (tc) => preflight(tc));

for (const pool of ['1', '0']) {
  test(`every JSON type arrives as the language's value (pool size ${pool})`, { timeout: TEST_TIMEOUT_MS }, async () => {
    const d = await SdkDaemon.start(`variables-pool${pool}`, { args: ['--pool-size', pool] });
    await withDaemon(d, async () => {
      for (const language of ['python', 'javascript']) {
        const r = await d.call('execute_code', { language, code: PROGRAMS[language], variables: VARIABLES });
        checkRun(r, { status: 'ok', exit_code: 0, stdout: expected(language) });
      }
      // The one-language tools take them too; a variable is not source:
      // quotes and newlines in it are only data.
      const inj = { code: '";\nprint("injected")' };
      let r = await d.call('run_python_code', { code: 'import json\nprint(json.dumps(code))', variables: inj });
      checkRun(r, { status: 'ok', stdout: `${JSON.stringify(inj.code)}\n` });
      r = await d.call('run_js_code', { code: 'console.log(JSON.stringify(code))', variables: inj });
      checkRun(r, { status: 'ok', stdout: `${JSON.stringify(inj.code)}\n` });
      await d.close();
      assert.equal(d.exit.code, 0);
    });
  });
}

test('hostile names are refused before any container exists, naming the variable', { timeout: TEST_TIMEOUT_MS }, async () => {
  const d = await SdkDaemon.start('variables-refused', { args: ['--pool-size', '0', '--max-variables-bytes', '64'] });
  await withDaemon(d, async () => {
    const cases = {
      python: ['__import__', 'os', '1abc', 'print', 'class', '__builtins__'],
      javascript: ['constructor', '__proto__', '1abc', 'require', 'process', 'class', 'globalThis'],
    };
    for (const [language, names] of Object.entries(cases)) {
      for (const name of names) {
        const variables = JSON.parse(`{"ok": 1, ${JSON.stringify(name)}: 2}`);
        const r = await d.call('execute_code', { language, code: 'x', variables });
        checkInvalid(r, `variable '${name}'`);
      }
    }
    checkInvalid(await d.call('run_python_code', { code: 'x', variables: [1, 2] }), 'variables');
    checkInvalid(await d.call('run_python_code', { code: 'x', variables: 'rows=1' }), 'variables');
    checkInvalid(await d.call('run_python_code', { code: 'x', variables: { rows: 'x'.repeat(100) } }), 'the limit is 64 bytes');
    assert.deepEqual(await ourContainers(), [], 'no container was made for a refused call');
    // A name fine in one language is fine there, refused only where it hides something.
    const r = await d.call('execute_code', { language: 'javascript', code: 'console.log(os)', variables: { os: 'x' } });
    checkRun(r, { status: 'ok', stdout: 'x\n' });
    await d.close();
    assert.equal(d.exit.code, 0);
  });
});

test('every daemon exited cleanly and no container is left', async () => {
  await checkDaemonsAndContainers();
});
