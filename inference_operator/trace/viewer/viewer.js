/* The trace viewer's page: renders TraceModel (model.js) for the current step, and the input.
 *
 * Why it looks as it does: what a learner should see is the control loop's four phases, spec and status
 * converging, and data flowing informer -> workqueue -> reconciler; each panel shows one of those
 * for the current record (diagram.js draws the data flow, capview.js the cluster's capacity). Rendering reads the layout before writing (no forced layout per key),
 * and the timeline draws only the rows in view, so 100k steps stay cheap.
 */
'use strict';
(function () {
  var PHASES = TraceModel.PHASES;
  var ROW = 20;
  var PLAY_MS = 650;
  var QUEUE_SHOWN = 60;

  var records = JSON.parse(document.getElementById('trace-data').textContent);
  var model = TraceModel.build(records);
  var header = model.header, steps = model.steps, N = model.N;
  var phaseAt = model.phaseAt, keyAt = model.keyAt, seenKeys = model.seenKeys, keys = model.keys, perKey = model.perKey;
  var causeOf = model.causeOf, effectsOf = model.effectsOf, queueAt = model.queueAt, objectAt = model.objectAt;
  var summary = model.summary, upperBound = TraceModel.upperBound;

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) { for (var k in attrs) { if (attrs[k] !== undefined && attrs[k] !== null) node.setAttribute(k, attrs[k]); } }
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function show(value) {
    if (value === undefined || value === null) return '—';
    if (typeof value === 'object') {
      var s = JSON.stringify(value);
      return s.length > 160 ? s.slice(0, 157) + '…' : s;
    }
    return String(value);
  }
  // ---- navigation state ---------------------------------------------------------------------
  var view = null;          // step indices shown (all, or one object's)
  var pos = 0;              // position in view
  var filterKey = '';
  var playing = 0;
  var allSteps = null;
  function setView(key) {
    var current = view && view.length ? view[pos] : 0;
    filterKey = key;
    if (key) view = perKey.get(key) || [];
    else { if (!allSteps) { allSteps = new Int32Array(N); for (var j = 0; j < N; j++) allSteps[j] = j; } view = allSteps; }
    pos = Math.max(0, upperBound(view, current) - 1);
    $('scrubber').max = String(Math.max(0, view.length - 1));
    $('step-count').textContent = String(view.length);
    $('timeline-spacer').style.height = (view.length * ROW) + 'px';
  }
  function go(newPos, opts) {
    if (!view.length) return;
    pos = Math.max(0, Math.min(view.length - 1, newPos));
    render(opts || {});
  }
  function goToStep(index) {
    if (filterKey && steps[index].key !== filterKey) { $('object-filter').value = ''; setView(''); }
    var at = upperBound(view, index) - 1;
    go(at < 0 ? 0 : at, { scroll: true });
  }

  // ---- rendering ----------------------------------------------------------------------------
  function renderPhases(index, rec) {
    var active = phaseAt[index];
    PHASES.forEach(function (name, n) {
      var item = $('phase-' + name);
      item.classList.toggle('active', n === active);
      item.classList.toggle('done', active >= 0 && n < active);
      item.setAttribute('aria-current', n === active ? 'step' : 'false');
    });
    var text;
    if (rec.pass !== undefined && rec.pass !== null) {
      text = rec.type === 'result' ? 'pass ' + rec.pass + ' on ' + rec.key + ' ended: ' + rec.outcome
        : rec.type === 'dequeue' ? 'pass ' + rec.pass + ' starts: a worker took ' + rec.key + ' from the queue'
          : 'pass ' + rec.pass + ' on ' + rec.key + (active >= 0 ? ': ' + PHASES[active] : '');
    } else {
      text = 'between passes: the loop waits on the queue; ' + (rec.type === 'platform' ? 'someone else moved' : rec.type === 'event' ? 'a watch event arrived' : rec.type === 'enqueue' ? 'a key was queued' : rec.type === 'node' || rec.type === 'pod' ? 'the cluster moved' : 'a note');
    }
    $('loop-state').textContent = text;
  }
  function renderQueue(index, rec) {
    var q = queueAt(index), list = $('queue'), frag = document.createDocumentFragment(), shown = 0;
    function add(key, state, extra, retries) {
      if (shown >= QUEUE_SHOWN) return;
      shown++;
      var li = el('li', { 'data-key': key, 'data-state': state, title: state }, key + ' ');
      li.appendChild(el('span', { class: 'how' }, extra));
      if (retries) li.appendChild(el('span', { class: 'retries' }, ' ×' + retries + ' retries'));
      frag.appendChild(li);
    }
    q.processing.forEach(function (key) { add(key, 'processing', '⚙ processing'); });
    q.ready.forEach(function (key) { add(key, 'ready', 'ready'); });
    q.waiting.forEach(function (w) {
      var dueIn = Math.max(0, w.due - rec.t);
      add(w.key, 'waiting', 'due in ' + (Math.round(dueIn * 1000) / 1000) + 's', w.retries);
    });
    var hidden = q.processing.length + q.ready.length + q.waiting.length - shown + q.moreReady + q.moreWaiting;
    if (hidden > 0) frag.appendChild(el('li', { class: 'more' }, '+' + hidden + ' more'));
    list.replaceChildren(frag);
    var counts = (q.ready.length + q.moreReady) + ' ready, ' + (q.waiting.length + q.moreWaiting) + ' waiting, ' + q.processing.length + ' processing';
    $('queue-counts').textContent = counts;
    $('sub-queue').textContent = (q.ready.length + q.moreReady) + ' ready · ' + (q.waiting.length + q.moreWaiting) + ' waiting · ' + q.processing.length + ' busy';
  }
  function dl(target, entries, moved) {
    var frag = document.createDocumentFragment();
    entries.forEach(function (e) {
      var cls = moved && moved.indexOf(e[0]) >= 0 ? 'moved' : null;
      frag.appendChild(el('dt', { class: cls }, e[0]));
      frag.appendChild(el('dd', { class: cls, 'data-field': e[0] }, show(e[1])));
    });
    target.replaceChildren(frag);
  }
  function condition(status, type) {
    var list = (status && status.conditions) || [];
    for (var j = 0; j < list.length; j++) { if (list[j].type === type) return list[j]; }
    return null;
  }
  function changedKeys(a, b) {
    var out = [];
    if (!b) return out;
    var all = new Set(Object.keys(a || {}).concat(Object.keys(b || {})));
    all.forEach(function (k) { if (JSON.stringify((a || {})[k]) !== JSON.stringify((b || {})[k])) out.push(k); });
    return out;
  }
  function renderObject(index, rec) {
    var key = filterKey || (keyAt[index] >= 0 ? seenKeys[keyAt[index]] : '');
    $('object-name').textContent = key || '—';
    var at = key ? objectAt(key, index) : { now: null, before: null, touched: false };
    var s = at.now, state = $('object-state');
    var spec = (s && s.spec) || {}, status = (s && s.status) || {};
    dl($('spec'), Object.keys(spec).map(function (k) { return [k, spec[k]]; }).concat(s && s.generation !== undefined ? [['(generation)', s.generation]] : []),
      at.touched && at.before ? changedKeys(at.before.spec, spec) : null);
    var ready = condition(status, 'Ready');
    var statusEntries = ['phase', 'observedGeneration', 'replicas', 'readyReplicas', 'updatedReplicas', 'url'].filter(function (k) { return status[k] !== undefined; })
      .map(function (k) { return [k, status[k]]; });
    if (s && s.pending) statusEntries.unshift(['(being written)', 'phase ' + s.pending.phase + ', ' + Object.keys(s.pending).length + ' fields']);
    if (status.loadBalancer) statusEntries.push(['loadBalancer', status.loadBalancer.id || status.loadBalancer.registration || status.loadBalancer]);
    ((status.conditions) || []).forEach(function (c) { statusEntries.push(['cond ' + c.type, c.status + (c.reason ? ' ' + c.reason : '')]); });
    dl($('status'), statusEntries, at.touched && at.before ? changedKeys(at.before.status, status).concat(changedKeys(at.before.status, status).indexOf('conditions') >= 0 ? ((status.conditions) || []).map(function (c) { return 'cond ' + c.type; }) : []) : null);
    var rows = [];
    $('specstatus').classList.toggle('gone', !!(s && s.gone));
    if (!s || !s.exists) {
      state.textContent = s ? '(not created yet)' : '(no record yet)'; state.className = '';
    } else if (s.gone) {
      state.textContent = 'deleted'; state.className = 'gone';
    } else if (s.deleting) {
      state.textContent = 'deleting (finalizer: release the load balancer first)'; state.className = 'gone';
    } else {
      state.textContent = ''; state.className = '';
    }
    if (s && s.exists && !s.gone) {
      var lbWanted = !(spec.loadBalancer && spec.loadBalancer.enabled === false);
      rows.push(['generation seen', s.generation, status.observedGeneration]);
      rows.push(['ready replicas', spec.replicas, status.readyReplicas]);
      rows.push(['updated replicas', spec.replicas, status.updatedReplicas]);
      rows.push(['load balancer', lbWanted ? 'registered' : 'none', status.loadBalancer ? 'registered' : 'none']);
      rows.push(['Ready condition', 'True', ready ? ready.status + (ready.reason ? ' (' + ready.reason + ')' : '') : undefined, ready ? ready.status === 'True' : false]);
      rows.push(['phase', 'Ready', status.phase]);
      if (s.deleting) rows.push(['object', 'deleted', 'finalizer ' + (s.finalizers && s.finalizers.length ? 'still on' : 'removed'), false]);
    }
    var body = document.createDocumentFragment(), differ = 0;
    rows.forEach(function (row) {
      var same = row.length > 3 ? row[3] : show(row[1]) === show(row[2]);
      if (!same) differ++;
      var tr = el('tr', { class: same ? 'same' : 'changed', 'data-what': row[0] });
      tr.appendChild(el('td', null, row[0])); tr.appendChild(el('td', null, show(row[1]))); tr.appendChild(el('td', null, show(row[2])));
      body.appendChild(tr);
    });
    if (rec.type === 'phase' && rec.phase === 'diff' && rec.key === key && rec.decision !== 'patch' && rec.decision !== 'none') {
      var tr = el('tr', { class: 'field changed', 'data-what': rec.subject });
      tr.appendChild(el('td', null, rec.subject + ': ' + rec.decision));
      tr.appendChild(el('td', null, rec.decision === 'create' ? 'the whole object' : (rec.reason || '')));
      tr.appendChild(el('td', null, rec.decision === 'create' ? '<absent>' : ''));
      body.appendChild(tr);
    }
    if (rec.type === 'phase' && rec.phase === 'diff' && rec.key === key) {
      (rec.fields || []).forEach(function (f) {
        var tr = el('tr', { class: 'field changed', 'data-what': f.path });
        tr.appendChild(el('td', null, rec.subject + ' ' + f.path)); tr.appendChild(el('td', null, show(f.desired))); tr.appendChild(el('td', null, show(f.live)));
        body.appendChild(tr);
      });
    }
    $('diff').tBodies[0].replaceChildren(body);
    var conv = $('converged');
    if (!s || !s.exists) { conv.textContent = ''; conv.className = ''; }
    else if (s.gone) { conv.textContent = 'gone: nothing left to converge'; conv.className = 'yes'; }
    else if (differ === 0) { conv.textContent = 'yes — status matches spec (Ready)'; conv.className = 'yes'; }
    else { conv.textContent = 'not yet — ' + differ + ' difference' + (differ > 1 ? 's' : ''); conv.className = 'no'; }
  }
  function renderDetail(index, rec) {
    var box = $('step-detail'), frag = document.createDocumentFragment();
    frag.appendChild(el('div', null, 'seq ' + rec.seq + ' · t=' + rec.t + 's · ' + rec.type + ' · ' + summary(rec)));
    if (causeOf.has(index)) {
      var w = steps[causeOf.get(index)];
      var b = el('button', { type: 'button', class: 'link', id: 'link-cause', 'data-target': causeOf.get(index) },
        '← caused by ' + (w.type === 'write' ? 'write ' : '') + w.id + ' ' + (w.verb || w.action || '') + ' ' + w.kind + ' (seq ' + w.seq + ')');
      frag.appendChild(b);
    }
    (effectsOf.get(index) || []).forEach(function (e) {
      var ev = steps[e];
      frag.appendChild(el('button', { type: 'button', class: 'link link-effect', 'data-target': e },
        '→ caused event ' + ev.kind + ' ' + ev.event + ' rv=' + ev.rv + ' (seq ' + ev.seq + ')'));
    });
    var json = JSON.stringify(rec, null, 1);
    frag.appendChild(el('pre', null, json.length > 3000 ? json.slice(0, 3000) + '\n…' : json));
    box.replaceChildren(frag);
  }
  function renderTimeline(scroll, measured) {
    // reads first (the layout is clean when a key arrives), then writes: no forced layout mid-render
    var box = $('timeline'), spacer = $('timeline-spacer');
    var height = measured ? measured.height : (box.clientHeight || 150);
    var scrollTop = measured ? measured.top : box.scrollTop;
    if (scroll) {
      var top = pos * ROW;
      if (top < scrollTop || top + ROW > scrollTop + height) scrollTop = Math.max(0, top - Math.floor(height / 2));
    }
    var first = Math.max(0, Math.floor(scrollTop / ROW) - 5);
    var last = Math.min(view.length - 1, Math.ceil((scrollTop + height) / ROW) + 5);
    var frag = document.createDocumentFragment();
    for (var p = first; p <= last; p++) {
      var index = view[p], rec = steps[index];
      var row = el('div', { class: 'row' + (p === pos ? ' current' : ''), role: 'option', 'aria-selected': p === pos ? 'true' : 'false',
        'data-pos': p, 'data-index': index, 'data-seq': rec.seq, 'data-type': rec.type });
      row.style.top = (p * ROW) + 'px';
      row.appendChild(el('span', { class: 'seq' }, '#' + rec.seq));
      row.appendChild(el('span', { class: 't' }, Number(rec.t).toFixed(3).replace(/\.?0+$/, '') + 's'));
      row.appendChild(el('span', { class: 'ty ' + rec.type }, rec.type === 'phase' ? rec.phase : rec.type));
      row.appendChild(el('span', { class: rec.result === 'error' || rec.outcome === 'error' ? 'err' : null }, summary(rec)));
      frag.appendChild(row);
    }
    spacer.replaceChildren(frag);
    if (measured ? scrollTop !== measured.top : scroll && box.scrollTop !== scrollTop) box.scrollTop = scrollTop;
  }
  function render(opts) {
    var t0 = performance.now();
    var box = $('timeline'), measured = { height: box.clientHeight || 150, top: box.scrollTop };
    var index = view[pos], rec = steps[index];
    $('step-index').textContent = String(pos + 1);
    $('step-index').setAttribute('data-seq', rec.seq);
    $('scrubber').value = String(pos);
    document.body.setAttribute('data-step', String(index));
    renderPhases(index, rec);
    TraceDiagram.render(rec);
    renderQueue(index, rec);
    renderObject(index, rec);
    renderDetail(index, rec);
    capacity.render(index);
    renderTimeline(opts.scroll !== false, measured);
    api.lastRenderMs = performance.now() - t0;
  }

  // ---- input --------------------------------------------------------------------------------
  function setPlaying(on) {
    if (playing) { clearInterval(playing); playing = 0; }
    if (on) {
      if (pos >= view.length - 1) go(0);
      playing = setInterval(function () { if (pos >= view.length - 1) setPlaying(false); else go(pos + 1); }, PLAY_MS);
    }
    var b = $('btn-play');
    b.setAttribute('aria-pressed', on ? 'true' : 'false');
    b.setAttribute('aria-label', on ? 'Pause' : 'Play');
    b.textContent = on ? 'pause' : 'play';
  }
  function onKey(e) {
    var t = e.target, tag = t && t.tagName;
    if (tag === 'SELECT' || tag === 'TEXTAREA' || (tag === 'INPUT' && t.type !== 'range')) return;
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var t0 = performance.now(), handled = true;
    api.lastKeyAt = t0;
    switch (e.key) {
      case 'ArrowRight': go(pos + 1); break;
      case 'ArrowLeft': go(pos - 1); break;
      case 'Home': go(0); break;
      case 'End': go(view.length - 1); break;
      case ' ':
        if (tag === 'BUTTON') { handled = false; break; }
        setPlaying(!playing); break;
      default: handled = false;
    }
    if (handled) {
      e.preventDefault();
      api.keyTimes.push(performance.now() - t0);
    }
  }
  var capacity = CapacityView.create({ steps: steps, el: el, box: $('capacity'), summary: $('capacity-summary') });
  function main() {
    if (!N) {
      $('loop-state').textContent = 'This trace has no records after its header.';
      capacity.render(-1);
      document.body.setAttribute('data-ready', 'true');
      return;
    }
    $('trace-meta').textContent = '· ' + (header.backend || '?') + ' · ' + (header.clock || '?') + ' clock · ' + N + ' records · ' + keys.length + ' objects' + (header.started ? ' · started ' + header.started : '');
    TraceDiagram.build($('diagram-wrap'));
    var select = $('object-filter'), frag = document.createDocumentFragment();
    keys.forEach(function (k) { frag.appendChild(el('option', { value: k }, k)); });
    select.appendChild(frag);
    select.addEventListener('change', function () { setView(select.value); render({ scroll: true }); });
    setView('');
    $('btn-first').addEventListener('click', function () { go(0); });
    $('btn-prev').addEventListener('click', function () { go(pos - 1); });
    $('btn-next').addEventListener('click', function () { go(pos + 1); });
    $('btn-last').addEventListener('click', function () { go(view.length - 1); });
    $('btn-play').addEventListener('click', function () { setPlaying(!playing); });
    $('scrubber').addEventListener('input', function () { go(Number($('scrubber').value)); });
    document.addEventListener('keydown', onKey);
    $('timeline').addEventListener('scroll', function () { renderTimeline(false); });
    $('timeline').addEventListener('click', function (e) {
      var row = e.target.closest ? e.target.closest('.row') : null;
      if (row) go(Number(row.getAttribute('data-pos')), { scroll: false });
    });
    $('step-detail').addEventListener('click', function (e) {
      var b = e.target.closest ? e.target.closest('button.link') : null;
      if (b) { goToStep(Number(b.getAttribute('data-target'))); var again = $('step-detail').querySelector('button.link'); if (again) again.focus(); }
    });
    window.addEventListener('resize', function () { renderTimeline(false); });
    render({ scroll: true });
    api.firstRenderMs = performance.now();
    document.body.setAttribute('data-ready', 'true');
  }

  // for tests and bench/viewer.py: timings measured in the page, and a way to step without keys
  var api = { keyTimes: [], firstRenderMs: null, lastRenderMs: null, lastKeyAt: null,
    steps: function () { return view ? view.length : 0; }, position: function () { return pos; },
    go: function (p) { go(p); }, filter: function (key) { $('object-filter').value = key; setView(key); render({ scroll: true }); } };
  window.traceViewer = api;
  main();
})();
