"""The leader's last check at the balancer's socket, on 127.0.0.1: a register or release goes out
only if the replica may write once its connection is made.

Covers: a leader frozen in the TLS handshake of a register (the server holds the handshake while
the fake clock moves past the lease duration and the standby takes the Lease) sends not one byte
of the request when it wakes, and the pass fails with NotLeader (the operator runtime builds the
HTTP balancer from its config, so this is the wiring the operator runs); within the window the
same gated client registers and releases as before; the HTTP client asks its gate before each
chunk of a register's and a release's bytes, never for a lookup, and a refused call reaches the
registry not at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.election import LeaderElector
from inference_operator.kube.fence import NotLeader
from inference_operator.kube.manager import OperatorRuntime
from inference_operator.lb.http import HttpLoadBalancer
from inference_operator.lb.registry import RegistryServer
from inference_operator.sim.clock import FakeClock
from tests.integration.stubs import FreezingTlsServer
from tests.unit.kube.fakes import FakeClient, Leases


class Replica(FakeClient):
    """A KubeClient stand-in whose Lease calls go to one shared in-memory Lease store."""

    def __init__(self, leases: Leases, identity: str) -> None:
        super().__init__()
        view = leases.view(identity)
        self.get_lease, self.create_lease, self.replace_lease = view.get_lease, view.create_lease, view.replace_lease


def replica(leases: Leases, clock: FakeClock, identity: str, lb_url: str, ca: Path | None = None) -> OperatorRuntime:
    config = OperatorConfig(
        workers=1,
        leader_election=True,
        lease_namespace="ops",
        identity=identity,
        lb_provider="http",
        lb_url=lb_url,
        lb_timeout=5.0,
        lb_ca_file=str(ca) if ca else None,
    )
    return OperatorRuntime(config, Replica(leases, identity), clock=clock)  # type: ignore[arg-type]


def elector(rt: OperatorRuntime) -> LeaderElector:
    assert rt.elector is not None
    return rt.elector


def lead(a: OperatorRuntime, b: OperatorRuntime, clock: FakeClock) -> None:
    """``a`` leads (after a first start's wait), ``b`` stands by."""
    elector(a).step()
    clock.advance(elector(a).settings.renew_deadline)
    elector(a).step()
    elector(b).step()
    assert a.leading.is_set() and not b.leading.is_set()


@pytest.fixture
def frozen(certs: dict[str, Path]) -> Iterator[FreezingTlsServer]:
    server = FreezingTlsServer(str(certs["cert"]), str(certs["key"]))
    try:
        yield server
    finally:
        server.stop()


def test_a_leader_frozen_in_the_tls_handshake_of_a_register_sends_nothing_when_it_wakes(
    frozen: FreezingTlsServer, certs: dict[str, Path]
) -> None:
    leases, clock = Leases(), FakeClock()
    a = replica(leases, clock, "a", frozen.url, certs["ca"])
    b = replica(leases, clock, "b", frozen.url, certs["ca"])
    lead(a, b, clock)

    def frozen_past_the_lease() -> None:
        clock.advance(elector(a).settings.lease_duration + 1)  # a stands still in its handshake
        elector(b).step()  # meanwhile the standby takes the expired Lease
        assert b.leading.is_set()

    frozen.during_handshake = frozen_past_the_lease
    assert a.fence is not None
    with a.fence.one_pass(), pytest.raises(NotLeader, match="load balancer"):
        a.lb.register("ns/x", target="x.ns.svc:80")  # the fence allowed it: the handshake had not begun
    frozen.stop()
    assert frozen.error is None, frozen.error
    assert frozen.handshakes == 1, "the pause did not land in the handshake: the test proves nothing"
    assert frozen.received == b"", f"the woken leader sent its register: {frozen.received[:80]!r}"


def test_within_its_window_the_leader_registers_and_releases_through_the_gated_client(
    registry: RegistryServer,
) -> None:
    leases, clock = Leases(), FakeClock()
    a, b = replica(leases, clock, "a", registry.url), replica(leases, clock, "b", registry.url)
    lead(a, b, clock)
    assert a.fence is not None
    with a.fence.one_pass():
        registration = a.lb.register("ns/x", target="x.ns.svc:80")
        assert a.lb.lookup("ns/x") == registration
        a.lb.release("ns/x")
    assert [c.method for c in registry.calls()] == ["PUT", "DELETE"]


class Gate:
    def __init__(self, *, open: bool) -> None:
        self.open = open
        self.asked = 0

    def __call__(self) -> None:
        self.asked += 1
        if not self.open:
            raise NotLeader("send load balancer request: not sent, this replica does not hold the leader lease")


def test_each_chunk_of_a_register_and_a_release_asks_the_gate_and_a_lookup_never_does(
    registry: RegistryServer,
) -> None:
    gate = Gate(open=True)
    lb = HttpLoadBalancer(registry.url, send_gate=gate)
    lb.register("ns/x", target="x.ns.svc:80")
    assert gate.asked == 2, "the request head, then its body"
    lb.release("ns/x")
    assert gate.asked == 3, "a DELETE has no body: its head only"
    gate.open = False
    assert lb.lookup("ns/x") is None  # a read: never asked, never refused
    assert gate.asked == 3


@pytest.mark.parametrize("call", ["register", "release"])
def test_a_refused_register_or_release_reaches_the_registry_not_at_all(registry: RegistryServer, call: str) -> None:
    lb = HttpLoadBalancer(registry.url, send_gate=Gate(open=False))
    with pytest.raises(NotLeader):
        if call == "register":
            lb.register("ns/x", target="x.ns.svc:80")
        else:
            lb.release("ns/x")
    stats = registry.stats()
    assert registry.calls() == [] and stats["register_calls"] == {} and stats["release_calls"] == {}
