"""Cached objects found by a label's value: client-go's indexer, for one label.

A reconciler that asks for "the pods of this service" must not walk every pod of the cluster
to find them: on a cluster of 10,000 pods, a pass would read 10,000 objects to use two. Both
backends' caches (the real operator's ``ObjectCache``, the simulator's informers) keep, for a
kind that declares one, an index from ``(namespace, label value)`` to what they hold for the
objects carrying it, updated with every change they store, as client-go's ``Indexers`` are.
The simulator's informers file the objects themselves (read-only, like everything a cache
hands out); the real operator's cache files its stored entries and decodes them when read.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from inference_operator.core.objects import Obj

__all__ = ["Filing", "LabelIndex", "filing"]

T = TypeVar("T")

Filing = tuple[tuple[str, str], str]
"""Where an object is filed: (its namespace, its value of the label), and its name."""


def filing(obj: Obj | None, label: str) -> Filing | None:
    """Where ``obj`` is filed under ``label``; None when it is None or does not carry the label."""
    if obj is None:
        return None
    meta = obj.get("metadata") or {}
    value = (meta.get("labels") or {}).get(label)
    if value is None:
        return None
    return (str(meta.get("namespace") or ""), str(value)), str(meta.get("name") or "")


class LabelIndex(Generic[T]):
    """What one cache holds for the objects carrying ``label``, by namespace and the label's value.

    Not locked: the cache that owns it calls it under its own lock."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._by_value: dict[tuple[str, str], dict[str, T]] = {}

    def replaced(self: LabelIndex[Obj], old: Obj | None, new: Obj | None) -> None:
        """The cache's entry for one name went from the object ``old`` to ``new`` (None: absent),
        each filed as itself."""
        self.moved(filing(old, self.label), filing(new, self.label), new)

    def moved(self, was: Filing | None, now: Filing | None, item: T | None) -> None:
        """The cache's entry for one name was filed at ``was`` and is now ``item``, filed at
        ``now`` (None: not filed, as when it is gone or has lost the label)."""
        if was is not None:
            bucket = self._by_value.get(was[0])
            if bucket is not None:
                bucket.pop(was[1], None)
                if not bucket:
                    del self._by_value[was[0]]
        if now is not None and item is not None:
            self._by_value.setdefault(now[0], {})[now[1]] = item

    def clear(self) -> None:
        self._by_value.clear()

    def get(self, namespace: str, value: str) -> list[T]:
        """What is filed in ``namespace`` under the label's ``value``, by name."""
        bucket = self._by_value.get((namespace, value))
        return [bucket[name] for name in sorted(bucket)] if bucket else []
