"""The FakeApiServer's deletion, finalizer and status-subresource rules, as the real server has them.

Covers: what a DELETE answers (the marked object while finalizers remain, also on a second
delete; the deleted Service; a success Status for other kinds); the write that removes the last
finalizer answers the object without it (its resourceVersion unchanged) while the watch reports
the last stored state as DELETED; finalizer names (qualified names everywhere, a domain prefix or
a standard name on Go-typed kinds); the 256 KiB annotation limit; what a status write keeps per
kind (Services keep metadata, Deployments all but labels, custom resources nothing); a load
balancer ingress on a ClusterIP Service is refused; ``Simulation.apply`` is ``kubectl apply
--server-side``.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.api.samples import make_inference_service
from inference_operator.core.errors import Conflict, Invalid
from inference_operator.sim import Simulation
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock

Obj = dict[str, Any]
KIND = "InferenceService"
HOLD = "example.com/hold"


@pytest.fixture
def api() -> FakeApiServer:
    return FakeApiServer(FakeClock())


def configmap(name: str = "c", **meta: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": {"k": "v"}}


def service(name: str = "s", **meta: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, **meta},
        "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80}]},
    }


def deployment(name: str = "d", **meta: Any) -> Obj:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, **meta},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "s", "image": "i:1"}]}},
        },
    }


def isvc(name: str = "llama", **meta: Any) -> Obj:
    return {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": KIND,
        "metadata": {"name": name, **meta},
        "spec": {"image": "vllm:0.6.3", "model": "m"},
    }


class TestDeleteAnswers:
    def test_delete_of_an_object_with_finalizers_answers_the_marked_object_every_time(self, api: FakeApiServer) -> None:
        api.create(configmap(finalizers=[HOLD]))
        first = api.delete("ConfigMap", "default", "c")
        again = api.delete("ConfigMap", "default", "c")
        assert first["metadata"]["finalizers"] == [HOLD] and "deletionTimestamp" in first["metadata"]
        assert again == first == api.get("ConfigMap", "default", "c")

    def test_delete_of_a_service_answers_the_deleted_service(self, api: FakeApiServer) -> None:
        created = api.create(service())
        gone = api.delete("Service", "default", "s")
        assert gone["kind"] == "Service" and gone["metadata"]["uid"] == created["metadata"]["uid"]

    def test_delete_of_other_kinds_answers_a_success_status(self, api: FakeApiServer) -> None:
        created = api.create(configmap())
        answer = api.delete("ConfigMap", "default", "c")
        assert (answer["kind"], answer["status"]) == ("Status", "Success")
        assert answer["details"]["uid"] == created["metadata"]["uid"]


class TestLastFinalizer:
    def test_the_write_removing_the_last_finalizer_answers_the_object_without_it(self, api: FakeApiServer) -> None:
        api.create(isvc(finalizers=[HOLD]))
        marked = api.delete(KIND, "default", "llama")
        watch = api.watch(KIND)
        answer = api.patch(KIND, "default", "llama", {"metadata": {"finalizers": None}})
        assert "finalizers" not in answer["metadata"] and "deletionTimestamp" in answer["metadata"]
        assert answer["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]
        [event] = watch.drain()
        assert event.type == "DELETED" and event.object["metadata"]["finalizers"] == [HOLD]
        assert int(event.object["metadata"]["resourceVersion"]) > int(marked["metadata"]["resourceVersion"])


class TestMetadataValidation:
    def test_a_finalizer_must_be_a_qualified_name(self, api: FakeApiServer) -> None:
        with pytest.raises(Invalid, match=r"metadata\.finalizers: Invalid value"):
            api.create(isvc(finalizers=["Not A Name!"]))
        with pytest.raises(Invalid, match=r"metadata\.finalizers: Invalid value"):
            api.create(configmap(finalizers=["a/b/c"]))

    def test_go_typed_kinds_want_a_domain_prefix_or_a_standard_finalizer(self, api: FakeApiServer) -> None:
        with pytest.raises(Invalid, match=r"finalizers\[0\]: Invalid value.*neither a standard finalizer name"):
            api.create(configmap(finalizers=["no-domain"]))
        assert api.create(configmap("k", finalizers=["kubernetes"]))["metadata"]["finalizers"] == ["kubernetes"]
        assert api.create(isvc(finalizers=["no-domain"]))["metadata"]["finalizers"] == ["no-domain"]

    def test_annotations_may_hold_256_kib_in_all(self, api: FakeApiServer) -> None:
        api.create(configmap(annotations={"a": "x" * (256 * 1024 - 1)}))
        with pytest.raises(Invalid, match=r"metadata\.annotations: Too long: may not be more than 262144 bytes"):
            api.patch("ConfigMap", "default", "c", {"metadata": {"annotations": {"b": "y"}}})


class TestStatusWrites:
    def _touched(self, obj: Obj) -> Obj:
        meta = {**obj["metadata"], "labels": {"x": "y"}, "annotations": {"x": "y"}, "finalizers": [HOLD]}
        return {**obj, "metadata": meta}

    def test_a_service_status_write_keeps_metadata_and_resets_spec(self, api: FakeApiServer) -> None:
        created = api.create(service())
        sent = {**self._touched(created), "spec": {**created["spec"], "sessionAffinity": "ClientIP"}}
        written = api.update_status(sent)
        assert (written["metadata"]["labels"], written["metadata"]["annotations"]) == ({"x": "y"}, {"x": "y"})
        assert written["metadata"]["finalizers"] == [HOLD] and written["spec"] == created["spec"]

    def test_a_deployment_status_write_keeps_metadata_but_labels(self, api: FakeApiServer) -> None:
        created = api.create(deployment())
        written = api.update_status({**self._touched(created), "status": {"observedGeneration": 1}})
        assert "labels" not in written["metadata"] and written["metadata"]["annotations"] == {"x": "y"}
        assert written["metadata"]["finalizers"] == [HOLD] and written["metadata"]["generation"] == 1

    def test_a_custom_resource_status_write_keeps_no_metadata(self, api: FakeApiServer) -> None:
        created = api.create(isvc())
        written = api.update_status({**self._touched(created), "status": {"phase": "Pending"}})
        for field in ("labels", "annotations", "finalizers"):
            assert field not in written["metadata"]
        assert written["status"] == {"phase": "Pending"}

    def test_a_load_balancer_ingress_needs_a_load_balancer_service(self, api: FakeApiServer) -> None:
        created = api.create(service())
        ingress = {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}
        with pytest.raises(Invalid, match=r"status\.loadBalancer\.ingress: Forbidden"):
            api.update_status({**created, "status": ingress})
        api.patch("Service", "default", "s", {"spec": {"type": "LoadBalancer"}})
        assert api.patch_status("Service", "default", "s", {"status": ingress})["status"] == ingress


class TestSimulationApply:
    def test_apply_creates_then_removes_what_it_no_longer_applies_without_resource_versions(self) -> None:
        sim = Simulation()
        manifest = make_inference_service("llama", image="vllm:0.6.3", model="m", replicas=2)
        manifest["metadata"]["labels"] = {"team": "ml"}
        created = sim.apply(manifest)
        assert [(e["manager"], e["operation"]) for e in created["metadata"]["managedFields"]] == [("kubectl", "Apply")]
        del manifest["metadata"]["labels"]
        del manifest["spec"]["replicas"]
        applied = sim.apply(manifest)
        assert "labels" not in applied["metadata"]
        assert applied["spec"]["replicas"] == 1  # no longer applied: the CRD's default again

    def test_apply_conflicts_with_a_field_another_manager_owns(self) -> None:
        sim = Simulation()
        sim.apply(make_inference_service("llama", image="vllm:0.6.3", model="m"))
        sim.api.patch(KIND, "default", "llama", {"spec": {"image": "vllm:0.7.0"}}, field_manager="someone")
        with pytest.raises(Conflict, match=r"conflict with \"someone\".*\.spec\.image"):
            sim.apply(make_inference_service("llama", image="vllm:0.6.4", model="m"))
