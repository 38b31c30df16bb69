"""Cached objects found by a label's value: client-go's indexer, for one label.

A reconciler that asks for "the pods of this service" must not walk every pod of the cluster
to find them: on a cluster of 10,000 pods, a pass would read 10,000 objects to use two. Both
backends' caches (the real operator's ``ObjectCache``, the simulator's informers) keep, for a
kind that declares one, an index from ``(namespace, label value)`` to the objects carrying it,
updated with every change they store, as client-go's ``Indexers`` are. The index holds the
cache's own objects: read-only, like everything a cache hands out.
"""

from __future__ import annotations

from inference_operator.core.objects import Obj

__all__ = ["LabelIndex"]


def _at(obj: Obj, label: str) -> tuple[tuple[str, str], str] | None:
    """Where ``obj`` is filed: its namespace and value of ``label``, and its name; None when
    it does not carry the label."""
    meta = obj.get("metadata") or {}
    value = (meta.get("labels") or {}).get(label)
    if value is None:
        return None
    return (str(meta.get("namespace") or ""), str(value)), str(meta.get("name") or "")


class LabelIndex:
    """The objects of one cache carrying ``label``, by namespace and the label's value.

    Not locked: the cache that owns it calls it under its own lock."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._by_value: dict[tuple[str, str], dict[str, Obj]] = {}

    def replaced(self, old: Obj | None, new: Obj | None) -> None:
        """The cache's entry for one name went from ``old`` to ``new`` (None: absent)."""
        if old is not None and (was := _at(old, self.label)) is not None:
            bucket = self._by_value.get(was[0])
            if bucket is not None:
                bucket.pop(was[1], None)
                if not bucket:
                    del self._by_value[was[0]]
        if new is not None and (now := _at(new, self.label)) is not None:
            self._by_value.setdefault(now[0], {})[now[1]] = new

    def clear(self) -> None:
        self._by_value.clear()

    def get(self, namespace: str, value: str) -> list[Obj]:
        """The objects in ``namespace`` whose ``label`` is ``value``, by name."""
        bucket = self._by_value.get((namespace, value))
        return [bucket[name] for name in sorted(bucket)] if bucket else []
