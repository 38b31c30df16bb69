"""The ReplicaSet controller: keeps ``spec.replicas`` pods of each ReplicaSet, reports on them.

As in kube-controller-manager: missing pods are created from the template (the API server names
them), surplus ones are deleted in ``ActivePods`` order (:func:`.podstate.deletion_rank`), and
status counts the active pods (``replicas``), the ready ones, the ones ready for at least
``minReadySeconds`` (``availableReplicas``) and the ones still terminating. A pod being deleted
no longer counts, but it holds its node's resources until its kubelet removes it: that gap is
what the Deployment controller's arithmetic sees. Pods are found by controller owner reference,
through an index kept from the pod watch.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Final

from inference_operator.core.clock import format_timestamp
from inference_operator.core.errors import ApiError
from inference_operator.core.objects import Obj, key_of
from inference_operator.core.ports import Result
from inference_operator.sim.apiserver.managedfields import GC_FIELD_MANAGER as CONTROLLER_MANAGER
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.cluster import podstate
from inference_operator.sim.cluster.replicasets import build_pod, controller_of
from inference_operator.sim.informer import SharedInformer

__all__ = ["ReplicaSetController"]

_OMITTED_WHEN_ZERO: Final = ("fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration")


class ReplicaSetController:
    """Reconciles one ReplicaSet per key (``namespace/name``)."""

    def __init__(
        self, *, api: FakeApiServer, clock: FakeClock, replicasets: SharedInformer, pods: SharedInformer
    ) -> None:
        self.api = api
        self.clock = clock
        self.replicasets = replicasets
        self.pods = pods
        self._owned: defaultdict[str, set[str]] = defaultdict(set)  # ReplicaSet uid → pod names

    def observe_pod(self, old: Obj | None, new: Obj | None) -> str | None:
        """Keep the owner index up to date; the key of the ReplicaSet to look at again, if any."""
        for pod, present in ((old, False), (new, True)):
            ref = controller_of(pod) if pod is not None else None
            if pod is None or ref is None or ref.get("kind") != "ReplicaSet":
                continue
            names = self._owned[str(ref["uid"])]
            if present:
                names.add(pod["metadata"]["name"])
            elif new is None or controller_of(new) != ref:
                names.discard(pod["metadata"]["name"])
        pod = new if new is not None else old
        ref = controller_of(pod) if pod is not None else None
        if pod is None or ref is None or ref.get("kind") != "ReplicaSet":
            return None
        return key_of(pod["metadata"]["namespace"], str(ref["name"]))

    def owned_pods(self, rs: Obj) -> list[Obj]:
        namespace = rs["metadata"]["namespace"]
        pods = [self.pods.get(namespace, name) for name in sorted(self._owned.get(rs["metadata"]["uid"], ()))]
        return [p for p in pods if p is not None]

    def reconcile(self, namespace: str, name: str) -> Result:
        rs = self.replicasets.get(namespace, name)
        if rs is None or "deletionTimestamp" in rs["metadata"]:
            return Result()
        pods = self.owned_pods(rs)
        active = [p for p in pods if podstate.is_active(p)]
        wanted = int(rs["spec"].get("replicas", 1))
        failure = ""
        if len(active) < wanted:
            for _ in range(wanted - len(active)):
                try:
                    self.api.create(build_pod(rs), field_manager=CONTROLLER_MANAGER, answer=False)
                except ApiError as err:
                    failure = str(err)
                    break
        elif len(active) > wanted:
            for pod in sorted(active, key=podstate.deletion_rank)[: len(active) - wanted]:
                self.api.delete("Pod", namespace, pod["metadata"]["name"])
            active = sorted(active, key=podstate.deletion_rank)[len(active) - wanted :]
        return self._write_status(rs, active, pods, failure=failure)

    def _write_status(self, rs: Obj, active: list[Obj], pods: list[Obj], *, failure: str) -> Result:
        now = self.clock.wall().timestamp()
        min_ready = int(rs["spec"].get("minReadySeconds") or 0)
        ready = [p for p in active if podstate.is_ready(p)]
        since = [s for p in ready if (s := podstate.ready_since(p)) is not None]
        available = sum(1 for s in since if s + min_ready <= now)
        old = rs.get("status") or {}
        status: Obj = {
            "replicas": len(active),
            "fullyLabeledReplicas": len(active),
            "readyReplicas": len(ready),
            "availableReplicas": available,
            "terminatingReplicas": sum(1 for p in pods if podstate.is_terminating(p) and not podstate.is_terminal(p)),
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        for field in _OMITTED_WHEN_ZERO:  # Go's omitempty: a real ReplicaSet has no "readyReplicas: 0"
            if not status[field]:
                del status[field]
        conditions = [c for c in old.get("conditions") or () if c.get("type") != "ReplicaFailure"]
        if failure:
            stamp = format_timestamp(self.clock.wall())
            kept = next((c for c in old.get("conditions") or () if c.get("type") == "ReplicaFailure"), None)
            conditions.append(
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "lastTransitionTime": kept.get("lastTransitionTime", stamp) if kept else stamp,
                    "reason": "FailedCreate",
                    "message": failure,
                }
            )
        if conditions:
            status["conditions"] = conditions
        if status != old:
            self.api.update_status({**rs, "status": status}, field_manager=CONTROLLER_MANAGER, answer=False)
        waiting = [s + min_ready - now for s in since if s + min_ready > now]
        return Result(requeue_after=min(waiting)) if waiting else Result()
