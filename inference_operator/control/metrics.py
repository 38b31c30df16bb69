"""The operator's Prometheus metrics, named as controller-runtime and client-go name theirs.

Platform teams already run dashboards and alerts for controller-runtime operators: reconcile
totals by result, reconcile time, active workers, and the client-go workqueue set (depth, adds,
retries, queue and work duration, unfinished work, longest running processor). Exposing the same
families with the same labels and semantics lets those dashboards work unchanged; the operator's
own families (API writes by verb and kind, load balancer calls, event-to-reconcile latency) carry
the ``inference_operator_`` prefix.

Everything lives in one :class:`Metrics` object with its own registry (never the process-global
one), so two operators in one process, or two tests, never share a counter. Durations are read
from the injected clock: real seconds on a cluster, fake seconds in the simulator.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TypeVar

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from inference_operator.core.clock import Clock
from inference_operator.core.ports import LoadBalancerProvider, Registration

__all__ = ["RESULTS", "MeasuredLoadBalancer", "Metrics", "QueueMetrics"]

T = TypeVar("T")

prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]  # no *_created series: controller-runtime has none

RESULTS = ("success", "error", "requeue", "requeue_after")
"""controller-runtime's ``result`` label values of ``controller_runtime_reconcile_total``."""

# controller-runtime's buckets for reconcile time (pkg/internal/controller/metrics).
RECONCILE_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    *(1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60),
)
# client-go's workqueue buckets: prometheus.ExponentialBuckets(10e-9, 10, 12), 10 ns to 1000 s.
QUEUE_BUCKETS = tuple(10e-9 * 10**i for i in range(12))
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class QueueMetrics:
    """What a workqueue reports, as client-go's ``queueMetrics``: call with the queue's lock
    held, in the order ``added`` → ``taken`` → ``finished`` for each key."""

    def __init__(self, metrics: Metrics, name: str, depth: Callable[[], int]) -> None:
        self._clock = metrics.clock
        self._lock = threading.Lock()
        self._added_at: dict[str, float] = {}
        self._started_at: dict[str, float] = {}
        labels = {"name": name, "controller": metrics.controller}
        self._adds = metrics.workqueue_adds.labels(**labels)
        self._retries = metrics.workqueue_retries.labels(**labels)
        self._queue_duration = metrics.workqueue_queue_duration.labels(**labels)
        self._work_duration = metrics.workqueue_work_duration.labels(**labels)
        metrics.workqueue_depth.labels(**labels).set_function(depth)
        metrics.workqueue_unfinished.labels(**labels).set_function(self.unfinished_work_seconds)
        metrics.workqueue_longest.labels(**labels).set_function(self.longest_running_seconds)

    def added(self, key: str) -> None:
        """``key`` entered the queue (an add of a key already queued is not an add)."""
        self._adds.inc()
        with self._lock:
            self._added_at.setdefault(key, self._clock.now())

    def taken(self, key: str) -> None:
        """A worker took ``key``: its time in the queue ends, its work starts."""
        now = self._clock.now()
        with self._lock:
            added = self._added_at.pop(key, now)
            self._started_at[key] = now
        self._queue_duration.observe(max(0.0, now - added))

    def finished(self, key: str) -> None:
        now = self._clock.now()
        with self._lock:
            started = self._started_at.pop(key, None)
        if started is not None:
            self._work_duration.observe(max(0.0, now - started))

    def retried(self) -> None:
        self._retries.inc()

    def delayed(self, key: str, delay: float, *, retries: int) -> None:
        return None  # client-go's queue metrics have no series for delays

    def forget_waits(self) -> None:
        """Time in the queue starts again now for every queued key (a standby that starts to lead:
        its keys could not be handed out before, and its wait is not the queue's latency)."""
        now = self._clock.now()
        with self._lock:
            self._added_at = dict.fromkeys(self._added_at, now)

    def unfinished_work_seconds(self) -> float:
        """Seconds of work in progress that has not finished, summed (stuck threads show here)."""
        now = self._clock.now()
        with self._lock:
            return sum(max(0.0, now - started) for started in self._started_at.values())

    def longest_running_seconds(self) -> float:
        now = self._clock.now()
        with self._lock:
            return max((max(0.0, now - started) for started in self._started_at.values()), default=0.0)


class _Snapshot(Collector):
    """Gauges and counters read live from the operator's own counters at each scrape."""

    def __init__(self, read: Callable[[], Mapping[str, tuple[str, str, float]]]) -> None:
        self._read = read

    def collect(self):  # type: ignore[no-untyped-def]  # prometheus_client's own signature
        for name, (kind, text, value) in sorted(self._read().items()):
            if kind == "counter":
                family = prometheus_client.core.CounterMetricFamily(name, text, value=value)
                yield family
            else:
                yield GaugeMetricFamily(name, text, value=value)


class Metrics:
    """Every metric of one operator, in one registry; :meth:`render` is the ``/metrics`` body."""

    def __init__(self, clock: Clock, *, controller: str = "inferenceservice") -> None:
        self.clock = clock
        self.controller = controller
        self.registry = registry = CollectorRegistry()
        c, q = ["controller"], ["name", "controller"]
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller.",
            ["controller", "result"],
            registry=registry,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller.",
            c,
            registry=registry,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller.",
            c,
            buckets=RECONCILE_BUCKETS,
            registry=registry,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller.",
            c,
            registry=registry,
        )
        self.max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller.",
            c,
            registry=registry,
        )
        self.workqueue_depth = Gauge("workqueue_depth", "Current depth of workqueue.", q, registry=registry)
        self.workqueue_adds = Counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue.", q, registry=registry
        )
        self.workqueue_retries = Counter(
            "workqueue_retries_total", "Total number of retries handled by workqueue.", q, registry=registry
        )
        self.workqueue_queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            q,
            buckets=QUEUE_BUCKETS,
            registry=registry,
        )
        self.workqueue_work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            q,
            buckets=QUEUE_BUCKETS,
            registry=registry,
        )
        self.workqueue_unfinished = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads.",
            q,
            registry=registry,
        )
        self.workqueue_longest = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            q,
            registry=registry,
        )
        self.api_writes = Counter(
            "inference_operator_api_writes_total",
            "Mutating requests the operator sent to the API server (Events excluded), by verb and kind.",
            ["verb", "kind"],
            registry=registry,
        )
        self.lb_calls = Counter(
            "inference_operator_loadbalancer_calls_total",
            "Calls to the load balancer, by operation.",
            ["operation"],
            registry=registry,
        )
        self.lb_failures = Counter(
            "inference_operator_loadbalancer_failures_total",
            "Load balancer calls that failed, by operation.",
            ["operation"],
            registry=registry,
        )
        self.event_latency = Histogram(
            "inference_operator_event_to_reconcile_seconds",
            "From the first watch event that queued an object to the start of its reconcile.",
            c,
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.",
            ["name"],
            registry=registry,
        )
        for result in RESULTS:  # every series exists from the start, at 0, as in controller-runtime
            self.reconcile_total.labels(controller=controller, result=result)
        for family in (self.reconcile_errors, self.reconcile_time, self.event_latency, self.active_workers):
            family.labels(controller=controller)

    def queue(self, name: str, depth: Callable[[], int]) -> QueueMetrics:
        """The hooks for the workqueue ``name``; ``depth`` reads its current length."""
        return QueueMetrics(self, name, depth)

    def reconciled(self, result: str, seconds: float) -> None:
        """One reconcile ended with ``result`` (one of :data:`RESULTS`) after ``seconds``."""
        self.reconcile_total.labels(controller=self.controller, result=result).inc()
        if result == "error":
            self.reconcile_errors.labels(controller=self.controller).inc()
        self.reconcile_time.labels(controller=self.controller).observe(max(0.0, seconds))

    def workers(self, *, active: int | None = None, maximum: int | None = None) -> None:
        if active is not None:
            self.active_workers.labels(controller=self.controller).set(active)
        if maximum is not None:
            self.max_concurrent.labels(controller=self.controller).set(maximum)

    def event_to_reconcile(self, seconds: float) -> None:
        self.event_latency.labels(controller=self.controller).observe(max(0.0, seconds))

    def api_write(self, verb: str, kind: str) -> None:
        self.api_writes.labels(verb=verb, kind=kind).inc()

    def lb_call(self, operation: str, *, failed: bool) -> None:
        self.lb_calls.labels(operation=operation).inc()
        if failed:
            self.lb_failures.labels(operation=operation).inc()

    def read_live(self, read: Callable[[], Mapping[str, tuple[str, str, float]]]) -> None:
        """Also expose ``read()`` at each scrape: ``{name: ("counter"|"gauge", help, value)}``."""
        self.registry.register(_Snapshot(read))

    def render(self) -> bytes:
        return prometheus_client.generate_latest(self.registry)

    def sample(self, metric: str, /, **labels: str) -> float:
        """One sample's current value (0.0 when absent): for tests and the benchmarks."""
        value = self.registry.get_sample_value(metric, labels)
        return 0.0 if value is None else float(value)


class MeasuredLoadBalancer:
    """A load balancer whose every call is counted, and every failure (by operation)."""

    def __init__(self, provider: LoadBalancerProvider, metrics: Metrics) -> None:
        self.provider = provider
        self._metrics = metrics

    def _call(self, operation: str, call: Callable[[], T]) -> T:
        try:
            result = call()
        except BaseException:
            self._metrics.lb_call(operation, failed=True)
            raise
        self._metrics.lb_call(operation, failed=False)
        return result

    def register(self, key: str, *, target: str) -> Registration:
        return self._call("register", lambda: self.provider.register(key, target=target))

    def release(self, key: str) -> None:
        self._call("release", lambda: self.provider.release(key))

    def lookup(self, key: str) -> Registration | None:
        return self._call("lookup", lambda: self.provider.lookup(key))
