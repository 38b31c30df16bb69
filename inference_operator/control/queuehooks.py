"""Who hears what the workqueue does with keys: the metrics, the flight recorder, or both.

The queue calls its hooks with its lock held, so a hook must be quick and must not call
back into the queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from inference_operator.trace.recorder import Tracer

__all__ = ["ChainedHooks", "QueueHooks", "QueueTrace"]


class QueueHooks(Protocol):
    """Who is told what happens to keys (client-go's queue metrics); called with the lock held."""

    def added(self, key: str) -> None: ...
    def taken(self, key: str) -> None: ...
    def finished(self, key: str) -> None: ...
    def retried(self) -> None: ...
    def delayed(self, key: str, delay: float, *, retries: int) -> None:
        """``key`` waits ``delay`` seconds: ``add_after`` (``retries`` 0) or a rate-limited retry."""
        ...


class QueueTrace:
    """Workqueue hooks that tell a tracer what the queue accepted (with the queue's lock held)."""

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer

    def added(self, key: str) -> None:
        self._tracer.queued(key, how="add")

    def taken(self, key: str) -> None:
        return None  # the controller records the dequeue, with the queue's contents

    def finished(self, key: str) -> None:
        return None

    def retried(self) -> None:
        return None

    def delayed(self, key: str, delay: float, *, retries: int) -> None:
        self._tracer.queued(key, how="rate_limited" if retries else "after", delay=delay, retries=retries)


class ChainedHooks:
    """Several workqueue hooks told in turn (the metrics and the tracer)."""

    def __init__(self, *hooks: QueueHooks) -> None:
        self.hooks = hooks

    def added(self, key: str) -> None:
        for h in self.hooks:
            h.added(key)

    def taken(self, key: str) -> None:
        for h in self.hooks:
            h.taken(key)

    def finished(self, key: str) -> None:
        for h in self.hooks:
            h.finished(key)

    def retried(self) -> None:
        for h in self.hooks:
            h.retried()

    def delayed(self, key: str, delay: float, *, retries: int) -> None:
        for h in self.hooks:
            h.delayed(key, delay, retries=retries)
