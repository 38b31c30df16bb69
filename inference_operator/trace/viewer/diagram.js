/* The architecture diagram: the boxes of a controller's data flow and which edge a record moves.
 *
 * Why a module: the page shows data flowing informer -> workqueue -> reconciler -> API server;
 * which boxes and edges one record lights is a fixed table (flowOf), kept apart from the page's
 * navigation and panels in viewer.js. The SVG is built once from constants (no trace text),
 * and a token runs along the lit edge.
 */
'use strict';
var TraceDiagram = (function () {
  function $(id) { return document.getElementById(id); }
  var NODES = {
    platform: [10, 8, 130, 40, 'kubectl & controllers', 'users, Deployment ctrl, GC'],
    api: [10, 112, 130, 48, 'API server', 'the truth (etcd)'],
    lb: [10, 214, 130, 44, 'load balancer', 'external registry'],
    informer: [205, 8, 140, 44, 'watch / informer', 'list + watch stream'],
    cache: [205, 112, 140, 44, 'cache', 'what reads see'],
    queue: [425, 8, 150, 48, 'workqueue', ''],
    workers: [425, 112, 150, 44, 'workers', 'one pass per key'],
    reconciler: [425, 214, 150, 48, 'reconciler', 'observe diff act status']
  };
  var EDGES = {
    'platform-api': ['M75 48 L75 112', 'writes'],
    'api-informer': ['M140 128 C175 110, 180 40, 205 32', 'events'],
    'informer-cache': ['M275 52 L275 112', 'store'],
    'informer-queue': ['M345 30 L425 30', 'enqueue key'],
    'queue-workers': ['M500 56 L500 112', 'dequeue'],
    'workers-reconciler': ['M500 156 L500 214', 'reconcile'],
    'reconciler-cache': ['M425 226 C380 226, 300 200, 285 156', 'read'],
    'reconciler-api': ['M425 240 C300 250, 190 200, 140 148', 'write'],
    'reconciler-lb': ['M425 250 C330 262, 200 262, 140 240', 'register'],
    'reconciler-queue': ['M575 238 C625 230, 625 40, 575 32', 'requeue']
  };
  function build(wrap) {
    var svg = ['<svg id="diagram" viewBox="0 0 630 266" role="img" aria-label="Architecture: API server, informer, cache, workqueue, workers, reconciler, load balancer">',
      '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" fill="#8a96a3"/></marker></defs>'];
    Object.keys(EDGES).forEach(function (name) {
      svg.push('<path class="edge" id="edge-' + name + '" data-edge="' + name + '" d="' + EDGES[name][0] + '"/>');
    });
    Object.keys(NODES).forEach(function (name) {
      var n = NODES[name];
      svg.push('<g class="node" id="node-' + name + '" data-node="' + name + '"><rect x="' + n[0] + '" y="' + n[1] + '" width="' + n[2] + '" height="' + n[3] + '" rx="6"/>' +
        '<text x="' + (n[0] + n[2] / 2) + '" y="' + (n[1] + 18) + '">' + n[4] + '</text>' +
        '<text class="sub" id="sub-' + name + '" x="' + (n[0] + n[2] / 2) + '" y="' + (n[1] + 33) + '">' + n[5] + '</text></g>');
    });
    Object.keys(EDGES).forEach(function (name) {
      var m = /M(\d+) (\d+).*?(\d+)[ ,](\d+)$/.exec(EDGES[name][0]);
      if (m) {
        var x = (Number(m[1]) + Number(m[3])) / 2, y = (Number(m[2]) + Number(m[4])) / 2;
        if (name === 'reconciler-queue') x = 584;
        svg.push('<text class="edge-label" x="' + (x + 4) + '" y="' + (y - 3) + '">' + EDGES[name][1] + '</text>');
      }
    });
    svg.push('<circle id="token" r="6" cx="-20" cy="-20"/></svg>');
    wrap.innerHTML = svg.join(''); // constant markup only: no text of the trace is in it
  }
  function flowOf(rec) { // [edges lit, the edge the token runs along, nodes lit]
    switch (rec.type) {
      case 'event': return rec.enqueued ? [['api-informer', 'informer-cache', 'informer-queue'], 'informer-queue', ['informer', 'cache']]
        : [['api-informer', 'informer-cache'], 'api-informer', ['informer', 'cache']];
      case 'enqueue': return rec.pass !== undefined ? [['reconciler-queue'], 'reconciler-queue', ['queue']] : [['informer-queue'], 'informer-queue', ['queue']];
      case 'dequeue': return [['queue-workers', 'workers-reconciler'], 'queue-workers', ['queue', 'workers']];
      case 'phase': return rec.phase === 'observe' ? [['reconciler-cache'], 'reconciler-cache', ['reconciler', 'cache']] : [[], null, ['reconciler']];
      case 'write': return rec.kind === 'LoadBalancer' ? [['reconciler-lb'], 'reconciler-lb', ['reconciler', 'lb']] : [['reconciler-api'], 'reconciler-api', ['reconciler', 'api']];
      case 'platform': return [['platform-api'], 'platform-api', ['platform', 'api']];
      case 'result': return [['workers-reconciler'], null, ['workers']];
      default: return [[], null, []];
    }
  }
  var tokenAnim = 0;
  function animateToken(edge) {
    var token = $('token');
    if (tokenAnim) cancelAnimationFrame(tokenAnim);
    tokenAnim = 0;
    var path = edge ? $('edge-' + edge) : null;
    if (!path || typeof path.getTotalLength !== 'function') { token.setAttribute('cx', -20); token.setAttribute('cy', -20); return; }
    var length = path.getTotalLength(), start = performance.now(), duration = 450;
    function frame(now) {
      var f = Math.min(1, (now - start) / duration), p = path.getPointAtLength(length * f);
      token.setAttribute('cx', p.x.toFixed(1)); token.setAttribute('cy', p.y.toFixed(1));
      tokenAnim = f < 1 ? requestAnimationFrame(frame) : 0;
    }
    tokenAnim = requestAnimationFrame(frame);
  }
  function render(rec) { // light what this record moved, and run the token along it
    var flow = flowOf(rec), svg = $('diagram');
    Object.keys(EDGES).forEach(function (name) { $('edge-' + name).classList.toggle('active', flow[0].indexOf(name) >= 0); });
    Object.keys(NODES).forEach(function (name) { $('node-' + name).classList.toggle('active', flow[2].indexOf(name) >= 0); });
    svg.setAttribute('data-edge', flow[1] || '');
    svg.setAttribute('data-type', rec.type);
    animateToken(flow[1]);
  }
  return { build: build, render: render, flowOf: flowOf };
})();
