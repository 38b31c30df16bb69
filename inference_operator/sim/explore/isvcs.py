"""The settled InferenceServices as the invariants read them: parsed once, with their children.

Every invariant walks the same list (each object, its spec parsed or found invalid, whether it
is being deleted) and asks the same questions of it (its Ready condition, whether a child is
its own); the answers live here so that invariants in several modules share them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from inference_operator.api.constants import KIND
from inference_operator.api.models import InferenceService, SpecError
from inference_operator.core.conditions import find
from inference_operator.core.objects import Obj, controller_owner_uid, key_of
from inference_operator.sim.simulation import Simulation

__all__ = ["IsvcView", "isvcs", "ours", "ready_of"]


@dataclass(frozen=True)
class IsvcView:
    """One stored InferenceService: its key, the object, its parsed spec (None: invalid)."""

    key: str
    obj: Obj
    parsed: InferenceService | None
    deleting: bool

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def uid(self) -> str:
        return str(self.obj["metadata"].get("uid", ""))

    @property
    def live(self) -> bool:
        """Exists, not being deleted, spec valid."""
        return self.parsed is not None and not self.deleting


def isvcs(sim: Simulation) -> Iterator[IsvcView]:
    for obj in sim.api.list(KIND):
        meta = obj["metadata"]
        try:
            parsed: InferenceService | None = InferenceService.from_object(obj)
        except SpecError:
            parsed = None
        yield IsvcView(key_of(meta["namespace"], meta["name"]), obj, parsed, bool(meta.get("deletionTimestamp")))


def ours(child: Obj | None, isvc: IsvcView) -> bool:
    """Whether ``child`` exists and ``isvc`` is its controller."""
    return child is not None and controller_owner_uid(child) == isvc.uid


def ready_of(obj: Obj) -> dict[str, Any] | None:
    """The object's Ready condition, if it has one."""
    return find((obj.get("status") or {}).get("conditions") or [], "Ready")
