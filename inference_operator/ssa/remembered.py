"""Tree walks remembered per distinct subtree: the field-set walks of server-side apply and the
drift check give the same answer for every pod of a template and every Deployment the operator
applies, so what a walk finds below a big map is kept by the map's encoding.

Pure (no I/O); shared by :mod:`.fieldpaths`, :mod:`.structured` and :mod:`.compare`.
"""

from __future__ import annotations

import marshal
import threading
from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar

from inference_operator.ssa.fieldschema import Node

__all__ = ["REMEMBER_FROM", "RememberedWalks", "skips_below"]

T = TypeVar("T")
Path = tuple[tuple[Any, ...], ...]
"""A field path (:data:`.fieldpaths.Path`, spelt here: that module imports this one)."""

REMEMBER_FROM: Final = 8
"""Maps of at least this many fields have what is below them remembered (:class:`RememberedWalks`)."""


def skips_below(skip: frozenset[Path], path: Path) -> bool:
    """Whether a path of ``skip`` lies below ``path``."""
    depth = len(path)
    return any(len(s) > depth and s[:depth] == path for s in skip)


class RememberedWalks(Generic[T]):
    """What a walk finds below a map, relative to it, by the map's encoding (``marshal``, so
    types and key order count) and its schema node: a tree walk done once per distinct
    subtree. Every Deployment the operator applies has the same container, every pod of a
    template the same one. A subtree is remembered the second time it is seen (most maps are
    seen once: an object's own metadata), and only the ``size`` used last; the real
    operator's workers share tables, hence the lock. Values are JSON trees: ``marshal`` would
    encode ``bytes`` and ``bytearray`` alike, which JSON never holds."""

    def __init__(self, walk: Callable[[Any, Node, bool], T], size: int = 256) -> None:
        self._walk = walk
        self._size = size
        self._table: dict[tuple[bytes, bool], tuple[Node, T]] = {}
        self._seen: dict[int, None] = {}  # hashes of the keys seen once, oldest first
        self._lock = threading.Lock()

    def of(self, value: Any, node: Node, flag: bool = False) -> T | None:
        """What the walk finds below ``value``; None when the caller should walk it itself (a
        first sight, a value that is not plain JSON, or one the walk refuses)."""
        try:
            key = (marshal.dumps(value, 2), flag)
        except ValueError:
            return None
        found = self._table.get(key)
        if found is not None and found[0] is node:
            with self._lock:  # the most recently used last: the last to be forgotten
                if self._table.get(key) is found:
                    del self._table[key]
                    self._table[key] = found
            return found[1]
        with self._lock:
            seen = hash(key)
            if seen not in self._seen:
                self._seen[seen] = None
                if len(self._seen) > 4 * self._size:
                    del self._seen[next(iter(self._seen))]
                return None
        try:
            below = self._walk(value, node, flag)
        except ValueError:
            return None  # the caller's own walk raises it, naming the whole path
        with self._lock:
            if len(self._table) >= self._size:
                del self._table[next(iter(self._table))]  # the least recently used
            self._table[key] = (node, below)
        return below
