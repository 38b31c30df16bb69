"""The simulated cluster assembled: Nodes from a layout, the controllers, their watches.

What kube-controller-manager, kube-scheduler and the kubelets are to a real cluster, in one
object the :class:`~inference_operator.sim.simulation.Simulation` drives: six controllers on
the shared fake clock, each with its own workqueue, fed by watches of Nodes, Pods, ReplicaSets
and (given) Deployments — the Deployment controller, the ReplicaSet controller, the pod garbage
collector (a deleted node's pods), the scheduler and the kubelets, in that order (each round,
each takes its turn in it), and the taint eviction controller (NoExecute taints) after them. Pods,
ReplicaSets and the scheduler's words are stored objects, so the operator reads them as it
would on a cluster. It also keeps the test hook :meth:`crash_pods` (pods that crash-loop), and
tells its ``tracer`` each change of a Node's or Pod's capacity facts (:mod:`.capacity`) and each
Deployment status its Deployment controller writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inference_operator.control.controller import Controller
from inference_operator.control.workqueue import RateLimitingQueue
from inference_operator.core.clock import format_timestamp
from inference_operator.core.objects import Obj, changed_beyond_status, key_of, obj_key
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.cluster import podstate
from inference_operator.sim.cluster.capacity import CapacityTrace
from inference_operator.sim.cluster.deploycontroller import DeploymentController
from inference_operator.sim.cluster.kubelet import Kubelet
from inference_operator.sim.cluster.nodes import DEFAULT_LAYOUT, NodeShape, build_node
from inference_operator.sim.cluster.podgc import QUARANTINE_SECONDS, PodGarbageCollector
from inference_operator.sim.cluster.replicasets import controller_of
from inference_operator.sim.cluster.rscontroller import ReplicaSetController
from inference_operator.sim.cluster.scheduler import Scheduler
from inference_operator.sim.cluster.sweep import node_key
from inference_operator.sim.cluster.tainteviction import TaintEviction, no_execute_taints
from inference_operator.sim.informer import SharedInformer
from inference_operator.trace.recorder import NULL_TRACER, Tracer

__all__ = ["SimulatedCluster"]


class SimulatedCluster:
    """Nodes, a scheduler, ReplicaSet and Deployment controllers and kubelets over ``api``."""

    def __init__(
        self,
        *,
        api: FakeApiServer,
        clock: FakeClock,
        deployments: SharedInformer,
        layout: Sequence[NodeShape] = DEFAULT_LAYOUT,
        ready_after: float = 5.0,
        stop_seconds: float | None = None,
    ) -> None:
        self.api = api
        self.clock = clock
        self._tracer: Tracer = NULL_TRACER
        self._capacity = CapacityTrace()
        self._crashing: dict[str, int] = {}  # namespace/deployment → pods that crash-loop
        for shape in layout:
            api.create(build_node(shape, now=format_timestamp(clock.wall())), field_manager="kubelet")
        self.nodes = SharedInformer(api, "Node")
        self.pod_cache = SharedInformer(api, "Pod")
        self.replicasets = SharedInformer(api, "ReplicaSet")
        self.deployments = deployments

        def controller(name: str, reconcile: Any) -> Controller:
            return Controller(name, reconcile, RateLimitingQueue(clock, name=name))

        self.replicaset_logic = ReplicaSetController(
            api=api, clock=clock, replicasets=self.replicasets, pods=self.pod_cache
        )
        self.deployment_logic = DeploymentController(
            api=api,
            clock=clock,
            deployments=deployments,
            replicasets=self.replicasets,
            pods_of=self.replicaset_logic.owned_pods,
            withdraw=lambda key: self.deployment_controller.queue.cancel_after(key),
        )
        self.deployment_controller = controller("deployment-controller", self.deployment_logic.reconcile)
        self.replicaset_controller = controller("replicaset-controller", self.replicaset_logic.reconcile)
        self.pod_gc = PodGarbageCollector(api=api, clock=clock, nodes=self.nodes, pods=self.pod_cache)
        self.pod_gc_controller = controller("pod-garbage-collector", self.pod_gc.reconcile)
        self.taint_eviction = TaintEviction(api=api, clock=clock, nodes=self.nodes, pods=self.pod_cache)
        self.taint_eviction_controller = controller("taint-eviction-controller", self.taint_eviction.reconcile)
        self.scheduler = Scheduler(
            api=api,
            clock=clock,
            nodes=self.nodes,
            pods=self.pod_cache,
            retry=lambda key: self.scheduler_controller.enqueue(key),
        )
        self.scheduler_controller = controller("scheduler", self.scheduler.reconcile)
        self.kubelet = Kubelet(
            api=api,
            clock=clock,
            pods=self.pod_cache,
            start_seconds=ready_after,
            stop_seconds=stop_seconds,
            crashing=self._crashes,
        )
        self.kubelet_controller = controller("kubelet", self.kubelet.reconcile)
        self._wire()
        for informer in (self.nodes, self.pod_cache, self.replicasets):
            informer.start()

    @property
    def tracer(self) -> Tracer:
        """Told each change of a Node's or Pod's capacity facts (:mod:`.capacity`), and each
        Deployment status the Deployment controller writes (:mod:`.tracing`)."""
        return self._tracer

    @tracer.setter
    def tracer(self, tracer: Tracer) -> None:
        """A tracer set after the nodes registered is first told the nodes and pods as they are."""
        self._tracer = tracer
        self.deployment_logic.tracer = tracer
        self._capacity = CapacityTrace()
        if tracer.enabled:
            for node in self.nodes.list():
                self._capacity.node(tracer, None, node)
            for pod in self.pod_cache.list():
                self._capacity.pod(tracer, None, pod)

    @property
    def controllers(self) -> list[Controller]:
        return [
            self.deployment_controller,
            self.replicaset_controller,
            self.pod_gc_controller,
            self.scheduler_controller,
            self.kubelet_controller,
            self.taint_eviction_controller,
        ]

    def _wire(self) -> None:
        def pod_event(old: Obj | None, new: Obj | None) -> None:
            if self.tracer.enabled:
                self._capacity.pod(self.tracer, old, new)
            rs_key = self.replicaset_logic.observe_pod(old, new)
            if rs_key is not None:
                self.replicaset_controller.enqueue(rs_key)
            self.scheduler.observe_pod(old, new)
            pod = new if new is not None else old
            if pod is None:
                return
            if new is None:
                self.kubelet.forget(pod["metadata"]["uid"])
            elif podstate.node_of(new) and (old is None or _kubelet_reacts(old, new)):
                self.kubelet_controller.enqueue(obj_key(new))
                self._check_taints(podstate.node_of(new))
            if new is None and rs_key is not None:  # Recreate waits for the last old pod to go
                deployment = self._deployment_of_replicaset(rs_key)
                if deployment is not None:
                    self.deployment_controller.enqueue(deployment)

        self.pod_cache.add_event_handler(
            on_add=lambda new: pod_event(None, new),
            on_update=pod_event,
            on_delete=lambda old: pod_event(old, None),
        )

        def replicaset_event(old: Obj | None, new: Obj | None) -> None:
            for key in self.deployment_logic.claims.observe(old, new):
                self.deployment_controller.enqueue(key)
            if new is not None:
                self.replicaset_controller.enqueue(obj_key(new))

        self.replicasets.add_event_handler(
            on_add=lambda new: replicaset_event(None, new),
            on_update=replicaset_event,
            on_delete=lambda old: replicaset_event(old, None),
        )

        def node_event(old: Obj | None, new: Obj | None) -> None:
            if self.tracer.enabled:
                self._capacity.node(self.tracer, old, new)
            self.scheduler.retry_pending()
            if new is not None:
                self._check_taints(str(new["metadata"]["name"]))
            elif old is not None:
                self.pod_gc_controller.queue.add_after(node_key(str(old["metadata"]["name"])), QUARANTINE_SECONDS)

        self.nodes.add_event_handler(
            on_add=lambda new: node_event(None, new),
            on_update=node_event,
            on_delete=lambda old: node_event(old, None),
        )

    def _check_taints(self, node_name: str) -> None:
        node = self.nodes.get("", node_name)
        if node is not None and no_execute_taints(node):
            self.taint_eviction_controller.enqueue(node_key(node_name))

    def _deployment_of_replicaset(self, rs_key: str) -> str | None:
        namespace, _, name = rs_key.partition("/")
        rs = self.replicasets.get(namespace, name)
        ref = controller_of(rs) if rs is not None else None
        return key_of(namespace, str(ref["name"])) if ref is not None and ref.get("kind") == "Deployment" else None

    # --- driving ------------------------------------------------------------------------------

    def pump(self) -> int:
        return self.nodes.pump() + self.replicasets.pump() + self.pod_cache.pump()

    def pending(self) -> int:
        return self.nodes.pending() + self.replicasets.pending() + self.pod_cache.pending()

    # --- what the operator and tests see ------------------------------------------------------

    def pods_of_deployment(self, namespace: str, name: str) -> list[Obj]:
        """The live pods of Deployment ``namespace/name`` (terminating ones included), by name."""
        found: list[Obj] = []
        for pod in self.pod_cache.list(namespace):
            ref = controller_of(pod)
            if ref is not None and self._deployment_of_replicaset(key_of(namespace, str(ref["name"]))) == key_of(
                namespace, name
            ):
                found.append(pod)
        return sorted(found, key=lambda p: str(p["metadata"]["name"]))

    def pods(self, namespace: str, selector: str) -> list[Obj]:
        """A LIST of the stored pods matching ``selector`` (``key=value,…``): the backend's pod source."""
        return self.api.list("Pod", namespace, label_selector=selector)

    def crash_pods(self, namespace: str, name: str, count: int) -> None:
        """Make ``count`` pods of Deployment ``namespace/name`` crash-loop until called with 0
        (the first ones by name; it lasts across rollouts, until the Deployment goes)."""
        if count < 0:
            raise ValueError(f"crash_pods count must be at least 0, got {count!r}")
        key = key_of(namespace, name)
        if count:
            self._crashing[key] = count
        else:
            self._crashing.pop(key, None)
        for pod in self.pods_of_deployment(namespace, name):
            self.kubelet_controller.enqueue(obj_key(pod))

    def _crashes(self, pod: Obj) -> bool:
        ref = controller_of(pod)
        if ref is None:
            return False
        namespace = pod["metadata"]["namespace"]
        deployment = self._deployment_of_replicaset(key_of(namespace, str(ref["name"])))
        count = self._crashing.get(deployment or "", 0)
        if not count or deployment is None:
            return False
        _, _, name = deployment.partition("/")
        live = [p for p in self.pods_of_deployment(namespace, name) if podstate.is_active(p)]
        return pod["metadata"]["name"] in {p["metadata"]["name"] for p in live[:count]}


def _kubelet_reacts(old: Obj, new: Obj) -> bool:
    """Whether a pod's update is one a kubelet acts on: its spec or metadata changed (bound,
    deleted, relabelled; :func:`changed_beyond_status` for the metadata). A change of status
    alone (the kubelet's own report, most often) is not: kubelet's pod config hands those to its
    status manager, not to the pod's worker. Not modelled: that status manager writing the
    kubelet's status back over someone else's within about 10 s; here it waits for the
    kubelet's next pass on the pod."""
    return old.get("spec") != new.get("spec") or changed_beyond_status(old, new)
