/* The capacity panel's model: the simulated cluster's nodes and pods at any step, no DOM.
 *
 * Why a model of its own: a person watching a rollout on a full GPU pool needs to see, at the
 * selected step, which node holds which pod, what is used and free, and which pods wait and
 * why (docs/trace-format.md, the `node` and `pod` records and "Capacity panel"). The records
 * are folded in trace order; a checkpoint of the whole state every CHECKPOINT cluster records
 * keeps a jump anywhere to at most CHECKPOINT replays, and stepping forward to one.
 * A record that lacks its name or has fields of the wrong type is skipped and reported in
 * `problems` (with its seq), never thrown: a bad record must not blank the page.
 * capview.js renders it; this file is inlined after model.js.
 */
'use strict';
var CapacityModel = (function () {
  var CHECKPOINT = 128;
  var GPU = 'nvidia.com/gpu';
  var CHANGES = ['added', 'changed', 'deleted'];
  var FINISHED = ['Succeeded', 'Failed'];

  function isObject(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }
  function amounts(value, what, complain) { // resource name -> finite non-negative number
    var out = {};
    if (value === undefined) return out;
    if (!isObject(value)) { complain(what + ' is not an object'); return out; }
    Object.keys(value).forEach(function (name) {
      var n = value[name];
      if (typeof n === 'number' && isFinite(n) && n >= 0) out[name] = n;
      else complain(what + ' ' + name + ' is not a non-negative number: ' + JSON.stringify(n));
    });
    return out;
  }
  function text(value, what, complain) {
    if (value === undefined || value === null) return null;
    if (typeof value === 'string') return value;
    complain(what + ' is not a string');
    return null;
  }
  function flag(value, what, complain) {
    if (value === undefined) return false;
    if (typeof value === 'boolean') return value;
    complain(what + ' is not true or false');
    return false;
  }

  // A node or pod record, checked and cut to what the panel uses; null when unusable.
  function parse(rec, complain) {
    var kind = rec.type, name = rec[kind];
    if (typeof name !== 'string' || !name) { complain('a ' + kind + ' record without its ' + kind + ' name; skipped'); return null; }
    if (CHANGES.indexOf(rec.change) < 0) { complain(kind + ' ' + name + ': change ' + JSON.stringify(rec.change) + ' is not added, changed or deleted; skipped'); return null; }
    var what = kind + ' ' + name + ':';
    if (rec.change === 'deleted') return { kind: kind, name: name, deleted: true, seq: rec.seq };
    if (kind === 'node') {
      return { kind: kind, name: name, seq: rec.seq, allocatable: amounts(rec.allocatable, what + ' allocatable', complain),
        ready: flag(rec.ready, what + ' ready', complain), unschedulable: flag(rec.unschedulable, what + ' unschedulable', complain),
        taints: Array.isArray(rec.taints) ? rec.taints.map(String) : [] };
    }
    return { kind: kind, name: name, seq: rec.seq, owner: text(rec.owner, what + ' owner', complain),
      requests: amounts(rec.requests, what + ' requests', complain), phase: text(rec.phase, what + ' phase', complain) || 'Pending',
      ready: flag(rec.ready, what + ' ready', complain), terminating: flag(rec.terminating, what + ' terminating', complain),
      nodeName: text(rec.nodeName, what + ' nodeName', complain), unschedulable: text(rec.unschedulable, what + ' unschedulable', complain),
      waiting: text(rec.waiting, what + ' waiting', complain) };
  }

  function build(steps) {
    var at = [], parsed = [], problems = [], owners = [];
    for (var i = 0; i < steps.length; i++) {
      var rec = steps[i];
      if (!rec || (rec.type !== 'node' && rec.type !== 'pod')) continue;
      var seq = rec.seq;
      var item = parse(rec, function (why) { problems.push({ seq: seq, index: i, text: why }); });
      if (!item) continue;
      if (item.owner && owners.indexOf(item.owner) < 0) owners.push(item.owner);
      at.push(i); parsed.push(item);
    }
    function empty() { return { nodes: new Map(), pods: new Map(), last: null }; }
    function clone(s) { return { nodes: new Map(s.nodes), pods: new Map(s.pods), last: s.last }; }
    function apply(s, item, n, report) {
      var map = item.kind === 'node' ? s.nodes : s.pods;
      if (item.deleted) {
        if (report && !map.has(item.name)) {
          problems.push({ seq: item.seq, index: at[n], text: item.kind + ' ' + item.name + ' was deleted, but no earlier record added it' });
        }
        map.delete(item.name);
      } else {
        map.set(item.name, item);
      }
      s.last = item;
    }
    var checkpoints = [], work = empty();
    for (var n = 0; n < parsed.length; n++) {
      if (n % CHECKPOINT === 0) checkpoints.push(clone(work)); // state before cluster record n
      apply(work, parsed[n], n, true); // the one pass that reports
    }
    problems.sort(function (a, b) { return a.index - b.index; });
    var cache = { count: -1, state: empty() };
    function stateAfter(count) { // the state after the first `count` cluster records
      if (!(cache.count >= 0 && cache.count <= count && count - cache.count < CHECKPOINT)) {
        var base = Math.floor(count / CHECKPOINT);
        cache = { count: base * CHECKPOINT, state: clone(checkpoints[base] || empty()) };
      }
      while (cache.count < count) { apply(cache.state, parsed[cache.count], cache.count, false); cache.count++; }
      return cache.state;
    }
    function upperBound(list, value) {
      var lo = 0, hi = list.length;
      while (lo < hi) { var mid = (lo + hi) >> 1; if (list[mid] <= value) lo = mid + 1; else hi = mid; }
      return lo;
    }
    // The cluster as it was right after step `index`: summarize()'s view of it.
    function viewAt(index) {
      var count = upperBound(at, index);
      var view = summarize(stateAfter(count));
      view.touched = count > 0 && at[count - 1] === index ? parsed[count - 1] : null;
      view.problems = problems;
      view.owners = owners;
      return view;
    }
    // What viewAt(index) depends on: how many cluster records came so far, and whether this step is one.
    function versionAt(index) { var count = upperBound(at, index); return count + (count > 0 && at[count - 1] === index ? '*' : ''); }
    return { records: parsed.length, problems: problems, owners: owners, viewAt: viewAt, versionAt: versionAt, hasData: parsed.length > 0 };
  }

  function byName(a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; }
  function summarize(state) {
    var nodes = new Map(), pending = [], resources = new Set([GPU]), total = { used: {}, allocatable: {} };
    function nodeEntry(name) {
      if (!nodes.has(name)) {
        var known = state.nodes.get(name);
        nodes.set(name, { name: name, missing: !known, ready: known ? known.ready : false, unschedulable: known ? known.unschedulable : false,
          taints: known ? known.taints : [], allocatable: known ? known.allocatable : {}, used: {}, pods: [] });
      }
      return nodes.get(name);
    }
    state.nodes.forEach(function (node, name) { nodeEntry(name); Object.keys(node.allocatable).forEach(function (r) { if (r !== 'pods') resources.add(r); }); });
    state.pods.forEach(function (pod) {
      if (!pod.nodeName) { if (FINISHED.indexOf(pod.phase) < 0) pending.push(pod); return; }
      var node = nodeEntry(pod.nodeName);
      node.pods.push(pod);
      if (FINISHED.indexOf(pod.phase) >= 0) return; // a finished pod holds nothing, as the scheduler counts
      Object.keys(pod.requests).forEach(function (r) { node.used[r] = (node.used[r] || 0) + pod.requests[r]; });
      node.used.pods = (node.used.pods || 0) + 1;
    });
    var list = Array.from(nodes.values()).sort(byName);
    list.forEach(function (node) {
      node.pods.sort(byName);
      resources.forEach(function (r) {
        total.used[r] = (total.used[r] || 0) + (node.used[r] || 0);
        total.allocatable[r] = (total.allocatable[r] || 0) + (node.allocatable[r] || 0);
      });
    });
    return { nodes: list, pending: pending.sort(byName), total: total, resources: Array.from(resources),
      missingNodes: list.filter(function (n) { return n.missing; }).map(function (n) { return n.name; }) };
  }

  // A resource amount as a person reads it: cpu in cores, memory in Gi.
  function amount(resource, value) {
    if (resource === 'cpu') return String(Math.round(value / 100) / 10);
    if (resource === 'memory') return String(Math.round(value / (1 << 30) * 10) / 10) + 'Gi';
    return String(value);
  }
  function summary(rec) { // one line for the timeline
    var name = String(rec[rec.type]);
    if (rec.change === 'deleted') return rec.type + ' ' + name + ' deleted';
    if (rec.type === 'node') {
      var gpus = isObject(rec.allocatable) && rec.allocatable[GPU] !== undefined ? ' ' + rec.allocatable[GPU] + ' ' + GPU : '';
      return 'node ' + name + ' ' + rec.change + gpus + (rec.ready === false ? ' NotReady' : '') + (rec.unschedulable ? ' cordoned' : '');
    }
    var where = rec.nodeName ? ' on ' + rec.nodeName : rec.unschedulable ? ' Pending: ' + rec.unschedulable : ' Pending';
    return 'pod ' + name + ' ' + rec.change + (rec.nodeName ? ' ' + rec.phase : '') + where + (rec.ready ? ' ready' : '') + (rec.terminating ? ' terminating' : '');
  }
  return { CHECKPOINT: CHECKPOINT, GPU: GPU, build: build, summarize: summarize, amount: amount, summary: summary };
})();
