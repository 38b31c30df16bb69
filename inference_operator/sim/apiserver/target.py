"""What a request's URL names against what its body says: the API server's first check of a write.

A kube-apiserver request names its target twice: in the URL (group, version, resource, namespace,
name) and in the body (``apiVersion``, ``kind``, ``metadata``). The server decodes the body with
the URL's kind as default (a create without ``kind`` is still a create of that kind), and refuses
with 400 BadRequest a body that names another kind, version, namespace or name than the URL.
Server-side apply is stricter: its body must carry ``apiVersion`` and ``kind`` and a name.
The FakeApiServer's verbs take the URL as an optional :class:`Target`; callers that build the
request from the object alone (the simulator itself) leave it out and nothing is checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from inference_operator.core.errors import Invalid
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.decoding import check_body_decodes, check_patch_decodes, decoded
from inference_operator.sim.apiserver.managedfields import BadRequest

__all__ = [
    "Target",
    "body_for_create",
    "check_apply_body",
    "check_patch",
    "check_update_body",
    "patch_body",
    "patch_preconditions",
]


class Target(NamedTuple):
    """What the request's URL names (``namespace`` is ``""`` for cluster-scoped kinds)."""

    api_version: str
    kind: str
    namespace: str = ""
    name: str = ""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _decoded(target: Target, obj: Any) -> Obj:
    """The body decoded as the URL's kind: its missing ``kind``/``apiVersion`` filled from the URL,
    400 when it names another kind or version (the decoder's "cannot be handled as")."""
    if not isinstance(obj, dict):
        raise BadRequest(f"the body of a {target.kind} request must be a JSON object", kind=target.kind)
    kind = obj.get("kind") or target.kind
    version = obj.get("apiVersion") or target.api_version
    if version != target.api_version:
        raise BadRequest(
            f'{kind} in version "{version}" cannot be handled as a {target.kind}: no kind "{kind}" is registered '
            f'for version "{version}"',
            kind=target.kind,
        )
    if kind != target.kind:
        raise BadRequest(
            f'{kind} in version "{version}" cannot be handled as a {target.kind}: converting ({version}.{kind}) '
            f"to ({target.kind}): unknown conversion",
            kind=target.kind,
        )
    return {**obj, "apiVersion": version, "kind": kind}


def _check_namespace(target: Target, meta: Mapping[str, Any], *, fill: bool) -> Obj:
    """``meta`` with the URL's namespace; 400 when the body names another one."""
    out = dict(meta)
    namespace = meta.get("namespace")
    if target.namespace and namespace and namespace != target.namespace:
        raise BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request",
            kind=target.kind,
            name=str(meta.get("name") or ""),
        )
    if target.namespace and fill:
        out["namespace"] = target.namespace
    return out


def _check_name(target: Target, meta: Mapping[str, Any]) -> None:
    name = meta.get("name")
    if not name:
        raise BadRequest(
            f"the name of the object ({target.name} based on URL) was undeterminable: name must be provided",
            kind=target.kind,
            name=target.name,
        )
    if name != target.name:
        raise BadRequest(
            f"the name of the object ({name}) does not match the name on the URL ({target.name})",
            kind=target.kind,
            name=target.name,
        )


def body_for_create(target: Target, obj: Any) -> Obj:
    """A create's body as the server takes it: kind, version and namespace from the URL."""
    body = _decoded(target, obj)
    check_body_decodes(target.kind, body)
    body = decoded(target.kind, body)
    body["metadata"] = _check_namespace(target, _meta(body), fill=True)
    return body


def check_update_body(target: Target, obj: Any) -> Obj:
    """A PUT's body as the server takes it (kind and version from the URL); 400 when it names another
    object than the URL."""
    body = _decoded(target, obj)
    check_body_decodes(target.kind, body)
    body = decoded(target.kind, body)
    meta = _check_namespace(target, _meta(body), fill=True)
    _check_name(target, meta)
    body["metadata"] = meta
    return body


def check_apply_body(target: Target, obj: Any) -> Obj:
    """An apply's body: ``apiVersion`` and ``kind`` must be the URL's, the name given and the URL's."""
    if not isinstance(obj, dict):
        raise BadRequest("the body of an apply patch must be an object", kind=target.kind)
    version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    if version != target.api_version or kind != target.kind:
        group, _, plain = version.rpartition("/")
        raise BadRequest(f"invalid object type: {group}/{plain}, Kind={kind}", kind=target.kind)
    meta = _check_namespace(target, _meta(obj), fill=True)
    _check_name(target, meta)
    return decoded(target.kind, {**obj, "metadata": meta})


def patch_body(target: Target, patch: Any) -> Obj:
    """A merge patch must be a JSON object (400 otherwise, as the server's patch decoder says)."""
    if patch is None:
        raise BadRequest("Invalid JSON Patch", kind=target.kind, name=target.name)
    if not isinstance(patch, dict):
        raise BadRequest(
            f"error decoding patch: json: cannot unmarshal {_json_type(patch)} into Go value of type "
            "map[string]interface {}",
            kind=target.kind,
            name=target.name,
        )
    return patch


def patch_preconditions(patch: Obj) -> Obj:
    """A patch's preconditions: its resourceVersion only (a uid in it is a change, refused as one)."""
    meta = patch.get("metadata")
    if not isinstance(meta, dict) or "uid" not in meta:
        return patch
    return {**patch, "metadata": {k: v for k, v in meta.items() if k != "uid"}}


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    return "number"


def check_patch(target: Target, *, stored: Mapping[str, Any], patched: Mapping[str, Any]) -> None:
    """A patch's result must decode into the kind and keep its kind and version (422, :mod:`.decoding`),
    may not move the object (400 when the patched name or namespace is not the URL's) nor change
    its uid (422: a patch carries no uid precondition, the field is immutable)."""
    check_patch_decodes(target.kind, target.name, stored, patched)
    meta = _meta(patched)
    _check_namespace(target, meta, fill=False)
    _check_name(target, meta)
    uid, stored_uid = meta.get("uid"), _meta(stored).get("uid")
    if uid and uid != stored_uid:
        raise Invalid(
            f'{target.kind} "{target.name}" is invalid: metadata.uid: Invalid value: "{uid}": field is immutable',
            kind=target.kind,
            namespace=target.namespace,
            name=target.name,
        )
