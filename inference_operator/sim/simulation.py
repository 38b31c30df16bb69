"""The simulator facade: a whole control plane plus the operator, in one process, on a fake clock.

    sim = Simulation(ready_after=5.0)
    sim.apply(make_inference_service("llama", image="vllm:0.6.3", model="Llama-3", replicas=2))
    sim.run_until_quiescent()
    sim.get("InferenceService", "default", "llama")["status"]["phase"]   # "Ready"

The cluster is the simulated one (:mod:`.cluster`), on two nodes of 8 ``nvidia.com/gpu`` each
unless told otherwise: pods are stored objects, scheduled, started and stopped, and a fleet
larger than the nodes leaves pods Pending with the scheduler's words.

Wiring, as on a real cluster: the FakeApiServer's watch feeds shared informers, one per kind the
reconciler watches (``inference_operator.reconcile.watches``, the same declaration the Kopf
handlers are made from), and each informer's events enqueue the keys that declaration's rule
names; the operator's controller and each controller of the simulated cluster (Deployments,
ReplicaSets, the scheduler, the kubelets) drain their own workqueue. The ports the reconciler
talks to are composed once per operator process (:mod:`.wiring`).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, cast

from inference_operator.api.constants import DEPLOYMENT, KIND
from inference_operator.api.crd import crd
from inference_operator.control.controller import Controller, ReconcileFunc
from inference_operator.control.workqueue import RateLimitingQueue
from inference_operator.core.errors import NotFound
from inference_operator.core.handler import WatchEvent
from inference_operator.core.jsoncopy import deep_copy
from inference_operator.core.objects import Obj, key_of, obj_key
from inference_operator.core.ports import LoadBalancerProvider, Result
from inference_operator.lb.memory import InMemoryLoadBalancer
from inference_operator.reconcile.reconciler import DEFAULT_REQUEUE_WHILE_PROGRESSING, Reconciler
from inference_operator.reconcile.watches import CAPACITY_READS, WATCHES, Read, Watch
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.backend import Event, FakeBackend, Timeline, TimelineEntry
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.cluster.cluster import SimulatedCluster
from inference_operator.sim.cluster.nodes import NodeShape, default_layout
from inference_operator.sim.informer import SharedInformer
from inference_operator.sim.quiescence import run_until_quiescent
from inference_operator.sim.wiring import Interposer, operator_ports
from inference_operator.trace.recorder import NULL_TRACER, Tracer

KUBECTL = "kubectl"
"""The field manager of ``kubectl apply --server-side`` (what :meth:`Simulation.apply` applies as)."""


@functools.cache
def _project_crd() -> Obj:
    """The project's CRD manifest, generated once (50 ms); the server stores copies of it."""
    return crd()


class Simulation:
    """An offline, deterministic cluster running the inference-operator."""

    def __init__(
        self,
        *,
        ready_after: float = 5.0,
        gpus_per_node: int = 8,
        nodes: int = 2,
        deployment_controller: bool = True,
        requeue_while_progressing: float = DEFAULT_REQUEUE_WHILE_PROGRESSING,
        tracer: Callable[[FakeClock], Tracer] | None = None,
        interpose: Interposer | None = None,
        node_layout: Sequence[NodeShape] | None = None,
        termination_seconds: float | None = None,
    ) -> None:
        """``tracer`` makes the flight recorder, given the simulation's clock (default: none);
        ``interpose`` puts wrappers between the operator and the world (see :mod:`.wiring`).

        The cluster is the simulated one of :mod:`.cluster`: Nodes, a scheduler, ReplicaSets
        and Pods as stored objects, a Deployment controller with the real rollout arithmetic,
        kubelets that make pods ready ``ready_after`` seconds after binding and stop deleted
        ones after ``termination_seconds`` (None: their whole grace period, 30 s by default).
        The nodes are ``node_layout``, by default ``nodes`` nodes named ``sim-node-1`` …, each
        with ``gpus_per_node`` ``nvidia.com/gpu`` (96 cpu, 1 TiB memory, 110 pods): two nodes
        of 8 GPUs unless told otherwise. ``deployment_controller=False`` is a
        kube-controller-manager that is down: Deployments get no ReplicaSets and no status.
        """
        self.clock = FakeClock()
        self.tracer: Tracer = tracer(self.clock) if tracer is not None else NULL_TRACER
        self.api = FakeApiServer(self.clock)
        # As on a real cluster, the CRD is installed before anything else: its schema's defaults,
        # pruning, validation and CEL rules apply to every InferenceService written from now on.
        self.api.create(_project_crd())
        self.lb = InMemoryLoadBalancer()
        self._timeline = Timeline(self.clock)
        self._requeue_while_progressing = requeue_while_progressing
        self.restarts = 0
        self.reconciles_by_key: Counter[str] = Counter()
        """Reconcile passes per key, over every operator incarnation."""
        self.last_outcome: dict[str, Result | Exception] = {}
        """The result of each key's latest pass, or the exception it raised."""
        # The controller-manager's own watch of every Deployment, not the operator's
        # label-selected one: it outlives operator restarts and sees foreign Deployments too.
        self.cluster_deployments = SharedInformer(self.api, DEPLOYMENT)
        self.cluster = SimulatedCluster(
            api=self.api,
            clock=self.clock,
            deployments=self.cluster_deployments,
            layout=default_layout(nodes=nodes, gpus_per_node=gpus_per_node) if node_layout is None else node_layout,
            ready_after=ready_after,
            stop_seconds=termination_seconds,
        )
        self.api.reset_counters()  # the writes counted are the workload's, not the setup's
        self.cluster.tracer = self.tracer
        if self.tracer.enabled:
            self.api.on_collected = self._collected
        self.deployment_controller = deployment_controller
        self.cluster_deployments.add_event_handler(
            on_add=self._deployment_changed,
            on_update=lambda _old, new: self._deployment_changed(new),
            on_delete=self._deployment_changed,
        )
        # What the operator writes through and registers with: the API server and the balancer
        # themselves, unless an Interposer puts wrappers in between. They outlive restarts.
        self._interposer = interpose or Interposer()
        self._operator_api: Any = self._interposer.api(self) if self._interposer.api else self.api
        self._operator_lb: LoadBalancerProvider = (
            self._interposer.load_balancer(self) if self._interposer.load_balancer else self.lb
        )
        self._build_operator()
        self.cluster_deployments.start()
        for informer in self.informers.values():
            informer.start()

    def _deployment_changed(self, obj: Obj) -> None:
        self.cluster.deployment_controller.enqueue(obj_key(obj))

    def _build_operator(self, events: list[Event] | None = None) -> None:
        """A fresh operator process: informers, backend, reconciler, controller and its queue,
        its informers wired to its queue by the reconciler's watch rule (not yet started)."""
        # As on a real cluster, the operator watches its children by the owner label only.
        self.informers = {w.kind: SharedInformer(self.api, w.kind, label=w.label_selector) for w in WATCHES}
        # What a rollout counts free GPUs from: every Node and Pod, the Pods indexed by owner.
        # Started on first use, as controller-runtime's cache starts an informer at the first
        # read of its kind: a fleet that never plans an Auto rollout or diagnoses its pods never
        # caches the cluster's pods. Until then no pod's words can wake a pass, and none need
        # to: a pod's words wake a pass only to replace a diagnosis, which read them first.
        self.capacity_informers = {
            r.kind: SharedInformer(self.api, r.kind, index_label=r.index_label) for r in CAPACITY_READS
        }
        self.backend = FakeBackend(
            cast(FakeApiServer, self._operator_api),
            self.informers,
            self.clock,
            self._timeline,
            pods=self.cluster.pods,
            events=events,
            capacity=self.capacity_informers,
        )
        ports = operator_ports(
            backend=self.backend,
            load_balancer=self._operator_lb,
            timeline=self._timeline,
            tracer=self.tracer,
            wrap_backend=self._interposer.backend,
        )
        self.reconciler = Reconciler(
            ports.backend,
            ports.load_balancer,
            self.clock,
            requeue_while_progressing=self._requeue_while_progressing,
            tracer=self.tracer,
        )
        self.controller = Controller(
            "inferenceservice",
            self._recorded(self.reconciler.reconcile),
            RateLimitingQueue(self.clock, name="inferenceservice"),
            tracer=self.tracer,
        )
        for watch in WATCHES:
            self._wire(watch, self.informers[watch.kind])
        for read in CAPACITY_READS:
            self._wire(read, self.capacity_informers[read.kind])

    def _recorded(self, reconcile: ReconcileFunc) -> ReconcileFunc:
        """``reconcile``, counting passes per key and keeping each key's latest outcome."""

        def run(namespace: str, name: str) -> Result:
            key = key_of(namespace, name)
            self.reconciles_by_key[key] += 1
            try:
                result = reconcile(namespace, name)
            except Exception as err:
                self.last_outcome[key] = err
                raise
            self.last_outcome[key] = result
            return result

        return run

    def _wire(self, source: Watch | Read, informer: SharedInformer) -> None:
        """The informer of ``source.kind`` enqueues what the watch rule says, as the real backend's streams
        do; a read's informer only what its rule names (its events are not traced: the trace is
        about InferenceServices and their children; the pass shows as its key's ``enqueue``)."""
        handler = source.handler
        if handler is None:
            return
        tracer, controller, read = self.tracer, self.controller, isinstance(source, Read)

        def handle(event: WatchEvent, name: str) -> None:
            keys = handler.keys(event)
            if tracer.enabled and not read:  # a read's objects are no trace's subject
                tracer.event(source.kind, name, event.obj, enqueued=keys[-1] if keys else None)
            for key in keys:
                controller.enqueue(key)

        informer.add_event_handler(
            on_add=lambda obj: handle(WatchEvent("create", old=None, new=obj), "ADDED"),
            on_update=lambda old, new: handle(WatchEvent("update", old=old, new=new), "MODIFIED"),
            on_delete=lambda obj: handle(WatchEvent("delete", old=obj, new=None), "DELETED"),
        )

    def _collected(self, key: tuple[str, str, str], rv: str) -> None:
        kind, namespace, name = key
        self.tracer.platform("garbage-collector", "delete", kind, key_of(namespace, name), rv=rv, detail={})

    # -- like kubectl ---------------------------------------------------------------------------

    def apply(self, manifest: Obj) -> Obj:
        """What ``kubectl apply --server-side`` does: server-side apply as field manager ``kubectl``.

        The manifest is everything the user wants set: a missing object is created; a field an
        earlier apply set and this one leaves out is removed (unless another manager owns it
        too); fields others own (the operator's finalizer, status) are left alone. No
        resourceVersion is needed. A field another manager owns that the manifest would change
        raises :class:`~inference_operator.core.errors.Conflict`, as kubectl does without
        ``--force-conflicts``.
        """
        applied = self.api.apply(deep_copy(manifest), field_manager=KUBECTL)
        if self.tracer.enabled:
            self._user("apply", applied)
        return applied

    def _user(self, action: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        rv = str(meta.get("resourceVersion") or "") or None
        key = key_of(meta.get("namespace", ""), meta.get("name", ""))
        self.tracer.platform(KUBECTL, action, str(obj.get("kind", "")), key, rv=rv, detail={"spec": obj.get("spec")})

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        try:
            return self.api.get(kind, namespace, name)
        except NotFound:
            return None

    def delete(self, kind: str, namespace: str, name: str) -> None:
        answer = self.api.delete(kind, namespace, name)
        if self.tracer.enabled:
            meta = answer.get("metadata") or {}
            rv = str(meta.get("resourceVersion") or "") if answer.get("kind") == kind else ""
            self.tracer.platform(KUBECTL, "delete", kind, f"{namespace}/{name}", rv=rv or None, detail={})

    # -- faults and crashes ---------------------------------------------------------------------

    def restart_operator(self) -> None:
        """The operator process dies and starts again: all its in-memory state is lost.

        A new reconciler, controller, workqueue and informers (which list everything again)
        over the same API server and load balancer. The simulated cluster keeps running.
        """
        for informer in self._operator_informers():
            informer.stop()
        self.restarts += 1
        self._timeline.add("(operator restarted)")
        self._build_operator(events=self.backend.events)
        for informer in self.informers.values():
            informer.start()

    def resync(self) -> int:
        """What an informer resync does on a real cluster: every cached InferenceService is
        enqueued again, and each one's next pass checks its load balancer record once."""
        self.reconciler.begin_resync()
        keys = [obj_key(obj) for obj in self.informers[KIND].list()]
        for key in keys:
            self.controller.enqueue(key)
        return len(keys)

    # -- time -----------------------------------------------------------------------------------

    def _controllers(self) -> list[Controller]:
        """The cluster's controllers first (without the controller-manager's when it is down),
        then the operator's."""
        cluster = self.cluster.controllers
        if not self.deployment_controller:
            manager = (self.cluster.deployment_controller, self.cluster.replicaset_controller)
            cluster = [c for c in cluster if c not in manager]
        return [*cluster, self.controller]

    def step(self) -> bool:
        """Deliver pending watch events, then process one ready key (the cluster's first);
        False when no key is ready. Time does not move. The finest interleaving, one key at a
        time, for those who explore them; ``run_until_quiescent`` gives turns instead."""
        self.pump()
        return any(c.step() for c in self._controllers())

    def next_due(self) -> float | None:
        """When the earliest delayed key becomes ready (None: no delayed work)."""
        controllers = self._controllers()
        dues = [d for c in controllers if (d := c.queue.next_due()) is not None]
        return min(dues) if dues else None

    def pump(self) -> int:
        """Deliver pending watch events: the controller-manager's first, then the operator's."""
        cluster = self.cluster_deployments.pump() + self.cluster.pump()
        return cluster + sum(informer.pump() for informer in self._operator_informers())

    def _operator_informers(self) -> list[SharedInformer]:
        return [*self.informers.values(), *self.capacity_informers.values()]

    def run_until_quiescent(self, *, max_steps: int = 10_000_000, until: float | None = None) -> int:
        """Run until no work is left (advancing the fake clock over waits); returns reconciles run."""
        before = self.controller.reconcile_total
        run_until_quiescent(
            self._controllers(),
            clock=self.clock,
            pump=self.pump,
            max_steps=max_steps,
            until=until,
        )
        return self.controller.reconcile_total - before

    def stalled(self) -> dict[str, str]:
        """InferenceService keys the last run gave up on (they kept failing), with the last error."""
        return self.controller.stalled()

    @property
    def now(self) -> float:
        return self.clock.now()

    @property
    def reconcile_total(self) -> int:
        return self.controller.reconcile_total

    @property
    def timeline(self) -> list[TimelineEntry]:
        return self._timeline.entries

    def note(self, text: str) -> None:
        """Put something that happened outside the operator on the timeline, in parentheses."""
        self._timeline.add(f"({text})")
        if self.tracer.enabled:
            self.tracer.note(text)

    def clear_timeline(self) -> None:
        self._timeline.clear()

    @property
    def events(self) -> list[Event]:
        return self.backend.events
