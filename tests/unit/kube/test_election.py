"""Leader election on a Lease (client-go's rules), on a fake clock and an in-memory Lease store.

Covers (high availability): the first replica creates the Lease and leads, the second
follows; renewals keep the follower out; a leader that cannot renew stops leading after the renew
deadline, before the lease duration, and ``is_leader`` turns false at the deadline even when no
step runs (a hung loop); the follower takes over once the lease duration passed since it last saw
the record change, counting a transition; a graceful release lets the follower take over at its
next step; two replicas racing for an expired Lease cannot both win (resourceVersion); a failure
to reach the Lease is logged once, and once more when it is over; bad timings are refused; a
renewal whose answer comes back late counts from when it was sent; a follower looks again right
when the Lease it saw expires, not up to a retry period later.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from inference_operator.core.errors import Forbidden
from inference_operator.core.jsoncopy import deep_copy
from inference_operator.kube.election import ElectionSettings, LeaderElector
from inference_operator.sim.clock import FakeClock

from .fakes import Leases

Obj = dict[str, Any]


def elector(leases: Leases, clock: FakeClock, identity: str, events: list[str]) -> LeaderElector:
    settings = ElectionSettings(namespace="ops", identity=identity)
    return LeaderElector(
        settings,
        leases.view(identity),
        clock,
        on_started=lambda: events.append(f"{identity} started"),
        on_stopped=lambda: events.append(f"{identity} stopped"),
    )


def lead(e: LeaderElector, clock: FakeClock) -> None:
    """A first start: there is no Lease, so the new one is written at once and writing starts
    a renew deadline later (nobody can tell "never existed" from "deleted under a leader")."""
    e.step()
    clock.advance(e.settings.renew_deadline)
    e.step()
    assert e.is_leader()


@pytest.fixture
def world() -> tuple[Leases, FakeClock, list[str]]:
    return Leases(), FakeClock(), []


def test_the_first_replica_leads_and_the_second_follows_while_renewals_go_on(world: Any) -> None:
    leases, clock, events = world
    a, b = elector(leases, clock, "a", events), elector(leases, clock, "b", events)
    lead(a, clock)
    b.step()
    assert a.is_leader() and not b.is_leader() and b.holder == "a"
    for _ in range(30):  # a minute of renewals every 2 s
        clock.advance(2)
        a.step()
        b.step()
    assert a.is_leader() and not b.is_leader() and events == ["a started"]
    assert leases.items[("ops", "inference-operator")]["spec"]["leaseTransitions"] == 0


def test_a_leader_that_cannot_renew_stops_before_anyone_else_may_start(world: Any) -> None:
    leases, clock, events = world
    a, b = elector(leases, clock, "a", events), elector(leases, clock, "b", events)
    lead(a, clock)
    b.step()
    leases.fail["a"] = TimeoutError("API server unreachable")
    t0 = clock.now()
    t_stopped = t_started = None
    for _ in range(20):
        clock.advance(1)
        a.step()
        b.step()
        if t_stopped is None and not a.is_leader():
            t_stopped = clock.now() - t0
        if t_started is None and b.is_leader():
            t_started = clock.now() - t0
    assert t_stopped is not None and t_started is not None
    assert t_stopped <= 10 < 15 <= t_started  # renew deadline, then the lease duration
    assert events == ["a started", "a stopped", "b started"]
    assert leases.items[("ops", "inference-operator")]["spec"]["leaseTransitions"] == 1


def test_is_leader_turns_false_at_the_renew_deadline_even_without_a_step(world: Any) -> None:
    leases, clock, events = world
    a = elector(leases, clock, "a", events)
    lead(a, clock)
    clock.advance(9.9)
    assert a.is_leader()
    clock.advance(0.2)  # the renew loop hung: no step ran
    assert not a.is_leader()


def test_a_graceful_release_hands_over_at_the_next_step(world: Any) -> None:
    leases, clock, events = world
    a, b = elector(leases, clock, "a", events), elector(leases, clock, "b", events)
    lead(a, clock)
    b.step()
    assert a.release()
    assert not a.is_leader() and leases.items[("ops", "inference-operator")]["spec"]["holderIdentity"] == ""
    clock.advance(2)
    b.step()
    assert b.is_leader() and events == ["a started", "a stopped", "b started"]
    assert not a.release()  # not leading: nothing to give up


def test_two_replicas_racing_for_an_expired_lease_cannot_both_win(world: Any) -> None:
    leases, clock, events = world
    a, b, c = (elector(leases, clock, name, events) for name in "abc")
    lead(a, clock)
    b.step()
    c.step()
    leases.fail["a"] = TimeoutError("gone")
    clock.advance(16)  # a's record has expired for b and c alike
    leases.stale["c"] = deep_copy(leases.items[("ops", "inference-operator")])  # c reads before b writes
    b.step()
    c.step()  # c's write carries the old resourceVersion: a conflict, not a second leader
    assert b.is_leader() and not c.is_leader()
    assert events == ["a started", "b started"]


def test_a_refused_lease_is_logged_once_with_the_missing_permission_and_its_end_once(
    world: Any, caplog: pytest.LogCaptureFixture
) -> None:
    leases, clock, events = world
    a = elector(leases, clock, "a", events)
    leases.fail["a"] = Forbidden('leases.coordination.k8s.io "inference-operator" is forbidden')
    with caplog.at_level(logging.INFO, logger="inference_operator.kube.election"):
        for _ in range(5):
            a.step()
            clock.advance(2)
        del leases.fail["a"]
        lead(a, clock)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert (
        len(errors) == 1
        and "is forbidden" in errors[0].getMessage()
        and "lease=ops/inference-operator" in errors[0].getMessage()
        and "get, create and update Leases in namespace ops" in errors[0].getMessage()
    )
    assert any("Reached the leader lease again" in r.getMessage() for r in caplog.records)
    assert a.is_leader()


def test_a_follower_looks_again_right_when_the_lease_it_saw_expires_not_a_retry_period_later(world: Any) -> None:
    leases, clock, events = world
    a, b = elector(leases, clock, "a", events), elector(leases, clock, "b", events)
    lead(a, clock)
    clock.advance(1)
    b.step()  # b looks one second after each of a's renewals
    for _ in range(5):
        clock.advance(1)
        a.step()
        clock.advance(1)
        delay = b.step()
    seen_last_renewal = clock.now()  # a renewed a second ago; b has just seen it
    assert delay == 2  # a retry period while the lease is far from expiring
    # a dies now; b steps whenever it asks to, as its election thread does
    while not b.is_leader():
        clock.advance(delay)
        delay = b.step()
    assert clock.now() - seen_last_renewal == pytest.approx(15 + 0.05)


def test_timings_must_leave_room_between_renewing_and_expiring() -> None:
    with pytest.raises(ValueError, match="retry period < renew deadline < lease duration"):
        ElectionSettings(namespace="ops", identity="a", lease_duration=10, renew_deadline=10)


def test_a_renewal_counts_from_when_it_was_sent_not_when_its_answer_came(world: Any) -> None:
    leases, clock, events = world
    a = elector(leases, clock, "a", events)
    lead(a, clock)
    slow = a.store.replace_lease

    def answered_late(lease: Obj) -> Obj:
        stored = slow(lease)  # the write lands now, the answer takes 8 s to come back
        clock.advance(8)
        return stored

    a.store.replace_lease = answered_late  # type: ignore[method-assign]
    clock.advance(2)
    renewed_at = clock.now()
    a.step()
    clock.set(renewed_at + 9.9)
    assert a.is_leader()
    clock.set(renewed_at + 10)  # a follower saw the write at renewed_at: the leader stops 10 s on
    assert not a.is_leader()
