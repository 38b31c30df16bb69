"""``Backend`` for a real cluster: reads from the watch-fed cache, writes through KubeClient.

Writes return the API server's answer, which the reconciler uses for the rest of its pass
(the cache may lag behind by a watch event). Events are posted as core/v1 Events by a
background thread, like client-go's event broadcaster: an Event is information for people,
so a reconcile never waits for one, and failing to post one is logged, never fatal.
"""

from __future__ import annotations

import logging
import queue
import threading
import uuid
from typing import Any

from ..clock import Clock, format_timestamp
from ..constants import MANAGED_BY
from ..errors import ApiError
from .cache import ObjectCache
from .client import KubeClient

Obj = dict[str, Any]
log = logging.getLogger("inference_operator.kube")


class KubeBackend:
    """The reconciler's seam to a real kube-apiserver."""

    def __init__(self, client: KubeClient, cache: ObjectCache, clock: Clock) -> None:
        self.client = client
        self.cache = cache
        self.clock = clock
        self._lock = threading.Lock()
        self.writes = 0
        self.events = EventPoster(client)

    def _count(self) -> None:
        with self._lock:
            self.writes += 1

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.cache.get(kind, namespace, name)

    def create(self, obj: Obj) -> Obj:
        self._count()
        return self._remember(obj["kind"], self.client.create(obj))

    def patch(self, kind: str, namespace: str, name: str, patch: Obj) -> Obj:
        self._count()
        return self._remember(kind, self.client.patch(kind, namespace, name, patch))

    def update_status(self, obj: Obj) -> Obj:
        self._count()
        return self._remember(obj["kind"], self.client.update_status(obj))

    def _remember(self, kind: str, written: Obj) -> Obj:
        """Write-through, like client-go's MutationCache: the next pass must not read an
        older version than the one we just wrote (a status write with a stale
        resourceVersion would fail with Conflict). Older never replaces newer in the cache."""
        written.setdefault("kind", kind)
        self.cache.apply_event(kind, None, written)
        return written

    def list_pods(self, namespace: str, selector: str) -> list[Obj]:
        return self.client.list_objects("Pod", namespace, label_selector=selector)

    def record_event(self, obj: Obj, *, type: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        now = format_timestamp(self.clock.wall())
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "type": type,
            "reason": reason,
            "message": message[:1024],
            "source": {"component": MANAGED_BY},
            "reportingComponent": MANAGED_BY,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        self.events.post(event)


class EventPoster:
    """Posts Events from a bounded queue on one background thread; drops (and logs) when the
    queue is full rather than slowing reconciles down."""

    def __init__(self, client: KubeClient, *, capacity: int = 1000) -> None:
        self.client = client
        self._queue: queue.Queue[Obj | None] = queue.Queue(capacity)
        self._thread: threading.Thread | None = None
        self.dropped = 0

    def post(self, event: Obj) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="events", daemon=True)
            self._thread.start()
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1
            log.warning(
                "Dropped Event, too many queued reason=%s name=%s", event.get("reason"), event["involvedObject"]["name"]
            )

    def _run(self) -> None:
        while (event := self._queue.get()) is not None:
            try:
                self.client.create(event)
            except (ApiError, OSError) as err:
                involved = event["involvedObject"]
                log.warning(
                    "Failed to post Event reason=%s name=%s namespace=%s error=%s",
                    event.get("reason"),
                    involved["name"],
                    involved["namespace"],
                    err,
                )

    def stop(self, timeout: float = 5.0) -> None:
        """Post what is queued (within ``timeout``), then stop the thread."""
        if self._thread is None:
            return
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)
