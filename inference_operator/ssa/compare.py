"""Decide whether a live object already has what the operator wants.

The operator writes its children with server-side apply, so "has what it wants" means two
things (:func:`drift`): every field it applies is present with the value it applies (list-map
items matched by key, so a container or an owner reference someone else added is not a
difference), and it owns no field it no longer applies (``managedFields`` says what it owns:
a field it stopped setting — a GPU limit, a nodeSelector key — is a difference until an apply
removes it). Fields only others own are never compared, so there is never a write loop.

Values compare as the API server stores them: it adds defaults (``dnsPolicy``, probe timeouts
…) beside the applied fields, drops empty lists and maps, and rewrites quantities into
canonical form (``0.5`` becomes ``500m``); ``contains(live, desired)`` is true when every
field of ``desired`` is present in ``live`` with an equal value, recursively (quantities:
resources and an emptyDir's ``sizeLimit``). An atomic value
(a nodeSelector, a toleration list) is the applier's as a whole and compares both ways.
"""

from __future__ import annotations

import marshal
import threading
from collections.abc import Iterable
from typing import Any, cast

from inference_operator.api.quantity import parse_quantity
from inference_operator.ssa.fieldpaths import (
    FieldSet,
    Path,
    field_set,
    item_element,
    path_string,
    resolve,
)
from inference_operator.ssa.fieldschema import ListOf, MapOf, Node, Struct, schema_for
from inference_operator.ssa.fieldsv1 import from_fields_v1, known_field_set
from inference_operator.ssa.remembered import REMEMBER_FROM, RememberedWalks


def _is_empty(value: Any) -> bool:
    return value is None or value == {} or value == [] or value == ""


def contains(live: Any, desired: Any, *, quantities: bool = False) -> bool:
    """True when ``live`` has every field of ``desired`` with an equal value.

    Empty desired values match absent live ones (the API server omits them). Under a
    ``resources`` map values compare as quantities, and so does ``sizeLimit``.
    """
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return all(_is_empty(v) for v in desired.values()) and _is_empty(live)
        for k, want in desired.items():
            have = live.get(k)
            if have is None:
                if _is_empty(want):
                    continue
                return False
            if not contains(have, want, quantities=quantities or k in _QUANTITIES):
                return False
        return True
    if isinstance(desired, list):
        if not isinstance(live, list):
            return _is_empty(desired) and _is_empty(live)
        return len(live) == len(desired) and all(
            contains(h, w, quantities=quantities) for h, w in zip(live, desired, strict=True)
        )
    if quantities:
        a, b = parse_quantity(live), parse_quantity(desired)
        if a is not None and b is not None:
            return a == b
    if type(live) is not type(desired) and not (isinstance(live, int | float) and isinstance(desired, int | float)):
        return False
    return bool(live == desired)


NOT_APPLIED = "(fields owned through an update, not an apply)"


def drift(live: dict[str, Any], desired: dict[str, Any], *, kind: str, manager: str) -> list[str]:
    """Why ``desired`` must be applied again to ``live`` (empty: it need not be).

    The paths, as the API server prints them, whose value differs from what ``manager``
    applies, then those ``manager`` owns and no longer applies. A live object ``manager`` has
    never applied to (made by an older version of the operator) drifts as a whole.
    """
    out: list[str] = []
    _diff(live, desired, schema_for(kind), (), out, quantities=False)
    owned = _applied_fields_v1(live, manager)
    if owned is None:
        return [*out, NOT_APPLIED]
    known = known_field_set(owned)
    if known is not None:  # the simulator's cache shares the API server's entries: no parse, no key
        return [*out, *_dropped_from(kind, desired, known)]
    try:
        key = (kind, marshal.dumps(desired, 2), marshal.dumps(owned, 2))
    except ValueError:  # not plain JSON (an enum member, say): worked out every time
        return [*out, *_dropped(kind, desired, owned)]
    found = _DROPPED.get(key)
    if found is None:
        found = _dropped(kind, desired, owned)
        with _DROPPED_LOCK:  # the real operator's workers share it
            _DROPPED[key] = found
            while len(_DROPPED) > _DROPPED_SIZE:
                del _DROPPED[next(iter(_DROPPED))]  # the oldest
    return [*out, *found]


_DROPPED: dict[tuple[str, bytes, bytes], tuple[str, ...]] = {}
""":func:`_dropped` by (kind, desired object, owned fieldsV1), both as marshal bytes: every pass
of a converged object asks again, and parsing the entry and walking the desired object for its
field set were most of a drift check. Not for an entry :func:`known_field_set` knows (the
simulator's, whose informers share the API server's encoding): its set needs no parse, and a
key per object would miss anyway once there are more objects than entries."""
_DROPPED_SIZE = 512
_DROPPED_LOCK = threading.Lock()


def _applied_fields_v1(live: dict[str, Any], manager: str) -> Any:
    """The ``fieldsV1`` of ``manager``'s apply entry on ``live`` (None: it has none)."""
    meta = live.get("metadata")
    entries = meta.get("managedFields") if isinstance(meta, dict) else None
    for entry in entries or ():
        if entry.get("manager") == manager and entry.get("operation") == "Apply" and entry.get("subresource", "") == "":
            return entry.get("fieldsV1") or {}
    return None


def _dropped(kind: str, desired: dict[str, Any], owned_fields_v1: Any) -> tuple[str, ...]:
    """The fields owned (per ``owned_fields_v1``) that ``desired`` no longer sets, as printed."""
    return _dropped_from(kind, desired, from_fields_v1(owned_fields_v1))


def _dropped_from(kind: str, desired: dict[str, Any], owned: FieldSet) -> tuple[str, ...]:
    """:func:`_dropped` of the field set ``owned``."""
    want = field_set(desired, kind)
    dropped = owned - want
    if not dropped:
        return ()
    leaves = sorted(_leaves(want))
    return tuple(path_string(path) for path in sorted(dropped) if not _covered(path, want, leaves))


def _diff(live: Any, desired: Any, node: Node, path: Path, out: list[str], *, quantities: bool) -> None:
    """Append the paths under ``path`` where ``live`` lacks a value of ``desired``: one walk of
    the applied configuration, list-map items matched by key, atomic values compared whole."""
    node = resolve(node, desired)
    if isinstance(node, ListOf) and node.kind == "map" and isinstance(desired, list):
        by_element: dict[Any, list[Any]] = {}
        for item in live if isinstance(live, list) else []:
            if (element := _element_of(node, item)) is not None:
                by_element.setdefault(element, []).append(item)
        for item in desired:
            element = _element_of(node, item)
            found = by_element.get(element, [])
            sub = (*path, element)
            if len(found) != 1:
                out.append(path_string(sub))
            else:
                _diff(found[0], item, node.element, sub, out, quantities=quantities)
        return
    if isinstance(node, Struct | MapOf) and not node.atomic and isinstance(desired, dict):
        if len(desired) >= REMEMBER_FROM and path:
            below = _DIFFS.of((live, desired), node, quantities)
            if below is not None:
                if below:
                    shown = path_string(path)
                    out.extend(shown + rest for rest in below)
                return
        _diff_fields(live, desired, node, path, out, quantities=quantities)
        return
    if isinstance(desired, dict | list):
        # An atomic value is the applier's as a whole: a key or item it no longer has must go
        # too, so compare both ways (the builders set no field the server defaults in one).
        same = contains(live, desired, quantities=quantities) and contains(desired, live, quantities=quantities)
    else:
        same = contains(live, desired, quantities=quantities)
    if not same:
        out.append(path_string(path))


def _diff_fields(
    live: Any, desired: dict[str, Any], node: Struct | MapOf, path: Path, out: list[str], *, quantities: bool
) -> None:
    have_all = live if isinstance(live, dict) else {}
    for name, want in desired.items():
        sub = (*path, (0, name))
        if name not in have_all or have_all[name] is None:
            if not _is_empty(want):
                out.append(path_string(sub))
            continue
        _diff(have_all[name], want, node.child(name), sub, out, quantities=quantities or name in _QUANTITIES)


def _relative_diff(pair: tuple[Any, dict[str, Any]], node: Node, quantities: bool) -> tuple[str, ...]:
    out: list[str] = []
    _diff_fields(pair[0], pair[1], cast(Struct | MapOf, node), (), out, quantities=quantities)
    return tuple(out)


_DIFFS: RememberedWalks[tuple[str, ...]] = RememberedWalks(_relative_diff)
"""What :func:`_diff` finds below a big map (a container), by the live and the desired map:
every pass over a converged Deployment compares the same container again."""

_QUANTITIES = ("requests", "limits", "sizeLimit")
"""Maps of quantities (a container's resources) and quantities (an emptyDir's size limit)."""


def _leaves(fields: FieldSet) -> Iterable[Path]:
    """The paths of ``fields`` that no other path extends: where values live."""
    parents = {path[:n] for path in fields for n in range(1, len(path))}
    return (path for path in fields if path not in parents)


def _covered(path: Path, want: FieldSet, leaves: list[Path]) -> bool:
    """Whether ``path`` is below a value still applied, or above one: a map or list the server
    tracks key by key while we apply it whole (or the reverse) is not a field we dropped."""
    return any(path[: len(leaf)] == leaf for leaf in leaves) or any(w[: len(path)] == path for w in want)


def _element_of(node: ListOf, item: Any) -> Any:
    try:
        return item_element(node, item)
    except ValueError:
        return None


__all__ = ["NOT_APPLIED", "contains", "drift", "parse_quantity"]
