"""Every scenario, by name: the demo's four and the unhappy path, each written once against
:class:`~.world.World` (:mod:`.demo_scenarios`, :mod:`.unhappy_scenarios`; what they share is in
:mod:`.common`). The test modules import ``SCENARIOS`` and ``SIMULATOR_GAPS`` from here.
"""

from __future__ import annotations

from . import demo_scenarios, unhappy_scenarios
from .common import SCENARIOS, SIMULATOR_GAPS, foreign_service, llama

__all__ = ["SCENARIOS", "SIMULATOR_GAPS", "demo_scenarios", "foreign_service", "llama", "unhappy_scenarios"]
