"""Time as an injected dependency, so control loops can be tested without waiting.

Delays, backoff and ``requeue_after`` are measured on a monotonic clock; condition
timestamps such as ``lastTransitionTime`` need wall-clock UTC. Production code takes a
:class:`Clock` and never calls :mod:`time` or :mod:`datetime` itself: the operator passes
:class:`RealClock`, while unit tests and the simulator pass a :class:`ManualClock` (the
simulator's ``FakeClock``, in ``inference_operator.sim.clock``), whose time moves only when
told to. That is what lets a ten-minute rollout be replayed in milliseconds, deterministically,
and what lets tests check "not ready before 5 s, ready at 5 s" exactly.
"""

from __future__ import annotations

import datetime
import functools
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = [
    "Clock",
    "ManualClock",
    "RealClock",
    "format_timestamp",
]


class Clock(Protocol):
    """A source of time: monotonic seconds for delays, UTC wall time for timestamps."""

    def now(self) -> float:
        """Monotonic seconds; only differences are meaningful. Used for delays and deadlines."""
        ...

    def wall(self) -> datetime.datetime:
        """The current time as a timezone-aware UTC datetime. Used for timestamps."""
        ...


@runtime_checkable
class ManualClock(Clock, Protocol):
    """A clock whose time moves only when someone moves it, and which says so.

    Code that waits for a due time (a blocking workqueue ``get``) cannot compute a real
    timeout from such a clock; it subscribes instead and re-checks when time moves.
    """

    def subscribe(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (with no lock held) every time the clock moves forward."""
        ...


class RealClock:
    """The clock of the machine: ``time.monotonic()`` and ``datetime.now(UTC)``."""

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime.datetime:
        return datetime.datetime.now(datetime.UTC)

    def __repr__(self) -> str:
        return "RealClock()"


def format_timestamp(dt: datetime.datetime) -> str:
    """Format ``dt`` as Kubernetes does for ``metav1.Time``: RFC 3339, UTC, whole seconds.

    >>> format_timestamp(datetime.datetime(2026, 1, 1, 0, 0, 5, 999, tzinfo=datetime.UTC))
    '2026-01-01T00:00:05Z'
    """
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError("format_timestamp needs a timezone-aware datetime; use Clock.wall()")
    return _formatted(dt)


@functools.lru_cache(maxsize=256)
def _formatted(dt: datetime.datetime) -> str:
    # Remembered: on a fake clock thousands of writes share one instant, and strftime is slow.
    return dt.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: str) -> datetime.datetime:
    """The inverse of :func:`format_timestamp` (RFC 3339, UTC, ``Z`` or an offset)."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
