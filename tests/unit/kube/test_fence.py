"""At most one writer: leadership is checked at the moment of each write, by time and term.

Covers, on a fake clock with two replicas on one in-memory Lease: a leader paused past its write
window (renew deadline minus the safety margin) refuses every write — child apply, status,
finalizer patch, balancer register and release, Event — until it has renewed, and one paused
past the lease duration never writes again once the standby took over; a pause of any length at
any point of a pass never lets a write out without a valid Lease at that moment, nor after the
other replica's first write; a renewal that finds another holder, a deleted Lease or a
re-created one (new uid) stops leading at once, while a timeout or a 5xx keeps the deadline rule;
a replica that finds the Lease deleted (or handed to it by someone else's edit) claims it but
writes only once the previous holder's window is surely closed; a pass begun under one term has
its writes refused under the next even when the same replica leads again; an Event recorded
under an ended term is dropped by the poster, not sent; the margin is validated.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from inference_operator.control.events import Correlated
from inference_operator.core.errors import ServerError
from inference_operator.kube.backend import EventPoster
from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.election import ElectionSettings, NotLeader
from inference_operator.kube.fence import Fence
from inference_operator.kube.manager import OperatorRuntime
from inference_operator.lb.memory import InMemoryLoadBalancer
from inference_operator.sim.clock import FakeClock

from .fakes import FakeClient, Leases, isvc

Obj = dict[str, Any]
SERVICE: Obj = {"kind": "Service", "metadata": {"namespace": "ns", "name": "x"}}


class Writes:
    """Every request that reached the "API server" or the balancer: (time, replica, what)."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.log: list[tuple[float, str, str]] = []

    def add(self, identity: str, what: str) -> None:
        self.log.append((self.clock.now(), identity, what))

    def by(self, identity: str) -> list[float]:
        return [t for t, who, _ in self.log if who == identity]


class RecordingClient(FakeClient):
    def __init__(self, leases: Leases, identity: str, writes: Writes) -> None:
        super().__init__()
        view = leases.view(identity)
        self.get_lease, self.create_lease, self.replace_lease = view.get_lease, view.create_lease, view.replace_lease
        self.identity, self.writes = identity, writes

    def apply(self, obj: Obj) -> Obj:
        self.writes.add(self.identity, f"apply {obj['kind']}")
        return obj

    def patch(self, kind: str, namespace: str, name: str, patch: Obj, **_: Any) -> Obj:
        self.writes.add(self.identity, f"patch {kind}")
        return {"kind": kind, "metadata": {"name": name, "namespace": namespace}}

    def update_status(self, obj: Obj) -> Obj:
        self.writes.add(self.identity, f"status {obj['kind']}")
        return obj


class RecordingBalancer(InMemoryLoadBalancer):
    def __init__(self, writes: Writes) -> None:
        super().__init__()
        self.writes = writes
        self.caller = ""

    def register(self, key: str, *, target: str) -> Any:
        self.writes.add(self.caller, "register")
        return super().register(key, target=target)


def replica(leases: Leases, clock: FakeClock, identity: str, writes: Writes) -> OperatorRuntime:
    config = OperatorConfig(workers=1, leader_election=True, lease_namespace="ops", identity=identity)
    client = RecordingClient(leases, identity, writes)
    return OperatorRuntime(config, client, InMemoryLoadBalancer(), clock=clock)  # type: ignore[arg-type]


@pytest.fixture
def two() -> tuple[OperatorRuntime, OperatorRuntime, Leases, FakeClock, Writes]:
    leases, clock = Leases(), FakeClock()
    writes = Writes(clock)
    a, b = replica(leases, clock, "a", writes), replica(leases, clock, "b", writes)
    assert a.elector is not None and b.elector is not None
    a.elector.step()
    clock.advance(a.elector.settings.renew_deadline)  # a first start waits out a possible old holder
    a.elector.step()
    b.elector.step()
    assert a.leading.is_set() and not b.leading.is_set()
    return a, b, leases, clock, writes


def elector(rt: OperatorRuntime) -> Any:
    assert rt.elector is not None
    return rt.elector


def every_write_refused(rt: OperatorRuntime) -> None:
    for write in (
        lambda: rt.backend.apply(SERVICE),
        lambda: rt.backend.update_status({**isvc("x"), "status": {}}),
        lambda: rt.backend.patch("InferenceService", "ns", "x", {"metadata": {"finalizers": []}}),
        lambda: rt.lb.register("ns/x", target="x.ns.svc:80"),
        lambda: rt.lb.release("ns/x"),
    ):
        with pytest.raises(NotLeader):
            write()
    rt.backend.record_event(isvc("x"), type="Normal", reason="Test", message="m")
    assert rt.backend.events._queue.empty()


# -- the window is time -----------------------------------------------------------------------


def test_a_leader_paused_past_its_write_window_refuses_every_write_until_it_renews(two: Any) -> None:
    a, _, _, clock, writes = two
    window = elector(a).settings.write_window
    clock.advance(window - 0.01)
    a.backend.apply(SERVICE)  # still inside: the last renewal was sent less than the window ago
    clock.advance(0.02)  # the process was frozen: no election step ran, no flag was cleared
    assert elector(a).is_leader(), "a flag-based check would still say yes here"
    every_write_refused(a)
    assert len(writes.log) == 1
    elector(a).step()  # it renews (nobody took the Lease meanwhile): writing resumes
    a.backend.apply(SERVICE)
    assert len(writes.log) == 2


def test_a_leader_paused_past_the_lease_duration_never_writes_after_the_standby_took_over(two: Any) -> None:
    a, b, leases, clock, writes = two
    clock.advance(16)  # a is frozen; b keeps stepping
    elector(b).step()
    assert b.leading.is_set()
    b.backend.apply(SERVICE)
    first_by_b = min(writes.by("b"))
    every_write_refused(a)  # a wakes: refuses before its election thread even runs
    elector(a).step()  # and its renewal finds b: it cannot renew a Lease another replica holds
    assert not a.leading.is_set() and not elector(a).is_leader()
    assert all(t < first_by_b for t in writes.by("a"))
    assert leases.items[("ops", "inference-operator")]["spec"]["holderIdentity"] == "b"


PAUSES = [0.5, 3.0, 8.99, 9.01, 12.0, 16.0, 40.0]


@pytest.mark.parametrize("pause", PAUSES)
@pytest.mark.parametrize("at", range(4))
def test_a_pause_of_any_length_at_any_point_of_a_pass_lets_no_write_out_without_a_valid_lease(
    two: Any, pause: float, at: int
) -> None:
    a, b, _, clock, writes = two
    ea, eb = elector(a), elector(b)
    renewals: list[float] = [ea._renewed_at]
    steps = [
        lambda: a.backend.apply({**SERVICE, "kind": "Deployment"}),
        lambda: a.backend.apply(SERVICE),
        lambda: a.backend.patch("InferenceService", "ns", "x", {"metadata": {"finalizers": ["f"]}}),
        lambda: a.backend.update_status({**isvc("x"), "status": {"phase": "Ready"}}),
    ]

    def one_pass() -> None:
        for i, write in enumerate(steps):
            if i == at:
                # Frozen here: the standby keeps its election going meanwhile, every second.
                end = clock.now() + pause
                while clock.now() < end:
                    clock.advance(min(1.0, end - clock.now()))
                    eb.step()
                    if b.leading.is_set() and not writes.by("b"):
                        b.backend.apply(SERVICE)  # the new leader's first write
            with contextlib.suppress(NotLeader):
                write()

    clock.advance(1.5)
    ea.step()  # a renewal just before the pass
    renewals.append(ea._renewed_at)
    assert a.fence is not None
    with a.fence.one_pass():
        one_pass()
    window = ea.settings.write_window
    for t in writes.by("a"):
        last = max(r for r in renewals if r <= t)
        assert t < last + window, f"a wrote at {t} with its last renewal at {last}"
    if writes.by("b"):
        assert all(t < min(writes.by("b")) for t in writes.by("a")), "a wrote after b's first write"
    assert eb.lease_term() is None or ea.lease_term() is None, "two replicas may write at once"


# -- seeing another holder --------------------------------------------------------------------


def test_a_renewal_that_finds_another_holder_stops_leading_at_once(two: Any) -> None:
    a, _, leases, _, _ = two
    leases.set_holder("someone-else")  # kubectl edit lease
    elector(a).step()
    assert not a.leading.is_set() and elector(a).lease_term() is None
    every_write_refused(a)


def test_a_renewal_that_finds_the_lease_deleted_or_re_created_stops_leading_at_once(two: Any) -> None:
    a, b, leases, clock, _ = two
    leases.delete()
    elector(a).step()
    assert not a.leading.is_set(), "a deleted Lease ends the term at the next renewal, not at the deadline"
    elector(b).step()  # b re-creates it (a new uid) ...
    clock.advance(elector(b).settings.renew_deadline)
    elector(b).step()
    assert b.leading.is_set()
    elector(b).release()
    clock.advance(2)
    elector(a).step()  # ... a takes it back after b's release: a fresh term for a
    assert a.leading.is_set()
    leases.delete()
    elector(b).step()  # someone re-creates it under a's name? no: b creates it, a sees another uid
    leases.set_holder("a")  # even a record naming a, under a new uid, is not the Lease a renewed
    elector(a).step()
    assert not a.leading.is_set()


@pytest.mark.parametrize("error", [TimeoutError("read timed out"), ServerError("etcdserver: leader changed")])
def test_a_transient_error_keeps_leading_until_the_renew_deadline(two: Any, error: Exception) -> None:
    a, _, leases, clock, _ = two
    leases.fail["a"] = error
    clock.advance(2)
    elector(a).step()
    assert a.leading.is_set() and elector(a).lease_term() is not None
    clock.advance(8.5)
    elector(a).step()
    assert not a.leading.is_set()


def test_a_replica_that_finds_the_lease_deleted_claims_it_and_writes_only_after_the_old_window(two: Any) -> None:
    a, b, leases, clock, writes = two
    leases.delete()
    deleted = clock.now()
    elector(b).step()  # b claims the Lease at once: nobody else can take it now
    assert leases.items[("ops", "inference-operator")]["spec"]["holderIdentity"] == "b"
    assert not b.leading.is_set() and elector(b).lease_term() is None
    a.backend.apply(SERVICE)  # a has not looked yet: it may still write, inside its own window
    delay = elector(b).step()
    assert 0 < delay <= 2
    while not b.leading.is_set():
        clock.advance(delay)
        delay = elector(b).step()
    assert clock.now() - deleted == pytest.approx(elector(b).settings.renew_deadline)
    every_write_refused(a)  # a's window has closed (it could not renew a missing Lease)
    b.backend.apply(SERVICE)
    assert max(writes.by("a")) < min(writes.by("b"))


def test_a_lease_handed_to_a_standby_by_hand_is_written_to_only_after_the_old_window(two: Any) -> None:
    a, b, leases, clock, _ = two
    leases.set_holder("b")
    elector(b).step()
    assert not b.leading.is_set(), "a record naming b that b did not write may have replaced a live leader"
    elector(a).step()
    assert not a.leading.is_set()
    clock.advance(elector(b).settings.renew_deadline)
    elector(b).step()
    assert b.leading.is_set()


# -- terms ------------------------------------------------------------------------------------


def test_a_pass_begun_under_one_term_has_its_writes_refused_under_the_next(two: Any) -> None:
    a, b, _, clock, writes = two
    fence = a.fence
    assert fence is not None
    with fence.one_pass():
        a.backend.apply(SERVICE)
        assert elector(a).release()  # the term ends (a graceful handover) ...
        elector(b).step()
        assert elector(b).release()
        clock.advance(2)
        elector(a).step()  # ... and a leads again, in a new term
        assert a.leading.is_set()
        with pytest.raises(NotLeader):
            a.backend.apply(SERVICE)  # the old pass's write: refused
        with pytest.raises(NotLeader):
            a.lb.register("ns/x", target="x.ns.svc:80")

    with fence.one_pass():
        a.backend.apply(SERVICE)  # a new pass writes
    assert len(writes.by("a")) == 2 and elector(a).term == 2


def test_an_event_recorded_under_an_ended_term_is_dropped_not_sent(two: Any) -> None:
    a, _, _, _, _ = two
    client = FakeClient()
    poster = EventPoster(client, fence=a.fence)  # type: ignore[arg-type]
    term = elector(a).lease_term()
    assert term is not None
    elector(a).release()
    event = {"kind": "Event", "metadata": {"name": "x.1", "namespace": "ns"}, "involvedObject": {"name": "x"}}
    poster.post(Correlated(event), term=term)
    poster.stop(timeout=5)
    assert client.created == [] and poster.fenced == 1


def test_the_fence_counts_what_it_refused() -> None:
    class Term:
        value: int | None = None

        def lease_term(self) -> int | None:
            return self.value

    source = Term()
    fence = Fence(source)
    assert not fence.may_write() and fence.refused == 1
    source.value = 3
    assert fence.may_write() and fence.holds(3) and not fence.holds(2) and fence.refused == 2


def test_the_safety_margin_must_leave_a_healthy_leader_room() -> None:
    with pytest.raises(ValueError, match="safety margin"):
        ElectionSettings(namespace="ops", identity="a", safety_margin=8.5)
    assert ElectionSettings(namespace="ops", identity="a").write_window == 9.0
