"""The simulator's clock: time that stands still until the simulation moves it.

A :class:`FakeClock` is the :class:`~inference_operator.core.clock.ManualClock` the simulator,
the demo and unit tests pass wherever production code takes a clock. Time moves only when told
to, which is what lets a ten-minute rollout be replayed in milliseconds, deterministically.
"""

from __future__ import annotations

import datetime
import math
import threading
from collections.abc import Callable

__all__ = ["DEFAULT_FAKE_EPOCH", "FakeClock"]

DEFAULT_FAKE_EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
"""The wall-clock time a :class:`FakeClock` reports when its monotonic time is zero."""


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
        self._last_wall: tuple[float, datetime.datetime] | None = None
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
            last = self._last_wall
            if last is None or last[0] != seconds:  # thousands of calls per instant: build it once
                last = self._last_wall = (seconds, self._epoch + datetime.timedelta(seconds=seconds))
        return last[1]

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
