"""Nodes and Pods as the capacity count reads them: the few fields it needs, nothing else.

The operator caches every Node and every unfinished Pod of the cluster, so that an ``Auto``
rollout can count free GPUs without a LIST per pass. A Pod as the API serves it is several
kilobytes (managedFields, the full container specs, volumes, status of each container); the
count needs its node, its requests, its phase and the scheduler's verdict. Keeping only those
is what makes a cluster-wide Pod cache cost little more than the operator's own objects
(controller-runtime's cache transforms serve the same purpose).

What is kept, and who reads it:

- Node: name, labels and uid/resourceVersion; ``spec.taints`` and ``spec.unschedulable``;
  ``status.allocatable`` (``capacity`` where allocatable is missing) and the ``Ready``
  condition (the scheduler's filters in ``core/nodefit.py``, the count in ``reconcile/capacity.py``).
- Pod: name, namespace, uid/resourceVersion, labels (owner and ``pod-template-hash``),
  ``deletionTimestamp``; ``spec.nodeName``, ``nodeSelector``, ``tolerations``, the resource
  requests of its containers and init containers and ``overhead``; ``status.phase`` and the
  ``PodScheduled`` condition (the stall: Unschedulable, and the scheduler's message).

A dropped field can never be read by mistake elsewhere: these kinds are cached for the
capacity count alone (``Backend.cached``), and nothing writes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from inference_operator.core.objects import Obj

_META = ("name", "namespace", "uid", "resourceVersion", "labels", "deletionTimestamp")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _pick(source: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    found = _mapping(source)
    return {k: found[k] for k in keys if found.get(k) is not None}


def _conditions(status: Mapping[str, Any], kept: str) -> list[Any]:
    return [c for c in status.get("conditions") or () if isinstance(c, Mapping) and c.get("type") == kept]


def _resources_only(containers: Any) -> list[dict[str, Any]]:
    """Each container as its name and resources: what the scheduler adds up."""
    if not isinstance(containers, list):
        return []
    return [_pick(c, ("name", "resources")) for c in containers if isinstance(c, Mapping)]


def _with(obj: Obj, spec: dict[str, Any], status: dict[str, Any]) -> Obj:
    meta = _pick(obj.get("metadata"), _META)
    slim: Obj = {"kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"), "metadata": meta}
    if spec:
        slim["spec"] = spec
    if status:
        slim["status"] = status
    return slim


def slim_node(node: Obj) -> Obj:
    """A Node as the capacity count and the scheduler's filters read it."""
    spec = _pick(node.get("spec"), ("taints", "unschedulable"))
    raw = _mapping(node.get("status"))
    status = _pick(raw, ("allocatable",)) or _pick(raw, ("capacity",))
    ready = _conditions(raw, "Ready")
    if ready:
        status["conditions"] = ready
    return _with(node, spec, status)


def slim_pod(pod: Obj) -> Obj:
    """A Pod as the capacity count (what it holds, where) and the stall check read it."""
    raw_spec = _mapping(pod.get("spec"))
    spec = _pick(raw_spec, ("nodeName", "nodeSelector", "tolerations", "overhead"))
    for key in ("containers", "initContainers"):
        if raw_spec.get(key):
            spec[key] = _resources_only(raw_spec[key])
    raw = _mapping(pod.get("status"))
    status = _pick(raw, ("phase",))
    scheduled = _conditions(raw, "PodScheduled")
    if scheduled:
        status["conditions"] = scheduled
    return _with(pod, spec, status)


SLIMMERS: dict[str, Callable[[Obj], Obj]] = {"Node": slim_node, "Pod": slim_pod}
"""The slimmed view of each kind cached for the capacity count."""
