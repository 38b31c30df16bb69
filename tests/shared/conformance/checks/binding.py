"""A pod's binding (``POST pods/<name>/binding``, what kube-scheduler sends): ``spec.nodeName`` and
``PodScheduled=True`` in one write and one watch event, around the field manager (``managedFields``
do not change), a scheduler's earlier ``Unschedulable`` condition replaced whole; refused (409)
for a pod bound already, a gated pod and a wrong uid, 404 for a missing pod, and a 500 for no node (the
real server's answer to a Binding that fails validation).

The node named needs not exist (the API server does not look), so nothing runs the pods, and
they name a scheduler that does not exist either, so kube-scheduler leaves them to the check.
"""

from __future__ import annotations

from ..recorder import Api
from ..registry import check

BOUND = [
    "spec.nodeName",
    "status.conditions.0.type",
    "status.conditions.0.status",
    "status.conditions.0.reason",
    "status.conditions.0.message",
    "status.conditions.0.lastTransitionTime",
    "status.conditions.1",
    *(f"metadata.managedFields.{i}.{field}" for i in range(3) for field in ("manager", "subresource")),
]
"""What a binding sets, and who ``managedFields`` say set what (the fields of each entry are left out:
the fake does not default a Pod created directly, nor type a condition's ``lastProbeTime``)."""


def _pod(name: str, **spec: object) -> dict[str, object]:
    containers = [{"name": "server", "image": "registry.local/server:1"}]
    spec = {"schedulerName": "conformance-nobody", "containers": containers, **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


@check("binding/node-and-condition-in-one-write")
def node_and_condition_in_one_write(api: Api) -> None:
    created = api.create(_pod("p"), keep=[])
    watch = api.watch("Pod")
    api.bind("p", "conformance-node-a", uid=created["metadata"]["uid"])
    api.events(watch, 1, keep=["metadata.name", "metadata.resourceVersion", *BOUND])
    api.get("Pod", "p", keep=["metadata.resourceVersion", *BOUND])
    api.bind("p", "conformance-node-b")


@check("binding/replaces-the-unschedulable-condition")
def replaces_the_unschedulable_condition(api: Api) -> None:
    api.create(_pod("u"), keep=[])
    unschedulable = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    api.patch("Pod", "u", {"status": {"conditions": [unschedulable]}}, subresource="status", keep=BOUND)
    api.bind("u", "conformance-node-a")
    api.get("Pod", "u", keep=BOUND)


@check("binding/refused")
def refused(api: Api) -> None:
    api.create(_pod("gated", schedulingGates=[{"name": "example.com/wait"}]), keep=[])
    api.bind("gated", "conformance-node-a")
    api.create(_pod("q"), keep=[])
    api.bind("q", "conformance-node-a", uid="00000000-0000-4000-8000-00000000dead")
    api.get("Pod", "q", keep=["spec.nodeName", "status.conditions"])
    api.bind("missing", "conformance-node-a")
    api.bind("q", "")
