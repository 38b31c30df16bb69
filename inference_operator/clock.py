"""Time as an injected dependency, so control loops can be tested without waiting.

Delays, backoff and ``requeue_after`` are measured on a monotonic clock; condition
timestamps such as ``lastTransitionTime`` need wall-clock UTC. Production code takes a
:class:`Clock` and never calls :mod:`time` or :mod:`datetime` itself: the operator passes
:class:`RealClock`, while unit tests and the simulator pass :class:`FakeClock`, whose time
moves only when told to. That is what lets a ten-minute rollout be replayed in milliseconds,
deterministically, and what lets tests check "not ready before 5 s, ready at 5 s" exactly.
"""

from __future__ import annotations

import datetime
import math
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = [
    "DEFAULT_FAKE_EPOCH",
    "Clock",
    "FakeClock",
    "ManualClock",
    "RealClock",
    "format_timestamp",
]

DEFAULT_FAKE_EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
"""The wall-clock time a :class:`FakeClock` reports when its monotonic time is zero."""


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


class FakeClock:
    """A clock that stands still until :meth:`advance` or :meth:`set` moves it.

    ``wall()`` is ``epoch + now()`` seconds, so monotonic and wall time stay consistent.
    Safe to share between threads; subscribers are called after the move, outside the lock.
    """

    def __init__(
        self,
        start: float = 0.0,
        *,
        epoch: datetime.datetime = DEFAULT_FAKE_EPOCH,
    ) -> None:
        if not math.isfinite(start):
            raise ValueError(f"FakeClock start must be a finite number of seconds, got {start!r}")
        if epoch.tzinfo is None or epoch.utcoffset() is None:
            raise ValueError("FakeClock epoch must be timezone-aware (for example tzinfo=timezone.utc)")
        self._lock = threading.Lock()
        self._now = float(start)
        self._epoch = epoch.astimezone(datetime.UTC)
        self._subscribers: list[Callable[[], None]] = []

    @property
    def epoch(self) -> datetime.datetime:
        """The wall-clock time (UTC) that corresponds to ``now() == 0``."""
        return self._epoch

    def now(self) -> float:
        with self._lock:
            return self._now

    def wall(self) -> datetime.datetime:
        with self._lock:
            seconds = self._now
        return self._epoch + datetime.timedelta(seconds=seconds)

    def advance(self, seconds: float) -> float:
        """Move time forward by ``seconds`` (zero is allowed) and return the new time."""
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"FakeClock can only advance by a finite, non-negative amount, got {seconds!r}")
        with self._lock:
            self._now += seconds
            now = self._now
        self._notify()
        return now

    def set(self, t: float) -> None:
        """Jump to time ``t``; monotonic time never goes backwards, so ``t < now()`` is an error."""
        if not math.isfinite(t):
            raise ValueError(f"FakeClock time must be finite, got {t!r}")
        with self._lock:
            if t < self._now:
                raise ValueError(f"FakeClock cannot move backwards from {self._now!r} to {t!r}")
            self._now = float(t)
        self._notify()

    def subscribe(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self._subscribers.append(callback)

    def _notify(self) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            callback()

    def __repr__(self) -> str:
        return f"FakeClock(now={self.now()!r}, epoch={self._epoch.isoformat()!r})"


def format_timestamp(dt: datetime.datetime) -> str:
    """Format ``dt`` as Kubernetes does for ``metav1.Time``: RFC 3339, UTC, whole seconds.

    >>> format_timestamp(datetime.datetime(2026, 1, 1, 0, 0, 5, 999, tzinfo=datetime.UTC))
    '2026-01-01T00:00:05Z'
    """
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError("format_timestamp needs a timezone-aware datetime; use Clock.wall()")
    return dt.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: str) -> datetime.datetime:
    """The inverse of :func:`format_timestamp` (RFC 3339, UTC, ``Z`` or an offset)."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
