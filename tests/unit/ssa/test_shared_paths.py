"""Field sets recorded by the API server share their paths: one tuple per distinct path.

The simulator keeps the field set of every recent managedFields entry it stores (to skip
parsing it back on the next write). Those sets are mostly the same ~100 paths for every object
of a kind; built afresh by each tree walk, they were most of the simulator's memory per object
after the stored objects themselves.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.ssa import fieldpaths, fieldsv1
from inference_operator.ssa.fieldpaths import FieldSet, field_set, shared_field_set
from inference_operator.ssa.fieldsv1 import known_field_set, shared_fields_v1


def deployment(name: str, owner_uid: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"app": name},
            "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": owner_uid, "controller": True}],
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "server", "image": "vllm:0.7.0", "args": ["--model", name]}]},
            },
        },
    }


def fields_of(name: str, owner_uid: str) -> FieldSet:
    return field_set(deployment(name, owner_uid), "Deployment")


def by_value(fields: FieldSet) -> dict[Any, Any]:
    return {path: path for path in fields}


@pytest.fixture(autouse=True)
def fresh_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty tables: an equal set encoded by an earlier test would otherwise come back as it was."""
    monkeypatch.setattr(fieldpaths, "_KNOWN_PATHS", {})
    monkeypatch.setattr(fieldsv1, "_FIELDS_OF", {})
    monkeypatch.setattr(fieldsv1, "_RECENT", {})
    monkeypatch.setattr(fieldsv1, "_KEPT", {})
    fieldsv1._encoded.cache_clear()


def test_a_shared_set_equals_its_paths_and_reuses_the_paths_of_earlier_sets() -> None:
    first, second = fields_of("a", "uid-1"), fields_of("b", "uid-2")
    common = first & second
    assert len(common) >= 6 and first != second  # the owner's uid differs, the rest is alike
    assert not any(by_value(first)[path] is by_value(second)[path] for path in common)  # two walks, two tuples

    shared_first, shared_second = shared_field_set(first), shared_field_set(second)

    assert shared_first == first and shared_second == second
    known = by_value(shared_first)
    assert all(by_value(shared_second)[path] is known[path] for path in common)


def test_the_field_sets_the_api_server_remembers_share_their_paths() -> None:
    first, second = fields_of("a", "uid-1"), fields_of("b", "uid-2")

    remembered = [known_field_set(shared_fields_v1(fields)) for fields in (first, second)]

    assert remembered[0] == first and remembered[1] == second
    assert remembered[0] is not None and remembered[1] is not None
    known = by_value(remembered[0])
    assert all(by_value(remembered[1])[path] is known[path] for path in first & second)


def test_the_table_of_paths_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fieldpaths, "PATHS_REMEMBERED", 50)
    largest = 0
    for i in range(40):  # each set has paths of its own (the owner's uid)
        fields = fields_of(f"d{i}", f"uid-{i}")
        largest = max(largest, len(fields))
        assert shared_field_set(fields) == fields
        assert len(fieldpaths._KNOWN_PATHS) < 50 + largest
    assert largest >= 8
