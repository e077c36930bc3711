// The shim's "etcd" and its "kubelet": the Pods by namespace/name, one
// global resourceVersion counter, a bounded history of watch events, and
// each Pod's life on the engine: scheduled, its image looked up (never
// pulled), its container created and started, its status recomputed from
// the container's inspect whenever the engine's /events stream says the
// container changed (and on every GET), its activeDeadlineSeconds timer,
// and its deletion.

import crypto from 'node:crypto';
import { createBody, effectiveUser, podStatus, rfc3339, LABEL } from './pod.mjs';
import { readSeccomp } from './admit.mjs';

export const HISTORY = 4096; // watch events kept for watches from an older version
const IMAGE_RETRY_MS = 5000; // the kubelet's pull back-off, shortened

const clone = (o) => JSON.parse(JSON.stringify(o));

export class Store {
  constructor({ docker, run, node, log }) {
    this.docker = docker;
    this.run = run;
    this.node = node;
    this.log = log;
    this.pods = new Map(); // "ns/name" -> pod record
    this.rv = 1;
    this.history = []; // { rv, type, obj, prev }
    this.subs = new Set(); // watchers: fn(event)
  }

  key = (ns, name) => `${ns}/${name}`;
  get(ns, name) {
    return this.pods.get(this.key(ns, name));
  }
  oldestRv() {
    return this.history.length ? this.history[0].rv : this.rv + 1;
  }

  // The Pod's API object at its current version.
  object(p) {
    // resourceVersion where the API server writes it: after uid.
    const md = {};
    for (const [k, v] of Object.entries(p.metadata)) {
      md[k] = v;
      if (k === 'uid') md.resourceVersion = String(p.rv);
    }
    return { kind: 'Pod', apiVersion: 'v1', metadata: md, spec: clone(p.spec), status: clone(p.status) };
  }

  // A new version: records it and tells the watchers.
  publish(p, type) {
    const prev = p.obj || null;
    p.rv = ++this.rv;
    p.obj = this.object(p);
    const ev = { rv: p.rv, type, obj: p.obj, prev };
    this.history.push(ev);
    if (this.history.length > HISTORY) {
      this.history.shift();
      this.droppedHistory = true;
    }
    for (const fn of this.subs) fn(ev);
  }

  // Recomputes the status; a change is a new version (MODIFIED).
  async refresh(p) {
    // One refresh a pod at a time, in order: the newest inspect wins.
    p.chain = p.chain.then(async () => {
      if (p.gone) return;
      let ins = null;
      if (p.cid) {
        const r = await this.docker.request('GET', `/containers/${p.cid}/json`).catch(() => null);
        if (r && r.status === 200) ins = r.json;
      }
      if (p.gone) return;
      const st = podStatus(p, ins);
      if (JSON.stringify(st) !== JSON.stringify(p.status)) {
        p.status = st;
        this.publish(p, 'MODIFIED');
      }
      this.armDeadline(p, st);
    });
    return p.chain;
  }

  // Create: the record, answered at once with phase Pending; the
  // scheduler and the kubelet act after (start()).
  create(admitted) {
    const { metadata, spec, plan } = admitted;
    const p = {
      metadata: { ...metadata, uid: crypto.randomUUID(), creationTimestamp: rfc3339(Date.now()) },
      spec,
      plan,
      status: null,
      conditions: {},
      chain: Promise.resolve(),
      cid: null,
      gone: false,
    };
    // Key order as the API server writes metadata.
    const { name, generateName, namespace, uid, creationTimestamp, labels, annotations } = p.metadata;
    p.metadata = { name, generateName, namespace, uid, creationTimestamp, labels, annotations };
    for (const k of Object.keys(p.metadata)) if (p.metadata[k] === undefined) delete p.metadata[k];
    p.status = podStatus(p, null);
    this.pods.set(this.key(namespace, name), p);
    this.publish(p, 'ADDED');
    setImmediate(() => this.start(p).catch((e) => this.log(`pod ${name}: ${e.message}`)));
    return p;
  }

  async start(p) {
    const name = p.metadata.name;
    // The scheduler binds it to the one node.
    p.spec.nodeName = this.node;
    await this.refresh(p);
    // The kubelet takes it: startTime, ContainerCreating.
    p.kubeletSeen = true;
    p.startTime = rfc3339(Date.now());
    await this.refresh(p);
    // The image: looked up, never pulled.
    let image = null;
    for (let tries = 0; !p.gone && !p.deadlineExceeded; tries++) {
      const r = await this.docker.request('GET', `/images/${encodeURIComponent(p.plan.image)}/json`);
      if (r.status === 200) {
        image = r.json;
        break;
      }
      const img = p.plan.image;
      p.waiting =
        p.plan.pullPolicy === 'Never'
          ? { reason: 'ErrImageNeverPull', message: `Container image "${img}" is not present with pull policy of Never` }
          : tries === 0
            ? { reason: 'ErrImagePull', message: `Failed to pull image "${img}": kube-shim never pulls, and the engine has no such image` }
            : { reason: 'ImagePullBackOff', message: `Back-off pulling image "${img}"` };
      await this.refresh(p);
      await new Promise((r) => setTimeout(r, tries === 0 ? 1000 : IMAGE_RETRY_MS).unref());
    }
    if (!image) return;
    p.imageID = image.Id;
    const who = effectiveUser(p.plan, image.Config && image.Config.User);
    const ref = `(pod: "${name}_${p.metadata.namespace}(${p.metadata.uid})", container: ${p.plan.container})`;
    if (p.plan.runAsNonRoot && who.uid !== 0 && typeof who.uid !== 'number')
      return this.wait(p, 'CreateContainerConfigError', `container has runAsNonRoot and image has non-numeric user (${who.uid}), cannot verify user is non-root ${ref}`);
    if (p.plan.runAsNonRoot && who.uid === 0)
      return this.wait(p, 'CreateContainerConfigError', `container has runAsNonRoot and image will run as root ${ref}`);
    let seccomp = null;
    if (p.plan.seccompFile) {
      try {
        seccomp = await readSeccomp(p.plan.seccompFile);
      } catch (e) {
        return this.wait(p, 'CreateContainerError', `failed to generate security options: cannot load seccomp profile "${p.plan.seccompFile}": ${e.message}`);
      }
    }
    const cname = `kshim-${this.run}-${p.metadata.namespace}-${name}`;
    const body = createBody(p, { user: who.user, seccomp, run: this.run });
    const r = await this.docker.request('POST', `/containers/create?name=${encodeURIComponent(cname)}`, body);
    if (r.status !== 201) return this.wait(p, 'CreateContainerError', (r.json && r.json.message) || r.text);
    p.cid = r.json.Id;
    if (p.gone) return this.removeContainer(p);
    p.waiting = null;
    const s = await this.docker.request('POST', `/containers/${p.cid}/start`);
    if (s.status !== 204 && s.status !== 304) p.startError = (s.json && s.json.message) || s.text;
    await this.refresh(p);
  }

  async wait(p, reason, message) {
    p.waiting = { reason, message };
    await this.refresh(p);
  }

  // activeDeadlineSeconds counts from startTime; past it the kubelet kills
  // the containers and fails the pod with reason DeadlineExceeded.
  armDeadline(p, st) {
    if (p.deadlineTimer || !p.startTime || p.plan.deadline === undefined) return;
    if (st.phase === 'Succeeded' || st.phase === 'Failed') return;
    const left = Date.parse(p.startTime) + p.plan.deadline * 1000 - Date.now();
    p.deadlineTimer = setTimeout(async () => {
      if (p.gone) return;
      const now = p.status.phase;
      if (now === 'Succeeded' || now === 'Failed') return;
      p.deadlineExceeded = true;
      if (p.cid) await this.docker.request('POST', `/containers/${p.cid}/kill`).catch(() => {});
      await this.refresh(p);
    }, Math.max(0, left));
    p.deadlineTimer.unref();
  }

  async removeContainer(p) {
    if (!p.cid) return;
    const r = await this.docker.request('DELETE', `/containers/${p.cid}?force=1&v=1`).catch((e) => ({ status: 0, text: e.message }));
    if (r.status !== 204 && r.status !== 404) this.log(`removing container ${p.cid}: ${r.status} ${r.text}`);
  }

  // Deletion. grace 0: the container is force-removed and the Pod is gone
  // (DELETED); grace > 0: deletionTimestamp set (MODIFIED), the container
  // stopped with that grace, then removed. Answers the object as deleted.
  async delete(p, grace) {
    const phase = p.status.phase;
    if (!p.spec.nodeName || phase === 'Succeeded' || phase === 'Failed') grace = 0;
    const now = Date.now();
    if (grace > 0 && !p.metadata.deletionTimestamp) {
      p.metadata.deletionTimestamp = rfc3339(now + grace * 1000);
      p.metadata.deletionGracePeriodSeconds = grace;
      this.publish(p, 'MODIFIED');
      const obj = p.obj;
      const stop = p.cid
        ? this.docker.request('POST', `/containers/${p.cid}/stop?t=${grace}`, undefined, (grace + 30) * 1000).catch(() => {})
        : Promise.resolve();
      stop.then(() => this.refresh(p)).then(() => !p.gone && this.delete(p, 0));
      return obj;
    }
    p.gone = true;
    clearTimeout(p.deadlineTimer);
    await this.removeContainer(p);
    if (this.get(p.metadata.namespace, p.metadata.name) !== p) return p.obj; // raced another delete
    this.pods.delete(this.key(p.metadata.namespace, p.metadata.name));
    p.metadata.deletionTimestamp ??= rfc3339(now);
    p.metadata.deletionGracePeriodSeconds = 0;
    this.publish(p, 'DELETED');
    return p.obj;
  }

  // Engine events for this run's containers: start, die, oom, ... each a
  // reason to read the container again.
  onEngineEvent(ev) {
    const id = ev.id || (ev.Actor && ev.Actor.ID);
    if (!id) return;
    for (const p of this.pods.values()) if (p.cid === id) this.refresh(p);
  }

  // Every container this run (or any run, all) made, removed.
  async removeAll(all = false) {
    const label = all ? `${LABEL}.run` : `${LABEL}.run=${this.run}`;
    const f = encodeURIComponent(JSON.stringify({ label: [label] }));
    const r = await this.docker.request('GET', `/containers/json?all=1&filters=${f}`);
    const ids = r.status === 200 ? r.json.map((c) => c.Id) : [];
    await Promise.all(ids.map((id) => this.docker.request('DELETE', `/containers/${id}?force=1&v=1`).catch(() => {})));
    return ids.length;
  }
}
