"""Tests for RateLimitingQueue: client-go workqueue semantics on an injected clock.

Covers:
- Dedup: a key added many times is handed out once; distinct keys come out FIFO.
- Processing: a key being processed is never handed out again; added meanwhile, it is
  re-queued by ``done``; ``done`` of an unknown key is ignored.
- Delays: ``add_after`` is not ready before its due time and ready at it; non-positive delays
  add now; on duplicates the earliest due time wins; ``next_due``; a due key that is still
  queued is not queued twice; waiting keys do not count as ready; ``cancel_after`` takes a
  waiting key out (it never fires) and leaves a queued key alone.
- Backoff: 5 ms doubling, capped at 1000 s; per key; ``forget`` resets it; ``num_requeues``;
  huge failure counts stay capped; ``adds_total`` / ``retries_total`` counters.
- Overall rate limit (the token bucket shared by all keys, 10 qps / burst 100 by default): a
  burst passes at once, then retries come at the bucket's rate; it refills only up to the
  burst; custom qps/burst; per-key backoff still wins when longer; every retry takes a token
  (even of a key already waiting) and ``forget`` leaves the bucket alone; a thousand keys
  failing at once are spread out at 10 a second; ``qps=inf`` turns it off; bad settings are
  refused; ``run_until_quiescent`` still ends when a storm of failing keys finally succeeds,
  and when a key never does (once it retries at its slowest), except that a run bounded by
  ``until`` keeps retrying it until then; a key that failed only a few times is not stalled.
- Shutdown: adds are ignored, getters (blocked or not) get None, waiting keys are dropped
  (``next_due`` is None, so a simulator loop ends); ``shut_down_with_drain``
  finishes ready and in-flight keys, drops keys not yet due, and reports a timeout.
- Blocking get: returns a key added from another thread; wakes when a FakeClock reaches a due
  time; honours its timeout; with a RealClock, wakes at the due time by itself.
- Concurrency: several workers and producers, no key processed by two workers at once, and
  every accepted add processed exactly once.
- Scale: 100,000 keys, immediate and delayed.

No test sleeps. Threads are used only for blocking ``get``; every wait on them is bounded.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

import pytest

from inference_operator.control.controller import Controller
from inference_operator.control.workqueue import RateLimitingQueue
from inference_operator.core.clock import RealClock
from inference_operator.core.ports import Result
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.quiescence import run_until_quiescent

T = TypeVar("T")

BOUND = 10.0  # seconds any thread-related wait may take before the test fails


class ObservedClock(FakeClock):
    """A FakeClock that lets a test wait until getters have read it.

    Each pass of a blocking ``get`` reads the clock (to move due keys) with the queue's lock
    held, then waits, which releases the lock; so once a getter has read the clock, anything
    the test does next with the queue happens while that getter is blocked.
    """

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0
        self._read = threading.Condition()

    def now(self) -> float:
        with self._read:
            self.reads += 1
            self._read.notify_all()
        return super().now()

    def wait_for_reads(self, count: int) -> None:
        with self._read:
            assert self._read.wait_for(lambda: self.reads >= count, timeout=BOUND)


def in_thread(fn: Callable[[], T]) -> Future[T]:
    executor = ThreadPoolExecutor(max_workers=1)
    future = executor.submit(fn)
    executor.shutdown(wait=False)
    return future


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def queue(clock: FakeClock) -> Iterator[RateLimitingQueue]:
    q = RateLimitingQueue(clock, name="test")
    yield q
    q.shut_down()  # releases any getter a failed test left blocked


def take(queue: RateLimitingQueue) -> list[str]:
    """Hand out every ready key, marking each done."""
    keys = []
    while (key := queue.try_get()) is not None:
        keys.append(key)
        queue.done(key)
    return keys


def deadline_poll(condition: Callable[[], bool]) -> None:
    """Re-check ``condition`` until it holds, failing after BOUND seconds (no sleeping)."""
    stop = RealClock().now() + BOUND
    while not condition():
        assert RealClock().now() < stop, "condition did not hold in time"


# -- dedup and order -------------------------------------------------------------------


def test_a_key_added_a_thousand_times_is_handed_out_once(queue: RateLimitingQueue) -> None:
    for _ in range(1000):
        queue.add("default/llama")
    assert len(queue) == 1
    assert queue.try_get() == "default/llama"
    assert queue.try_get() is None
    assert queue.adds_total == 1


def test_distinct_keys_come_out_in_the_order_they_were_added(queue: RateLimitingQueue) -> None:
    keys = [f"ns/isvc-{i}" for i in range(10)]
    for key in keys:
        queue.add(key)
    queue.add("ns/isvc-0")  # a duplicate does not move the key
    assert take(queue) == keys


def test_a_key_can_be_queued_again_once_it_was_handed_out(queue: RateLimitingQueue) -> None:
    queue.add("a/b")
    assert take(queue) == ["a/b"]
    queue.add("a/b")
    assert take(queue) == ["a/b"]
    assert queue.adds_total == 2


# -- processing ------------------------------------------------------------------------


def test_a_key_being_processed_is_not_handed_out_again(queue: RateLimitingQueue) -> None:
    queue.add("a/b")
    assert queue.try_get() == "a/b"
    queue.add("a/b")
    queue.add("a/b")
    assert queue.try_get() is None
    assert queue.ready_len() == 0
    assert queue.processing_len() == 1


def test_a_key_added_while_processing_is_requeued_after_done(queue: RateLimitingQueue) -> None:
    queue.add("a/b")
    assert queue.try_get() == "a/b"
    queue.add("a/b")
    queue.done("a/b")
    assert queue.processing_len() == 0
    assert queue.try_get() == "a/b"
    queue.done("a/b")
    assert queue.try_get() is None


def test_a_key_not_added_while_processing_is_not_requeued(queue: RateLimitingQueue) -> None:
    queue.add("a/b")
    key = queue.try_get()
    assert key is not None
    queue.done(key)
    assert queue.try_get() is None
    assert len(queue) == 0


def test_done_for_a_key_that_is_not_processing_is_ignored(queue: RateLimitingQueue) -> None:
    queue.add("a/b")
    queue.done("a/b")  # queued, not processing
    queue.done("x/y")  # unknown
    assert queue.processing_len() == 0
    assert take(queue) == ["a/b"]


# -- delays ----------------------------------------------------------------------------


def test_add_after_is_not_ready_before_its_due_time_and_ready_at_it(queue: RateLimitingQueue, clock: FakeClock) -> None:
    queue.add_after("a/b", 5.0)
    assert queue.try_get() is None
    assert queue.waiting_len() == 1
    clock.advance(4.999)
    assert queue.try_get() is None
    assert len(queue) == 0
    clock.set(5.0)
    assert queue.try_get() == "a/b"
    assert queue.waiting_len() == 0


@pytest.mark.parametrize("delay", [0.0, -1.0])
def test_add_after_without_a_positive_delay_adds_now(queue: RateLimitingQueue, delay: float) -> None:
    queue.add_after("a/b", delay)
    assert queue.waiting_len() == 0
    assert queue.try_get() == "a/b"


def test_add_after_refuses_a_nan_delay(queue: RateLimitingQueue) -> None:
    with pytest.raises(ValueError, match="nan"):
        queue.add_after("a/b", float("nan"))


def test_the_earliest_due_time_wins_when_a_waiting_key_is_added_again(
    queue: RateLimitingQueue, clock: FakeClock
) -> None:
    queue.add_after("a/b", 10.0)
    queue.add_after("a/b", 3.0)
    queue.add_after("a/b", 7.0)
    assert queue.waiting_len() == 1
    assert queue.next_due() == 3.0
    clock.set(3.0)
    assert take(queue) == ["a/b"]
    assert queue.next_due() is None
    clock.set(20.0)
    assert take(queue) == []  # the superseded 10 s and 7 s entries do not fire


def test_next_due_is_the_earliest_due_time_among_waiting_keys(queue: RateLimitingQueue, clock: FakeClock) -> None:
    assert queue.next_due() is None
    clock.set(100.0)
    queue.add_after("a/late", 30.0)
    queue.add_after("a/soon", 2.5)
    queue.add("a/now")
    assert queue.next_due() == 102.5
    clock.set(queue.next_due() or 0.0)
    assert take(queue) == ["a/now", "a/soon"]
    assert queue.next_due() == 130.0


def test_cancel_after_takes_a_waiting_key_out_and_leaves_queued_keys_alone(
    queue: RateLimitingQueue, clock: FakeClock
) -> None:
    queue.add_after("a/far", 1800.0)
    queue.add_after("a/near", 5.0)
    queue.add("a/now")
    assert queue.cancel_after("a/far") is True
    assert queue.cancel_after("a/far") is False  # no longer waiting
    assert queue.cancel_after("a/now") is False  # queued, not waiting: untouched
    assert queue.waiting_len() == 1 and queue.next_due() == 5.0
    clock.set(2000.0)
    assert take(queue) == ["a/now", "a/near"]  # the cancelled wait never fires
    assert queue.next_due() is None


def test_keys_due_at_the_same_time_come_out_in_the_order_they_were_added(
    queue: RateLimitingQueue, clock: FakeClock
) -> None:
    for key in ["n/c", "n/a", "n/b"]:
        queue.add_after(key, 1.0)
    clock.advance(1.0)
    assert take(queue) == ["n/c", "n/a", "n/b"]


def test_a_due_key_that_is_still_queued_is_not_queued_twice(queue: RateLimitingQueue, clock: FakeClock) -> None:
    queue.add("a/b")
    queue.add_after("a/b", 1.0)
    clock.advance(1.0)
    assert take(queue) == ["a/b"]


def test_a_key_that_comes_due_while_processing_is_requeued_after_done(
    queue: RateLimitingQueue, clock: FakeClock
) -> None:
    queue.add("a/b")
    assert queue.try_get() == "a/b"
    queue.add_after("a/b", 1.0)
    clock.advance(1.0)
    assert queue.try_get() is None
    queue.done("a/b")
    assert queue.try_get() == "a/b"


def test_a_fake_clock_standing_still_keeps_delayed_keys_waiting(queue: RateLimitingQueue) -> None:
    queue.add_after("a/b", 0.001)
    assert queue.get(timeout=0) is None
    assert queue.waiting_len() == 1


# -- rate limiting ---------------------------------------------------------------------


def test_rate_limited_backoff_doubles_from_5ms_and_caps_at_1000s(queue: RateLimitingQueue, clock: FakeClock) -> None:
    delays = []
    for _ in range(22):
        queue.add_rate_limited("a/b")
        due = queue.next_due()
        assert due is not None
        delays.append(due - clock.now())
        clock.set(due)
        assert take(queue) == ["a/b"]
    expected = [min(0.005 * 2**n, 1000.0) for n in range(22)]
    assert delays == pytest.approx(expected)
    assert delays[:4] == pytest.approx([0.005, 0.010, 0.020, 0.040])
    assert delays[17] == pytest.approx(655.36)
    assert delays[18:] == [1000.0] * 4


def test_backoff_is_tracked_per_key(queue: RateLimitingQueue, clock: FakeClock) -> None:
    for _ in range(3):
        queue.add_rate_limited("a/failing")
    queue.add_rate_limited("a/fresh")
    assert queue.num_requeues("a/failing") == 3
    assert queue.num_requeues("a/fresh") == 1
    assert queue.next_due() == pytest.approx(0.005)  # a/fresh; a/failing keeps its 5 ms too
    clock.set(0.005)
    assert take(queue) == ["a/failing", "a/fresh"]


def test_forget_resets_the_backoff(queue: RateLimitingQueue, clock: FakeClock) -> None:
    for _ in range(5):
        queue.add_rate_limited("a/b")
        clock.set(queue.next_due() or 0.0)
        take(queue)
    queue.forget("a/b")
    assert queue.num_requeues("a/b") == 0
    queue.add_rate_limited("a/b")
    assert queue.next_due() == pytest.approx(clock.now() + 0.005)


def test_forget_of_an_unknown_key_is_harmless(queue: RateLimitingQueue) -> None:
    queue.forget("never/seen")
    assert queue.num_requeues("never/seen") == 0


def test_num_requeues_counts_rate_limited_adds_until_forgotten(
    queue: RateLimitingQueue,
) -> None:
    assert queue.num_requeues("a/b") == 0
    queue.add_rate_limited("a/b")
    queue.add_rate_limited("a/b")
    queue.add("a/b")  # plain adds and add_after are not retries
    queue.add_after("a/b", 1.0)
    assert queue.num_requeues("a/b") == 2
    assert queue.retries_total == 2
    queue.forget("a/b")
    assert queue.num_requeues("a/b") == 0
    assert queue.retries_total == 2


def test_huge_failure_counts_stay_capped_at_max_delay(clock: FakeClock) -> None:
    # Without the bucket: 2000 retries would otherwise owe it 190 s, longer than the 60 s cap.
    queue = RateLimitingQueue(clock, base_delay=1.0, max_delay=60.0, qps=math.inf)
    for _ in range(2000):  # 1.0 * 2**1999 would overflow a float
        queue.add_rate_limited("a/b")
    assert queue.num_requeues("a/b") == 2000
    assert queue.next_due() == 1.0  # the first, earliest due time wins
    clock.set(1.0)
    assert take(queue) == ["a/b"]
    queue.add_rate_limited("a/b")
    assert queue.next_due() == 61.0


def test_custom_base_and_max_delays_are_used(clock: FakeClock) -> None:
    queue = RateLimitingQueue(clock, base_delay=0.5, max_delay=1.5)
    dues = []
    for _ in range(4):
        queue.add_rate_limited("a/b")
        dues.append((queue.next_due() or 0.0) - clock.now())
        clock.set(queue.next_due() or 0.0)
        take(queue)
    assert dues == [0.5, 1.0, 1.5, 1.5]


@pytest.mark.parametrize(("base_delay", "max_delay"), [(0.0, 1.0), (-1.0, 1.0), (2.0, 1.0), (0.1, float("inf"))])
def test_invalid_delays_are_refused(clock: FakeClock, base_delay: float, max_delay: float) -> None:
    with pytest.raises(ValueError, match="delay"):
        RateLimitingQueue(clock, base_delay=base_delay, max_delay=max_delay)


def test_adds_total_counts_accepted_adds_including_delayed_ones_coming_due(
    queue: RateLimitingQueue, clock: FakeClock
) -> None:
    queue.add("a/1")
    queue.add("a/1")
    queue.add_after("a/2", 1.0)
    assert queue.adds_total == 1
    clock.advance(1.0)
    assert take(queue) == ["a/1", "a/2"]
    assert queue.adds_total == 2


# -- overall rate limit (token bucket) -------------------------------------------------


def schedule(queue: RateLimitingQueue, clock: FakeClock) -> list[tuple[float, str]]:
    """Move the clock from due time to due time, taking every key: (time handed out, key)."""
    handed_out = []
    while (due := queue.next_due()) is not None:
        clock.set(max(due, clock.now()))
        handed_out += [(clock.now(), key) for key in take(queue)]
    return handed_out


def test_a_burst_of_a_hundred_retries_passes_at_once_then_ten_a_second(
    queue: RateLimitingQueue, clock: FakeClock
) -> None:
    keys = [f"ns/isvc-{i}" for i in range(130)]
    for key in keys:
        queue.add_rate_limited(key)
    handed_out = schedule(queue, clock)
    assert [key for _, key in handed_out] == keys
    times = [t for t, _ in handed_out]
    assert times[:100] == [0.005] * 100  # the burst: only each key's own 5 ms backoff
    assert times[100:] == pytest.approx([0.1 * n for n in range(1, 31)])


def test_the_bucket_refills_at_its_rate_but_never_beyond_the_burst(queue: RateLimitingQueue, clock: FakeClock) -> None:
    for i in range(100):
        queue.add_rate_limited(f"ns/first-{i}")
    schedule(queue, clock)
    clock.set(0.5)  # five tokens earned since the burst was spent at 0 s
    for i in range(6):
        queue.add_rate_limited(f"ns/half-{i}")
    assert [t - 0.5 for t, _ in schedule(queue, clock)] == pytest.approx([0.005] * 5 + [0.1])
    clock.advance(3600.0)  # an hour idle saves up a burst, not 36,000 tokens
    start = clock.now()
    for i in range(101):
        queue.add_rate_limited(f"ns/later-{i}")
    assert [t - start for t, _ in schedule(queue, clock)] == pytest.approx([0.005] * 100 + [0.1])


def test_custom_qps_and_burst_are_used(clock: FakeClock) -> None:
    queue = RateLimitingQueue(clock, qps=2.0, burst=3)
    for i in range(6):
        queue.add_rate_limited(f"ns/isvc-{i}")
    assert [t for t, _ in schedule(queue, clock)] == pytest.approx([0.005] * 3 + [0.5, 1.0, 1.5])


def test_per_item_backoff_still_wins_when_it_is_longer_than_the_bucket(
    queue: RateLimitingQueue, clock: FakeClock
) -> None:
    for _ in range(12):  # 5 ms … 10.24 s; its dozen tokens are earned back meanwhile
        queue.add_rate_limited("ns/failing")
        assert schedule(queue, clock)[0][1] == "ns/failing"
    start = clock.now()
    for i in range(100):  # the bucket is empty now: the next token is 0.1 s away
        queue.add_rate_limited(f"ns/other-{i}")
    queue.add_rate_limited("ns/failing")  # but this key's 13th retry owes 20.48 s of its own
    handed_out = {key: t for t, key in schedule(queue, clock)}
    assert handed_out["ns/failing"] == pytest.approx(start + 0.005 * 2**12)
    assert handed_out["ns/other-99"] == pytest.approx(start + 0.005)


def test_the_bucket_wins_when_it_is_longer_than_the_per_item_backoff(
    queue: RateLimitingQueue, clock: FakeClock
) -> None:
    for i in range(100):
        queue.add_rate_limited(f"ns/other-{i}")
    queue.add_rate_limited("ns/fresh")  # its own backoff is 5 ms; the bucket owes 0.1 s
    assert queue.num_requeues("ns/fresh") == 1
    clock.set(0.005)
    assert "ns/fresh" not in take(queue)
    clock.set(0.1)
    assert take(queue) == ["ns/fresh"]


def test_every_retry_takes_a_token_and_forget_leaves_the_bucket_alone(
    queue: RateLimitingQueue, clock: FakeClock
) -> None:
    for _ in range(100):  # one key, already waiting after the first call: still 100 tokens
        queue.add_rate_limited("ns/noisy")
    assert queue.waiting_len() == 1
    queue.forget("ns/noisy")
    assert queue.num_requeues("ns/noisy") == 0
    queue.add_rate_limited("ns/quiet")
    assert queue.num_requeues("ns/quiet") == 1
    clock.set(0.005)
    assert take(queue) == ["ns/noisy"]
    assert queue.next_due() == pytest.approx(0.1)  # ns/quiet waits for the shared bucket


def test_a_thousand_keys_failing_at_once_are_spread_out_at_ten_a_second(
    queue: RateLimitingQueue, clock: FakeClock
) -> None:
    for i in range(1000):
        queue.add_rate_limited(f"ns/isvc-{i:04d}")
    per_second = Counter(math.floor(t + 1e-9) for t, _ in schedule(queue, clock))
    assert per_second[0] == 109  # the burst of 100, then 0.1 s … 0.9 s
    assert all(per_second[s] == 10 for s in range(1, 90))
    assert per_second[90] == 1  # the 1000th, at 90 s
    assert sum(per_second.values()) == 1000


def test_qps_inf_turns_the_bucket_off(clock: FakeClock) -> None:
    queue = RateLimitingQueue(clock, qps=math.inf)
    for i in range(1000):
        queue.add_rate_limited(f"ns/isvc-{i}")
    assert queue.next_due() == 0.005
    clock.set(0.005)
    assert len(take(queue)) == 1000


@pytest.mark.parametrize(
    ("qps", "burst", "match"),
    [(0.0, 100, "qps"), (-1.0, 100, "qps"), (math.nan, 100, "qps"), (10.0, 0, "burst"), (10.0, 2.5, "burst")],
)
def test_invalid_rate_limits_are_refused(clock: FakeClock, qps: float, burst: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        RateLimitingQueue(clock, qps=qps, burst=burst)


def test_run_until_quiescent_ends_after_a_storm_of_failures_paced_by_the_bucket(clock: FakeClock) -> None:
    failures: Counter[str] = Counter()

    def flaky(namespace: str, name: str) -> Result:
        failures[name] += 1
        if failures[name] <= 3:
            raise RuntimeError("injected failure")
        return Result()

    controller = Controller("storm", flaky, RateLimitingQueue(clock))
    for i in range(500):
        controller.enqueue(f"ns/isvc-{i}")
    steps = run_until_quiescent([controller], clock=clock, pump=lambda: 0)
    assert steps == 2000  # 500 keys, 3 failures and 1 success each
    assert controller.reconcile_errors_total == 1500
    # 1500 retries: 100 from the burst, then 10 a second.
    assert clock.now() == pytest.approx(140.0)
    assert controller.queue.next_due() is None


def test_run_until_quiescent_ends_when_a_key_retries_at_its_slowest(clock: FakeClock) -> None:
    def broken(namespace: str, name: str) -> Result:
        raise RuntimeError("always")

    controller = Controller("broken", broken, RateLimitingQueue(clock, base_delay=1.0, max_delay=8.0))
    controller.enqueue("ns/broken")
    steps = run_until_quiescent([controller], clock=clock, pump=lambda: 0)
    # Passes at 0, 1, 3 and 7 s: the 4th failure is retried 8 s later, as slowly as it gets.
    assert steps == 4 and clock.now() == pytest.approx(1 + 2 + 4)
    assert controller.stalled() == {"ns/broken": "failed 4 times in a row, last with RuntimeError: always"}
    assert controller.queue.next_due() is not None, "the key is still queued: only the run gave up"


def test_a_time_bound_run_keeps_retrying_a_stalled_key_until_then(clock: FakeClock) -> None:
    def broken(namespace: str, name: str) -> Result:
        raise RuntimeError("always")

    controller = Controller("broken", broken, RateLimitingQueue(clock, base_delay=1.0, max_delay=8.0))
    controller.enqueue("ns/broken")
    steps = run_until_quiescent([controller], clock=clock, pump=lambda: 0, until=100.0)
    assert clock.now() == 100.0 and steps == 3 + len(range(7, 101, 8))


def test_a_key_that_failed_a_few_times_is_not_stalled(clock: FakeClock) -> None:
    outcomes = iter([RuntimeError("blip"), RuntimeError("blip")])

    def flaky(namespace: str, name: str) -> Result:
        if (err := next(outcomes, None)) is not None:
            raise err
        return Result()

    controller = Controller("flaky", flaky, RateLimitingQueue(clock, base_delay=1.0, max_delay=8.0))
    controller.enqueue("ns/flaky")
    run_until_quiescent([controller], clock=clock, pump=lambda: 0)
    assert controller.reconcile_total == 3 and controller.stalled() == {} and controller.failing == {}


# -- shutdown --------------------------------------------------------------------------


def test_shut_down_rejects_adds_and_get_returns_none(queue: RateLimitingQueue, clock: FakeClock) -> None:
    queue.add("a/queued")
    queue.add_after("a/waiting", 1.0)
    assert not queue.shutting_down
    queue.shut_down()
    assert queue.shutting_down
    queue.add("a/late")
    queue.add_after("a/late", 1.0)
    queue.add_rate_limited("a/late")
    assert (queue.waiting_len(), queue.next_due()) == (0, None)  # nothing left to wait for
    clock.advance(10.0)
    assert queue.try_get() is None
    assert queue.get() is None
    assert queue.get(timeout=1.0) is None
    assert queue.num_requeues("a/late") == 0


def test_shut_down_wakes_every_blocked_getter() -> None:
    clock = ObservedClock()
    queue = RateLimitingQueue(clock)
    getters = [in_thread(queue.get) for _ in range(3)]
    clock.wait_for_reads(3)  # all three are now blocked in get()
    queue.shut_down()
    assert [getter.result(timeout=BOUND) for getter in getters] == [None, None, None]


def test_shut_down_with_drain_finishes_ready_and_in_flight_keys(queue: RateLimitingQueue, clock: FakeClock) -> None:
    queue.add("a/in-flight")
    queue.add("a/ready")
    queue.add_after("a/not-due", 5.0)
    assert queue.try_get() == "a/in-flight"
    queue.add("a/in-flight")  # re-added while processing: must still be seen
    drain = in_thread(queue.shut_down_with_drain)
    deadline_poll(lambda: queue.shutting_down)
    queue.add("a/too-late")
    queue.done("a/in-flight")
    assert take(queue) == ["a/ready", "a/in-flight"]
    assert drain.result(timeout=BOUND) is True
    assert queue.next_due() is None
    clock.advance(5.0)
    assert queue.try_get() is None  # keys not due at shutdown are dropped


def test_shut_down_with_drain_reports_keys_left_in_flight_after_its_timeout(
    queue: RateLimitingQueue,
) -> None:
    queue.add("a/stuck")
    assert queue.try_get() == "a/stuck"
    assert queue.shut_down_with_drain(timeout=0) is False
    assert queue.shutting_down
    assert queue.get() is None
    queue.done("a/stuck")
    assert queue.processing_len() == 0


def test_shut_down_with_drain_of_an_idle_queue_returns_at_once(queue: RateLimitingQueue) -> None:
    assert queue.shut_down_with_drain(timeout=BOUND) is True
    assert queue.get() is None


# -- blocking get ----------------------------------------------------------------------


def test_blocking_get_returns_a_key_added_from_another_thread() -> None:
    clock = ObservedClock()
    queue = RateLimitingQueue(clock)
    getter = in_thread(queue.get)
    clock.wait_for_reads(1)
    queue.add("a/b")
    assert getter.result(timeout=BOUND) == "a/b"
    assert queue.processing_len() == 1


def test_blocking_get_wakes_when_the_fake_clock_reaches_the_due_time() -> None:
    clock = ObservedClock()
    queue = RateLimitingQueue(clock)
    queue.add_after("a/b", 5.0)
    reads = clock.reads
    getter = in_thread(queue.get)
    clock.wait_for_reads(reads + 1)
    clock.advance(5.0)
    assert getter.result(timeout=BOUND) == "a/b"


def test_blocking_get_returns_none_when_its_timeout_passes(queue: RateLimitingQueue) -> None:
    assert queue.get(timeout=0) is None
    assert queue.get(timeout=0.001) is None
    queue.add("a/b")
    assert queue.get(timeout=0) == "a/b"


def test_blocking_get_with_a_real_clock_wakes_at_the_due_time_by_itself() -> None:
    queue = RateLimitingQueue(RealClock())
    queue.add_after("a/b", 0.002)
    assert queue.get(timeout=BOUND) == "a/b"


def test_poke_wakes_a_blocked_getter_that_then_keeps_waiting() -> None:
    clock = ObservedClock()
    queue = RateLimitingQueue(clock)
    getter = in_thread(queue.get)
    clock.wait_for_reads(1)
    queue.poke()
    clock.wait_for_reads(2)  # it woke, looked again, found nothing
    assert not getter.done()
    queue.add("a/b")
    assert getter.result(timeout=BOUND) == "a/b"


# -- concurrency -----------------------------------------------------------------------


def test_several_workers_never_process_the_same_key_at_the_same_time(clock: FakeClock) -> None:
    queue = RateLimitingQueue(clock)
    keys = [f"ns/isvc-{i}" for i in range(300)]
    guard = threading.Condition()
    in_flight: set[str] = set()
    overlaps: list[str] = []
    processed: Counter[str] = Counter()

    def worker() -> None:
        while (key := queue.get()) is not None:
            with guard:
                if key in in_flight:
                    overlaps.append(key)
                in_flight.add(key)
                processed[key] += 1
                first_time = processed[key] == 1
            if first_time:
                queue.add(key)  # an event arrives mid-reconcile
            with guard:
                in_flight.discard(key)
                guard.notify_all()
            queue.done(key)

    def producer() -> None:
        for _ in range(5):
            for key in keys:
                queue.add(key)

    workers = [threading.Thread(target=worker) for _ in range(8)]
    producers = [threading.Thread(target=producer) for _ in range(3)]
    for thread in workers + producers:
        thread.start()
    for thread in producers:
        thread.join(timeout=BOUND)
        assert not thread.is_alive()
    with guard:
        assert guard.wait_for(lambda: all(processed[key] >= 2 for key in keys), timeout=BOUND)
    assert queue.shut_down_with_drain(timeout=BOUND) is True
    for thread in workers:
        thread.join(timeout=BOUND)
        assert not thread.is_alive()

    assert overlaps == []
    assert all(processed[key] >= 2 for key in keys)
    assert sum(processed.values()) == queue.adds_total  # every accepted add processed once
    assert (len(queue), queue.processing_len()) == (0, 0)


# -- scale -----------------------------------------------------------------------------


def test_a_hundred_thousand_keys_flow_through_in_order(queue: RateLimitingQueue, clock: FakeClock) -> None:
    keys = [f"ns-{i % 100}/isvc-{i}" for i in range(100_000)]
    for key in keys:
        queue.add(key)
    for key in keys:
        queue.add(key)
    assert len(queue) == 100_000
    assert take(queue) == keys

    for i, key in enumerate(keys):
        queue.add_after(key, 1.0 + (i % 1000) / 1000)
        queue.add_after(key, 0.5 + (i % 1000) / 1000)  # earlier: supersedes
    assert queue.waiting_len() == 100_000
    assert queue.next_due() == 0.5
    clock.set(1.0)
    first_half = take(queue)
    assert len(first_half) == 50_100  # dues 0.500 … 1.000 inclusive
    clock.set(2.0)
    assert len(first_half) + len(take(queue)) == 100_000
    assert queue.waiting_len() == 0
    assert queue.next_due() is None
