"""The operator's machinery on a real cluster, independent of Kopf itself.

Kopf's watch handlers call ``on_event``: the object goes into the cache and the owning
InferenceService key into the workqueue. Worker threads run the same Controller and
Reconciler as the simulator. Before the workers start, the cache is primed with one LIST per
kind, so the first passes never mistake "not yet seen" for "missing" (which would send a
create that fails with AlreadyExists: a wasted mutating request). Every resync period the
cache is re-listed and every InferenceService enqueued again; on converged objects that costs
reads only, never writes.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ..backend import LoadBalancerProvider
from ..clock import RealClock
from ..config import OperatorConfig
from ..constants import DEPLOYMENT, KIND, OWNER_LABEL, SERVICE
from ..controller import Controller
from ..lb.memory import InMemoryLoadBalancer
from ..model import changed_beyond_status, obj_key, owner_key
from ..reconciler import Reconciler
from ..workqueue import RateLimitingQueue
from .backend import KubeBackend
from .cache import ObjectCache, slim
from .client import KubeClient
from .metrics import MetricsServer

Obj = dict[str, Any]
log = logging.getLogger("inference_operator.runtime")
CHILD_KINDS = (DEPLOYMENT, SERVICE)
LIST_PAGE_SIZE = 250


def make_load_balancer(config: OperatorConfig) -> LoadBalancerProvider:
    if config.lb_provider == "http":
        from ..lb.http import HttpLoadBalancer

        assert config.lb_url is not None  # checked by OperatorConfig
        return HttpLoadBalancer(config.lb_url, timeout=config.lb_timeout)
    return InMemoryLoadBalancer()


class OperatorRuntime:
    """Cache + queue + workers + resync, wired to one KubeClient."""

    def __init__(
        self, config: OperatorConfig, client: KubeClient, load_balancer: LoadBalancerProvider | None = None
    ) -> None:
        self.config = config
        self.client = client
        self.clock = RealClock()
        self.cache = ObjectCache()
        self.backend = KubeBackend(client, self.cache, self.clock)
        self.lb = load_balancer or make_load_balancer(config)
        self.reconciler = Reconciler(
            self.backend, self.lb, self.clock, requeue_while_progressing=config.requeue_seconds
        )
        self.queue = RateLimitingQueue(self.clock, name="inferenceservice")
        self.controller = Controller("inferenceservice", self.reconciler.reconcile, self.queue)
        self._stop = threading.Event()
        self._resync_thread: threading.Thread | None = None
        self.metrics = MetricsServer(config.metrics_address, self.probe) if config.metrics_address else None

    # -- events ---------------------------------------------------------------------------------

    def on_event(self, kind: str, event_type: str | None, obj: Obj) -> None:
        """A watch event from Kopf: update the cache, enqueue the InferenceService concerned."""
        previous, obj = self.cache.apply_event(kind, event_type, obj)
        if kind == KIND:
            if previous is None or event_type == "DELETED" or changed_beyond_status(previous, obj):
                self.queue.add(obj_key(obj))
            return
        key = owner_key(obj)
        if key is not None:
            self.queue.add(key)

    # -- lifecycle ------------------------------------------------------------------------------

    def prime_cache(self) -> int:
        """LIST every kind we watch into the cache; returns how many objects were loaded."""
        loaded = 0
        for namespace in self.config.namespaces or ("",):
            for kind in (KIND, *CHILD_KINDS):
                selector = None if kind == KIND else OWNER_LABEL
                # Pages are slimmed into the cache as they come: the whole list is never held
                # twice (raw and cached) at once.
                listed: list[Obj] = []
                version = "0"
                for page, page_version in self.client.iter_pages(
                    kind, namespace, label_selector=selector, page_size=LIST_PAGE_SIZE
                ):
                    listed.extend(slim(obj) for obj in page)
                    version = page_version
                self.cache.replace_kind(kind, namespace, listed, version)
                loaded += len(listed)
        return loaded

    def enqueue_all(self) -> int:
        keys = self.cache.keys(KIND)
        for namespace, name in keys:
            self.queue.add(f"{namespace}/{name}")
        return len(keys)

    def start(self) -> None:
        if self.metrics is not None:
            self.metrics.start()
        loaded = self.prime_cache()
        queued = self.enqueue_all()
        self.controller.start(self.config.workers)
        log.info(
            "Started workers workers=%d cached=%d queued=%d resync=%gs lb=%s",
            self.config.workers,
            loaded,
            queued,
            self.config.resync_seconds,
            self.config.lb_provider,
        )
        if self.config.resync_seconds > 0:
            self._resync_thread = threading.Thread(target=self._resync_loop, name="resync", daemon=True)
            self._resync_thread.start()

    def _resync_loop(self) -> None:
        while not self._stop.wait(self.config.resync_seconds):
            try:
                self.prime_cache()
                count = self.enqueue_all()
                log.debug("Resynced inferenceservices=%d", count)
            except Exception as err:  # noqa: BLE001 - a failed resync is retried next period
                log.warning("Resync failed, will retry next period error=%s: %s", type(err).__name__, err)

    def stop(self, timeout: float = 30.0) -> bool:
        """Graceful: stop resyncing, let workers finish the item in hand."""
        self._stop.set()
        stopped = self.controller.stop(timeout)
        self.backend.events.stop()
        log.info("Stopped workers graceful=%s", stopped)
        if self.metrics is not None:
            self.metrics.stop()
        return stopped

    def probe(self) -> dict[str, int]:
        return {
            "queue_depth": len(self.queue),
            "waiting": self.queue.waiting_len(),
            "cached_objects": len(self.cache),
            "reconciles": self.controller.reconcile_total,
            "reconcile_errors": self.controller.reconcile_errors_total,
            "writes": self.backend.writes,
        }
