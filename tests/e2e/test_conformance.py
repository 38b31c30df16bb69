"""The FakeApiServer against the real kube-apiserver: every conformance check, run on both.

Covers: each check in tests/shared/conformance/checks/*.py does the same API calls on a fresh
FakeApiServer (with the InferenceService CRD installed, in a fresh namespace) and on the local
control plane (in a fresh namespace of its own), and the two normalised traces must be equal.
A check listed in ``not_modelled.NOT_MODELLED`` must disagree (strict xfail) and says why.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..shared.conformance import checks  # noqa: F401 - registers the checks
from ..shared.conformance.not_modelled import NOT_MODELLED
from ..shared.conformance.registry import CHECKS
from ..shared.conformance.session import diff, new_namespace, run_check
from ..shared.conformance.transports import FakeTransport, RealTransport
from ..shared.conformance.world import fake_server
from .conftest import Cluster


@pytest.fixture(scope="module")
def real(cluster: Cluster, crd: None) -> Iterator[RealTransport]:
    yield RealTransport(cluster.kubeconfig)


def _params() -> list[object]:
    marks = {name: pytest.mark.xfail(reason=f"not modelled: {why}", strict=True) for name, why in NOT_MODELLED.items()}
    unknown = set(NOT_MODELLED) - set(CHECKS)
    assert not unknown, f"not_modelled.py names checks that do not exist: {sorted(unknown)}"
    return [pytest.param(name, id=name, marks=marks.get(name, ())) for name in sorted(CHECKS)]


@pytest.mark.parametrize("check", _params())
def test_fake_agrees_with_the_real_api_server(check: str, real: RealTransport) -> None:
    namespace = new_namespace(check)
    real_trace = run_check(check, real, namespace)
    fake_trace = run_check(check, FakeTransport(fake_server()), namespace)
    assert fake_trace == real_trace, (
        f"the fake and the real API server disagree on {check}:\n{diff(fake_trace, real_trace)}"
    )
