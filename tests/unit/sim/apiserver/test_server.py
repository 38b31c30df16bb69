"""Tests for FakeApiServer: the API-server semantics an operator silently depends on.

Covers:
- Create: server-set uid, resourceVersion, generation, creationTimestamp (from the clock);
  default namespace; client-sent server fields and status are ignored; duplicates raise
  AlreadyExists; names a real server rejects raise Invalid.
- Reads: get/delete of a missing object raise NotFound; list filters by namespace and labels and
  is sorted; every returned object is a copy.
- Optimistic concurrency: a stale resourceVersion raises Conflict naming both versions; a
  re-read then succeeds; no resourceVersion means an unconditional update.
- Generation: bumped by spec changes only (labels, finalizers, status do not), and for
  Deployments by annotation changes too.
- Status subresource: update_status writes only status, bumps resourceVersion, never
  generation; the main endpoint ignores status; server-owned metadata cannot be changed.
- No-op writes: no resourceVersion bump, no event, not counted as a write, but logged.
- Merge patches: RFC 7386 semantics, resourceVersion precondition, status via patch_status.
- Finalizers: delete only marks (deletionTimestamp, generation + 1, MODIFIED); deleting again
  is a no-op; new finalizers are forbidden while deleting; removing the last one removes the
  object.
- Garbage collection: cascades through ownerReferences (grandchildren too), honours a child's
  finalizer, keeps a dependent that still has another owner, collects a dependent created for
  an owner that is already gone; Orphan and Foreground propagation.
- Watches: ADDED/MODIFIED/DELETED in order with the new resourceVersion, per-kind filtering,
  copies per watch, stop.
- Defaulting: Deployment and Service defaults, quantity canonicalisation, omitempty pruning,
  re-applying a manifest without defaults changes nothing; allocated cluster IP kept; selector
  immutability.
- Scale: 10,000 creates and updates stay fast.
- jsoncopy: deep_copy equality and independence (shared subtrees unshared), JSON-subclass
  coercion, copy_without_nulls, freeze/thaw, faster than copy.deepcopy; merge_patch against
  the RFC 7386 appendix examples, inputs never mutated nor shared.
"""

from __future__ import annotations

import copy
import enum
import time
from typing import Any, ClassVar

import pytest

from inference_operator.core.errors import ServerError
from inference_operator.core.jsoncopy import copy_without_nulls, deep_copy, freeze, merge_patch, thaw
from inference_operator.sim.apiserver.server import (
    AlreadyExists,
    ApiError,
    ApiRequest,
    Conflict,
    FakeApiServer,
    Invalid,
    NotFound,
)
from inference_operator.sim.clock import FakeClock

Obj = dict[str, Any]
KIND = "InferenceService"
FINALIZER = "serving.inference-operator.dev/loadbalancer-cleanup"


def _content_total(api: FakeApiServer) -> int:
    """Every stored object but the namespaces (a fresh server holds the four built-in ones)."""
    return api.objects_total() - api.objects_total("Namespace")


class MyInt(int):
    pass


def isvc(name: str = "llama", *, replicas: int = 1, **meta: Any) -> Obj:
    return {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": KIND,
        "metadata": {"name": name, "namespace": "default", **meta},
        "spec": {"image": "vllm:0.6.3", "model": "Llama-3", "replicas": replicas},
    }


def owner_ref(owner: Obj, *, block: bool = True) -> Obj:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": block,
    }


def deployment(name: str = "llama", *, owner: Obj | None = None, image: str = "vllm:0.6.3", **meta: Any) -> Obj:
    metadata: Obj = {"name": name, "namespace": "default", **meta}
    if owner is not None:
        metadata["ownerReferences"] = [owner_ref(owner)]
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "server",
                            "image": image,
                            "ports": [{"containerPort": 8000, "name": "http"}],
                            "resources": {
                                "limits": {"nvidia.com/gpu": 1, "cpu": 0.5},
                                "requests": {"memory": "1024Mi"},
                            },
                        }
                    ]
                },
            },
        },
    }


def service(name: str = "llama", *, owner: Obj | None = None) -> Obj:
    metadata: Obj = {"name": name, "namespace": "default"}
    if owner is not None:
        metadata["ownerReferences"] = [owner_ref(owner)]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": 8000}]},
    }


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def api(clock: FakeClock) -> FakeApiServer:
    return FakeApiServer(clock)


def rv(obj: Obj) -> int:
    return int(obj["metadata"]["resourceVersion"])


# --- create and read ----------------------------------------------------------------------------


class TestCreate:
    def test_create_sets_uid_resource_version_generation_and_creation_timestamp(
        self, api: FakeApiServer, clock: FakeClock
    ) -> None:
        clock.advance(5)
        created = api.create(isvc())
        meta = created["metadata"]
        assert meta["uid"]
        assert meta["resourceVersion"].isdigit()
        assert meta["generation"] == 1
        assert meta["creationTimestamp"] == "2026-01-01T00:00:05Z"
        assert created["spec"] == isvc()["spec"]
        assert api.get(KIND, "default", "llama") == created

    def test_uids_are_unique_and_resource_versions_increase(self, api: FakeApiServer) -> None:
        a = api.create(isvc("a"))
        b = api.create(isvc("b"))
        assert a["metadata"]["uid"] != b["metadata"]["uid"]
        assert rv(b) > rv(a)

    def test_namespace_defaults_to_default(self, api: FakeApiServer) -> None:
        manifest = isvc()
        del manifest["metadata"]["namespace"]
        assert api.create(manifest)["metadata"]["namespace"] == "default"

    def test_client_sent_server_fields_and_status_are_ignored(self, api: FakeApiServer) -> None:
        manifest = isvc(uid="mine", generation=7, deletionTimestamp="2020-01-01T00:00:00Z")
        manifest["status"] = {"phase": "Ready"}
        created = api.create(manifest)
        assert created["metadata"]["uid"] != "mine"
        assert created["metadata"]["generation"] == 1
        assert "deletionTimestamp" not in created["metadata"]
        assert "status" not in created

    def test_duplicate_create_raises_already_exists(self, api: FakeApiServer) -> None:
        api.create(isvc())
        with pytest.raises(AlreadyExists) as caught:
            api.create(isvc())
        assert caught.value.code == 409
        assert "llama" in caught.value.message

    def test_same_name_in_another_namespace_or_kind_is_a_different_object(self, api: FakeApiServer) -> None:
        api.create(isvc())
        other = isvc()
        other["metadata"]["namespace"] = "team-b"
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}})
        api.create(other)
        api.create(deployment())
        assert _content_total(api) == 3

    @pytest.mark.parametrize("name", ["Llama", "llama_3", "-llama", ""])
    def test_invalid_names_are_rejected(self, api: FakeApiServer, name: str) -> None:
        with pytest.raises(Invalid):
            api.create(isvc(name))

    def test_service_names_are_rfc_1123_labels(self, api: FakeApiServer) -> None:
        api.create(service("3llama"))  # Kubernetes 1.36: a Service name may start with a digit
        with pytest.raises(Invalid, match="RFC 1123 label"):
            api.create(service("llama.v3"))
        api.create(deployment("llama.v3"))  # a Deployment name may be a subdomain

    def test_label_values_a_real_server_rejects_are_invalid(self, api: FakeApiServer) -> None:
        with pytest.raises(Invalid, match="label"):
            api.create(isvc(labels={"model": "meta-llama/Llama-3"}))

    def test_a_failed_request_is_logged_but_not_counted_as_a_write(self, api: FakeApiServer) -> None:
        api.create(isvc())
        with pytest.raises(AlreadyExists):
            api.create(isvc())
        assert api.writes == 1
        assert api.requests[-1] == ApiRequest("create", KIND, "default", "llama", False, "AlreadyExists")


class TestRead:
    def test_get_of_a_missing_object_raises_not_found(self, api: FakeApiServer) -> None:
        with pytest.raises(NotFound) as caught:
            api.get(KIND, "default", "missing")
        assert caught.value.code == 404
        assert isinstance(caught.value, ApiError)

    def test_list_filters_by_namespace_and_labels_and_is_sorted(self, api: FakeApiServer) -> None:
        for name in ("c", "a", "b"):
            api.create(isvc(name, labels={"team": "x" if name != "b" else "y"}))
        elsewhere = isvc("d")
        elsewhere["metadata"]["namespace"] = "other"
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
        api.create(elsewhere)
        assert [o["metadata"]["name"] for o in api.list(KIND)] == ["a", "b", "c", "d"]
        assert [o["metadata"]["name"] for o in api.list(KIND, "default")] == ["a", "b", "c"]
        assert [o["metadata"]["name"] for o in api.list(KIND, labels={"team": "x"})] == ["a", "c"]
        assert api.list("Deployment") == []

    def test_returned_objects_are_copies_that_cannot_touch_the_store(self, api: FakeApiServer) -> None:
        created = api.create(isvc())
        created["spec"]["replicas"] = 99
        fetched = api.get(KIND, "default", "llama")
        fetched["metadata"]["labels"] = {"x": "y"}
        api.list(KIND)[0]["spec"]["model"] = "other"
        stored = api.get(KIND, "default", "llama")
        assert stored["spec"] == {"image": "vllm:0.6.3", "model": "Llama-3", "replicas": 1}
        assert "labels" not in stored["metadata"]

    def test_objects_passed_in_are_copied_too(self, api: FakeApiServer) -> None:
        manifest = isvc()
        api.create(manifest)
        manifest["spec"]["replicas"] = 42
        assert api.get(KIND, "default", "llama")["spec"]["replicas"] == 1

    def test_reads_are_counted(self, api: FakeApiServer) -> None:
        api.create(isvc())
        api.get(KIND, "default", "llama")
        api.list(KIND)
        assert api.reads == 2


# --- update semantics -----------------------------------------------------------------------


class TestOptimisticConcurrency:
    def test_stale_resource_version_raises_conflict_naming_both_versions(self, api: FakeApiServer) -> None:
        first_read = api.create(isvc())
        second_read = deep_copy(first_read)
        second_read["spec"]["replicas"] = 2
        written = api.update(second_read)
        first_read["spec"]["replicas"] = 3
        with pytest.raises(Conflict) as caught:
            api.update(first_read)
        message = caught.value.message
        assert "llama" in message
        assert first_read["metadata"]["resourceVersion"] in message
        assert written["metadata"]["resourceVersion"] in message
        assert api.get(KIND, "default", "llama")["spec"]["replicas"] == 2

    def test_update_succeeds_after_a_re_read(self, api: FakeApiServer) -> None:
        stale = api.create(isvc())
        api.update({**stale, "spec": {**stale["spec"], "replicas": 2}})
        with pytest.raises(Conflict):
            api.update({**stale, "spec": {**stale["spec"], "replicas": 3}})
        fresh = api.get(KIND, "default", "llama")
        fresh["spec"]["replicas"] = 3
        assert api.update(fresh)["spec"]["replicas"] == 3

    def test_update_of_a_custom_resource_without_resource_version_is_invalid(self, api: FakeApiServer) -> None:
        api.create(isvc())
        with pytest.raises(Invalid, match=r"resourceVersion: Invalid value: 0: must be specified for an update"):
            api.update(isvc(replicas=7))
        with pytest.raises(Invalid, match=r"metadata\.resourceVersion: Invalid value: 0: must be specified"):
            api.update_status({**isvc(), "status": {"phase": "Ready"}})
        assert api.get(KIND, "default", "llama")["spec"]["replicas"] == 1

    def test_update_of_a_built_in_kind_without_resource_version_is_unconditional(self, api: FakeApiServer) -> None:
        config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "1"}}
        api.create(config)
        api.patch("ConfigMap", "default", "c", {"data": {"k": "2"}})
        assert api.update({**config, "data": {"k": "3"}})["data"] == {"k": "3"}

    def test_a_merge_patch_needs_no_resource_version_but_honours_one(self, api: FakeApiServer) -> None:
        created = api.create(isvc())
        assert api.patch(KIND, "default", "llama", {"spec": {"replicas": 2}})["spec"]["replicas"] == 2
        with pytest.raises(Conflict):
            api.patch(KIND, "default", "llama", {"metadata": {"resourceVersion": rv(created)}, "spec": {"replicas": 3}})

    def test_a_merge_patch_changing_the_uid_is_invalid(self, api: FakeApiServer) -> None:
        api.create(isvc())
        with pytest.raises(Invalid, match=r'metadata\.uid: Invalid value: "other": field is immutable'):
            api.patch(KIND, "default", "llama", {"metadata": {"uid": "other"}})
        with pytest.raises(Invalid, match=r"metadata\.uid: Invalid value"):
            api.apply(isvc(uid="other"), field_manager="kubectl")

    def test_a_create_naming_a_resource_version_is_a_server_error(self, api: FakeApiServer) -> None:
        with pytest.raises(ServerError, match="resourceVersion should not be set on objects to be created") as err:
            api.create(isvc(resourceVersion="7"))
        assert (err.value.code, err.value.reason) == (500, "")
        with pytest.raises(NotFound):
            api.get(KIND, "default", "llama")

    def test_update_of_a_recreated_object_with_the_old_uid_conflicts(self, api: FakeApiServer) -> None:
        old = api.create(isvc())
        api.delete(KIND, "default", "llama")
        api.create(isvc())
        del old["metadata"]["resourceVersion"]
        with pytest.raises(Conflict, match="UID"):
            api.update(old)

    def test_update_of_a_missing_object_raises_not_found(self, api: FakeApiServer) -> None:
        with pytest.raises(NotFound):
            api.update(isvc())


class TestGeneration:
    def test_generation_bumps_only_when_spec_changes(self, api: FakeApiServer) -> None:
        obj = api.create(isvc())
        obj["metadata"]["labels"] = {"team": "ml"}
        obj["metadata"]["annotations"] = {"note": "x"}
        obj["metadata"]["finalizers"] = [FINALIZER]
        obj = api.update(obj)
        assert obj["metadata"]["generation"] == 1
        obj["spec"]["replicas"] = 4
        obj = api.update(obj)
        assert obj["metadata"]["generation"] == 2
        obj["spec"]["image"] = "vllm:0.7.0"
        assert api.update(obj)["metadata"]["generation"] == 3

    def test_deployment_generation_also_counts_annotation_changes(self, api: FakeApiServer) -> None:
        dep = api.create(deployment())
        dep["metadata"]["labels"] = {"x": "y"}
        dep = api.update(dep)
        assert dep["metadata"]["generation"] == 1
        dep["metadata"]["annotations"] = {"kubectl.kubernetes.io/restartedAt": "now"}
        assert api.update(dep)["metadata"]["generation"] == 2

    def test_services_have_no_generation(self, api: FakeApiServer) -> None:
        assert "generation" not in api.create(service())["metadata"]

    def test_client_cannot_change_server_owned_metadata(self, api: FakeApiServer) -> None:
        created = api.create(isvc())
        forged = deep_copy(created)
        forged["metadata"].update(generation=50, creationTimestamp="1999-01-01T00:00:00Z")
        forged["metadata"]["labels"] = {"a": "b"}
        updated = api.update(forged)
        assert updated["metadata"]["generation"] == 1
        assert updated["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
        assert updated["metadata"]["labels"] == {"a": "b"}

    def test_only_a_delete_sets_a_deletion_timestamp_or_grace_period(self, api: FakeApiServer) -> None:
        created = api.create(isvc())
        forged = deep_copy(created)
        forged["metadata"]["deletionTimestamp"] = "1999-01-01T00:00:00Z"
        with pytest.raises(Invalid, match=r"metadata\.deletionTimestamp: Invalid value: .*: field is immutable"):
            api.update(forged)
        with pytest.raises(Invalid, match=r"deletionGracePeriodSeconds: Invalid value: 5: field is immutable"):
            api.patch(KIND, "default", "llama", {"metadata": {"deletionGracePeriodSeconds": 5}})


class TestStatusSubresource:
    def test_update_status_writes_only_status_bumps_rv_and_never_generation(self, api: FakeApiServer) -> None:
        obj = api.create(isvc())
        obj["status"] = {"observedGeneration": 1, "phase": "Progressing"}
        obj["spec"]["replicas"] = 9
        obj["metadata"]["labels"] = {"sneaky": "yes"}
        written = api.update_status(obj)
        assert rv(written) > int(obj["metadata"]["resourceVersion"])
        assert written["metadata"]["generation"] == 1
        assert written["status"] == {"observedGeneration": 1, "phase": "Progressing"}
        assert written["spec"]["replicas"] == 1
        assert "labels" not in written["metadata"]
        assert api.get(KIND, "default", "llama") == written

    def test_update_status_checks_the_resource_version(self, api: FakeApiServer) -> None:
        stale = api.create(isvc())
        api.patch(KIND, "default", "llama", {"spec": {"replicas": 2}})
        with pytest.raises(Conflict):
            api.update_status({**stale, "status": {"phase": "Ready"}})

    def test_main_endpoint_ignores_status(self, api: FakeApiServer) -> None:
        obj = api.create(isvc())
        obj["status"] = {"phase": "Ready"}
        assert "status" not in api.update(obj)
        api.update_status({**api.get(KIND, "default", "llama"), "status": {"phase": "Pending"}})
        fresh = api.get(KIND, "default", "llama")
        fresh["status"] = {"phase": "Ready"}
        fresh["spec"]["replicas"] = 3
        assert api.update(fresh)["status"] == {"phase": "Pending"}

    def test_status_only_change_through_the_main_endpoint_is_a_no_op(self, api: FakeApiServer) -> None:
        obj = api.create(isvc())
        api.reset_counters()
        obj["status"] = {"phase": "Ready"}
        assert rv(api.update(obj)) == rv(obj)
        assert api.writes == 0

    def test_kinds_without_a_status_subresource_keep_status_on_the_main_endpoint(self, api: FakeApiServer) -> None:
        config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}
        created = api.create(config)
        assert "generation" not in created["metadata"]
        with pytest.raises(NotFound, match="status"):
            api.update_status({**created, "status": {"x": 1}})


class TestNoOpWrites:
    def test_no_op_update_does_not_bump_rv_emit_an_event_or_count_a_write(self, api: FakeApiServer) -> None:
        obj = api.create(isvc())
        watch = api.watch(KIND)
        api.reset_counters()
        again = api.update(obj)
        api.update(isvc(resourceVersion=rv(obj)))  # the same manifest: nothing changes either
        api.patch(KIND, "default", "llama", {"spec": {"replicas": 1}})
        api.update_status(again)
        assert rv(again) == rv(obj)
        assert api.get(KIND, "default", "llama")["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
        assert watch.pending() == 0
        assert api.writes == 0
        assert sum(api.writes_by_verb.values()) == 0
        assert [(r.verb, r.changed) for r in api.requests] == [
            ("update", False),
            ("update", False),
            ("patch", False),
            ("update_status", False),
        ]

    def test_writes_are_counted_by_verb(self, api: FakeApiServer) -> None:
        obj = api.create(isvc())
        obj["spec"]["replicas"] = 2
        obj = api.update(obj)
        api.update_status({**obj, "status": {"phase": "Ready"}})
        api.patch(KIND, "default", "llama", {"metadata": {"labels": {"a": "b"}}})
        api.patch_status(KIND, "default", "llama", {"status": {"phase": "Degraded"}})
        api.delete(KIND, "default", "llama")
        assert api.writes == 6
        assert dict(api.writes_by_verb) == {
            "create": 1,
            "update": 1,
            "update_status": 1,
            "patch": 1,
            "patch_status": 1,
            "delete": 1,
        }
        assert [r.verb for r in api.requests] == list(api.writes_by_verb)


class TestMergePatch:
    def test_patch_merges_maps_replaces_lists_and_deletes_with_none(self, api: FakeApiServer) -> None:
        manifest = isvc(labels={"a": "1", "b": "2"})
        manifest["spec"]["args"] = ["--x", "--y"]
        api.create(manifest)
        patched = api.patch(
            KIND,
            "default",
            "llama",
            {
                "metadata": {"labels": {"a": None, "c": "3"}},
                "spec": {"args": ["--z"], "model": None},
            },
        )
        assert patched["metadata"]["labels"] == {"b": "2", "c": "3"}
        assert patched["spec"] == {"image": "vllm:0.6.3", "replicas": 1, "args": ["--z"]}
        assert patched["metadata"]["generation"] == 2

    def test_patch_with_a_stale_resource_version_conflicts(self, api: FakeApiServer) -> None:
        created = api.create(isvc())
        api.patch(KIND, "default", "llama", {"spec": {"replicas": 2}})
        with pytest.raises(Conflict):
            api.patch(
                KIND,
                "default",
                "llama",
                {
                    "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                    "spec": {"replicas": 3},
                },
            )
        current = api.get(KIND, "default", "llama")
        patched = api.patch(
            KIND,
            "default",
            "llama",
            {
                "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                "spec": {"replicas": 3},
            },
        )
        assert patched["spec"]["replicas"] == 3

    def test_patch_cannot_change_status_but_patch_status_can(self, api: FakeApiServer) -> None:
        api.create(isvc())
        assert "status" not in api.patch(KIND, "default", "llama", {"status": {"phase": "Ready"}})
        patched = api.patch_status(KIND, "default", "llama", {"status": {"phase": "Ready", "url": "http://x"}})
        patched = api.patch_status(KIND, "default", "llama", {"status": {"url": None}, "spec": {"replicas": 5}})
        assert patched["status"] == {"phase": "Ready"}
        assert patched["spec"]["replicas"] == 1
        assert patched["metadata"]["generation"] == 1

    def test_patch_of_a_missing_object_raises_not_found(self, api: FakeApiServer) -> None:
        with pytest.raises(NotFound):
            api.patch(KIND, "default", "missing", {"spec": {"replicas": 1}})

    def test_patch_does_not_keep_references_to_the_callers_patch(self, api: FakeApiServer) -> None:
        api.create(isvc())
        patch = {"spec": {"args": ["--a"]}}
        api.patch(KIND, "default", "llama", patch)
        patch["spec"]["args"].append("--b")
        assert api.get(KIND, "default", "llama")["spec"]["args"] == ["--a"]


# --- deletion -------------------------------------------------------------------------------------


class TestFinalizers:
    def test_delete_of_a_missing_object_raises_not_found(self, api: FakeApiServer) -> None:
        with pytest.raises(NotFound):
            api.delete(KIND, "default", "missing")

    def test_delete_without_finalizers_removes_the_object(self, api: FakeApiServer) -> None:
        api.create(isvc())
        api.delete(KIND, "default", "llama")
        with pytest.raises(NotFound):
            api.get(KIND, "default", "llama")

    def test_delete_with_a_finalizer_only_marks_the_object(self, api: FakeApiServer, clock: FakeClock) -> None:
        created = api.create(isvc(finalizers=[FINALIZER]))
        watch = api.watch(KIND)
        clock.advance(30)
        api.delete(KIND, "default", "llama")
        marked = api.get(KIND, "default", "llama")
        assert marked["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:30Z"
        assert marked["metadata"]["deletionGracePeriodSeconds"] == 0
        assert marked["metadata"]["finalizers"] == [FINALIZER]
        assert marked["metadata"]["generation"] == 2  # the real API server bumps it when marking
        assert rv(marked) > rv(created)
        assert [e.type for e in watch.drain()] == ["MODIFIED"]

    def test_deleting_a_terminating_object_again_changes_nothing(self, api: FakeApiServer, clock: FakeClock) -> None:
        api.create(isvc(finalizers=[FINALIZER]))
        api.delete(KIND, "default", "llama")
        marked = api.get(KIND, "default", "llama")
        watch = api.watch(KIND)
        clock.advance(10)
        api.delete(KIND, "default", "llama")
        assert api.get(KIND, "default", "llama") == marked
        assert watch.pending() == 0
        assert api.requests[-1] == ApiRequest("delete", KIND, "default", "llama", False)

    def test_new_finalizers_cannot_be_added_while_deleting(self, api: FakeApiServer) -> None:
        api.create(isvc(finalizers=[FINALIZER]))
        api.delete(KIND, "default", "llama")
        marked = api.get(KIND, "default", "llama")
        marked["metadata"]["finalizers"].append("example.com/another")
        with pytest.raises(Invalid, match="finalizers"):
            api.update(marked)
        with pytest.raises(Invalid):
            api.patch(KIND, "default", "llama", {"metadata": {"finalizers": [FINALIZER, "example.com/x"]}})

    def test_a_terminating_object_can_still_be_updated(self, api: FakeApiServer) -> None:
        api.create(isvc(finalizers=[FINALIZER]))
        api.delete(KIND, "default", "llama")
        patched = api.patch(KIND, "default", "llama", {"metadata": {"labels": {"state": "cleaning"}}})
        assert patched["metadata"]["labels"] == {"state": "cleaning"}
        assert "deletionTimestamp" in patched["metadata"]

    def test_removing_the_last_finalizer_removes_the_object(self, api: FakeApiServer) -> None:
        api.create(isvc(finalizers=[FINALIZER, "example.com/other"]))
        api.delete(KIND, "default", "llama")
        marked = api.get(KIND, "default", "llama")
        marked["metadata"]["finalizers"] = ["example.com/other"]
        marked = api.update(marked)
        assert api.get(KIND, "default", "llama")["metadata"]["finalizers"] == ["example.com/other"]
        watch = api.watch(KIND)
        marked["metadata"]["finalizers"] = []
        api.update(marked)
        with pytest.raises(NotFound):
            api.get(KIND, "default", "llama")
        events = watch.drain()
        assert [e.type for e in events] == ["DELETED"]
        assert rv(events[0].object) > rv(marked)

    def test_removing_the_last_finalizer_by_patch_removes_the_object(self, api: FakeApiServer) -> None:
        api.create(isvc(finalizers=[FINALIZER]))
        api.delete(KIND, "default", "llama")
        api.patch(KIND, "default", "llama", {"metadata": {"finalizers": None}})
        assert _content_total(api) == 0

    def test_removing_a_finalizer_from_a_live_object_does_not_delete_it(self, api: FakeApiServer) -> None:
        obj = api.create(isvc(finalizers=[FINALIZER]))
        obj["metadata"]["finalizers"] = []
        updated = api.update(obj)
        assert "finalizers" not in updated["metadata"]
        assert _content_total(api) == 1


class TestGarbageCollection:
    def test_deleting_an_owner_cascades_to_children_and_grandchildren(self, api: FakeApiServer) -> None:
        owner = api.create(isvc())
        dep = api.create(deployment(owner=owner))
        api.create(service(owner=owner))
        replica_set = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "llama-abc", "labels": {"app": "llama"}, "ownerReferences": [owner_ref(dep)]},
            "spec": {"selector": {"matchLabels": {"app": "llama"}}, "template": dep["spec"]["template"]},
        }
        api.create(replica_set)
        watch = api.watch()
        api.delete(KIND, "default", "llama")
        assert _content_total(api) == 0
        assert [(e.type, e.object["kind"]) for e in watch.drain()] == [
            ("DELETED", "InferenceService"),
            ("DELETED", "Deployment"),
            ("DELETED", "Service"),
            ("DELETED", "ReplicaSet"),
        ]
        assert api.writes_by_verb["delete"] == 1
        assert api.gc_writes == 3

    def test_children_are_collected_only_when_the_owner_is_finally_removed(self, api: FakeApiServer) -> None:
        owner = api.create(isvc(finalizers=[FINALIZER]))
        api.create(deployment(owner=owner))
        api.delete(KIND, "default", "llama")
        assert api.objects_total("Deployment") == 1
        api.patch(KIND, "default", "llama", {"metadata": {"finalizers": []}})
        assert _content_total(api) == 0

    def test_a_child_with_its_own_finalizer_stays_terminating(self, api: FakeApiServer) -> None:
        owner = api.create(isvc())
        api.create(deployment(owner=owner, finalizers=["example.com/drain"]))
        api.delete(KIND, "default", "llama")
        child = api.get("Deployment", "default", "llama")
        assert "deletionTimestamp" in child["metadata"]
        child["metadata"]["finalizers"] = []
        api.update(child)
        assert _content_total(api) == 0

    def test_grandchildren_are_collected_once_a_terminating_child_goes(self, api: FakeApiServer) -> None:
        owner = api.create(isvc())
        child = api.create(deployment(owner=owner, finalizers=["example.com/drain"]))
        grandchild = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "gc", "ownerReferences": [owner_ref(child)]},
        }
        api.create(grandchild)
        api.delete(KIND, "default", "llama")
        assert api.objects_total("ConfigMap") == 1  # background: the child still exists
        api.patch("Deployment", "default", "llama", {"metadata": {"finalizers": None}})
        assert _content_total(api) == 0

    def test_a_dependent_with_another_live_owner_only_loses_the_reference(self, api: FakeApiServer) -> None:
        first = api.create(isvc("first"))
        second = api.create(isvc("second"))
        shared = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "shared",
                "ownerReferences": [owner_ref(first), {**owner_ref(second), "controller": False}],
            },
        }
        api.create(shared)
        api.delete(KIND, "default", "first")
        refs = api.get("ConfigMap", "default", "shared")["metadata"]["ownerReferences"]
        assert [r["name"] for r in refs] == ["second"]
        api.delete(KIND, "default", "second")
        assert _content_total(api) == 0

    def test_a_dependent_created_for_a_gone_owner_is_collected(self, api: FakeApiServer) -> None:
        owner = api.create(isvc())
        api.delete(KIND, "default", "llama")
        api.create(deployment(owner=owner))  # a reconcile racing the deletion, with the old uid
        assert _content_total(api) == 0

    def test_a_recreated_owner_with_the_same_name_does_not_adopt_old_children(self, api: FakeApiServer) -> None:
        old_owner = api.create(isvc(finalizers=[FINALIZER]))
        api.create(deployment(owner=old_owner, finalizers=["example.com/drain"]))
        api.delete(KIND, "default", "llama")
        api.patch(KIND, "default", "llama", {"metadata": {"finalizers": None}})
        api.create(isvc())
        assert "deletionTimestamp" in api.get("Deployment", "default", "llama")["metadata"]

    def test_orphan_propagation_strips_the_reference_and_keeps_the_children(self, api: FakeApiServer) -> None:
        owner = api.create(isvc())
        api.create(deployment(owner=owner))
        api.delete(KIND, "default", "llama", propagation="Orphan")
        child = api.get("Deployment", "default", "llama")
        assert "ownerReferences" not in child["metadata"]
        assert _content_total(api) == 1

    def test_foreground_propagation_removes_the_owner_after_blocking_children(self, api: FakeApiServer) -> None:
        owner = api.create(isvc())
        api.create(deployment(owner=owner, finalizers=["example.com/drain"]))
        api.delete(KIND, "default", "llama", propagation="Foreground")
        waiting = api.get(KIND, "default", "llama")
        assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
        assert "deletionTimestamp" in api.get("Deployment", "default", "llama")["metadata"]
        api.patch("Deployment", "default", "llama", {"metadata": {"finalizers": None}})
        assert _content_total(api) == 0

    def test_unknown_propagation_policy_is_invalid(self, api: FakeApiServer) -> None:
        api.create(isvc())
        with pytest.raises(Invalid):
            api.delete(KIND, "default", "llama", propagation="Sideways")  # type: ignore[arg-type]

    def test_owner_references_without_uid_are_invalid(self, api: FakeApiServer) -> None:
        owner = api.create(isvc())
        ref = owner_ref(owner)
        del ref["uid"]
        manifest = deployment()
        manifest["metadata"]["ownerReferences"] = [ref]
        with pytest.raises(Invalid, match="uid"):
            api.create(manifest)


# --- watch ---------------------------------------------------------------------------------------


class TestWatch:
    def test_events_arrive_in_order_with_the_new_resource_version(self, api: FakeApiServer) -> None:
        watch = api.watch(KIND)
        created = api.create(isvc())
        updated = api.patch(KIND, "default", "llama", {"spec": {"replicas": 3}})
        api.delete(KIND, "default", "llama")
        assert watch.pending() == 3
        events = watch.drain()
        assert [e.type for e in events] == ["ADDED", "MODIFIED", "DELETED"]
        assert events[0].object == created
        assert events[1].object == updated
        assert events[2].object["spec"]["replicas"] == 3  # the last state
        assert rv(events[2].object) > rv(updated)
        assert watch.drain() == []

    def test_a_watch_sees_only_its_kind_and_only_changes_after_it_started(self, api: FakeApiServer) -> None:
        api.create(isvc("before"))
        watch = api.watch("Deployment")
        everything = api.watch()
        api.create(isvc("after"))
        api.create(deployment())
        assert [e.object["kind"] for e in watch.drain()] == ["Deployment"]
        assert [e.object["metadata"]["name"] for e in everything.drain()] == ["after", "llama"]

    def test_each_watch_gets_its_own_copies(self, api: FakeApiServer) -> None:
        first, second = api.watch(KIND), api.watch(KIND)
        api.create(isvc())
        a, b = first.drain()[0].object, second.drain()[0].object
        a["spec"]["replicas"] = 100
        assert b["spec"]["replicas"] == 1
        assert api.get(KIND, "default", "llama")["spec"]["replicas"] == 1

    def test_a_stopped_watch_receives_nothing_more(self, api: FakeApiServer) -> None:
        watch = api.watch(KIND)
        api.create(isvc("a"))
        watch.stop()
        api.create(isvc("b"))
        assert watch.stopped
        assert [e.object["metadata"]["name"] for e in watch.drain()] == ["a"]

    def test_list_and_watch_misses_nothing_in_between(self, api: FakeApiServer) -> None:
        api.create(isvc("a"))
        items, watch = api.list_and_watch(KIND)
        api.create(isvc("b"))
        assert [o["metadata"]["name"] for o in items] == ["a"]
        assert [e.object["metadata"]["name"] for e in watch.drain()] == ["b"]


# --- defaulting -------------------------------------------------------------------------------------


class TestDefaults:
    def test_deployment_defaults_are_filled_in(self, api: FakeApiServer) -> None:
        created = api.create(deployment())
        spec = created["spec"]
        assert spec["strategy"] == {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
        }
        assert spec["revisionHistoryLimit"] == 10
        assert spec["progressDeadlineSeconds"] == 600
        pod = spec["template"]["spec"]
        assert pod["restartPolicy"] == "Always"
        assert pod["dnsPolicy"] == "ClusterFirst"
        assert pod["schedulerName"] == "default-scheduler"
        assert pod["terminationGracePeriodSeconds"] == 30
        assert pod["securityContext"] == {}
        container = pod["containers"][0]
        assert container["terminationMessagePath"] == "/dev/termination-log"
        assert container["terminationMessagePolicy"] == "File"
        assert container["imagePullPolicy"] == "IfNotPresent"
        assert container["ports"] == [{"containerPort": 8000, "name": "http", "protocol": "TCP"}]
        assert container["resources"] == {  # quantities in canonical form, as the API server stores them
            "limits": {"nvidia.com/gpu": "1", "cpu": "500m"},
            "requests": {"memory": "1Gi"},
        }
        assert created["status"] == {}

    @pytest.mark.parametrize(
        ("image", "policy"),
        [
            ("vllm", "Always"),
            ("vllm:latest", "Always"),
            ("localhost:5000/vllm", "Always"),
            ("vllm:0.6.3", "IfNotPresent"),
            ("vllm@sha256:abc", "IfNotPresent"),
        ],
    )
    def test_image_pull_policy_follows_the_tag(self, api: FakeApiServer, image: str, policy: str) -> None:
        created = api.create(deployment(image=image))
        assert created["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == policy

    def test_service_defaults_and_cluster_ip_allocation(self, api: FakeApiServer) -> None:
        first = api.create(service("a"))
        second = api.create(service("b"))
        spec = first["spec"]
        assert spec["type"] == "ClusterIP"
        assert spec["sessionAffinity"] == "None"
        assert spec["clusterIP"].startswith("198.19.")
        assert spec["clusterIPs"] == [spec["clusterIP"]]
        assert spec["ipFamilies"] == ["IPv4"]
        assert spec["ipFamilyPolicy"] == "SingleStack"
        assert spec["internalTrafficPolicy"] == "Cluster"
        assert spec["ports"] == [{"name": "http", "port": 80, "targetPort": 8000, "protocol": "TCP"}]
        assert second["spec"]["clusterIP"] != spec["clusterIP"]
        assert first["status"] == {"loadBalancer": {}}

    def test_target_port_defaults_to_port(self, api: FakeApiServer) -> None:
        manifest = service()
        del manifest["spec"]["ports"][0]["targetPort"]
        assert api.create(manifest)["spec"]["ports"][0]["targetPort"] == 80

    def test_reapplying_a_manifest_without_defaults_changes_nothing(self, api: FakeApiServer) -> None:
        dep = api.create(deployment())
        svc = api.create(service())
        api.reset_counters()
        assert api.update(deployment()) == dep
        assert api.update(service()) == svc
        assert api.patch("Deployment", "default", "llama", deployment()) == dep
        assert api.writes == 0

    def test_a_real_change_keeps_the_allocated_cluster_ip(self, api: FakeApiServer) -> None:
        svc = api.create(service())
        changed = service()
        changed["spec"]["ports"][0]["port"] = 8080
        updated = api.update(changed)
        assert updated["spec"]["clusterIP"] == svc["spec"]["clusterIP"]
        assert updated["spec"]["ports"][0]["port"] == 8080
        forged = deep_copy(updated)
        forged["spec"]["clusterIP"] = forged["spec"]["clusterIPs"][0] = "198.19.99.99"
        with pytest.raises(Invalid, match="clusterIP"):
            api.update(forged)

    def test_empty_optional_fields_are_dropped_like_go_omitempty(self, api: FakeApiServer) -> None:
        manifest = deployment()
        container = manifest["spec"]["template"]["spec"]["containers"][0]
        container["env"] = [{"name": "A", "value": ""}]
        container["args"] = []
        manifest["spec"]["template"]["spec"]["nodeSelector"] = {}
        manifest["spec"]["template"]["spec"]["tolerations"] = None
        manifest["metadata"]["labels"] = {"empty-value": ""}
        created = api.create(manifest)
        pod = created["spec"]["template"]["spec"]
        assert pod["containers"][0]["env"] == [{"name": "A"}]
        assert "args" not in pod["containers"][0]
        assert "nodeSelector" not in pod
        assert "tolerations" not in pod
        assert created["metadata"]["labels"] == {"empty-value": ""}

    def test_custom_resources_keep_empty_values_but_lose_nulls(self, api: FakeApiServer) -> None:
        manifest = isvc()
        manifest["spec"]["args"] = []
        manifest["spec"]["nodeSelector"] = None
        created = api.create(manifest)
        assert created["spec"]["args"] == []
        assert "nodeSelector" not in created["spec"]

    def test_deployment_selector_must_match_the_template_and_is_immutable(self, api: FakeApiServer) -> None:
        bad = deployment()
        bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
        with pytest.raises(Invalid, match="selector"):
            api.create(bad)
        api.create(deployment())
        changed = deployment()
        changed["spec"]["selector"]["matchLabels"]["tier"] = "gpu"
        changed["spec"]["template"]["metadata"]["labels"]["tier"] = "gpu"
        with pytest.raises(Invalid, match="immutable"):
            api.update(changed)

    def test_extra_defaulters_run_on_every_write(self, clock: FakeClock) -> None:
        def default_port(obj: Obj) -> None:
            obj.setdefault("spec", {}).setdefault("port", 8000)

        api = FakeApiServer(clock, defaulters={KIND: default_port})
        created = api.create(isvc())
        assert created["spec"]["port"] == 8000
        assert api.update(isvc(resourceVersion=rv(created))) == created


# --- scale ---------------------------------------------------------------------------------------------


def test_ten_thousand_creates_and_updates_are_all_stored_and_watched() -> None:
    # How fast is bench/sim.py's business (a benchmark, not a timed test that flakes under load).
    api = FakeApiServer(FakeClock())
    watch = api.watch()
    for i in range(10_000):
        api.create(isvc(f"m{i}"))
    for i in range(10_000):
        api.patch(KIND, "default", f"m{i}", {"spec": {"replicas": 2}})
    assert api.writes == 20_000
    assert watch.pending() == 20_000
    assert api.get(KIND, "default", "m9999")["metadata"]["generation"] == 2


# --- jsoncopy (the copying and patching the server is built on) -------------------------------------


class TestJsonCopy:
    def test_deep_copy_is_equal_and_fully_independent(self) -> None:
        shared = [1, {"x": None}]
        original: Obj = {"a": shared, "b": shared, "c": {"d": [True, 1.5, "s"]}}
        duplicate = deep_copy(original)
        assert duplicate == original
        duplicate["a"][1]["x"] = "changed"
        duplicate["c"]["d"].append(0)
        assert original == {"a": [1, {"x": None}], "b": [1, {"x": None}], "c": {"d": [True, 1.5, "s"]}}
        assert duplicate["b"][1]["x"] is None  # shared subtrees of the original are not shared in the copy

    def test_deep_copy_turns_json_type_subclasses_into_plain_values(self) -> None:
        class Phase(enum.StrEnum):
            READY = "Ready"

        plain = deep_copy({"phase": Phase.READY, "n": MyInt(3)})
        assert plain == {"phase": "Ready", "n": 3}
        assert type(plain["phase"]) is str and type(plain["n"]) is int

    def test_deep_copy_rejects_values_json_cannot_hold(self) -> None:
        with pytest.raises(TypeError):
            deep_copy({"when": object()})

    def test_copy_without_nulls_drops_null_entries(self) -> None:
        assert copy_without_nulls({"a": None, "b": {"c": None, "d": 1}, "e": [None, {"f": None}]}) == {
            "b": {"d": 1},
            "e": [None, {}],
        }

    def test_freeze_and_thaw_give_fresh_copies_every_time(self) -> None:
        blob = freeze({"a": [1]})
        first, second = thaw(blob), thaw(blob)
        first["a"].append(2)
        assert second == {"a": [1]}

    def test_deep_copy_is_faster_than_copy_deepcopy(self) -> None:
        obj = FakeApiServer().create(deployment())
        rounds = 2000
        started = time.perf_counter()
        for _ in range(rounds):
            deep_copy(obj)
        fast = time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(rounds):
            copy.deepcopy(obj)
        slow = time.perf_counter() - started
        assert fast < slow

    # RFC 7386, appendix A: (target, patch, result)
    RFC_7386_EXAMPLES: ClassVar[list[tuple[Any, Any, Any]]] = [
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ]

    @pytest.mark.parametrize(("target", "patch", "result"), RFC_7386_EXAMPLES)
    def test_merge_patch_follows_the_rfc_7386_examples(self, target: Any, patch: Any, result: Any) -> None:
        assert merge_patch(target, patch) == result

    def test_merge_patch_mutates_neither_input_and_shares_nothing_with_them(self) -> None:
        target: Obj = {"a": {"b": [1]}, "keep": {"x": 1}}
        patch: Obj = {"a": {"c": [2]}}
        merged = merge_patch(target, patch)
        assert merged == {"a": {"b": [1], "c": [2]}, "keep": {"x": 1}}
        merged["keep"]["x"] = 2
        merged["a"]["c"].append(3)
        merged["a"]["b"].append(4)
        assert target == {"a": {"b": [1]}, "keep": {"x": 1}}
        assert patch == {"a": {"c": [2]}}


def test_the_store_keeps_a_bounded_number_of_frozen_copies_and_reads_stay_right(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from inference_operator.sim.apiserver import store

    monkeypatch.setattr(store, "FROZEN_KEPT", 2)
    api = FakeApiServer()
    for name in ("a", "b", "c"):
        api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}})
    for _ in range(2):
        for name in ("a", "b", "c"):
            assert api.get("ConfigMap", "default", name)["metadata"]["name"] == name
    assert len(api._frozen) == 2


def _with_the_crd() -> tuple[FakeApiServer, dict[str, Any]]:
    """A server with the project's CRD, and an InferenceService to create there."""
    from inference_operator.api.crd import crd as project_crd

    api = FakeApiServer()
    api.create(project_crd())
    body = {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": "InferenceService",
        "metadata": {"name": "a", "namespace": "default"},
        "spec": {"image": "vllm", "model": "m"},
    }
    return api, body


def test_the_managed_fields_a_client_sends_are_read_never_stored_nor_changed() -> None:
    api, body = _with_the_crd()
    read = api.create(body, field_manager="kubectl")
    sent = copy.deepcopy(read)
    sent["spec"]["replicas"] = 2.0
    sent["metadata"]["managedFields"][0]["extra"] = 1.0  # the client's own, odd as it is
    before = copy.deepcopy(sent)
    api.update(sent, field_manager="editor")
    assert sent == before and type(sent["metadata"]["managedFields"][0]["extra"]) is float
    stored = api._lookup(("InferenceService", "default", "a"))
    assert stored is not None and stored["spec"]["replicas"] == 2 and type(stored["spec"]["replicas"]) is int
    for entry in stored["metadata"]["managedFields"]:
        assert all(entry is not mine for mine in sent["metadata"]["managedFields"]) and "extra" not in entry
    assert {e["manager"] for e in stored["metadata"]["managedFields"]} == {"kubectl", "editor"}


def test_a_custom_resource_keeps_its_keys_in_order_and_takes_managed_fields_as_a_tuple() -> None:
    api, body = _with_the_crd()
    read = api.create(body, field_manager="kubectl")
    api.update({**read, "spec": {**read["spec"], "replicas": 2}}, field_manager="editor")
    assert list(api.get("InferenceService", "default", "a"))[:4] == ["apiVersion", "kind", "metadata", "spec"]
    as_tuple = {**body, "metadata": {"name": "b", "namespace": "default", "managedFields": ()}}
    assert api.create(as_tuple)["metadata"]["name"] == "b"
