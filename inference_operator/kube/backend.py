"""``Backend`` for a real cluster: reads from the watch-fed cache, writes through KubeClient.

Writes return the API server's answer, which the reconciler uses for the rest of its pass
(the cache may lag behind by a watch event). Events are posted as core/v1 Events by a
background thread, like client-go's event broadcaster: an Event is information for people,
so a reconcile never waits for one, and failing to post one is logged, never fatal. Before
that, ``EventCorrelator`` (``inference_operator.control.events``) deduplicates, aggregates and
rate-limits them per object, as client-go's recorder does.

Every write and every Event first asks the write fence (``fence.py``, leader election) for the
term it may go under, at that instant: a child apply, a status or finalizer write of a pass that
began under another term, or of a process whose renewal is too old (it was paused), is refused
with ``NotLeader`` before anything is sent. An Event keeps the term it was recorded under and is
dropped by the poster, not sent, if that term is over by the time its turn comes.
"""

from __future__ import annotations

import logging
import queue
import threading
import uuid
from collections.abc import Callable

from inference_operator.api.constants import MANAGED_BY
from inference_operator.control.events import Correlated, EventCorrelator, build_event
from inference_operator.core.clock import Clock, format_timestamp
from inference_operator.core.errors import ApiError, Forbidden, NotFound
from inference_operator.core.objects import Obj
from inference_operator.kube.cache import ObjectCache
from inference_operator.kube.client import KubeClient
from inference_operator.kube.crashpoint import CrashPoint
from inference_operator.kube.fence import NotLeader, WriteFence
from inference_operator.kube.health import logged

log = logging.getLogger(__name__)
EVENT_POSTER = "event-poster"


class KubeBackend:
    """The reconciler's seam to a real kube-apiserver."""

    def __init__(
        self,
        client: KubeClient,
        cache: ObjectCache,
        clock: Clock,
        *,
        events: EventPoster | None = None,
        correlator: EventCorrelator | None = None,
        crash: CrashPoint | None = None,
        on_write: Callable[[str, str], None] | None = None,
        fence: WriteFence | None = None,
        readable: frozenset[str] = frozenset(),
    ) -> None:
        """``readable``: the kinds cached to be read (``cached``, ``cached_owned``), not watched
        for keys; others answer None."""
        self.client = client
        self.cache = cache
        self.readable = readable
        self.clock = clock
        self._lock = threading.Lock()
        self.writes = 0
        self.on_write = on_write
        """Told the verb and kind of every write (the metrics), before it is sent."""
        self.fence = fence
        """Asked before every write and Event (leader election); no term: NotLeader, nothing sent."""
        self.events = events or EventPoster(client, fence=fence)
        self.correlator = correlator or EventCorrelator(clock)
        self.crash = crash or CrashPoint()
        """The crash-point test hook (off unless armed): it sees each write once answered."""

    def may_write(self) -> bool:
        """True when a write sent now would go out (no fence: always)."""
        return self.fence is None or self.fence.term() is not None

    def _count(self, verb: str, kind: str) -> None:
        if self.fence is not None and self.fence.term() is None:
            raise NotLeader(f"{verb} {kind}: not sent, this replica does not hold the leader lease")
        with self._lock:
            self.writes += 1
        if self.on_write is not None:
            self.on_write(verb, kind)

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.cache.get(kind, namespace, name)

    def read(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.client.get(kind, namespace, name)

    def apply(self, obj: Obj) -> Obj:
        self._count("apply", obj["kind"])
        meta = obj["metadata"]
        applied = self.crash.call(
            f"apply {obj['kind']} {meta.get('namespace')}/{meta['name']}", lambda: self.client.apply(obj)
        )
        return self._remember(obj["kind"], applied)

    def patch(self, kind: str, namespace: str, name: str, patch: Obj) -> Obj:
        self._count("patch", kind)
        patched = self.crash.call(
            f"patch {kind} {namespace}/{name}", lambda: self.client.patch(kind, namespace, name, patch)
        )
        return self._remember(kind, patched)

    def update_status(self, obj: Obj) -> Obj:
        self._count("update_status", obj["kind"])
        meta = obj["metadata"]
        updated = self.crash.call(
            f"update_status {obj['kind']} {meta.get('namespace')}/{meta['name']}",
            lambda: self.client.update_status(obj),
        )
        return self._remember(obj["kind"], updated)

    def _remember(self, kind: str, written: Obj) -> Obj:
        """Write-through, like client-go's MutationCache: the next pass must not read an
        older version than the one we just wrote (a status write with a stale
        resourceVersion would fail with Conflict). Older never replaces newer in the cache.

        An answer marked for deletion with no finalizer left is the object's last state: the
        API server deleted it in the same request. It is applied as its deletion. Otherwise,
        when the watch was listing again at that moment (a restart), no DELETED event ever
        came, and every resync reconciled a gone object: a release and a 404, over and over."""
        written.setdefault("kind", kind)
        meta = written.get("metadata") or {}
        gone = bool(meta.get("deletionTimestamp")) and not meta.get("finalizers")
        self.cache.apply_event(kind, "DELETED" if gone else None, written, answer=False)
        return written

    def list_pods(self, namespace: str, selector: str) -> list[Obj]:
        # From the API server's watch cache (resourceVersion=0), not a quorum read of etcd:
        # a diagnosis a second stale is as good, and far cheaper for the control plane.
        return self.client.list_objects("Pod", namespace, label_selector=selector, from_cache=True)

    def cached(self, kind: str) -> list[Obj] | None:
        if kind not in self.readable:
            return None  # namespaced mode, or READ_CAPACITY=false: not watched, so not known
        return self.cache.objects(kind)

    def cached_owned(self, kind: str, namespace: str, owner: str) -> list[Obj] | None:
        if kind not in self.readable:
            return None
        return self.cache.labelled(kind, namespace, owner)

    def record_event(self, obj: Obj, *, type: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        term = self.fence.term() if self.fence is not None else None
        if self.fence is not None and term is None:
            log.debug("Dropped Event, not the leader reason=%s name=%s", reason, meta.get("name"))
            return
        event = build_event(
            obj,
            type=type,
            reason=reason,
            message=message,
            name=event_name(meta["name"]),
            now=format_timestamp(self.clock.wall()),
            component=MANAGED_BY,
        )
        correlated = self.correlator.correlate(event)
        if correlated is None:
            log.debug(
                "Dropped Event, too many about one object reason=%s name=%s namespace=%s",
                reason,
                meta["name"],
                meta["namespace"],
            )
            return
        self.events.post(correlated, term=term)


def _refused(err: Exception) -> bool:
    """An answer about this one request (4xx), not a sign of a server in trouble (429, 5xx,
    no answer at all): only the latter makes the poster back off."""
    return isinstance(err, ApiError) and 400 <= err.code < 500 and err.code != 429


def event_name(object_name: str) -> str:
    """A fresh, unique Event name: the involved object's name and a random suffix."""
    return f"{object_name}.{uuid.uuid4().hex[:16]}"


class EventPoster:
    """Posts Events from a bounded queue on one background thread.

    A reconcile only ever enqueues (and the queue drops, counting, when full): it never waits
    for the API server on behalf of an Event. The thread outlives any failure to post (an API
    error, a refused connection, urllib3's ``MaxRetryError``, the client's ``ApiException``
    with status 0, or a bug): it logs and counts the failure, drops that Event and backs off
    (0.5 s doubling, at most 30 s, reset by a success) before the next, so an API server
    outage costs a bounded number of attempts and log lines. An Event the server refuses
    (4xx but 429: e.g. its namespace is being deleted) is dropped without backing off: one
    terminating namespace must not hold up every other object's Events. A deduplicated Event is a PATCH
    of the existing one; when that is gone (404) it is created instead, as client-go does.
    """

    def __init__(
        self,
        client: KubeClient,
        *,
        capacity: int = 1000,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        wait: Callable[[float], object] | None = None,
        fence: WriteFence | None = None,
    ) -> None:
        self.client = client
        self.fence = fence
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._queue: queue.Queue[tuple[Correlated, int | None] | None] = queue.Queue(capacity)
        self._stopping = threading.Event()
        self._wait = wait or self._stopping.wait  # returns at once when stopping
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._consecutive_failures = 0
        self.patch_forbidden = False
        """Set when the API server refused a PATCH of an Event (403): repeats are then created."""
        self.posted = 0
        self.failures = 0
        self.dropped = 0
        self.fenced = 0
        """Events not sent because the term they were recorded under had ended."""

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._stopping.clear()
                self._thread = threading.Thread(target=logged(EVENT_POSTER, self._run), name=EVENT_POSTER, daemon=True)
                self._thread.start()

    def alive(self) -> bool:
        """False when the thread was started and has ended without being stopped."""
        thread = self._thread
        return thread is None or thread.is_alive() or self._stopping.is_set()

    def post(self, item: Correlated, *, term: int | None = None) -> None:
        """Queue ``item``; ``term``: the leader term it was recorded under (sent only while it holds)."""
        self.start()
        try:
            self._queue.put_nowait((item, term))
        except queue.Full:
            self.dropped += 1
            involved = item.event.get("involvedObject") or {}
            log.warning(
                "Dropped Event, too many queued reason=%s name=%s namespace=%s dropped=%d",
                item.event.get("reason"),
                involved.get("name"),
                involved.get("namespace"),
                self.dropped,
            )

    def _run(self) -> None:
        while (queued := self._queue.get()) is not None:
            item, term = queued
            if self.fence is not None and term is not None and not self.fence.holds(term):
                self.fenced += 1
                log.debug("Dropped Event, its leader term ended before it was sent reason=%s", item.event.get("reason"))
                continue
            try:
                self._send(item)
            except NotLeader:  # the term ended between the check above and the socket
                self.fenced += 1
            except Exception as err:  # noqa: BLE001 - any failure: log, count, back off, go on
                self._failed(item, err)
            else:
                self.posted += 1
                self._consecutive_failures = 0

    def _send(self, item: Correlated) -> None:
        event = item.event
        if item.patch is not None:
            meta = event["metadata"]
            if self.patch_forbidden:
                # Without the right to patch, a repeat is a new Event (as before dedup existed).
                self.client.create({**event, "metadata": {**meta, "name": event_name(event["involvedObject"]["name"])}})
                return
            try:
                self.client.patch("Event", meta["namespace"], meta["name"], item.patch)
                return
            except NotFound:
                pass  # never created, or expired: create it whole
            except Forbidden as err:
                self.patch_forbidden = True
                log.error(
                    "Failed to patch an Event, RBAC does not allow it: repeated Events are posted as new "
                    "ones until the operator's role grants patch on events error=%s",
                    err,
                )
                self._send(item)
                return
        self.client.create(event)

    def _failed(self, item: Correlated, err: Exception) -> None:
        self.failures += 1
        involved = item.event.get("involvedObject") or {}
        if _refused(err):
            # The API server answered and said no to this Event (its namespace is being
            # deleted, no right to post there, an invalid field): nothing is wrong with the
            # server, so the Events of every other object go on without waiting.
            log.warning(
                "Failed to post Event, the API server refused it, dropped it reason=%s name=%s namespace=%s "
                "failures=%d error=%s",
                item.event.get("reason"),
                involved.get("name"),
                involved.get("namespace"),
                self.failures,
                err,
            )
            return
        self._consecutive_failures += 1
        delay = min(self.max_backoff, self.backoff * 2 ** min(self._consecutive_failures - 1, 30))
        log.warning(
            "Failed to post Event, dropped it and backing off reason=%s name=%s namespace=%s "
            "failures=%d backoff=%gs error=%s: %s",
            item.event.get("reason"),
            involved.get("name"),
            involved.get("namespace"),
            self.failures,
            delay,
            type(err).__name__,
            err,
        )
        self._wait(delay)

    def pending(self) -> int:
        """Events queued and not yet posted (or dropped)."""
        return self._queue.qsize()

    def stop(self, timeout: float = 5.0) -> None:
        """Post what is queued (within ``timeout``, without backing off), then stop the thread."""
        self._stopping.set()
        thread = self._thread
        if thread is None:
            return
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        thread.join(timeout)
