"""Test helpers for the explorer's worlds: a valid spec, and a look at a world without running it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from inference_operator.sim.explore import World
from inference_operator.sim.explore.observation import Observation

SPEC: dict[str, Any] = {
    "image": "vllm/vllm-openai:v0.6.3",
    "model": "meta-llama/Llama-3.1-8B-Instruct",
    "replicas": 1,
    "progressDeadlineSeconds": 60,
}


def quiet(world: World) -> Observation:
    """An observation of the world as it stands, without running anything."""
    return Observation(sim=world.sim, reconciles=Counter(), warnings=Counter(), pass_calls=[], pass_lb=[], failing={})
