"""Small helpers over plain manifest dicts: keys, owner references, finalizers.

Objects travel through the operator as plain JSON-like dicts (what the API server speaks);
these helpers keep the few questions we ask of them in one place.
"""

from __future__ import annotations

from typing import Any

from inference_operator.api.constants import FINALIZER, GROUP, KIND

Obj = dict[str, Any]
"""A Kubernetes object as the API speaks it, a plain JSON-like dict: the package's one alias for
it, imported from here by every layer at core and above (api/ and ssa/, which do not import core,
write ``dict[str, Any]``)."""


def key_of(namespace: str, name: str) -> str:
    """The workqueue key of an object: ``namespace/name``."""
    return f"{namespace}/{name}"


def split_key(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


def obj_key(obj: Obj) -> str:
    meta = obj["metadata"]
    return key_of(meta.get("namespace", "default"), meta["name"])


def meta(obj: Obj) -> dict[str, Any]:
    m: dict[str, Any] = obj.get("metadata") or {}
    return m


def is_being_deleted(obj: Obj) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def has_finalizer(obj: Obj, finalizer: str = FINALIZER) -> bool:
    return finalizer in (meta(obj).get("finalizers") or [])


def controller_owner_uid(obj: Obj) -> str | None:
    """The uid of the object's controlling owner, if any."""
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            uid: str | None = ref.get("uid")
            return uid
    return None


def controller_owner_key(obj: Obj, *, group: str, kind: str) -> str | None:
    """The workqueue key of the object's controlling owner, if that owner is a ``kind`` of
    API group ``group`` (any version); owners live in the object's own namespace."""
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == kind and ref.get("apiVersion", "").startswith(group + "/"):
            return key_of(meta(obj).get("namespace", "default"), ref["name"])
    return None


def owner_key(obj: Obj) -> str | None:
    """The workqueue key of the InferenceService that controls this child, if any.

    Children are mapped to their parent through the controller ownerReference, which also
    carries the parent's uid (so a re-created parent is never confused with the old one).
    """
    return controller_owner_key(obj, group=GROUP, kind=KIND)


def _relevant_metadata(obj: Obj) -> tuple[Any, ...]:
    m = meta(obj)
    return (
        m.get("generation"),
        m.get("deletionTimestamp"),
        m.get("finalizers"),
        m.get("labels"),
        m.get("annotations"),
        m.get("uid"),
    )


def changed_beyond_status(old: Obj, new: Obj) -> bool:
    """False when an update of an InferenceService touched only its status (and resourceVersion).

    The operator's own status writes would otherwise wake it again right away, which wastes a
    pass and, worse, lets a failing pass retry immediately instead of with backoff. Spec
    changes (generation), deletion, finalizers, labels and annotations all count.
    """
    return _relevant_metadata(old) != _relevant_metadata(new)
