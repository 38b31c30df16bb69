"""EventCorrelator: client-go's Event deduplication, aggregation and spam filter, on a fake clock.

Covers:
- Deduplication: the first Event is created; an identical one (same object, type, reason,
  message) is a PATCH of the first (same name, count 2, new lastTimestamp, firstTimestamp
  kept) and carries the whole Event for a create should the PATCH find it gone; past the
  dedup window a repeat starts a new Event; other objects, reasons or types are not merged.
- Aggregation: nine distinct messages of one object/type/reason pass as they are; the tenth
  within ten minutes becomes "(combined from similar events): <message>"; later distinct
  messages PATCH that one combined Event (count up, latest message); a repeat of a message
  seen before still patches its own Event; after ten quiet minutes aggregation starts over.
- Spam filter: 25 Events about one object pass, the 26th is dropped and counted, one more
  passes per 5 minutes; another object has its own bucket; dropped repeats still count.
- The scenario of the issue, 1,000 objects failing 30 times each within seconds with a new
  message every time: 10 Events per object, 25 writes per object, the rest dropped.
- The input Event is never mutated; state stays bounded by max_keys.
"""

from __future__ import annotations

from typing import Any

from inference_operator.control.events import COMBINED_PREFIX, EventCorrelator
from inference_operator.sim.clock import FakeClock

Obj = dict[str, Any]
_names = iter(range(1_000_000))


def event(
    message: str = "registry unreachable",
    *,
    name: str = "llama",
    uid: str = "u1",
    reason: str = "LoadBalancerFailed",
    type: str = "Warning",
    at: str = "2026-01-01T00:00:00Z",
) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{next(_names):x}", "namespace": "ns"},
        "involvedObject": {
            "apiVersion": "serving.inference-operator.dev/v1",
            "kind": "InferenceService",
            "name": name,
            "namespace": "ns",
            "uid": uid,
        },
        "type": type,
        "reason": reason,
        "message": message,
        "source": {"component": "inference-operator"},
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
    }


def test_the_first_event_is_created_and_an_identical_one_patches_it() -> None:
    correlator = EventCorrelator(FakeClock())
    first = correlator.correlate(event(at="2026-01-01T00:00:00Z"))
    assert first is not None and first.patch is None
    again = correlator.correlate(event(at="2026-01-01T00:00:09Z"))
    assert again is not None
    assert again.patch == {"count": 2, "lastTimestamp": "2026-01-01T00:00:09Z", "message": "registry unreachable"}
    assert again.event["metadata"]["name"] == first.event["metadata"]["name"], "the PATCH targets the first Event"
    assert again.event["firstTimestamp"] == "2026-01-01T00:00:00Z" and again.event["count"] == 2
    third = correlator.correlate(event())
    assert third is not None and third.patch is not None and third.patch["count"] == 3
    assert correlator.deduplicated == 2


def test_a_repeat_after_the_dedup_window_starts_a_new_event() -> None:
    clock = FakeClock()
    correlator = EventCorrelator(clock, dedup_window=3600)
    first = correlator.correlate(event())
    clock.advance(3601)
    later = correlator.correlate(event())
    assert first is not None and later is not None and later.patch is None
    assert later.event["metadata"]["name"] != first.event["metadata"]["name"]


def test_events_of_other_objects_reasons_or_types_are_not_merged() -> None:
    correlator = EventCorrelator(FakeClock())
    results = [
        correlator.correlate(event()),
        correlator.correlate(event(name="mistral", uid="u2")),
        correlator.correlate(event(reason="Failed")),
        correlator.correlate(event(type="Normal")),
    ]
    assert all(r is not None and r.patch is None for r in results)


def test_the_tenth_distinct_message_within_ten_minutes_is_combined() -> None:
    correlator = EventCorrelator(FakeClock())
    for i in range(9):
        result = correlator.correlate(event(f"attempt {i} failed"))
        assert result is not None and result.patch is None and result.event["message"] == f"attempt {i} failed"
    combined = correlator.correlate(event("attempt 9 failed"))
    assert combined is not None and combined.patch is None
    assert combined.event["message"] == COMBINED_PREFIX + "attempt 9 failed"
    more = correlator.correlate(event("attempt 10 failed"))
    assert more is not None and more.patch is not None, "later similar Events bump the one combined Event"
    assert more.event["metadata"]["name"] == combined.event["metadata"]["name"]
    assert more.patch["count"] == 2 and more.patch["message"] == COMBINED_PREFIX + "attempt 10 failed"
    assert correlator.aggregated == 2


def test_a_repeat_of_a_remembered_message_still_patches_its_own_event() -> None:
    correlator = EventCorrelator(FakeClock())
    first = correlator.correlate(event("attempt 0 failed"))
    for i in range(1, 12):
        correlator.correlate(event(f"attempt {i} failed"))
    repeat = correlator.correlate(event("attempt 0 failed"))
    assert first is not None and repeat is not None and repeat.patch is not None
    assert repeat.event["metadata"]["name"] == first.event["metadata"]["name"]
    assert repeat.event["message"] == "attempt 0 failed"


def test_aggregation_starts_over_after_ten_quiet_minutes() -> None:
    clock = FakeClock()
    correlator = EventCorrelator(clock)
    for i in range(9):
        correlator.correlate(event(f"attempt {i} failed"))
    clock.advance(601)
    fresh = correlator.correlate(event("attempt 9 failed"))
    assert fresh is not None and fresh.event["message"] == "attempt 9 failed"


def test_the_spam_filter_lets_25_through_then_one_per_five_minutes() -> None:
    clock = FakeClock()
    correlator = EventCorrelator(clock)
    passed = [correlator.correlate(event(f"message {i}", reason=f"Reason{i}")) for i in range(30)]
    assert sum(r is not None for r in passed) == 25 and passed[25] is None
    assert correlator.spam_dropped == 5
    assert correlator.correlate(event(name="other", uid="u2")) is not None, "each object has its own bucket"
    clock.advance(299)
    assert correlator.correlate(event("still failing", reason="X")) is None
    clock.advance(1)
    assert correlator.correlate(event("still failing", reason="Y")) is not None
    assert correlator.correlate(event("still failing", reason="Z")) is None


def test_dropped_repeats_still_count_in_the_next_patch() -> None:
    clock = FakeClock()
    correlator = EventCorrelator(clock, burst=2, refill_seconds=300)
    correlator.correlate(event())
    correlator.correlate(event())
    assert correlator.correlate(event()) is None
    clock.advance(300)
    result = correlator.correlate(event())
    assert result is not None and result.patch is not None and result.patch["count"] == 4


def test_an_outage_over_a_thousand_objects_creates_ten_events_each_and_then_stops_writing() -> None:
    clock = FakeClock()
    correlator = EventCorrelator(clock)
    creates = patches = 0
    names: set[str] = set()
    for attempt in range(30):
        for n in range(1000):
            result = correlator.correlate(event(f"registry unreachable (attempt {attempt})", name=f"o{n}", uid=f"u{n}"))
            if result is None:
                continue
            names.add(result.event["metadata"]["name"])
            if result.patch is None:
                creates += 1
            else:
                patches += 1
        clock.advance(0.5)
    assert creates == 10 * 1000, "per object: nine messages as they are, then one combined Event"
    assert len(names) == creates, "every PATCH targets an Event that was created"
    assert patches == 15 * 1000, "the combined Event is bumped until the spam filter's burst of 25 is spent"
    assert correlator.spam_dropped == 5 * 1000


def test_the_input_event_is_never_mutated() -> None:
    correlator = EventCorrelator(FakeClock())
    correlator.correlate(event())
    original = event()
    snapshot = repr(original)
    correlator.correlate(original)
    for i in range(12):
        correlator.correlate(event(f"m{i}"))
    assert repr(original) == snapshot


def test_state_is_bounded_by_max_keys() -> None:
    correlator = EventCorrelator(FakeClock(), max_keys=10)
    for n in range(100):
        correlator.correlate(event(name=f"o{n}", uid=f"u{n}"))
    assert correlator.remembered() == 3 * 10
