"""Every scenario, by name: the demo's four, the unhappy path and the GPU pools, each written
once against :class:`~.world.World` (:mod:`.demo_scenarios`, :mod:`.unhappy_scenarios`,
:mod:`.gpu_scenarios`; what they share is in :mod:`.common`). The test modules import
``SCENARIOS``, ``SIMULATOR_GAPS``, ``BACKEND_DIFFERENCES``, ``ANY_PLACEMENT`` (with
``placement_blind``) and ``NEEDS_NODES`` from here.
"""

from __future__ import annotations

from . import demo_scenarios, gpu_scenarios, unhappy_scenarios
from .common import (
    ANY_PLACEMENT,
    BACKEND_DIFFERENCES,
    NEEDS_NODES,
    SCENARIOS,
    SIMULATOR_GAPS,
    foreign_service,
    llama,
    placement_blind,
)

__all__ = [
    "ANY_PLACEMENT",
    "BACKEND_DIFFERENCES",
    "NEEDS_NODES",
    "SCENARIOS",
    "SIMULATOR_GAPS",
    "demo_scenarios",
    "foreign_service",
    "gpu_scenarios",
    "llama",
    "placement_blind",
    "unhappy_scenarios",
]
