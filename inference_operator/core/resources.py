"""Resource amounts as kube-scheduler counts them: cpu in millicores, everything else in units.

The scheduler compares integers (``MilliValue()`` for cpu, ``Value()`` — rounded up — for the
rest), so a pod asking for ``1.5`` GPUs or ``100m`` of memory is counted the way the real one
counts it. Pod requests follow ``resourcehelper.PodRequests``: the sum over containers, at
least the largest init container, plus the pod's overhead. A container that sets only limits
requests its limits (the API server defaults a Pod's requests from its limits).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from inference_operator.api.quantity import parse_quantity
from inference_operator.core.objects import Obj

__all__ = ["Resources", "add", "amount", "amounts", "pod_requests", "subtract"]

Resources = dict[str, int]
"""resource name → amount (cpu in millicores)."""


def amount(name: str, value: Any) -> int | None:
    """The scheduler's integer for ``value`` of resource ``name`` (None: not a quantity)."""
    number = parse_quantity(value)
    if number is None:
        return None
    if name == "cpu":
        return math.ceil(number * 1000)
    return math.ceil(number)


def amounts(values: Mapping[str, Any] | None) -> Resources:
    """A resource list as integers; entries that are not quantities are left out."""
    out: Resources = {}
    for name, value in (values or {}).items():
        counted = amount(name, value)
        if counted is not None:
            out[name] = counted
    return out


def _container_requests(container: Obj) -> Resources:
    resources = container.get("resources") or {}
    requested = amounts(resources.get("limits"))
    requested.update(amounts(resources.get("requests")))
    return requested


def pod_requests(pod_spec: Mapping[str, Any]) -> Resources:
    """What a pod asks the scheduler for (see the module docstring)."""
    total: Resources = {}
    for container in pod_spec.get("containers") or ():
        total = add(total, _container_requests(container))
    for init in pod_spec.get("initContainers") or ():
        for name, value in _container_requests(init).items():
            total[name] = max(total.get(name, 0), value)
    return add(total, amounts(pod_spec.get("overhead")))


def add(left: Mapping[str, int], right: Mapping[str, int]) -> Resources:
    out = dict(left)
    for name, value in right.items():
        out[name] = out.get(name, 0) + value
    return out


def subtract(left: Mapping[str, int], right: Mapping[str, int]) -> Resources:
    out = dict(left)
    for name, value in right.items():
        out[name] = out.get(name, 0) - value
    return out
