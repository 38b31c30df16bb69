"""The one place that lists what the FakeApiServer does not model, and why.

A check named here is still run on both backends; it must *disagree* (the test is a strict
xfail), so a check that starts agreeing has to be taken off this list. Keep it short: it is a
list of deliberate limits of the simulator, never a place to park a bug.
"""

from __future__ import annotations

NOT_MODELLED: dict[str, str] = {}
