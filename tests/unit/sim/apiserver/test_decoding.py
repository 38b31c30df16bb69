"""Tests for the FakeApiServer's decoding step: bodies that do not fit a built-in kind's Go type.

Covers:
- A create or update (with the request's URL) whose body has a value of the wrong JSON type in
  metadata (labels, annotations, finalizers, ownerReferences) or in a ConfigMap's or Secret's
  maps of strings is BadRequest (400), before any validation; a null map is simply absent.
- A merge patch whose result does not decode, or that changes ``kind`` or ``apiVersion``, is
  Invalid (422) with the single field error ``patch: Invalid value``; the object is unchanged.
- A null in a map of strings decodes as "" (create, update, apply); an empty string in ConfigMap
  data is a value (kept), an empty data map is dropped.
- Custom resources are left to their CRD schema (no decoding check here).
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.sim.apiserver.decoding import decode_error
from inference_operator.sim.apiserver.server import BadRequest, FakeApiServer, Invalid
from inference_operator.sim.apiserver.target import Target

Obj = dict[str, Any]
URL = Target("v1", "ConfigMap", "default", "cm")


def configmap(**fields: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, **fields}


WRONG: list[Obj] = [
    configmap(data="text"),
    configmap(data={"k": 1}),
    configmap(binaryData={"k": True}),
    configmap(metadata={"name": "cm", "labels": {"a": 1}}),
    configmap(metadata={"name": "cm", "annotations": "x"}),
    configmap(metadata={"name": "cm", "finalizers": "x"}),
    configmap(metadata={"name": "cm", "finalizers": [1]}),
    configmap(metadata={"name": "cm", "ownerReferences": ["x"]}),
]


@pytest.mark.parametrize("body", WRONG)
def test_a_body_of_the_wrong_type_is_a_bad_request_on_create(body: Obj) -> None:
    api = FakeApiServer()
    with pytest.raises(BadRequest, match="cannot be handled as a ConfigMap: json: cannot unmarshal"):
        api.create(body, target=URL)
    assert api.objects_total() == api.objects_total("Namespace")  # nothing but the built-in namespaces


@pytest.mark.parametrize("body", WRONG[:3])
def test_a_body_of_the_wrong_type_is_a_bad_request_on_update(body: Obj) -> None:
    api = FakeApiServer()
    api.create(configmap(data={"k": "v"}), target=URL)
    with pytest.raises(BadRequest):
        api.update(body, target=URL)


def test_a_null_map_decodes_as_absent() -> None:
    created = FakeApiServer().create(configmap(data=None), target=URL)
    assert "data" not in created


@pytest.mark.parametrize(
    "patch",
    [
        {"metadata": "x"},
        {"data": "x"},
        {"data": {"k": 1}},
        {"metadata": {"labels": {"a": 1}}},
        {"metadata": {"finalizers": "x"}},
        {"kind": "Secret"},
        {"apiVersion": "v2"},
    ],
)
def test_a_patch_that_does_not_decode_is_invalid_as_patch(patch: Obj) -> None:
    api = FakeApiServer()
    stored = api.create(configmap(data={"k": "v"}))
    with pytest.raises(Invalid, match=r'is invalid: patch: Invalid value: "'):
        api.patch("ConfigMap", "default", "cm", patch)
    assert api.get("ConfigMap", "default", "cm") == stored


def test_a_custom_resource_is_left_to_its_schema() -> None:
    assert decode_error("InferenceService", {"metadata": {"labels": {"a": 1}}, "spec": "x"}) == ""


def test_a_null_in_a_map_of_strings_is_an_empty_string() -> None:
    api = FakeApiServer()
    body = configmap(data={"k": None, "j": "1"}, metadata={"name": "cm", "labels": {"l": None}})
    created = api.create(body, target=URL)
    assert created["data"] == {"k": "", "j": "1"} and created["metadata"]["labels"] == {"l": ""}
    config = {**configmap(data={"x": None}), "metadata": {"name": "applied"}}
    applied = api.apply(config, field_manager="alice", target=URL._replace(name="applied"))
    assert applied["data"] == {"x": ""}


def test_an_empty_value_in_configmap_data_is_kept_and_an_empty_map_dropped() -> None:
    api = FakeApiServer()
    assert api.create(configmap(data={"k": ""}))["data"] == {"k": ""}
    assert "data" not in api.create({**configmap(data={}), "metadata": {"name": "other"}})
