"""``spec.rollout`` at admission (the fake API server applies the CRD's schema and CEL rules, as
the real one does) and in the operator's own parser: the same answers, naming the field.

Covers: the three strategies and their default; counts as integers or percentages (unavailable
at most 100%); maxSurge only with Surge; Replace with maxUnavailable 0; both counts 0.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.api.models import SpecError, parse_spec
from inference_operator.api.samples import make_inference_service
from inference_operator.core.errors import ApiError
from inference_operator.sim.simulation import Simulation


def spec_with(rollout: Any) -> dict[str, Any]:
    obj = make_inference_service("llama", image="vllm", model="m")
    obj["spec"]["rollout"] = rollout
    return obj


@pytest.mark.parametrize(
    "rollout",
    [
        {},
        {"strategy": "Replace"},
        {"strategy": "Replace", "maxUnavailable": "50%"},
        {"strategy": "Auto", "maxUnavailable": 0},
        {"strategy": "Surge", "maxSurge": 2, "maxUnavailable": "100%"},
        {"strategy": "Surge", "maxSurge": 0, "maxUnavailable": 1},
    ],
)
def test_valid_rollouts_are_admitted_and_parsed(rollout: dict[str, Any]) -> None:
    sim = Simulation()
    stored = sim.apply(spec_with(rollout))
    assert stored["spec"]["rollout"]["strategy"] == rollout.get("strategy", "Surge")  # defaulted
    assert parse_spec(stored["spec"]).rollout is not None


@pytest.mark.parametrize(
    ("rollout", "words"),
    [
        ({"strategy": "Replace", "maxUnavailable": 0}, "maxUnavailable must be at least 1"),
        ({"strategy": "Replace", "maxUnavailable": "0%"}, "maxUnavailable must be at least 1"),
        ({"strategy": "Auto", "maxSurge": 1}, "maxSurge applies only to strategy Surge"),
        ({"strategy": "Surge", "maxSurge": "0%", "maxUnavailable": 0}, "cannot both be 0"),
        ({"strategy": "Surge", "maxUnavailable": "150%"}, "maxUnavailable"),
        ({"strategy": "Surge", "maxSurge": "lots"}, "maxSurge"),
        ({"strategy": "Surge", "maxSurge": -1}, "maxSurge"),
        ({"strategy": "BlueGreen"}, "strategy"),
    ],
)
def test_invalid_rollouts_are_refused_at_admission_and_by_the_parser(rollout: dict[str, Any], words: str) -> None:
    with pytest.raises(ApiError) as refused:
        Simulation().apply(spec_with(rollout))
    assert refused.value.code == 422 and words in str(refused.value)
    with pytest.raises(SpecError) as parsed:
        parse_spec(spec_with(rollout)["spec"])
    assert "spec.rollout" in parsed.value.message or "rollout" in parsed.value.message
