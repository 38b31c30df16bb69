"""A CustomResourceDefinition's structural schema, applied the way kube-apiserver decodes with it.

For a custom resource the real API server trusts nothing the client sends: on the way in it
checks that ``metadata`` can be ObjectMeta (else 400), prunes the fields the schema does not
declare, and fills in the schema's ``default:`` values; only then does it validate
(:mod:`.crdvalidation`, then the CEL rules in :mod:`.cel`). A fake that stored InferenceServices
as given would let the operator lean on defaults it never gets. This module is those decoding
passes, as pure functions of a value and its schema node, plus what validation shares with
them: :class:`FieldError`, field paths, JSON types, and how an old value is correlated with a
new one on update. Which schema belongs to which kind, and how the passes are put together per
request, is :mod:`.customresources`.

Errors are :class:`FieldError` values carrying the real server's field path and error type
(``spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to
0``), because clients, and the conformance suite, read those.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Generic, NamedTuple, TypeVar

from inference_operator.api.fielderrors import go_value
from inference_operator.core.jsoncopy import copy_without_nulls, deep_copy
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.knownfields import OBJECT_META_FIELDS

__all__ = [
    "ABSENT",
    "BLOCKING",
    "OBJECT_META_FIELDS",
    "FieldError",
    "PerSchemaNode",
    "apply_defaults",
    "child_path",
    "correlated_item",
    "go_value",
    "item_path",
    "json_type",
    "metadata_copy",
    "object_meta_problem",
    "old_child",
    "prune",
    "request_copy",
    "type_ok",
    "whole_numbers_as_integers",
    "whole_numbers_in_request",
]

Schema = Mapping[str, Any]

_ENVELOPE: Final = ("apiVersion", "kind", "metadata")

ABSENT: Final[Any] = object()
"""No old value to compare with (a create, or a list item nothing correlates with)."""
BLOCKING: Final = frozenset({"Unsupported value", "Required value", "Too long", "Too many", "TypeInvalid"})
"""Error types after which the CEL rules are not run (the API server's ``hasBlockingErr``)."""


class FieldError(NamedTuple):
    """One field error: ``path`` (``<nil>`` for the object itself), ``type`` and the full text."""

    path: str
    type: str
    text: str

    @classmethod
    def of(cls, path: str, type_: str, detail: str = "", *, shown: str = "") -> FieldError:
        """``path: <shown type>: detail`` (``type_`` ``TypeInvalid`` is shown as ``Invalid value``)."""
        where = path or "<nil>"
        label = shown or ("Invalid value" if type_ == "TypeInvalid" else type_)
        return cls(where, type_, f"{where}: {label}" + (f": {detail}" if detail else ""))


def correlated_item(item: Any, old_items: Any, schema: Schema) -> Any:
    """The old item an item of a list is compared with: by key in an ``x-kubernetes-list-type``
    ``map``, by value in a ``set``; items of atomic lists have none (:data:`ABSENT`)."""
    if not isinstance(old_items, list):
        return ABSENT
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        return item if item in old_items else ABSENT
    if list_type == "map" and isinstance(item, dict):
        keys = schema.get("x-kubernetes-list-map-keys") or ()
        wanted = [item.get(k) for k in keys]
        for candidate in old_items:
            if isinstance(candidate, dict) and [candidate.get(k) for k in keys] == wanted:
                return candidate
    return ABSENT


def old_child(old: Any, key: str) -> Any:
    return old[key] if isinstance(old, dict) and key in old else ABSENT


def child_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def item_path(path: str, index: int) -> str:
    return f"{path}[{index}]"


# --- metadata ------------------------------------------------------------------------------

_META_TYPES: Final = {
    **dict.fromkeys(("generation", "deletionGracePeriodSeconds"), ("integer", "int64")),
    **dict.fromkeys(("labels", "annotations"), ("object", "map[string]string")),
    "finalizers": ("array", "[]string"),
    "ownerReferences": ("array", "[]v1.OwnerReference"),
    "managedFields": ("array", "[]v1.ManagedFieldsEntry"),
}
_GO_JSON: Final = {"integer": "number", "number": "number", "boolean": "bool"}


def object_meta_problem(meta: Any) -> str:
    """Why ``meta`` cannot be decoded as ObjectMeta (Go's json words), or ``""``."""
    if not isinstance(meta, dict):
        return ""
    for key, value in meta.items():
        if key not in OBJECT_META_FIELDS or value is None:
            continue
        wanted, go_type = _META_TYPES.get(key, ("string", "string"))
        if not type_ok(value, wanted) or (wanted == "integer" and isinstance(value, float)):
            return _unmarshal(value, key, go_type)
        elements = value.values() if key in ("labels", "annotations") else value if key == "finalizers" else ()
        for element in elements:
            if not isinstance(element, str):
                return _unmarshal(element, key, "string")
        if wanted == "array" and key != "finalizers":
            for element in value:
                if not isinstance(element, dict):
                    return _unmarshal(element, key, go_type[2:])
    return ""


def _unmarshal(value: Any, key: str, go_type: str) -> str:
    actual = json_type(value)
    return (
        f"json: cannot unmarshal {_GO_JSON.get(actual, actual)} into Go struct field ObjectMeta.{key} of type {go_type}"
    )


# --- numbers ---------------------------------------------------------------------------------


def whole_numbers_as_integers(node: Any) -> Any:
    """``node`` with every float that has no fraction turned into an int, in place where it can.

    Unstructured JSON keeps ``8080.0`` as a float64, which Go writes back out as ``8080``: the
    real server answers an integer, so a client never sees the ``.0``.
    """
    if isinstance(node, float) and node.is_integer() and abs(node) < 1e21:
        return int(node)
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, float | dict | list):
                node[key] = whole_numbers_as_integers(value)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            if isinstance(value, float | dict | list):
                node[index] = whole_numbers_as_integers(value)
    return node


def whole_numbers_in_request(obj: Obj) -> Obj:
    """:func:`whole_numbers_as_integers` of a request's object (:func:`request_copy`), in place,
    leaving its managedFields alone (they are the caller's, and only read)."""
    for key, value in obj.items():
        if key == "metadata" and type(value) is dict:
            for name, field in value.items():
                if name != "managedFields" and isinstance(field, float | dict | list):
                    value[name] = whole_numbers_as_integers(field)
        elif isinstance(value, float | dict | list):
            obj[key] = whole_numbers_as_integers(value)
    return obj


def request_copy(obj: Mapping[str, Any]) -> Obj:
    """A request's object copied without nulls, but for ``metadata.managedFields`` (see
    :func:`metadata_copy`)."""
    meta = obj.get("metadata")
    if type(meta) is not dict or meta.get("managedFields") is None:
        return copy_without_nulls(dict(obj))
    return {  # in the request's order
        key: metadata_copy(value) if key == "metadata" else copy_without_nulls(value)
        for key, value in obj.items()
        if value is not None
    }


def metadata_copy(meta: Mapping[str, Any]) -> Obj:
    """A request's metadata copied without nulls, its ``managedFields`` passed on as sent: the
    field manager only reads them, then replaces them (they are never stored as sent), and they
    are often most of an object."""
    entries = meta.get("managedFields")
    out: Obj = copy_without_nulls({k: v for k, v in meta.items() if k != "managedFields"})
    if entries is not None:
        out["managedFields"] = list(entries) if type(entries) is tuple else entries  # JSON has arrays only
    return out


# --- pruning ---------------------------------------------------------------------------------


def prune(obj: Obj, schema: Schema) -> None:
    """Drop, in place, what the schema does not declare; the root keeps its envelope.

    ``metadata`` is ObjectMeta whatever the schema says: it keeps the fields ObjectMeta has.
    Nothing under ``x-kubernetes-preserve-unknown-fields`` is dropped (declared fields below it
    are still pruned).
    """
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for key in [k for k in meta if k not in OBJECT_META_FIELDS]:
            del meta[key]
    properties = schema.get("properties") or {}
    for key in [k for k in obj if k not in _ENVELOPE]:
        if key in properties:
            _prune(obj[key], properties[key])
        elif not schema.get("x-kubernetes-preserve-unknown-fields"):
            del obj[key]


def _prune(node: Any, schema: Schema) -> None:
    if isinstance(node, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        keep = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or extra is True
        embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        for key in list(node):
            if key in properties:
                if type(node[key]) in _CONTAINERS:  # a scalar has nothing to prune
                    _prune(node[key], properties[key])
            elif isinstance(extra, Mapping):
                if type(node[key]) in _CONTAINERS:
                    _prune(node[key], extra)
            elif not keep and not (embedded and key in _ENVELOPE):
                del node[key]
    elif isinstance(node, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for item in node:
                if type(item) in _CONTAINERS:
                    _prune(item, items)


_CONTAINERS: Final = (dict, list)


# --- defaulting --------------------------------------------------------------------------------


def apply_defaults(node: Any, schema: Schema) -> None:
    """Fill in ``default:`` values, in place, wherever the parent object exists (and below them)."""
    if isinstance(node, dict):
        properties = schema.get("properties") or {}
        for key, prop in properties.items():
            if "default" in prop and node.get(key) is None:
                node[key] = deep_copy(prop["default"])
        extra = schema.get("additionalProperties")
        for key, value in node.items():
            if type(value) not in _CONTAINERS:
                continue  # defaults go into objects only
            if key in properties:
                apply_defaults(value, properties[key])
            elif isinstance(extra, Mapping):
                apply_defaults(value, extra)
    elif isinstance(node, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for item in node:
                if type(item) in _CONTAINERS:
                    apply_defaults(item, items)


# --- JSON types ------------------------------------------------------------------------------


_JSON_TYPES: Final = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), "null")


def type_ok(value: Any, wanted: str) -> bool:
    actual = json_type(value)
    if wanted == "number":
        return actual in ("integer", "number")
    if wanted == "integer" and actual == "number":
        return float(value).is_integer()
    return actual == wanted


# --- answers per schema node -------------------------------------------------------------------

T = TypeVar("T")


class PerSchemaNode(Generic[T]):
    """A pure function of a schema node, worked out once per node object: the walks over a
    written object ask it at every field they reach (are there CEL rules below here? lists to
    check?), and the schema nodes are the stored CRD's, never modified. Kept by identity (the
    node alongside, so its id cannot be reused while the answer lives) and bounded: each CRD
    brings its own nodes, and past ``size`` all are forgotten at once (cheap to redo)."""

    def __init__(self, work_out: Callable[[Mapping[str, Any]], T], size: int = 4096) -> None:
        self._work_out = work_out
        self._size = size
        self._known: dict[int, tuple[Mapping[str, Any], T]] = {}

    def __call__(self, schema: Mapping[str, Any]) -> T:
        known = self._known.get(id(schema))
        if known is not None and known[0] is schema:
            return known[1]
        answer = self._work_out(schema)
        if len(self._known) >= self._size:
            self._known.clear()
        self._known[id(schema)] = (schema, answer)
        return answer
