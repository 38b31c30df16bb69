"""Whether a JSON body decodes into a built-in kind's Go type: the step before everything else.

kube-apiserver decodes every request body into the kind's Go struct before defaulting or
validating it, so a value of the wrong JSON type (a number where a string goes, a string where a
map goes) never reaches validation: a create or an update answers 400 BadRequest ("cannot be
handled as a ConfigMap: json: cannot unmarshal number into Go struct field ..."), and a merge
patch whose result does not decode answers 422 with the one field error ``patch: Invalid value``.
Changing ``kind`` or ``apiVersion`` in a patch is refused the same way. And a ``null`` in a map
of strings decodes as the empty string (a Go map cannot hold nil): ``data: {k: null}`` stores
``k: ""``, where the simulator's own writes would drop it. This module checks the
parts of that typing that every built-in kind shares (metadata) plus the plain data kinds
(ConfigMap and Secret maps of strings); a custom resource's types are its CRD schema's business.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from inference_operator.core.errors import Invalid
from inference_operator.sim.apiserver.kinds import traits_of
from inference_operator.sim.apiserver.managedfields import BadRequest
from inference_operator.sim.apiserver.podvalidation import quantity_syntax_error

__all__ = ["check_body_decodes", "check_patch_decodes", "decode_error", "decoded"]

_STRING_MAPS: Final[dict[str, tuple[str, ...]]] = {
    "ConfigMap": ("data", "binaryData"),
    "Secret": ("data", "stringData"),
}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _string_map(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, dict):
        return f"json: cannot unmarshal {_json_type(value)} into Go struct field {where} of type map[string]string"
    for item in value.values():
        if item is not None and not isinstance(item, str):
            return f"json: cannot unmarshal {_json_type(item)} into Go struct field {where} of type string"
    return ""


def _list_of(value: Any, where: str, *, element: type, go_type: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, list):
        return f"json: cannot unmarshal {_json_type(value)} into Go struct field {where} of type []{go_type}"
    for item in value:
        if item is not None and not isinstance(item, element):
            return f"json: cannot unmarshal {_json_type(item)} into Go struct field {where} of type {go_type}"
    return ""


def decode_error(kind: str, obj: Mapping[str, Any]) -> str:
    """Why ``obj`` does not decode into ``kind``'s Go type ("" when it does, or ``kind`` is no built-in)."""
    if not traits_of(kind).built_in:
        return ""
    for field in ("apiVersion", "kind"):
        if obj.get(field) is not None and not isinstance(obj.get(field), str):
            return f"json: cannot unmarshal {_json_type(obj[field])} into Go struct field .{field} of type string"
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        return f"json: cannot unmarshal {_json_type(meta)} into Go struct field {kind}.metadata of type v1.ObjectMeta"
    meta = meta or {}
    problem = (
        _string_map(meta.get("labels"), f"{kind}.metadata.labels")
        or _string_map(meta.get("annotations"), f"{kind}.metadata.annotations")
        or _list_of(meta.get("finalizers"), f"{kind}.metadata.finalizers", element=str, go_type="string")
        or _list_of(
            meta.get("ownerReferences"), f"{kind}.metadata.ownerReferences", element=dict, go_type="v1.OwnerReference"
        )
    )
    for field in _STRING_MAPS.get(kind, ()):
        problem = problem or _string_map(obj.get(field), f"{kind}.{field}")
    if kind == "Deployment" and not problem:
        spec = obj.get("spec")
        template = spec.get("template") if isinstance(spec, dict) else None
        pod = template.get("spec") if isinstance(template, dict) else None
        problem = quantity_syntax_error(pod) if isinstance(pod, dict) else ""
    return problem


def check_body_decodes(kind: str, obj: Mapping[str, Any]) -> None:
    """:class:`BadRequest` for a create or update body that does not decode into ``kind``."""
    problem = decode_error(kind, obj)
    if problem:
        version = obj.get("apiVersion", "")
        raise BadRequest(f'{kind} in version "{version}" cannot be handled as a {kind}: {problem}', kind=kind)


def decoded(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as its Go type holds it (call after :func:`check_body_decodes`): nulls in maps of
    strings are empty strings. ``obj`` itself is left alone."""
    if not traits_of(kind).built_in:
        return obj
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {**meta, **{f: _no_nulls(meta[f]) for f in ("labels", "annotations") if f in meta}}
    for field in _STRING_MAPS.get(kind, ()):
        if field in out:
            out[field] = _no_nulls(out[field])
    return out


def _no_nulls(values: Any) -> Any:
    if not isinstance(values, dict):
        return values
    return {key: "" if value is None else value for key, value in values.items()}


def check_patch_decodes(kind: str, name: str, stored: Mapping[str, Any], patched: Mapping[str, Any]) -> None:
    """:class:`Invalid` (``patch: Invalid value``) for a patch whose result does not decode into
    ``kind``, or changes its ``kind`` or ``apiVersion``."""
    if not traits_of(kind).built_in:
        return
    problem = decode_error(kind, patched)
    for field in ("kind", "apiVersion"):
        if not problem and patched.get(field) != stored.get(field):
            problem = f"the {field} of the object cannot be changed by a patch"
    if problem:
        raise Invalid(f'{kind} "{name}" is invalid: patch: Invalid value: "{{...}}": {problem}', kind=kind, name=name)
