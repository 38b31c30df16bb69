"""Driving controllers on a fake clock until no work is left: the simulator's sense of time.

On a real cluster worker threads block on their queues and time passes by itself. In the
simulator nothing moves until told to: :func:`run_until_quiescent` lets each controller take its
ready keys in turn, and when only delayed keys remain, jumps the clock to the earliest due time.

Turns, not single keys: on a real cluster a controller busy with one key does not see the next
event for another until it is done, so events pile up in its queue and a key that changed five
times is synced once. Taking every key that is ready when a controller's turn comes gives the
simulator the same coalescing (a ReplicaSet whose two pods became ready at one instant is synced
once, not twice), where one key at a time, the first controller first, would sync each step of
every cascade on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from inference_operator.control.controller import Controller
from inference_operator.sim.clock import FakeClock


class HotLoop(RuntimeError):
    """run_until_quiescent hit its step budget: something requeues forever."""


def run_until_quiescent(
    controllers: Sequence[Controller],
    *,
    clock: FakeClock,
    pump: Callable[[], int],
    max_steps: int = 1_000_000,
    until: float | None = None,
) -> int:
    """Drive controllers on a fake clock until no work is left; returns steps (keys) processed.

    Each round first delivers pending watch events (``pump``), then gives the controllers a
    turn each, in order: a turn takes the keys ready when it starts, with pending events
    delivered after each key (every pass reads the cache as it is). The last controller is the
    observer (the operator, after the simulated cluster): its turn comes only in a round where
    none before it had a ready key, so at equal times the cluster settles before the operator
    looks. Its turn, like any, takes all its ready keys back to back, as its workers would: the
    cluster reacts to the writes of the first only after the last. When nothing is ready but
    delayed keys remain, the clock jumps to the earliest due time: time passing, as on a real
    cluster, without waiting. ``until`` stops the clock from passing that time.

    A run that cannot converge ends too: when no ``until`` is given and the only work left is
    retrying keys whose backoff has reached its maximum (``Controller.stalled`` says which, and
    why), jumping through their backoff would replay the same error forever; and after
    ``max_steps`` keys, :class:`HotLoop`.
    """
    steps = 0
    while True:
        pump()
        if not controllers:
            return steps
        taken = _round(controllers, pump, budget=max_steps - steps)
        if taken:
            steps += taken
            if steps >= max_steps:
                raise HotLoop(f"no quiescence after {steps} steps at t={clock.now():.1f}s: something requeues forever")
            continue
        dues = [d for c in controllers if (d := c.queue.next_due()) is not None]
        if not dues or (until is None and all(c.queue.waiting_len() <= len(c.stalled()) for c in controllers)):
            return steps
        due = min(dues)
        if until is not None and due > until:
            clock.set(max(until, clock.now()))
            return steps
        clock.set(max(due, clock.now()))


def _round(controllers: Sequence[Controller], pump: Callable[[], int], *, budget: int) -> int:
    """One round: a turn for each controller before the observer (each takes what is ready when
    its turn comes, so a key the one before it just queued is in it), or, when none of them had
    anything ready, the observer's turn. At most ``budget`` keys; returns the keys processed
    (0: nothing was ready)."""
    *acting, observer = controllers
    taken = 0
    for controller in acting:
        taken += _turn(controller, pump, budget=budget - taken)
    return taken or _turn(observer, pump, budget=budget)


def _turn(controller: Controller, pump: Callable[[], int], *, budget: int) -> int:
    """The keys ready as the turn starts (at most ``budget``), each processed with the events
    before it delivered. A key re-added during the turn waits for the next: a turn always ends."""
    taken = 0
    for _ in range(min(controller.queue.ready_len(), budget)):
        if not controller.step():
            break
        taken += 1
        pump()
    return taken
