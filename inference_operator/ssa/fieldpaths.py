"""Field paths and field sets, as server-side apply computes and records them.

With server-side apply the API server remembers which fields each manager set (``managedFields``),
so a field a manager stops applying can be removed while fields other actors own stay. The
operator needs that bookkeeping to compare only what it owns; the simulator needs it to behave
like kube-apiserver. Both import this module: it is pure (no I/O) and knows nothing of either.

A *path* is a tuple of path elements: a field name, a list-map item's key (``k:{"name":"server"}``),
a set item's value (``v:"x"``) or an index. A *field set* is a frozenset of paths, exactly the
members structured-merge-diff (SMD) inserts: every leaf, every list item (its ``.`` entry when it
has children), every map key, empty objects, and atomic lists, maps and structs as leaves.
:mod:`.fieldsv1` converts field sets to and from the ``fieldsV1`` JSON the
server writes, key for key and in the server's order.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, cast

from inference_operator.ssa.fieldschema import (
    DEDUCED,
    SCALAR,
    ListOf,
    MapOf,
    Node,
    Struct,
    Untyped,
    reset_paths,
    schema_for,
)
from inference_operator.ssa.remembered import REMEMBER_FROM, RememberedWalks, skips_below

__all__ = [
    "FieldSet",
    "Path",
    "PathElement",
    "field_element",
    "field_set",
    "index_element",
    "is_atomic",
    "item_element",
    "key_element",
    "list_map_keys",
    "node_at",
    "path_string",
    "raw_field_set",
    "reset_fields",
    "resolve",
    "shared_field_set",
    "strip_server_fields",
    "value_element",
    "without_prefixes",
]

PathElement = tuple[Any, ...]
"""``(0, name)`` a field; ``(1, ((key, rank, value), …))`` a list-map item; ``(2, rank, value)`` a
set item; ``(3, index)`` an index. Tuples sort in the order SMD sorts path elements."""
Path = tuple[PathElement, ...]
FieldSet = frozenset[Path]

_FIELD, _KEY, _VALUE, _INDEX = 0, 1, 2, 3


def field_element(name: str) -> PathElement:
    return (_FIELD, name)


def key_element(keys: Mapping[str, Any]) -> PathElement:
    if len(keys) == 1:
        ((name, value),) = keys.items()
        return (_KEY, ((name, _RANKS.get(type(value), 5), value),))
    return (_KEY, tuple((name, _RANKS.get(type(value), 5), value) for name, value in sorted(keys.items())))


def value_element(value: Any) -> PathElement:
    return (_VALUE, _RANKS.get(type(value), 5), value)


def index_element(index: int) -> PathElement:
    return (_INDEX, index)


_RANKS: Final[dict[type, int]] = {int: 0, float: 0, str: 1, bool: 2, list: 3, dict: 4}
"""SMD's order of value types: numbers, strings, booleans, lists, maps, then null."""


# --- schema lookups ---------------------------------------------------------------------------------


def resolve(node: Node, value: Any) -> Node:
    """The node as it applies to ``value``: untyped nodes take the value's shape; a value of the
    wrong shape is a leaf (validation, not merging, is where that is caught)."""
    if isinstance(node, Untyped):
        if type(value) is dict:
            return _UNTYPED_STRUCT_NODE if node.struct_like else _DEDUCED_MAP
        if type(value) is list:
            return _UNTYPED_LIST
        return SCALAR
    kind = type(node)
    if value is None:
        return node
    if kind is Struct or kind is MapOf:
        return node if type(value) is dict else SCALAR
    if kind is ListOf:
        return node if type(value) is list else SCALAR
    return node


_UNTYPED_STRUCT_NODE: Final = Struct()
_DEDUCED_MAP: Final = MapOf(DEDUCED)
_UNTYPED_LIST: Final = ListOf(DEDUCED)


def child_node(node: Node, element: PathElement) -> Node:
    """The node one path element below ``node``."""
    if element[0] == _FIELD:
        if isinstance(node, Struct | MapOf):
            return node.child(element[1])
        if isinstance(node, Untyped):
            return node
        return SCALAR
    if isinstance(node, ListOf):
        return node.element
    return node if isinstance(node, Untyped) else SCALAR


def node_at(kind: str, path: Sequence[Any]) -> Node:
    """The schema node of ``kind`` at ``path``.

    ``path`` holds path elements or plain values: a ``str`` is a field name, anything else (an
    int, a key dict, a path element) steps into a list's items, e.g.
    ``("spec", "template", "spec", "containers", 0, "ports")``.
    """
    node: Node = schema_for(kind)
    for step in path:
        element = field_element(step) if isinstance(step, str) else (_INDEX, 0)
        node = child_node(node, element)
    return node


def list_map_keys(kind: str, path: Sequence[Any]) -> tuple[str, ...] | None:
    """The keys identifying the items of the ``listType=map`` list at ``path``, else None."""
    node = node_at(kind, path)
    if isinstance(node, ListOf) and node.kind == "map":
        return node.keys
    return None


def is_atomic(kind: str, path: Sequence[Any], value: Any = None) -> bool:
    """Whether the value at ``path`` is owned, merged and compared as one value.

    True for atomic lists, atomic maps and structs, and scalars; False for sets, list-maps and
    granular maps and structs. Where the schema says nothing, ``value`` decides (lists atomic).
    """
    node = resolve(node_at(kind, path), value)
    if isinstance(node, ListOf):
        return node.kind == "atomic"
    if isinstance(node, Struct | MapOf):
        return node.atomic
    return not isinstance(node, Untyped) or not isinstance(value, dict)


def item_element(node: ListOf, item: Any) -> PathElement:
    """The path element of ``item`` in a set or list-map; :class:`ValueError` if it has none.

    A list-map item's missing key fields take their schema defaults (``protocol: TCP``).
    """
    if node.kind == "map":
        if not isinstance(item, dict):
            raise ValueError("associative list with keys may not have non-map elements")
        keys = {}
        for name in node.keys:
            if name in item:
                keys[name] = item[name]
            elif name in node.key_defaults:
                keys[name] = node.key_defaults[name]
        if not keys:
            raise ValueError(
                f"associative list with keys has an element that omits all key fields {list(node.keys)!r} "
                "(and doesn't have default values for any key fields)"
            )
        return key_element(keys)
    if isinstance(item, dict | list) or item is None:
        raise ValueError("associative list without keys has an element that's not a scalar")
    return value_element(item)


# --- field sets ----------------------------------------------------------------------------------------


def raw_field_set(value: Any, node: Node, *, skip: FieldSet = frozenset(), strict: bool = False) -> FieldSet:
    """Every path SMD's ``ToFieldSet`` inserts for ``value``, except at or below ``skip``.

    ``strict``: a set or list-map holding an item twice is a :class:`ValueError` (an applied
    configuration may not), instead of the item's path standing for all its copies.
    """
    out: set[Path] = set()
    _collect(value, node, (), out, skip, strict)
    return frozenset(out)


PATHS_REMEMBERED: Final = 1 << 16
"""How many distinct paths :func:`shared_field_set` remembers before it starts afresh."""

_KNOWN_PATHS: dict[Path, Path] = {}


def shared_field_set(paths: Iterable[Path]) -> FieldSet:
    """``paths`` as a field set whose paths are the ones earlier field sets hold, where equal.

    The field sets the API server records (every stored object's managedFields entries) are
    mostly the same paths for every object of a kind, each built afresh by a tree walk: a
    Deployment's or a Pod's ~100 paths were ~100 tuples of tuples each. Shared, a field set
    costs its table only. The table forgets everything when it holds ``PATHS_REMEMBERED``
    paths; what it forgot is only not shared with later sets."""
    if len(_KNOWN_PATHS) >= PATHS_REMEMBERED:
        _KNOWN_PATHS.clear()
    known = _KNOWN_PATHS.setdefault
    return frozenset([known(path, path) for path in paths])


def _collect(value: Any, node: Node, path: Path, out: set[Path], skip: FieldSet, strict: bool) -> None:
    node = resolve(node, value)
    if type(node) is ListOf:
        if node.kind == "atomic":
            out.add(path)
        elif type(value) is list:
            _collect_items(value, node, path, out, skip, strict)
    elif type(node) is Struct or type(node) is MapOf:
        if node.atomic:
            out.add(path)
        elif type(value) is dict:
            if len(value) >= REMEMBER_FROM and not skips_below(skip, path):
                below = _FIELDS_BELOW.of(value, node, strict)
                if below is not None:
                    out.update([path + tail for tail in below])
                    return
            _collect_fields(value, node, path, out, skip, strict)
    elif path:
        out.add(path)


def _collect_fields(
    value: dict[str, Any], node: Struct | MapOf, path: Path, out: set[Path], skip: FieldSet, strict: bool
) -> None:
    for name, child in value.items():
        sub = (*path, (_FIELD, name))
        if sub in skip:
            continue
        _collect(child, node.child(name), sub, out, skip, strict)
        if child is None or child == {} or not node.declares(name):
            out.add(sub)


def _relative_fields(value: dict[str, Any], node: Node, strict: bool) -> tuple[Path, ...]:
    out: set[Path] = set()
    _collect_fields(value, cast(Struct | MapOf, node), (), out, frozenset(), strict)
    return tuple(out)


_FIELDS_BELOW: Final = RememberedWalks(_relative_fields)


def _collect_items(items: list[Any], node: ListOf, path: Path, out: set[Path], skip: FieldSet, strict: bool) -> None:
    elements = [item_element(node, item) for item in items]
    seen: set[PathElement] = set()
    duplicates: set[PathElement] = set()
    for element in elements:
        (duplicates if element in seen else seen).add(element)
    if duplicates and strict:
        first = next(e for e in elements if e in duplicates)
        raise ValueError(f"{path_string(path)}: duplicate entries for key {path_string((first,))}")
    for element in duplicates:
        out.add((*path, element))
    for element, item in zip(elements, items, strict=True):
        if element not in duplicates:
            sub = (*path, element)
            _collect(item, node.element, sub, out, skip, strict)
            out.add(sub)


STRIPPED: Final[FieldSet] = frozenset(
    (field_element(name),) for name in ("apiVersion", "kind", "metadata")
) | frozenset(
    (field_element("metadata"), field_element(name))
    for name in (
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    )
)
"""What the API server never records as owned (its ``stripMetaManager``)."""


@functools.cache
def reset_fields(kind: str, subresource: str = "") -> FieldSet:
    """The fields a write to ``subresource`` cannot set (the registry strategy's reset fields):
    the main resource resets ``status``; ``/status`` resets ``spec`` and, per kind, some
    metadata (custom resources: all of it)."""
    return frozenset(tuple(field_element(name) for name in path) for path in reset_paths(kind, subresource))


def without_prefixes(fields: Iterable[Path], prefixes: FieldSet) -> FieldSet:
    """``fields`` minus every path at or below one of ``prefixes`` (SMD's ``RecursiveDifference``)."""
    if not prefixes:
        return frozenset(fields)
    longest = max(len(p) for p in prefixes)
    return frozenset(p for p in fields if not any(p[:n] in prefixes for n in range(1, min(longest, len(p)) + 1)))


def strip_server_fields(fields: FieldSet) -> FieldSet:
    return fields - STRIPPED


def field_set(obj: Mapping[str, Any], kind: str, *, subresource: str = "") -> FieldSet:
    """The fields an applier of ``obj`` owns: SMD's field set minus what the API server strips
    (type and identity metadata, server-set metadata) and the reset fields of ``subresource``."""
    return strip_server_fields(raw_field_set(dict(obj), schema_for(kind), skip=reset_fields(kind, subresource)))


def path_string(path: Path) -> str:
    """A path as the API server prints it: ``.spec.template.spec.containers[name="server"].image``."""
    parts = []
    for element in path:
        tag = element[0]
        if tag == _FIELD:
            parts.append(f".{element[1]}")
        elif tag == _KEY:
            parts.append("[" + ",".join(f"{name}={_go_string(value)}" for name, _, value in element[1]) + "]")
        elif tag == _VALUE:
            parts.append(f"[={_go_string(element[2])}]")
        else:
            parts.append(f"[{element[1]}]")
    return "".join(parts)


def _go_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    return str(value)
