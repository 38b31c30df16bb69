"""Kopf glue: ``kopf run -m inference_operator.operator`` (or ``inference-operator run``).

Kopf supplies what is hard to get right: list+watch with reconnects and 410 handling,
peering, the liveness endpoint (our probe fails it when a worker or the Event poster thread
died), logging and the CLI. Its ``on.event`` handlers write nothing to the objects (no
bookkeeping annotations, no Kopf finalizer); here they only feed the cache and the workqueue
of ``OperatorRuntime``, whose worker threads run the same reconciler as the simulator.
Deployments and Services are watched with a server-side label selector (the owner label), so
the operator never caches the cluster's other workloads. In cluster mode it also streams every
Node and every unfinished Pod (a field selector) into the cache, slimmed to what a rollout's GPU
count reads, with Kopf's list+watch but not its handlers (:mod:`.kube.readstreams`); they start
once the runtime has, so namespaced mode never asks for Nodes it cannot read.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, cast

import kopf

from inference_operator.core.objects import Obj
from inference_operator.core.process import limit_malloc_arenas
from inference_operator.kube.client import KubeClient
from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.manager import LIST_PAGE_SIZE, OperatorRuntime
from inference_operator.kube.preflight import KubeconfigError
from inference_operator.kube.readstreams import ReadStreams, Sink
from inference_operator.reconcile.watches import CAPACITY_READS, WATCHES, Watch

log = logging.getLogger(__name__)
_runtime: OperatorRuntime | None = None
HandlerFactory = Callable[[Watch], Callable[..., Awaitable[None]]]
"""Makes the ``on.event`` handler of one watched kind."""


def runtime() -> OperatorRuntime:
    if _runtime is None:
        raise RuntimeError("the operator runtime is not started (Kopf startup handler has not run)")
    return _runtime


class NoDiffBase(kopf.DiffBaseStorage):
    """Kopf's diff-base ("last handled configuration") serves its change-detecting handlers
    (on.create/update/field). We register only ``on.event`` handlers, so it is never used,
    yet building it deep-copies every object on every watch event: about three quarters of
    the operator's CPU under load. This storage keeps nothing and costs nothing."""

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        return None


def namespaces_from_argv(argv: list[str]) -> tuple[str, ...]:
    """The ``-n/--namespace`` values of a ``kopf run`` command line."""
    found: list[str] = []
    for i, arg in enumerate(argv):
        if arg in ("-n", "--namespace") and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif arg.startswith("--namespace="):
            found.append(arg.split("=", 1)[1])
    return tuple(found)


@kopf.on.startup()
def start(settings: kopf.OperatorSettings, **_: Any) -> None:
    global _runtime
    limit_malloc_arenas()  # also when started as `kopf run -m inference_operator.operator`
    config = OperatorConfig.from_env()
    if not config.namespaces:  # `kopf run -m inference_operator.operator -n NS` sets no env var
        config = dataclasses.replace(config, namespaces=namespaces_from_argv(sys.argv))
    configure(settings, config)
    # Kopf retries this handler when it raises (say the first LIST failed): reuse the runtime
    # unless its failed start closed it; start() binds the metrics port only after the LIST.
    if _runtime is None or _runtime.closed:
        try:
            client = KubeClient.from_environment(identity=config.identity)
        except KubeconfigError as err:
            # Nothing a retry can fix, and nothing has started yet: one line, exit code 2 (as
            # `inference-operator run` says it), not Kopf's tracebacks of a failed activity.
            log.error("Stopped: %s", err)
            logging.shutdown()
            os._exit(2)
        _runtime = OperatorRuntime(config, client)
    _runtime.start()


def configure(settings: kopf.OperatorSettings, config: OperatorConfig) -> None:
    """Kopf's settings for the operator (in cluster mode also the selectors of the Node and
    Pod streams, which read them from the settings)."""
    settings.posting.enabled = False  # we post the Events we mean, not log lines
    settings.persistence.diffbase_storage = NoDiffBase()
    # Each per-object worker of Kopf keeps its last event (the whole object) while it idles;
    # in an event storm over thousands of objects that is most of the operator's memory, and
    # a restart lists every object at once (at 1,000: 135-144 MiB after a restart with 0.5 s,
    # 117-118 MiB with 0.05 s, for the same CPU). Our handlers only enqueue keys, so a short
    # idle time costs nothing.
    settings.queueing.idle_timeout = 0.05
    # List pre-existing objects in pages, not all at once: a restart with thousands of objects
    # would otherwise hold every one of them twice over while parsing.
    settings.watching.chunk_size = LIST_PAGE_SIZE
    for watch in WATCHES:
        if watch.label_selector:  # children: only those carrying the owner label are listed and watched
            settings.watching.label_selectors[watch.group or watch.version, watch.plural] = watch.label_selector
    if config.reads_capacity:
        for read in CAPACITY_READS:
            if read.field_selector:
                settings.watching.field_selectors[read.group or read.version, read.plural] = read.field_selector
    settings.peering.standalone = True  # replicas coordinate through our own Lease, not Kopf peering
    if config.namespaces:
        # Namespaced mode runs with a Role only: no cluster-wide CRD/namespace watching.
        settings.scanning.disabled = True
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        # Kopf logs "Handler 'x' succeeded." for every watch event; our own logs say what matters.
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)


def liveness(rt: OperatorRuntime) -> dict[str, int]:
    """The probe's answer: the counters, or a failure naming what died (a worker, the Event
    poster). Kopf answers a failed probe handler with HTTP 500, so the kubelet restarts us."""
    problems = rt.health()
    if problems:
        raise kopf.PermanentError("Unhealthy: " + "; ".join(problems))
    return rt.probe()


@kopf.on.probe(id="operator", errors=kopf.ErrorsMode.PERMANENT)
def probe(**_: Any) -> dict[str, int]:
    return liveness(runtime())


def register_reads(registry: kopf.OperatorRegistry, sink_of: Callable[[], Sink | None]) -> ReadStreams:
    """Stream the kinds a rollout counts capacity from (every Node, every unfinished Pod) into
    ``sink_of()``'s sink once Kopf has started (None: read none, as in namespaced mode), until
    it stops. ``sink_of`` may raise ``kopf.TemporaryError``: Kopf then asks again later."""
    streams = ReadStreams()

    @kopf.on.startup(id="capacity-reads-start", registry=registry)
    async def start_reads(settings: kopf.OperatorSettings, **_: Any) -> None:
        sink = sink_of()
        if sink is not None:
            streams.start(CAPACITY_READS, settings=settings, sink=sink)

    @kopf.on.cleanup(id="capacity-reads-stop", registry=registry)
    async def stop_reads(**_: Any) -> None:
        await streams.stop()

    return streams


def runtime_sink(rt: OperatorRuntime | None, streams: ReadStreams) -> Sink | None:
    """The runtime's event entry for ``streams``, once it has started (Kopf runs the startup
    handlers in order, so it has, unless its start failed and is being retried); None when
    it reads no capacity (namespaced mode, ``READ_CAPACITY=false``)."""
    if rt is None or not rt.started:
        raise kopf.TemporaryError("the operator runtime has not started yet", delay=1)
    if not rt.config.reads_capacity:
        return None
    rt.streams_health = streams.problems  # liveness, and the metrics server's /healthz
    return rt.on_event


def _kopf_resource(watch: Watch) -> tuple[str, ...]:
    """How Kopf names a resource: ``(group, version, plural)``, or ``(version, plural)`` for the
    core group."""
    return (watch.group, watch.version, watch.plural) if watch.group else (watch.version, watch.plural)


def _watch_handler(watch: Watch) -> Callable[..., Awaitable[None]]:
    async def on_event(event: kopf.RawEvent, **_: Any) -> None:
        runtime().on_event(watch.kind, event.get("type"), cast(Obj, event["object"]))

    return on_event


def register_watches(registry: kopf.OperatorRegistry, handler: HandlerFactory) -> None:
    """One ``on.event`` handler per watched kind, from the reconciler's own declaration of what
    wakes it (the simulator's informers are wired from the same list). Children are filtered by
    their owner label here too, besides the server-side selector :func:`configure` sets."""
    for watch in WATCHES:
        kopf.on.event(
            *_kopf_resource(watch),
            id=f"{watch.plural}-event",
            labels={watch.label_selector: kopf.PRESENT} if watch.label_selector else None,
            registry=registry,
        )(handler(watch))


register_watches(kopf.get_default_registry(), _watch_handler)
_streams = register_reads(kopf.get_default_registry(), lambda: runtime_sink(_runtime, _streams))


@kopf.on.cleanup()
def stop(**_: Any) -> None:
    """After the streams stopped (cleanup handlers run in order)."""
    if _runtime is not None:
        _runtime.stop()
