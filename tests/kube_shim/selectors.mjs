// Label and field selectors as the API server reads them (apimachinery's
// labels.Parse and fields.ParseSelector), and resource quantities
// (resource.Quantity). A selector that cannot be parsed is a 400
// BadRequest, as there.

import { ApiError, badRequest } from './status.mjs';

const KEY = /^(?:[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const VALUE = /^(?:[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

export const labelKeyOk = (k) => typeof k === 'string' && KEY.test(k) && k.split('/')[0].length <= 253;
export const labelValueOk = (v) => typeof v === 'string' && VALUE.test(v);

// Splits s on commas outside parentheses.
function splitTop(s) {
  const out = [];
  let depth = 0;
  let cur = '';
  for (const c of s) {
    if (c === '(') depth++;
    if (c === ')') depth--;
    if (c === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out;
}

// "k=v,k2!=v2,k3 in (a,b),!k4,k5" as a list of requirements; "" selects all.
export function parseLabelSelector(s) {
  if (s === undefined || s === null || s.trim() === '') return [];
  const reqs = [];
  for (const raw of splitTop(s)) {
    const t = raw.trim();
    let m;
    const bad = (why) => {
      throw new ApiError(badRequest(`unable to parse requirement: ${why}: ${JSON.stringify(t)}`));
    };
    if ((m = /^!\s*(\S+)$/.exec(t))) reqs.push({ key: m[1], op: '!' });
    else if ((m = /^([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)$/.exec(t)))
      reqs.push({ key: m[1], op: m[2] === '!=' ? '!=' : '=', values: [m[3]] });
    else if ((m = /^([^\s!=(),]+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(t)))
      reqs.push({ key: m[1], op: m[2], values: m[3].split(',').map((v) => v.trim()) });
    else if ((m = /^([^\s!=(),]+)$/.exec(t))) reqs.push({ key: m[1], op: 'exists' });
    else bad('found an unexpected token');
    const r = reqs[reqs.length - 1];
    if (!labelKeyOk(r.key)) bad(`key ${JSON.stringify(r.key)} is not a qualified name`);
    for (const v of r.values || []) if (!labelValueOk(v)) bad(`value ${JSON.stringify(v)} is not a label value`);
  }
  return reqs;
}

export function labelsMatch(reqs, labels = {}) {
  return reqs.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(labels, r.key);
    const v = labels[r.key];
    switch (r.op) {
      case '=':
        return has && v === r.values[0];
      case '!=':
        return !has || v !== r.values[0];
      case 'in':
        return has && r.values.includes(v);
      case 'notin':
        return !has || !r.values.includes(v);
      case 'exists':
        return has;
      default:
        return !has;
    }
  });
}

// The Pod fields the API server lets a field selector name (pods'
// GetAttrs), those the shim's Pods can have.
const POD_FIELDS = {
  'metadata.name': (p) => p.metadata.name,
  'metadata.namespace': (p) => p.metadata.namespace,
  'spec.nodeName': (p) => p.spec.nodeName || '',
  'spec.restartPolicy': (p) => p.spec.restartPolicy || '',
  'spec.schedulerName': (p) => p.spec.schedulerName || '',
  'spec.serviceAccountName': (p) => p.spec.serviceAccountName || '',
  'spec.hostNetwork': (p) => String(Boolean(p.spec.hostNetwork)),
  'status.phase': (p) => (p.status && p.status.phase) || '',
  'status.podIP': () => '',
  'status.nominatedNodeName': () => '',
};

// Splits on unescaped commas, and "a=b" on its first unescaped operator;
// the escapes ("\\", "\,", "\=") are the ones fields.ParseSelector reads.
export function parseFieldSelector(s) {
  if (s === undefined || s === null || s.trim() === '') return [];
  const parts = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && i + 1 < s.length) cur += s[i] + s[++i];
    else if (s[i] === ',') {
      parts.push(cur);
      cur = '';
    } else cur += s[i];
  }
  parts.push(cur);
  const unescape = (v) => v.replace(/\\(.)/g, '$1');
  return parts.map((part) => {
    const m = /^([^=!\\]+?)\s*(!=|==|=)(.*)$/s.exec(part.trim());
    if (!m) throw new ApiError(badRequest(`invalid selector: '${s}'; can't understand '${part}'`));
    const field = m[1].trim();
    if (!POD_FIELDS[field]) throw new ApiError(badRequest(`field label not supported: ${field}`));
    return { field, neg: m[2] === '!=', value: unescape(m[3]) };
  });
}

export const fieldsMatch = (reqs, pod) =>
  reqs.every((r) => (POD_FIELDS[r.field](pod) === r.value) !== r.neg);

// ---- quantities -------------------------------------------------------

const SUFFIX = {
  '': 1, n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

// A quantity ("512Mi", "500m", "1.5", "1e3", or a JSON number) in base
// units, or null when it is not one (the caller reports the field).
export function parseQuantity(q) {
  if (typeof q === 'number') return Number.isFinite(q) && q >= 0 ? q : null;
  if (typeof q !== 'string') return null;
  const m = /^\+?(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE]([+-]?\d+))?$/.exec(q);
  if (!m) return null;
  const base = Number(m[1]);
  return m[3] !== undefined ? base * 10 ** Number(m[3]) : base * SUFFIX[m[2] || ''];
}
