"""External state is level-triggered too: the load balancer's records are checked, not trusted.

Covers: a record the balancer lost (restored from a backup, restarted empty) is registered
again on the next resync, and status follows; a record pointing elsewhere is corrected; the
check costs one lookup per object per resync and none per event; a failed lookup changes
nothing in status and is tried again 30 s later, also for an object with registration off,
which a balancer outage does not fail; a record that cannot be released fails the step until
it goes (status no longer naming it); status keeps a record the balancer holds while
the Service is missing, so disabling then releases it; disabling registration releases a
record the status never knew about, also after an operator restart; a long outage is one Event
with a count, as on a real cluster; a record registered again is what status names even when
that status write conflicted.
"""

from __future__ import annotations

from typing import Any, cast

from inference_operator.api.constants import KIND, EventReason, Phase
from inference_operator.api.samples import make_inference_service
from inference_operator.core.errors import Conflict
from inference_operator.core.ports import Backend, Registration
from inference_operator.sim import Simulation
from inference_operator.sim.wiring import Interposer

NS, NAME, KEY = "default", "llama", "default/llama"
TARGET = "llama.default.svc.cluster.local:8000"


def llama(**spec: Any) -> dict[str, Any]:
    return make_inference_service(NAME, image="vllm:0.6.3", model="m", **spec)


def converged(**spec: Any) -> Simulation:
    sim = Simulation()
    sim.apply(llama(**spec))
    sim.run_until_quiescent()
    return sim


def status(sim: Simulation) -> dict[str, Any]:
    obj = sim.get(KIND, NS, NAME)
    assert obj is not None
    return dict(obj["status"])


def test_a_record_the_balancer_lost_is_registered_again_on_the_next_resync() -> None:
    sim = converged()
    sim.lb.registrations.clear()  # restarted empty
    sim.resync()
    sim.run_until_quiescent()
    assert sim.lb.registrations[KEY].target == TARGET
    assert status(sim)["loadBalancer"]["id"] == sim.lb.registrations[KEY].id
    assert status(sim)["url"] == sim.lb.registrations[KEY].address and status(sim)["phase"] == Phase.READY
    again = [e for e in sim.events if "Registered again" in e.message]
    assert len(again) == 1 and "the load balancer had no record" in again[0].message


def test_a_record_pointing_elsewhere_is_corrected() -> None:
    sim = converged()
    old = sim.lb.registrations[KEY]
    sim.lb.registrations[KEY] = Registration(old.id, old.address, "somewhere-else:80")
    sim.resync()
    sim.run_until_quiescent()
    assert sim.lb.registrations[KEY].target == TARGET
    assert any("pointed at somewhere-else:80" in e.message for e in sim.events)


def test_the_check_costs_one_lookup_per_object_per_resync_and_none_per_event() -> None:
    sim = converged()
    for i in range(20):
        sim.api.patch(KIND, NS, NAME, {"metadata": {"labels": {"touch": str(i)}}})
        sim.run_until_quiescent()
    assert sim.lb.lookup_calls == []
    for _ in range(3):
        sim.resync()
        sim.run_until_quiescent()
    assert sim.lb.lookup_calls == [KEY] * 3
    assert sim.lb.register_calls == [KEY] and sim.backend.writes == 5


def test_a_failed_lookup_leaves_status_alone_and_is_tried_again_later() -> None:
    sim = converged()
    writes = sim.backend.writes
    sim.lb.fail_next_lookups(1)
    sim.resync()
    sim.run_until_quiescent()
    assert status(sim)["phase"] == Phase.READY and sim.backend.writes == writes, "no evidence the record is gone"
    assert len(sim.lb.lookup_calls) == 2 and sim.now >= 30.0, "asked again 30 s later"
    assert not [e for e in sim.events if e.type == "Warning"]


def test_status_keeps_a_record_the_balancer_holds_while_the_service_is_missing_so_disabling_releases_it() -> None:
    sim = converged()
    sim.delete("Service", NS, NAME)
    sim.api.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": NAME, "namespace": NS},
            "spec": {"ports": [{"port": 80}]},
        }
    )  # someone else's, same name
    sim.run_until_quiescent()
    assert status(sim)["loadBalancer"]["id"] == sim.lb.registrations[KEY].id
    sim.apply(llama(loadBalancer={"enabled": False}))
    sim.run_until_quiescent()
    assert sim.lb.registrations == {} and sim.lb.release_calls == [KEY]


def test_disabling_releases_a_record_the_status_never_knew_about() -> None:
    sim = Simulation()
    sim.lb.register(KEY, target=TARGET)  # left behind: a register whose status write never landed
    sim.apply(llama(loadBalancer={"enabled": False}))
    sim.run_until_quiescent()
    assert sim.lb.registrations == {} and sim.lb.release_calls == [KEY]
    assert [e.reason for e in sim.events].count(EventReason.LB_RELEASED) == 1
    assert status(sim)["phase"] == Phase.READY and "loadBalancer" not in status(sim)


def test_after_a_restart_a_disabled_object_checks_the_balancer_once() -> None:
    sim = converged(loadBalancer={"enabled": False})
    assert sim.lb.lookup_calls == [KEY], "the first pass looked once"
    sim.lb.register(KEY, target=TARGET)  # someone (an older operator) registered it meanwhile
    sim.restart_operator()
    sim.run_until_quiescent()
    assert sim.lb.registrations == {} and sim.lb.lookup_calls == [KEY, KEY]
    sim.api.patch(KIND, NS, NAME, {"metadata": {"labels": {"touch": "1"}}})
    sim.run_until_quiescent()
    assert sim.lb.lookup_calls == [KEY, KEY], "no lookup per event"


def test_a_balancer_that_cannot_answer_does_not_fail_an_object_that_never_used_it() -> None:
    sim = Simulation()
    sim.lb.fail_next_lookups(3)  # the balancer is down while an object with registration off is created
    sim.apply(llama(loadBalancer={"enabled": False}))
    sim.run_until_quiescent(until=10)
    assert status(sim)["phase"] == Phase.READY, status(sim)["conditions"]
    assert not [e for e in sim.events if e.reason == EventReason.LB_FAILED]
    sim.run_until_quiescent(until=sim.now + 120)  # it answers again: checked, nothing held
    assert len(sim.lb.lookup_calls) == 4, "asked until it answered (30 s apart once converged)"
    sim.api.patch(KIND, NS, NAME, {"metadata": {"labels": {"touch": "1"}}})
    sim.run_until_quiescent(until=sim.now + 120)
    assert len(sim.lb.lookup_calls) == 4, "checked: not asked again before the next resync"
    assert status(sim)["phase"] == Phase.READY and sim.lb.release_calls == []


def test_a_record_known_to_exist_that_cannot_be_released_fails_the_step() -> None:
    sim = converged()
    sim.lb.fail_next_releases(1000)  # down for good
    sim.apply(llama(loadBalancer={"enabled": False}))
    sim.run_until_quiescent(until=sim.now + 60)
    ready = next(c for c in status(sim)["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "LoadBalancerFailed" and "releasing the load balancer record" in ready["message"]
    sim.lb.fail_next_releases(0)  # back
    sim.run_until_quiescent(until=sim.now + 600)
    assert sim.lb.registrations == {} and status(sim)["phase"] == Phase.READY


def test_a_long_outage_is_one_event_with_a_count_not_one_event_per_retry() -> None:
    sim = Simulation()
    sim.lb.fail_next_registers(12)
    sim.apply(llama())
    sim.run_until_quiescent()
    failures = [e for e in sim.events if e.reason == EventReason.LB_FAILED]
    assert len(failures) == 1 and failures[0].count == 12
    assert status(sim)["phase"] == Phase.READY


class ConflictingStatus:
    """The simulator's backend, except that the next status write answers 409 Conflict."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.armed = False

    def update_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.armed:
            self.armed = False
            raise Conflict("the object has been modified", kind=KIND, namespace=NS, name=NAME)
        return dict(self.inner.update_status(obj))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_record_registered_again_is_what_status_names_even_if_that_status_write_conflicted() -> None:
    wrappers: list[ConflictingStatus] = []

    def conflicting(backend: Backend) -> Backend:
        wrappers.append(ConflictingStatus(backend))
        return cast(Backend, wrappers[-1])

    sim = Simulation(interpose=Interposer(backend=conflicting))
    sim.apply(llama())
    sim.run_until_quiescent()
    sim.lb.registrations.clear()
    wrappers[-1].armed = True
    sim.resync()
    sim.run_until_quiescent()
    assert status(sim)["loadBalancer"]["id"] == sim.lb.registrations[KEY].id, "not the lost record's id"
    assert status(sim)["url"] == sim.lb.registrations[KEY].address
