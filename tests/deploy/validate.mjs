// The Kubernetes manifests of deploy/kubernetes/ and the Pod the
// kubernetes backend sends, checked against the Kubernetes API's OpenAPI
// schemas (npm's kubernetes-models, generated from them), offline.
//
//   node tests/deploy/validate.mjs [--bin build/mcp-sandboxd]
//
// Every YAML document of every file there must be an object of a kind the
// schemas know, valid, and named; the kustomization must list files that
// exist and leave none out (but the examples named below). The Pod is
// what `--backend kubernetes --dry-run-create LANGUAGE` prints for each
// language, with a kubeconfig that names a server nobody asks.
// Prints one line per object and exits 1 on the first problem.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { parseAllDocuments } from 'yaml';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const DEPLOY = path.join(ROOT, 'deploy', 'kubernetes');
// Files kept beside the kustomization but not applied by it.
const EXAMPLES = new Set(['runtimeclass-gvisor.yaml']);

const { values: opt } = parseArgs({
  options: { bin: { type: 'string', default: path.join(ROOT, 'build', 'mcp-sandboxd') } },
  strict: true,
});

function fail(msg) {
  console.error(`deploy: ${msg}`);
  process.exit(1);
}

/** The kubernetes-models class for apiVersion and kind. */
async function modelOf(apiVersion, kind) {
  const group = apiVersion.includes('/') ? apiVersion : `v1`;
  if (!/^[a-z0-9.]*\/?v[0-9a-z]+$/.test(group) || !/^[A-Za-z]+$/.test(kind)) return null;
  try {
    const mod = await import(`kubernetes-models/${group}/${kind}`);
    return mod[kind] ?? null;
  } catch {
    return null;
  }
}

async function check(obj, where) {
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) fail(`${where}: not an object`);
  const Model = await modelOf(String(obj.apiVersion ?? ''), String(obj.kind ?? ''));
  if (!Model) fail(`${where}: ${obj.apiVersion} ${obj.kind} is not a kind the Kubernetes schemas know`);
  if (!obj.metadata?.name) fail(`${where}: ${obj.kind} has no metadata.name`);
  try {
    new Model(obj).validate();
  } catch (e) {
    fail(`${where}: ${obj.kind} ${obj.metadata.name}: ${e.message}`);
  }
  console.log(`deploy: ${where}: ${obj.apiVersion} ${obj.kind} ${obj.metadata.name}: valid`);
}

function docsOf(file) {
  const docs = parseAllDocuments(readFileSync(file, 'utf8'));
  for (const d of docs) if (d.errors.length) fail(`${path.basename(file)}: ${d.errors[0].message}`);
  return docs.map((d) => d.toJS()).filter((o) => o !== null);
}

async function manifests() {
  const files = readdirSync(DEPLOY).filter((f) => f.endsWith('.yaml')).sort();
  const kust = docsOf(path.join(DEPLOY, 'kustomization.yaml'))[0];
  if (kust?.kind !== 'Kustomization' || !Array.isArray(kust.resources)) fail('kustomization.yaml: no resources');
  for (const r of kust.resources) if (!existsSync(path.join(DEPLOY, r))) fail(`kustomization.yaml: ${r} does not exist`);
  for (const f of files) {
    if (f === 'kustomization.yaml') continue;
    if (!kust.resources.includes(f) && !EXAMPLES.has(f)) fail(`kustomization.yaml leaves ${f} out`);
    for (const [i, o] of docsOf(path.join(DEPLOY, f)).entries()) await check(o, `${f}#${i + 1}`);
  }
}

async function pods() {
  const dir = mkdtempSync(path.join(tmpdir(), 'mcpsbx-deploy-'));
  try {
    const kc = path.join(dir, 'kubeconfig');
    writeFileSync(kc, [
      'apiVersion: v1', 'kind: Config', 'current-context: c',
      'clusters: [{name: k, cluster: {server: "https://127.0.0.1:1"}}]',
      'users: [{name: u, user: {token: unused}}]',
      'contexts: [{name: c, context: {cluster: k, user: u, namespace: mcp-sandboxd}}]', '',
    ].join('\n'));
    const list = execFileSync(opt.bin, ['--list-images'], { encoding: 'utf8' });
    for (const line of list.trim().split('\n')) {
      const lang = line.split(/\s+/)[0];
      const out = execFileSync(opt.bin, ['--backend', 'kubernetes', '--kubeconfig', kc, '--dry-run-create', lang], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '' },
      });
      await check(JSON.parse(out), `the Pod of a ${lang} run`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await manifests();
await pods();
console.log('deploy: every manifest and Pod is valid');
