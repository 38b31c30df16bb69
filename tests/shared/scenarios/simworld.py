"""The scenario world on the simulator: a Simulation on a fake clock, run until quiescent.

A user's kubectl is ``Simulation.apply`` and the FakeApiServer's own calls (with kubectl's field
manager); the operator's transitions are read from a watch on the FakeApiServer opened before
the first action; load balancer calls from the in-memory balancer's call lists. Two things a
real cluster has and the simulator models only through its seams:

- a ResourceQuota: the simulator has no quota admission, so :class:`QuotaGate` stands between
  the operator and the FakeApiServer (an ``Interposer`` given to the ``Simulation``) and refuses creating a Service in
  a namespace whose quota allows none, worded as kube-apiserver words it;
- time: ``settle`` does what is ready now, looks, and until the step's condition holds lets
  simulated time pass to the next delayed key or resync; resyncs come every 4 s of simulated
  time, as the e2e operator's do, and a step gives up after 90 s, the cluster world's deadline.
  So a step ends as soon as its condition holds (a stall is seen before the retries give up, an
  intermediate state before the next one), as it does for a user polling a real cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from inference_operator.api.constants import DEPLOYMENT, KIND, SERVICE
from inference_operator.core.clock import format_timestamp
from inference_operator.core.errors import ApiError, Forbidden, NotFound
from inference_operator.sim import Simulation
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.cluster.nodes import NodeShape, build_node
from inference_operator.sim.wiring import Interposer

from .observe import Snapshot, StepRecorder, transition_token
from .scheduling import ReplicaSetSequence, placement, pool_node
from .world import Refusal, refusal_of

Obj = dict[str, Any]
NAMESPACE = "default"
USER = "kubectl"
RESYNC_SECONDS = 4.0  # the e2e operator's --resync-period
PATIENCE = 90.0  # seconds of simulated time a step may take: the cluster world's deadline


class QuotaGate:
    """The operator's view of the FakeApiServer, with ResourceQuotas that allow no Service.

    Creating a Service (a create, or an apply of one that does not exist) in a namespace of
    ``forbidden`` is refused with the 403 kube-apiserver's quota admission answers; everything
    else is the server's own.
    """

    def __init__(self, api: FakeApiServer) -> None:
        self.api = api
        self.forbidden: dict[str, str] = {}
        """namespace -> the quota's name"""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.api, name)

    def create(self, obj: Obj, **kwargs: Any) -> Obj:
        self._admit(obj)
        created: Obj = self.api.create(obj, **kwargs)
        return created

    def apply(self, obj: Obj, **kwargs: Any) -> Obj:
        self._admit(obj)
        applied: Obj = self.api.apply(obj, **kwargs)
        return applied

    def _admit(self, obj: Obj) -> None:
        meta = obj["metadata"]
        namespace, name = meta.get("namespace", NAMESPACE), meta["name"]
        quota = self.forbidden.get(namespace)
        if obj["kind"] != SERVICE or quota is None:
            return
        try:
            self.api.get(SERVICE, namespace, name)
        except NotFound:
            raise Forbidden(
                f'services "{name}" is forbidden: exceeded quota: {quota}, requested: services=1, '
                "used: services=0, limited: services=0",
                kind=SERVICE,
                namespace=namespace,
                name=name,
            ) from None


class SimWorld(StepRecorder):
    """:class:`~.world.World` on a fresh :class:`Simulation`.

    With a ``layout`` the simulated cluster has those nodes (the GPU pool scenarios: the layout
    mirrors the real cluster's other nodes, a pool joins them) and its kubelets stop a deleted
    pod at once, as kwok's do; without, ``nodes`` nodes of ``gpus_per_node`` GPUs.
    """

    backend = "simulator"

    def __init__(self, *, nodes: int = 2, gpus_per_node: int = 8, layout: Sequence[NodeShape] | None = None) -> None:
        super().__init__()
        self.gate: QuotaGate
        gated = Interposer(api=self._gated)
        if layout is None:
            self.sim = Simulation(ready_after=5.0, nodes=nodes, gpus_per_node=gpus_per_node, interpose=gated)
        else:
            self.sim = Simulation(ready_after=5.0, node_layout=layout, termination_seconds=0.0, interpose=gated)
        self._watch = self.sim.api.watch(KIND, NAMESPACE)
        self._rs_watch = self.sim.api.watch("ReplicaSet", NAMESPACE)
        self._replicasets: ReplicaSetSequence | None = None  # once a pool joined
        self._pool: dict[str, str] = {}
        self._lb_seen: dict[str, dict[str, int]] = {}
        self._events_seen: dict[int, int] = {}
        self._last_resync = self.sim.now

    def _gated(self, sim: Simulation) -> QuotaGate:
        """The operator's writes pass the quota gate first, as they would a ResourceQuota."""
        self.gate = QuotaGate(sim.api)
        return self.gate

    # -- a user's actions ---------------------------------------------------------------------

    def apply(self, manifest: Obj) -> Refusal | None:
        try:
            self.sim.apply(_in_namespace(manifest))
        except ApiError as err:
            return refusal_of(err.code, err.message)
        return None

    def create(self, manifest: Obj) -> None:
        self.sim.api.create(_in_namespace(manifest), field_manager=USER)

    def delete(self, kind: str, name: str) -> None:
        self.sim.delete(kind, NAMESPACE, name)

    def patch(self, kind: str, name: str, patch: Obj) -> None:
        self.sim.api.patch(kind, NAMESPACE, name, patch, field_manager="kubectl-patch")

    def scale_deployment(self, name: str, replicas: int) -> None:
        self.sim.api.patch(DEPLOYMENT, NAMESPACE, name, {"spec": {"replicas": replicas}}, field_manager=USER)

    def pause_rollout(self, name: str) -> None:
        self._rollout_paused(name, True)
        self._run_until(name, lambda s: s.settled_ready, what="Ready again once the pause was observed")
        self._watch.drain()  # not compared: see World.pause_rollout
        self._events(name)

    def resume_rollout(self, name: str) -> None:
        self._rollout_paused(name, False)

    def _rollout_paused(self, name: str, paused: bool) -> None:
        patch = {"spec": {"paused": paused}}
        self.sim.api.patch(DEPLOYMENT, NAMESPACE, name, patch, field_manager="kubectl-rollout")

    def forbid_services(self, quota: str) -> None:
        self.gate.forbidden[NAMESPACE] = quota

    def allow_services(self, quota: str) -> None:
        self.gate.forbidden.pop(NAMESPACE, None)

    def gpu_pool(self, shapes: Sequence[NodeShape]) -> Obj:
        for shape in shapes:
            node = build_node(
                pool_node(shape, pool=NAMESPACE, name=shape.name), now=format_timestamp(self.sim.clock.wall())
            )
            self.sim.api.create(node, field_manager="kubelet")
            self._pool[shape.name] = shape.name
        self.sim.run_until_quiescent(until=self.sim.now)
        self._replicasets = ReplicaSetSequence()
        return placement(NAMESPACE)

    def remove_node(self, name: str) -> None:
        self.sim.api.delete("Node", "", name)

    def forget_lb_record(self, name: str) -> None:
        self.sim.lb.registrations.pop(f"{NAMESPACE}/{name}", None)

    def fail_lb_calls(self, *, registers: int = 0, releases: int = 0) -> None:
        self.sim.lb.fail_next_registers(registers)
        self.sim.lb.fail_next_releases(releases)

    # -- looking ----------------------------------------------------------------------------

    def snapshot(self, name: str) -> Snapshot:
        return Snapshot(
            isvc=self.sim.get(KIND, NAMESPACE, name),
            deployment=self.sim.get(DEPLOYMENT, NAMESPACE, name),
            service=self.sim.get(SERVICE, NAMESPACE, name),
            registered=f"{NAMESPACE}/{name}" in self.sim.lb.registrations,
            **self._scheduling(),
        )

    def _scheduling(self) -> Obj:
        if self._replicasets is None:
            return {}
        return {
            "replicasets": tuple(self.sim.api.list("ReplicaSet", NAMESPACE)),
            "pods": tuple(self.sim.api.list("Pod", NAMESPACE)),
            "node_names": dict(self._pool),
        }

    def settle(self, step: str, name: str, until: Callable[[Snapshot], bool], *, what: str) -> Snapshot:
        snapshot = self._run_until(name, until, what=what)
        tokens = [
            transition_token(event.object, deleted=event.type == "DELETED")
            for event in self._watch.drain()
            if event.object["metadata"]["name"] == name
        ]
        replicasets = [(e.type, e.object) for e in self._rs_watch.drain()]
        rs_tokens = None if self._replicasets is None else self._replicasets.take(replicasets)
        self._record(step=step, name=name, snapshot=snapshot, tokens=tokens, replicasets=rs_tokens)
        return snapshot

    def _run_until(self, name: str, until: Callable[[Snapshot], bool], *, what: str) -> Snapshot:
        """Look after all work ready now is done; until ``until`` holds, let time pass to the next
        delayed key or resync (at most ``PATIENCE`` seconds), as a user polling a cluster would."""
        deadline = self.sim.now + PATIENCE
        while True:
            self.sim.run_until_quiescent(until=self.sim.now)
            snapshot = self.snapshot(name)
            if until(snapshot):
                return snapshot
            if self.sim.now >= deadline:
                raise AssertionError(f"not {what} after {PATIENCE:.0f}s of simulated time; Ready is {snapshot.ready}")
            next_resync = self._last_resync + RESYNC_SECONDS
            target = min(t for t in (self.sim.next_due(), next_resync, deadline) if t is not None)
            self.sim.run_until_quiescent(until=target)
            if self.sim.now < target:
                self.sim.clock.set(target)
            if self.sim.now >= next_resync:
                self.sim.resync()
                self._last_resync = self.sim.now

    def _lb_calls(self, name: str) -> dict[str, int]:
        key = f"{NAMESPACE}/{name}"
        totals = {"register": self.sim.lb.register_calls.count(key), "release": self.sim.lb.release_calls.count(key)}
        seen = self._lb_seen.get(name, {})
        self._lb_seen[name] = totals
        return {call: totals[call] - seen.get(call, 0) for call in totals}

    def _events(self, name: str) -> list[str]:
        """``type/reason`` of the object's Events posted or repeated since the last step."""
        out = []
        for index, event in enumerate(self.sim.events):
            if event.name == name and self._events_seen.get(index) != event.count:
                out.append(f"{event.type}/{event.reason}")
                self._events_seen[index] = event.count
        return out


def _in_namespace(manifest: Obj) -> Obj:
    return {**manifest, "metadata": {**manifest["metadata"], "namespace": NAMESPACE}}
