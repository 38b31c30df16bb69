"""Walks of equal subtrees are remembered, and change nothing they find.

The field set of an applied object (``raw_field_set``) and the paths a create adds
(``compare`` from nothing) walk every map; the paths below a big map are remembered by its
encoding, so the container every pod of a template shares is walked once. These tests hold the
remembered answers to the walked ones.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference_operator.ssa import compare as drift_module
from inference_operator.ssa import fieldpaths, structured
from inference_operator.ssa.compare import drift
from inference_operator.ssa.fieldpaths import raw_field_set
from inference_operator.ssa.fieldschema import DEDUCED, schema_for
from inference_operator.ssa.remembered import RememberedWalks
from inference_operator.ssa.structured import MISSING, compare

POD = schema_for("Pod")

scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "a", "b"]), st.just({})
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["x", "y", "z", "w"]), inner, max_size=3)
    ),
    max_leaves=8,
)
names = st.sampled_from(["server", "sidecar", "server"])  # duplicates now and then
container = st.builds(
    lambda name, extra, ports: {"name": name, **extra, "ports": ports},
    names,
    st.dictionaries(st.sampled_from([f"f{i}" for i in range(12)]), values, min_size=6, max_size=12),
    st.lists(st.fixed_dictionaries({"containerPort": st.integers(1, 3)}), max_size=2),
)
pods = st.builds(
    lambda containers, extra: {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": containers, **extra}},
    st.lists(container, max_size=3),
    st.dictionaries(st.sampled_from([f"s{i}" for i in range(12)]), values, max_size=10),
)


def walked(monkeypatch: pytest.MonkeyPatch, work: Any) -> Any:
    """``work()`` with nothing remembered: every map walked."""
    with monkeypatch.context() as m:
        m.setattr(fieldpaths, "REMEMBER_FROM", 10**9)
        m.setattr(structured, "REMEMBER_FROM", 10**9)
        m.setattr(drift_module, "REMEMBER_FROM", 10**9)
        return work()


def assert_as_walked(work: Any) -> None:
    """``work()`` answers as it does with nothing remembered: at first sight, when the maps are
    remembered, and when they are read back."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        expected = walked(monkeypatch, work)
    for _ in range(3):
        assert work() == expected


def outcome(work: Any) -> Any:
    try:
        return work()
    except ValueError as err:
        return f"ValueError: {err}"


@settings(max_examples=150, deadline=None)
@given(pod=pods, strict=st.booleans())
def test_remembered_field_sets_are_the_walked_ones(pod: dict[str, Any], strict: bool) -> None:
    def work() -> Any:
        return raw_field_set(pod, POD, strict=strict)

    assert_as_walked(lambda: outcome(work))


@settings(max_examples=150, deadline=None)
@given(pod=pods)
def test_remembered_additions_are_the_walked_ones(pod: dict[str, Any]) -> None:
    def work() -> Any:
        result = compare(MISSING, pod, POD)
        return result.added, result.modified, result.removed

    assert_as_walked(work)


@settings(max_examples=150, deadline=None)
@given(before=pods, after=pods, same_spec=st.booleans())
def test_remembered_comparisons_are_the_walked_ones(
    before: dict[str, Any], after: dict[str, Any], same_spec: bool
) -> None:
    if same_spec:  # most updates leave the big maps alone, or change one field of them
        after = {**after, "spec": {**before["spec"], "extra": after["spec"]}}

    def work() -> Any:
        result = compare(before, after, POD)
        return result.added, result.modified, result.removed

    assert_as_walked(work)


def deployment(container: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


@settings(max_examples=150, deadline=None)
@given(
    desired=container,
    changes=st.dictionaries(st.sampled_from([f"f{i}" for i in range(12)] + ["resources"]), values, max_size=3),
    dropped=st.sets(st.sampled_from([f"f{i}" for i in range(12)]), max_size=3),
)
def test_remembered_drift_is_the_walked_one(
    desired: dict[str, Any], changes: dict[str, Any], dropped: set[str]
) -> None:
    live = {k: v for k, v in {**desired, **changes}.items() if k not in dropped}
    live["name"] = desired["name"]

    def work() -> list[str]:
        return drift(deployment(live), deployment(desired), kind="Deployment", manager="m")

    assert_as_walked(work)


quantities = st.sampled_from(["1", "1000m", "0.5", "500m", "2Gi", "2048Mi", "3"])


@settings(max_examples=100, deadline=None)
@given(
    desired=st.dictionaries(st.sampled_from([f"r{i}" for i in range(12)]), quantities, min_size=8, max_size=12),
    live=st.dictionaries(st.sampled_from([f"r{i}" for i in range(12)]), quantities, max_size=12),
)
def test_remembered_drift_compares_quantities_as_the_walk_does(desired: dict[str, str], live: dict[str, str]) -> None:
    """A map of quantities (a container's requests) is remembered with the quantity rule."""

    def container(requests: dict[str, str]) -> dict[str, Any]:
        return {"name": "s", "resources": {"requests": requests}}

    def work() -> list[str]:
        return drift(deployment(container(live)), deployment(container(desired)), kind="Deployment", manager="m")

    assert_as_walked(work)


@settings(max_examples=100, deadline=None)
@given(before=pods, after=pods, skipped=st.sampled_from([f"s{i}" for i in range(12)]))
def test_remembered_comparisons_honour_a_skip_below_the_map(
    before: dict[str, Any], after: dict[str, Any], skipped: str
) -> None:
    skip = frozenset({((0, "spec"), (0, skipped))})

    def work() -> Any:
        result = compare(before, after, POD, skip=skip)
        return result.added, result.modified, result.removed

    assert_as_walked(work)


def big_container(name: str = "server") -> dict[str, Any]:
    return {"name": name, **{f"f{i}": i for i in range(8)}, "env": [{"name": "A", "value": "1"}]}


def test_a_duplicate_is_refused_when_strict_even_after_a_lax_walk_remembered_it() -> None:
    pod = {"spec": {"containers": [big_container()], **{f"s{i}": i for i in range(8)}}}
    pod["spec"]["ports"] = [{"containerPort": 1}]
    twice = {"spec": {**pod["spec"], "containers": [big_container(), big_container()]}}
    for _ in range(3):
        raw_field_set(twice, POD)
    with pytest.raises(ValueError, match="duplicate entries"):
        raw_field_set(twice, POD, strict=True)


def test_equal_maps_under_other_schemas_are_walked_again() -> None:
    value = {f"k{i}": {"a": 1} for i in range(8)}
    calls: list[Any] = []

    def walk(v: dict[str, Any], node: Any, flag: bool) -> tuple[Any, ...]:
        calls.append(node)
        return ((node is DEDUCED,),)

    table = RememberedWalks(walk)
    for node in (DEDUCED, POD, DEDUCED, POD, DEDUCED):
        found = table.of(value, node)
        assert found is None or found == ((node is DEDUCED,),)
    assert table.of(value, POD) == ((False,),)  # the last one walked: its own answer


def test_a_skip_below_the_map_is_honoured() -> None:
    pod = {"spec": {"containers": [big_container()], **{f"s{i}": i for i in range(8)}}}
    skip = frozenset({((0, "spec"), (0, "s3"))})
    for _ in range(3):
        raw_field_set(pod, POD)
        assert ((0, "spec"), (0, "s3")) not in raw_field_set(pod, POD, skip=skip)
        assert ((0, "spec"), (0, "s3")) not in compare(MISSING, pod, POD, skip=skip).added


def test_the_tables_stay_bounded() -> None:
    table = RememberedWalks(lambda v, node, flag: (((0, "x"),),), size=4)
    for i in range(100):
        for _ in range(2):
            table.of({f"k{j}": i for j in range(8)}, POD)
    assert len(table._table) == 4
    assert len(table._seen) <= 16


def test_a_value_that_is_not_plain_json_is_left_to_the_caller() -> None:
    table = RememberedWalks(lambda v, node, flag: (((0, "x"),),))
    odd = {f"k{i}": object() for i in range(8)}
    assert table.of(odd, POD) is None
    assert table.of(odd, POD) is None
