"""Nodes and live Pods streamed into the cache by Kopf's list+watch, past its per-object handling.

A rollout counts free GPUs from a cache of every Node and every unfinished Pod in the cluster
(:data:`~inference_operator.reconcile.watches.CAPACITY_READS`), most of them not ours. Through
``kopf.on.event``, each of their events cost what any watched object's does: Kopf hands it to
a worker task of that object's own, with its memories, body and patch wrappers and a logger,
before the handler stores it. For the operator's own kinds that machinery is the price of
Kopf's handlers; for every status change of every pod in the cluster it was about an eighth of
the operator's CPU (at 1,000 InferenceServices on the local control plane, 16.6 ms of CPU per
object streamed this way, 17.6-20.0 ms in four runs with the handlers).

So these kinds are read with the stream beneath Kopf's handlers,
``kopf._cogs.clients.watching.infinite_watch``: a LIST in pages, then a WATCH from its
resourceVersion with bookmarks, a fresh LIST after "410 Gone" or a broken connection, with
Kopf's credentials and the selectors of its settings. Each object goes straight to the sink
(the runtime's ``on_event``), as the handler sent it: listed objects with the event type None.
That function is Kopf's internal API; ``tests/unit/kube/test_readstreams.py`` pins what is
used of it, so a Kopf upgrade that changes it fails there.

A stream that fails (the API refused the LIST, the watch sent an error) is logged, naming the
kind and the error, and started again after a backoff (1 s, doubling, at most a minute); the
watch-health check meanwhile fails liveness if the kind's cache falls behind.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Final

from kopf._cogs.clients.watching import Bookmark, infinite_watch
from kopf._cogs.structs.references import Resource

from inference_operator.core.objects import Obj
from inference_operator.reconcile.watches import Read

__all__ = ["FIRST_BACKOFF", "MAX_BACKOFF", "ReadStreams", "Sink", "kopf_resource", "stream"]

log = logging.getLogger(__name__)

Sink = Callable[[str, str | None, Obj], None]
"""Where each event goes: ``(kind, event type, object)``; the type is None for a listed object."""
Watch = Callable[..., AsyncIterator[Any]]
"""``infinite_watch``'s shape: called with ``settings``, ``resource`` and ``namespace``."""

FIRST_BACKOFF: Final = 1.0
MAX_BACKOFF: Final = 60.0


def kopf_resource(read: Read) -> Resource:
    """Kopf's reference to the read kind (a Node is cluster-scoped, a Pod namespaced)."""
    return Resource(read.group, read.version, read.plural, kind=read.kind, namespaced=read.kind != "Node")


async def stream(
    read: Read,
    *,
    settings: Any,
    sink: Sink,
    watch: Watch = infinite_watch,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Send every object of ``read``'s kind, cluster-wide, to ``sink`` until cancelled."""
    resource = kopf_resource(read)
    delay = FIRST_BACKOFF
    while True:
        why = "the stream ended"
        try:
            async for event in watch(settings=settings, resource=resource, namespace=None):
                if isinstance(event, Bookmark) or event.get("type") == "BOOKMARK":
                    continue  # the end of a LIST, or a resourceVersion to resume from: no object
                sink(read.kind, event.get("type"), event["object"])
                delay = FIRST_BACKOFF
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - the API refused, the watch failed, the sink raised: all retried
            why = f"{type(err).__name__}: {err}"
        log.error("Watch of %s stopped; listing them again in %gs error=%r", read.plural, delay, why)
        await sleep(delay)
        delay = min(delay * 2, MAX_BACKOFF)


class ReadStreams:
    """One task per read kind, on the running event loop, from :meth:`start` to :meth:`stop`."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def start(self, reads: Sequence[Read], *, settings: Any, sink: Sink, watch: Watch = infinite_watch) -> None:
        """Start streaming each kind not streamed yet (a retried startup starts nothing twice)."""
        for read in reads:
            if read.plural not in self._tasks:
                self._tasks[read.plural] = asyncio.get_running_loop().create_task(
                    stream(read, settings=settings, sink=sink, watch=watch), name=f"watch of {read.plural}"
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
        return [f"the watch of {plural} stopped" for plural, task in self._tasks.items() if task.done()]

    @property
    def streaming(self) -> tuple[str, ...]:
        """The plurals of the kinds being streamed."""
        return tuple(self._tasks)
