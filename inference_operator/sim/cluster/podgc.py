"""The pod garbage collector's orphan sweep: pods bound to a deleted Node are failed and removed.

A kubelet that is gone cannot stop its pods, so on a real cluster nothing would ever free a
deleted node's pods, and their ReplicaSets would count them as running forever. kube-controller-
manager's PodGC (``pkg/controller/podgc``, 1.36) closes that gap: a pod whose ``spec.nodeName``
names no Node is an orphan once the node has stayed absent for ``quarantineTime`` (40 s, so a
node that re-registers at once keeps its pods); the collector then marks it ``Failed`` with the
``DisruptionTarget`` condition (reason ``DeletionByPodGC``, "PodGC: node no longer exists") and
deletes it with grace period 0. Its ReplicaSet then sees one active pod fewer and makes another,
which the scheduler places where there is room, or reports it cannot.

Keys are node names (``/<node>``): a node's deletion queues its name after the quarantine.
"""

from __future__ import annotations

import contextlib
from typing import Final

from inference_operator.core.clock import format_timestamp
from inference_operator.core.errors import NotFound
from inference_operator.core.objects import Obj
from inference_operator.core.ports import Result
from inference_operator.sim.apiserver.managedfields import GC_FIELD_MANAGER as CONTROLLER_MANAGER
from inference_operator.sim.cluster import podstate
from inference_operator.sim.cluster.sweep import NodeSweep

__all__ = ["DISRUPTION_REASON", "ORPHAN_MESSAGE", "QUARANTINE_SECONDS", "PodGarbageCollector"]

QUARANTINE_SECONDS: Final = 40.0
"""``quarantineTime``: how long a node must stay absent before its pods are orphans."""
DISRUPTION_REASON: Final = "DeletionByPodGC"
ORPHAN_MESSAGE: Final = "PodGC: node no longer exists"


class PodGarbageCollector(NodeSweep):
    """Fails and deletes the pods of one vanished node per key."""

    def reconcile(self, _namespace: str, name: str) -> Result:
        if self.nodes.get("", name) is not None:
            return Result()  # it came back within the quarantine
        for pod in self.pods_on(name):
            self._collect(pod)
        return Result()

    def _collect(self, pod: Obj) -> None:
        meta = pod["metadata"]
        namespace, name = str(meta["namespace"]), str(meta["name"])
        with contextlib.suppress(NotFound):
            if not podstate.is_terminal(pod):
                self.api.patch_status(
                    "Pod", namespace, name, {"status": self._failed(pod)}, field_manager=CONTROLLER_MANAGER
                )
            self.api.delete("Pod", namespace, name, grace_period_seconds=0)

    def _failed(self, pod: Obj) -> Obj:
        """The status PodGC writes before deleting: phase Failed, ``DisruptionTarget`` True."""
        now = format_timestamp(self.clock.wall())
        return {
            "phase": "Failed",
            "conditions": podstate.disrupted(pod, reason=DISRUPTION_REASON, message=ORPHAN_MESSAGE, now=now),
        }
