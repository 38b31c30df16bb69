"""ReplicaSets and Pods of a Deployment, built as kube-controller-manager builds them: pure.

The Deployment controller names each ReplicaSet ``<deployment>-<pod-template-hash>`` and labels
it, its selector, its template and so its pods with that hash, so that the ReplicaSets of one
Deployment never select each other's pods. The hash is ``controller.ComputeHash``: FNV-32a over
the pod template, then the collision count (when set) as 8 little-endian bytes, the 32-bit sum
printed in decimal and each digit mapped through apimachinery's ``SafeEncodeString`` alphabet
(no vowels, so no words). One thing differs on purpose: the real controller hashes Go's
``spew`` dump of its struct, which only Go can reproduce, so here FNV-32a runs over the SHA-256
digest of the template's canonical JSON (sorted keys, no spaces): 32 bytes instead of the
template's few thousand, which FNV, a byte at a time in Python, took 70 µs over. The values
differ from a real cluster's; the shape, length range, alphabet and collision behaviour do not.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Mapping
from typing import Any, Final

from inference_operator.core.jsoncopy import deep_copy
from inference_operator.core.nodefit import requirement_holds
from inference_operator.core.objects import Obj

__all__ = [
    "DESIRED_REPLICAS",
    "MAX_REPLICAS",
    "POD_TEMPLATE_HASH",
    "REVISION",
    "build_pod",
    "build_replicaset",
    "controller_of",
    "controller_reference",
    "pod_template_hash",
    "revision_of",
    "safe_encode",
    "selector_matches",
    "template_without_hash",
]


POD_TEMPLATE_HASH: Final = "pod-template-hash"
REVISION: Final = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS: Final = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS: Final = "deployment.kubernetes.io/max-replicas"
SAFE_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_FNV_OFFSET: Final = 0x811C9DC5
_FNV_PRIME: Final = 0x01000193


def _fnv32a(data: bytes, value: int = _FNV_OFFSET) -> int:
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """apimachinery's ``rand.SafeEncodeString``: each character through the vowel-free alphabet."""
    return "".join(SAFE_ALPHABET[ord(c) % len(SAFE_ALPHABET)] for c in text)


def pod_template_hash(template: Mapping[str, Any], *, collision_count: int | None = None) -> str:
    """The ``pod-template-hash`` of ``template`` (see the module docstring)."""
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    value = _fnv32a(hashlib.sha256(canonical).digest())
    if collision_count is not None:
        value = _fnv32a(struct.pack("<II", collision_count & 0xFFFFFFFF, 0), value)
    return safe_encode(str(value))


def template_without_hash(template: Mapping[str, Any]) -> Obj:
    """``template`` minus its ``pod-template-hash`` label: how a Deployment finds its new ReplicaSet."""
    meta = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    out = dict(template)
    if meta:
        out["metadata"] = meta
    else:
        out.pop("metadata", None)
    return out


def controller_reference(obj: Mapping[str, Any]) -> Obj:
    """The owner reference a controller puts on what it makes (and on what it adopts)."""
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The owner reference with ``controller: true``, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return dict(ref)
    return None


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a ``LabelSelector`` (``matchLabels`` and ``matchExpressions``, ANDed) selects
    ``labels``. An empty selector selects nothing here: ``LabelSelectorAsSelector`` makes it
    match everything, but no controller claims by one (a Deployment's may not be empty)."""
    expressions = selector.get("matchExpressions") or ()
    match = selector.get("matchLabels") or {}
    if not match and not expressions:
        return False
    return all(labels.get(k) == v for k, v in match.items()) and all(requirement_holds(e, labels) for e in expressions)


def revision_of(rs: Mapping[str, Any]) -> int:
    """A ReplicaSet's revision annotation; 0 when it is missing or no number (``MaxRevision``
    skips those)."""
    text = str(((rs.get("metadata") or {}).get("annotations") or {}).get(REVISION) or "")
    return int(text) if text.isdecimal() else 0


def build_replicaset(
    deployment: Mapping[str, Any], *, template_hash: str, replicas: int, revision: int, max_surge: int
) -> Obj:
    """The ReplicaSet a Deployment creates for its current template."""
    spec = deployment["spec"]
    template = deep_copy(spec["template"])
    labels = {**((template.get("metadata") or {}).get("labels") or {}), POD_TEMPLATE_HASH: template_hash}
    template.setdefault("metadata", {})["labels"] = labels
    selector = deep_copy(spec["selector"])
    selector.setdefault("matchLabels", {})[POD_TEMPLATE_HASH] = template_hash
    meta = deployment["metadata"]
    rs_spec: Obj = {"replicas": replicas, "selector": selector, "template": template}
    if spec.get("minReadySeconds"):
        rs_spec["minReadySeconds"] = spec["minReadySeconds"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{meta['name']}-{template_hash}",
            "namespace": meta["namespace"],
            "labels": labels,
            "annotations": {
                DESIRED_REPLICAS: str(spec.get("replicas", 1)),
                MAX_REPLICAS: str(int(spec.get("replicas", 1)) + max_surge),
                REVISION: str(revision),
            },
            "ownerReferences": [controller_reference(deployment)],
        },
        "spec": rs_spec,
    }


def build_pod(replicaset: Mapping[str, Any]) -> Obj:
    """A pod of ``replicaset``: its template, named ``<replicaset>-<5 random characters>`` by the
    API server (``generateName``), controlled by the ReplicaSet."""
    template = replicaset["spec"]["template"]
    meta = replicaset["metadata"]
    pod_meta = deep_copy(template.get("metadata") or {})
    pod_meta.update(
        {
            "generateName": f"{meta['name']}-",
            "namespace": meta["namespace"],
            "ownerReferences": [controller_reference(replicaset)],
        }
    )
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": deep_copy(template["spec"])}
