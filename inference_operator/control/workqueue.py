"""The controller's work queue, with the semantics of client-go's rate-limiting workqueue.

Events say only *which* InferenceService to look at; the queue decides *when* and makes
sure the reconciler sees each key in a sane way, whatever the event storm:

- a key is queued at most once, however often it is added (the "dirty" set);
- a key being processed is never handed to a second worker; adding it meanwhile marks it
  dirty, and :meth:`RateLimitingQueue.done` puts it back so the newest state is seen;
- ``add_after`` parks a key until it is due (``requeue_after``, a waiting heap where the
  earliest due time wins); ``cancel_after`` takes a waiting key out again (a simulator's
  controller withdrawing a wait it no longer needs);
- ``add_rate_limited`` retries after the longer of two delays, as client-go's
  ``DefaultControllerRateLimiter`` does: the key's own exponential backoff (5 ms doubling,
  capped at 1000 s), which ``forget`` resets after a success, and the wait for a token of one
  bucket shared by all keys (10 a second, burst 100). Backoff alone lets a thousand keys that
  fail together retry a thousand times within milliseconds, again and again; the bucket
  spreads such a storm out to about 10 retries a second, whatever the number of keys.

Both backends use it: worker threads block in :meth:`~RateLimitingQueue.get`, while the
simulator drives it step by step with :meth:`~RateLimitingQueue.try_get` and
:meth:`~RateLimitingQueue.next_due` on a :class:`~inference_operator.sim.clock.FakeClock`.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable

from inference_operator.control.dueheap import DueHeap
from inference_operator.control.queuehooks import QueueHooks
from inference_operator.control.ratelimit import TokenBucket
from inference_operator.core.clock import Clock, ManualClock

__all__ = ["RateLimitingQueue"]

_MAX_BACKOFF_EXPONENT = 1000  # 2.0 ** 1000 is still a finite float; beyond, the cap applies anyway


def _waker(queue: RateLimitingQueue) -> Callable[[], None]:
    """A clock subscriber that pokes ``queue`` without keeping it alive."""
    ref = weakref.ref(queue)

    def wake() -> None:
        target = ref()
        if target is not None:
            target.poke()

    return wake


class RateLimitingQueue:
    """A deduplicating FIFO of string keys with delayed and rate-limited adds.

    All operations are thread-safe and O(1) or O(log n). ``get(timeout=…)`` measures its
    timeout in real seconds (it bounds how long a thread blocks); due times for delayed keys
    are measured on the injected clock.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        base_delay: float = 0.005,
        max_delay: float = 1000.0,
        qps: float = 10.0,
        burst: int = 100,
        name: str = "",
    ) -> None:
        """``base_delay``/``max_delay`` shape each key's backoff; ``qps``/``burst`` the bucket
        all keys share (``qps=math.inf`` turns it off, leaving per-key backoff alone)."""
        if not (math.isfinite(base_delay) and base_delay > 0):
            raise ValueError(f"base_delay must be a positive number of seconds, got {base_delay!r}")
        if not (math.isfinite(max_delay) and max_delay >= base_delay):
            raise ValueError(f"max_delay must be finite and at least base_delay, got {max_delay!r}")
        self.name = name
        self._clock = clock
        self._base_delay = float(base_delay)
        self._max_delay = float(max_delay)
        self._bucket = TokenBucket(qps=qps, burst=burst)

        self._lock = threading.Lock()
        self._item_ready = threading.Condition(self._lock)  # getters wait here
        self._drained = threading.Condition(self._lock)  # shut_down_with_drain waits here

        self._ready: deque[str] = deque()  # keys to hand out, FIFO; each at most once
        self._dirty: set[str] = set()  # keys that need processing (queued, or re-queue on done)
        self._processing: set[str] = set()  # keys handed out and not yet done
        self._waiting = DueHeap()  # keys parked until a due time (add_after, retries)
        self._failures: dict[str, int] = {}

        self._shutting_down = False
        self._draining = False
        self.adds_total = 0
        """Keys accepted into the queue (duplicates of a queued key are not counted)."""
        self.retries_total = 0
        """Calls to :meth:`add_rate_limited` that were accepted."""
        self.hooks: QueueHooks | None = None
        """Told of every add, take, finish and retry (metrics); None: nobody."""

        # A manual clock does not tick on its own: ask it to wake blocked getters instead.
        self._clock_is_manual = isinstance(clock, ManualClock)
        if isinstance(clock, ManualClock):
            clock.subscribe(_waker(self))

    # -- adding -------------------------------------------------------------------------

    def add(self, key: str) -> None:
        """Queue ``key`` now, unless it is queued already; ignored after shutdown."""
        with self._lock:
            if self._shutting_down:
                return
            self._add_locked(key)

    def add_after(self, key: str, delay: float) -> None:
        """Queue ``key`` once ``delay`` seconds have passed on the clock.

        ``delay <= 0`` adds now. If ``key`` is already waiting, the earlier due time wins.
        """
        if math.isnan(delay):
            raise ValueError("add_after delay must be a number, got nan")
        with self._lock:
            if self._shutting_down:
                return
            if delay <= 0:
                self._add_locked(key)
                return
            if self.hooks is not None:
                self.hooks.delayed(key, delay, retries=0)
            self._schedule_locked(key, self._clock.now() + delay)

    def add_rate_limited(self, key: str) -> None:
        """Queue ``key`` after the longer of its backoff (``base_delay * 2**failures``, capped
        at ``max_delay``) and the wait for a token of the shared bucket.

        Every call takes a token, even when the key's backoff is longer or the key is already
        waiting, as client-go's ``MaxOfRateLimiter`` does.
        """
        with self._lock:
            if self._shutting_down:
                return
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
            self.retries_total += 1
            if self.hooks is not None:
                self.hooks.retried()
            now = self._clock.now()
            delay = max(self._backoff(failures), self._bucket.reserve(now))
            if self.hooks is not None:
                self.hooks.delayed(key, delay, retries=failures + 1)
            self._schedule_locked(key, now + delay)

    def cancel_after(self, key: str) -> bool:
        """Stop waiting for ``key``'s due time: a delayed add its controller no longer needs.

        client-go has no such call (there the pass at the due time just finds nothing to do);
        on a fake clock it keeps the clock from jumping to a wait that would change nothing.
        A key that is queued or being processed is untouched. True if ``key`` was waiting.
        """
        with self._lock:
            return self._waiting.discard(key)

    def forget(self, key: str) -> None:
        """Reset the backoff of ``key`` (call after it was processed successfully).

        The shared bucket is untouched: tokens already taken stay taken.
        """
        with self._lock:
            self._failures.pop(key, None)

    def num_requeues(self, key: str) -> int:
        """How many rate-limited requeues ``key`` had since it was last forgotten."""
        with self._lock:
            return self._failures.get(key, 0)

    def at_max_backoff(self, key: str) -> bool:
        """True once ``key``'s failures have pushed its backoff to ``max_delay``: it is being
        retried as slowly as it ever will be (a stall, not a blip)."""
        with self._lock:
            failures = self._failures.get(key, 0)
        return failures > 0 and self._backoff(failures - 1) >= self._max_delay

    # -- taking -------------------------------------------------------------------------

    def get(self, timeout: float | None = None) -> str | None:
        """Block until a key is ready and hand it out, marking it as processing.

        Returns ``None`` on shutdown, or when ``timeout`` (real seconds) passes first.
        The caller must call :meth:`done` with the key when finished with it.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while True:
                if self._shutting_down and not self._draining:
                    return None
                if (key := self._take_ready_locked()) is not None:
                    return key
                if self._draining and not self._may_requeue_locked():
                    return None
                wait: float | None = None
                if deadline is not None:
                    wait = deadline - time.monotonic()
                    if wait <= 0:
                        return None
                if not self._clock_is_manual and not self._shutting_down:
                    due = self._next_due_locked()
                    if due is not None:
                        until_due = max(due - self._clock.now(), 0.0)
                        wait = until_due if wait is None else min(wait, until_due)
                self._item_ready.wait(wait)

    def try_get(self) -> str | None:
        """Hand out a ready key without blocking (due delayed keys first become ready)."""
        with self._lock:
            if self._shutting_down and not self._draining:
                return None
            return self._take_ready_locked()

    def _take_ready_locked(self) -> str | None:
        if not self._shutting_down:
            self._move_due_locked()
        return self._pop_locked() if self._ready else None

    def done(self, key: str) -> None:
        """Mark ``key`` as processed; if it was added meanwhile, queue it again."""
        with self._lock:
            if key not in self._processing:
                return
            self._processing.discard(key)
            if self.hooks is not None:
                self.hooks.finished(key)
            if key in self._dirty:
                self._ready.append(key)
                self._item_ready.notify()
            if self._draining:
                self._item_ready.notify_all()
                self._drained.notify_all()

    def poke(self) -> None:
        """Wake blocked getters so they re-check due keys (for example after a fake clock moved)."""
        with self._lock:
            self._item_ready.notify_all()

    # -- shutting down ------------------------------------------------------------------

    def shut_down(self) -> None:
        """Stop: adds are ignored from now on and every getter, blocked or not, gets ``None``.

        Keys waiting for a due time are dropped, so :meth:`next_due` reports ``None``.
        """
        with self._lock:
            self._shutting_down = True
            self._draining = False
            self._drop_waiting_locked()
            self._item_ready.notify_all()
            self._drained.notify_all()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """Stop accepting keys, let workers finish ready and in-flight keys, then shut down.

        Delayed keys that are not due yet are dropped. Returns ``True`` if everything was
        processed within ``timeout`` real seconds; either way the queue ends shut down.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            if not self._shutting_down:
                self._shutting_down = True
                self._draining = True
                self._drop_waiting_locked()
                self._item_ready.notify_all()
            while self._draining and (self._ready or self._processing):
                wait: float | None = None
                if deadline is not None:
                    wait = deadline - time.monotonic()
                    if wait <= 0:
                        break
                self._drained.wait(wait)
            drained = not self._ready and not self._processing
            self._draining = False
            self._item_ready.notify_all()
            return drained

    @property
    def shutting_down(self) -> bool:
        """True once :meth:`shut_down` or :meth:`shut_down_with_drain` was called."""
        with self._lock:
            return self._shutting_down

    # -- introspection ------------------------------------------------------------------

    def next_due(self) -> float | None:
        """The earliest due time (clock seconds) among waiting keys, or ``None`` if none wait."""
        with self._lock:
            return self._next_due_locked()

    def ready_len(self) -> int:
        """How many keys :meth:`try_get` could hand out right now (due keys count as ready)."""
        with self._lock:
            if not self._shutting_down:
                self._move_due_locked()
            return len(self._ready)

    def __len__(self) -> int:
        """Same as :meth:`ready_len`: the depth of the ready queue."""
        return self.ready_len()

    def waiting_len(self) -> int:
        """How many keys wait for a due time."""
        with self._lock:
            return len(self._waiting)

    def processing_len(self) -> int:
        """How many keys were handed out and are not done yet."""
        with self._lock:
            return len(self._processing)

    def contents(self, limit: int = 20) -> dict[str, object]:
        """What the queue holds, for people (the trace): ready keys in order, waiting keys by
        due time (seconds from now) with their retries, keys being processed; at most ``limit`` of each, with counts."""
        with self._lock:
            now = self._clock.now()
            waiting = self._waiting.earliest(limit)
            return {
                "ready": list(itertools.islice(self._ready, limit)),
                "readyCount": len(self._ready),
                "waiting": [
                    {"key": key, "dueIn": round(due - now, 6), "retries": self._failures.get(key, 0)}
                    for due, key in waiting
                ],
                "waitingCount": len(self._waiting),
                "processing": sorted(self._processing)[:limit],
            }

    def __repr__(self) -> str:
        with self._lock:
            return (
                f"RateLimitingQueue(name={self.name!r}, ready={len(self._ready)}, "
                f"waiting={len(self._waiting)}, processing={len(self._processing)}, "
                f"shutting_down={self._shutting_down})"
            )

    # -- internals (call with the lock held) ---------------------------------------------

    def _backoff(self, failures: int) -> float:
        exponent = min(failures, _MAX_BACKOFF_EXPONENT)
        return min(self._base_delay * 2.0**exponent, self._max_delay)

    def _add_locked(self, key: str) -> None:
        if key in self._dirty:
            return
        self.adds_total += 1
        if self.hooks is not None:
            self.hooks.added(key)
        self._dirty.add(key)
        if key in self._processing:
            return  # done() re-queues it
        self._ready.append(key)
        self._item_ready.notify()

    def _pop_locked(self) -> str:
        key = self._ready.popleft()
        self._processing.add(key)
        self._dirty.discard(key)
        if self.hooks is not None:
            self.hooks.taken(key)
        return key

    def _schedule_locked(self, key: str, due: float) -> None:
        earliest = self._waiting.schedule(key, due)
        if earliest and not self._clock_is_manual:
            # The new key is due first: getters sleeping until a later due time recompute.
            self._item_ready.notify_all()

    def _move_due_locked(self) -> None:
        for key in self._waiting.pop_due(self._clock.now()):
            self._add_locked(key)

    def _next_due_locked(self) -> float | None:
        return self._waiting.next_due()

    def _drop_waiting_locked(self) -> None:
        self._waiting.clear()

    def _may_requeue_locked(self) -> bool:
        """While draining: could a key still come back (in flight and added meanwhile)?"""
        return any(key in self._dirty for key in self._processing)
