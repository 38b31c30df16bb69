"""The operator's machinery on a real cluster, independent of Kopf itself.

The streams of Kopf's list+watch (:mod:`.streams`) call ``on_event``: the object goes into the cache and the owning
InferenceService key into the workqueue. Worker threads run the same Controller and
Reconciler as the simulator. Before the workers start, the cache is primed with one LIST per
kind, so the first passes never mistake "not yet seen" for "missing" (which would send a
create that fails with AlreadyExists: a wasted mutating request). One housekeeping thread does
the periodic work (:mod:`.housekeeping`: the resync, the consistency and watch-health checks).

``start`` is safe to retry (Kopf retries a failed startup handler): the first LIST comes
before anything that binds a port or starts a thread, the metrics port is bound before any
thread starts, and a failure after that stops everything (the caller then builds a new
runtime). ``health`` names the threads that died, for the liveness answers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

from inference_operator.api.constants import KIND
from inference_operator.control.controller import Controller
from inference_operator.control.metrics import Metrics
from inference_operator.control.workqueue import RateLimitingQueue
from inference_operator.core.clock import Clock, RealClock
from inference_operator.core.handler import WatchEvent
from inference_operator.core.objects import Obj
from inference_operator.core.ports import LoadBalancerProvider, Result
from inference_operator.kube.backend import EVENT_POSTER
from inference_operator.kube.cache import ObjectCache
from inference_operator.kube.client import KubeClient
from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.consistency import PERIOD_SECONDS
from inference_operator.kube.crashpoint import CrashPoint
from inference_operator.kube.election import BootClock, ElectionSettings, LeaderElector
from inference_operator.kube.fence import Fence
from inference_operator.kube.health import ThreadGroup
from inference_operator.kube.housekeeping import Housekeeper
from inference_operator.kube.metricsserver import MetricsServer, live
from inference_operator.kube.slimming import SLIMMERS
from inference_operator.kube.streams import Source, sources_of
from inference_operator.kube.watchhealth import WATCH_CHECK_SECONDS
from inference_operator.kube.wiring import make_load_balancer, make_tracer, operator_ports
from inference_operator.reconcile.reconciler import Reconciler
from inference_operator.reconcile.watches import CAPACITY_READS, WATCHES, Read, Watch
from inference_operator.trace.recorder import Tracer

log = logging.getLogger(__name__)
LIST_PAGE_SIZE = 250
HOUSEKEEPING = "housekeeping"
ELECTION = "leader-election"


class Server(Protocol):
    """What the runtime needs of the metrics server (a seam for tests: they bind no port)."""

    def start(self) -> None: ...
    def stop(self) -> None: ...


def watch_event(event_type: str | None, obj: Obj, *, before: Obj | None, after: Obj | None) -> WatchEvent | None:
    """The change a Kopf event made to the cache, as the watch rule reads it; None: no change
    (an event older than the cache). A re-list of the version cached is an update, as client-go's
    Replace calls it. ``before``/``after`` are what the cache held for the name before and after
    the event."""
    if event_type == "DELETED":
        return WatchEvent("delete", old=obj, new=None)
    if after is before or after is None:
        return None
    if before is None:
        return WatchEvent("create", old=None, new=after)
    return WatchEvent("update", old=before, new=after)


class OperatorRuntime:
    """Cache + queue + workers + housekeeping, wired to one KubeClient."""

    def __init__(
        self,
        config: OperatorConfig,
        client: KubeClient,
        load_balancer: LoadBalancerProvider | None = None,
        *,
        clock: Clock | None = None,
        metrics: Server | None = None,
        threads: ThreadGroup | None = None,
        consistency_period: float = PERIOD_SECONDS,
        watch_check_period: float = WATCH_CHECK_SECONDS,
        tracer: Tracer | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.clock = clock or RealClock()
        self.reads: tuple[Read, ...] = CAPACITY_READS if config.reads_capacity else ()
        """The kinds cached to be read (Nodes and Pods, for the rollouts' GPU count and a
        service's own pods), which wake only what their rule names."""
        self.cache = ObjectCache(
            self.clock,
            transforms=SLIMMERS,
            indexes={r.kind: r.index_label for r in self.reads if r.index_label is not None},
        )
        self._read_kinds = frozenset(r.kind for r in self.reads)
        sources: tuple[Watch | Read, ...] = (*WATCHES, *self.reads)
        self._listed: dict[str, Watch | Read] = {source.kind: source for source in sources}
        """Every kind kept in the cache, with its selectors: primed, watched, checked alike."""
        # The crash-point test hook (off unless INFERENCE_OPERATOR_CRASH_AFTER_WRITES is set)
        # counts the API writes and the load balancer's register/release calls together.
        self.crash = CrashPoint(config.crash_after_writes, on=config.crash_on)
        self.telemetry = Metrics(self.clock, controller="inferenceservice")
        """The Prometheus metrics (served by ``metrics``, the server, when an address is set)."""
        self.leading = threading.Event()
        """Set while this replica may write: it holds the leader lease (or election is off)."""
        self.elector: LeaderElector | None = None
        self.fence: Fence | None = None
        """Asked at each write (leader election on): the term it may go under, if any."""
        if config.leader_election:
            self.elector = LeaderElector(
                ElectionSettings(
                    namespace=config.lease_namespace,
                    identity=config.identity,
                    name=config.lease_name,
                    lease_duration=config.lease_duration,
                    renew_deadline=config.renew_deadline,
                    retry_period=config.retry_period,
                ),
                client,
                BootClock() if clock is None else self.clock,  # counts a suspended machine's sleep
                on_started=self._started_leading,
                on_stopped=self._stopped_leading,
            )
            self.fence = Fence(self.elector)
            if hasattr(client, "gate_writes"):
                client.gate_writes(self.fence.gate)  # the last checks: before each request, at its socket
        self.tracer = tracer if tracer is not None else make_tracer(config, self.clock)
        """The flight recorder (``--trace``); off by default."""
        ports = operator_ports(
            client=client,
            cache=self.cache,
            clock=self.clock,
            provider=load_balancer or make_load_balancer(config, fence=self.fence),
            crash=self.crash,
            telemetry=self.telemetry,
            fence=self.fence,
            tracer=self.tracer,
            readable=self._read_kinds,
        )
        self.backend = ports.kube
        self.lb = ports.load_balancer
        """The balancer as the reconciler calls it (leader-only, measured, traced when recording)."""
        self.reconciler = Reconciler(
            ports.backend,
            ports.load_balancer,
            self.clock,
            requeue_while_progressing=config.requeue_seconds,
            tracer=self.tracer,
        )
        self.queue = RateLimitingQueue(self.clock, name="inferenceservice")
        self.controller = Controller(
            "inferenceservice", self._reconcile, self.queue, metrics=self.telemetry, tracer=self.tracer
        )
        self.telemetry.workers(active=0, maximum=config.workers)
        self.telemetry.leader.labels(name=config.lease_name).set(0)
        self.telemetry.read_live(lambda: live(self.probe()))
        self.threads = threads if threads is not None else ThreadGroup()
        self._stop = threading.Event()
        self._started = False
        self.streams_health: Callable[[], list[str]] = list
        """What is wrong with the streams that feed :meth:`on_event` (``kube/streams.py``,
        started by the Kopf glue), one line each."""
        self.closed = False
        """True once stopped: a stopped runtime never starts again (its queue is shut down)."""
        self.housekeeper = Housekeeper(
            client=client,
            cache=self.cache,
            clock=self.clock,
            sources=self._listed,
            read_kinds=self._read_kinds,
            namespaces=config.namespaces or ("",),
            resync_seconds=config.resync_seconds,
            resync=self.enqueue_all,
            requeue=self.queue.add,
            consistency_period=consistency_period,
            watch_check_period=watch_check_period,
        )
        """The housekeeping thread's work: the resync, the consistency and watch-health checks."""
        if metrics is None and config.metrics_address:
            metrics = MetricsServer(config.metrics_address, self.telemetry.render, self.health)
        self.metrics = metrics

    # -- events ---------------------------------------------------------------------------------

    def on_event(self, kind: str, event_type: str | None, obj: Obj) -> None:
        """A watch event from a stream (``kube/streams.py``): update the cache, enqueue the keys the watch rule names.

        Called on Kopf's event loop: it must stay quick and never block."""
        if event_type is None:
            self.housekeeper.relisted(kind)
        handler = self._listed[kind].handler
        if handler is None:  # read when a rollout counts (a Node), never a reason for a pass
            self.cache.apply_event(kind, event_type, obj, answer=False)
            return
        before, after = self.cache.apply_event(kind, event_type, obj)
        event = watch_event(event_type, obj, before=before, after=after)
        keys = handler.keys(event) if event is not None else ()
        if self.tracer.enabled and kind not in self._read_kinds:  # a read's objects are no trace's subject
            self.tracer.event(kind, event_type or "LISTED", obj, enqueued=keys[-1] if keys else None)
        for key in keys:
            self.controller.enqueue(key)

    # -- lifecycle ------------------------------------------------------------------------------

    def prime_cache(self) -> int:
        """LIST every kind we cache, where its stream will watch it (:func:`.streams.sources_of`,
        one rule for both); returns how many objects were loaded."""
        loaded = 0
        for source, scope in self.sources():
            namespace = scope or ""
            # Each page goes into the cache as it comes (each object serialized there): the
            # whole list is never held parsed at once.
            uids: list[str] = []
            version = "0"
            for page, page_version in self.client.iter_pages(
                source.kind,
                namespace,
                label_selector=source.label_selector,
                field_selector=source.field_selector,
                page_size=LIST_PAGE_SIZE,
            ):
                uids += self.cache.store_listed(source.kind, page)
                version = page_version
            self.cache.drop_missing(source.kind, namespace, uids, version)
            loaded += len(uids)
        return loaded

    def sources(self) -> list[Source]:
        """What is listed into the cache and streamed: each kind in each namespace served."""
        return sources_of(namespaces=self.config.namespaces, reads_capacity=self.config.reads_capacity)

    def enqueue_all(self) -> int:
        """Enqueue every cached InferenceService; their next passes also check their load
        balancer records once (the resync is when the balancer's own state is verified)."""
        self.reconciler.begin_resync()
        keys = self.cache.keys(KIND)
        for namespace, name in keys:
            self.queue.add(f"{namespace}/{name}")
        return len(keys)

    @property
    def started(self) -> bool:
        """True once :meth:`start` has succeeded."""
        return self._started

    def start(self) -> None:
        """Prime the cache, then serve metrics and start the threads. Safe to call again
        after it failed (Kopf retries startup handlers), a no-op once it succeeded."""
        if self._started:
            return
        if self.closed:
            raise RuntimeError("this operator runtime was stopped; build a new one to start again")
        loaded = self.prime_cache()  # may fail: nothing is bound or started yet
        if self.metrics is not None:
            self.metrics.start()  # may fail (port taken): still nothing else started
        try:
            self.backend.events.start()
            for i in range(self.config.workers):
                self.threads.start(f"{self.controller.name}-worker-{i}", self._work)
            self.threads.start(HOUSEKEEPING, lambda: self.housekeeper.loop(self._stop))
            if self.elector is not None:
                self.threads.start(ELECTION, lambda: self.elector.run(self._stop) if self.elector else None)
        except BaseException:
            self.stop(timeout=5.0)  # undo all of it; the runtime is closed for good
            raise
        self._started = True
        if self.elector is None:
            self._started_leading()
        log.info(
            "Started workers workers=%d cached=%d resync=%gs lb=%s identity=%s election=%s",
            self.config.workers,
            loaded,
            self.config.resync_seconds,
            self.config.lb_provider,
            self.config.identity,
            f"lease {self.config.lease_namespace}/{self.config.lease_name}" if self.elector else "off",
        )

    def _reconcile(self, namespace: str, name: str) -> Result:
        """One pass, bound to the leader term it began under: its writes are refused once that
        term is over, whether or not this replica leads again by then."""
        if self.fence is None:
            return self.reconciler.reconcile(namespace, name)
        with self.fence.one_pass():
            return self.reconciler.reconcile(namespace, name)

    def _started_leading(self) -> None:
        """This replica may write now: reconcile everything once, from the warm cache."""
        self.controller.forget_waits()
        queued = self.enqueue_all()
        self.telemetry.leader.labels(name=self.config.lease_name).set(1)
        self.leading.set()
        log.info("Reconciling as the leader queued=%d identity=%s", queued, self.config.identity)

    def _stopped_leading(self) -> None:
        """Another replica may write from now on: take no new key (writes in flight are refused)."""
        self.leading.clear()
        self.telemetry.leader.labels(name=self.config.lease_name).set(0)

    def _work(self) -> None:
        while not self._stop.is_set():
            if not self.leading.wait(timeout=1.0):
                continue  # a standby: the cache stays warm, the queue fills, nothing is written
            if not self.controller.process_next_work_item(timeout=1.0):
                return

    def housekeeping(self) -> float:
        """Run what is due now (resync, consistency checks); return when to look again."""
        return self.housekeeper.run_due()

    def stop(self, timeout: float = 30.0) -> bool:
        """Graceful: stop housekeeping, let workers finish the item in hand."""
        self.closed = True
        self.threads.stopping()
        self._stop.set()
        self.housekeeper.wake()
        self.queue.shut_down()
        alive = self.threads.join(timeout)
        if alive:
            log.error("Threads did not stop in time threads=%s", alive)
        self.backend.events.stop()
        if self.elector is not None and not alive:
            self.elector.release()  # no worker writes any more: a standby may take over at once
        if self.metrics is not None:
            self.metrics.stop()
        self.tracer.close()
        log.info("Stopped workers graceful=%s", not alive)
        return not alive

    # -- health and counters --------------------------------------------------------------------

    def health(self) -> list[str]:
        """What is wrong with the operator's own threads and watches, one line each; empty when healthy."""
        problems = [f"thread {name} died" for name in self.threads.dead()]
        if not self.backend.events.alive():
            problems.append(f"thread {EVENT_POSTER} died")
        return problems + self.streams_health() + self.housekeeper.watch_health.problems()

    def probe(self) -> dict[str, int]:
        events = self.backend.events
        correlator = self.backend.correlator
        return {
            "queue_depth": len(self.queue),
            "waiting": self.queue.waiting_len(),
            "cached_objects": len(self.cache),
            "cached_nodes": self.cache.count("Node"),
            "cached_pods": self.cache.count("Pod"),
            "reconciles": self.controller.reconcile_total,
            "reconcile_errors": self.controller.reconcile_errors_total,
            "events_posted": events.posted,
            "events_pending": events.pending(),
            "event_post_failures": events.failures,
            "events_dropped": events.dropped,
            "events_deduplicated": correlator.deduplicated,
            "events_aggregated": correlator.aggregated,
            "events_spam_filtered": correlator.spam_dropped,
            "cache_consistency_drops": self.housekeeper.consistency_drops,
            "dead_threads": len(self.health()) - len(self.housekeeper.watch_health.problems()),
            "deaf_watches": len(self.housekeeper.watch_health.problems()),
            "writes_refused_not_leader": self.fence.refused if self.fence is not None else 0,
        }
