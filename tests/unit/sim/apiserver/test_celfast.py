"""The compiled CEL fast path never disagrees with celpy.

Covers: every rule of the project's CRD, and rules for each construct of the subset, on
values that make them true, false, and fail (missing fields, wrong types, nulls, floats):
wherever the fast path gives a verdict it is celpy's verdict, and where celpy reports an
error the fast path steps aside (so the message stays celpy's); constructs outside the
subset are left to celpy; the rules the CRD uses on its hot path (the name rule, on create
and update) are compiled, not interpreted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from inference_operator.api.crd import crd as project_crd
from inference_operator.sim.apiserver import cel
from inference_operator.sim.apiserver.cel import evaluate


def crd_rules() -> list[str]:
    def walk(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            for rule in node.get("x-kubernetes-validations") or ():
                yield rule["rule"]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    return sorted(set(walk(project_crd())))


VALUES: list[Any] = [
    {},
    {"metadata": {"name": "svc-00001"}},
    {"metadata": {"name": "With.Dot"}},
    {"metadata": {"name": "x" * 64}},
    {"metadata": {"name": 7}},
    {"metadata": {}},
    {"args": ["--x", "--model=a"]},
    {"args": ["--port", "--y"]},
    {"args": ["a", "b"]},
    {"args": [1, "b"]},
    {"args": "not a list"},
    {"args": None},
    {"env": [{"name": "A"}, {"name": "B"}]},
    {"env": [{"name": "A"}, {"name": "A"}]},
    {"env": [{"value": "x"}]},
    {"env": {"name": "A"}},
    {"value": "x", "valueFrom": {}},
    {"value": "x"},
    {"secretKeyRef": {}, "configMapKeyRef": {}},
    {"secretKeyRef": {}},
    {"operator": "Exists", "value": ""},
    {"operator": "Exists", "value": "v"},
    {"operator": "Equal", "value": "v"},
    {"operator": 1},
    {"n": 1, "m": 2},
    {"n": 2, "m": 2},
    {"n": 1.5, "m": 2},
    {"n": True, "m": False},
    {"n": "a", "m": "b"},
    {"n": "a", "m": 1},
    {"l": ["x", "y"], "n": "x"},
    {"l": [], "n": ""},
    {"l": {"k": "v"}, "n": "k"},
]

EXTRA_RULES = [
    "self.n < self.m",
    "self.n <= self.m",
    "self.n > self.m",
    "self.n >= self.m",
    "self.n == self.m",
    "self.n != self.m",
    "self.n == self.m ? true : size(self.l) == 0",
    "self.l.exists(a, a == self.n)",
    "self.l.all(a, a.startsWith(self.n))",
    "self.l.exists_one(a, a.endsWith('y'))",
    "self.l.all(a, a.contains('x') || !has(self.m))",
    "self.n.matches('^[a-z]$') && size(self.n) == 1",
    "self.n.matches('(')",
    "!(self.n == 'a') || false",
    "oldSelf.hasValue() || self.n == 1",
    "oldSelf.orValue(self).n == self.n",
    "oldSelf.hasValue() && oldSelf.value().n == 2",
    "self == oldSelf",
    "self.l.all(k, k.matches('^k$'))",
    "self.l.exists(k, size(k) == 1)",
    "self.n.matches('^[a-z]\\\\.?$')",
]

OLDS: list[Any] = [cel._ABSENT, {"n": 2, "m": 2}, {}]


def verdicts(rule: str, value: Any, old: Any, optional: bool) -> tuple[bool | str, bool | str]:
    kwargs: dict[str, Any] = {"optional_old_self": optional}
    if old is not cel._ABSENT:
        kwargs["old"] = old
    return evaluate(rule, value, **kwargs), evaluate(rule, value, reference=True, **kwargs)


@pytest.mark.parametrize("rule", crd_rules() + EXTRA_RULES)
def test_the_fast_path_agrees_with_celpy_on_every_value(rule: str) -> None:
    optional_choices = [True, False] if "oldSelf" in rule else [False]
    for value in VALUES:
        for old in OLDS if "oldSelf" in rule else [cel._ABSENT]:
            for optional in optional_choices:
                if old is cel._ABSENT and not optional and "oldSelf" in rule:
                    continue  # a transition rule never runs without an old value
                fast, reference = verdicts(rule, value, old, optional)
                assert fast == reference, (rule, value, old, optional)


def test_the_crd_rules_are_all_compiled() -> None:
    for rule in crd_rules():
        assert cel._program(rule).fast is not None, rule


@pytest.mark.parametrize("rule", ["self.n + 1 == 2", "self.l[0] == 'x'", "self.d == 1.5", "size(self.n) == 1u"])
def test_constructs_outside_the_subset_are_left_to_celpy(rule: str) -> None:
    assert cel._program(rule).fast is None
    assert evaluate(rule, {"n": 1, "l": ["x"], "d": 1.5}) == evaluate(
        rule, {"n": 1, "l": ["x"], "d": 1.5}, reference=True
    )
