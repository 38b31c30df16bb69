"""Tests for what the FakeApiServer does when a request's URL and its body disagree.

Covers:
- Create: a body without kind/apiVersion is taken as the URL's kind; another kind or version is
  BadRequest; a namespace other than the URL's is BadRequest, a missing one is the URL's.
- Update (PUT, also /status): a body naming another name or namespace than the URL is BadRequest.
- Apply: apiVersion and kind are required and must be the URL's, the name must be given and be
  the URL's (BadRequest otherwise).
- Merge patches: a body that is no JSON object (a list, a string, null) is BadRequest; a patch
  may not rename the object nor move it (BadRequest); a patched uid is Invalid (422), not a
  precondition; a resourceVersion in a patch still is one (Conflict).
- Without a target (the simulator's own calls) nothing of this is checked.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.sim.apiserver.server import BadRequest, Conflict, FakeApiServer, Invalid
from inference_operator.sim.apiserver.target import Target

Obj = dict[str, Any]
URL = Target("v1", "ConfigMap", "default", "cm")


def configmap(name: str = "cm", **meta: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": {"k": "v"}}


@pytest.fixture
def api() -> FakeApiServer:
    return FakeApiServer()


def test_a_create_without_kind_takes_the_url_kind_and_namespace(api: FakeApiServer) -> None:
    created = api.create({"metadata": {"name": "cm"}, "data": {"k": "v"}}, target=URL)
    assert (created["kind"], created["apiVersion"], created["metadata"]["namespace"]) == ("ConfigMap", "v1", "default")


@pytest.mark.parametrize(
    "body",
    [
        {**configmap(), "kind": "Secret"},
        {**configmap(), "apiVersion": "apps/v1"},
        configmap(namespace="elsewhere"),
    ],
)
def test_a_create_whose_body_disagrees_with_the_url_is_a_bad_request(api: FakeApiServer, body: Obj) -> None:
    with pytest.raises(BadRequest):
        api.create(body, target=URL)
    assert api.objects_total() == api.objects_total("Namespace")  # nothing but the built-in namespaces


def test_an_update_naming_another_object_than_the_url_is_a_bad_request(api: FakeApiServer) -> None:
    stored = api.create(configmap(), target=URL)
    renamed = {**stored, "metadata": {**stored["metadata"], "name": "other"}}
    moved = {**stored, "metadata": {**stored["metadata"], "namespace": "elsewhere"}}
    for body in (renamed, moved):
        with pytest.raises(BadRequest):
            api.update(body, target=URL)
    assert api.update({**stored, "data": {"k": "w"}}, target=URL)["data"] == {"k": "w"}


@pytest.mark.parametrize(
    "body",
    [
        {k: v for k, v in configmap().items() if k != "kind"},
        {k: v for k, v in configmap().items() if k != "apiVersion"},
        {**configmap(), "kind": "Secret"},
        configmap("other"),
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}},
    ],
)
def test_an_apply_must_name_the_url_kind_version_and_name(api: FakeApiServer, body: Obj) -> None:
    with pytest.raises(BadRequest):
        api.apply(body, field_manager="alice", target=URL)
    assert api.objects_total() == api.objects_total("Namespace")  # nothing but the built-in namespaces


def test_an_apply_that_agrees_with_the_url_creates(api: FakeApiServer) -> None:
    assert api.apply(configmap(), field_manager="alice", target=URL)["metadata"]["namespace"] == "default"


@pytest.mark.parametrize("patch", [[{"op": "add", "path": "/data/k", "value": "w"}], "data", None, 3])
def test_a_merge_patch_that_is_no_object_is_a_bad_request(api: FakeApiServer, patch: Any) -> None:
    api.create(configmap())
    with pytest.raises(BadRequest):
        api.patch("ConfigMap", "default", "cm", patch)
    with pytest.raises(BadRequest):
        api.patch_status("ConfigMap", "default", "cm", patch)


@pytest.mark.parametrize("meta", [{"name": "other"}, {"namespace": "elsewhere"}])
def test_a_patch_cannot_rename_or_move_the_object(api: FakeApiServer, meta: Obj) -> None:
    api.create(configmap())
    with pytest.raises(BadRequest):
        api.patch("ConfigMap", "default", "cm", {"metadata": meta})


def test_a_patched_uid_is_invalid_not_a_conflict(api: FakeApiServer) -> None:
    stored = api.create(configmap())
    with pytest.raises(Invalid, match=r"metadata\.uid: Invalid value"):
        api.patch("ConfigMap", "default", "cm", {"metadata": {"uid": "someone-else"}})
    same = api.patch("ConfigMap", "default", "cm", {"metadata": {"uid": stored["metadata"]["uid"]}})
    assert same["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]


def test_a_stale_resource_version_in_a_patch_is_still_a_conflict(api: FakeApiServer) -> None:
    stored = api.create(configmap())
    api.patch("ConfigMap", "default", "cm", {"data": {"k": "w"}})
    with pytest.raises(Conflict):
        api.patch(
            "ConfigMap", "default", "cm", {"metadata": {"resourceVersion": stored["metadata"]["resourceVersion"]}}
        )


def test_without_a_target_the_body_alone_names_the_object(api: FakeApiServer) -> None:
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "elsewhere"}})
    created = api.create(configmap(namespace="elsewhere"))
    assert created["metadata"]["namespace"] == "elsewhere"
