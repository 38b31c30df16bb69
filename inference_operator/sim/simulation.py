"""The simulator facade: a whole control plane plus the operator, in one process, on a fake clock.

    sim = Simulation(ready_after=5.0)
    sim.apply(make_inference_service("llama", image="vllm:0.6.3", model="Llama-3", replicas=2))
    sim.run_until_quiescent()
    sim.get("InferenceService", "default", "llama")["status"]["phase"]   # "Ready"

Wiring, as on a real cluster: the FakeApiServer's watch feeds shared informers; InferenceService
events enqueue their own key, Deployment and Service events enqueue their owner's key; the
operator's controller and the simulated Deployment controller each drain their own workqueue.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, cast

from inference_operator.api.constants import DEPLOYMENT, KIND, OWNER_LABEL, SERVICE
from inference_operator.api.crd import crd
from inference_operator.control.controller import Controller, ReconcileFunc
from inference_operator.control.workqueue import RateLimitingQueue
from inference_operator.core.errors import NotFound
from inference_operator.core.jsoncopy import deep_copy
from inference_operator.core.objects import changed_beyond_status, key_of, obj_key, owner_key
from inference_operator.core.ports import LoadBalancerProvider, Result
from inference_operator.lb.memory import InMemoryLoadBalancer
from inference_operator.reconcile.reconciler import DEFAULT_REQUEUE_WHILE_PROGRESSING, Reconciler
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.backend import Event, FakeBackend, RecordingLoadBalancer, Timeline, TimelineEntry
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.cluster.cluster import SimulatedCluster
from inference_operator.sim.cluster.nodes import NodeShape, default_layout
from inference_operator.sim.informer import SharedInformer
from inference_operator.sim.platform import SimulatedDeploymentController
from inference_operator.sim.quiescence import run_until_quiescent
from inference_operator.trace.recorder import NULL_TRACER, Tracer
from inference_operator.trace.wrappers import TracingBackend, TracingLoadBalancer

Obj = dict[str, Any]
KINDS = (KIND, DEPLOYMENT, SERVICE)
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
        cluster: bool = False,
        node_layout: Sequence[NodeShape] | None = None,
        termination_seconds: float | None = None,
    ) -> None:
        """``tracer`` makes the flight recorder, given the simulation's clock (default: none).

        ``cluster`` (or a ``node_layout``) runs the simulated cluster of :mod:`.cluster` instead
        of the timer-based Deployment controller: Nodes (``node_layout``, default ``nodes``
        nodes of ``gpus_per_node`` GPUs), a scheduler, ReplicaSets and Pods as stored objects,
        kubelets that make pods ready ``ready_after`` seconds after binding and stop deleted
        ones after ``termination_seconds`` (None: their whole grace period).
        """
        self.clock = FakeClock()
        self.tracer: Tracer = tracer(self.clock) if tracer is not None else NULL_TRACER
        self.api = FakeApiServer(self.clock)
        # As on a real cluster, the CRD is installed before anything else: its schema's defaults,
        # pruning, validation and CEL rules apply to every InferenceService written from now on.
        self.api.create(_project_crd())
        self.api.reset_counters()
        self.lb = InMemoryLoadBalancer()
        self._timeline = Timeline(self.clock)
        self._requeue_while_progressing = requeue_while_progressing
        # What the operator writes through and registers with: the API server and the balancer
        # themselves, unless wrappers were put in between (``interpose``, for fault injection).
        self._operator_api: Any = self.api
        self._operator_lb: LoadBalancerProvider = self.lb
        self.restarts = 0
        self.reconciles_by_key: Counter[str] = Counter()
        """Reconcile passes per key, over every operator incarnation."""
        self.last_outcome: dict[str, Result | Exception] = {}
        """The result of each key's latest pass, or the exception it raised."""
        self._build_operator()
        # The controller-manager's own watch of every Deployment, not the operator's
        # label-selected one: it outlives operator restarts and sees foreign Deployments too.
        self.cluster_deployments = SharedInformer(self.api, DEPLOYMENT)
        self.cluster: SimulatedCluster | None = None
        self.platform: SimulatedDeploymentController | SimulatedCluster
        if cluster or node_layout is not None:
            self.cluster = SimulatedCluster(
                api=self.api,
                clock=self.clock,
                deployments=self.cluster_deployments,
                layout=default_layout(nodes=nodes, gpus_per_node=gpus_per_node) if node_layout is None else node_layout,
                ready_after=ready_after,
                stop_seconds=termination_seconds,
            )
            self.api.reset_counters()
            self.platform = self.cluster
        else:
            self.platform = SimulatedDeploymentController(
                self.api,
                self.cluster_deployments,
                self.clock,
                ready_after=ready_after,
                gpus_per_node=gpus_per_node,
                nodes=nodes,
            )
        self.platform.tracer = self.tracer
        if self.tracer.enabled:
            self.api.on_collected = self._collected
        self.backend.pods_source = self.platform.pods
        # False simulates a kube-controller-manager that is down: Deployments never get status.
        self.deployment_controller = deployment_controller
        if self.cluster is not None:
            self.platform_controller = self.cluster.deployment_controller
        else:
            self.platform_controller = Controller(
                "deployment-controller",
                cast(SimulatedDeploymentController, self.platform).reconcile,
                RateLimitingQueue(self.clock, name="deployment-controller"),
            )
        self._wire()
        self.cluster_deployments.add_event_handler(
            on_add=self._deployment_changed,
            on_update=lambda _old, new: self._deployment_changed(new),
            on_delete=self._deployment_changed,
        )
        self.cluster_deployments.start()
        for informer in self.informers.values():
            informer.start()

    def _deployment_changed(self, obj: Obj) -> None:
        self.platform_controller.enqueue(obj_key(obj))

    def _build_operator(self, events: list[Event] | None = None) -> None:
        """A fresh operator process: informers, backend, reconciler, controller and its queue."""
        # As on a real cluster, the operator watches its children by the owner label only.
        self.informers = {
            KIND: SharedInformer(self.api, KIND),
            DEPLOYMENT: SharedInformer(self.api, DEPLOYMENT, label=OWNER_LABEL),
            SERVICE: SharedInformer(self.api, SERVICE, label=OWNER_LABEL),
        }
        self.backend = FakeBackend(cast(FakeApiServer, self._operator_api), self.informers, self.clock, self._timeline)
        if events is not None:
            self.backend.events = events  # Events are API objects: they outlive the process
        self.reconciler = Reconciler(
            self.backend,
            RecordingLoadBalancer(self._operator_lb, self._timeline),
            self.clock,
            requeue_while_progressing=self._requeue_while_progressing,
            tracer=self.tracer,
        )
        if self.tracer.enabled:
            self.reconciler.backend = TracingBackend(self.backend, self.tracer)
            self.reconciler.lb = TracingLoadBalancer(self.reconciler.lb, self.tracer)
        self.controller = Controller(
            "inferenceservice",
            self._recorded(self.reconciler.reconcile),
            RateLimitingQueue(self.clock, name="inferenceservice"),
            tracer=self.tracer,
        )

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

    def _wire(self) -> None:
        tracer = self.tracer

        def own(obj: Obj, event: str = "ADDED") -> None:
            key = obj_key(obj)
            if tracer.enabled:
                tracer.event(KIND, event, obj, enqueued=key)
            self.controller.enqueue(key)

        def own_changed(old: Obj, new: Obj) -> None:
            if changed_beyond_status(old, new):
                own(new, "MODIFIED")
            elif tracer.enabled:
                tracer.event(KIND, "MODIFIED", new, enqueued=None)

        self.informers[KIND].add_event_handler(
            on_add=own, on_update=own_changed, on_delete=lambda obj: own(obj, "DELETED")
        )

        for kind in (DEPLOYMENT, SERVICE):

            def owner(obj: Obj, event: str = "ADDED", kind: str = kind) -> None:
                key = owner_key(obj)
                if tracer.enabled:
                    tracer.event(kind, event, obj, enqueued=key)
                if key is not None:
                    self.controller.enqueue(key)

            def owner_changed(old: Obj, new: Obj, owner: Callable[..., None] = owner) -> None:
                if (old_key := owner_key(old)) is not None and old_key != owner_key(new):
                    self.controller.enqueue(old_key)
                owner(new, "MODIFIED")

            def owner_gone(obj: Obj, owner: Callable[..., None] = owner) -> None:
                owner(obj, "DELETED")

            self.informers[kind].add_event_handler(on_add=owner, on_update=owner_changed, on_delete=owner_gone)

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

    def interpose(self, *, api: Any = None, load_balancer: LoadBalancerProvider | None = None) -> None:
        """Put wrappers between the operator and the world (see :mod:`.faults`).

        ``api`` receives the operator's writes instead of the FakeApiServer (it must delegate to
        it; reads still come from the informers), ``load_balancer`` its load balancer calls
        instead of ``self.lb``. Nothing else goes through them: users, the Deployment controller
        and the garbage collector talk to the server directly. They stay across
        :meth:`restart_operator`.
        """
        if api is not None:
            self._operator_api = api
            self.backend.api = api
        if load_balancer is not None:
            self._operator_lb = load_balancer
            self.reconciler.lb = RecordingLoadBalancer(load_balancer, self._timeline)
            if self.tracer.enabled:
                self.reconciler.lb = TracingLoadBalancer(self.reconciler.lb, self.tracer)

    def restart_operator(self) -> None:
        """The operator process dies and starts again: all its in-memory state is lost.

        A new reconciler, controller, workqueue and informers (which list everything again)
        over the same API server and load balancer. The simulated cluster keeps running.
        """
        for informer in self.informers.values():
            informer.stop()
        self.restarts += 1
        self._timeline.add("(operator restarted)")
        self._build_operator(events=self.backend.events)
        self.backend.pods_source = self.platform.pods
        self._wire()
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
        if self.cluster is None:
            cluster = [self.platform_controller] if self.deployment_controller else []
        else:
            cluster = self.cluster.controllers
            if not self.deployment_controller:
                cluster = [c for c in cluster if c.name not in ("deployment-controller", "replicaset-controller")]
        return [*cluster, self.controller]

    def step(self) -> bool:
        """Deliver pending watch events, then process one ready key (the cluster's first);
        False when no key is ready. Time does not move."""
        self.pump()
        return any(c.step() for c in self._controllers())

    def next_due(self) -> float | None:
        """When the earliest delayed key becomes ready (None: no delayed work)."""
        controllers = self._controllers()
        dues = [d for c in controllers if (d := c.queue.next_due()) is not None]
        return min(dues) if dues else None

    def idle(self) -> bool:
        """No key is queued, delayed or being processed, and no watch event is pending."""
        queues = [self.controller.queue, self.platform_controller.queue]
        queues += [c.queue for c in self.cluster.controllers] if self.cluster is not None else []
        cluster_pending = self.cluster.pending() if self.cluster is not None else 0
        return (
            all(len(q) == 0 and q.waiting_len() == 0 and q.processing_len() == 0 for q in queues)
            and not cluster_pending
            and not any(informer.pending() for informer in (self.cluster_deployments, *self.informers.values()))
        )

    def pump(self) -> int:
        """Deliver pending watch events: the controller-manager's first, then the operator's."""
        cluster = self.cluster_deployments.pump() + (self.cluster.pump() if self.cluster is not None else 0)
        return cluster + sum(informer.pump() for informer in self.informers.values())

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
