"""Nodes as stored objects: the default layout, what a kubelet registers (status kept on create,
ignored on update, quantities canonical), and the real API server's refusals (taint key, value,
effect, duplicates; negative or fractional quantities; quantities that do not parse)."""

from __future__ import annotations

import pytest

from inference_operator.core.errors import Invalid
from inference_operator.core.nodefit import allocatable, scheduling_taints
from inference_operator.sim.apiserver.managedfields import BadRequest
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.cluster.nodes import DEFAULT_LAYOUT, NodeShape, build_node

NOW = "2026-01-01T00:00:00Z"


def node(**changes: object) -> dict:
    obj = build_node(NodeShape("gpu-1"), now=NOW)
    obj["spec"].update(changes)
    return obj


def test_default_layout_is_two_nodes_of_eight_gpus() -> None:
    assert [s.name for s in DEFAULT_LAYOUT] == ["sim-node-1", "sim-node-2"]
    assert {s.gpus for s in DEFAULT_LAYOUT} == {8}
    assert allocatable(build_node(DEFAULT_LAYOUT[0], now=NOW)) == {
        "cpu": 96_000,
        "memory": 1024**4,
        "pods": 110,
        "nvidia.com/gpu": 8,
    }


def test_a_created_node_keeps_its_status_with_canonical_quantities() -> None:
    api = FakeApiServer()
    shape = NodeShape("gpu-1", memory="1024Gi")
    created = api.create(build_node(shape, now=NOW))
    assert created["status"]["allocatable"]["memory"] == "1Ti"
    assert created["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert "namespace" not in created["metadata"]
    assert api.get("Node", "", "gpu-1")["status"]["conditions"][0]["type"] == "Ready"


def test_the_main_endpoint_ignores_a_nodes_status() -> None:
    api = FakeApiServer()
    created = api.create(build_node(NodeShape("gpu-1"), now=NOW))
    created["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    updated = api.update(created)
    assert updated["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    changed = api.update_status(updated | {"status": {**updated["status"], "allocatable": {"pods": "10"}}})
    assert changed["status"]["allocatable"] == {"pods": "10"}


@pytest.mark.parametrize(
    ("taint", "message"),
    [
        (
            {"key": "gpu", "effect": "Sometimes"},
            'metadata.taints[0].effect: Unsupported value: "Sometimes": supported values: '
            '"NoSchedule", "PreferNoSchedule", "NoExecute"',
        ),
        ({"key": "gpu"}, "metadata.taints[0].effect: Required value"),
        (
            {"key": "bad key", "effect": "NoSchedule"},
            'metadata.taints[0].key: Invalid value: "bad key": name part must consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "
            "or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            {"key": "gpu", "value": "a b", "effect": "NoExecute"},
            'metadata.taints[0].value: Invalid value: "a b": a valid label must be an empty string or consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
    ],
)
def test_a_bad_taint_is_refused_with_the_real_message(taint: dict, message: str) -> None:
    with pytest.raises(Invalid) as err:
        FakeApiServer().create(node(taints=[taint]))
    assert str(err.value) == f'Node "gpu-1" is invalid: {message}'


def test_a_taint_twice_with_the_same_effect_is_refused() -> None:
    taint = {"key": "gpu", "value": "a", "effect": "NoSchedule"}
    with pytest.raises(
        Invalid, match=r"metadata.taints\[1\]: Duplicate value: .*taints must be unique by key and effect pair"
    ):
        FakeApiServer().create(node(taints=[taint, {**taint, "value": "b"}]))
    FakeApiServer().create(node(taints=[taint, {**taint, "effect": "NoExecute"}]))  # another effect is fine


def test_negative_and_fractional_extended_quantities_are_refused() -> None:
    obj = node()
    obj["status"]["allocatable"] = {"nvidia.com/gpu": "1.5", "cpu": "-1"}
    with pytest.raises(Invalid) as err:
        FakeApiServer().create(obj)
    assert str(err.value) == (
        'Node "gpu-1" is invalid: [status.allocatable.nvidia.com/gpu: Invalid value: 1500m: must be an integer, '
        'status.allocatable.cpu: Invalid value: "-1": must be greater than or equal to 0]'
    )


def test_a_quantity_that_does_not_parse_is_a_bad_request() -> None:
    obj = node()
    obj["status"]["capacity"] = {"nvidia.com/gpu": "eight"}
    with pytest.raises(BadRequest, match="quantities must match the regular expression"):
        FakeApiServer().create(obj)


def test_scheduler_sees_lifecycle_taints_on_not_ready_and_cordoned_nodes() -> None:
    assert scheduling_taints(build_node(NodeShape("a"), now=NOW)) == []
    down = build_node(NodeShape("a", ready=False, unschedulable=True), now=NOW)
    assert scheduling_taints(down) == [
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
    ]
