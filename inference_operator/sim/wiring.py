"""What the reconciler talks to in the simulator: the two ports and their wrappers, in one order.

The same rule as on a real cluster (``inference_operator.kube.wiring``): every wrapper is put in
place here, once per operator process, before the reconciler is constructed, and nothing swaps
them later. Tests, the explorer and the benchmarks put their own wrappers in through an
:class:`Interposer` given to the ``Simulation``, never by replacing attributes:

    API writes:      Tracing → [Interposer.backend] → FakeBackend → [Interposer.api] → FakeApiServer
    balancer calls:  Tracing → Recording (the timeline) → [Interposer.load_balancer] → the balancer

``Interposer.api`` and ``Interposer.load_balancer`` are built once, when the simulation is: they
stand for the world outside the operator (a flaky network, an outage) and outlive operator
restarts. ``Interposer.backend`` wraps each new operator process's Backend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from inference_operator.core.ports import Backend, LoadBalancerProvider
from inference_operator.lb.memory import InMemoryLoadBalancer
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.backend import RecordingLoadBalancer, Timeline
from inference_operator.sim.clock import FakeClock
from inference_operator.trace.recorder import Tracer
from inference_operator.trace.wrappers import TracingBackend, TracingLoadBalancer


class Outside(Protocol):
    """What an interposer is handed: the simulation's world outside the operator (a
    ``Simulation`` is one; declared here so that this module need not import that one)."""

    @property
    def api(self) -> FakeApiServer: ...

    @property
    def lb(self) -> InMemoryLoadBalancer: ...

    @property
    def clock(self) -> FakeClock: ...


@dataclass(frozen=True)
class Interposer:
    """Wrappers between the operator and the world; each is called with what it wraps."""

    api: Callable[[Outside], Any] | None = None
    """Receives the operator's writes instead of ``sim.api`` (it must delegate to it); reads
    still come from the informers. Users, the cluster's controllers and the garbage collector
    talk to the server directly."""
    load_balancer: Callable[[Outside], LoadBalancerProvider] | None = None
    """Receives the operator's balancer calls instead of ``sim.lb``."""
    backend: Callable[[Backend], Backend] | None = None
    """Wraps the whole Backend of each operator process (a seam for tests of one refusal)."""


@dataclass(frozen=True)
class OperatorPorts:
    backend: Backend
    load_balancer: LoadBalancerProvider


def operator_ports(
    *,
    backend: Backend,
    load_balancer: LoadBalancerProvider,
    timeline: Timeline,
    tracer: Tracer,
    wrap_backend: Callable[[Backend], Backend] | None,
) -> OperatorPorts:
    """The ports as one operator process's reconciler gets them (see the module's docstring)."""
    port = wrap_backend(backend) if wrap_backend is not None else backend
    lb: LoadBalancerProvider = RecordingLoadBalancer(load_balancer, timeline)
    if tracer.enabled:
        port = TracingBackend(port, tracer)
        lb = TracingLoadBalancer(lb, tracer)
    return OperatorPorts(backend=port, load_balancer=lb)
