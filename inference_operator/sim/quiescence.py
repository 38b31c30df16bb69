"""Driving controllers on a fake clock until no work is left: the simulator's sense of time.

On a real cluster worker threads block on their queues and time passes by itself. In the
simulator nothing moves until told to: :func:`run_until_quiescent` lets each controller take its
ready keys in turn, and when only delayed keys remain, jumps the clock to the earliest due time.
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
    """Drive controllers on a fake clock until no work is left; returns steps processed.

    Each round first delivers pending watch events (``pump``), then lets the first controller
    with a ready key process it (earlier controllers in the list act first at equal times:
    the simulated cluster moves before the operator observes it). When nothing is ready but
    delayed keys remain, the clock jumps to the earliest due time: time passing, as on a real
    cluster, without waiting. ``until`` stops the clock from passing that time.

    A run that cannot converge ends too: when no ``until`` is given and the only work left is
    retrying keys whose backoff has reached its maximum (``Controller.stalled`` says which, and
    why), jumping through their backoff would replay the same error forever.
    """
    steps = 0
    while True:
        pump()
        if any(c.step() for c in controllers):
            steps += 1
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
