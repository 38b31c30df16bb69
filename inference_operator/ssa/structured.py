"""The schema-aware tree operations of server-side apply: compare, merge, remove.

kube-apiserver runs every apply and every update through structured-merge-diff (SMD): merging an
applied configuration into the live object, comparing old and new to move ownership, removing
what an applier stopped applying. The results (which list items survive, in which order, which
fields count as added) decide what the simulator stores and records, so these are ports of SMD's
``typed`` package (v6: ``compare.go``, ``merge.go``, ``remove.go``) over plain JSON trees and the
schemas of :mod:`inference_operator.ssa.fieldschema`. :mod:`.managedfields` builds the API server's
field manager on top of them.

``MISSING`` stands for an absent value (Go's nil ``value.Value``); ``None`` is an explicit null.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, cast

from inference_operator.ssa.fieldpaths import (
    FieldSet,
    Path,
    PathElement,
    child_node,
    item_element,
    path_string,
    resolve,
)
from inference_operator.ssa.fieldschema import ListOf, MapOf, Node, Struct, Untyped
from inference_operator.ssa.remembered import REMEMBER_FROM, RememberedWalks, skips_below

__all__ = [
    "MISSING",
    "Comparison",
    "compare",
    "ensure_named_fields_are_members",
    "merge",
    "remove_items",
]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final[Any] = _Missing()


def same(a: Any, b: Any) -> bool:
    """JSON equality, with booleans never equal to numbers (as SMD's ``value.Equals``)."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and isinstance(b, dict | list) == isinstance(a, dict | list)


def _leaf(node: Node) -> bool:
    """A node SMD treats as one value (no descent)."""
    if isinstance(node, ListOf):
        return node.kind == "atomic"
    if isinstance(node, Struct | MapOf):
        return node.atomic
    return True


def _empty(value: Any) -> bool:
    return value is MISSING or value is None or value == {} or value == []


# --- compare ------------------------------------------------------------------------------------------


@dataclass
class Comparison:
    """Paths added, modified and removed going from ``lhs`` to ``rhs`` (SMD ``Comparison``)."""

    added: set[Path]
    modified: set[Path]
    removed: set[Path]


def compare(lhs: Any, rhs: Any, node: Node, *, skip: FieldSet = frozenset()) -> Comparison:
    """What changed from ``lhs`` to ``rhs``; nothing at or below the paths in ``skip`` is reported."""
    result = Comparison(set(), set(), set())
    _compare(lhs, rhs, node, (), result, skip)
    return result


def _compare(lhs: Any, rhs: Any, node: Node, path: Path, out: Comparison, skip: FieldSet = frozenset()) -> None:
    if path in skip:
        return
    if lhs is MISSING:
        _whole(rhs, node, path, out.added, skip)
        return
    if rhs is MISSING:
        _whole(lhs, node, path, out.removed, skip)
        return
    if lhs == rhs:
        return  # equal subtrees (the common case, checked at C speed) have nothing to report
    if lhs is not None and rhs is not None and _container(lhs) != _container(rhs):
        # Different shapes (only possible without a schema): each side is walked on its own.
        out.modified.add(path)
        for value, into in ((lhs, out.removed), (rhs, out.added)):
            shape = resolve(node, value)
            if type(value) is dict and isinstance(shape, Struct | MapOf) and not shape.atomic:
                for name, child in value.items():
                    _whole(child, shape.child(name), (*path, (0, name)), into, skip)
        return
    shape = resolve(node, rhs if rhs is not None else lhs)
    if _leaf(shape) or (_empty(lhs) and _empty(rhs)):
        if not same(lhs, rhs):
            out.modified.add(path)
    elif type(shape) is ListOf:
        _compare_items(lhs, rhs, shape, path, out, skip)
    elif isinstance(shape, Struct | MapOf):
        if path and type(rhs) is dict and len(rhs) >= REMEMBER_FROM and not skips_below(skip, path):
            found = _COMPARED.of((lhs, rhs), shape)
            if found is not None:
                for into, tails in zip((out.added, out.modified, out.removed), found, strict=True):
                    if tails:
                        into.update([path + tail for tail in tails])
                return
        _compare_fields(lhs, rhs, shape, path, out, skip)


def _compare_fields(lhs: Any, rhs: Any, shape: Struct | MapOf, path: Path, out: Comparison, skip: FieldSet) -> None:
    left_map = lhs if type(lhs) is dict else {}
    right_map = rhs if type(rhs) is dict else {}
    for name in {**left_map, **right_map}:
        before, after = left_map.get(name, MISSING), right_map.get(name, MISSING)
        if before is MISSING or after is MISSING:
            _compare(before, after, shape.child(name), (*path, (0, name)), out, skip)
        elif before != after:
            if _container(before) is str and _container(after) is str and (*path, (0, name)) not in skip:
                out.modified.add((*path, (0, name)))  # two different scalars: no need to descend
            else:
                _compare(before, after, shape.child(name), (*path, (0, name)), out, skip)


Compared = tuple[tuple[Path, ...], tuple[Path, ...], tuple[Path, ...]]


def _relative_compare(pair: tuple[Any, dict[str, Any]], node: Node, _flag: bool) -> Compared:
    result = Comparison(set(), set(), set())
    _compare_fields(pair[0], pair[1], cast(Struct | MapOf, node), (), result, frozenset())
    return tuple(result.added), tuple(result.modified), tuple(result.removed)


_COMPARED: Final = RememberedWalks(_relative_compare)
"""What :func:`_compare` finds below a big map, by the map before and after: every pod a
ReplicaSet creates compares the same spec against the zero pod's."""


def _container(value: Any) -> type:
    kind = type(value)
    return kind if kind is dict or kind is list else str


def _whole(value: Any, node: Node, path: Path, into: set[Path], skip: FieldSet) -> None:
    """A subtree only one side has: all of it is added (or removed), down to atomic leaves."""
    if skip and path in skip:
        return
    into.add(path)
    if type(value) is dict and len(value) >= REMEMBER_FROM and not skips_below(skip, path):
        below = _WHOLE.of(value, node)
        if below is not None:
            into.update([path + tail for tail in below])
            return
    _whole_children(value, node, path, into, skip)


def _whole_children(value: Any, node: Node, path: Path, into: set[Path], skip: FieldSet) -> None:
    kind = type(value)
    if kind is dict:
        shape = resolve(node, value)
        if (type(shape) is Struct or type(shape) is MapOf) and not shape.atomic:
            child = shape.child
            for name, item in value.items():
                _whole(item, child(name), (*path, (0, name)), into, skip)
    elif kind is list:
        shape = resolve(node, value)
        if type(shape) is ListOf and shape.kind != "atomic":
            _order, items = _index(value, shape)
            for element, found in items.items():
                if len(found) == 1:
                    _whole(found[0], shape.element, (*path, element), into, skip)
                else:
                    into.add((*path, element))


def _relative_whole(value: dict[str, Any], node: Node, _flag: bool) -> tuple[Path, ...]:
    into: set[Path] = set()
    _whole_children(value, node, (), into, frozenset())
    return tuple(into)


_WHOLE: Final = RememberedWalks(_relative_whole)


def _index(items: Any, node: ListOf) -> tuple[list[PathElement], dict[PathElement, list[Any]]]:
    order: list[PathElement] = []
    values: dict[PathElement, list[Any]] = {}
    for item in items if isinstance(items, list) else ():
        element = item_element(node, item)
        if element not in values:
            order.append(element)
            values[element] = []
        values[element].append(item)
    return order, values


def _compare_items(lhs: Any, rhs: Any, node: ListOf, path: Path, out: Comparison, skip: FieldSet) -> None:
    left_order, left = _index(lhs, node)
    right_order, right = _index(rhs, node)
    for element in [*left_order, *(e for e in right_order if e not in left)]:
        before, after = left.get(element, []), right.get(element, [])
        sub = (*path, element)
        if len(before) <= 1 and len(after) <= 1:
            _compare(before[0] if before else MISSING, after[0] if after else MISSING, node.element, sub, out, skip)
        elif len(before) >= 2 and len(after) >= 2:
            if not same(before, after):
                out.modified.add(sub)
        elif len(before) >= 2:
            if after:
                _compare(MISSING, after[0], node.element, sub, out, skip)
            out.removed.add(sub)
        else:
            if before:
                _compare(before[0], MISSING, node.element, sub, out, skip)
            out.added.add(sub)


# --- merge --------------------------------------------------------------------------------------------


def merge(lhs: Any, rhs: Any, node: Node) -> Any:
    """``rhs`` (an applied configuration) merged into ``lhs`` (the live object); MISSING if empty."""
    shape = resolve(node, rhs if rhs not in (MISSING, None) else (None if lhs is MISSING else lhs))
    if lhs not in (MISSING, None) and rhs not in (MISSING, None) and type(resolve(node, lhs)) is not type(shape):
        return rhs  # different shapes: the applied value wins
    if _leaf(shape) or (_empty(lhs) and _empty(rhs)):
        return rhs if rhs is not MISSING else lhs
    if isinstance(shape, ListOf):
        return _merge_items(lhs, rhs, shape)
    if not isinstance(shape, Struct | MapOf):  # pragma: no cover - resolve() returns nothing else
        return rhs
    left = lhs if isinstance(lhs, dict) else {}
    right = rhs if isinstance(rhs, dict) else {}
    out: dict[str, Any] = {}
    for name in {**left, **right}:
        merged = merge(left.get(name, MISSING), right.get(name, MISSING), shape.child(name))
        if merged is not MISSING:
            out[name] = merged
    return out if out else MISSING


def _merge_items(lhs: Any, rhs: Any, node: ListOf) -> Any:
    right_order: list[PathElement] = []
    right: dict[PathElement, Any] = {}
    for item in rhs if isinstance(rhs, list) else ():
        element = item_element(node, item)
        if element in right:
            raise ValueError(f"duplicate entries for key {_element_text(element)}")
        right_order.append(element)
        right[element] = item
    left_items = lhs if isinstance(lhs, list) else []
    left_order: list[PathElement] = []
    left: dict[PathElement, Any] = {}
    for item in left_items:
        element = item_element(node, item)
        left[element] = None if element in left else item  # duplicated items are not merged
        left_order.append(element)
    shared = [element for element in right_order if element in left]
    next_shared = shared.pop(0) if shared else None
    merged_right: set[PathElement] = set()
    out: list[Any] = []

    def take(value: Any) -> None:
        if value is not MISSING:
            out.append(value)

    li = ri = 0
    while li < len(left_order) or ri < len(right_order):
        if li < len(left_order) and ri < len(right_order):
            element = left_order[li]
            if element == right_order[ri]:
                merged_right.add(element)
                take(merge(left[element], right[element], node.element))
                li += 1
                ri += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if element in right and next_shared is not None and next_shared != element:
                li += 1  # a shared item, but not the one this round is after
                continue
        if li < len(left_order):
            element = left_order[li]
            if element not in right:
                take(merge(left_items[li], MISSING, node.element))
                li += 1
                continue
            if element in merged_right:
                li += 1
        if ri < len(right_order):
            element = right_order[ri]
            merged_right.add(element)
            take(merge(left.get(element, MISSING), right[element], node.element))
            ri += 1
            if next_shared is not None and next_shared == element:
                next_shared = shared.pop(0) if shared else None
    return out if out else MISSING


def _element_text(element: PathElement) -> str:
    return path_string((element,))


# --- remove -------------------------------------------------------------------------------------------

_Trie = dict[PathElement, tuple[bool, "_Trie"]]


def _trie(paths: Iterable[Path]) -> _Trie:
    root: dict[PathElement, Any] = {}
    for path in paths:
        node = root
        for depth, element in enumerate(path):
            member, children = node.get(element, (False, {}))
            node[element] = (member or depth == len(path) - 1, children)
            node = children
    return root


def remove_items(value: Any, paths: FieldSet, node: Node) -> Any:
    """``value`` without the paths in ``paths`` (and what is below them); None if nothing is left."""
    return _remove(value, _trie(paths), node)


def _remove(value: Any, trie: _Trie, node: Node) -> Any:
    shape = resolve(node, value)
    if isinstance(shape, ListOf):
        if not isinstance(value, list) or not value or shape.kind == "atomic":
            return None
        items = []
        for item in value:
            element = item_element(shape, item)
            member, below = trie.get(element, (False, {}))
            if member:
                continue
            items.append(_remove(item, below, shape.element) if below else item)
        return items or None
    if isinstance(shape, Struct | MapOf):
        if not isinstance(value, dict) or not value or shape.atomic:
            return None
        kept = {}
        for name, child in value.items():
            member, below = trie.get((0, name), (False, {}))
            if member:
                continue
            kept[name] = _remove(child, below, shape.child(name)) if below else child
        return kept or None
    return value


def ensure_named_fields_are_members(paths: FieldSet, node: Node) -> FieldSet:
    """``paths`` plus every struct field some path goes through (not map keys): owning
    ``spec.template.spec.nodeSelector`` then also owns ``spec``, ``spec.template``…"""
    out = set(paths)
    for path in paths:
        current = node
        for depth, element in enumerate(path[:-1]):
            if element[0] == 0 and _declares(current, element[1]):
                out.add(path[: depth + 1])
            current = child_node(current, element)
    return frozenset(out)


def _declares(node: Node, name: str) -> bool:
    """Whether ``name`` is a named field of ``node`` (a struct's, not a map key)."""
    if isinstance(node, Struct):
        return node.declares(name)
    return isinstance(node, Untyped) and node.struct_like
