// The pods resource's verbs: create, get, delete, list (and the hand-off
// to watch.mjs), with the API server's status codes and bodies: 201 with
// the Pod on create, 409 AlreadyExists, 404 NotFound, 200 with the Pod on
// delete, PodList pages with limit/continue and metadata.resourceVersion.

import { admit } from './admit.mjs';
import { ApiError, alreadyExists, badRequest, conflict, notFound } from './status.mjs';
import { parseFieldSelector, parseLabelSelector, labelsMatch, fieldsMatch } from './selectors.mjs';
import { serveWatch } from './watch.mjs';

const bool = (v) => ['1', 't', 'T', 'true', 'TRUE', 'True'].includes(v);
const isBool = (v) => bool(v) || ['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(v);

// A list item: the Pod without kind/apiVersion, as a typed list writes it.
const item = (obj) => {
  const { kind, apiVersion, ...rest } = obj;
  return rest;
};

// The continue token: opaque to clients; like the API server's, base64 of
// {"v","rv","start"} where start is the key after which the next page begins.
const encodeToken = (rv, key) => Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start: `${key}\u0000` })).toString('base64');
function decodeToken(t) {
  try {
    const o = JSON.parse(Buffer.from(t, 'base64').toString('utf8'));
    if (o.v === 'meta.k8s.io/v1' && Number.isInteger(o.rv) && typeof o.start === 'string' && o.start.endsWith('\u0000'))
      return { rv: o.rv, after: o.start.slice(0, -1) };
  } catch {}
  throw new ApiError(badRequest(`continue key is not valid: ${JSON.stringify(t)}`));
}

export class PodsApi {
  constructor({ store, opts }) {
    this.store = store;
    this.opts = opts; // { namespace, node, runtimes, seccompDir }
  }

  create(ns, body) {
    if (ns !== this.opts.namespace) throw new ApiError(notFound(ns, 'namespaces'));
    const admitted = admit(body, ns, this.opts);
    if (this.store.get(ns, admitted.metadata.name)) throw new ApiError(alreadyExists(admitted.metadata.name));
    return this.store.create(admitted).obj;
  }

  async get(ns, name) {
    const p = this.store.get(ns, name);
    if (!p) throw new ApiError(notFound(name));
    await this.store.refresh(p); // the kubelet's latest word, read now
    return p.obj;
  }

  // DeleteOptions from the body (a JSON object) or else the query.
  async delete(ns, name, body, query) {
    let o = {};
    if (body && body.length) {
      try {
        o = JSON.parse(body.toString('utf8'));
      } catch {
        throw new ApiError(badRequest('the body of the request was not DeleteOptions JSON'));
      }
      if (o === null || typeof o !== 'object' || (o.kind !== undefined && o.kind !== 'DeleteOptions'))
        throw new ApiError(badRequest(`the body of the request was in an unknown format: kind ${o && o.kind}`));
    } else {
      if (query.has('gracePeriodSeconds')) o.gracePeriodSeconds = Number(query.get('gracePeriodSeconds'));
      if (query.has('propagationPolicy')) o.propagationPolicy = query.get('propagationPolicy');
      if (query.has('dryRun')) o.dryRun = query.getAll('dryRun');
    }
    if (o.dryRun && o.dryRun.length) throw new ApiError(badRequest('dryRun is not supported by kube-shim'));
    if (o.propagationPolicy !== undefined && !['Orphan', 'Background', 'Foreground'].includes(o.propagationPolicy))
      throw new ApiError(badRequest(`propagationPolicy: Unsupported value: "${o.propagationPolicy}"`));
    if (o.gracePeriodSeconds !== undefined && !Number.isInteger(o.gracePeriodSeconds))
      throw new ApiError(badRequest(`gracePeriodSeconds: Invalid value: ${JSON.stringify(o.gracePeriodSeconds)}`));
    const p = this.store.get(ns, name);
    if (!p) throw new ApiError(notFound(name));
    const pre = o.preconditions || {};
    if (pre.uid && pre.uid !== p.metadata.uid)
      throw new ApiError(conflict(name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${p.metadata.uid}`));
    if (pre.resourceVersion && pre.resourceVersion !== String(p.rv))
      throw new ApiError(conflict(name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${p.rv}`));
    const grace = Math.max(0, o.gracePeriodSeconds ?? p.spec.terminationGracePeriodSeconds ?? 30);
    return this.store.delete(p, grace);
  }

  // GET on the collection: a watch, or a list page.
  async collection(req, res, ns, query) {
    for (const k of ['watch', 'allowWatchBookmarks', 'sendInitialEvents'])
      if (query.has(k) && !isBool(query.get(k))) throw new ApiError(badRequest(`${k}: Invalid value: ${JSON.stringify(query.get(k))}`));
    const labels = parseLabelSelector(query.get('labelSelector'));
    const fields = parseFieldSelector(query.get('fieldSelector'));
    if (bool(query.get('watch'))) {
      const t = query.get('timeoutSeconds');
      if (t !== null && !/^\d+$/.test(t)) throw new ApiError(badRequest(`timeoutSeconds: Invalid value: ${JSON.stringify(t)}`));
      if (query.has('continue')) throw new ApiError(badRequest('continue: Forbidden: specifying continue is not permitted when watching'));
      await serveWatch(req, res, this.store, {
        ns,
        labels,
        fields,
        rv: query.get('resourceVersion') ?? undefined,
        rvMatch: query.get('resourceVersionMatch'),
        timeoutSeconds: t === null ? undefined : Number(t),
        bookmarks: bool(query.get('allowWatchBookmarks')),
        initialEvents: bool(query.get('sendInitialEvents')),
      });
      return null;
    }
    return this.list(ns, labels, fields, query);
  }

  list(ns, labels, fields, query) {
    const limitText = query.get('limit');
    if (limitText !== null && !/^\d+$/.test(limitText)) throw new ApiError(badRequest(`limit: Invalid value: ${JSON.stringify(limitText)}`));
    const limit = limitText === null ? 0 : Number(limitText);
    const rv = query.get('resourceVersion');
    if (rv && !/^\d+$/.test(rv)) throw new ApiError(badRequest(`resourceVersion: Invalid value: "${rv}"`));
    let after = null;
    let listRv = this.store.rv;
    if (query.get('continue')) {
      const t = decodeToken(query.get('continue'));
      after = t.after;
      listRv = t.rv; // later pages say the first page's version
    }
    const keyOf = (o) => `${o.metadata.namespace}/${o.metadata.name}`;
    const all = [...this.store.pods.values()]
      .map((p) => p.obj)
      .filter((o) => (!ns || o.metadata.namespace === ns) && labelsMatch(labels, o.metadata.labels) && fieldsMatch(fields, o))
      .sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0))
      .filter((o) => after === null || keyOf(o) > after);
    const page = limit > 0 ? all.slice(0, limit) : all;
    const metadata = { resourceVersion: String(listRv) };
    if (page.length < all.length) {
      metadata.continue = encodeToken(listRv, keyOf(page[page.length - 1]));
      // Counted only without selectors, as the API server does.
      if (!labels.length && !fields.length) metadata.remainingItemCount = all.length - page.length;
    }
    return { kind: 'PodList', apiVersion: 'v1', metadata, items: page.map(item) };
  }
}
