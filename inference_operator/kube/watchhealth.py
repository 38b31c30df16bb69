"""Never deaf: noticing that the watch of a kind stopped delivering, and failing liveness for it.

The operator's streams (:mod:`.streams`) list a kind again by themselves after any failure, the
CRD re-creation below included; this check stays as the net for every other way a watch can
stop delivering. Why it was written: Kopf 1.45 serves a resource only while its own discovery scan says it exists
(``kopf/_core/reactor/observation.py``). It scans again on each event of the CRDs watch, and
on nothing else. When a CRD is deleted and re-created (a reinstall, a botched upgrade), the CRD
events of the re-creation all arrive within a fraction of a second — before the API server's
discovery serves the new resource — so every scan logs "Unresolved resources cannot be served
(try creating their CRDs)", the watcher is not started again, and no later event ever triggers
another scan. A watcher whose LIST answers 404 meanwhile dies (``aiotasks.guard`` logs "has
failed") and is never restarted either; with ``settings.scanning.disabled`` (namespaced mode)
that is the only path. In both cases Kopf keeps answering its liveness probe, the cache never
sees a new object, new InferenceServices are never reconciled, deletions hang on the finalizer.

The check, cheap and generic (any way a watch can stop being served): every ``period`` seconds,
per watched kind and namespace, one LIST with ``limit=1`` (metadata only, a quorum read: one
etcd key) samples the first object the API server holds. If the cache holds that object at that
resourceVersion or newer, the watch delivered it. If not, the sample is kept pending; a watch
delivers within milliseconds, even under a storm within seconds, so a sample still not in the
cache ``grace`` seconds after it was first seen means the watch is deaf. Then ``problems`` names
the kind and the object, both liveness answers fail, and the kubelet restarts the pod; the new
process lists and watches afresh. A kind the API server does not serve (404: the CRD is gone)
is not a problem of ours — nothing can be watched, and a restart would not help.

What it does not see: a deaf watch whose first object never changes after the watch stopped
(it is in the cache at its current version). After a CRD re-creation all objects are new, so
that case is covered; for the rest the hourly-scale consistency check and resync still run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from inference_operator.core.errors import NotFound
from inference_operator.core.objects import Obj
from inference_operator.kube.cache import ObjectCache, resource_version
from inference_operator.kube.consistency import Lister

__all__ = ["WATCH_CHECK_SECONDS", "WATCH_GRACE_SECONDS", "WatchHealth"]

log = logging.getLogger(__name__)
WATCH_CHECK_SECONDS = 5.0
WATCH_GRACE_SECONDS = 10.0


class Selectors(Protocol):
    def __call__(self, kind: str) -> str | None: ...


@dataclass(frozen=True)
class _Sample:
    namespace: str
    name: str
    uid: str
    version: int
    seen_at: float


class WatchHealth:
    """Per (kind, namespace): the sample not yet delivered by the watch, and what is deaf."""

    def __init__(
        self,
        kinds: Iterable[str],
        *,
        namespaces: Iterable[str],
        selector: Selectors,
        now: float,
        period: float = WATCH_CHECK_SECONDS,
        grace: float = WATCH_GRACE_SECONDS,
    ) -> None:
        self.kinds = tuple(kinds)
        self.namespaces = tuple(namespaces)
        self.selector = selector
        self.period = period
        self.grace = grace
        self._next = now + period
        self._pending: dict[tuple[str, str], _Sample] = {}
        self._deaf: dict[tuple[str, str], str] = {}
        self._unserved: set[tuple[str, str]] = set()
        self.checks = 0

    @property
    def enabled(self) -> bool:
        return self.period > 0

    def next_due(self) -> float | None:
        return self._next if self.enabled else None

    def due(self, now: float) -> bool:
        return self.enabled and now >= self._next

    def problems(self) -> list[str]:
        """One line per deaf watch, naming the kind: what the liveness answers fail with."""
        return list(self._deaf.values())

    def check(self, *, client: Lister, cache: ObjectCache, now: float) -> None:
        """Sample each kind once; a failed LIST is no evidence either way (tried next period)."""
        self._next = now + self.period
        for kind in self.kinds:
            for namespace in self.namespaces:
                try:
                    first = self._first(client, kind, namespace)
                except NotFound:
                    self._not_served(kind, namespace)
                    continue
                except Exception as err:  # noqa: BLE001 - the API server is busy: look next period
                    log.debug("Failed to sample the watch kind=%s namespace=%s error=%s", kind, namespace, err)
                    continue
                self._unserved.discard((kind, namespace))
                self._judge(kind, namespace, first, cache, now)
        self.checks += 1

    def _first(self, client: Lister, kind: str, namespace: str) -> Obj | None:
        pages = client.iter_pages(kind, namespace, label_selector=self.selector(kind), page_size=1, metadata_only=True)
        try:
            items, _ = next(iter(pages), ([], ""))
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                close()
        return items[0] if items else None

    def _delivered(self, cache: ObjectCache, kind: str, sample: _Sample) -> bool:
        cached = cache.version(kind, sample.namespace, sample.name)
        if cached is None:
            return cache.deleted(sample.uid, sample.version)  # delivered, and deleted since
        uid, version = cached
        return uid == sample.uid and version >= sample.version

    def _judge(self, kind: str, namespace: str, first: Obj | None, cache: ObjectCache, now: float) -> None:
        key = (kind, namespace)
        pending = self._pending.get(key)
        if pending is not None and self._delivered(cache, kind, pending):
            del self._pending[key]
            pending = None
            if self._deaf.pop(key, None) is not None:
                log.info("Saw the watch deliver again kind=%s namespace=%s", kind, namespace or "*")
        if first is None or pending is not None:
            self._deaf_if_late(key, pending, now)
            return
        meta = first.get("metadata") or {}
        sample = _Sample(
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            str(meta.get("uid") or ""),
            resource_version(first),
            now,
        )
        if not self._delivered(cache, kind, sample):
            self._pending[key] = sample

    def _deaf_if_late(self, key: tuple[str, str], pending: _Sample | None, now: float) -> None:
        if pending is None or now - pending.seen_at < self.grace or key in self._deaf:
            return
        kind, namespace = key
        problem = (
            f"watch of {kind} stopped delivering: {pending.namespace}/{pending.name} (uid {pending.uid}) is at "
            f"resourceVersion {pending.version} on the API server, unseen by the operator for "
            f"{now - pending.seen_at:.0f}s (was its CRD deleted and re-created?); restart to watch it again"
        )
        self._deaf[key] = problem
        log.critical(
            "Found the watch deaf, the operator is unhealthy until restarted kind=%s namespace=%s object=%s/%s "
            "unseen_for=%.0fs",
            kind,
            namespace or "*",
            pending.namespace,
            pending.name,
            now - pending.seen_at,
        )

    def _not_served(self, kind: str, namespace: str) -> None:
        key = (kind, namespace)
        self._pending.pop(key, None)
        self._deaf.pop(key, None)
        if key not in self._unserved:
            self._unserved.add(key)
            log.warning(
                "Found the kind not served by the API server, nothing to watch until it is kind=%s namespace=%s",
                kind,
                namespace or "*",
            )
