"""Every watched kind streamed into the runtime by Kopf's list+watch, past its per-object handling.

The operator hears of changes through its cache: each watch event goes to
``OperatorRuntime.on_event``, which stores the object and enqueues the keys the watch rule
names. That is all an event needs. Through ``kopf.on.event`` handlers each event first cost
what Kopf's handler machinery costs for any object: a worker task of that object's own, its
memories, body and patch wrappers and a logger, around a handler that then only called
``on_event``. That machinery was most of the operator's CPU: at 1,000 InferenceServices on the
local control plane, 13.0 ms of CPU per object with every kind streamed, 16.6 ms with only Nodes
and Pods streamed, 17.6-20.0 ms in four runs with handlers for all (bench/cluster.py, 2026-12-07).

So every kind is read with the stream beneath Kopf's handlers,
``kopf._cogs.clients.watching.infinite_watch``: a LIST in pages, then a WATCH from its
resourceVersion with bookmarks, a fresh LIST after "410 Gone" or a broken connection, with
Kopf's credentials and the selectors of its settings (the owner label for the children, the
unfinished-pod field selector). Each object goes straight to the sink, as the handlers sent it:
listed objects with the event type None. That function is Kopf's internal API;
``tests/unit/kube/test_streams.py`` pins what is used of it, so a Kopf upgrade that changes it
fails there.

A stream that fails (the API refused the LIST, the kind is not served, the watch sent an
error) is logged, naming the kind and the error, and listed again after a backoff (1 s,
doubling, at most a minute): a CRD deleted and re-created is served again by itself. The
watch-health check meanwhile fails liveness if a kind's cache falls behind; a stream whose task
ended fails it too (:meth:`Streams.problems`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Final

from kopf._cogs.clients.watching import Bookmark, infinite_watch
from kopf._cogs.structs.references import Resource

from inference_operator.core.objects import Obj
from inference_operator.reconcile.watches import CAPACITY_READS, WATCHES, Read, Watch

__all__ = ["FIRST_BACKOFF", "MAX_BACKOFF", "Sink", "Source", "Streams", "kopf_resource", "sources_of", "stream"]

log = logging.getLogger(__name__)

Sink = Callable[[str, str | None, Obj], None]
"""Where each event goes: ``(kind, event type, object)``; the type is None for a listed object."""
Source = tuple[Watch | Read, str | None]
"""A kind and the namespace it is streamed from (None: cluster-wide)."""
WatchFunction = Callable[..., AsyncIterator[Any]]
"""``infinite_watch``'s shape: called with ``settings``, ``resource`` and ``namespace``."""

FIRST_BACKOFF: Final = 1.0
MAX_BACKOFF: Final = 60.0


def sources_of(*, namespaces: tuple[str, ...], reads_capacity: bool) -> list[Source]:
    """What the operator streams: each watched kind in each namespace it serves (none named:
    cluster-wide), and where it reads capacity every Node and every unfinished Pod."""
    scopes: tuple[str | None, ...] = namespaces or (None,)
    found: list[Source] = [(watch, namespace) for watch in WATCHES for namespace in scopes]
    if reads_capacity:
        found += [(read, None) for read in CAPACITY_READS]
    return found


def kopf_resource(kind: Watch | Read) -> Resource:
    """Kopf's reference to a kind (a Node is cluster-scoped, every other kind namespaced)."""
    return Resource(kind.group, kind.version, kind.plural, kind=kind.kind, namespaced=kind.kind != "Node")


def name_of(source: Source) -> str:
    """How logs and liveness name a stream: ``pods``, ``inferenceservices in team-a``."""
    kind, namespace = source
    return kind.plural if namespace is None else f"{kind.plural} in {namespace}"


async def stream(
    source: Source,
    *,
    settings: Any,
    sink: Sink,
    watch: WatchFunction = infinite_watch,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Send every object of ``source`` to ``sink`` until cancelled."""
    kind, namespace = source
    resource = kopf_resource(kind)
    delay = FIRST_BACKOFF
    while True:
        why = "the stream ended"
        try:
            async for event in watch(settings=settings, resource=resource, namespace=namespace):
                if isinstance(event, Bookmark) or event.get("type") == "BOOKMARK":
                    continue  # the end of a LIST, or a resourceVersion to resume from: no object
                sink(kind.kind, event.get("type"), event["object"])
                delay = FIRST_BACKOFF
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - the API refused, the watch failed, the sink raised: all retried
            why = f"{type(err).__name__}: {err}"
        log.error("Watch of %s stopped; listing them again in %gs error=%r", name_of(source), delay, why)
        await sleep(delay)
        delay = min(delay * 2, MAX_BACKOFF)


class Streams:
    """One task per source, on the running event loop, from :meth:`start` to :meth:`stop`."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def start(
        self, sources: Sequence[Source], *, settings: Any, sink: Sink, watch: WatchFunction = infinite_watch
    ) -> None:
        """Start streaming each source not streamed yet (a retried startup starts nothing twice)."""
        loop = asyncio.get_running_loop()
        for source in sources:
            name = name_of(source)
            if name not in self._tasks:
                self._tasks[name] = loop.create_task(
                    stream(source, settings=settings, sink=sink, watch=watch), name=f"watch of {name}"
                )

    async def stop(self) -> None:
        """Cancel the streams and wait until they are gone."""
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def problems(self) -> list[str]:
        """What liveness must report: a stream whose task ended (it only ends when stopped)."""
        return [f"the watch of {name} stopped" for name, task in self._tasks.items() if task.done()]

    @property
    def streaming(self) -> tuple[str, ...]:
        """The names of the sources being streamed."""
        return tuple(self._tasks)
