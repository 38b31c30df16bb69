"""Every stall is explained: what the reconciler says when the API server refuses a child.

Covers: a name that cannot become a Service is reported as InvalidSpec naming metadata.name
(and refused by ``demo -f`` with the rule); a child the API server rejects (422) gives
Ready=False/ChildRejected quoting the API and naming the object, one Warning Event however
many retries, the other child still written, and a simulated run that ends and says which key
did not converge; a 403 (RBAC, quota) gives ChildForbidden; a 500 gives ApiUnavailable without
calling the object Failed, and the object converges once the API server recovers; a child
write answering 409 Conflict every time is explained too; an object whose name cannot become a
Service (it got past admission, e.g. made before the rule existed) is deleted without a release
that the registry would refuse forever; throttling (429) is not called a rejection; the child of
a deleted InferenceService of the same name is waited for, not called a conflict.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from inference_operator.api.constants import API_VERSION, DEPLOYMENT, KIND, SERVICE, Phase, Reason
from inference_operator.api.models import InferenceService
from inference_operator.api.samples import make_inference_service
from inference_operator.cli import main
from inference_operator.core.errors import ApiError, Conflict, Forbidden, Invalid
from inference_operator.core.ports import Backend
from inference_operator.reconcile.stalls import Blocked
from inference_operator.sim import Simulation
from inference_operator.sim.backend import FakeBackend
from inference_operator.sim.wiring import Interposer

from .pastadmission import create_past_admission

NS, NAME, KEY = "default", "llama", "default/llama"
Obj = dict[str, Any]


class RefusingBackend:
    """The simulator's backend, except that writing a ``kind`` raises ``error`` (``times`` times)."""

    def __init__(self, inner: FakeBackend, kind: str, error: ApiError, *, times: int = 1_000_000) -> None:
        self.inner = inner
        self.kind = kind
        self.error = error
        self.times = times

    def apply(self, obj: Obj) -> Obj:
        if obj["kind"] == self.kind and self.times > 0:
            self.times -= 1
            raise self.error
        return self.inner.apply(obj)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def refusing(kind: str, error: ApiError, **kwargs: Any) -> Simulation:
    sim = Simulation(
        interpose=Interposer(backend=lambda backend: cast(Backend, RefusingBackend(backend, kind, error, **kwargs)))
    )
    sim.apply(make_inference_service(NAME, image="vllm:0.6.3", model="m"))
    return sim


def ready(sim: Simulation) -> Obj:
    obj = sim.get(KIND, NS, NAME)
    assert obj is not None
    return next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")


def phase(sim: Simulation) -> str:
    obj = sim.get(KIND, NS, NAME)
    assert obj is not None
    return str(obj["status"]["phase"])


def test_a_name_that_cannot_become_a_service_is_reported_as_invalid_spec() -> None:
    sim = Simulation()
    create_past_admission(sim.api, make_inference_service("llama-3.1-8b", image="vllm:0.6.3", model="m"))
    assert sim.run_until_quiescent() == 1
    obj = sim.get(KIND, NS, "llama-3.1-8b")
    assert obj is not None
    cond = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
    assert cond["reason"] == Reason.INVALID_SPEC and "metadata.name" in cond["message"]
    assert "'llama-3.1-8b' is not" in cond["message"]
    assert sim.get(DEPLOYMENT, NS, "llama-3.1-8b") is None and sim.get(SERVICE, NS, "llama-3.1-8b") is None


def test_demo_refuses_a_manifest_whose_name_cannot_become_a_service(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(
        "apiVersion: serving.inference-operator.dev/v1\nkind: InferenceService\n"
        "metadata: {name: llama-3.1-8b}\nspec: {image: vllm, model: m}\n"
    )
    assert main(["demo", "-f", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert "metadata.name must be at most 63 characters" in err and "no dots" in err


def test_a_child_the_api_server_rejects_is_explained_once_and_the_run_ends() -> None:
    api_words = 'Service "llama" is invalid: spec.ports[0].port: Invalid value: 0'
    sim = refusing(SERVICE, Invalid(api_words, kind=SERVICE, namespace=NS, name=NAME))
    sim.run_until_quiescent()
    cond = ready(sim)
    assert (cond["status"], cond["reason"]) == ("False", Reason.CHILD_REJECTED)
    assert cond["message"].startswith("cannot create Service default/llama: the API server answered 422 Invalid: ")
    assert api_words in cond["message"]
    assert phase(sim) == Phase.FAILED
    assert sim.get(DEPLOYMENT, NS, NAME) is not None, "the other child is still written"
    warnings = [e for e in sim.events if e.type == "Warning"]
    assert [e.reason for e in warnings] == [Reason.CHILD_REJECTED], "one Event, not one per retry"
    assert list(sim.stalled()) == [KEY] and "Invalid" in sim.stalled()[KEY]
    assert sim.reconcile_total < 25, "the run gives up once retries are as slow as they get"


def test_a_forbidden_child_says_so() -> None:
    sim = refusing(DEPLOYMENT, Forbidden('deployments.apps "llama" is forbidden: exceeded quota: q', kind=DEPLOYMENT))
    sim.run_until_quiescent()
    cond = ready(sim)
    assert cond["reason"] == Reason.CHILD_FORBIDDEN and "exceeded quota" in cond["message"]
    assert "Deployment default/llama" in cond["message"] and "RBAC" in cond["message"]


def test_an_unavailable_api_server_is_not_called_failed_and_the_object_converges_after() -> None:
    sim = refusing(SERVICE, ApiError("etcdserver: request timed out"), times=3)
    sim.run_until_quiescent(until=0.02)
    cond = ready(sim)
    assert cond["reason"] == Reason.API_UNAVAILABLE and "request timed out" in cond["message"]
    assert phase(sim) != Phase.FAILED
    sim.run_until_quiescent()
    assert phase(sim) == Phase.READY and not sim.stalled()


def test_a_child_write_that_conflicts_every_time_is_explained_without_calling_it_failed() -> None:
    sim = refusing(DEPLOYMENT, Conflict("the object has been modified", kind=DEPLOYMENT, namespace=NS, name=NAME))
    sim.run_until_quiescent()
    cond = ready(sim)
    assert cond["reason"] == Reason.API_UNAVAILABLE and "409 Conflict" in cond["message"]
    assert phase(sim) != Phase.FAILED
    obj = sim.get(KIND, NS, NAME)
    assert obj is not None and obj["status"]["observedGeneration"] == obj["metadata"]["generation"]


def test_an_object_whose_name_cannot_become_a_service_is_deleted_without_a_release() -> None:
    sim = Simulation()
    create_past_admission(sim.api, make_inference_service("llama-3.1-8b", image="vllm:0.6.3", model="m"))
    sim.run_until_quiescent()
    sim.lb.fail_next_releases(1_000)  # a registry that refuses the name, as the reference one does
    sim.delete(KIND, NS, "llama-3.1-8b")
    sim.run_until_quiescent()
    assert sim.get(KIND, NS, "llama-3.1-8b") is None and sim.lb.release_calls == []


def test_throttling_is_not_called_a_rejection() -> None:
    throttled = ApiError("Too many requests, please try again later.", kind=SERVICE)
    throttled.code, throttled.reason = 429, "TooManyRequests"
    sim = refusing(SERVICE, throttled, times=3)
    sim.run_until_quiescent(until=0.02)
    cond = ready(sim)
    assert cond["reason"] == Reason.API_UNAVAILABLE and "429 TooManyRequests" in cond["message"]
    assert phase(sim) != Phase.FAILED


def test_the_child_of_a_deleted_namesake_is_waited_for_not_called_a_conflict() -> None:
    # The real garbage collector takes a moment; the simulator's is instant, so build the case.
    new = InferenceService.from_object(
        make_inference_service(NAME, image="vllm:0.6.3", model="m") | {"metadata": {"name": NAME, "uid": "new"}}
    )
    old_child = {
        "metadata": {
            "name": NAME,
            "namespace": NS,
            "ownerReferences": [
                {"apiVersion": API_VERSION, "kind": KIND, "name": NAME, "uid": "old", "controller": True}
            ],
        }
    }
    blocked = Blocked.conflict(new, DEPLOYMENT, old_child)
    assert blocked.condition.reason == Reason.WAITING_FOR_CHILDREN
    assert "garbage collector" in blocked.condition.message
    assert Reason.WAITING_FOR_CHILDREN not in Reason.NEEDS_ACTION
