"""Tests for namespaces in the FakeApiServer, as the real kube-apiserver treats them.

Covers:
- A fresh server holds default, kube-node-lease, kube-public and kube-system.
- A new namespace gets ``spec.finalizers: [kubernetes]`` (after its own), ``status.phase: Active``
  and the ``kubernetes.io/metadata.name`` label; the label always names it, and writes to the
  main endpoint keep spec and status.
- Creating (or applying) in a missing namespace is NotFound, in a terminating one Forbidden;
  updates there are allowed.
- The request path's namespace: an object naming another is BadRequest, one naming none lands
  in the path's; a cluster-scoped object loses the namespace it names.
- Deleting a namespace answers it Terminating, deletes its content and removes it when empty; an
  object with finalizers keeps it until the last one goes; a second DELETE changes nothing; a
  finalizer of its own keeps it after the content is gone; default, kube-system and kube-public
  cannot be deleted.
- Watch events of a namespace deletion, and the controller's writes counted apart.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.core.errors import Forbidden
from inference_operator.sim.apiserver.server import BadRequest, FakeApiServer, NotFound

Obj = dict[str, Any]


@pytest.fixture
def api() -> FakeApiServer:
    return FakeApiServer()


def namespace(name: str, **extra: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, **extra}


def configmap(name: str, namespace_name: str = "team", **meta: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace_name, **meta}}


class TestBuiltIn:
    def test_a_fresh_server_holds_the_four_built_in_namespaces(self, api: FakeApiServer) -> None:
        names = [ns["metadata"]["name"] for ns in api.list("Namespace")]
        assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
        default = api.get("Namespace", "", "default")
        assert default["status"] == {"phase": "Active"}
        assert default["spec"] == {"finalizers": ["kubernetes"]}

    @pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
    def test_immortal_namespaces_cannot_be_deleted(self, api: FakeApiServer, name: str) -> None:
        with pytest.raises(Forbidden, match="may not be deleted"):
            api.delete("Namespace", "", name)
        assert "deletionTimestamp" not in api.get("Namespace", "", name)["metadata"]

    def test_kube_node_lease_can_be_deleted(self, api: FakeApiServer) -> None:
        api.delete("Namespace", "", "kube-node-lease")
        with pytest.raises(NotFound):
            api.get("Namespace", "", "kube-node-lease")


class TestNewNamespace:
    def test_the_server_fills_in_finalizer_phase_and_name_label(self, api: FakeApiServer) -> None:
        made = api.create(namespace("team", status={"phase": "Terminating"}))
        assert made["spec"] == {"finalizers": ["kubernetes"]}
        assert made["status"] == {"phase": "Active"}
        assert made["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}

    def test_its_own_finalizers_come_first(self, api: FakeApiServer) -> None:
        made = api.create(namespace("team", spec={"finalizers": ["example.com/x"]}))
        assert made["spec"]["finalizers"] == ["example.com/x", "kubernetes"]

    def test_the_name_label_cannot_be_changed_nor_removed(self, api: FakeApiServer) -> None:
        made = api.create(namespace("team", metadata={"name": "team", "labels": {"kubernetes.io/metadata.name": "x"}}))
        assert made["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
        made["metadata"]["labels"] = {"kubernetes.io/metadata.name": "changed", "owner": "a"}
        updated = api.update(made)
        assert updated["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team", "owner": "a"}
        patched = api.patch("Namespace", "", "team", {"metadata": {"labels": {"kubernetes.io/metadata.name": None}}})
        assert patched["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]  # a no-op

    def test_updates_keep_spec_and_status(self, api: FakeApiServer) -> None:
        made = api.create(namespace("team"))
        updated = api.update({**made, "spec": {"finalizers": []}, "status": {"phase": "Terminating"}})
        assert updated["spec"] == {"finalizers": ["kubernetes"]}
        assert updated["status"] == {"phase": "Active"}

    def test_the_creator_does_not_own_the_finalizer_the_server_adds(self, api: FakeApiServer) -> None:
        made = api.create(namespace("team"), field_manager="me")
        (entry,) = made["metadata"]["managedFields"]
        assert entry["fieldsV1"] == {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}


class TestAdmission:
    def test_creating_in_a_missing_namespace_is_not_found(self, api: FakeApiServer) -> None:
        with pytest.raises(NotFound, match='namespaces "nowhere" not found'):
            api.create(configmap("a", "nowhere"))
        with pytest.raises(NotFound, match='namespaces "nowhere" not found'):
            api.apply(configmap("a", "nowhere"), field_manager="me")

    def test_a_missing_namespace_comes_before_an_invalid_name(self, api: FakeApiServer) -> None:
        with pytest.raises(NotFound):
            api.create(configmap("Bad_Name", "nowhere"))

    def test_an_object_naming_another_namespace_than_the_path_is_a_bad_request(self, api: FakeApiServer) -> None:
        api.create(namespace("team"))
        with pytest.raises(BadRequest, match="does not match the namespace sent on the request"):
            api.create(configmap("a", "elsewhere"), namespace="team")

    def test_an_object_naming_no_namespace_lands_in_the_paths(self, api: FakeApiServer) -> None:
        api.create(namespace("team"))
        made = api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}, namespace="team")
        assert made["metadata"]["namespace"] == "team"

    def test_a_cluster_scoped_object_loses_the_namespace_it_names(self, api: FakeApiServer) -> None:
        made = api.create(namespace("team", metadata={"name": "team", "namespace": "default"}))
        assert "namespace" not in made["metadata"]


class TestDeletion:
    def test_delete_answers_terminating_and_removes_the_content_and_the_namespace(self, api: FakeApiServer) -> None:
        api.create(namespace("team"))
        api.create(configmap("a"))
        api.create(configmap("b"))
        answer = api.delete("Namespace", "", "team")
        assert answer is not None
        assert answer["status"] == {"phase": "Terminating"}
        assert "deletionTimestamp" in answer["metadata"]
        assert api.list("ConfigMap", "team") == []
        with pytest.raises(NotFound):
            api.get("Namespace", "", "team")

    def test_content_with_finalizers_keeps_the_namespace_terminating(self, api: FakeApiServer) -> None:
        api.create(namespace("team"))
        api.create(configmap("held", finalizers=["example.com/hold"]))
        api.delete("Namespace", "", "team")
        assert api.get("Namespace", "", "team")["status"] == {"phase": "Terminating"}
        assert "deletionTimestamp" in api.get("ConfigMap", "team", "held")["metadata"]
        with pytest.raises(Forbidden, match="being terminated"):
            api.create(configmap("new"))
        api.patch("ConfigMap", "team", "held", {"data": {"k": "v"}})  # updates are allowed

        again = api.delete("Namespace", "", "team")
        assert again == api.get("Namespace", "", "team")  # a second DELETE changes nothing
        api.patch("ConfigMap", "team", "held", {"metadata": {"finalizers": None}})
        with pytest.raises(NotFound):
            api.get("Namespace", "", "team")

    def test_a_finalizer_of_its_own_keeps_the_emptied_namespace(self, api: FakeApiServer) -> None:
        api.create(namespace("team", spec={"finalizers": ["example.com/x"]}))
        api.create(configmap("a"))
        api.delete("Namespace", "", "team")
        assert api.get("Namespace", "", "team")["spec"] == {"finalizers": ["example.com/x"]}
        assert api.list("ConfigMap", "team") == []

    def test_the_namespace_can_be_created_again_once_gone(self, api: FakeApiServer) -> None:
        first = api.create(namespace("team"))
        api.delete("Namespace", "", "team")
        second = api.create(namespace("team"))
        assert second["metadata"]["uid"] != first["metadata"]["uid"]

    def test_watchers_see_terminating_then_content_then_namespace_deleted(self, api: FakeApiServer) -> None:
        api.create(namespace("team"))
        api.create(configmap("a"))
        watch = api.watch()
        api.reset_counters()
        api.delete("Namespace", "", "team")
        seen = [(e.type, e.object["kind"], e.object.get("status", {}).get("phase")) for e in watch.drain()]
        assert seen == [
            ("MODIFIED", "Namespace", "Terminating"),
            ("DELETED", "ConfigMap", None),
            ("DELETED", "Namespace", "Terminating"),
        ]
        assert api.writes == 1  # the DELETE; the namespace controller's work is counted apart
        assert api.gc_writes == 2
