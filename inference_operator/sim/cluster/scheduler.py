"""The kube-scheduler stand-in: binds each pending pod to a node that fits, or says why none does.

It keeps the scheduler's cache as the real one does: what every node holds is the sum of the
requests of the pods bound to it that have not finished, terminating ones included (their
containers still run), updated from the pod watch. A pod that fits no node gets
``PodScheduled=False``, reason ``Unschedulable``, with :func:`.fit.fit_error`'s message; it is
tried again when something could make room or change the answer: a pod leaving a node, a node
added or changed (the real scheduler's queueing hints, without their fine print). A pod is bound
as kube-scheduler binds it, through the ``pods/binding`` subresource (:meth:`.FakeApiServer.bind`):
``spec.nodeName`` and ``PodScheduled=True`` in one write.

:attr:`Scheduler.placement` names a node to try first for a pod, as kube-scheduler tries a
pod's nominated node first: how a cluster loaded from a snapshot puts each service's pods back
on the nodes they ran on. The node must still pass every filter; else the search goes on as usual.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable
from typing import Any, TypeVar

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
        self._pending: set[str] = set()  # keys of pods waiting for room
        self._nodes: dict[str, tuple[str, Resources, list[Obj]]] = {}  # name → (rv, allocatable, taints)
        self._next_start = 0  # where the next search through the nodes begins
        self._changes: dict[str, int] = {}  # node → how often what it holds changed
        self._verdicts: dict[Any, NodeStatus | None] = {}  # (pod shape, *node version) → filter verdict
        self._scores: dict[Any, tuple[float, int, str]] = {}  # (pod shape, *node version) → score
        self._sorted: tuple[int, list[Obj]] = (-1, [])  # (node informer's changes, its nodes by name)
        self.placement: Callable[[Obj], str | None] | None = None
        """The node to try first for a pod (None, or a name no node has: search as usual)."""

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
            self._changes[node] = self._changes.get(node, 0) + 1
        if holds and new is not None:
            node, requests = podstate.node_of(new), pod_requests(new.get("spec") or {})
            self._held[uid] = (node, requests)
            self.used[node] = add(self.used.get(node, {}), requests)
            self.count[node] = self.count.get(node, 0) + 1
            self._changes[node] = self._changes.get(node, 0) + 1
        key = key_of(pod["metadata"]["namespace"], pod["metadata"]["name"])
        if new is None or podstate.node_of(new) or not podstate.is_active(new):
            self._pending.discard(key)
        elif new is not None:
            self.retry(key)
        if before is not None and not holds:
            self.retry_pending()

    def retry_pending(self) -> None:
        """Queue every pod waiting for room (a node came, changed, or a pod left one)."""
        for key in sorted(self._pending):
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
        preferred = self._preferred(pod, spec, requests)
        if preferred is not None:
            self._pending.discard(key)
            self._bind(pod, preferred)
            return Result()
        nodes = self._nodes_by_name()
        wanted = feasible_nodes_to_find(len(nodes))
        fitting: list[Obj] = []
        statuses: list[NodeStatus] = []
        start = self._next_start % len(nodes) if nodes else 0
        processed = 0
        shape = _shape(spec, requests)
        verdicts, changes = self._verdicts, self._changes
        for node in nodes[start:] + nodes[:start]:
            if len(fitting) >= wanted:
                break
            processed += 1
            meta = node["metadata"]  # the verdict's key, as _version() spells it (inlined: per node per pod)
            name = str(meta["name"])
            remembered = (shape, name, str(meta.get("resourceVersion", "")), changes.get(name, 0))
            status = verdicts[remembered] if remembered in verdicts else self._filter(spec, requests, node, shape)
            if status is None:
                fitting.append(node)
            else:
                statuses.append(status)
        self._next_start = start + processed
        if fitting:
            self._pending.discard(key)
            chosen = str(self._best(fitting, requests, shape)["metadata"]["name"])
            self._bind(pod, chosen)
            return Result()
        self._pending.add(key)
        self._unschedulable(pod, fit_error(statuses))
        return Result()

    def _nodes_by_name(self) -> list[Obj]:
        """The cached nodes sorted by name, sorted again only when a node event came."""
        changes = self.nodes.changes
        if self._sorted[0] != changes:
            self._sorted = (changes, sorted(self.nodes.list(), key=lambda n: str(n["metadata"]["name"])))
        return self._sorted[1]

    def _version(self, node: Obj) -> tuple[str, str, int]:
        """What a verdict on ``node`` depends on besides the pod: the node's version, and how often
        what it holds changed."""
        name = str(node["metadata"]["name"])
        return name, str(node["metadata"].get("resourceVersion", "")), self._changes.get(name, 0)

    def _best(self, fitting: list[Obj], requests: Resources, shape: bytes) -> Obj:
        """:func:`.fit.choose_node`, each node's score kept until the node or what it holds changes."""
        names = scored_resources(requests)

        scores = self._scores

        def score(node: Obj) -> tuple[float, int, str]:
            meta = node["metadata"]
            name = str(meta["name"])
            remembered = (shape, name, str(meta.get("resourceVersion", "")), self._changes.get(name, 0))
            if shape and remembered in scores:
                return scores[remembered]

            def work_out() -> tuple[float, int, str]:
                capacity = self._node_info(node)[0]
                return node_score(name, capacity, self.used.get(name, {}), self.count.get(name, 0), requests, names)

            return _remembered(scores, remembered if shape else None, work_out)

        return min(fitting, key=score)

    def _preferred(self, pod: Obj, spec: Obj, requests: Resources) -> str | None:
        """The node :attr:`placement` names for ``pod``, if it passes every filter."""
        wanted = self.placement(pod) if self.placement is not None else None
        node = self.nodes.get("", wanted) if wanted else None
        if node is None or wanted is None:
            return None
        return wanted if self._filter(spec, requests, node) is None else None

    def _filter(self, spec: Obj, requests: Resources, node: Obj, shape: bytes = b"") -> NodeStatus | None:
        """Why ``node`` cannot take the pod now (None: it can). With the pod's ``shape``
        (:func:`_shape`) the verdict is kept until the node or what it holds changes: a burst of
        pods alike is filtered against a hundred nodes each, and most of them did not change."""

        def work_out() -> NodeStatus | None:
            name = str(node["metadata"]["name"])
            capacity, taints = self._node_info(node)
            used, pods = self.used.get(name, {}), self.count.get(name, 0)
            return filter_node(
                spec, requests, node, requested=used, pods_on_node=pods, capacity=capacity, taints=taints
            )

        return _remembered(self._verdicts, (shape, *self._version(node)) if shape else None, work_out)

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


_REMEMBERED = 100_000
"""Verdicts and scores kept at most (all forgotten at once past it: they are cheap to redo)."""

T = TypeVar("T")


def _remembered(table: dict[Any, T], key: Any, work_out: Callable[[], T]) -> T:
    """``table[key]``, worked out and kept if missing (``key`` None: worked out, not kept)."""
    if key is None:
        return work_out()
    if key not in table:
        if len(table) > _REMEMBERED:
            table.clear()
        table[key] = work_out()
    return table[key]


def _shape(spec: Obj, requests: Resources) -> bytes:
    """What a node's verdict and score depend on in a pod: its tolerations, node selector,
    affinity and requests (encoded: equal pods, equal bytes)."""
    placement = (spec.get("tolerations"), spec.get("nodeSelector"), spec.get("affinity"), sorted(requests.items()))
    return marshal.dumps(placement, 2)
