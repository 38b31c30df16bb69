/* The capacity panel: the simulated cluster at the selected step, drawn from CapacityModel.
 *
 * Why it looks as it does: during a rollout on a full GPU pool the question is "where is
 * room, who holds it, who waits and why". Each node is one card: its GPUs as cells coloured
 * by the ReplicaSet of the pod holding them (old and new revisions differ; a terminating pod's
 * cells are hatched: it holds them until it is gone), "used/allocatable nvidia.com/gpu" in
 * words, then its pods. Pods bound nowhere follow with kube-scheduler's message verbatim.
 * Problems with the records are listed at the top; whatever fails here is said in the
 * panel and leaves the rest of the page alone. The DOM is built from text only.
 */
'use strict';
var CapacityView = (function () {
  var COLOURS = 6, NODES_SHOWN = 60, PODS_SHOWN = 24, PENDING_SHOWN = 30, CELLS = 64, PROBLEMS_SHOWN = 8;
  var GPU = CapacityModel.GPU, amount = CapacityModel.amount;

  function create(opts) { // {steps, el, box, summary}
    var el = opts.el, box = opts.box, summaryBox = opts.summary, model = null, failed = null;
    try { model = CapacityModel.build(opts.steps); } catch (err) { failed = err; }

    function shortOwner(owner) { return owner ? owner.replace(/^ReplicaSet\//, '') : 'no owner'; }
    function colour(view, owner) { var n = view.owners.indexOf(owner); return n < 0 ? 'cap-none' : 'cap-o' + (n % COLOURS); }
    function usedOf(node, r) { return node.used[r] || 0; }
    function gpuText(used, allocatable) { return used + '/' + allocatable + ' ' + GPU; }

    function tags(list) {
      var span = el('span', { class: 'cap-tags' });
      list.forEach(function (t) { if (t) span.appendChild(el('span', { class: 'tag ' + t[1] }, t[0])); });
      return span;
    }
    function podTags(pod) {
      var gpus = pod.requests[GPU];
      return tags([gpus ? [gpus + ' GPU', 'gpu'] : null, [pod.phase, 'phase'], pod.nodeName ? [pod.ready ? 'ready' : 'not ready', pod.ready ? 'ok' : 'warn'] : null,
        pod.terminating ? ['terminating: holds its GPUs until gone', 'bad'] : null, pod.waiting ? [pod.waiting, 'bad'] : null]);
    }
    function bar(view, node) {
      var allocatable = node.allocatable[GPU] || 0, div = el('div', { class: 'cap-bar', 'aria-hidden': 'true' });
      var scale = allocatable > CELLS ? CELLS / allocatable : 1, cells = 0;
      node.pods.forEach(function (pod) {
        var n = Math.round((pod.requests[GPU] || 0) * scale);
        for (var j = 0; j < n && cells < CELLS; j++, cells++) {
          div.appendChild(el('span', { class: 'cell ' + colour(view, pod.owner) + (pod.terminating ? ' terminating' : ''), title: pod.name }));
        }
      });
      for (var free = Math.round(allocatable * scale); cells < free; cells++) div.appendChild(el('span', { class: 'cell free', title: 'free' }));
      return div;
    }
    function nodeCard(view, node, touched) {
      var allocatable = node.allocatable[GPU] || 0, used = usedOf(node, GPU);
      var card = el('div', { class: 'cap-node' + (node.missing ? ' missing' : '') + (touched ? ' touched' : ''), 'data-node': node.name });
      var head = el('div', { class: 'cap-head' });
      head.appendChild(el('b', null, node.name));
      head.appendChild(el('span', { class: 'cap-gpu' + (allocatable && used >= allocatable ? ' full' : ''), 'data-used': used, 'data-allocatable': allocatable },
        node.missing ? gpuText(used, '?') : gpuText(used, allocatable) + ' used · ' + Math.max(0, allocatable - used) + ' free'));
      head.appendChild(node.missing ? tags([['no node record: its capacity is unknown', 'bad']])
        : tags([[node.ready ? 'Ready' : 'NotReady', node.ready ? 'ok' : 'bad'], node.unschedulable ? ['cordoned', 'bad'] : null].concat(
          node.taints.map(function (t) { return ['taint ' + t, 'warn']; }))));
      card.appendChild(head);
      if (!node.missing) card.appendChild(bar(view, node));
      var others = view.resources.filter(function (r) { return r !== GPU && node.allocatable[r] !== undefined; })
        .map(function (r) { return r + ' ' + amount(r, usedOf(node, r)) + '/' + amount(r, node.allocatable[r]); });
      if (node.allocatable.pods !== undefined) others.push('pods ' + usedOf(node, 'pods') + '/' + node.allocatable.pods);
      if (others.length) card.appendChild(el('div', { class: 'cap-other' }, others.join(' · ')));
      var ul = el('ul', { class: 'cap-pods' });
      node.pods.slice(0, PODS_SHOWN).forEach(function (pod) { ul.appendChild(podItem(view, pod)); });
      if (node.pods.length > PODS_SHOWN) ul.appendChild(el('li', { class: 'more' }, '+' + (node.pods.length - PODS_SHOWN) + ' more pods'));
      card.appendChild(ul);
      return card;
    }
    function podItem(view, pod) {
      var li = el('li', { 'data-pod': pod.name, class: view.touched && view.touched.kind === 'pod' && view.touched.name === pod.name ? 'touched' : null });
      li.appendChild(el('span', { class: 'swatch ' + colour(view, pod.owner), title: pod.owner || 'no owner' }));
      li.appendChild(el('span', { class: 'cap-name' }, pod.name.replace(/^[^/]*\//, '')));
      li.appendChild(podTags(pod));
      if (!pod.nodeName) li.appendChild(el('div', { class: 'cap-msg' }, pod.unschedulable || 'not scheduled yet (no message from the scheduler)'));
      return li;
    }
    function problemsBox(view) {
      var div = el('div', { id: 'cap-problems', role: 'alert' });
      var all = view.problems.map(function (p) { return 'seq ' + p.seq + ': ' + p.text; })
        .concat(view.missingNodes.map(function (n) { return 'pods are bound to node ' + n + ', which no node record describes'; }));
      div.appendChild(el('b', null, all.length + ' problem' + (all.length > 1 ? 's' : '') + ' with the capacity records (the view shows what could be used):'));
      var ul = el('ul');
      all.slice(0, PROBLEMS_SHOWN).forEach(function (t) { ul.appendChild(el('li', null, t)); });
      if (all.length > PROBLEMS_SHOWN) ul.appendChild(el('li', { class: 'more' }, '+' + (all.length - PROBLEMS_SHOWN) + ' more'));
      div.appendChild(ul);
      return div;
    }
    function legend(view) { // the owners (ReplicaSets) of the pods there now, by colour
      var count = new Map(), div = el('div', { class: 'cap-legend' });
      view.nodes.forEach(function (n) { n.pods.forEach(function (p) { count.set(p.owner, (count.get(p.owner) || 0) + 1); }); });
      view.pending.forEach(function (p) { count.set(p.owner, (count.get(p.owner) || 0) + 1); });
      view.owners.concat([null]).forEach(function (owner) {
        if (!count.has(owner)) return;
        var item = el('span', { 'data-owner': owner || '' });
        item.appendChild(el('span', { class: 'swatch ' + colour(view, owner) }));
        item.appendChild(document.createTextNode(shortOwner(owner) + ' (' + count.get(owner) + ' pod' + (count.get(owner) > 1 ? 's' : '') + ')'));
        div.appendChild(item);
      });
      return div;
    }
    function draw(index) {
      var frag = document.createDocumentFragment();
      if (failed) throw failed;
      var view = model.viewAt(index);
      if (!model.hasData && !view.problems.length) {
        summaryBox.textContent = '';
        frag.appendChild(el('p', { class: 'cap-empty' }, 'No cluster data in this trace: it has no node or pod records (they come from the simulated cluster: demo -f with Node manifests, or Simulation(cluster=True)).'));
        return frag;
      }
      var gpuUsed = view.total.used[GPU] || 0, gpuAll = view.total.allocatable[GPU] || 0;
      summaryBox.textContent = view.nodes.length + ' node' + (view.nodes.length === 1 ? '' : 's') + ' · ' + gpuText(gpuUsed, gpuAll) + ' used · ' + view.pending.length + ' Pending';
      if (view.problems.length || view.missingNodes.length) frag.appendChild(problemsBox(view));
      frag.appendChild(legend(view));
      var touched = view.touched;
      var nodes = el('div', { id: 'cap-nodes' });
      view.nodes.slice(0, NODES_SHOWN).forEach(function (node) {
        nodes.appendChild(nodeCard(view, node, touched && touched.kind === 'node' && touched.name === node.name));
      });
      if (view.nodes.length > NODES_SHOWN) nodes.appendChild(el('div', { class: 'more' }, '+' + (view.nodes.length - NODES_SHOWN) + ' more nodes'));
      frag.appendChild(nodes);
      var pending = el('div', { id: 'cap-pending' });
      pending.appendChild(el('h3', null, 'Pending: bound to no node (' + view.pending.length + ')'));
      var ul = el('ul', { class: 'cap-pods' });
      view.pending.slice(0, PENDING_SHOWN).forEach(function (pod) { ul.appendChild(podItem(view, pod)); });
      if (view.pending.length > PENDING_SHOWN) ul.appendChild(el('li', { class: 'more' }, '+' + (view.pending.length - PENDING_SHOWN) + ' more'));
      if (!view.pending.length) ul.appendChild(el('li', { class: 'none' }, 'none'));
      pending.appendChild(ul);
      frag.appendChild(pending);
      return frag;
    }
    var drawn = null; // the version of the cluster drawn: steps that move nothing there redraw nothing
    function render(index) {
      var frag, version = model ? model.versionAt(index) : null;
      if (version !== null && version === drawn) return;
      drawn = version;
      try { frag = draw(index); } catch (err) {
        drawn = null;
        frag = document.createDocumentFragment();
        frag.appendChild(el('p', { id: 'cap-failed', role: 'alert' }, 'The capacity view could not be drawn at this step (' + String(err && err.message || err) + '); the rest of the page is unaffected.'));
      }
      box.replaceChildren(frag);
    }
    return { render: render, model: model };
  }
  return { create: create };
})();
