"""The operator's periodic work on a real cluster: one thread, and none of it races the watch.

:mod:`.manager` runs the operator (cache, queue, workers, leader election); this is what its
housekeeping thread does between watch events, and when it looks again:

- resync replays the cache: every resync period each cached InferenceService is enqueued
  again (no LIST; on converged objects that costs reads only, never writes). A re-LIST here
  used to run beside the watch and put back objects whose DELETED event had been applied
  while the LIST was in flight;
- the consistency check (:mod:`.consistency`) drops cached objects that vanished while a watch
  was down (which Kopf's re-list never reports), after each Kopf re-list and every ten minutes,
  whatever the resync period, including 0;
- the watch-health check (:mod:`.watchhealth`) samples each kind with a LIST of one object
  every few seconds and fails liveness, naming the kind, when a watch stopped delivering (a
  CRD deleted and re-created leaves Kopf deaf to it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

from inference_operator.core.clock import Clock
from inference_operator.core.handler import WatchEvent
from inference_operator.kube.cache import ObjectCache
from inference_operator.kube.client import KubeClient
from inference_operator.kube.consistency import PERIOD_SECONDS, ConsistencySchedule, check_kind
from inference_operator.kube.watchhealth import WATCH_CHECK_SECONDS, WatchHealth
from inference_operator.reconcile.watches import WATCHED_KINDS, Read, Watch, watch_of

__all__ = ["Housekeeper"]

log = logging.getLogger(__name__)


class Housekeeper:
    """What is due when (the resync, each kind's consistency check, the watch-health samples),
    and the thread's loop that runs it.

    ``resync`` enqueues every cached InferenceService and says how many; ``requeue`` adds one
    key to the queue (the InferenceService of an object a consistency check dropped)."""

    def __init__(
        self,
        *,
        client: KubeClient,
        cache: ObjectCache,
        clock: Clock,
        sources: Mapping[str, Watch | Read],
        read_kinds: frozenset[str],
        namespaces: tuple[str, ...],
        resync_seconds: float,
        resync: Callable[[], int],
        requeue: Callable[[str], None],
        consistency_period: float = PERIOD_SECONDS,
        watch_check_period: float = WATCH_CHECK_SECONDS,
    ) -> None:
        self.client = client
        self.cache = cache
        self.clock = clock
        self._sources = sources
        """Every kind kept in the cache, with its selectors: checked as it was primed."""
        self._read_kinds = read_kinds
        self._namespaces = namespaces
        self._resync_seconds = resync_seconds
        self._resync = resync
        self._requeue = requeue
        self._lock = threading.Lock()
        self._wake = threading.Event()
        now = self.clock.now()
        self._next_resync = now + resync_seconds
        self.consistency = ConsistencySchedule(tuple(sources), now, period=consistency_period)
        self.consistency_drops = 0
        self.watch_health = WatchHealth(
            WATCHED_KINDS,
            namespaces=namespaces,
            selector=lambda kind: watch_of(kind).label_selector,
            now=now,
            period=watch_check_period,
        )

    def relisted(self, kind: str) -> None:
        """Kopf listed ``kind`` again (an event of type None): wake the thread when that starts
        a new burst, so the consistency check is scheduled once the burst settles.

        Called on Kopf's event loop: it must stay quick and never block."""
        with self._lock:
            new_burst = self.consistency.relisted(kind, self.clock.now())
        if new_burst:
            self._wake.set()

    def wake(self) -> None:
        """Look again now (the runtime is stopping)."""
        self._wake.set()

    def loop(self, stop: threading.Event) -> None:
        """The housekeeping thread: run what is due, sleep until the next, until ``stop``."""
        while not stop.is_set():
            delay = max(0.0, self.run_due() - self.clock.now())
            self._wake.wait(delay)
            self._wake.clear()

    def run_due(self) -> float:
        """Run what is due now (resync, consistency checks); return when to look again."""
        now = self.clock.now()
        resync = self._resync_seconds
        if resync > 0 and now >= self._next_resync:
            count = self._resync()
            self._next_resync = now + resync
            log.debug("Resynced inferenceservices=%d", count)
        with self._lock:
            due = self.consistency.due(now)
        for kind in due:
            started = self.clock.now()
            try:
                dropped = check_kind(
                    self.client,
                    self.cache,
                    kind,
                    namespaces=self._namespaces,
                    label_selector=self._sources[kind].label_selector,
                    field_selector=self._sources[kind].field_selector,
                )
            except Exception as err:  # noqa: BLE001 - a failed check is retried soon
                with self._lock:
                    self.consistency.failed(kind, self.clock.now())
                log.warning(
                    "Failed to check the cache against the API server, will retry kind=%s error=%s: %s",
                    kind,
                    type(err).__name__,
                    err,
                )
                continue
            with self._lock:
                self.consistency.checked(kind, started, self.clock.now())
            self.consistency_drops += len(dropped)
            handler = self._sources[kind].handler  # a read's: what its rule names (a Node: nothing)
            if handler is None:
                continue  # nothing to reconcile: the next count reads the cache as it is now
            for obj in dropped:
                for key in handler.keys(WatchEvent("delete", old=obj, new=None)):
                    self._requeue(key)
        if self.watch_health.due(self.clock.now()):
            self.watch_health.check(client=self.client, cache=self.cache, now=self.clock.now())
        with self._lock:
            next_check = self.consistency.next_due()
        dues = (next_check, self._next_resync if resync > 0 else None, self.watch_health.next_due())
        candidates = [t for t in dues if t is not None]
        return min(candidates, default=now + PERIOD_SECONDS)
