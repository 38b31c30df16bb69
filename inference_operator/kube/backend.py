"""``Backend`` for a real cluster: reads from the watch-fed cache, writes through KubeClient.

Writes return the API server's answer, which the reconciler uses for the rest of its pass
(the cache may lag behind by a watch event). Events are posted as core/v1 Events; failing to
post one is logged, never fatal.
"""

from __future__ import annotations

import logging
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

    def _count(self) -> None:
        with self._lock:
            self.writes += 1

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.cache.get(kind, namespace, name)

    def create(self, obj: Obj) -> Obj:
        self._count()
        return self.client.create(obj)

    def patch(self, kind: str, namespace: str, name: str, patch: Obj) -> Obj:
        self._count()
        return self.client.patch(kind, namespace, name, patch)

    def update_status(self, obj: Obj) -> Obj:
        self._count()
        return self.client.update_status(obj)

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
        try:
            self.client.create(event)
        except ApiError as err:
            log.warning(
                "Failed to post Event reason=%s name=%s namespace=%s error=%s",
                reason,
                meta["name"],
                meta["namespace"],
                err,
            )
