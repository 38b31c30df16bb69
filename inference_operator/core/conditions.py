"""Status conditions with Kubernetes semantics, like apimachinery's ``meta.SetStatusCondition``.

``lastTransitionTime`` moves only when a condition's ``status`` flips; a new reason or message
alone keeps the old time. That keeps a converged object's status byte-for-byte stable, which is
what makes "zero writes on a converged pass" possible. A message is cut to the CRD's maxLength
(:data:`MAX_CONDITION_MESSAGE`), the same way every time, so a huge error cannot make status
unwritable and an unchanged one still compares equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from inference_operator.api.constants import MAX_CONDITION_MESSAGE
from inference_operator.core.text import cut

Status = Literal["True", "False", "Unknown"]


@dataclass(frozen=True)
class Cond:
    """A condition as computed by a reconcile pass, before timestamps are settled."""

    type: str
    status: Status
    reason: str
    message: str

    @property
    def is_true(self) -> bool:
        return self.status == "True"


def find(conditions: Iterable[dict[str, Any]], type_: str) -> dict[str, Any] | None:
    for c in conditions:
        if c.get("type") == type_:
            return c
    return None


def is_true(conditions: Iterable[dict[str, Any]], type_: str) -> bool:
    c = find(conditions, type_)
    return c is not None and c.get("status") == "True"


def merge(
    previous: Sequence[dict[str, Any]],
    computed: Sequence[Cond],
    *,
    generation: int,
    now: str,
) -> list[dict[str, Any]]:
    """The new conditions list: ``computed`` in order, keeping each previous
    ``lastTransitionTime`` whose status did not flip."""
    out = []
    for cond in computed:
        old = find(previous, cond.type)
        keep = old is not None and old.get("status") == cond.status and old.get("lastTransitionTime")
        out.append(
            {
                "type": cond.type,
                "status": cond.status,
                "reason": cond.reason,
                "message": cut(cond.message, MAX_CONDITION_MESSAGE),
                "observedGeneration": generation,
                "lastTransitionTime": old["lastTransitionTime"] if keep and old else now,
            }
        )
    return out


def update(
    previous: Sequence[dict[str, Any]],
    computed: Sequence[Cond],
    *,
    generation: int,
    now: str,
) -> list[dict[str, Any]]:
    """Set ``computed`` conditions (first, in order) and keep every other previous one as is."""
    types = {c.type for c in computed}
    return merge(previous, computed, generation=generation, now=now) + [
        c for c in previous if c.get("type") not in types
    ]
