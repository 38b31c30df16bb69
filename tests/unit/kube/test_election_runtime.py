"""Leader election wired into the operator runtime: a warm standby never writes.

Covers (high availability): a replica whose lease is held elsewhere is a standby:
events still fill its cache and queue, but its workers take nothing, and anything that would
write (a child, a status, an Event, a load balancer register or release) is refused with
NotLeader before it is sent, lookups still read; the leader gauge is 0. When the lease comes
free it leads: every cached InferenceService is queued once and the gauge is 1. Losing the lease
clears the gate at once; a graceful stop releases the lease (empty holder). A refused write is
no ApiError (status must not quote it as the API's answer), and the time a key waited on a
standby is not counted as latency once it leads.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.core.errors import ApiError
from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.election import NotLeader
from inference_operator.kube.manager import OperatorRuntime
from inference_operator.lb.memory import InMemoryLoadBalancer
from inference_operator.sim.clock import FakeClock

from .fakes import FakeClient, Leases, isvc

LEASE = ("ops", "inference-operator")


class ElectingClient(FakeClient):
    def __init__(self, leases: Leases, identity: str) -> None:
        super().__init__()
        view = leases.view(identity)
        self.get_lease, self.create_lease, self.replace_lease = view.get_lease, view.create_lease, view.replace_lease


def replica(leases: Leases, clock: FakeClock, identity: str, lb: InMemoryLoadBalancer) -> OperatorRuntime:
    config = OperatorConfig(workers=1, leader_election=True, lease_namespace="ops", identity=identity)
    return OperatorRuntime(config, ElectingClient(leases, identity), lb, clock=clock)  # type: ignore[arg-type]


@pytest.fixture
def pair() -> tuple[OperatorRuntime, OperatorRuntime, Leases, FakeClock, InMemoryLoadBalancer]:
    leases, clock, lb = Leases(), FakeClock(), InMemoryLoadBalancer()
    leader, standby = replica(leases, clock, "a", lb), replica(leases, clock, "b", lb)
    assert leader.elector is not None and standby.elector is not None
    leader.elector.step()  # no Lease yet: written at once, writing starts a renew deadline later
    clock.advance(leader.elector.settings.renew_deadline)
    leader.elector.step()
    standby.elector.step()
    return leader, standby, leases, clock, lb


def gauge(rt: OperatorRuntime) -> float:
    return rt.telemetry.sample("leader_election_master_status", name="inference-operator")


def test_a_standby_keeps_its_cache_and_queue_but_sends_nothing(pair: Any) -> None:
    leader, standby, _, _, lb = pair
    assert leader.leading.is_set() and not standby.leading.is_set()
    assert (gauge(leader), gauge(standby)) == (1.0, 0.0)
    standby.on_event("InferenceService", "ADDED", isvc("x"))
    assert standby.cache.get("InferenceService", "ns", "x") is not None and len(standby.queue) == 1
    with pytest.raises(NotLeader, match="not sent"):
        standby.backend.apply({"kind": "Service", "metadata": {"namespace": "ns", "name": "x"}})
    with pytest.raises(NotLeader):
        standby.lb.register("ns/x", target="x.ns.svc:80")
    with pytest.raises(NotLeader):
        standby.lb.release("ns/x")
    assert standby.lb.lookup("ns/x") is None and lb.register_calls == []
    standby.backend.record_event(isvc("x"), type="Warning", reason="Test", message="m")
    assert standby.backend.events._queue.empty()
    assert standby.backend.writes == 0


def test_when_the_lease_comes_free_the_standby_leads_and_queues_everything_once(pair: Any) -> None:
    leader, standby, leases, clock, _ = pair
    for name in ("x", "y"):
        standby.on_event("InferenceService", "ADDED", isvc(name, uid=f"u-{name}"))
    assert leader.elector.release()
    assert not leader.leading.is_set() and gauge(leader) == 0.0
    assert leases.items[LEASE]["spec"]["holderIdentity"] == ""
    clock.advance(2)
    standby.elector.step()
    assert standby.leading.is_set() and gauge(standby) == 1.0
    assert sorted(standby.queue.try_get() for _ in range(2)) == ["ns/x", "ns/y"]
    with pytest.raises(NotLeader):
        leader.backend.apply({"kind": "Service", "metadata": {"namespace": "ns", "name": "x"}})


def test_a_leader_that_cannot_renew_closes_its_gate_at_the_deadline(pair: Any) -> None:
    leader, _, leases, clock, _ = pair
    leases.fail["a"] = TimeoutError("partitioned")
    clock.advance(10)
    assert leader.elector is not None and not leader.elector.is_leader()
    with pytest.raises(NotLeader):
        leader.backend.apply({"kind": "Service", "metadata": {"namespace": "ns", "name": "x"}})
    leader.elector.step()
    assert not leader.leading.is_set() and gauge(leader) == 0.0


def test_a_graceful_stop_releases_the_lease(pair: Any) -> None:
    leader, _, leases, _, _ = pair
    assert leader.stop(timeout=5.0)
    assert leases.items[LEASE]["spec"]["holderIdentity"] == ""


def test_a_refused_write_is_no_api_answer_for_status_to_report() -> None:
    assert not issubclass(NotLeader, ApiError)  # the reconciler reports ApiErrors in status


def test_waiting_as_a_standby_is_not_counted_as_latency_once_it_leads(pair: Any) -> None:
    leader, standby, _, clock, _ = pair
    standby.on_event("InferenceService", "ADDED", isvc("x"))
    clock.advance(600)  # ten minutes as a standby
    assert leader.elector.release()
    standby.elector.step()
    assert standby.leading.is_set()
    standby.controller.step()
    metrics = standby.telemetry
    labels = {"controller": "inferenceservice"}
    assert metrics.sample("inference_operator_event_to_reconcile_seconds_count", **labels) == 0.0
    queued = metrics.sample("workqueue_queue_duration_seconds_sum", name="inferenceservice", **labels)
    assert queued < 1.0
