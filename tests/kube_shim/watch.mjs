// Watches: GET .../pods?watch=1 as the API server's watch cache serves
// it. A chunked 200 whose body is one JSON event a line
// ({"type":"ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR","object":...}):
//   - resourceVersion unset or "0": an ADDED for every matching Pod, then
//     the changes; a number N: every change after N, replayed from the
//     store's history, then live; N older than the history keeps is an
//     ERROR event with a 410 Expired Status, N newer than the store a 504
//     (after waiting 3 s for it, as the watch cache does);
//   - label and field selectors filter, and a Pod that stops (starts)
//     matching is seen as DELETED (ADDED), as the cache's filter does;
//   - allowWatchBookmarks: a BOOKMARK each minute; sendInitialEvents
//     (with resourceVersionMatch=NotOlderThan) ends its ADDEDs with the
//     "k8s.io/initial-events-end" BOOKMARK;
//   - the watch ends after timeoutSeconds (default: 30 to 60 minutes).
// Changes reach the store from the engine's /events stream (store.mjs).

import { ApiError, badRequest, expired, failure, tooManyRequests } from './status.mjs';
import { labelsMatch, fieldsMatch } from './selectors.mjs';

export const MAX_WATCHES = 256;
const MAX_BUFFERED = 16 << 20; // a watcher this far behind is cut off
const BOOKMARK_MS = 60000;

let active = 0;

const bookmark = (rv, annotations) => ({
  type: 'BOOKMARK',
  object: {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: annotations ? { resourceVersion: String(rv), annotations } : { resourceVersion: String(rv) },
    spec: { containers: null },
    status: {},
  },
});

export async function serveWatch(req, res, store, q) {
  const { ns, labels, fields, rv, timeoutSeconds, bookmarks, initialEvents } = q;
  if (active >= MAX_WATCHES) throw new ApiError(tooManyRequests());
  const matches = (obj) =>
    obj && (!ns || obj.metadata.namespace === ns) && labelsMatch(labels, obj.metadata.labels) && fieldsMatch(fields, obj);
  let from = null; // replay history after this version; null: initial ADDEDs
  if (initialEvents) {
    if (!bookmarks || q.rvMatch !== 'NotOlderThan')
      throw new ApiError(badRequest('sendInitialEvents requires allowWatchBookmarks=true and resourceVersionMatch=NotOlderThan'));
  } else if (rv !== undefined && rv !== '' && rv !== '0') {
    if (!/^\d+$/.test(rv)) throw new ApiError(badRequest(`resourceVersion: Invalid value: "${rv}": must be a non-negative integer`));
    from = Number(rv);
    const t0 = Date.now();
    while (from > store.rv && Date.now() - t0 < 3000) await new Promise((r) => setTimeout(r, 50));
    if (from > store.rv)
      throw new ApiError(
        failure(504, 'Timeout', `Timeout: Too large resource version: ${from}, current: ${store.rv}`, {
          causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
          retryAfterSeconds: 1,
        }),
      );
  }
  active++;
  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' });
  res.flushHeaders();
  let done = false;
  const timers = [];
  const finish = () => {
    if (done) return;
    done = true;
    active--;
    store.subs.delete(onEvent);
    timers.forEach(clearTimeout);
    timers.forEach(clearInterval);
    res.end();
  };
  const send = (ev) => {
    if (done) return;
    res.write(JSON.stringify(ev) + '\n');
    if (res.writableLength > MAX_BUFFERED) finish();
  };
  const deliver = (ev) => {
    const now = matches(ev.obj);
    if (ev.type === 'MODIFIED') {
      const before = matches(ev.prev);
      if (now && before) send({ type: 'MODIFIED', object: ev.obj });
      else if (now) send({ type: 'ADDED', object: ev.obj });
      else if (before) send({ type: 'DELETED', object: ev.obj });
    } else if (now) send({ type: ev.type, object: ev.obj });
  };
  const onEvent = (ev) => deliver(ev);
  // The response's close (not the request's, which Node emits once the
  // request is read) says the client went away.
  res.on('close', finish);

  if (from === null) {
    const pods = [...store.pods.values()].map((p) => p.obj).filter(matches);
    pods.sort((a, b) => (a.metadata.namespace + '/' + a.metadata.name < b.metadata.namespace + '/' + b.metadata.name ? -1 : 1));
    for (const obj of pods) send({ type: 'ADDED', object: obj });
    if (initialEvents) send(bookmark(store.rv, { 'k8s.io/initial-events-end': 'true' }));
  } else if (store.history.length && store.history[0].rv > from + 1 && store.droppedHistory) {
    send({ type: 'ERROR', object: expired(`too old resource version: ${from} (${store.history[0].rv - 1})`) });
    finish();
    return;
  } else {
    for (const ev of store.history) if (ev.rv > from) deliver(ev);
  }
  store.subs.add(onEvent);
  const secs = q.timeoutSeconds !== undefined ? timeoutSeconds : 1800 + Math.floor(Math.random() * 1800);
  timers.push(setTimeout(finish, secs * 1000));
  if (bookmarks) timers.push(setInterval(() => send(bookmark(store.rv)), BOOKMARK_MS));
}
