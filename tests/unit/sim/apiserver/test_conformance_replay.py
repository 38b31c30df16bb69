"""The FakeApiServer replays what the real kube-apiserver answered to every conformance check.

Covers: each check of tests/shared/conformance runs on a fresh FakeApiServer, in the namespace the
recording used, and its trace equals the one recorded from kube-apiserver 1.36.5
(tests/shared/data/conformance_real.json, made by ``python -m tests.shared.conformance.record``); a
check listed as not modelled must still disagree; every check has a recording. The live
comparison, both backends at once, is tests/e2e/test_conformance.py: this is its offline echo,
so a change to the simulator that breaks agreement fails in seconds, without a cluster.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.shared.conformance import checks  # noqa: F401 - registers the checks
from tests.shared.conformance.not_modelled import NOT_MODELLED
from tests.shared.conformance.record import RECORDING
from tests.shared.conformance.registry import CHECKS
from tests.shared.conformance.session import diff, run_check
from tests.shared.conformance.transports import FakeTransport
from tests.shared.conformance.world import fake_server

RECORDED: dict[str, Any] = json.loads(RECORDING.read_text())


def _params() -> list[object]:
    marks = {name: pytest.mark.xfail(reason=f"not modelled: {why}", strict=True) for name, why in NOT_MODELLED.items()}
    return [pytest.param(name, id=name, marks=marks.get(name, ())) for name in sorted(CHECKS)]


def test_every_check_has_a_recording_from_the_real_server() -> None:
    missing = sorted(set(CHECKS) - set(RECORDED))
    assert not missing, (
        f"no recording for {missing}: run `python -m tests.shared.conformance.record --kubeconfig <cluster>` "
        "(make cluster-up starts one)"
    )


@pytest.mark.parametrize("check", _params())
def test_the_fake_answers_as_the_real_server_did(check: str) -> None:
    recorded = RECORDED.get(check)
    if recorded is None:
        pytest.fail(f"{check} has no recording (see test_every_check_has_a_recording_from_the_real_server)")
    trace = run_check(check, FakeTransport(fake_server()), recorded["namespace"])
    assert trace == recorded["trace"], (
        f"the fake disagrees with the recording of {check}:\n{diff(trace, recorded['trace'])}"
    )
