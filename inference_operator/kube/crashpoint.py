"""A test hook that kills the operator right after its Nth write: crash points on a real cluster.

Why it exists: an operator must survive dying at any moment, and the moments that matter are
between two of its effects on the world, e.g. after the Deployment was created and before
the status says so, or after the load balancer released a record and before the finalizer
was removed. ``kill -9`` from outside lands at a random moment; this hook lands exactly after
a chosen write, so the e2e suite (``tests/e2e/test_crash_points.py``) can try every one of
them along a path and check that a restarted operator converges with nothing leaked.

It is off unless ``INFERENCE_OPERATOR_CRASH_AFTER_WRITES=N`` (N >= 1) is set when the operator
starts (read once, through ``OperatorConfig``). Then every mutating call the operator makes
counts: each write to the API server (create, apply, patch, status update; Events are not
counted, they are posted by a background thread) and each ``register``/``release`` call to
the load balancer (``lookup`` only reads). A call counts once it returned, answered or
failed, since that is when its effect, if any, has happened. After the Nth, the hook logs
one line and ends the process with ``os._exit(137)``: no cleanup, no flush of anything but
that log line, as after SIGKILL. While armed, each counted call is also logged (``Counted
write``), so a dry run with an N larger than the path lists the crash points.

``INFERENCE_OPERATOR_CRASH_ON=<prefix>`` narrows the count to calls whose label starts with it
(labels read ``verb Kind namespace/name``, e.g. ``update_status InferenceService``, or
``register namespace/name``): "after the 3rd status write" is then the same crash point in
every run, however the other writes interleave with it (how many status writes a rollout
takes depends on timing).

Never set it in production: the operator dies on purpose.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from inference_operator.core.ports import LoadBalancerProvider, Registration

log = logging.getLogger(__name__)
T = TypeVar("T")
EXIT_CODE = 137  # what a shell reports for a process killed by SIGKILL (128 + 9)


class CrashPoint:
    """Counts mutating calls; ends the process right after the ``after``-th (0: never) of those
    whose label starts with ``on`` (every call when empty)."""

    def __init__(self, after: int = 0, *, on: str = "", exit: Callable[[int], object] = os._exit) -> None:
        if after < 0:
            raise ValueError(f"crash point must be >= 0 (0 turns it off), got {after}")
        self.after = after
        self.on = on
        self.count = 0
        self.matched = 0
        self._exit = exit
        self._lock = threading.Lock()

    @property
    def armed(self) -> bool:
        return self.after > 0

    def call(self, what: str, write: Callable[[], T]) -> T:
        """Run ``write`` (one mutating request); count it once it returned or raised."""
        if not self.armed:
            return write()
        try:
            return write()
        finally:
            self._counted(what)

    def _counted(self, what: str) -> None:
        with self._lock:
            self.count += 1
            n = self.count
            log.info("Counted write n=%d crash_after=%d call=%s", n, self.after, what)
            if not what.startswith(self.on):
                return
            self.matched += 1
            if self.matched != self.after:
                return
            log.critical(
                "Crashing on purpose after write n=%d matched=%d on=%r call=%s exit_code=%d",
                n,
                self.matched,
                self.on,
                what,
                EXIT_CODE,
            )
            for handler in logging.getLogger().handlers:
                handler.flush()
            sys.stdout.flush()
            sys.stderr.flush()
            self._exit(EXIT_CODE)


class CrashingLoadBalancer:
    """A ``LoadBalancerProvider`` whose ``register`` and ``release`` are crash points."""

    def __init__(self, inner: LoadBalancerProvider, crash: CrashPoint) -> None:
        self.inner = inner
        self.crash = crash

    def register(self, key: str, *, target: str) -> Registration:
        return self.crash.call(f"register {key}", lambda: self.inner.register(key, target=target))

    def release(self, key: str) -> None:
        self.crash.call(f"release {key}", lambda: self.inner.release(key))

    def lookup(self, key: str) -> Registration | None:
        return self.inner.lookup(key)


def with_crash_point(provider: LoadBalancerProvider, crash: CrashPoint) -> LoadBalancerProvider:
    """``provider`` itself when the hook is off, else wrapped so its writes count."""
    return CrashingLoadBalancer(provider, crash) if crash.armed else provider
