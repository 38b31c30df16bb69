"""Where an object lives in the fake API server's store: its key, (kind, namespace, name).

Every part of the fake names objects by this key: the store, the write strategy, the garbage
collector, the namespace controller. It lives here, apart from all of them, so that none has to
import another only to spell a key (the store, the strategy and the namespaces once imported one
another round a loop for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from inference_operator.core.errors import Invalid, NotFound
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.kinds import traits_of
from inference_operator.sim.apiserver.managedfields import BadRequest
from inference_operator.sim.apiserver.validation import path_segment_problem

__all__ = ["DEFAULT_NAMESPACE", "Key", "key_for", "key_in", "key_of", "key_of_stored", "namespace_key"]

Key = tuple[str, str, str]
"""(kind, namespace, name); namespace is ``""`` for cluster-scoped kinds."""

DEFAULT_NAMESPACE: Final = "default"
"""Where a namespaced object without a namespace goes."""


def key_for(kind: str, namespace: str | None, name: str) -> Key:
    """The store key of a request path: cluster-scoped kinds drop the namespace, namespaced ones
    default it; a name no path could carry is :class:`BadRequest` (or :class:`NotFound`)."""
    problem = path_segment_problem(name)
    if "/" in name:  # the request path then names some other resource, which does not exist
        raise NotFound("the server could not find the requested resource", kind=kind, name=name)
    if problem:
        raise BadRequest(f"Name parameter invalid: {name!r}: {problem}", kind=kind, name=name)
    return key_in(kind, namespace, name)


def key_in(kind: str, namespace: str | None, name: str) -> Key:
    """The store key of ``name`` of ``kind`` in ``namespace``, the name taken as it is."""
    if not traits_of(kind).namespaced:
        return (kind, "", name)
    return (kind, namespace or DEFAULT_NAMESPACE, name)


def key_of(obj: Mapping[str, Any]) -> Key:
    """The store key of a client's object; :class:`Invalid` without a kind or a name."""
    kind = obj.get("kind")
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(kind, str) or not kind:
        raise Invalid("Object 'Kind' is missing", name=str(name or ""))
    if not isinstance(name, str) or not name:
        raise Invalid(f"{kind}: metadata.name: Required value: name or generateName is required", kind=kind)
    return key_in(kind, meta.get("namespace") if isinstance(meta, Mapping) else None, name)


def key_of_stored(obj: Obj) -> Key:
    """The key of an object as stored (its kind and metadata complete)."""
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


def namespace_key(name: str) -> Key:
    return ("Namespace", "", name)
