"""CEL property names as kube-apiserver escapes them, read by the fake's CEL.

Covers: each escape (``__dash__``, ``__dot__``, ``__slash__``, ``__underscores__``, a reserved
word) selects the real property; a plain name and a name that merely contains ``__`` stay;
the operator's own escaping (``api.base.cel_property``) round-trips; a rule selecting
``ephemeral__dash__storage`` sees the ``ephemeral-storage`` field, in ``has()`` and in a selection.
"""

from __future__ import annotations

import pytest

from inference_operator.api.base import cel_property
from inference_operator.sim.apiserver.cel import evaluate
from inference_operator.sim.apiserver.celnames import unescape


@pytest.mark.parametrize(
    ("escaped", "name"),
    [
        ("ephemeral__dash__storage", "ephemeral-storage"),
        ("a__dot__b__slash__c", "a.b/c"),
        ("x__underscores__y", "x__y"),
        ("__namespace__", "namespace"),
        ("cpu", "cpu"),
        ("odd__name", "odd__name"),
    ],
)
def test_an_escaped_name_selects_the_real_property(escaped: str, name: str) -> None:
    assert unescape(escaped) == name


@pytest.mark.parametrize("name", ["ephemeral-storage", "a.b/c", "x__y", "plain"])
def test_the_operators_escaping_round_trips(name: str) -> None:
    assert unescape(cel_property(name)) == name


def test_a_rule_reads_a_dashed_property_through_its_escaped_name() -> None:
    rule = "!has(self.r.ephemeral__dash__storage) || self.r.ephemeral__dash__storage == 'x'"
    assert evaluate(rule, {"r": {"ephemeral-storage": "x"}}) is True
    assert evaluate(rule, {"r": {"ephemeral-storage": "y"}}) is False
    assert evaluate(rule, {"r": {}}) is True
