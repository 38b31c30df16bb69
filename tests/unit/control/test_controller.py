"""The controller loop around the reconciler (processNextWorkItem semantics).

Covers: an error goes back with per-key exponential backoff; requeue_after forgets the
failures and schedules the key; requeue brings it back rate-limited (after its backoff, which
keeps doubling, as controller-runtime's AddRateLimited); success forgets it;
run_until_quiescent advances the fake clock to the earliest due key and stops when nothing
is left, and detects a reconciler that requeues forever (after exactly its step budget,
even inside one turn), and with no controllers is quiet at once; it gives each controller a
turn with every key ready as the turn comes (a key queued by several of another controller's
keys is synced once), and the last controller only when the others have nothing ready; a
worker loop finishes the item in hand and stops once the queue shuts down.
"""

from __future__ import annotations

import threading

import pytest

from inference_operator.control.controller import Controller
from inference_operator.control.workqueue import RateLimitingQueue
from inference_operator.core.clock import RealClock
from inference_operator.core.ports import Result
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.quiescence import HotLoop, run_until_quiescent


class Scripted:
    """A reconcile function that plays back results (or raises) per call and records calls."""

    def __init__(self, *outcomes: Result | Exception) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[tuple[str, str]] = []

    def __call__(self, namespace: str, name: str) -> Result:
        self.calls.append((namespace, name))
        outcome = self.outcomes.pop(0) if self.outcomes else Result()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def make(*outcomes: Result | Exception) -> tuple[Controller, Scripted, FakeClock]:
    clock = FakeClock()
    fn = Scripted(*outcomes)
    return Controller("test", fn, RateLimitingQueue(clock)), fn, clock


def test_an_error_is_retried_with_growing_backoff() -> None:
    ctl, fn, clock = make(RuntimeError("boom"), RuntimeError("boom"), Result())
    ctl.enqueue("ns/a")
    assert ctl.step()
    assert ctl.queue.num_requeues("ns/a") == 1 and ctl.queue.next_due() == pytest.approx(0.005)
    clock.set(0.005)
    assert ctl.step()
    assert ctl.queue.next_due() == pytest.approx(0.015)
    clock.set(0.015)
    assert ctl.step()
    assert ctl.queue.num_requeues("ns/a") == 0 and ctl.queue.next_due() is None
    assert fn.calls == [("ns", "a")] * 3 and ctl.reconcile_errors_total == 2


def test_requeue_after_forgets_failures_and_schedules_the_key() -> None:
    ctl, _, clock = make(RuntimeError("x"), Result(requeue_after=30.0))
    ctl.enqueue("ns/a")
    ctl.step()
    clock.set(0.005)
    ctl.step()
    assert ctl.queue.num_requeues("ns/a") == 0
    assert ctl.queue.next_due() == pytest.approx(30.005)


def test_requeue_brings_the_key_back_after_its_backoff_and_keeps_counting() -> None:
    ctl, fn, clock = make(Result(requeue=True), Result(requeue=True), Result())
    ctl.enqueue("ns/a")
    assert ctl.step() and not ctl.step()  # not at once: after the key's backoff
    assert ctl.queue.next_due() == pytest.approx(0.005)
    clock.set(0.005)
    assert ctl.step()
    assert ctl.queue.num_requeues("ns/a") == 2  # not forgotten: the next wait doubles
    assert ctl.queue.next_due() == pytest.approx(0.015)
    clock.set(0.015)
    assert ctl.step() and not ctl.step()
    assert len(fn.calls) == 3 and ctl.queue.num_requeues("ns/a") == 0  # success forgets


def test_success_forgets_the_key() -> None:
    ctl, _, _ = make(RuntimeError("x"), Result())
    ctl.enqueue("ns/a")
    ctl.step()
    ctl.queue.add("ns/a")
    ctl.step()
    assert ctl.queue.num_requeues("ns/a") == 0


def test_run_until_quiescent_jumps_the_clock_to_the_next_due_key() -> None:
    ctl, fn, clock = make(Result(requeue_after=5.0), Result(requeue_after=5.0), Result())
    ctl.enqueue("ns/a")
    steps = run_until_quiescent([ctl], clock=clock, pump=lambda: 0)
    assert steps == 3 and clock.now() == 10.0 and len(fn.calls) == 3


def test_run_until_quiescent_can_stop_at_a_time_limit() -> None:
    ctl, _, clock = make(*[Result(requeue_after=5.0)] * 10)
    ctl.enqueue("ns/a")
    run_until_quiescent([ctl], clock=clock, pump=lambda: 0, until=12.0)
    assert clock.now() == 12.0 and ctl.reconcile_total == 3


def test_a_reconciler_that_requeues_forever_is_reported_as_a_hot_loop() -> None:
    ctl, _, clock = make(*[Result(requeue=True)] * 1000)
    ctl.enqueue("ns/a")
    with pytest.raises(HotLoop, match="requeues forever"):
        run_until_quiescent([ctl], clock=clock, pump=lambda: 0, max_steps=100)


def test_the_step_budget_counts_every_key_even_within_one_turn() -> None:
    clock = FakeClock()

    def again(namespace: str, name: str) -> Result:
        ctl.enqueue(f"{namespace}/{name}")  # every key wakes itself: it never settles
        return Result()

    ctl = Controller("operator", again, RateLimitingQueue(clock))
    for i in range(50):
        ctl.enqueue(f"ns/k{i}")
    with pytest.raises(HotLoop, match="after 10 steps"):
        run_until_quiescent([ctl], clock=clock, pump=lambda: 0, max_steps=10)
    assert ctl.reconcile_total == 10


def test_no_controllers_is_quiet_at_once() -> None:
    pumped: list[int] = []
    assert run_until_quiescent([], clock=FakeClock(), pump=lambda: pumped.append(1) or 0) == 0 and pumped == [1]


def test_earlier_controllers_act_first_at_equal_times() -> None:
    order: list[str] = []
    clock = FakeClock()
    first = Controller("platform", lambda ns, n: order.append("platform") or Result(), RateLimitingQueue(clock))
    second = Controller("operator", lambda ns, n: order.append("operator") or Result(), RateLimitingQueue(clock))
    second.enqueue("ns/a")
    first.enqueue("ns/a")
    run_until_quiescent([first, second], clock=clock, pump=lambda: 0)
    assert order == ["platform", "operator"]


def test_a_key_queued_by_several_passes_of_a_later_controller_is_synced_once_for_all() -> None:
    clock = FakeClock()
    synced: list[str] = []
    owner = Controller("owner", lambda ns, n: synced.append(n) or Result(), RateLimitingQueue(clock))

    def child(namespace: str, name: str) -> Result:
        owner.enqueue("ns/parent")  # each child's change concerns its owner
        return Result()

    children = Controller("children", child, RateLimitingQueue(clock))
    for name in ("a", "b", "c"):
        children.enqueue(f"ns/{name}")
    observer = Controller("operator", lambda ns, n: Result(), RateLimitingQueue(clock))
    run_until_quiescent([owner, children, observer], clock=clock, pump=lambda: 0)
    assert synced == ["parent"] and children.reconcile_total == 3


def test_the_last_controller_waits_while_the_ones_before_it_keep_queueing_work() -> None:
    clock = FakeClock()
    order: list[str] = []
    chain = iter(["ns/b", "ns/c"])

    def platform(namespace: str, name: str) -> Result:
        order.append(f"platform {name}")
        following = next(chain, None)
        if following is not None:
            first.enqueue(following)
        return Result()

    first = Controller("platform", platform, RateLimitingQueue(clock))
    second = Controller("operator", lambda ns, n: order.append(f"operator {n}") or Result(), RateLimitingQueue(clock))
    second.enqueue("ns/x")
    second.enqueue("ns/y")
    first.enqueue("ns/a")
    steps = run_until_quiescent([first, second], clock=clock, pump=lambda: 0)
    assert order == ["platform a", "platform b", "platform c", "operator x", "operator y"] and steps == 5


def test_a_worker_loop_finishes_the_item_in_hand_and_stops_once_the_queue_shuts_down() -> None:
    started, release = threading.Event(), threading.Event()
    done: list[str] = []

    def slow(namespace: str, name: str) -> Result:
        if name == "slow":
            started.set()
            assert release.wait(10), "test did not release the worker"
        done.append(name)
        return Result()

    ctl = Controller("threads", slow, RateLimitingQueue(RealClock()))
    passes: list[bool] = []

    def work() -> None:  # what the operator's worker threads run
        while ctl.process_next_work_item(timeout=1.0):
            passes.append(True)

    worker = threading.Thread(target=work)
    worker.start()
    ctl.enqueue("ns/slow")
    assert started.wait(10)
    ctl.queue.shut_down()
    ctl.enqueue("ns/late")  # refused: the queue is shutting down
    release.set()
    worker.join(10)
    assert not worker.is_alive(), "the loop did not end after shut_down"
    assert done == ["slow"], "the item in hand was finished, nothing taken after shut_down"
    assert ctl.reconcile_total == 1 and passes == [True]
