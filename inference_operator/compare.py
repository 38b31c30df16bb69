"""Decide whether a live object already has what the operator wants.

The operator writes its children with server-side apply, so "has what it wants" means two
things (:func:`drift`): every field it applies is present with the value it applies (list-map
items matched by key, so a container or an owner reference someone else added is not a
difference), and it owns no field it no longer applies (``managedFields`` says what it owns:
a field it stopped setting — a GPU limit, a nodeSelector key — is a difference until an apply
removes it). Fields only others own are never compared, so there is never a write loop.

Rule 2 of reconcile: compare only the fields the operator sets. The API server adds defaults
(``dnsPolicy``, ``clusterIP``, probe timeouts …), drops empty lists and maps, and rewrites
quantities into canonical form (``0.5`` becomes ``500m``); comparing whole objects would see a
difference on every pass and patch forever. ``contains(live, desired)`` is true when every field
of ``desired`` is present in ``live`` with an equal value, recursively.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

from .fieldpaths import FieldSet, Path, field_set, item_element, managed_fields_of, path_string, resolve
from .fieldschema import ListOf, MapOf, Node, Struct, schema_for

_SUFFIX = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}


def parse_quantity(value: Any) -> Decimal | None:
    """The numeric value of a Kubernetes quantity (``"500m"`` → 0.5), or None if it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    for suffix in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"):
        if text.endswith(suffix) and not text.endswith("e" + suffix):
            number = text[: -len(suffix)]
            try:
                return Decimal(number) * _SUFFIX[suffix]
            except InvalidOperation:
                return None
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


def _is_empty(value: Any) -> bool:
    return value is None or value == {} or value == [] or value == ""


def differences(live: Any, desired: Any, path: str = "") -> list[str]:
    """The field paths where ``live`` lacks what ``desired`` asks for (for logs and Events)."""
    if isinstance(desired, dict) and isinstance(live, dict):
        out: list[str] = []
        for k, want in desired.items():
            sub = f"{path}.{k}" if path else k
            have = live.get(k)
            if have is None and _is_empty(want):
                continue
            if not contains(have, want, quantities=k in ("requests", "limits") or "resources" in path):
                out.extend(differences(have, want, sub) or [sub])
        return out
    if isinstance(desired, list) and isinstance(live, list) and len(live) == len(desired):
        out = []
        for i, (have, want) in enumerate(zip(live, desired, strict=True)):
            if not contains(have, want, quantities="resources" in path):
                out.extend(differences(have, want, f"{path}[{i}]") or [f"{path}[{i}]"])
        return out
    return [] if contains(live, desired) else [path]


def contains(live: Any, desired: Any, *, quantities: bool = False) -> bool:
    """True when ``live`` has every field of ``desired`` with an equal value.

    Empty desired values match absent live ones (the API server omits them). Under a
    ``resources`` map values compare as quantities.
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
            if not contains(have, want, quantities=quantities or k in ("requests", "limits")):
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
    want = field_set(desired, kind)
    leaves = sorted(_leaves(want))
    out = [path_string(path) for path in leaves if not _same_at(live, desired, path, kind)]
    owned = managed_fields_of(live, manager, "Apply")
    if owned is None:
        return [*out, NOT_APPLIED]
    out.extend(path_string(path) for path in sorted(owned - want) if not _covered(path, want, leaves))
    return out


def _leaves(fields: FieldSet) -> Iterable[Path]:
    """The paths of ``fields`` that no other path extends: where values live."""
    parents = {path[:n] for path in fields for n in range(1, len(path))}
    return (path for path in fields if path not in parents)


def _covered(path: Path, want: FieldSet, leaves: list[Path]) -> bool:
    """Whether ``path`` is below a value still applied, or above one: a map or list the server
    tracks key by key while we apply it whole (or the reverse) is not a field we dropped."""
    return any(path[: len(leaf)] == leaf for leaf in leaves) or any(w[: len(path)] == path for w in want)


_MISSING = object()


def _value_at(obj: Any, path: Path, node: Node) -> Any:
    """The value at ``path`` (list-map items found by their keys), or ``_MISSING``."""
    value = obj
    for element in path:
        node = resolve(node, value)
        if element[0] == 0:  # a field
            if not isinstance(value, dict) or element[1] not in value:
                return _MISSING
            value = value[element[1]]
            node = node.child(element[1]) if isinstance(node, Struct | MapOf) else node
        elif isinstance(value, list) and isinstance(node, ListOf):
            found = [item for item in value if _element_of(node, item) == element]
            if len(found) != 1:
                return _MISSING
            value, node = found[0], node.element
        else:
            return _MISSING
    return value


def _element_of(node: ListOf, item: Any) -> Any:
    try:
        return item_element(node, item)
    except ValueError:
        return None


def _same_at(live: Any, desired: Any, path: Path, kind: str) -> bool:
    root: Node = schema_for(kind)
    want = _value_at(desired, path, root)
    have = _value_at(live, path, root)
    if have is _MISSING:
        return want is _MISSING or _is_empty(want)
    quantities = any(e[0] == 0 and e[1] in ("requests", "limits") for e in path)
    return contains(have, want, quantities=quantities)


__all__ = ["NOT_APPLIED", "contains", "differences", "drift", "parse_quantity"]
