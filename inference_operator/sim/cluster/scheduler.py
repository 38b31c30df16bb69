"""The kube-scheduler stand-in: binds each pending pod to a node that fits, or says why none does.

It keeps the scheduler's cache as the real one does: what every node holds is the sum of the
requests of the pods bound to it that have not finished, terminating ones included (their
containers still run), updated from the pod watch. A pod that fits no node gets
``PodScheduled=False``, reason ``Unschedulable``, with :func:`.fit.fit_error`'s message; it is
tried again when something could make room or change the answer: a pod leaving a node, a node
added or changed (the real scheduler's queueing hints, without their fine print), the pods
waiting longest first (kube-scheduler orders pods of one priority by the time of their last
failed attempt; its per-pod backoff is not modelled). A pod is bound
as kube-scheduler binds it, through the ``pods/binding`` subresource (:meth:`.FakeApiServer.bind`):
``spec.nodeName`` and ``PodScheduled=True`` in one write.

:attr:`Scheduler.placement` names a node to try first for a pod, as kube-scheduler tries a
pod's nominated node first: how a cluster loaded from a snapshot puts each service's pods back
on the nodes they ran on. The node must still pass every filter; else the search goes on as usual,
unless :attr:`Scheduler.holding` keeps such a pod waiting until every pod the snapshot placed is
back (a pod the snapshot shows Pending must not take another's node first).
"""

from __future__ import annotations

import marshal
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import compress, islice

from inference_operator.core.clock import format_timestamp
from inference_operator.core.nodefit import NodeStatus, allocatable, filter_node, scheduling_taints
from inference_operator.core.objects import Obj, key_of
from inference_operator.core.ports import Result
from inference_operator.core.resources import Resources, add, pod_requests, subtract
from inference_operator.sim.apiserver.binding import with_condition
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.cluster import podstate
from inference_operator.sim.cluster.fit import feasible_nodes_to_find, fit_error, node_score, scored_resources
from inference_operator.sim.informer import SharedInformer

__all__ = ["FIELD_MANAGER", "SCHEDULER", "Scheduler"]

SCHEDULER = "default-scheduler"
"""The scheduler's name, as pods ask for it (``spec.schedulerName``)."""
FIELD_MANAGER = "kube-scheduler"
"""Who its status writes are recorded as in ``managedFields`` (its client's user agent)."""


class Scheduler:
    """Schedules one pod per key (``namespace/name``)."""

    def __init__(
        self,
        *,
        api: FakeApiServer,
        clock: FakeClock,
        nodes: SharedInformer,
        pods: SharedInformer,
        retry: Callable[[str], None],
    ) -> None:
        self.api = api
        self.clock = clock
        self.nodes = nodes
        self.pods = pods
        self.retry = retry
        """Queues a pod key again (the controller's enqueue)."""
        self._held: dict[str, tuple[str, Resources]] = {}  # pod uid → (node, requests)
        self.used: dict[str, Resources] = {}  # node → requests of the pods it holds
        self.count: dict[str, int] = {}  # node → pods it holds
        self._pending: dict[str, None] = {}  # keys of pods waiting for room, the longest waiting first
        self._nodes: dict[str, tuple[str, Resources, list[Obj]]] = {}  # name → (rv, allocatable, taints)
        self._next_start = 0  # where the next search through the nodes begins
        self._sorted = _Nodes(-1, [])  # the node informer's nodes by name, as of its changes
        self._by_shape: dict[bytes, _ShapeVerdicts] = {}  # pod shape → its verdicts and scores on the nodes
        self._by_shape_of = -1  # the node informer's changes they were found at
        self.placement: Callable[[Obj], str | None] | None = None
        """The node to try first for a pod (None, or a name no node has: search as usual)."""
        self.holding = False
        """While True, a pod :attr:`placement` names no node for waits, unscheduled and with no
        condition written, instead of being searched for (one whose named node cannot take it
        is searched for as usual); :meth:`release` ends it."""

    def _node_info(self, node: Obj) -> tuple[Resources, list[Obj]]:
        """A node's allocatable and scheduling taints, parsed once per version of it."""
        name, rv = str(node["metadata"]["name"]), str(node["metadata"].get("resourceVersion", ""))
        cached = self._nodes.get(name)
        if cached is None or cached[0] != rv:
            cached = self._nodes[name] = (rv, allocatable(node), scheduling_taints(node))
        return cached[1], cached[2]

    # --- the cache ----------------------------------------------------------------------------

    def observe_pod(self, old: Obj | None, new: Obj | None) -> None:
        """Account for a pod event; a pod that leaves a node lets the waiting ones try again."""
        pod = new if new is not None else old
        if pod is None:
            return
        uid = pod["metadata"]["uid"]
        holds = new is not None and bool(podstate.node_of(new)) and not podstate.is_terminal(new)
        before = self._held.pop(uid, None)
        if before is not None:
            node, requests = before
            self.used[node] = subtract(self.used.get(node, {}), requests)
            self.count[node] = self.count.get(node, 0) - 1
            self._forget(node)
        if holds and new is not None:
            node, requests = podstate.node_of(new), pod_requests(new.get("spec") or {})
            self._held[uid] = (node, requests)
            self.used[node] = add(self.used.get(node, {}), requests)
            self.count[node] = self.count.get(node, 0) + 1
            self._forget(node)
        key = key_of(pod["metadata"]["namespace"], pod["metadata"]["name"])
        if new is None or podstate.node_of(new) or not podstate.is_active(new):
            self._pending.pop(key, None)
        elif new is not None:
            self.retry(key)
        if before is not None and not holds:
            self.retry_pending()

    def release(self) -> None:
        """End :attr:`holding` and :attr:`placement`: the pods held are searched for, as any."""
        self.holding = False
        self.placement = None
        self.retry_pending()

    def retry_pending(self) -> None:
        """Queue every pod waiting for room (a node came, changed, or a pod left one), the one
        whose last attempt failed first at the head, as kube-scheduler's ``PrioritySort`` does
        among pods of one priority (their ``Timestamp``): the pod waiting longest gets the room."""
        for key in list(self._pending):
            self.retry(key)

    # --- scheduling ---------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> Result:
        pod = self.pods.get(namespace, name)
        if pod is None or podstate.node_of(pod) or not podstate.is_active(pod):
            return Result()
        if (pod.get("spec") or {}).get("schedulerName", SCHEDULER) != SCHEDULER:
            return Result()
        spec = pod.get("spec") or {}
        requests = pod_requests(spec)
        key = key_of(namespace, name)
        named = self.placement(pod) if self.placement is not None else None
        if named is None and self.holding:
            self._waits(key)
            return Result()
        preferred = self._preferred(named, spec, requests)
        if preferred is not None:
            self._pending.pop(key, None)
            self._bind(pod, preferred)
            return Result()
        nodes = self._nodes_by_name()
        total = len(nodes.objs)
        wanted = feasible_nodes_to_find(total)
        start = self._next_start % total if total else 0
        shape = _shape(spec, requests)
        kept = self._verdicts_of(shape, nodes) if shape else None
        if kept is not None:
            fitting, processed, statuses = self._search_remembered(spec, requests, kept, nodes, start, wanted)
        else:
            fitting, processed, statuses = self._search(spec, requests, nodes, start, wanted)
        self._next_start = start + processed
        if fitting:
            self._pending.pop(key, None)
            self._bind(pod, self._best(fitting, requests, nodes, kept))
            return Result()
        self._waits(key)
        self._unschedulable(pod, fit_error(statuses))
        return Result()

    def _waits(self, key: str) -> None:
        """``key`` failed an attempt now: last in line, as kube-scheduler's queue orders pods of
        one priority by the time of their last failed attempt."""
        self._pending.pop(key, None)
        self._pending[key] = None

    def _search(
        self, spec: Obj, requests: Resources, nodes: _Nodes, start: int, wanted: int
    ) -> tuple[list[str], int, list[NodeStatus]]:
        """kube-scheduler's search: from ``start`` round the nodes by name, filtering each, until
        ``wanted`` fit. The nodes that fit, how many were filtered, and why the others did not."""
        fitting: list[str] = []
        statuses: list[NodeStatus] = []
        processed = 0
        for node in nodes.objs[start:] + nodes.objs[:start]:
            if len(fitting) >= wanted:
                break
            processed += 1
            status = self._filter(spec, requests, node)
            if status is None:
                fitting.append(str(node["metadata"]["name"]))
            else:
                statuses.append(status)
        return fitting, processed, statuses

    def _search_remembered(
        self, spec: Obj, requests: Resources, kept: _ShapeVerdicts, nodes: _Nodes, start: int, wanted: int
    ) -> tuple[list[str], int, list[NodeStatus]]:
        """:meth:`_search`'s answer from the verdicts ``kept`` for the pod's shape: only the
        nodes whose holdings changed since they were filtered (mostly the one the last pod went
        to) are filtered again, and the search itself runs at C speed. Past 100 nodes each pod of
        a burst meets at least 100 nodes, and almost none of them changed since the last pod."""
        if kept.to_refilter:
            for name in kept.to_refilter & nodes.by_name.keys():  # (a pod's node may be no node)
                status = self._filter(spec, requests, nodes.by_name[name])
                kept.verdicts[name] = status
                if status is None:
                    kept.fitting.add(name)
            kept.to_refilter.clear()
        order = nodes.names[start:] + nodes.names[:start]
        fitting = list(islice(compress(order, map(kept.fitting.__contains__, order)), wanted))
        total = len(order)
        if fitting and len(fitting) >= wanted:  # (``fitting and``: with no nodes, nothing is wanted)
            return fitting, (nodes.position[fitting[-1]] - start) % total + 1, []
        if fitting:
            return fitting, total, []
        return fitting, total, [status for name in order if (status := kept.verdicts[name]) is not None]

    def _verdicts_of(self, shape: bytes, nodes: _Nodes) -> _ShapeVerdicts:
        """The verdicts and scores kept for pods of ``shape`` on ``nodes`` (the current ones):
        all shapes' go when a node event came (a node added, changed or gone) or when a shape
        past :data:`_SHAPES` is seen."""
        if self._by_shape_of != nodes.changes:
            self._by_shape = {}
            self._by_shape_of = nodes.changes
        kept = self._by_shape.get(shape)
        if kept is None:
            if len(self._by_shape) >= _SHAPES:
                self._by_shape = {}
            kept = self._by_shape[shape] = _ShapeVerdicts(to_refilter=set(nodes.names))
        return kept

    def _forget(self, node: str) -> None:
        """What is kept about ``node`` no longer holds: what it holds changed (one pass over
        the shapes kept, at most :data:`_SHAPES`)."""
        for kept in self._by_shape.values():
            kept.verdicts.pop(node, None)
            kept.fitting.discard(node)
            kept.scores.pop(node, None)
            kept.to_refilter.add(node)

    def _nodes_by_name(self) -> _Nodes:
        """The cached nodes sorted by name, sorted again only when a node event came."""
        changes = self.nodes.changes
        if self._sorted.changes != changes:
            self._sorted = _Nodes(changes, sorted(self.nodes.list(), key=lambda n: str(n["metadata"]["name"])))
        return self._sorted

    def _best(self, fitting: list[str], requests: Resources, nodes: _Nodes, kept: _ShapeVerdicts | None) -> str:
        """:func:`.fit.choose_node` among the nodes that fit, each node's score ``kept`` (for
        the pod's shape) until what it holds changes."""
        names = scored_resources(requests)

        def score(name: str) -> tuple[float, int, str]:
            capacity = self._node_info(nodes.by_name[name])[0]
            return node_score(name, capacity, self.used.get(name, {}), self.count.get(name, 0), requests, names)

        if kept is None:
            return min(fitting, key=score)
        scores = kept.scores
        for name in set(fitting).difference(scores):
            scores[name] = score(name)
        return min(fitting, key=scores.__getitem__)

    def _preferred(self, wanted: str | None, spec: Obj, requests: Resources) -> str | None:
        """``wanted`` (the node :attr:`placement` names), if it passes every filter."""
        node = self.nodes.get("", wanted) if wanted else None
        if node is None or wanted is None:
            return None
        return wanted if self._filter(spec, requests, node) is None else None

    def _filter(self, spec: Obj, requests: Resources, node: Obj) -> NodeStatus | None:
        """Why ``node`` cannot take the pod now (None: it can)."""
        name = str(node["metadata"]["name"])
        capacity, taints = self._node_info(node)
        used, pods = self.used.get(name, {}), self.count.get(name, 0)
        return filter_node(spec, requests, node, requested=used, pods_on_node=pods, capacity=capacity, taints=taints)

    def _bind(self, pod: Obj, node: str) -> None:
        meta = pod["metadata"]
        self.api.bind(meta["namespace"], meta["name"], node, uid=meta["uid"])

    def _unschedulable(self, pod: Obj, message: str) -> None:
        current = podstate.condition(pod, "PodScheduled")
        if current is not None and current.get("reason") == "Unschedulable" and current.get("message") == message:
            return
        self._set_condition(
            pod,
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
            },
        )

    def _set_condition(self, pod: Obj, condition: Obj) -> None:
        status = pod.get("status") or {}
        now = format_timestamp(self.clock.wall())
        conditions = with_condition(status.get("conditions"), condition, now=now)
        meta = pod["metadata"]
        self.api.patch_status(
            "Pod",
            meta["namespace"],
            meta["name"],
            {"status": {"phase": status.get("phase", "Pending"), "conditions": conditions}},
            field_manager=FIELD_MANAGER,
            answer=False,
        )


_SHAPES = 256
"""Pod shapes whose verdicts are kept at most (all forgotten at once past it: cheap to redo)."""


class _Nodes:
    """The nodes by name, as of the node informer's ``changes``: objects, names, where each is."""

    __slots__ = ("by_name", "changes", "names", "objs", "position")

    def __init__(self, changes: int, objs: list[Obj]) -> None:
        self.changes = changes
        self.objs = objs
        self.names = [str(node["metadata"]["name"]) for node in objs]
        self.position = {name: i for i, name in enumerate(self.names)}
        self.by_name = dict(zip(self.names, objs, strict=True))


@dataclass
class _ShapeVerdicts:
    """What the filters found on each node for pods of one shape (and the nodes that fit among
    them), the nodes' scores, and the nodes to filter again before the next search."""

    to_refilter: set[str]
    verdicts: dict[str, NodeStatus | None] = field(default_factory=dict)
    fitting: set[str] = field(default_factory=set)
    scores: dict[str, tuple[float, int, str]] = field(default_factory=dict)


def _shape(spec: Obj, requests: Resources) -> bytes:
    """What a node's verdict and score depend on in a pod: its tolerations, node selector,
    affinity and requests (encoded: equal pods, equal bytes)."""
    placement = (spec.get("tolerations"), spec.get("nodeSelector"), spec.get("affinity"), sorted(requests.items()))
    return marshal.dumps(placement, 2)
