"""Dropping cached objects that vanished while a watch was down, without racing the watch.

Why this exists. Kopf 1.45 (``kopf/_cogs/clients/watching.py``, ``continuous_watch``) LISTs
a kind, yields every item as an event of type ``None``, then watches from the list's
resourceVersion. When the watch ends with "410 Gone", or the connection fails while listing,
it starts over with a fresh LIST. An object deleted while the watch was down is simply absent
from that new LIST: no DELETED event is ever sent, and the end of the listing (Kopf's internal
``Bookmark.LISTED``) never reaches ``on.event`` handlers, so they cannot tell which objects
the re-list left out. Reconciling the cache against Kopf's re-list is therefore impossible
from the outside (and an empty re-list sends no event at all). A child deleted in that window
stays in our cache and the operator never recreates it; with resync 0 (allowed by the chart)
nothing ever notices.

The choice: our own cheap consistency LIST (metadata only, in pages), that only *removes*:
a cached object missing from a LIST answered at resourceVersion R is dropped only when it is
older than R (``ObjectCache.drop_missing``); it adds and refreshes nothing, so it can run
beside the watch without racing it (the watch alone brings objects in). Dropped objects are
reported to the caller, which enqueues their InferenceService, as a DELETED event would have.

When it runs (``ConsistencySchedule``, pure and clock-injected):

- after Kopf lists a kind (its events of type ``None``, at startup and after every re-list),
  once the burst has been quiet for ``settle`` seconds (at most ``max_settle`` after it began):
  the common case is repaired within seconds, at the cost of one metadata LIST per re-list;
- every ``period`` seconds regardless, which bounds the case no event reveals (an empty re-list).

This is independent of resync, which replays the cache into the queue and lists nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from inference_operator.core.objects import Obj
from inference_operator.kube.cache import ObjectCache

log = logging.getLogger(__name__)

PERIOD_SECONDS = 600.0
SETTLE_SECONDS = 5.0
MAX_SETTLE_SECONDS = 60.0
RETRY_SECONDS = 30.0
PAGE_SIZE = 500


class Lister(Protocol):
    def iter_pages(
        self,
        kind: str,
        namespace: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        from_cache: bool = False,
        page_size: int | None = None,
        metadata_only: bool = False,
    ) -> Iterable[tuple[list[Obj], str]]: ...


@dataclass
class _Due:
    periodic: float
    relist_first: float | None = None
    relist_last: float | None = None

    def relist_due(self, settle: float, max_settle: float) -> float | None:
        if self.relist_first is None or self.relist_last is None:
            return None
        return min(self.relist_last + settle, self.relist_first + max_settle)


class ConsistencySchedule:
    """When each kind is due for a consistency check. No lock: the housekeeper holds one."""

    def __init__(
        self,
        kinds: Iterable[str],
        now: float,
        *,
        period: float = PERIOD_SECONDS,
        settle: float = SETTLE_SECONDS,
        max_settle: float = MAX_SETTLE_SECONDS,
        retry: float = RETRY_SECONDS,
    ) -> None:
        self.period = period
        self.settle = settle
        self.max_settle = max_settle
        self.retry = retry
        self._due = {kind: _Due(periodic=now + period) for kind in kinds}

    def relisted(self, kind: str, now: float) -> bool:
        """Kopf listed ``kind`` (an event of type None); True when this starts a new burst."""
        due = self._due.get(kind)
        if due is None:
            return False
        due.relist_last = now
        if due.relist_first is None:
            due.relist_first = now
            return True
        return False

    def due(self, now: float) -> list[str]:
        """The kinds whose check is due at ``now``."""
        return [kind for kind, due in self._due.items() if self._next(due) <= now]

    def next_due(self) -> float | None:
        """The earliest time a check is due, None when no kind is watched."""
        return min((self._next(due) for due in self._due.values()), default=None)

    def checked(self, kind: str, started: float, now: float) -> None:
        """A check of ``kind`` that began at ``started`` succeeded: re-lists seen before it
        began are covered by it; later ones still get their own."""
        due = self._due[kind]
        due.periodic = now + self.period
        if due.relist_last is not None and due.relist_last <= started:
            due.relist_first = due.relist_last = None

    def failed(self, kind: str, now: float) -> None:
        due = self._due[kind]
        due.periodic = now + self.retry
        if due.relist_first is not None:
            due.relist_first = due.relist_last = None

    def _next(self, due: _Due) -> float:
        relist = due.relist_due(self.settle, self.max_settle)
        return due.periodic if relist is None else min(due.periodic, relist)


def check_kind(
    client: Lister,
    cache: ObjectCache,
    kind: str,
    *,
    namespaces: Iterable[str],
    label_selector: str | None,
    field_selector: str | None = None,
) -> list[Obj]:
    """LIST ``kind`` (metadata only) in each namespace ("" for all) and drop from the cache
    what the list shows was deleted. Returns the dropped objects."""
    dropped: list[Obj] = []
    for namespace in namespaces:
        uids: set[str] = set()
        version = "0"
        for page, page_version in client.iter_pages(
            kind,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            page_size=PAGE_SIZE,
            metadata_only=True,
        ):
            uids.update(str((item.get("metadata") or {}).get("uid") or "") for item in page)
            version = page_version
        dropped += cache.drop_missing(kind, namespace, uids, version)
    for obj in dropped:
        meta = obj.get("metadata") or {}
        log.info(
            "Dropped cached object deleted while the watch was down kind=%s namespace=%s name=%s uid=%s",
            kind,
            meta.get("namespace"),
            meta.get("name"),
            meta.get("uid"),
        )
    return dropped
