"""Tests for deletes with a propagation policy and the garbage collector's view of owners.

Covers:
- The answer of a delete: a success Status when the object went at once, the marked object (deletionTimestamp,
  finalizers) when the delete only marked it, even if the collector finished in the same call.
- Foreground: ``foregroundDeletion`` is added whether or not there are dependents; the owner waits
  for dependents with ``blockOwnerDeletion`` only; a dependent is deleted in the foreground only
  when it has dependents of its own.
- Orphan: the ``orphan`` finalizer is added, references are stripped, then the finalizer goes
  (the owner stays while its own finalizers remain); the watch sees it in that order.
- Owners are looked up by what a reference names: another kind, name or namespace than the
  uid's object is an absent owner, and the dependent is collected; a cluster-scoped owner of a
  namespaced dependent is a real owner.
- An unknown propagation policy is Invalid, naming ``propagationPolicy``; an owner reference
  without uid, name or kind is Invalid at ``metadata.ownerReferences.<field>`` (no index, as for real).
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.sim.apiserver.server import FakeApiServer, Invalid, NotFound

Obj = dict[str, Any]
HOLD = "example.com/hold"


def configmap(name: str, namespace: str = "default", **meta: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace, **meta}}


def ref(owner: Obj, **changes: Any) -> Obj:
    base = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    return {**base, **changes}


@pytest.fixture
def api() -> FakeApiServer:
    return FakeApiServer()


def exists(api: FakeApiServer, name: str, namespace: str = "default") -> bool:
    try:
        api.get("ConfigMap", namespace, name)
    except NotFound:
        return False
    return True


def test_a_delete_that_removes_at_once_answers_a_success_status(api: FakeApiServer) -> None:
    api.create(configmap("cm"))
    answer = api.delete("ConfigMap", "default", "cm")
    assert (answer["kind"], answer["status"]) == ("Status", "Success")


def test_a_delete_that_only_marks_answers_the_marked_object(api: FakeApiServer) -> None:
    api.create(configmap("cm", finalizers=[HOLD]))
    marked = api.delete("ConfigMap", "default", "cm")
    assert marked is not None and marked["metadata"]["finalizers"] == [HOLD]
    assert "deletionTimestamp" in marked["metadata"]


def test_foreground_without_dependents_marks_then_the_collector_removes(api: FakeApiServer) -> None:
    api.create(configmap("alone"))
    watch = api.watch("ConfigMap")
    marked = api.delete("ConfigMap", "default", "alone", propagation="Foreground")
    assert marked is not None and marked["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert not exists(api, "alone")
    assert [e.type for e in watch.drain()] == ["MODIFIED", "DELETED"]


def test_foreground_owner_waits_for_blocking_dependents_only(api: FakeApiServer) -> None:
    owner = api.create(configmap("owner"))
    api.create(configmap("blocking", finalizers=[HOLD], ownerReferences=[ref(owner, blockOwnerDeletion=True)]))
    api.create(configmap("loose", finalizers=[HOLD], ownerReferences=[ref(owner)]))
    api.delete("ConfigMap", "default", "owner", propagation="Foreground")
    assert api.get("ConfigMap", "default", "owner")["metadata"]["finalizers"] == ["foregroundDeletion"]
    for name in ("blocking", "loose"):
        dependent = api.get("ConfigMap", "default", name)["metadata"]
        assert dependent["finalizers"] == [HOLD], "a dependent without dependents is deleted in the background"
        assert "deletionTimestamp" in dependent
    api.patch("ConfigMap", "default", "blocking", {"metadata": {"finalizers": None}})
    assert not exists(api, "owner") and not exists(api, "blocking")
    assert exists(api, "loose")


def test_foreground_goes_through_a_chain_bottom_up(api: FakeApiServer) -> None:
    owner = api.create(configmap("owner"))
    child = api.create(configmap("child", ownerReferences=[ref(owner, blockOwnerDeletion=True)]))
    api.create(configmap("grandchild", finalizers=[HOLD], ownerReferences=[ref(child, blockOwnerDeletion=True)]))
    api.delete("ConfigMap", "default", "owner", propagation="Foreground")
    assert api.get("ConfigMap", "default", "child")["metadata"]["finalizers"] == ["foregroundDeletion"]
    api.patch("ConfigMap", "default", "grandchild", {"metadata": {"finalizers": None}})
    assert api.objects_total("ConfigMap") == 0


def test_orphan_marks_strips_references_then_lets_the_owner_go(api: FakeApiServer) -> None:
    owner = api.create(configmap("owner"))
    api.create(configmap("dependent", ownerReferences=[ref(owner)]))
    watch = api.watch("ConfigMap")
    marked = api.delete("ConfigMap", "default", "owner", propagation="Orphan")
    assert marked is not None and marked["metadata"]["finalizers"] == ["orphan"]
    assert not exists(api, "owner")
    assert "ownerReferences" not in api.get("ConfigMap", "default", "dependent")["metadata"]
    seen = [(e.type, e.object["metadata"]["name"]) for e in watch.drain()]
    assert seen == [("MODIFIED", "owner"), ("MODIFIED", "dependent"), ("DELETED", "owner")]


def test_orphan_of_an_owner_with_its_own_finalizer_leaves_that_finalizer(api: FakeApiServer) -> None:
    api.create(configmap("owner", finalizers=[HOLD]))
    api.delete("ConfigMap", "default", "owner", propagation="Orphan")
    assert api.get("ConfigMap", "default", "owner")["metadata"]["finalizers"] == [HOLD]


@pytest.mark.parametrize("changes", [{"kind": "Secret"}, {"name": "somebody"}])
def test_a_reference_naming_another_object_than_its_uid_is_an_absent_owner(api: FakeApiServer, changes: Obj) -> None:
    owner = api.create(configmap("owner"))
    api.create(configmap("dependent", ownerReferences=[ref(owner, **changes)]))
    assert not exists(api, "dependent")
    assert exists(api, "owner")


def test_an_owner_in_another_namespace_is_absent(api: FakeApiServer) -> None:
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    owner = api.create(configmap("owner", namespace="other"))
    api.create(configmap("dependent", ownerReferences=[ref(owner)]))
    assert not exists(api, "dependent")


def test_a_cluster_scoped_owner_owns_a_namespaced_dependent(api: FakeApiServer) -> None:
    owner = api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    api.create(configmap("dependent", ownerReferences=[ref(owner)]))
    assert exists(api, "dependent")
    api.delete("Namespace", "", "team")
    assert not exists(api, "dependent")


def test_an_unknown_propagation_policy_names_the_field(api: FakeApiServer) -> None:
    api.create(configmap("cm"))
    with pytest.raises(Invalid, match=r"propagationPolicy: Unsupported value"):
        api.delete("ConfigMap", "default", "cm", propagation="Sideways")  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["uid", "name", "kind"])
def test_an_owner_reference_without_a_field_is_invalid_at_the_real_path(api: FakeApiServer, field: str) -> None:
    owner = api.create(configmap("owner"))
    with pytest.raises(Invalid, match=rf'metadata\.ownerReferences\.{field}: Invalid value: "": '):
        api.create(configmap("dependent", ownerReferences=[ref(owner, **{field: ""})]))
