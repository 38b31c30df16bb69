"""Admitted means realizable, as a property on the fake (the real-server half is for e2e).

Covers: hypothesis generates specs field by field, each field valid or (at most one per spec)
broken in one of the ways users break it (wrong JSON type, out of range, bad pattern, an enum's wrong case, a
reserved argument, duplicate names, a negative quantity, a label key with a space, a string a
pod refuses, an unknown field). For each: (a) the CRD's validation on the fake (a server-side
apply, as ``kubectl apply --server-side`` sends it), (b) the operator's parser, (c) the fake's
validation of the Deployment (with its rollout strategy) and Service built from the parsed spec
as the reconciler's first pass builds them. The properties:

- a spec the parser accepts is admitted;
- a spec admitted is accepted by the parser, except for the gaps listed in ``KNOWN_GAPS``
  (rules the schema would not express; none left: the two there were, negative quantities and
  node-selector keys, are refused at admission, shown by a table);
- a spec the parser accepts builds a Deployment and a Service the fake accepts (the fake checks
  the pod template as kube-apiserver does), except for ``KNOWN_CHILD_REJECTIONS`` (none left:
  what this property found, cpu, memory and ephemeral-storage above their limits, a keyless
  toleration whose operator is not Exists and tolerationSeconds without effect NoExecute, are
  CEL rules now, and toleration keys and values, Secret and ConfigMap names and keys, label keys'
  part lengths and an image's surrounding whitespace are held to the pod's syntax at admission);
- a spec refused at admission is refused with a field path under ``spec``.

The README promises what this property keeps (no admitted spec ends as InvalidSpec or
ChildRejected): that promise stands only while both lists of exceptions are empty.

Also: the richest valid spec (every field the builders copy, at the edges of what is valid:
the longest label key, a key starting with '.', ``maxUnavailable: 0%``) is admitted, parsed
and built; the e2e suite sends it, and the gaps' specs, to the real server.

Size: ``INFERENCE_OPERATOR_PROPERTY_EXAMPLES`` (default 150, a few seconds).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from inference_operator.api.constants import KIND
from inference_operator.api.models import InferenceService
from inference_operator.core.errors import ApiError
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock
from tests.shared.specgen import CLOSED_GAPS, CRD, KNOWN_GAPS, RICH_SPEC, admission, children, parser, specs

EXAMPLES = int(os.environ.get("INFERENCE_OPERATOR_PROPERTY_EXAMPLES", "150"))
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


KNOWN_CHILD_REJECTIONS: dict[str, Callable[[str], bool]] = {}
"""Specs admitted and parsed whose Deployment the API server refuses, by why: the operator then
reports ChildRejected in status, naming the field (tests/unit/sim/apiserver/test_podvalidation.py).
Each is a rule for admission still to write."""


@PROPERTY
@given(spec=specs())
def test_admitted_means_parsed_means_realizable(spec: Obj) -> None:
    api = FakeApiServer(FakeClock())
    api.create(CRD)
    admitted, parsed = admission(api, spec), parser(spec)
    if parsed is None:
        assert admitted is None, f"the parser accepts what admission refuses: {admitted}"
        isvc = InferenceService.from_object(api.get(KIND, "default", "prop"))
        for child in children(isvc):
            try:
                api.create(child, field_manager="inference-operator")
            except ApiError as err:
                if not any(known(str(err)) for known in KNOWN_CHILD_REJECTIONS.values()):
                    pytest.fail(f"admitted and parsed, but the fake refuses its {child['kind']}: {err}")
    elif admitted is None:
        gaps = [why for why, applies in KNOWN_GAPS.items() if applies(spec)]
        assert gaps, f"admission takes what the parser refuses: {parsed}"
    else:
        assert re.search(r"\.?spec[.\[]|\.spec\b|spec\.", admitted), f"refused without a spec field path: {admitted}"


@pytest.mark.parametrize("fields", list(CLOSED_GAPS.values()), ids=list(CLOSED_GAPS))
def test_the_gaps_there_were_are_closed_at_admission(fields: Obj) -> None:
    spec = {"image": "v", "model": "m", **fields}
    api = FakeApiServer(FakeClock())
    api.create(CRD)
    assert admission(api, spec) is not None and parser(spec) is not None


def test_the_richest_valid_spec_is_admitted_parsed_and_built() -> None:
    api = FakeApiServer(FakeClock())
    api.create(CRD)
    assert admission(api, RICH_SPEC) is None and parser(RICH_SPEC) is None
    isvc = InferenceService.from_object(api.get(KIND, "default", "prop"))
    for child in children(isvc):
        api.create(child, field_manager="inference-operator")


def test_the_readme_promises_only_what_this_property_keeps() -> None:
    readme = " ".join((Path(__file__).resolve().parents[3] / "README.md").read_text().split())
    assert "no admitted spec is left to end as `InvalidSpec` or `ChildRejected`" in readme
    assert "tests/unit/api/test_admitted_realizable.py" in readme
    assert not KNOWN_GAPS and not KNOWN_CHILD_REJECTIONS, "the README says no admitted spec ends so: fix it or them"
