"""Kubernetes' CEL quantity library, as the fake API server's CEL needs it for CRD rules.

kube-apiserver gives CRD validation rules ``isQuantity(string)``, ``quantity(string)`` and the
Quantity methods ``isGreaterThan``, ``isLessThan`` and ``compareTo`` (``k8s.io/apiserver``'s
``pkg/cel/library/quantity.go``): a string is a quantity when ``resource.ParseQuantity``
accepts it, the Kubernetes grammar without surrounding spaces; comparisons are exact. Both CEL
paths use this module: celpy's functions (``cel.py``) and the compiled fast path (``celfast.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from inference_operator.api.quantity import parse_quantity
from inference_operator.api.resources import QUANTITY_PATTERN

__all__ = ["Quantity", "is_quantity", "quantity"]

_GRAMMAR = re.compile(QUANTITY_PATTERN.replace(r"^(\+)?", r"^[+-]?"))


@dataclass(frozen=True)
class Quantity:
    """A parsed quantity; ordered by its exact value."""

    value: Decimal

    def compare_to(self, other: Quantity) -> int:
        return (self.value > other.value) - (self.value < other.value)


def is_quantity(text: str) -> bool:
    return bool(_GRAMMAR.match(text)) and parse_quantity(text) is not None


def quantity(text: str) -> Quantity:
    """The quantity ``text`` names; ValueError as kube-apiserver's ``quantity()`` errors."""
    number = parse_quantity(text) if is_quantity(text) else None
    if number is None:
        raise ValueError(f"quantities must match the regular expression '{QUANTITY_PATTERN}'")
    return Quantity(number)
