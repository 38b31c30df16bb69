"""Server-side apply and managedFields in the FakeApiServer, and the field paths behind them.

Covers:
- Apply: creates a missing object (one Apply entry, counted as an "apply" write); applying the
  same configuration again is a no-op (no resourceVersion bump, no watch event, logged with
  changed=False); a change stamps the entry with the server clock; resourceVersion precondition;
  a field manager is required; managedFields and duplicate list-map keys in the configuration are
  refused.
- Removal: what the manager stopped applying goes (a GPU limit, a nodeSelector key or the whole
  atomic nodeSelector, an env var, the atomic tolerations, a label); a dropped replicas is
  defaulted again; what another manager also owns stays (shared nodeSelector and env var).
- Other managers' list-map items survive an apply: an injected sidecar container (an Update),
  an extra ownerReference (another applier), a label set by an Update.
- Conflicts: the real message for one and for several conflicts (per manager, Update managers
  "using apps/v1"); a conflicting apply changes nothing; the same value shares ownership; force
  takes the field from the other manager.
- Update entries: an Update takes the fields it changes from an applier (no conflict); a no-op
  update records nothing; status writes record a subresource entry; entries left empty are
  dropped; creates own scheme defaults but not a Service's allocated IPs; a custom resource is
  compared with an empty object (``.`` on spec); writes without a manager are "unknown"; the
  garbage collector's removal of an owner reference takes it from its applier; objects whose
  managedFields were reset stay untracked until applied, and "before-first-apply" then owns
  what was there; more than ten Update managers fold into "ancient-changes"; entries sort by
  operation, time and manager.
- Exactly what kube-apiserver 1.36.5 records (tests/shared/data/server_side_apply_real.json) for
  the operator's desired Deployment and Service, applied and created.
- fieldpaths: stripped and reset fields, status-subresource sets, list-map keys with defaults,
  set items, atomic lists and maps, fieldsV1 round trip in the server's key order, path strings,
  managed_fields_of, list_map_keys / is_atomic, the CRD schema (granular nodeSelector, conditions
  keyed by type); the built-in schema agrees, path for path, with the schema client-go v0.36
  generates from the Go markers (when the Go module cache holds it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from inference_operator.api.constants import FIELD_MANAGER, GPU_RESOURCE, KIND, NAME_LABEL
from inference_operator.api.models import InferenceService
from inference_operator.api.samples import make_inference_service
from inference_operator.reconcile.builders import CONTAINER_NAME, desired_deployment, desired_service
from inference_operator.sim.apiserver.server import ApiError, ApiRequest, BadRequest, Conflict, FakeApiServer, Invalid
from inference_operator.sim.clock import FakeClock
from inference_operator.ssa.fieldpaths import Path as FieldPath
from inference_operator.ssa.fieldpaths import (
    field_element,
    field_set,
    is_atomic,
    key_element,
    list_map_keys,
    path_string,
    value_element,
)
from inference_operator.ssa.fieldschema import ListOf, MapOf, Node, Scalar, Struct, Untyped, schema_for
from inference_operator.ssa.fieldsv1 import from_fields_v1, managed_fields_of, to_fields_v1

Obj = dict[str, Any]
REAL = json.loads((Path(__file__).resolve().parents[3] / "shared" / "data" / "server_side_apply_real.json").read_text())
PRODUCT = "nvidia.com/gpu.product"
SPEC: Obj = {
    "gpu": 1,
    "nodeSelector": {PRODUCT: "H100"},
    "tolerations": [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}],
    "env": [{"name": "A", "value": "1"}],
}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def api(clock: FakeClock) -> FakeApiServer:
    return FakeApiServer(clock)


@pytest.fixture
def owner(api: FakeApiServer) -> Obj:
    """The InferenceService the children belong to (without it, the garbage collector takes them)."""
    manifest = make_inference_service("llama", image="vllm/vllm-openai:v0.7.0", model="meta/Llama-3", **SPEC)
    return api.create(manifest, field_manager="kubectl-create")


def isvc(owner: Obj, **spec: Any) -> InferenceService:
    """The owner as the operator parses it, with ``spec`` changed (None removes a field)."""
    changed = {**owner["spec"], **spec}
    return InferenceService.from_object({**owner, "spec": {k: v for k, v in changed.items() if v is not None}})


def apply(api: FakeApiServer, obj: Obj, *, manager: str = FIELD_MANAGER, force: bool = True) -> Obj:
    return api.apply(obj, field_manager=manager, force=force)


def pod_spec(obj: Obj) -> Obj:
    spec: Obj = obj["spec"]["template"]["spec"]
    return spec


def server(obj: Obj) -> Obj:
    containers: list[Obj] = pod_spec(obj)["containers"]
    (container,) = [c for c in containers if c["name"] == CONTAINER_NAME]
    return container


def entry(obj: Obj, manager: str, operation: str = "Apply", subresource: str = "") -> Obj:
    entries: list[Obj] = obj["metadata"].get("managedFields", [])
    (found,) = [
        e
        for e in entries
        if (e["manager"], e["operation"], e.get("subresource", "")) == (manager, operation, subresource)
    ]
    return found


def managers(obj: Obj) -> list[tuple[str, str]]:
    return [(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields", [])]


def with_uid(fields_v1: Obj, uid: str) -> Obj:
    loaded: Obj = json.loads(json.dumps(fields_v1).replace("OWNER_UID", uid))
    return loaded


def path(*parts: Any) -> FieldPath:
    return tuple(field_element(p) if isinstance(p, str) else p for p in parts)


SERVER_ITEM = key_element({"name": CONTAINER_NAME})
CONTAINERS = ("spec", "template", "spec", "containers")


# --- apply ----------------------------------------------------------------------------------------


class TestApply:
    def test_apply_creates_a_missing_object_with_one_apply_entry(self, api: FakeApiServer, owner: Obj) -> None:
        watch = api.watch("Deployment")
        created = apply(api, desired_deployment(isvc(owner)))
        assert created["metadata"]["uid"] and created["metadata"]["generation"] == 1
        assert managers(created) == [(FIELD_MANAGER, "Apply")]
        assert entry(created, FIELD_MANAGER)["time"] == "2026-01-01T00:00:00Z"
        assert created["spec"]["strategy"]["type"] == "RollingUpdate", "defaulted like any create"
        assert [e.type for e in watch.drain()] == ["ADDED"]
        assert api.writes_by_verb["apply"] == 1

    def test_applying_the_same_configuration_again_is_a_no_op(
        self, api: FakeApiServer, owner: Obj, clock: FakeClock
    ) -> None:
        first = apply(api, desired_deployment(isvc(owner)))
        watch = api.watch()
        writes = api.writes
        clock.advance(60)
        again = apply(api, desired_deployment(isvc(owner)))
        assert again == first, "same resourceVersion, same managedFields time"
        assert watch.drain() == [] and api.writes == writes
        assert api.requests[-1] == ApiRequest("apply", "Deployment", "default", "llama", changed=False)

    def test_a_change_bumps_the_resource_version_and_stamps_the_entry(
        self, api: FakeApiServer, owner: Obj, clock: FakeClock
    ) -> None:
        first = apply(api, desired_deployment(isvc(owner)))
        clock.advance(90)
        second = apply(api, desired_deployment(isvc(owner, replicas=3)))
        assert second["spec"]["replicas"] == 3 and second["metadata"]["generation"] == 2
        assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
        assert entry(second, FIELD_MANAGER)["time"] == "2026-01-01T00:01:30Z"
        assert api.writes_by_verb["apply"] == 2

    def test_a_resource_version_in_the_configuration_is_a_precondition(self, api: FakeApiServer, owner: Obj) -> None:
        current = apply(api, desired_deployment(isvc(owner)))
        stale = desired_deployment(isvc(owner, replicas=2))
        stale["metadata"]["resourceVersion"] = "1"
        with pytest.raises(Conflict, match="the object has been modified"):
            apply(api, stale)
        stale["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        assert apply(api, stale)["spec"]["replicas"] == 2

    def test_apply_needs_a_field_manager(self, api: FakeApiServer, owner: Obj) -> None:
        with pytest.raises(Invalid, match="fieldManager: Required value: is required for apply patch"):
            api.apply(desired_deployment(isvc(owner)), field_manager="")

    def test_the_configuration_may_not_carry_managed_fields(self, api: FakeApiServer, owner: Obj) -> None:
        config = desired_deployment(isvc(owner))
        config["metadata"]["managedFields"] = [{"manager": "me", "operation": "Apply"}]
        with pytest.raises(BadRequest, match=r"metadata\.managedFields must be nil"):
            apply(api, config)

    def test_duplicate_list_map_keys_in_the_configuration_are_refused(self, api: FakeApiServer, owner: Obj) -> None:
        config = desired_deployment(isvc(owner))
        pod_spec(config)["containers"].append(dict(server(config)))
        message = (
            r"failed to create typed patch object \(default/llama; apps/v1, Kind=Deployment\): "
            r'\.spec\.template\.spec\.containers: duplicate entries for key \[name="server"\]'
        )
        with pytest.raises(ApiError, match=message) as raised:
            apply(api, config)
        assert raised.value.code == 500 and api.objects_total("Deployment") == 0
        assert raised.value.reason == "", "a 500 with no reason (StatusReasonUnknown), as the real server answers"


# --- removal ------------------------------------------------------------------------------------------


class TestRemoval:
    def test_a_gpu_limit_no_longer_applied_is_removed(self, api: FakeApiServer, owner: Obj) -> None:
        apply(api, desired_deployment(isvc(owner)))
        after = apply(api, desired_deployment(isvc(owner, gpu=0)))
        assert server(after)["resources"] == {}
        fields = managed_fields_of(after, FIELD_MANAGER)
        assert fields is not None and not any(field_element("resources") in p for p in fields)

    def test_the_atomic_node_selector_is_replaced_whole_and_removed_when_no_longer_applied(
        self, api: FakeApiServer, owner: Obj
    ) -> None:
        apply(api, desired_deployment(isvc(owner, nodeSelector={PRODUCT: "H100", "zone": "a"})))
        one_key = apply(api, desired_deployment(isvc(owner, nodeSelector={PRODUCT: "H100"})))
        assert pod_spec(one_key)["nodeSelector"] == {PRODUCT: "H100"}
        assert "f:nodeSelector" in entry(one_key, FIELD_MANAGER)["fieldsV1"]["f:spec"]["f:template"]["f:spec"]
        none = apply(api, desired_deployment(isvc(owner, nodeSelector=None)))
        assert "nodeSelector" not in pod_spec(none)

    def test_an_env_var_and_the_tolerations_no_longer_applied_are_removed(self, api: FakeApiServer, owner: Obj) -> None:
        apply(api, desired_deployment(isvc(owner, env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])))
        after = apply(api, desired_deployment(isvc(owner, env=[{"name": "B", "value": "2"}], tolerations=None)))
        assert server(after)["env"] == [{"name": "B", "value": "2"}]
        assert "tolerations" not in pod_spec(after)

    def test_a_label_no_longer_applied_is_removed_and_a_dropped_replicas_is_defaulted_again(
        self, api: FakeApiServer, owner: Obj
    ) -> None:
        config = desired_deployment(isvc(owner, replicas=3))
        apply(api, config)
        del config["metadata"]["labels"][NAME_LABEL]
        del config["spec"]["replicas"]
        after = apply(api, config)
        assert NAME_LABEL not in after["metadata"]["labels"]
        assert after["spec"]["replicas"] == 1, "nobody owns replicas any more: the API server defaults it"

    def test_a_field_another_applier_also_owns_is_kept_when_dropped(self, api: FakeApiServer, owner: Obj) -> None:
        apply(api, desired_deployment(isvc(owner)))
        shared = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "llama", "namespace": "default"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeSelector": {PRODUCT: "H100"},
                        "containers": [{"name": CONTAINER_NAME, "env": [{"name": "A", "value": "1"}]}],
                    }
                }
            },
        }
        other = apply(api, shared, manager="other", force=False)
        assert "time" not in entry(other, "other"), "nothing changed in the object: the entry has no time"
        after = apply(api, desired_deployment(isvc(owner, nodeSelector=None, env=None, tolerations=None)))
        assert pod_spec(after)["nodeSelector"] == {PRODUCT: "H100"}
        assert server(after)["env"] == [{"name": "A", "value": "1"}]
        assert "tolerations" not in pod_spec(after), "owned by the operator alone"


# --- what others own -----------------------------------------------------------------------------------


class TestOthersItems:
    def test_a_sidecar_injected_by_an_update_survives_apply(self, api: FakeApiServer, owner: Obj) -> None:
        live = apply(api, desired_deployment(isvc(owner)))
        containers = [{"name": "sidecar", "image": "envoy:1"}, *pod_spec(live)["containers"]]
        patch = {"spec": {"template": {"spec": {"containers": containers}}}}
        injected = api.patch("Deployment", "default", "llama", patch, field_manager="injector")
        assert entry(injected, "injector", "Update")["fieldsV1"] == {
            "f:spec": {
                "f:template": {
                    "f:spec": {
                        "f:containers": {
                            'k:{"name":"sidecar"}': {
                                ".": {},
                                "f:image": {},
                                "f:imagePullPolicy": {},
                                "f:name": {},
                                "f:resources": {},
                                "f:terminationMessagePath": {},
                                "f:terminationMessagePolicy": {},
                            }
                        }
                    }
                }
            }
        }
        after = apply(api, desired_deployment(isvc(owner, image="vllm:2")))
        assert [c["name"] for c in pod_spec(after)["containers"]] == ["sidecar", CONTAINER_NAME]
        assert server(after)["image"] == "vllm:2"

    def test_an_owner_reference_added_by_another_applier_survives_apply(self, api: FakeApiServer, owner: Obj) -> None:
        apply(api, desired_deployment(isvc(owner)))
        config_map = api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
        reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": config_map["metadata"]["uid"]}
        extra = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "llama", "ownerReferences": [reference]},
        }
        apply(api, extra, manager="owner-adder", force=False)
        after = apply(api, desired_deployment(isvc(owner, replicas=2)))
        assert [r["kind"] for r in after["metadata"]["ownerReferences"]] == [KIND, "ConfigMap"]
        assert entry(after, "owner-adder")["fieldsV1"] == {
            "f:metadata": {"f:ownerReferences": {f'k:{{"uid":"{reference["uid"]}"}}': {}}}
        }

    def test_a_label_set_by_an_update_survives_apply(self, api: FakeApiServer, owner: Obj) -> None:
        apply(api, desired_deployment(isvc(owner)))
        api.patch(
            "Deployment", "default", "llama", {"metadata": {"labels": {"team": "ml"}}}, field_manager="kubectl-label"
        )
        after = apply(api, desired_deployment(isvc(owner, replicas=2)))
        assert after["metadata"]["labels"]["team"] == "ml"


# --- conflicts -----------------------------------------------------------------------------------------


class TestConflicts:
    def test_changing_a_field_an_update_manager_owns_conflicts_with_the_real_message(
        self, api: FakeApiServer, owner: Obj
    ) -> None:
        apply(api, desired_deployment(isvc(owner)))
        edited = api.patch("Deployment", "default", "llama", {"spec": {"replicas": 3}}, field_manager="kubectl-edit")
        with pytest.raises(Conflict) as raised:
            apply(api, desired_deployment(isvc(owner)), force=False)
        assert raised.value.message == (
            'Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas'
        )
        assert raised.value.code == 409
        assert api.get("Deployment", "default", "llama") == edited, "a refused apply changes nothing"
        assert api.requests[-1].error == "Conflict"

    def test_several_conflicts_are_listed_per_manager(self, api: FakeApiServer, owner: Obj) -> None:
        live = apply(api, desired_deployment(isvc(owner)))
        api.patch("Deployment", "default", "llama", {"spec": {"replicas": 3}}, field_manager="kubectl-edit")
        containers = [{**c, "image": "vllm:edited"} for c in pod_spec(live)["containers"]]
        api.patch("Deployment", "default", "llama", {"spec": {"template": {"spec": {"containers": containers}}}},
                  field_manager="kubectl-edit")  # fmt: skip
        api.apply(
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llama"}, "spec": {"paused": True}},
            field_manager="pauser",
        )
        config = desired_deployment(isvc(owner, replicas=2, image="vllm:2"))
        config["spec"]["paused"] = False
        with pytest.raises(Conflict) as raised:
            apply(api, config, force=False)
        assert raised.value.message == (
            "Apply failed with 3 conflicts: "
            'conflicts with "kubectl-edit" using apps/v1:\n'
            "- .spec.replicas\n"
            '- .spec.template.spec.containers[name="server"].image\n'
            'conflicts with "pauser":\n'
            "- .spec.paused"
        )

    def test_applying_the_same_value_shares_ownership_without_conflict(self, api: FakeApiServer, owner: Obj) -> None:
        apply(api, desired_deployment(isvc(owner)))
        api.patch("Deployment", "default", "llama", {"spec": {"replicas": 3}}, field_manager="kubectl-edit")
        after = apply(api, desired_deployment(isvc(owner, replicas=3)), force=False)
        replicas = path("spec", "replicas")
        assert replicas in (managed_fields_of(after, FIELD_MANAGER) or ())
        assert replicas in (managed_fields_of(after, "kubectl-edit", "Update") or ())

    def test_force_takes_ownership_from_the_other_manager(self, api: FakeApiServer, owner: Obj) -> None:
        apply(api, desired_deployment(isvc(owner)))
        api.patch("Deployment", "default", "llama", {"spec": {"replicas": 3}}, field_manager="kubectl-edit")
        patch = {"spec": {"template": {"spec": {"terminationGracePeriodSeconds": 5}}}}
        api.patch("Deployment", "default", "llama", patch, field_manager="kubectl-edit")
        after = apply(api, desired_deployment(isvc(owner)), force=True)
        assert after["spec"]["replicas"] == 1
        assert path("spec", "replicas") in (managed_fields_of(after, FIELD_MANAGER) or ())
        assert entry(after, "kubectl-edit", "Update")["fieldsV1"] == {
            "f:spec": {"f:template": {"f:spec": {"f:terminationGracePeriodSeconds": {}}}}
        }


# --- Update entries ------------------------------------------------------------------------------------


class TestUpdateEntries:
    def test_an_update_takes_the_fields_it_changes_from_the_applier(self, api: FakeApiServer, owner: Obj) -> None:
        live = apply(api, desired_deployment(isvc(owner)))
        containers = [{**c, "image": "vllm:edited"} for c in pod_spec(live)["containers"]]
        patch = {"spec": {"template": {"spec": {"containers": containers}}}}
        edited = api.patch("Deployment", "default", "llama", patch, field_manager="kubectl-edit")
        image = path(*CONTAINERS, SERVER_ITEM, "image")
        assert image not in (managed_fields_of(edited, FIELD_MANAGER) or ())
        assert managed_fields_of(edited, "kubectl-edit", "Update") == frozenset({image})

    def test_an_update_that_changes_nothing_records_nothing(self, api: FakeApiServer, owner: Obj) -> None:
        live = apply(api, desired_deployment(isvc(owner)))
        assert api.update(live, field_manager="someone") == live
        assert api.requests[-1].changed is False

    def test_status_writes_record_a_status_subresource_entry(self, api: FakeApiServer, owner: Obj) -> None:
        status = {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False", "reason": "Waiting"}]}
        written = api.update_status({**owner, "status": status}, field_manager=FIELD_MANAGER)
        assert entry(written, FIELD_MANAGER, "Update", "status") == {
            "manager": FIELD_MANAGER,
            "operation": "Update",
            "apiVersion": "serving.inference-operator.dev/v1",
            "time": "2026-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:status": {
                    ".": {},
                    "f:conditions": {
                        ".": {},
                        'k:{"type":"Ready"}': {".": {}, "f:reason": {}, "f:status": {}, "f:type": {}},
                    },
                    "f:phase": {},
                }
            },
            "subresource": "status",
        }
        patched = api.patch_status(KIND, "default", "llama", {"status": {"phase": "Ready"}}, field_manager="other")
        assert managed_fields_of(patched, "other", "Update", subresource="status") == frozenset(
            {path("status", "phase")}
        )
        assert path("status", "phase") not in (
            managed_fields_of(patched, FIELD_MANAGER, "Update", subresource="status") or ()
        )

    def test_an_entry_left_without_fields_is_dropped(self, api: FakeApiServer, owner: Obj) -> None:
        api.patch(KIND, "default", "llama", {"spec": {"replicas": 2}}, field_manager="scaler")
        taken = api.patch(KIND, "default", "llama", {"spec": {"replicas": 4}}, field_manager="kubectl-edit")
        assert ("scaler", "Update") not in managers(taken)

    def test_a_create_owns_scheme_defaults_but_not_what_the_registry_allocates(
        self, api: FakeApiServer, owner: Obj
    ) -> None:
        service = api.create(desired_service(isvc(owner)), field_manager="creator")
        assert service["spec"]["clusterIP"]
        spec_fields = entry(service, "creator", "Update")["fieldsV1"]["f:spec"]
        assert "f:sessionAffinity" in spec_fields and "f:internalTrafficPolicy" in spec_fields
        assert not {"f:clusterIP", "f:clusterIPs", "f:ipFamilies", "f:ipFamilyPolicy"} & spec_fields.keys()

    def test_a_custom_resource_is_created_from_an_empty_object(self, owner: Obj) -> None:
        fields_v1 = entry(owner, "kubectl-create", "Update")["fieldsV1"]
        assert fields_v1["f:spec"]["."] == {} and fields_v1["f:spec"]["f:nodeSelector"] == {".": {}, f"f:{PRODUCT}": {}}
        assert "f:metadata" not in fields_v1

    def test_writes_without_a_field_manager_are_recorded_as_unknown(self, api: FakeApiServer) -> None:
        created = api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "b"}})
        assert managers(created) == [("unknown", "Update")]
        assert entry(created, "unknown", "Update")["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}

    def test_the_garbage_collector_takes_an_orphaned_reference_from_its_applier(
        self, api: FakeApiServer, owner: Obj
    ) -> None:
        apply(api, desired_deployment(isvc(owner)))
        api.delete(KIND, "default", "llama", propagation="Orphan")
        orphan = api.get("Deployment", "default", "llama")
        assert "ownerReferences" not in orphan["metadata"]
        assert "f:ownerReferences" not in entry(orphan, FIELD_MANAGER)["fieldsV1"]["f:metadata"]

    def test_an_untracked_object_is_taken_over_by_before_first_apply(self, api: FakeApiServer) -> None:
        config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "b"}}
        api.create(config_map)
        reset = api.patch("ConfigMap", "default", "cm", {"metadata": {"managedFields": [{}]}})
        assert "managedFields" not in reset["metadata"]
        still = api.patch("ConfigMap", "default", "cm", {"data": {"c": "d"}}, field_manager="later")
        assert "managedFields" not in still["metadata"], "an untracked object stays untracked on update"
        config_map["data"] = {"a": "z"}
        with pytest.raises(Conflict, match=r'conflict with "before-first-apply" using v1: \.data\.a$'):
            api.apply(config_map, field_manager="applier")
        applied = api.apply(config_map, field_manager="applier", force=True)
        assert managers(applied) == [("applier", "Apply"), ("before-first-apply", "Update")]
        assert entry(applied, "before-first-apply", "Update")["fieldsV1"] == {"f:data": {".": {}, "f:c": {}}}

    def test_more_than_ten_update_managers_fold_into_ancient_changes(
        self, api: FakeApiServer, owner: Obj, clock: FakeClock
    ) -> None:
        for i in range(12):
            clock.advance(1)
            api.patch(KIND, "default", "llama", {"metadata": {"labels": {f"l{i}": "x"}}}, field_manager=f"m{i:02}")
        final = api.get(KIND, "default", "llama")
        names = [name for name, operation in managers(final) if operation == "Update"]
        assert len(names) == 10 and "ancient-changes" in names and "kubectl-create" not in names
        ancient = entry(final, "ancient-changes", "Update")["fieldsV1"]
        assert set(ancient) == {"f:spec", "f:metadata"}, "the creator's and the oldest labeller's fields"

    def test_entries_sort_by_operation_then_time_then_manager(
        self, api: FakeApiServer, owner: Obj, clock: FakeClock
    ) -> None:
        clock.advance(10)
        api.patch(KIND, "default", "llama", {"metadata": {"labels": {"b": "x"}}}, field_manager="b-labeller")
        api.patch(KIND, "default", "llama", {"metadata": {"labels": {"a": "x"}}}, field_manager="a-labeller")
        clock.advance(10)
        config = {
            "apiVersion": owner["apiVersion"],
            "kind": KIND,
            "metadata": {"name": "llama"},
            "spec": {"port": 9000},
        }
        final = api.apply(config, field_manager="user")
        assert managers(final) == [
            ("user", "Apply"),
            ("kubectl-create", "Update"),
            ("a-labeller", "Update"),
            ("b-labeller", "Update"),
        ]


# --- the real server is the referee ---------------------------------------------------------------


class TestRealServerShape:
    @pytest.mark.parametrize("kind", ["Deployment", "Service"])
    def test_applied_children_record_exactly_what_kube_apiserver_records(
        self, api: FakeApiServer, owner: Obj, kind: str
    ) -> None:
        build = desired_deployment if kind == "Deployment" else desired_service
        applied = apply(api, build(isvc(owner)))
        recorded = entry(applied, FIELD_MANAGER)
        expected = with_uid(REAL["apply"][kind], owner["metadata"]["uid"])
        assert json.dumps(recorded["fieldsV1"]) == json.dumps(expected), "same keys, same order"
        assert recorded["apiVersion"] == ("apps/v1" if kind == "Deployment" else "v1")

    @pytest.mark.parametrize("kind", ["Deployment", "Service"])
    def test_created_children_record_exactly_what_kube_apiserver_records(
        self, api: FakeApiServer, owner: Obj, kind: str
    ) -> None:
        build = desired_deployment if kind == "Deployment" else desired_service
        created = api.create(build(isvc(owner)), field_manager="creator")
        expected = with_uid(REAL["create"][kind], owner["metadata"]["uid"])
        assert json.dumps(entry(created, "creator", "Update")["fieldsV1"]) == json.dumps(expected)

    def test_field_set_of_the_desired_deployment_is_the_recorded_set(self, owner: Obj) -> None:
        desired = desired_deployment(isvc(owner))
        expected = with_uid(REAL["apply"]["Deployment"], owner["metadata"]["uid"])
        assert field_set(desired, "Deployment") == from_fields_v1(expected)
        assert to_fields_v1(field_set(desired, "Deployment")) == expected


# --- fieldpaths ----------------------------------------------------------------------------------------


class TestFieldPaths:
    def test_the_server_strips_identity_server_set_metadata_and_status(self) -> None:
        obj = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "ns", "uid": "u", "resourceVersion": "7", "labels": {"a": "b"}},
            "data": {"k": "v"},
            "status": {"x": 1},
        }
        assert field_set(obj, "ConfigMap") == {path("metadata", "labels", "a"), path("data", "k")}

    def test_the_status_subresource_owns_status_only(self) -> None:
        obj = {"metadata": {"labels": {"a": "b"}}, "spec": {"replicas": 1}, "status": {"replicas": 1}}
        assert field_set(obj, "Deployment", subresource="status") == {path("status", "replicas")}
        assert field_set(obj, KIND, subresource="status") == {path("status", "replicas")}

    def test_list_map_items_are_keyed_with_the_schemas_key_defaults(self) -> None:
        container = {"name": "c", "ports": [{"containerPort": 80}]}
        fields = field_set({"spec": {"template": {"spec": {"containers": [container]}}}}, "Deployment")
        port = key_element({"containerPort": 80, "protocol": "TCP"})
        assert path(*CONTAINERS, key_element({"name": "c"}), "ports", port, "containerPort") in fields
        assert element_strings(fields) >= {'k:{"containerPort":80,"protocol":"TCP"}'}

    def test_sets_are_keyed_by_value_and_atomic_lists_and_maps_are_leaves(self) -> None:
        obj = {
            "metadata": {"finalizers": ["a/b"]},
            "spec": {"selector": {"matchLabels": {"x": "y"}}, "template": {"spec": {"nodeSelector": {"k": "v"}}}},
        }
        fields = field_set(obj, "Deployment")
        assert fields == {
            path("metadata", "finalizers", value_element("a/b")),
            path("spec", "selector"),
            path("spec", "template", "spec", "nodeSelector"),
        }
        assert to_fields_v1(fields)["f:metadata"] == {"f:finalizers": {'v:"a/b"': {}}}

    def test_fields_v1_round_trips_with_dots_for_items_that_have_children(self) -> None:
        fields_v1: Obj = {"f:spec": {"f:ports": {".": {}, 'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}}}}}
        assert to_fields_v1(from_fields_v1(fields_v1)) == fields_v1
        assert from_fields_v1({"f:a": {"x:unknown": {}}, "f:b": {"f:c": {}}}) == {path("a"), path("b", "c")}

    def test_paths_print_as_the_api_server_prints_them(self) -> None:
        image = path(*CONTAINERS, SERVER_ITEM, "image")
        assert path_string(image) == '.spec.template.spec.containers[name="server"].image'
        assert path_string(path("metadata", "finalizers", value_element("x"))) == '.metadata.finalizers[="x"]'

    def test_managed_fields_of_finds_an_entry_or_none(self, api: FakeApiServer, owner: Obj) -> None:
        applied = apply(api, desired_service(isvc(owner)))
        assert managed_fields_of(applied, FIELD_MANAGER) == field_set(desired_service(isvc(owner)), "Service")
        assert managed_fields_of(applied, FIELD_MANAGER, "Update") is None
        assert managed_fields_of({"metadata": {}}, FIELD_MANAGER) is None

    def test_the_schema_tells_list_map_keys_and_atomicity(self) -> None:
        assert list_map_keys("Deployment", CONTAINERS) == ("name",)
        assert list_map_keys("Deployment", (*CONTAINERS, 0, "ports")) == ("containerPort", "protocol")
        assert list_map_keys("Service", ("spec", "ports")) == ("port", "protocol")
        assert list_map_keys("Deployment", ("metadata", "ownerReferences")) == ("uid",)
        assert list_map_keys("Deployment", (*CONTAINERS, 0, "args")) is None
        for atomic in [(*CONTAINERS, 0, "args"), ("spec", "selector"), ("spec", "template", "spec", "tolerations")]:
            assert is_atomic("Deployment", atomic), atomic
        assert is_atomic("Deployment", ("spec", "template", "spec", "nodeSelector"))
        assert is_atomic("Service", ("spec", "selector"))
        assert not is_atomic("Deployment", ("metadata", "labels"))
        assert not is_atomic("Deployment", CONTAINERS)
        assert not is_atomic("Deployment", ("metadata", "finalizers"))
        assert not is_atomic("Deployment", ("spec", "template", "spec", "securityContext"), {})

    def test_the_custom_resource_schema_comes_from_the_crd(self) -> None:
        assert not is_atomic(KIND, ("spec", "nodeSelector")), "a granular map in the CRD, atomic in a PodSpec"
        assert is_atomic(KIND, ("spec", "tolerations")) and is_atomic(KIND, ("spec", "args"))
        assert list_map_keys(KIND, ("status", "conditions")) == ("type",)
        assert list_map_keys(KIND, ("metadata", "ownerReferences")) == ("uid",)


def element_strings(fields: Any) -> set[str]:
    """Every fieldsV1 key that occurs in ``fields``."""
    out: set[str] = set()

    def walk(node: Obj) -> None:
        for key, child in node.items():
            out.add(key)
            walk(child)

    walk(to_fields_v1(fields))
    return out


# --- the schema against the Go markers ---------------------------------------------------------------

GO_MODULES = Path(os.environ.get("GOMODCACHE") or Path.home() / "go" / "pkg" / "mod")
GENERATED_SCHEMA = sorted(GO_MODULES.glob("k8s.io/client-go@v0.36.*/applyconfigurations/internal/internal.go"))
ROOTS = {
    "Deployment": "io.k8s.api.apps.v1.Deployment",
    "ReplicaSet": "io.k8s.api.apps.v1.ReplicaSet",
    "Pod": "io.k8s.api.core.v1.Pod",
    "Service": "io.k8s.api.core.v1.Service",
    "ConfigMap": "io.k8s.api.core.v1.ConfigMap",
    "Secret": "io.k8s.api.core.v1.Secret",
}


@pytest.mark.skipif(not GENERATED_SCHEMA, reason="k8s.io/client-go v0.36 is not in the Go module cache")
def test_the_built_in_schema_agrees_with_the_one_client_go_generates_from_the_markers() -> None:
    source = GENERATED_SCHEMA[-1].read_text()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    types = {
        t["name"]: t for t in yaml.load(source[source.index("`") + 1 : source.rindex("`")], Loader=loader)["types"]
    }
    problems: list[str] = []

    def walk(ref: Obj, node: Node, where: str, seen: tuple[str, ...]) -> None:
        if "namedType" in ref:
            if ref["namedType"] in seen:
                return
            seen = (*seen, ref["namedType"])
            ref = types[ref["namedType"]]
        if "list" in ref:
            generated = ref["list"]
            relation = generated.get("elementRelationship", "atomic")
            keys = tuple(generated.get("keys") or ())
            wanted = "atomic" if relation == "atomic" else "map" if keys else "set"
            mine = node.kind if isinstance(node, ListOf) else "atomic" if isinstance(node, Untyped) else repr(node)
            if mine != wanted or (isinstance(node, ListOf) and node.keys != keys):
                problems.append(f"{where}: {wanted} list {keys}, not {node}")
            elif isinstance(node, ListOf) and wanted != "atomic":
                walk(generated["elementType"], node.element, f"{where}[]", seen)
        elif "map" in ref:
            generated = ref["map"]
            atomic = generated.get("elementRelationship") == "atomic"
            if "fields" in generated:  # a struct: ours may be left untyped when nothing in it is special
                if isinstance(node, Untyped) and not atomic:
                    node = Struct()
                if not isinstance(node, Struct) or node.atomic != atomic:
                    problems.append(f"{where}: struct (atomic={atomic}), not {node}")
                elif not atomic:
                    for field in generated["fields"]:
                        walk(field["type"], node.child(field["name"]), f"{where}.{field['name']}", seen)
            elif not isinstance(node, MapOf) or node.atomic != atomic:
                problems.append(f"{where}: map (atomic={atomic}), not {node}")
            elif not atomic:
                walk(generated["elementType"], node.element, f"{where}.*", seen)
        elif not isinstance(node, Scalar | Untyped):
            problems.append(f"{where}: scalar, not {node}")

    for kind, root in ROOTS.items():
        walk({"namedType": root}, schema_for(kind), kind, ())
    assert problems == []
