"""Equal parts of stored objects, stored once: what keeps the simulated cluster's pods small.

A Deployment's pod template is copied into its ReplicaSet's, and that into every pod: in a
simulated cluster most of what is stored is the same containers, volumes and security context,
four times or more per workload (a pod spec is ~8 KiB of Python objects). Stored objects are
never changed in place (the store's invariant, which informer caches rely on already), so when
a new version is stored, each container-valued field (a dict or a list) at the places below is
replaced by an equal one stored before, if there is one. Equal means equal JSON, types and key
order included (their ``marshal`` encodings are the same bytes). Nothing a client sees changes.

The table remembers the last :data:`REMEMBERED` distinct values; what it forgets is only not
shared with later versions.
"""

from __future__ import annotations

import marshal
from typing import Any, Final

from inference_operator.core.objects import Obj

__all__ = ["REMEMBERED", "SharedParts"]

REMEMBERED: Final = 2048

_PLACES: Final[dict[str, tuple[tuple[str, ...], ...]]] = {
    "Pod": (("spec",), ("metadata",)),
    "ReplicaSet": (("spec", "template", "spec"),),
    "Deployment": (("spec", "template", "spec"),),
}
"""Per kind, the maps whose container-valued fields are shared (a pod's containers, volumes,
labels and owner references; a template's pod spec fields)."""

_NEVER: Final = frozenset({"managedFields"})
"""Fields never shared: the field manager reads managedFields by identity."""


class SharedParts:
    """The table of values stored so far, by their encoding."""

    def __init__(self, remembered: int = REMEMBERED) -> None:
        self._known: dict[bytes, Any] = {}
        self._remembered = remembered

    def share(self, kind: str, new: Obj, old: Obj | None) -> None:
        """Replace, in ``new`` (a version about to be stored, whose maps at the places are its
        own where they differ from ``old``'s), each field at the places by an equal stored one."""
        for place in _PLACES.get(kind, ()):
            parent, before = _at(new, place), _at(old, place)
            if parent is None or parent is before:
                continue  # unchanged since the stored version: shared already
            for name, value in parent.items():
                kind_of = type(value)
                if (kind_of is dict or kind_of is list) and name not in _NEVER:
                    if before is not None and before.get(name) is value:
                        continue
                    known = self._known_equal(value)
                    if known is not value:
                        parent[name] = known

    def _known_equal(self, value: Any) -> Any:
        try:
            encoded = marshal.dumps(value, 2)
        except ValueError:  # not plain JSON: left alone
            return value
        known = self._known.get(encoded)
        if known is None:
            if len(self._known) >= self._remembered:
                del self._known[next(iter(self._known))]  # the oldest
            self._known[encoded] = known = value
        return known


def _at(obj: Obj | None, place: tuple[str, ...]) -> dict[str, Any] | None:
    node: Any = obj
    for name in place:
        node = node.get(name) if type(node) is dict else None
    return node if type(node) is dict else None
