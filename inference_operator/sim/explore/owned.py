"""What the operator owns on a child, compared exactly, as the explorer's invariants need it.

"Each child equals the desired state" cannot mean the whole object: the API server fills in
defaults, allocates a cluster IP, and other actors add annotations, labels, sidecars and owner
references that are theirs. Nor can it mean "contains what the builders return": a field the
operator stopped setting (a removed env var) must be gone. So the desired object is first passed
through a scratch FakeApiServer (the same defaulting, exactly), then both sides are cut down to
the operator's fields: its own labels, its controller reference, the spec minus what the server
allocates and what others add. Whatever differs then is a leftover or a missing field.
"""

from __future__ import annotations

import json
from typing import Any

from inference_operator.api.constants import DEPLOYMENT, SERVICE
from inference_operator.core.errors import ApiError
from inference_operator.core.jsoncopy import deep_copy
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.apiserver.validation import validate_name

__all__ = ["owned_differences", "owned_view", "service_name_valid", "stored_form"]


def service_name_valid(name: str) -> bool:
    try:
        validate_name(SERVICE, name)
    except ApiError:
        return False
    return True


_scratch = FakeApiServer()
_stored_cache: dict[str, Obj | None] = {}


def stored_form(desired: Obj) -> Obj | None:
    """``desired`` as the API server would store it (defaults filled in), or None if it would
    refuse it. Computed on a scratch server, so it follows the fake's defaulting exactly."""
    text = json.dumps(desired, sort_keys=True)
    if text in _stored_cache:
        cached = _stored_cache[text]
        return deep_copy(cached) if cached is not None else None
    body = deep_copy(desired)
    refs = body["metadata"].pop("ownerReferences", None)  # the scratch server would collect an orphan
    try:
        stored: Obj | None = _scratch.create(body)
        meta = body["metadata"]
        _scratch.delete(body["kind"], meta.get("namespace", "default"), meta["name"])
    except ApiError:
        stored = None
    if stored is not None and refs is not None:
        stored["metadata"]["ownerReferences"] = refs
    if len(_stored_cache) > 2000:
        _stored_cache.clear()
    _stored_cache[text] = stored
    return deep_copy(stored) if stored is not None else None


def owned_view(obj: Obj, desired: Obj) -> Obj:
    """The fields of ``obj`` the operator owns: its labels, its controller reference, the spec
    without what the server allocates or other actors add (template annotations, sidecars)."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    spec = deep_copy(obj.get("spec") or {})
    if obj.get("kind") == SERVICE:
        spec.pop("clusterIP", None)
        spec.pop("clusterIPs", None)
    if obj.get("kind") == DEPLOYMENT:
        template = spec.get("template") or {}
        (template.get("metadata") or {}).pop("annotations", None)
        pod = template.get("spec") or {}
        wanted = {c["name"] for c in desired["spec"]["template"]["spec"]["containers"]}
        pod["containers"] = [c for c in pod.get("containers") or [] if c.get("name") in wanted]
    return {
        "metadata": {
            "labels": {k: labels.get(k) for k in desired["metadata"].get("labels") or {}},
            "controller": [r for r in meta.get("ownerReferences") or [] if r.get("controller")],
        },
        "spec": spec,
    }


def _diff(live: Any, want: Any, path: str, out: list[str]) -> None:
    if isinstance(live, dict) and isinstance(want, dict):
        for k in sorted(set(live) | set(want), key=str):
            sub = f"{path}.{k}" if path else str(k)
            if k not in want:
                out.append(f"{sub}: present ({json.dumps(live[k])}) but not desired")
            elif k not in live:
                out.append(f"{sub}: missing (desired {json.dumps(want[k])})")
            else:
                _diff(live[k], want[k], sub, out)
        return
    if isinstance(live, list) and isinstance(want, list) and len(live) == len(want):
        for i, (a, b) in enumerate(zip(live, want, strict=True)):
            _diff(a, b, f"{path}[{i}]", out)
        return
    if live != want:
        out.append(f"{path}: {json.dumps(live)} (desired {json.dumps(want)})")


def owned_differences(live: Obj, desired: Obj) -> list[str]:
    """Where ``live`` differs from ``desired`` on the fields the operator owns (empty: equal)."""
    stored = stored_form(desired)
    if stored is None:
        return ["the desired object would be refused by the API server"]
    out: list[str] = []
    _diff(owned_view(live, desired), owned_view(stored, desired), "", out)
    return out
