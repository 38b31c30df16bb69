"""Decide whether a live object already has what the operator wants.

Rule 2 of reconcile: compare only the fields the operator sets. The API server adds defaults
(``dnsPolicy``, ``clusterIP``, probe timeouts …), drops empty lists and maps, and rewrites
quantities into canonical form (``0.5`` becomes ``500m``); comparing whole objects would see a
difference on every pass and patch forever. ``contains(live, desired)`` is true when every field
of ``desired`` is present in ``live`` with an equal value, recursively.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

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
