"""Kubernetes quantities (``resource.Quantity``): ``"500m"``, ``"16Gi"``, ``2``, as numbers.

The API's own notation for amounts of cpu, memory, GPUs and pods; read by the server-side-apply
comparison (the server stores quantities in canonical form), the scheduling predicates and the
simulated API server's validation.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ["parse_quantity"]

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
