/* The trace viewer's model: everything derived from the records, no DOM (docs/trace-format.md).
 *
 * TraceModel.build(records) makes, in one pass at load:
 *  - the active phase of every step (per pass, since passes can interleave on a cluster);
 *  - the workqueue at every step, from the dequeue snapshots plus the enqueues between them,
 *    with a checkpoint every CHECKPOINT steps, so a jump replays at most CHECKPOINT records;
 *  - per object, its spec/status after each of its own records (lazily, on first selection),
 *    found by binary search: a key press costs O(log n), not a replay from step 0;
 *  - the causality links (event.cause -> write/platform id, write.event -> event seq).
 * viewer.js renders it; this file is inlined before it.
 */
'use strict';
var TraceModel = (function () {
  var PHASES = ['observe', 'diff', 'act', 'status'];
  var CHECKPOINT = 128;

  function upperBound(list, value) { // first position whose element is > value
    var lo = 0, hi = list.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (list[mid] <= value) lo = mid + 1; else hi = mid; }
    return lo;
  }

  function build(records) {
    var header = records.length && records[0].type === 'header' ? records[0] : {};
    var steps = records.length && records[0].type === 'header' ? records.slice(1) : records;
    var N = steps.length;
    // ---- indexes over all steps (one pass) ---------------------------------------------------
    var byId = new Map(), bySeq = new Map(), perKey = new Map();
    var phaseAt = new Int8Array(N), keyAt = new Int32Array(N), passPhase = new Map();
    var seenKeys = [], keyIndex = new Map(), lastKey = -1; // objects in first-seen order
    for (var i = 0; i < N; i++) {
      var r = steps[i];
      bySeq.set(r.seq, i);
      if (r.id) byId.set(r.id, i);
      if (typeof r.key === 'string') {
        if (!perKey.has(r.key)) { perKey.set(r.key, []); keyIndex.set(r.key, seenKeys.length); seenKeys.push(r.key); }
        perKey.get(r.key).push(i);
        lastKey = keyIndex.get(r.key);
      }
      keyAt[i] = lastKey;
      var phase = -1;
      if (r.pass !== undefined && r.pass !== null) {
        if (r.type === 'dequeue') passPhase.set(r.pass, -1);
        else if (r.type === 'phase') passPhase.set(r.pass, PHASES.indexOf(r.phase));
        phase = r.type === 'result' ? -1 : (passPhase.has(r.pass) ? passPhase.get(r.pass) : -1);
        if (r.type === 'result') passPhase.delete(r.pass);
      }
      phaseAt[i] = phase;
    }
    var causeOf = new Map(), effectsOf = new Map(); // event index -> write index; write index -> [event index]
    function link(write, event) {
      causeOf.set(event, write);
      if (!effectsOf.has(write)) effectsOf.set(write, []);
      if (effectsOf.get(write).indexOf(event) < 0) effectsOf.get(write).push(event);
    }
    for (i = 0; i < N; i++) {
      r = steps[i];
      if (r.type === 'event' && r.cause && byId.has(r.cause)) link(byId.get(r.cause), i);
      if (r.type === 'write' && r.event !== undefined && bySeq.has(r.event)) link(i, bySeq.get(r.event));
    }
    var keys = seenKeys.slice().sort();

    // ---- the workqueue, with checkpoints ----------------------------------------------------
    function emptyQueue() { return { ready: [], waiting: [], processing: [], moreReady: 0, moreWaiting: 0 }; }
    function cloneQueue(q) {
      return { ready: q.ready.slice(), waiting: q.waiting.slice(), processing: q.processing.slice(),
        moreReady: q.moreReady, moreWaiting: q.moreWaiting };
    }
    function without(list, key) { var at = list.indexOf(key); if (at >= 0) list.splice(at, 1); }
    function applyQueue(q, rec) {
      if (rec.type === 'dequeue' && rec.queue) {
        var s = rec.queue;
        q.ready = (s.ready || []).slice();
        q.waiting = (s.waiting || []).map(function (w) { return { key: w.key, due: rec.t + (w.dueIn || 0), retries: w.retries || 0 }; });
        q.processing = (s.processing || []).slice();
        q.moreReady = Math.max(0, (s.readyCount || 0) - q.ready.length);
        q.moreWaiting = Math.max(0, (s.waitingCount || 0) - q.waiting.length);
      } else if (rec.type === 'enqueue') {
        var at = -1;
        for (var j = 0; j < q.waiting.length; j++) { if (q.waiting[j].key === rec.key) { at = j; break; } }
        if (rec.how === 'add') {
          if (at >= 0) q.waiting.splice(at, 1);
          if (q.ready.indexOf(rec.key) < 0) q.ready.push(rec.key);
        } else {
          var due = rec.due !== undefined ? rec.due : rec.t + (rec.delay || 0);
          if (at < 0) q.waiting.push({ key: rec.key, due: due, retries: rec.retries || 0 });
          else if (due < q.waiting[at].due) q.waiting[at] = { key: rec.key, due: due, retries: rec.retries || 0 };
          q.waiting.sort(function (a, b) { return a.due - b.due; });
        }
      } else if (rec.type === 'result') {
        without(q.processing, rec.key);
      }
    }
    var checkpoints = [], work = emptyQueue();
    for (i = 0; i < N; i++) {
      if (i % CHECKPOINT === 0) checkpoints.push(cloneQueue(work)); // state before step i
      applyQueue(work, steps[i]);
    }
    var qCache = { at: -1, q: emptyQueue() };
    function queueAt(index) {
      if (!(qCache.at >= 0 && qCache.at <= index && index - qCache.at < CHECKPOINT)) {
        var base = Math.floor(index / CHECKPOINT);
        qCache = { at: base * CHECKPOINT - 1, q: cloneQueue(checkpoints[base] || emptyQueue()) };
      }
      while (qCache.at < index) { qCache.at++; applyQueue(qCache.q, steps[qCache.at]); }
      return qCache.q;
    }

    // ---- one object's spec and status, record by record -------------------------------------
    var objectStates = new Map();
    function fold(prev, rec) {
      var s = Object.assign({}, prev);
      if (rec.type === 'platform') {
        if (rec.kind === 'InferenceService' && rec.action === 'apply') {
          s.spec = rec.spec; s.exists = true; s.gone = false; s.deleting = false;
        } else if (rec.kind === 'InferenceService' && rec.action === 'delete') {
          s.deleting = true;
        } else if (rec.kind === 'Deployment') {
          s.deployment = rec.action === 'delete' ? null : { replicas: rec.replicas, readyReplicas: rec.readyReplicas,
            updatedReplicas: rec.updatedReplicas, observedGeneration: rec.observedGeneration };
        }
      } else if (rec.type === 'event') {
        if (rec.kind === 'InferenceService') {
          s.exists = true;
          if (rec.generation !== undefined) s.generation = rec.generation;
          if (rec.event === 'DELETED') s.gone = true;
        } else if (rec.kind === 'Deployment' && rec.event === 'DELETED') {
          s.deployment = null;
        }
      } else if (rec.type === 'phase') {
        if (rec.phase === 'observe') {
          if (rec.found === false) { s.gone = true; }
          else if (rec.object) {
            var o = rec.object;
            s.exists = true; s.gone = false;
            s.spec = o.spec; s.generation = o.generation; s.status = o.status || {};
            s.deleting = !!o.deleting; s.finalizers = o.finalizers || [];
            var d = rec.children && rec.children.Deployment;
            if (d) s.deployment = { replicas: d.replicas, readyReplicas: d.readyReplicas, observedGeneration: d.observedGeneration };
          }
        } else if (rec.phase === 'status') {
          s.computed = rec.status;
          if (rec.written) s.pending = rec.status;
        }
      } else if (rec.type === 'write') {
        if (rec.verb === 'update_status') {
          if (rec.result === 'ok' && s.pending) s.status = s.pending;
          s.pending = null;
        } else if (rec.kind === 'LoadBalancer' && rec.result === 'ok') {
          s.lb = rec.verb === 'register' ? { registration: rec.registration, address: rec.address } : null;
        } else if (rec.verb === 'patch' && rec.result === 'ok' && rec.patch && rec.patch.metadata && rec.patch.metadata.finalizers) {
          s.finalizers = rec.patch.metadata.finalizers;
        }
      }
      return s;
    }
    function statesOf(key) {
      if (!objectStates.has(key)) {
        var list = perKey.get(key) || [], out = [], s = { spec: null, status: {}, exists: false, gone: false };
        for (var j = 0; j < list.length; j++) { s = fold(s, steps[list[j]]); out.push(s); }
        objectStates.set(key, out);
      }
      return objectStates.get(key);
    }
    function objectAt(key, index) { // state after the last record of key at or before index, and the one before it
      var list = perKey.get(key) || [];
      var n = upperBound(list, index);
      var states = statesOf(key);
      return { now: n > 0 ? states[n - 1] : null, before: n > 1 ? states[n - 2] : null, touched: n > 0 && list[n - 1] === index };
    }

    // ---- what a step says, in one line -------------------------------------------------------
    function summary(rec) {
      switch (rec.type) {
        case 'event': return rec.kind + ' ' + rec.event + ' rv=' + rec.rv + ' → ' + (rec.enqueued ? 'queued ' + rec.enqueued : 'queued nothing') + (rec.cause ? '  (caused by ' + rec.cause + ')' : '');
        case 'enqueue': return 'queue ' + rec.how + ' ' + rec.key + (rec.delay !== undefined ? ' in ' + rec.delay + 's' : '') + (rec.retries ? ' retries=' + rec.retries : '');
        case 'dequeue': return 'pass ' + rec.pass + ' took ' + rec.key + (rec.retries ? ' (retries ' + rec.retries + ')' : '');
        case 'phase':
          if (rec.phase === 'observe') return 'observe ' + rec.key + (rec.found === false ? ': ' + (rec.decision || 'not found') : ' rv=' + (rec.object || {}).rv + ' generation=' + (rec.object || {}).generation + ((rec.object || {}).deleting ? ' (deleting)' : ''));
          if (rec.phase === 'diff') return 'diff ' + rec.subject + ': ' + rec.decision + (rec.fields && rec.fields.length ? ' (' + rec.fields.map(function (f) { return f.path; }).join(', ') + ')' : '') + (rec.reason ? ' — ' + rec.reason : '');
          if (rec.phase === 'act') return 'act: ' + ((rec.actions || []).map(function (a) { return a.action + (a.kind ? ' ' + a.kind : ''); }).join(', ') || 'nothing to do') + (rec.blocked && rec.blocked.length ? ' blocked: ' + rec.blocked.join('; ') : '');
          if (rec.phase === 'status') return 'status: ' + (rec.written ? 'write ' + (rec.changedFields || []).join(', ') : (rec.deferred ? 'deferred, ' + rec.deferred : 'unchanged, no write')) + (rec.status && rec.status.phase ? ' → ' + rec.status.phase : '');
          return rec.phase;
        case 'write': return rec.id + ' ' + rec.verb + ' ' + rec.kind + ' → ' + rec.result + (rec.rv ? ' rv=' + rec.rv : '') + (rec.error ? ' ' + rec.error : '');
        case 'result': return 'pass ' + rec.pass + ' ended: ' + rec.outcome + (rec.requeueAfter ? ' after ' + rec.requeueAfter + 's' : '') + (rec.error ? ' ' + rec.error : '');
        case 'platform': return rec.actor + ' ' + rec.action + ' ' + rec.kind + (rec.readyReplicas !== undefined ? ' ready ' + rec.readyReplicas + '/' + rec.replicas : '');
        case 'note': return '# ' + rec.text;
        case 'node': case 'pod': return CapacityModel.summary(rec); // capacity.js, inlined before this file
        default: return rec.type;
      }
    }
    return { header: header, steps: steps, N: N, phaseAt: phaseAt, keyAt: keyAt, seenKeys: seenKeys, keys: keys,
      perKey: perKey, causeOf: causeOf, effectsOf: effectsOf, queueAt: queueAt, objectAt: objectAt, summary: summary };
  }

  return { PHASES: PHASES, CHECKPOINT: CHECKPOINT, upperBound: upperBound, build: build };
})();
