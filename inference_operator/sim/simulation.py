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

from typing import Any

from ..clock import FakeClock
from ..constants import DEPLOYMENT, KIND, SERVICE
from ..controller import Controller, run_until_quiescent
from ..errors import NotFound
from ..jsoncopy import deep_copy
from ..lb.memory import InMemoryLoadBalancer
from ..model import changed_beyond_status, obj_key, owner_key
from ..reconciler import DEFAULT_REQUEUE_WHILE_PROGRESSING, Reconciler
from ..workqueue import RateLimitingQueue
from .apiserver import FakeApiServer
from .backend import Event, FakeBackend, RecordingLoadBalancer, Timeline, TimelineEntry
from .informer import SharedInformer
from .platform import SimulatedDeploymentController

Obj = dict[str, Any]
KINDS = (KIND, DEPLOYMENT, SERVICE)


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
    ) -> None:
        self.clock = FakeClock()
        self.api = FakeApiServer(self.clock)
        self.lb = InMemoryLoadBalancer()
        self._timeline = Timeline(self.clock)
        self.informers = {kind: SharedInformer(self.api, kind) for kind in KINDS}
        self.backend = FakeBackend(self.api, self.informers, self.clock, self._timeline)
        self.reconciler = Reconciler(
            self.backend,
            RecordingLoadBalancer(self.lb, self._timeline),
            self.clock,
            requeue_while_progressing=requeue_while_progressing,
        )
        self.controller = Controller(
            "inferenceservice", self.reconciler.reconcile, RateLimitingQueue(self.clock, name="inferenceservice")
        )
        self.platform = SimulatedDeploymentController(
            self.api,
            self.informers[DEPLOYMENT],
            self.clock,
            ready_after=ready_after,
            gpus_per_node=gpus_per_node,
            nodes=nodes,
        )
        self.backend.pods_source = self.platform.pods
        # False simulates a kube-controller-manager that is down: Deployments never get status.
        self.deployment_controller = deployment_controller
        self.platform_controller = Controller(
            "deployment-controller",
            self.platform.reconcile,
            RateLimitingQueue(self.clock, name="deployment-controller"),
        )
        self._wire()
        for informer in self.informers.values():
            informer.start()

    def _wire(self) -> None:
        def own(obj: Obj) -> None:
            self.controller.enqueue(obj_key(obj))

        def owner(obj: Obj) -> None:
            if (key := owner_key(obj)) is not None:
                self.controller.enqueue(key)

        def deployment(obj: Obj) -> None:
            self.platform_controller.enqueue(obj_key(obj))

        def own_changed(old: Obj, new: Obj) -> None:
            if changed_beyond_status(old, new):
                own(new)

        self.informers[KIND].add_event_handler(on_add=own, on_update=own_changed, on_delete=own)

        def owner_changed(old: Obj, new: Obj) -> None:
            owner(old)
            owner(new)

        for kind in (DEPLOYMENT, SERVICE):
            self.informers[kind].add_event_handler(on_add=owner, on_update=owner_changed, on_delete=owner)
        self.informers[DEPLOYMENT].add_event_handler(
            on_add=deployment, on_update=lambda _o, n: deployment(n), on_delete=deployment
        )

    # -- like kubectl ---------------------------------------------------------------------------

    def apply(self, manifest: Obj) -> Obj:
        """Create the object, or update it to the manifest's spec, labels and annotations."""
        meta = manifest.get("metadata") or {}
        kind, namespace, name = manifest["kind"], meta.get("namespace", "default"), meta["name"]
        try:
            live = self.api.get(kind, namespace, name)
        except NotFound:
            return self.api.create(deep_copy(manifest))
        updated = deep_copy(live)
        for field in ("labels", "annotations"):
            if field in meta:
                updated["metadata"].setdefault(field, {}).update(meta[field])
        if "spec" in manifest:
            updated["spec"] = deep_copy(manifest["spec"])
        updated["metadata"].pop("resourceVersion", None)
        return self.api.update(updated)

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        try:
            return self.api.get(kind, namespace, name)
        except NotFound:
            return None

    def delete(self, kind: str, namespace: str, name: str) -> None:
        self.api.delete(kind, namespace, name)

    # -- time -----------------------------------------------------------------------------------

    def pump(self) -> int:
        return sum(informer.pump() for informer in self.informers.values())

    def run_until_quiescent(self, *, max_steps: int = 10_000_000, until: float | None = None) -> int:
        """Run until no work is left (advancing the fake clock over waits); returns reconciles run."""
        before = self.controller.reconcile_total
        run_until_quiescent(
            [self.platform_controller, self.controller] if self.deployment_controller else [self.controller],
            clock=self.clock,
            pump=self.pump,
            max_steps=max_steps,
            until=until,
        )
        return self.controller.reconcile_total - before

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

    def clear_timeline(self) -> None:
        self._timeline.clear()

    @property
    def events(self) -> list[Event]:
        return self.backend.events
