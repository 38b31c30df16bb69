"""The taint eviction controller: a NoExecute taint sends away the pods that do not tolerate it.

``NoSchedule`` only keeps new pods off a node; ``NoExecute`` also evicts the pods already there
(``kubectl taint node n maintenance=present:NoExecute`` is how a GPU node is drained for repair).
As kube-controller-manager's taint eviction controller (``pkg/controller/tainteviction``, 1.36)
does: each pod bound to a node with a NoExecute taint it does not tolerate gets the
``DisruptionTarget`` condition (reason ``DeletionByTaintManager``, "Taint manager: deleting due
to NoExecute taint") and is deleted with its own grace period, so it keeps its GPUs until its
kubelet has stopped it. A toleration's ``tolerationSeconds`` is not modelled: a pod that
tolerates the taint stays for good.

Keys are node names (``/<node>``): a node that gains a taint, and a pod bound to a tainted node,
queue the node.
"""

from __future__ import annotations

import contextlib
from typing import Final

from inference_operator.core.clock import format_timestamp
from inference_operator.core.errors import NotFound
from inference_operator.core.nodefit import tolerates
from inference_operator.core.objects import Obj
from inference_operator.core.ports import Result
from inference_operator.sim.apiserver.managedfields import GC_FIELD_MANAGER as CONTROLLER_MANAGER
from inference_operator.sim.cluster import podstate
from inference_operator.sim.cluster.sweep import NodeSweep

__all__ = ["EVICTION_MESSAGE", "EVICTION_REASON", "TaintEviction", "no_execute_taints"]

EVICTION_REASON: Final = "DeletionByTaintManager"
EVICTION_MESSAGE: Final = "Taint manager: deleting due to NoExecute taint"


def no_execute_taints(node: Obj) -> list[Obj]:
    return [t for t in (node.get("spec") or {}).get("taints") or () if t.get("effect") == "NoExecute"]


class TaintEviction(NodeSweep):
    """Evicts, per key, the pods of one node that do not tolerate its NoExecute taints."""

    def reconcile(self, _namespace: str, name: str) -> Result:
        node = self.nodes.get("", name)
        taints = no_execute_taints(node) if node is not None else []
        if not taints:
            return Result()
        for pod in self.pods_on(name):
            if not podstate.is_active(pod):
                continue
            tolerations = (pod.get("spec") or {}).get("tolerations") or []
            if not all(tolerates(tolerations, taint) for taint in taints):
                self._evict(pod)
        return Result()

    def _evict(self, pod: Obj) -> None:
        meta = pod["metadata"]
        namespace, name = str(meta["namespace"]), str(meta["name"])
        now = format_timestamp(self.clock.wall())
        conditions = podstate.disrupted(pod, reason=EVICTION_REASON, message=EVICTION_MESSAGE, now=now)
        with contextlib.suppress(NotFound):
            self.api.patch_status(
                "Pod", namespace, name, {"status": {"conditions": conditions}}, field_manager=CONTROLLER_MANAGER
            )
            self.api.delete("Pod", namespace, name)
