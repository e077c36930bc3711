// Admission of a Pod create: the body's shape (400 BadRequest, as the
// decoder), its validation (422 Invalid with field causes, the texts of
// apimachinery's field package), the API server's defaulting, and the
// RuntimeClass admission plugin (403 Forbidden). What comes out is the
// stored Pod's metadata and spec and a plan of the settings pod.mjs turns
// into a Docker container.
//
// Every field is on one of three lists: honoured (mapped to the engine),
// accepted because it does not change what runs (IGNORED_*, see shim.mjs's
// header), or refused with 422 naming the field. A field on no list is
// refused too: nothing is dropped in silence.

import fs from 'node:fs';
import path from 'node:path';
import { ApiError, badRequest, fe, forbidden, invalid } from './status.mjs';
import { labelKeyOk, labelValueOk, parseQuantity } from './selectors.mjs';

const NO = 'not supported by kube-shim';
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const isSubdomain = (s) =>
  typeof s === 'string' && s.length <= 253 && s.split('.').every((l) => DNS_LABEL.test(l));
const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const isInt = (v) => Number.isInteger(v);

const META_OK = ['name', 'generateName', 'namespace', 'labels', 'annotations'];
const META_IGNORED = ['uid', 'creationTimestamp', 'managedFields', 'generation', 'selfLink'];
const SPEC_OK = [
  'containers', 'volumes', 'restartPolicy', 'activeDeadlineSeconds', 'terminationGracePeriodSeconds',
  'automountServiceAccountToken', 'hostNetwork', 'hostPID', 'hostIPC', 'shareProcessNamespace',
  'runtimeClassName', 'securityContext', 'hostname', 'nodeName', 'serviceAccountName', 'serviceAccount',
  'schedulerName', 'initContainers', 'ephemeralContainers', 'os',
];
// Accepted without effect: scheduling on a one-node cluster, DNS and service
// environment in a pod that has no network, pull credentials (never pulled).
const SPEC_IGNORED = ['enableServiceLinks', 'dnsPolicy', 'dnsConfig', 'subdomain', 'tolerations', 'imagePullSecrets'];
const CTR_OK = [
  'name', 'image', 'imagePullPolicy', 'command', 'args', 'workingDir', 'env', 'stdin', 'stdinOnce', 'tty',
  'resources', 'securityContext', 'volumeMounts',
];
const CTR_IGNORED = ['ports', 'terminationMessagePath', 'terminationMessagePolicy'];

function unknownFields(obj, where, ok, ignored, errs) {
  for (const k of Object.keys(obj)) if (!ok.includes(k) && !ignored.includes(k)) errs.push(fe.forbidden(`${where}.${k}`, NO));
}

// Kubernetes' $(VAR) expansion (third_party/forked/golang/expansion):
// "$$" is "$", a defined $(NAME) its value, anything else left as written.
export function expand(s, env) {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] !== '$' || i + 1 >= s.length) out += s[i];
    else if (s[i + 1] === '$') out += '$', i++;
    else if (s[i + 1] === '(') {
      const j = s.indexOf(')', i + 2);
      if (j < 0) return out + s.slice(i);
      const name = s.slice(i + 2, j);
      out += env.has(name) ? env.get(name) : s.slice(i, j + 1);
      i = j;
    } else out += '$';
  }
  return out;
}

// The security settings a container gets: its own over the pod's.
function security(podSc, ctrSc, errs, plan, prefix) {
  for (const [sc, where, extra] of [
    [podSc, 'spec.securityContext', ['supplementalGroups', 'sysctls']],
    [ctrSc, `${prefix}.securityContext`, ['allowPrivilegeEscalation', 'privileged', 'readOnlyRootFilesystem', 'capabilities', 'procMount']],
  ]) {
    unknownFields(sc, where, ['runAsUser', 'runAsGroup', 'runAsNonRoot', 'seccompProfile', 'appArmorProfile', ...extra], [], errs);
    for (const k of ['runAsUser', 'runAsGroup'])
      if (sc[k] !== undefined && !(isInt(sc[k]) && sc[k] >= 0 && sc[k] <= 2147483647))
        errs.push(fe.invalid(`${where}.${k}`, sc[k], 'must be between 0 and 2147483647, inclusive'));
    const sp = sc.seccompProfile;
    if (sp !== undefined) {
      if (!isObj(sp) || !['RuntimeDefault', 'Unconfined', 'Localhost'].includes(sp.type))
        errs.push(fe.notSupported(`${where}.seccompProfile.type`, sp && sp.type, ['Localhost', 'RuntimeDefault', 'Unconfined']));
      else if (sp.type === 'Localhost' && !sp.localhostProfile)
        errs.push(fe.required(`${where}.seccompProfile.localhostProfile`, 'must be set when seccomp type is Localhost'));
    }
    const ap = sc.appArmorProfile;
    if (ap !== undefined && !(isObj(ap) && ['RuntimeDefault', 'Unconfined'].includes(ap.type)))
      errs.push(fe.forbidden(`${where}.appArmorProfile`, `${NO} (RuntimeDefault and Unconfined only)`));
  }
  const pick = (k) => (ctrSc[k] !== undefined ? ctrSc[k] : podSc[k]);
  plan.uid = pick('runAsUser');
  plan.gid = pick('runAsGroup');
  plan.runAsNonRoot = pick('runAsNonRoot') === true;
  plan.seccomp = pick('seccompProfile') || null;
  plan.apparmor = pick('appArmorProfile') || null;
  plan.groupAdd = (podSc.supplementalGroups || []).map(String);
  if (podSc.sysctls !== undefined) {
    if (!Array.isArray(podSc.sysctls)) errs.push(fe.invalid('spec.securityContext.sysctls', podSc.sysctls, 'must be a list'));
    else plan.sysctls = Object.fromEntries(podSc.sysctls.map((s) => [String(s.name), String(s.value)]));
  }
  const where = `${prefix}.securityContext`;
  if (ctrSc.privileged === true) errs.push(fe.forbidden(`${where}.privileged`, `${NO}: kube-shim runs no privileged pods`));
  if (ctrSc.procMount !== undefined && ctrSc.procMount !== 'Default') errs.push(fe.forbidden(`${where}.procMount`, NO));
  plan.noNewPrivs = ctrSc.allowPrivilegeEscalation === false;
  plan.readOnlyRoot = ctrSc.readOnlyRootFilesystem === true;
  const caps = ctrSc.capabilities || {};
  unknownFields(caps, `${where}.capabilities`, ['add', 'drop'], [], errs);
  plan.capAdd = (caps.add || []).map(String);
  plan.capDrop = (caps.drop || []).map(String);
  if (plan.noNewPrivs && plan.capAdd.some((c) => /^(CAP_)?SYS_ADMIN$/.test(c)))
    errs.push(fe.invalid(`${where}`, 'SYS_ADMIN', 'cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN'));
}

// Requests and limits: memory and cpu honoured, ephemeral-storage taken and
// not enforced (see shim.mjs), anything else refused. Requests default to
// limits, as the API server's defaulting does.
function resources(res, errs, plan, prefix) {
  const where = `${prefix}.resources`;
  unknownFields(res, where, ['limits', 'requests'], [], errs);
  const read = (set, what) => {
    const out = {};
    for (const [k, v] of Object.entries(set || {})) {
      if (!['cpu', 'memory', 'ephemeral-storage'].includes(k)) {
        errs.push(fe.forbidden(`${where}.${what}[${k}]`, NO));
        continue;
      }
      const n = parseQuantity(v);
      if (n === null) errs.push(fe.invalid(`${where}.${what}[${k}]`, v, 'must be a valid resource quantity'));
      else out[k] = n;
    }
    return out;
  };
  const limits = read(res.limits, 'limits');
  const requests = read(res.requests, 'requests');
  if (res.limits) res.requests = { ...Object.fromEntries(Object.entries(res.limits)), ...(res.requests || {}) };
  for (const k of Object.keys(limits)) if (requests[k] === undefined) requests[k] = limits[k];
  for (const k of Object.keys(requests))
    if (limits[k] !== undefined && requests[k] > limits[k])
      errs.push(fe.invalid(`${where}.requests`, res.requests[k], `must be less than or equal to ${k} limit of ${res.limits[k]}`));
  if (limits.memory !== undefined) plan.memory = Math.ceil(limits.memory);
  // The kubelet's smallest CFS quota is 1 ms a 100 ms period: 10m.
  if (limits.cpu !== undefined) plan.nanoCpus = Math.max(1e7, Math.round(limits.cpu * 1e9));
  plan.cpuShares = requests.cpu !== undefined ? Math.max(2, Math.floor(requests.cpu * 1024)) : 2;
  const both = (k) => limits[k] !== undefined && requests[k] === limits[k];
  const any = ['cpu', 'memory'].some((k) => limits[k] !== undefined || requests[k] !== undefined);
  plan.qosClass = both('cpu') && both('memory') ? 'Guaranteed' : any ? 'Burstable' : 'BestEffort';
}

// Volumes: emptyDir only; medium Memory is a tmpfs (or /dev/shm's size),
// disk an anonymous engine volume (without a sizeLimit, which only an
// eviction enforces).
function volumes(spec, ctr, errs, plan, prefix) {
  const vols = new Map();
  (spec.volumes || []).forEach((v, i) => {
    const where = `spec.volumes[${i}]`;
    if (!isObj(v) || !DNS_LABEL.test(v.name || '')) return errs.push(fe.invalid(`${where}.name`, v && v.name, 'must be a DNS label'));
    if (vols.has(v.name)) return errs.push(fe.duplicate(`${where}.name`, v.name));
    unknownFields(v, where, ['name', 'emptyDir'], [], errs);
    if (!isObj(v.emptyDir)) return errs.push(fe.required(where, 'kube-shim serves emptyDir volumes only'));
    unknownFields(v.emptyDir, `${where}.emptyDir`, ['medium', 'sizeLimit'], [], errs);
    const medium = v.emptyDir.medium || '';
    if (!['', 'Memory'].includes(medium)) errs.push(fe.notSupported(`${where}.emptyDir.medium`, medium, ['', 'Memory']));
    let size = null;
    if (v.emptyDir.sizeLimit !== undefined) {
      size = parseQuantity(v.emptyDir.sizeLimit);
      if (size === null) errs.push(fe.invalid(`${where}.emptyDir.sizeLimit`, v.emptyDir.sizeLimit, 'must be a valid resource quantity'));
      else if (medium === '') errs.push(fe.forbidden(`${where}.emptyDir.sizeLimit`, `${NO} on a disk emptyDir`));
    }
    vols.set(v.name, { medium, size: size === null ? null : Math.ceil(size), used: false });
  });
  plan.tmpfs = {};
  plan.diskMounts = [];
  const seen = new Set();
  (ctr.volumeMounts || []).forEach((m, i) => {
    const where = `${prefix}.volumeMounts[${i}]`;
    if (!isObj(m)) return errs.push(fe.invalid(where, m, 'must be an object'));
    unknownFields(m, where, ['name', 'mountPath', 'readOnly'], ['mountPropagation'], errs);
    if (m.mountPropagation !== undefined && m.mountPropagation !== 'None') errs.push(fe.forbidden(`${where}.mountPropagation`, NO));
    const v = vols.get(m.name);
    if (!v) return errs.push(fe.notSupported(`${where}.name`, m.name, [...vols.keys()]));
    if (typeof m.mountPath !== 'string' || !path.isAbsolute(m.mountPath))
      return errs.push(fe.invalid(`${where}.mountPath`, m.mountPath, 'must be an absolute path'));
    if (seen.has(m.mountPath)) return errs.push(fe.invalid(`${where}.mountPath`, m.mountPath, 'must be unique'));
    seen.add(m.mountPath);
    if (v.used) return errs.push(fe.forbidden(`${where}.name`, `${NO}: a volume mounted twice`));
    v.used = true;
    const size = v.size !== null ? v.size : plan.memory;
    if (m.mountPath === '/dev/shm' && v.medium === 'Memory' && !m.readOnly) {
      plan.shmSize = size || undefined;
    } else if (v.medium === 'Memory') {
      // A kubelet's emptyDir tmpfs is executable and its root mode 1777.
      const o = [m.readOnly ? 'ro' : 'rw', 'exec'];
      if (plan.noNewPrivs) o.push('nosuid', 'nodev');
      if (size) o.push(`size=${size}`);
      o.push('mode=1777');
      plan.tmpfs[m.mountPath] = o.join(',');
    } else plan.diskMounts.push({ Type: 'volume', Target: m.mountPath, ReadOnly: m.readOnly === true });
  });
}

// Checks and defaults body (a Pod to create in ns). Throws ApiError.
export function admit(body, ns, opts) {
  if (!isObj(body)) throw new ApiError(badRequest('the body of the request is not a JSON object'));
  if (body.kind !== 'Pod' || body.apiVersion !== 'v1')
    throw new ApiError(badRequest(`the API version in the data (${body.apiVersion}) and kind (${body.kind}) must be v1 and Pod`));
  const md = isObj(body.metadata) ? body.metadata : {};
  if (md.namespace !== undefined && md.namespace !== ns)
    throw new ApiError(badRequest('the namespace of the provided object does not match the namespace sent on the request'));
  if (md.resourceVersion) throw new ApiError(badRequest('resourceVersion should not be set on objects to be created'));
  let name = md.name;
  if (!name && md.generateName && typeof md.generateName === 'string')
    name = md.generateName + Math.random().toString(36).slice(2, 7).replace(/[^a-z0-9]/g, 'x').padEnd(5, 'x');
  const errs = [];
  for (const k of Object.keys(body)) if (!['kind', 'apiVersion', 'metadata', 'spec', 'status'].includes(k)) errs.push(fe.forbidden(k, NO));
  unknownFields(md, 'metadata', META_OK, [...META_IGNORED, 'resourceVersion'], errs);
  if (!name) errs.push(fe.required('metadata.name', 'name or generateName is required'));
  else if (!isSubdomain(name)) errs.push(fe.invalid('metadata.name', name, 'a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character'));
  const labels = md.labels || {};
  const notes = md.annotations || {};
  if (!isObj(labels)) errs.push(fe.invalid('metadata.labels', labels, 'must be a map'));
  else for (const [k, v] of Object.entries(labels)) {
    if (!labelKeyOk(k)) errs.push(fe.invalid('metadata.labels', k, 'name part must consist of alphanumeric characters, \'-\', \'_\' or \'.\''));
    if (!labelValueOk(v)) errs.push(fe.invalid(`metadata.labels`, v, 'a valid label must be an empty string or consist of alphanumeric characters, \'-\', \'_\' or \'.\''));
  }
  if (!isObj(notes)) errs.push(fe.invalid('metadata.annotations', notes, 'must be a map'));
  else {
    let total = 0;
    for (const [k, v] of Object.entries(notes)) {
      if (!labelKeyOk(k)) errs.push(fe.invalid('metadata.annotations', k, 'name part must consist of alphanumeric characters, \'-\', \'_\' or \'.\''));
      if (typeof v !== 'string') errs.push(fe.invalid(`metadata.annotations`, v, 'must be a string'));
      total += k.length + String(v).length;
    }
    if (total > 256 * 1024) errs.push(fe.forbidden('metadata.annotations', 'may not have more than 262144 bytes'));
  }

  const spec = isObj(body.spec) ? JSON.parse(JSON.stringify(body.spec)) : {};
  if (!isObj(body.spec)) errs.push(fe.required('spec'));
  unknownFields(spec, 'spec', SPEC_OK, SPEC_IGNORED, errs);
  const plan = {};
  for (const k of ['initContainers', 'ephemeralContainers'])
    if (spec[k] !== undefined && !(Array.isArray(spec[k]) && spec[k].length === 0)) errs.push(fe.forbidden(`spec.${k}`, NO));
  // Defaulting first (the API server defaults, then validates).
  spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.schedulerName ??= 'default-scheduler';
  spec.serviceAccountName ??= spec.serviceAccount ?? 'default';
  spec.securityContext ??= {};
  if (spec.restartPolicy !== 'Never') errs.push(fe.forbidden('spec.restartPolicy', `${NO}: only "Never" (restarts are the kubelet's)`));
  if (spec.automountServiceAccountToken !== false)
    errs.push(fe.forbidden('spec.automountServiceAccountToken', `${NO}: there is no service account token to mount; set false`));
  if (spec.serviceAccountName !== 'default') throw new ApiError(forbidden(name, `error looking up service account ${ns}/${spec.serviceAccountName}: serviceaccount "${spec.serviceAccountName}" not found`));
  if (spec.schedulerName !== 'default-scheduler') errs.push(fe.forbidden('spec.schedulerName', NO));
  for (const k of ['hostNetwork', 'hostPID', 'hostIPC']) if (spec[k] === true) errs.push(fe.forbidden(`spec.${k}`, `${NO}: host namespaces`));
  if (spec.nodeName !== undefined && spec.nodeName !== opts.node) errs.push(fe.forbidden('spec.nodeName', `the only node is "${opts.node}"`));
  if (spec.os !== undefined && !(isObj(spec.os) && spec.os.name === 'linux')) errs.push(fe.notSupported('spec.os.name', spec.os && spec.os.name, ['linux']));
  if (spec.activeDeadlineSeconds !== undefined && !(isInt(spec.activeDeadlineSeconds) && spec.activeDeadlineSeconds >= 1))
    errs.push(fe.invalid('spec.activeDeadlineSeconds', spec.activeDeadlineSeconds, 'must be between 1 and 2147483647, inclusive'));
  if (!(isInt(spec.terminationGracePeriodSeconds) && spec.terminationGracePeriodSeconds >= 0))
    errs.push(fe.invalid('spec.terminationGracePeriodSeconds', spec.terminationGracePeriodSeconds, 'must be greater than or equal to 0'));
  if (spec.hostname !== undefined && !DNS_LABEL.test(spec.hostname)) errs.push(fe.invalid('spec.hostname', spec.hostname, 'must be a DNS label'));

  const ctrs = Array.isArray(spec.containers) ? spec.containers : [];
  if (ctrs.length === 0) errs.push(fe.required('spec.containers'));
  if (ctrs.length > 1) errs.push(fe.forbidden('spec.containers', `${NO}: one container a pod`));
  const ctr = isObj(ctrs[0]) ? ctrs[0] : {};
  const cp = 'spec.containers[0]';
  if (ctrs.length) {
    unknownFields(ctr, cp, CTR_OK, CTR_IGNORED, errs);
    if (!DNS_LABEL.test(ctr.name || '')) errs.push(ctr.name ? fe.invalid(`${cp}.name`, ctr.name, 'must be a DNS label') : fe.required(`${cp}.name`));
    if (!ctr.image || typeof ctr.image !== 'string') errs.push(fe.required(`${cp}.image`));
    const tagged = typeof ctr.image === 'string' && /:[^/]+$/.test(ctr.image.split('@')[0]) && !/:latest$/.test(ctr.image);
    ctr.imagePullPolicy ??= tagged || (ctr.image || '').includes('@') ? 'IfNotPresent' : 'Always';
    if (ctr.imagePullPolicy === 'Always') errs.push(fe.forbidden(`${cp}.imagePullPolicy`, `${NO}: "Always" (kube-shim never pulls; say IfNotPresent or Never)`));
    else if (!['IfNotPresent', 'Never'].includes(ctr.imagePullPolicy))
      errs.push(fe.notSupported(`${cp}.imagePullPolicy`, ctr.imagePullPolicy, ['Always', 'IfNotPresent', 'Never']));
    ctr.terminationMessagePath ??= '/dev/termination-log';
    ctr.terminationMessagePolicy ??= 'File';
    for (const [obj, k, where] of [[ctr, 'env', cp], [ctr, 'volumeMounts', cp], [spec, 'volumes', 'spec']])
      if (obj[k] !== undefined && !Array.isArray(obj[k])) {
        errs.push(fe.invalid(`${where}.${k}`, obj[k], 'must be a list'));
        delete obj[k];
      }
    if (ctr.tty === true) errs.push(fe.forbidden(`${cp}.tty`, `${NO}: no terminal`));
    for (const k of ['command', 'args'])
      if (ctr[k] !== undefined && !(Array.isArray(ctr[k]) && ctr[k].every((s) => typeof s === 'string')))
        errs.push(fe.invalid(`${cp}.${k}`, ctr[k], 'must be a list of strings'));
    const env = new Map();
    (Array.isArray(ctr.env) ? ctr.env : []).forEach((e, i) => {
      const where = `${cp}.env[${i}]`;
      if (!isObj(e) || typeof e.name !== 'string' || !e.name || e.name.includes('=')) return errs.push(fe.invalid(`${where}.name`, e && e.name, 'a valid environment variable name must consist only of printable ASCII characters other than \'=\''));
      unknownFields(e, where, ['name', 'value'], [], errs);
      env.set(e.name, expand(String(e.value ?? ''), env));
    });
    plan.env = [...env].map(([k, v]) => `${k}=${v}`);
    if (ctr.command && ctr.command.length) plan.entrypoint = ctr.command.map((s) => expand(s, env));
    if (ctr.args && ctr.args.length) plan.cmd = ctr.args.map((s) => expand(s, env));
    plan.image = ctr.image;
    plan.pullPolicy = ctr.imagePullPolicy;
    plan.workingDir = ctr.workingDir;
    plan.stdin = ctr.stdin === true;
    plan.stdinOnce = ctr.stdinOnce === true;
    plan.container = ctr.name;
    security(isObj(spec.securityContext) ? spec.securityContext : {}, isObj(ctr.securityContext) ? ctr.securityContext : {}, errs, plan, cp);
    if (isObj(ctr.resources)) resources(ctr.resources, errs, plan, cp);
    else resources({}, errs, plan, cp);
    volumes(spec, ctr, errs, plan, cp);
  }
  const sec = plan.seccomp;
  if (sec && sec.type === 'Localhost') {
    const file = opts.seccompDir && path.join(opts.seccompDir, sec.localhostProfile || '');
    if (!opts.seccompDir)
      errs.push(fe.forbidden('spec.securityContext.seccompProfile.localhostProfile', `${NO} without --seccomp-dir`));
    else if (path.relative(opts.seccompDir, file).startsWith('..') || path.isAbsolute(sec.localhostProfile || ''))
      errs.push(fe.invalid('spec.securityContext.seccompProfile.localhostProfile', sec.localhostProfile, 'must be a path under the seccomp directory'));
    else plan.seccompFile = file; // read at container creation, as a kubelet does
  }
  plan.init = spec.shareProcessNamespace === true;
  plan.deadline = spec.activeDeadlineSeconds;
  plan.hostname = spec.hostname || (name || '').slice(0, 63).replace(/[-.]+$/, '');
  if (errs.length) throw new ApiError(invalid(name || '', errs));
  // RuntimeClass admission: a class the cluster does not have is refused.
  if (spec.runtimeClassName !== undefined) {
    if (!opts.runtimes.has(spec.runtimeClassName))
      throw new ApiError(forbidden(name, `pod rejected: RuntimeClass "${spec.runtimeClassName}" not found`));
    plan.runtime = spec.runtimeClassName;
  }
  const metadata = { name, namespace: ns };
  if (md.generateName) metadata.generateName = md.generateName;
  if (Object.keys(labels).length) metadata.labels = { ...labels };
  if (Object.keys(notes).length) metadata.annotations = { ...notes };
  return { metadata, spec, plan };
}

export const readSeccomp = (file) => fs.promises.readFile(file, 'utf8');
