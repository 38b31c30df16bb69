"""The workqueue's waiting room (DueHeap) on its own.

Covers: a key waits once, at its earliest due time (a later one is ignored, an earlier one
supersedes); due keys come out earliest first and leave; superseded entries never come out
and are skipped by next_due; rescheduling one key over and over keeps the heap bounded
(compaction) without losing any live key; earliest() lists at most ``limit`` pairs in order;
a discarded key waits no more (and can wait again); clear() empties it.
"""

from __future__ import annotations

from inference_operator.control.dueheap import DueHeap


def test_a_key_waits_once_at_its_earliest_due_time() -> None:
    heap = DueHeap()
    assert heap.schedule("a", 10.0) is True  # the earliest of all
    assert heap.schedule("a", 20.0) is False  # later: ignored
    assert heap.schedule("b", 15.0) is False  # not the earliest
    assert heap.schedule("a", 5.0) is True  # earlier: supersedes
    assert len(heap) == 2 and heap.next_due() == 5.0
    assert heap.pop_due(9.0) == ["a"]
    assert heap.pop_due(14.0) == [] and heap.next_due() == 15.0  # a's superseded 10 s entry is gone
    assert heap.pop_due(100.0) == ["b"] and heap.next_due() is None and len(heap) == 0


def test_due_keys_come_out_earliest_first() -> None:
    heap = DueHeap()
    for key, due in (("c", 3.0), ("a", 1.0), ("b", 2.0), ("d", 9.0)):
        heap.schedule(key, due)
    assert heap.earliest(2) == [(1.0, "a"), (2.0, "b")]
    assert heap.pop_due(3.0) == ["a", "b", "c"]
    assert heap.earliest(10) == [(9.0, "d")]


def test_rescheduling_again_and_again_keeps_the_heap_bounded_and_every_key() -> None:
    heap = DueHeap()
    heap.schedule("steady", 1_000_000.0)
    for i in range(10_000):
        heap.schedule("busy", 500_000.0 - i)  # always earlier: supersedes the last entry
    assert len(heap._heap) <= 2 * len(heap) + 65  # compacted, not 10,001 entries
    assert heap.pop_due(1_000_000.0) == ["busy", "steady"]


def test_a_discarded_key_waits_no_more_and_can_wait_again() -> None:
    heap = DueHeap()
    heap.schedule("a", 1.0)
    heap.schedule("b", 2.0)
    assert heap.discard("a") is True and heap.discard("a") is False
    assert len(heap) == 1 and heap.next_due() == 2.0
    heap.schedule("a", 3.0)  # a fresh wait, not the discarded one
    assert heap.pop_due(10.0) == ["b", "a"]


def test_clear_drops_everything() -> None:
    heap = DueHeap()
    heap.schedule("a", 1.0)
    heap.clear()
    assert len(heap) == 0 and heap.next_due() is None and heap.pop_due(10.0) == []
