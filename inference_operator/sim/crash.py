"""The operator process dying at a chosen moment, for crash-point tests on the simulator.

:class:`OperatorCrash` is a ``BaseException``, so the operator's own ``except Exception``
cannot catch it: it unwinds the pass like ``kill -9`` ends a process, mid-write.
"""

from __future__ import annotations

__all__ = ["CrashSwitch", "OperatorCrash"]


class OperatorCrash(BaseException):
    """The operator process died (kill -9). A ``BaseException``: the operator cannot catch it."""


class CrashSwitch:
    """Raises :class:`OperatorCrash` right after the N-th next write it is told about."""

    def __init__(self) -> None:
        self._countdown: int | None = None
        self.crashes = 0

    def arm(self, after_writes: int) -> None:
        """Crash right after the ``after_writes``-th next write (1: the very next one)."""
        if after_writes < 1:
            raise ValueError("after_writes must be at least 1")
        self._countdown = after_writes

    def disarm(self) -> None:
        self._countdown = None

    @property
    def armed(self) -> bool:
        return self._countdown is not None

    def tick(self, what: str) -> None:
        """Count one write (applied or not); crash if it was the chosen one."""
        if self._countdown is None:
            return
        self._countdown -= 1
        if self._countdown <= 0:
            self._countdown = None
            self.crashes += 1
            raise OperatorCrash(f"operator killed right after {what}")
