"""What every model of the InferenceService API is made of: strict models and cross-field rules.

A rule that spans fields is written twice, side by side: as a CEL expression the API server
enforces at admission, and as a Python check the reconciler enforces for objects that never
went through admission (written straight into the fake API server, or created before a rule
existed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["Rule", "StrictModel", "rules_schema"]


@dataclass(frozen=True)
class Rule:
    """A cross-field rule: CEL for the API server, a predicate for the reconciler."""

    cel: str
    message: str
    field_path: str
    check: Callable[[Any], bool]


_CEL_ESCAPES = (("__", "__underscores__"), (".", "__dot__"), ("-", "__dash__"), ("/", "__slash__"))


def cel_property(name: str) -> str:
    """A property name as a CEL rule selects it: kube-apiserver escapes what CEL cannot spell
    (``ephemeral-storage`` is ``self.requests.ephemeral__dash__storage``)."""
    for raw, escaped in _CEL_ESCAPES:
        name = name.replace(raw, escaped)
    return name


def rules_schema(*rules: Rule) -> dict[str, Any]:
    """The ``x-kubernetes-validations`` of a schema node that carries ``rules``."""
    return {
        "x-kubernetes-validations": [
            {"rule": r.cel, "message": r.message, **({"fieldPath": r.field_path} if r.field_path else {})}
            for r in rules
        ]
    }


class StrictModel(BaseModel):
    """Strict: a value of the wrong JSON type is refused, never coerced (``"3"`` is no integer,
    ``"yes"`` no boolean), as the CRD's schema refuses it; see :mod:`.fielderrors`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True, strict=True)
