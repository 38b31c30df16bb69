"""Registration follows what can serve, on the simulator.

Covers: an object whose Deployment the API server refuses (ChildRejected) is not registered with
the balancer, and its status says why (LoadBalancerReady=False naming the Deployment's refusal)
while the Service is still written; a registered object whose Deployment is deleted and cannot
be created again has its record released (one LoadBalancerReleased Event); the refused apply is
sent again with backoff — over 30 s with a resync every 5 s a handful of tries, not one per pass
— and at once when the spec changes; once nothing refuses it any more the object converges and
is registered.
"""

from __future__ import annotations

from typing import Any, cast

from inference_operator.api.constants import DEPLOYMENT, KIND, SERVICE, Reason
from inference_operator.api.samples import make_inference_service
from inference_operator.core.errors import ApiError, Invalid
from inference_operator.core.ports import Backend
from inference_operator.sim import Simulation
from inference_operator.sim.backend import FakeBackend
from inference_operator.sim.wiring import Interposer

NS, NAME, KEY = "default", "llama", "default/llama"
Obj = dict[str, Any]
REFUSAL = Invalid(
    'Deployment.apps "llama" is invalid: spec.template.spec.containers[0].image: Required value',
    kind=DEPLOYMENT,
    namespace=NS,
    name=NAME,
)


class SwitchableRefusal:
    """The simulator's backend; while ``error`` is set, applying a Deployment raises it."""

    def __init__(self, inner: FakeBackend) -> None:
        self.inner = inner
        self.error: ApiError | None = None
        self.attempts = 0

    def apply(self, obj: Obj) -> Obj:
        if obj["kind"] == DEPLOYMENT:
            self.attempts += 1
            if self.error is not None:
                raise self.error
        return self.inner.apply(obj)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def simulation(*, refusing: bool) -> tuple[Simulation, list[SwitchableRefusal]]:
    made: list[SwitchableRefusal] = []

    def wrap(backend: Backend) -> Backend:
        refusal = SwitchableRefusal(cast(FakeBackend, backend))
        refusal.error = REFUSAL if refusing else None
        made.append(refusal)
        return cast(Backend, refusal)

    sim = Simulation(interpose=Interposer(backend=wrap))
    return sim, made


def condition(sim: Simulation, type_: str) -> Obj:
    obj = sim.get(KIND, NS, NAME)
    assert obj is not None
    return next(c for c in obj["status"]["conditions"] if c["type"] == type_)


def llama(**spec: Any) -> Obj:
    return make_inference_service(NAME, image="vllm:0.6.3", model="m", **spec)


def test_an_object_whose_deployment_is_refused_is_not_registered_and_status_says_why() -> None:
    sim, _ = simulation(refusing=True)
    sim.apply(llama())
    sim.run_until_quiescent(until=sim.now + 60)
    assert sim.get(SERVICE, NS, NAME) is not None, "the Service is still written"
    assert sim.lb.lookup(KEY) is None and sim.lb.register_calls == []
    lb = condition(sim, "LoadBalancerReady")
    assert (lb["status"], lb["reason"]) == ("False", Reason.LOAD_BALANCER_PENDING)
    assert "while the Deployment cannot be written" in lb["message"] and "Required value" in lb["message"]
    assert condition(sim, "Ready")["reason"] == Reason.CHILD_REJECTED
    obj = sim.get(KIND, NS, NAME)
    assert obj is not None and "loadBalancer" not in obj["status"]


def test_a_registered_object_whose_deployment_cannot_be_created_again_is_released() -> None:
    sim, made = simulation(refusing=False)
    sim.apply(llama())
    sim.run_until_quiescent()
    assert sim.lb.lookup(KEY) is not None
    made[-1].error = REFUSAL
    sim.delete(DEPLOYMENT, NS, NAME)
    sim.run_until_quiescent(until=sim.now + 60)
    assert sim.lb.lookup(KEY) is None
    released = [e for e in sim.events if e.reason == "LoadBalancerReleased"]
    assert len(released) == 1
    assert "while the Deployment cannot be written" in condition(sim, "LoadBalancerReady")["message"]


def test_a_refused_apply_is_retried_with_backoff_not_on_every_pass() -> None:
    sim, made = simulation(refusing=True)
    sim.apply(llama())
    start = sim.now
    for i in range(1, 7):  # a resync every 5 s for 30 s
        sim.run_until_quiescent(until=start + 5 * i)
        sim.resync()
    sim.run_until_quiescent(until=start + 30)
    assert made[-1].attempts <= 3, f"{made[-1].attempts} applies of the same refused Deployment in 30 s"
    assert sim.reconcile_total >= 7, "the passes ran; only the apply was held back"


def test_a_changed_spec_is_sent_at_once_and_converges_once_nothing_refuses_it() -> None:
    sim, made = simulation(refusing=True)
    sim.apply(llama())
    sim.run_until_quiescent(until=sim.now + 1)
    before = made[-1].attempts
    made[-1].error = None
    sim.apply(llama(replicas=2))  # a new spec: a different object, sent without waiting
    sim.run_until_quiescent(until=sim.now + 1)
    assert made[-1].attempts == before + 1
    sim.run_until_quiescent()
    assert condition(sim, "Ready")["status"] == "True" and sim.lb.lookup(KEY) is not None
