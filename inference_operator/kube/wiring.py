"""What the reconciler talks to on a real cluster: the two ports and their wrappers, in one order.

The reconciler sees a ``Backend`` and a ``LoadBalancerProvider`` and nothing else. Everything
the real cluster adds around them — counting writes for the crash-point hook, refusing to write
without the leader lease, metrics, the flight recorder — is a wrapper (or, for the API writes,
a hook the ``KubeBackend`` is built with). They are put together here, once, before the
reconciler is constructed, so the order is visible in one place and nothing swaps them later:

    balancer calls:  Tracing → Measured → LeaderOnly → crash point → the provider (the HTTP
                     one asks the fence again at its socket: ``make_load_balancer``)
    API writes:      Tracing → KubeBackend (asks the fence, then tells on_write, then sends)

The fence (``fence.py``) is asked at the instant of each write and each balancer register or
release, innermost but for the crash point: nothing that wraps it can delay a call between the
check and the send.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from inference_operator.control.metrics import MeasuredLoadBalancer, Metrics
from inference_operator.core.clock import Clock
from inference_operator.core.ports import Backend, LoadBalancerProvider
from inference_operator.kube.backend import KubeBackend
from inference_operator.kube.cache import ObjectCache
from inference_operator.kube.client import KubeClient
from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.crashpoint import CrashPoint, with_crash_point
from inference_operator.kube.fence import Fence, LeaderOnlyLoadBalancer, WriteFence
from inference_operator.lb.memory import InMemoryLoadBalancer
from inference_operator.trace.recorder import NULL_TRACER, Recorder, Tracer
from inference_operator.trace.sink import RingSink
from inference_operator.trace.wrappers import TracingBackend, TracingLoadBalancer

log = logging.getLogger(__name__)


def make_load_balancer(config: OperatorConfig, *, fence: Fence | None = None) -> LoadBalancerProvider:
    """The provider ``config`` names: the HTTP registry, or an in-memory one.

    With ``fence`` (leader election on), the HTTP client's connections ask it once more at the
    socket, after connecting and before each chunk of a register's or release's bytes, as the
    API client's do (``sendgate.py``): ``LeaderOnlyLoadBalancer`` asks before the call, and a
    process frozen while connecting (TCP, TLS) would otherwise send the call when it wakes."""
    if config.lb_provider == "http":
        from inference_operator.lb.http import HttpLoadBalancer

        assert config.lb_url is not None  # checked by OperatorConfig
        return HttpLoadBalancer(
            config.lb_url,
            timeout=config.lb_timeout,
            token=config.lb_token,
            ca_file=config.lb_ca_file,
            identity=config.identity,
            send_gate=None if fence is None else _balancer_gate(fence),
        )
    return InMemoryLoadBalancer()


def _balancer_gate(fence: Fence) -> Callable[[], None]:
    def gate() -> None:
        fence.gate("send", "load balancer request")

    return gate


def make_tracer(config: OperatorConfig, clock: Clock) -> Tracer:
    """The flight recorder ``config`` asks for: a ring of files, or none."""
    if not config.trace_file:
        return NULL_TRACER
    sink = RingSink(config.trace_file, max_bytes=config.trace_max_bytes, files=config.trace_files)
    log.info(
        "Recording a trace file=%s max_bytes=%d files=%d", config.trace_file, config.trace_max_bytes, config.trace_files
    )
    return Recorder(sink, clock, backend="cluster")


@dataclass(frozen=True)
class OperatorPorts:
    """The ports as the reconciler gets them, and the parts the manager itself needs."""

    backend: Backend
    """What the reconciler writes through (the KubeBackend, traced when recording)."""
    load_balancer: LoadBalancerProvider
    """What the reconciler registers with (every wrapper applied)."""
    kube: KubeBackend
    """The KubeBackend itself: its Event poster and correlator are the manager's to run."""


def operator_ports(
    *,
    client: KubeClient,
    cache: ObjectCache,
    clock: Clock,
    provider: LoadBalancerProvider,
    crash: CrashPoint,
    telemetry: Metrics,
    fence: WriteFence | None,
    tracer: Tracer,
    readable: frozenset[str] = frozenset(),
) -> OperatorPorts:
    """Build the two ports with their wrappers, innermost first (see the module's docstring).

    ``fence`` None means leader election is off: every write may go. ``readable``: the kinds
    the cache holds to be read (``Backend.cached``, ``Backend.cached_owned``), not watched for keys."""
    kube = KubeBackend(client, cache, clock, crash=crash, on_write=telemetry.api_write, fence=fence, readable=readable)
    lb = with_crash_point(provider, crash)
    if fence is not None:
        lb = LeaderOnlyLoadBalancer(lb, fence)
    lb = MeasuredLoadBalancer(lb, telemetry)
    backend: Backend = kube
    if tracer.enabled:
        backend = TracingBackend(kube, tracer)
        lb = TracingLoadBalancer(lb, tracer)
    return OperatorPorts(backend=backend, load_balancer=lb, kube=kube)
