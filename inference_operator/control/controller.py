"""The control loop: take a key from the workqueue, reconcile it, decide when to look again.

``process_next_work_item`` mirrors controller-runtime's function of the same name:

- the reconciler raised → ``add_rate_limited`` (per-key exponential backoff);
- ``requeue_after`` → ``forget`` then ``add_after``;
- ``requeue`` (without a delay) → ``add_rate_limited``, as controller-runtime's ``AddRateLimited``:
  the key comes back after its backoff, and its failures are not forgotten, so a pass that
  keeps asking again without saying when cannot spin;
- otherwise → ``forget`` (converged).

The same loop runs on worker threads against a real cluster and step by step, on a fake
clock, in the simulator (``step``, driven by ``inference_operator.sim.quiescence``).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from inference_operator.control.metrics import Metrics
from inference_operator.control.queuehooks import ChainedHooks, QueueHooks, QueueTrace
from inference_operator.control.workqueue import RateLimitingQueue
from inference_operator.core.objects import split_key
from inference_operator.core.ports import Result
from inference_operator.trace.recorder import NULL_TRACER, Tracer

log = logging.getLogger(__name__)


class ReconcileFunc(Protocol):
    def __call__(self, namespace: str, name: str) -> Result: ...


@dataclass(frozen=True)
class PassEnd:
    """How one pass ended: controller-runtime's outcome, the delay it asked for, its error."""

    outcome: str
    requeue_after: float | None = None
    error: str = ""


class Controller:
    """One reconciler fed by one workqueue, driven by worker threads or by ``step``."""

    def __init__(
        self,
        name: str,
        reconcile: ReconcileFunc,
        queue: RateLimitingQueue,
        *,
        metrics: Metrics | None = None,
        tracer: Tracer = NULL_TRACER,
    ) -> None:
        self.name = name
        self.reconcile = reconcile
        self.queue = queue
        self.metrics = metrics
        self.tracer = tracer
        """Told of each dequeue (with the queue's contents), each pass's end, and the queue's adds."""
        self._queue_metrics = metrics.queue(queue.name or name, depth=queue.__len__) if metrics else None
        hooks: QueueHooks | None = self._queue_metrics
        if tracer.enabled:
            hooks = QueueTrace(tracer) if hooks is None else ChainedHooks(hooks, QueueTrace(tracer))
        queue.hooks = hooks
        self._event_at: dict[str, float] = {}
        """When the first watch event since the key's last pass queued it (for the latency metric)."""
        self.reconcile_total = 0
        self.reconcile_errors_total = 0
        self.failing: dict[str, tuple[int, str]] = {}
        """Keys whose last pass failed: consecutive failures and the last error, for people."""
        self._lock = threading.Lock()

    def forget_waits(self) -> None:
        """Latencies count from now for every key already queued: a standby that starts to lead
        measures its own delay, not the time it was not allowed to work."""
        with self._lock:
            self._event_at.clear()
        if self._queue_metrics is not None:
            self._queue_metrics.forget_waits()

    def enqueue(self, key: str) -> None:
        """Queue ``key`` because a watch event concerns it (timed, unlike the loop's own requeues)."""
        if self.metrics is not None:
            now = self.metrics.clock.now()
            with self._lock:
                self._event_at.setdefault(key, now)
        self.queue.add(key)

    def process(self, key: str) -> None:
        """Reconcile ``key`` (already taken from the queue) and requeue as the result says."""
        if self.tracer.enabled:
            self._traced(key)
        elif self.metrics is None:
            self._process(key)
        else:
            self._measured(key, self.metrics)

    def _traced(self, key: str) -> None:
        """``process``, told to the tracer: the dequeue with what the queue held, then the end."""
        self.tracer.dequeued(self.name, key, retries=self.queue.num_requeues(key), queue=self.queue.contents())
        end = PassEnd("error")
        try:
            end = self._measured(key, self.metrics) if self.metrics is not None else self._process(key)
        finally:
            self.tracer.finished(self.name, key, outcome=end.outcome, requeue_after=end.requeue_after, error=end.error)

    def _measured(self, key: str, metrics: Metrics) -> PassEnd:
        with self._lock:
            event_at = self._event_at.pop(key, None)
        if event_at is not None:
            metrics.event_to_reconcile(metrics.clock.now() - event_at)
        metrics.active_workers.labels(controller=metrics.controller).inc()
        started = time.perf_counter()
        try:
            end = self._process(key)
        finally:
            metrics.active_workers.labels(controller=metrics.controller).dec()
        metrics.reconciled(end.outcome, time.perf_counter() - started)
        return end

    def _process(self, key: str) -> PassEnd:
        """One pass, and how it ended (controller-runtime's ``success``, ``error`` …)."""
        namespace, name = split_key(key)
        try:
            result = self.reconcile(namespace, name)
        except Exception as err:
            with self._lock:
                self.reconcile_total += 1
                self.reconcile_errors_total += 1
            retries = self.queue.num_requeues(key)
            with self._lock:
                self.failing[key] = (self.failing.get(key, (0, ""))[0] + 1, f"{type(err).__name__}: {err}")
            log.warning(
                "Reconcile failed, retrying with backoff controller=%s key=%s retries=%d error=%s: %s",
                self.name,
                key,
                retries,
                type(err).__name__,
                err,
                exc_info=log.isEnabledFor(logging.DEBUG),
            )
            self.queue.done(key)
            self.queue.add_rate_limited(key)
            return PassEnd("error", error=f"{type(err).__name__}: {err}")
        with self._lock:
            self.reconcile_total += 1
            self.failing.pop(key, None)
        self.queue.done(key)
        if result.requeue_after is not None and result.requeue_after > 0:
            self.queue.forget(key)
            self.queue.add_after(key, result.requeue_after)
            return PassEnd("requeue_after", requeue_after=result.requeue_after)
        if result.requeue:
            self.queue.add_rate_limited(key)
            return PassEnd("requeue")
        self.queue.forget(key)
        return PassEnd("success")

    def stalled(self) -> dict[str, str]:
        """Keys that keep failing (their backoff has reached its maximum), each with how many
        times in a row and the last error: what a person should look at."""
        with self._lock:
            failing = list(self.failing.items())
        return {
            key: f"failed {failures} times in a row, last with {error}"
            for key, (failures, error) in failing
            if self.queue.at_max_backoff(key)
        }

    def step(self) -> bool:
        """Process one ready key without blocking; False when none is ready."""
        key = self.queue.try_get()
        if key is None:
            return False
        self.process(key)
        return True

    def process_next_work_item(self, timeout: float | None = None) -> bool:
        """Block for the next key and process it; False once the queue is shut down."""
        key = self.queue.get(timeout=timeout)
        if key is None:
            return not self.queue.shutting_down
        self.process(key)
        return True
