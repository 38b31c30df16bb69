"""The scenario suite (tests/shared/scenarios) on the simulator alone, offline and in seconds.

Covers: every scenario of the catalogue meets its own expectations on the simulator (the e2e
suite runs the same scenarios on the real control plane and compares), the GPU pool ones on
the simulated cluster beside the default nodes; the scenarios in
``SIMULATOR_GAPS`` still fail on the simulator (strict xfail: remove the entry once fixed); every
scenario of the demo has its counterpart in the catalogue; the
normalisation of Ready transitions (transient reasons collapse into one Progressing, repeats
collapse, an object's very first Progressing is dropped, a deletion ends the sequence); the
quota gate refuses creating a Service only; refusals name their fields.
"""

from __future__ import annotations

import pytest

from inference_operator.api.constants import SERVICE
from inference_operator.api.samples import make_inference_service
from inference_operator.core.errors import Forbidden
from inference_operator.demo import SCENARIO_NAMES
from inference_operator.sim.cluster.nodes import default_layout
from tests.shared.scenarios.catalogue import NEEDS_NODES, SCENARIOS, SIMULATOR_GAPS, foreign_service
from tests.shared.scenarios.observe import DELETED, PROGRESSING, step_transitions, transition_token
from tests.shared.scenarios.simworld import QuotaGate, SimWorld
from tests.shared.scenarios.world import refusal_of


def _params() -> list[object]:
    return [
        pytest.param(
            name,
            id=name,
            marks=[pytest.mark.xfail(reason=SIMULATOR_GAPS[name], strict=True)] if name in SIMULATOR_GAPS else [],
        )
        for name in SCENARIOS
    ]


@pytest.mark.parametrize("scenario", _params())
def test_scenario_meets_its_expectations_on_the_simulator(scenario: str) -> None:
    world = SimWorld(layout=default_layout() if scenario in NEEDS_NODES else None)
    SCENARIOS[scenario](world)
    assert world.observation.steps
    assert all((step.scheduling is not None) == (scenario in NEEDS_NODES) for step in world.observation.steps)


def test_every_demo_scenario_is_in_the_catalogue() -> None:
    assert set(SCENARIO_NAMES) <= set(SCENARIOS)


def _status(status: str, reason: str) -> dict[str, object]:
    return {"status": {"conditions": [{"type": "Ready", "status": status, "reason": reason}]}}


def test_transient_reasons_collapse_into_one_progressing_and_repeats_collapse() -> None:
    tokens = [
        transition_token(_status("False", "DeploymentNotObserved")),
        transition_token(_status("False", "RolloutInProgress")),
        transition_token(_status("False", "ReplicasUnavailable")),
        transition_token(_status("True", "Ready")),
        transition_token(_status("True", "Ready")),
    ]
    assert step_transitions(tokens, after="True/Ready") == ([PROGRESSING, "True/Ready"], "True/Ready")


def test_an_objects_first_progressing_is_dropped_but_remembered() -> None:
    assert step_transitions([PROGRESSING, "True/Ready"], after=None) == (["True/Ready"], "True/Ready")
    assert step_transitions([PROGRESSING], after=None) == ([], PROGRESSING)
    assert step_transitions(["False/ChildConflict"], after=None) == (["False/ChildConflict"], "False/ChildConflict")


def test_no_status_says_nothing_and_a_deletion_ends_the_sequence() -> None:
    assert transition_token({"status": {}}) is None
    assert transition_token(None, deleted=True) == DELETED


def test_the_quota_gate_refuses_creating_a_service_only() -> None:
    world = SimWorld()
    gate = QuotaGate(world.sim.api)
    gate.forbidden["default"] = "no-services"
    with pytest.raises(Forbidden, match="exceeded quota: no-services"):
        gate.create({**foreign_service("svc"), "metadata": {"name": "svc", "namespace": "default"}})
    gate.create(make_inference_service("llama", image="vllm:0.6.3", model="m"))
    gate.forbidden.clear()
    gate.create({**foreign_service("svc"), "metadata": {"name": "svc", "namespace": "default"}})
    gate.forbidden["default"] = "no-services"
    gate.apply(
        {"apiVersion": "v1", "kind": SERVICE, "metadata": {"name": "svc", "namespace": "default"}}, field_manager="m"
    )


def test_a_refusal_names_the_fields_of_its_errors() -> None:
    refusal = refusal_of(
        422,
        'The InferenceService "x" is invalid: \n* spec.replicas: Invalid value: -1: should be >= 0\n'
        "* spec.image: Required value",
    )
    assert refusal.fields == ("spec.replicas", "spec.image")
