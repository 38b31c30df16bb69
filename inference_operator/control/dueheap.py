"""The workqueue's waiting room: keys parked until a due time, the earliest first.

A heap of ``(due, seq, key)`` plus, per key, the ``(due, seq)`` of its live entry. Parking a
key that already waits keeps the earlier due time; an entry superseded by an earlier one stays
in the heap and is skipped when it surfaces (and the heap is compacted when such entries
outnumber the live ones), so every operation is O(log n).

Not thread-safe on its own: :class:`~inference_operator.control.workqueue.RateLimitingQueue` calls it
with its lock held.
"""

from __future__ import annotations

import heapq

__all__ = ["DueHeap"]


class DueHeap:
    """Keys with due times (clock seconds); each key at most once, at its earliest due time."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str]] = []
        self._waiting: dict[str, tuple[float, int]] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._waiting)

    def schedule(self, key: str, due: float) -> bool:
        """Park ``key`` until ``due`` unless it already waits for an earlier (or equal) time.
        True when it is now the earliest of all: a sleeper waiting for a later time must wake."""
        live = self._waiting.get(key)
        if live is not None and live[0] <= due:
            return False
        self._seq += 1
        self._waiting[key] = (due, self._seq)
        heapq.heappush(self._heap, (due, self._seq, key))
        if len(self._heap) > 2 * len(self._waiting) + 64:
            self._heap = [entry for entry in self._heap if self._is_live(entry)]
            heapq.heapify(self._heap)
        return self._heap[0][0] >= due

    def pop_due(self, now: float) -> list[str]:
        """The keys due at ``now``, earliest first; they wait no more."""
        heap, due = self._heap, []
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            if self._is_live(entry):  # else superseded by an earlier due time
                del self._waiting[entry[2]]
                due.append(entry[2])
        return due

    def next_due(self) -> float | None:
        """The earliest due time, or None when nothing waits."""
        heap = self._heap
        while heap and not self._is_live(heap[0]):
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def discard(self, key: str) -> bool:
        """``key`` waits no more (its entry is skipped when it surfaces); True if it was waiting."""
        return self._waiting.pop(key, None) is not None

    def earliest(self, limit: int) -> list[tuple[float, str]]:
        """At most ``limit`` waiting ``(due, key)`` pairs, earliest first."""
        return heapq.nsmallest(limit, ((due, key) for key, (due, _) in self._waiting.items()))

    def clear(self) -> None:
        self._heap.clear()
        self._waiting.clear()

    def _is_live(self, entry: tuple[float, int, str]) -> bool:
        live = self._waiting.get(entry[2])
        return live is not None and live[1] == entry[1]
