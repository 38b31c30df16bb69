"""The CRD schema engine of the FakeApiServer, at the lowest level, then wired into the server.

Covers: pruning drops unknown fields in spec, nested objects, list items and at the top level,
keeps what ``x-kubernetes-preserve-unknown-fields``, ``additionalProperties`` and embedded
resources allow, and reduces metadata to ObjectMeta's fields; structural defaults fill absent
fields where the parent exists (defaulted parents included) and never create parents; OpenAPI
validation names the real server's field paths and error types (type, required, bounds,
lengths, pattern, enum, maxItems, maxProperties, int-or-string, list-map and set duplicates)
and ratchets values an update leaves alone; CEL rules (``has``, ``exists``, ``exists_one``,
``all``, ``matches``, ``startsWith``, ``size``) with ``fieldPath``, ``message`` and
``reason``; transition rules run on update only, ``optionalOldSelf`` rules always with an
optional ``oldSelf``; unchanged values are not re-checked; a blocking error stops CEL; the
server registers a CRD it stores (and forgets it when deleted), keeps ``default: {}`` in it,
reads objects stored before with its defaults, refuses an apply of undeclared or mistyped fields
and metadata that cannot be ObjectMeta (400), reports a bad name together with the schema errors,
and a Simulation has the project's CRD installed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from inference_operator.api.crd import crd as project_crd
from inference_operator.core.errors import Invalid
from inference_operator.sim import Simulation
from inference_operator.sim.apiserver.cel import check_rules, evaluate
from inference_operator.sim.apiserver.crdschema import PerSchemaNode, apply_defaults, prune
from inference_operator.sim.apiserver.crdvalidation import validate, validate_list_types
from inference_operator.sim.apiserver.customresources import CustomResources, TypedPatchFailed
from inference_operator.sim.apiserver.server import BadRequest, FakeApiServer

Obj = dict[str, Any]
KIND = "InferenceService"
API_VERSION = "serving.inference-operator.dev/v1"


def schema() -> Obj:
    return project_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def isvc(name: str = "a", **spec: Any) -> Obj:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"image": "vllm", "model": "m", **spec},
    }


def pairs(errors: list[Any]) -> list[str]:
    return sorted(f"{e.path}: {e.type}" for e in errors)


# --- pruning -----------------------------------------------------------------------------------


def test_pruning_drops_unknown_fields_at_every_level_but_keeps_the_envelope() -> None:
    obj = isvc(unknown=1, env=[{"name": "A", "extra": 2}], loadBalancer={"enabled": True, "x": 1})
    obj["junk"] = 1
    obj["metadata"]["bogus"] = 1
    obj["metadata"]["labels"] = {"keep": "me"}
    prune(obj, schema())
    assert obj["spec"] == {"image": "vllm", "model": "m", "env": [{"name": "A"}], "loadBalancer": {"enabled": True}}
    assert set(obj) == {"apiVersion", "kind", "metadata", "spec"}
    assert obj["metadata"] == {"name": "a", "namespace": "default", "labels": {"keep": "me"}}


def test_pruning_keeps_what_the_schema_leaves_open() -> None:
    open_schema = {
        "type": "object",
        "properties": {
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"n": {}}},
            "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {}}}},
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": True},
        },
    }
    obj: Obj = {
        "free": {"anything": {"deep": 1}, "n": 1},
        "map": {"k": {"v": 1, "drop": 2}},
        "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "other": 1},
    }
    prune(obj, open_schema)
    assert obj == {
        "free": {"anything": {"deep": 1}, "n": 1},
        "map": {"k": {"v": 1}},
        "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {}},
    }


# --- defaults ----------------------------------------------------------------------------------


def test_defaults_fill_absent_fields_including_inside_a_defaulted_parent() -> None:
    obj = isvc()
    apply_defaults(obj, schema())
    assert obj["spec"] == {
        "image": "vllm",
        "model": "m",
        "replicas": 1,
        "port": 8000,
        "gpu": 0,
        "healthPath": "/health",
        "progressDeadlineSeconds": 1800,
        "loadBalancer": {"enabled": True},
    }


def test_defaults_keep_given_values_and_never_create_parents() -> None:
    obj = isvc(replicas=0, loadBalancer={"enabled": False})
    del obj["spec"]["model"]
    apply_defaults(obj, schema())
    assert obj["spec"]["replicas"] == 0 and obj["spec"]["loadBalancer"] == {"enabled": False}
    assert "resources" not in obj["spec"] and "status" not in obj


def test_defaults_reach_list_items() -> None:
    obj = isvc()
    obj["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "Ok"}]}
    apply_defaults(obj, schema())
    assert obj["status"]["conditions"][0]["message"] == ""


# --- validation --------------------------------------------------------------------------------


def test_validation_names_each_field_and_error_type() -> None:
    obj = isvc(
        replicas=-1,
        port=70000,
        gpu="x",
        healthPath="nope",
        image="",
        model="m" * 513,
        args=["a"] * 65,
        env=[{"value": "x"}],
        tolerations=[{"operator": "Sometimes"}],
        nodeSelector={"pool": "x" * 64},
        resources={"requests": {"cpu": "lots", "memory": 0.5}},
        podSecurity="Privileged",
        runAsUser=0,
    )
    assert pairs(validate(obj, schema())) == [
        "<nil>: Invalid value",
        "spec.args: Too many",
        "spec.env[0].name: Required value",
        "spec.gpu: TypeInvalid",
        "spec.healthPath: Invalid value",
        "spec.image: Invalid value",
        "spec.model: Too long",
        "spec.nodeSelector.pool: Too long",
        "spec.podSecurity: Unsupported value",
        "spec.port: Invalid value",
        "spec.replicas: Invalid value",
        "spec.resources.requests.cpu: Invalid value",
        "spec.resources.requests.memory: TypeInvalid",
        "spec.runAsUser: Invalid value",
        "spec.tolerations[0].operator: Unsupported value",
    ]


def test_validation_messages_read_like_the_real_servers() -> None:
    texts = {e.text for e in validate(isvc(replicas=-1, gpu="x", tolerations=[{"effect": "No"}]), schema())}
    assert "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0" in texts
    assert 'spec.gpu: Invalid value: "string": spec.gpu in body must be of type integer: "string"' in texts
    assert (
        'spec.tolerations[0].effect: Unsupported value: "No": supported values: '
        '"NoSchedule", "PreferNoSchedule", "NoExecute"'
    ) in texts


def test_validation_requires_spec_at_the_root_and_bounds_map_sizes() -> None:
    assert pairs(validate({"apiVersion": API_VERSION, "kind": KIND, "metadata": {}}, schema())) == [
        "spec: Required value"
    ]
    small = {"type": "object", "properties": {"m": {"type": "object", "maxProperties": 1}}}
    assert pairs(validate({"m": {"a": 1, "b": 2}}, small)) == ["m: Too many"]


def test_validation_ratchets_values_an_update_leaves_alone() -> None:
    old = isvc(replicas=-1)
    assert pairs(validate({**old, "status": {"phase": "Ready"}}, schema(), old)) == []
    changed = isvc(replicas=-2)
    assert pairs(validate(changed, schema(), old)) == ["spec.replicas: Invalid value"]


def test_list_types_refuse_duplicate_map_keys_and_set_values() -> None:
    obj = isvc()
    ready = {"type": "Ready", "status": "True", "reason": "Ok"}
    obj["status"] = {"conditions": [ready, {**ready, "status": "False"}]}
    errors = validate_list_types(obj, schema())
    assert [e.text for e in errors] == ['status.conditions[1]: Duplicate value: {"type":"Ready"}']
    as_set = {"type": "object", "properties": {"s": {"type": "array", "x-kubernetes-list-type": "set"}}}
    assert pairs(validate_list_types({"s": [1, 2, 1]}, as_set)) == ["s[2]: Duplicate value"]
    # found below additionalProperties and items too (the walk skips only schemas without such lists)
    deep_set = {"type": "object", "properties": {"s": {"type": "array", "x-kubernetes-list-type": "set"}}}
    deep = {"type": "object", "additionalProperties": {"type": "array", "items": deep_set}}
    assert pairs(validate_list_types({"m": [{"s": [1]}, {"s": [2, 2]}]}, deep)) == ["m[1].s[1]: Duplicate value"]
    atomic = {"type": "object", "properties": {"s": {"type": "array", "x-kubernetes-list-type": "atomic"}}}
    assert validate_list_types({"s": [1, 1]}, atomic) == []


def test_an_answer_per_schema_node_is_worked_out_once_per_node_object_and_bounded() -> None:
    asked: list[int] = []
    answer = PerSchemaNode(lambda node: asked.append(id(node)) or len(node), size=2)
    node, twin = {"type": "object"}, {"type": "object"}
    assert [answer(node), answer(node), answer(twin)] == [1, 1, 1]
    assert asked == [id(node), id(twin)]  # an equal node is another node: asked again
    answer({"type": "string", "x": 1})  # a third node: past the bound, all are forgotten
    answer(node)
    assert asked[-1] == id(node) and len(asked) == 4


# --- CEL ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "value", "verdict"),
    [
        ("!has(self.x) || self.x > 1", {}, True),
        ("self.l.exists(a, a.startsWith('--m'))", {"l": ["--x", "--model"]}, True),
        ("self.l.exists_one(a, a == 'x')", {"l": ["x", "x"]}, False),
        ("self.l.all(e, size(e) <= 2)", {"l": ["ab", "abc"]}, False),
        ("self.n.matches('^[a-z]+$')", {"n": "abc"}, True),
        ("self.n.matches('^[a-z]+$')", {"n": "a.b"}, False),
    ],
)
def test_cel_evaluates_the_functions_the_crd_uses(rule: str, value: Obj, verdict: bool) -> None:
    assert evaluate(rule, value) is verdict


def test_optional_old_self_has_no_value_on_create_and_one_on_update() -> None:
    rule = "oldSelf.hasValue() || self.n == 'ok'"
    assert evaluate(rule, {"n": "bad"}, optional_old_self=True) is False
    assert evaluate(rule, {"n": "bad"}, old={"n": "bad"}, optional_old_self=True) is True
    assert evaluate("oldSelf.orValue(self).n == self.n", {"n": "x"}, optional_old_self=True) is True


def test_cutting_values_down_to_what_a_rule_reads_keeps_its_verdict() -> None:
    assert evaluate("has(self.a) && !has(self.b)", {"a": 1, "c": 2}) is True
    assert evaluate("self == oldSelf", {"a": 1}, old={"a": 2}) is False
    assert evaluate("oldSelf.hasValue() && oldSelf.value().a == 2", {"a": 1}, old={"a": 2}, optional_old_self=True)
    assert evaluate("oldSelf.hasValue()", {"a": 1}, old={"a": 2}, optional_old_self=True) is True


def test_an_evaluation_error_is_reported_not_raised() -> None:
    assert isinstance(evaluate("self.missing.deeper == 1", {}), str)


def test_each_rule_of_the_crd_reports_at_its_path() -> None:
    env = [
        {"name": "A", "value": "x", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        {"name": "A", "valueFrom": {}},
    ]
    obj = isvc("x.y", args=["--port=1"], env=env, tolerations=[{"operator": "Exists", "value": "v"}])
    assert pairs(check_rules(obj, schema(), None)) == [
        "<nil>: Invalid value",
        "spec.args: Invalid value",
        "spec.env: Invalid value",
        "spec.env[0]: Invalid value",
        "spec.env[1].valueFrom: Invalid value",
        "spec.tolerations[0]: Invalid value",
    ]


def test_the_name_rule_holds_on_create_only() -> None:
    bad = isvc("with.dot")
    assert pairs(check_rules(bad, schema(), None)) == ["<nil>: Invalid value"]
    assert check_rules({**bad, "status": {"phase": "Ready"}}, schema(), bad) == []


def test_transition_rules_run_on_update_only_and_unchanged_values_are_not_rechecked() -> None:
    rules = {
        "type": "object",
        "properties": {
            "fixed": {
                "type": "string",
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}],
            },
            "n": {
                "type": "integer",
                "x-kubernetes-validations": [{"rule": "self > 0", "reason": "FieldValueForbidden"}],
            },
        },
    }
    assert check_rules({"fixed": "a", "n": 1}, rules, None) == []
    assert [e.text for e in check_rules({"fixed": "b", "n": 1}, rules, {"fixed": "a", "n": 1})] == [
        "fixed: Invalid value: immutable"
    ]
    assert check_rules({"fixed": "a", "n": 0, "x": 1}, rules, {"fixed": "a", "n": 0}) == []
    assert [e.text for e in check_rules({"n": -1}, rules, {"n": 0})] == ["n: Forbidden: failed rule: self > 0"]


# --- in the server --------------------------------------------------------------------------


def test_the_server_applies_a_crd_it_stores_and_forgets_a_deleted_one() -> None:
    api = FakeApiServer()
    api.create(isvc("before", unknown=1))
    assert api.get(KIND, "default", "before")["spec"] == {"image": "vllm", "model": "m", "unknown": 1}
    api.create(project_crd())
    created = api.create(isvc("after", unknown=1))
    assert "unknown" not in created["spec"] and created["spec"]["loadBalancer"] == {"enabled": True}
    with pytest.raises(Invalid, match=r"spec\.replicas: Invalid value: -1"):
        api.create(isvc("bad", replicas=-1))
    api.delete("CustomResourceDefinition", "", project_crd()["metadata"]["name"])
    api.create(isvc("bad", replicas=-1))


def test_a_blocking_error_stops_the_cel_rules() -> None:
    registry = CustomResources()
    registry.register(project_crd())
    obj = isvc(env=[{"name": "A"}, {"name": "A"}])
    del obj["spec"]["image"]
    with pytest.raises(Invalid) as caught:
        registry.validate(KIND, obj, None)
    assert "spec.image: Required value" in caught.value.message and "env names" not in caught.value.message
    assert "some validation rules were not checked" in caught.value.message


def test_status_writes_are_pruned_defaulted_and_validated() -> None:
    api = FakeApiServer()
    api.create(project_crd())
    stored = api.create(isvc())
    condition = {"type": "Ready", "status": "True", "reason": "Ok", "extra": 1}
    written = api.update_status({**stored, "status": {"phase": "Ready", "junk": 1, "conditions": [condition]}})
    assert written["status"] == {
        "phase": "Ready",
        "conditions": [{"type": "Ready", "status": "True", "reason": "Ok", "message": ""}],
    }
    with pytest.raises(Invalid, match=r"status\.phase: Unsupported value"):
        api.patch_status(KIND, "default", "a", {"status": {"phase": "Exploded"}})


STATUS_BODIES = [
    {"status": {"phase": "Ready", "junk": 1, "readyReplicas": 2.0, "conditions": [{"type": "Ready", "status": "1"}]}},
    {"status": None, "spec": {"image": None, "replicas": 3.0, "unknown": {"deep": [1.0]}}},
    {"status": {}, "metadata": {"labels": None, "annotations": {"a": "b"}, "managedFields": None}},
    {"status": {"conditions": [{"type": "Ready", "status": "False", "message": None}]}, "spec": "not a map"},
    {"status": {"phase": None}, "extra": {"dropped": True}},
]


@pytest.mark.parametrize("body", STATUS_BODIES)
def test_a_status_write_decodes_its_status_as_the_whole_request_would(body: Obj) -> None:
    # A write through /status decodes only the status; what it stores must be what decoding the
    # whole request (nulls dropped, whole numbers, pruning, defaults) and keeping its status stores.
    from inference_operator.sim.apiserver import strategy

    registry = CustomResources()
    registry.register(project_crd())
    stored = registry.decode(KIND, {**isvc(), "metadata": {**isvc()["metadata"], "uid": "u", "resourceVersion": "1"}})
    sent = {**stored, **body, "metadata": {**stored["metadata"], **body.get("metadata", {})}}
    key = (KIND, "default", "a")
    whole = strategy.prepare_status_update(key, stored, registry.decode(KIND, sent))
    partial = registry.decode(KIND, sent, status_only=True)
    result = strategy.prepare_status_update(key, stored, partial, ingested=True)
    assert json.dumps(result, sort_keys=True) == json.dumps(whole, sort_keys=True)  # 2.0 is not 2 here


def test_a_status_write_with_metadata_that_cannot_be_object_meta_is_a_bad_request() -> None:
    api = FakeApiServer()
    api.create(project_crd())
    stored = api.create(isvc())
    with pytest.raises(BadRequest, match=r"ObjectMeta\.labels"):
        api.update_status({**stored, "metadata": {**stored["metadata"], "labels": ["x"]}, "status": {}})
    with pytest.raises(BadRequest, match=r"ObjectMeta\.managedFields"):
        api.update_status({**stored, "metadata": {**stored["metadata"], "managedFields": ["x"]}, "status": {}})


def test_a_stored_crd_keeps_its_empty_defaults() -> None:
    api = FakeApiServer()
    stored = api.create(project_crd())
    spec = stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["loadBalancer"]["default"] == {}


def test_the_simulation_has_the_project_crd_installed() -> None:
    sim = Simulation()
    assert sim.api.writes == 0
    with pytest.raises(Invalid):
        sim.api.create(isvc(port=0))
    assert sim.api.create(isvc())["spec"]["healthPath"] == "/health"


def test_objects_stored_before_a_crd_gained_defaults_are_read_with_them() -> None:
    api = FakeApiServer()
    api.create(isvc("old"))  # no CRD yet: stored as sent
    watch = api.watch(KIND)
    before = api.get(KIND, "default", "old")
    api.create(project_crd())
    after = api.get(KIND, "default", "old")
    assert after["spec"]["replicas"] == 1 and after["spec"]["loadBalancer"] == {"enabled": True}
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert api.list(KIND)[0]["spec"] == after["spec"] and watch.drain() == []


def test_an_apply_of_undeclared_or_mistyped_fields_fails_like_the_real_typed_patch() -> None:
    api = FakeApiServer()
    api.create(project_crd())
    for bad, words in (
        (isvc(unknown=1), ".spec.unknown: field not declared in schema"),
        (isvc(env=[{"name": "A", "x": 1}]), ".spec.env[0].x: field not declared in schema"),
        (isvc(replicas="two"), ".spec.replicas: expected numeric (int or float), got string"),
    ):
        with pytest.raises(TypedPatchFailed) as caught:
            api.apply(bad, field_manager="applier")
        assert caught.value.code == 500 and caught.value.message.endswith(words)
    assert api.objects_total(KIND) == 0
    assert api.apply(isvc(resources={"limits": {"cpu": 1}}), field_manager="applier")["spec"]["port"] == 8000


def test_whole_numbers_are_stored_as_integers_and_fractions_refused() -> None:
    api = FakeApiServer()
    api.create(project_crd())
    created = api.create(isvc(port=8080.0, gpu=1.0))
    assert type(created["spec"]["port"]) is int and type(created["spec"]["gpu"]) is int
    with pytest.raises(Invalid, match=r"spec\.replicas in body must be of type integer: \"number\""):
        api.create(isvc("b", replicas=2.5))


def test_metadata_that_cannot_be_object_meta_is_a_bad_request() -> None:
    api = FakeApiServer()
    api.create(project_crd())
    body = isvc()
    body["metadata"]["labels"] = ["x"]
    with pytest.raises(BadRequest, match=r"cannot unmarshal array into Go struct field ObjectMeta\.labels"):
        api.create(body)
    body["metadata"]["labels"] = {"a": "b"}
    body["metadata"]["finalizers"] = "x"
    with pytest.raises(BadRequest, match=r"ObjectMeta\.finalizers of type \[\]string"):
        api.create(body)


def test_a_bad_name_is_reported_together_with_the_schema_errors() -> None:
    api = FakeApiServer()
    api.create(project_crd())
    body = isvc("Bad_Name")
    del body["spec"]["image"]
    with pytest.raises(Invalid) as caught:
        api.create(body)
    assert "metadata.name: Invalid value" in caught.value.message
    assert "spec.image: Required value" in caught.value.message


def test_an_apply_under_a_schema_that_keeps_unknown_fields_is_not_refused() -> None:
    api = FakeApiServer()
    crd = project_crd()
    crd["spec"]["versions"][0]["schema"] = {
        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    }
    api.create(crd)
    assert api.apply(isvc(anything=1), field_manager="applier")["spec"]["anything"] == 1
