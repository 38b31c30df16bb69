"""Small helpers the concurrency, status, finalizers and defaults checks share.

InferenceServices here spell out every field the CRD defaults, so these checks are about what
they name (concurrency, status, finalizers), not about the CRD's structural defaults, which the
CRD schema checks cover.
"""

from __future__ import annotations

from typing import Any

from ..objects import isvc
from ..recorder import Api

Obj = dict[str, Any]
SPEC_DEFAULTS: dict[str, Any] = {
    "replicas": 1,
    "port": 8000,
    "gpu": 0,
    "healthPath": "/health",
    "progressDeadlineSeconds": 1800,
    "loadBalancer": {"enabled": True},
}


def full_isvc(name: str, **spec: Any) -> Obj:
    """An InferenceService (with the operator's finalizer) naming every defaulted field."""
    return isvc(name, **{**SPEC_DEFAULTS, **spec})


def without_rv(obj: Obj, **changes: Any) -> Obj:
    """``obj`` as a client would send it with no resourceVersion (top-level ``changes`` applied)."""
    body = {**obj, **changes}
    body["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    return body


def unfinalize(api: Api, kind: str, name: str) -> None:
    """Drop the finalizers so the namespace can go (the check's last, recorded, step)."""
    api.patch(kind, name, {"metadata": {"finalizers": None}}, keep=["metadata.finalizers"])
