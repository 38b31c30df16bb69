"""The overall retry limit of the workqueue: one token bucket shared by every key.

Per-key exponential backoff alone lets a thousand keys that fail together retry a thousand
times within milliseconds, again and again; client-go's ``DefaultControllerRateLimiter``
adds a bucket (10 a second, burst 100) on top, and so does :mod:`inference_operator.control.workqueue`.
Kept apart from the queue so each stays small and the arithmetic can be read on its own.
"""

from __future__ import annotations

import math

__all__ = ["TokenBucket"]


class TokenBucket:
    """The overall limit: ``qps`` tokens a second, at most ``burst`` saved up.

    Like ``golang.org/x/time/rate``'s ``Reserve``, a caller always gets a token, possibly one
    that does not exist yet: the balance goes negative and the returned delay says when that
    token will have been earned. So the n-th retry beyond the burst is due at n / qps, however
    the calls are spread over time. It reads no clock (the caller passes ``now``), which keeps
    it deterministic on a fake one; it has no lock (the queue's lock guards it).
    """

    def __init__(self, *, qps: float, burst: int) -> None:
        if not (qps > 0):  # also refuses nan; inf means "no limit", like rate.Inf
            raise ValueError(f"qps must be a positive number (inf for no limit), got {qps!r}")
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
            raise ValueError(f"burst must be a whole number of at least 1, got {burst!r}")
        self._qps = float(qps)
        self._burst = burst
        self._tokens = float(burst)
        self._last: float | None = None

    def reserve(self, now: float) -> float:
        """Take one token at ``now`` and return how many seconds until it is earned (0 if saved)."""
        if math.isinf(self._qps):
            return 0.0
        if self._last is None or now > self._last:  # a clock never moves back; if it did, no refill
            if self._last is not None:
                self._tokens = min(float(self._burst), self._tokens + (now - self._last) * self._qps)
            self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps
