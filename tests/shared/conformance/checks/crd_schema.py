"""The InferenceService CRD's own schema on every write: structural defaults, pruning of unknown
fields, OpenAPI validation (types, bounds, lengths, patterns, enums, required, list uniqueness).

The CEL rules of the same schema are in :mod:`.crd_rules`. Objects are recorded by their spec
(and status, generation, resourceVersion where that is the point): the rest of an object is
other areas' business.
"""

from __future__ import annotations

from ..objects import isvc
from ..recorder import Api
from ..registry import check

SPEC = ["spec"]
SPEC_AND_VERSION = ["spec", "metadata.generation", "metadata.resourceVersion"]
STATUS = ["status", "metadata.generation"]
KIND = "InferenceService"


# --- defaults ----------------------------------------------------------------------------------


@check("crd/defaults-fill-every-absent-spec-field")
def defaults_minimal(api: Api) -> None:
    api.create(isvc("a"), keep=SPEC)
    api.get(KIND, "a", keep=SPEC)


@check("crd/defaults-keep-the-values-given")
def defaults_given(api: Api) -> None:
    given = {"replicas": 0, "port": 9000, "gpu": 2, "healthPath": "/ready", "progressDeadlineSeconds": 60}
    api.create(isvc("a", loadBalancer={"enabled": False}, **given), keep=SPEC)


@check("crd/defaults-fill-load-balancer-enabled-in-an-empty-parent")
def defaults_nested_present(api: Api) -> None:
    api.create(isvc("a", loadBalancer={}), keep=SPEC)


@check("crd/defaults-nested-fields-of-optional-parents-stay-absent")
def defaults_nested_absent(api: Api) -> None:
    # resources, env and tolerations have no defaults of their own: absent parents stay absent,
    # present ones get nothing added.
    api.create(isvc("a", resources={}, env=[{"name": "A"}], tolerations=[{"key": "k"}]), keep=SPEC)


@check("crd/defaults-return-when-an-update-removes-them")
def defaults_after_update(api: Api) -> None:
    first = api.create(isvc("a", replicas=3, port=9000, healthPath="/ready"), keep=SPEC_AND_VERSION)
    spec = {k: v for k, v in first["spec"].items() if k not in ("replicas", "port", "healthPath", "loadBalancer")}
    api.update({**first, "spec": spec}, keep=SPEC_AND_VERSION)


@check("crd/defaults-return-when-a-merge-patch-nulls-them")
def defaults_after_patch(api: Api) -> None:
    api.create(isvc("a", replicas=3, gpu=1), keep=SPEC_AND_VERSION)
    api.patch(KIND, "a", {"spec": {"replicas": None, "gpu": None, "loadBalancer": None}}, keep=SPEC_AND_VERSION)


@check("crd/removing-a-field-that-was-defaulted-is-a-no-op")
def defaults_removed_noop(api: Api) -> None:
    first = api.create(isvc("a"), keep=SPEC_AND_VERSION)
    api.patch(KIND, "a", {"spec": {"port": None, "loadBalancer": {"enabled": None}}}, keep=SPEC_AND_VERSION)
    spec = {k: v for k, v in first["spec"].items() if k != "progressDeadlineSeconds"}
    api.update({**first, "spec": spec}, keep=SPEC_AND_VERSION)


@check("crd/defaults-on-server-side-apply")
def defaults_on_apply(api: Api) -> None:
    body = isvc("a")
    api.apply(body, manager="applier", keep=SPEC)
    api.apply(isvc("a", replicas=2), manager="applier", keep=SPEC)


@check("crd/defaults-in-status-through-status")
def defaults_in_status(api: Api) -> None:
    first = api.create(isvc("a"))
    condition = {"type": "Ready", "status": "False", "reason": "Pending"}
    api.update({**first, "status": {"phase": "Pending", "conditions": [condition]}}, subresource="status", keep=STATUS)


# --- pruning --------------------------------------------------------------------------------------


@check("crd/prune-unknown-spec-field")
def prune_spec(api: Api) -> None:
    api.create(isvc("a", unknownField="x", Replicas=3), keep=SPEC)


@check("crd/prune-unknown-top-level-field")
def prune_top_level(api: Api) -> None:
    body = isvc("a")
    body["extra"] = {"x": 1}
    body["Spec"] = {"replicas": 3}
    created = api.create(body, keep=["extra", "Spec", "spec.replicas"])
    api.note("top-level keys", sorted(created))


@check("crd/prune-unknown-nested-fields")
def prune_nested(api: Api) -> None:
    body = isvc(
        "a",
        env=[
            {"name": "A", "value": "1", "extra": True},
            {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "junk": 1}, "other": {}}},
        ],
        resources={"requests": {"cpu": "1", "nvidia.com/gpu": 1}, "claims": []},
        tolerations=[{"key": "k", "operator": "Exists", "priority": 2}],
        loadBalancer={"enabled": False, "class": "x"},
    )
    api.create(body, keep=SPEC)


@check("crd/prune-unknown-metadata-field")
def prune_metadata(api: Api) -> None:
    body = isvc("a")
    body["metadata"]["bogus"] = "x"
    body["metadata"]["labels"] = {"app": "a"}
    created = api.create(body, keep=["metadata.bogus", "metadata.labels"])
    api.note("metadata keys", sorted(k for k in created["metadata"] if k != "managedFields"))


@check("crd/prune-unknown-status-fields-through-status")
def prune_status(api: Api) -> None:
    first = api.create(isvc("a"))
    status = {
        "phase": "Ready",
        "bogus": 1,
        "loadBalancer": {"id": "lb-1", "address": "10.0.0.1", "port": 80},
        "conditions": [{"type": "Ready", "status": "True", "reason": "Ok", "message": "", "severity": "x"}],
    }
    api.update({**first, "status": status}, subresource="status", keep=STATUS)
    api.patch(KIND, "a", {"status": {"extra": {"deep": 1}, "readyReplicas": 1}}, subresource="status", keep=STATUS)


@check("crd/an-unknown-field-alone-changes-nothing")
def prune_noop(api: Api) -> None:
    first = api.create(isvc("a"), keep=SPEC_AND_VERSION)
    api.update({**first, "spec": {**first["spec"], "unknown": 1}}, keep=SPEC_AND_VERSION)
    api.patch(KIND, "a", {"spec": {"alsoUnknown": {"x": 1}}, "topLevel": 1}, keep=SPEC_AND_VERSION)


# --- validation -------------------------------------------------------------------------------


@check("crd/invalid-missing-image")
def missing_image(api: Api) -> None:
    api.create(isvc("a", image=None))


@check("crd/invalid-missing-model")
def missing_model(api: Api) -> None:
    api.create(isvc("a", model=None))


@check("crd/invalid-missing-spec")
def missing_spec(api: Api) -> None:
    body = isvc("a")
    del body["spec"]
    api.create(body)


@check("crd/invalid-wrong-types")
def wrong_types(api: Api) -> None:
    api.create(isvc("a", replicas="3"))
    api.create(isvc("b", gpu=True, healthPath=5))
    api.create(isvc("c", args="--x", env={"name": "A"}, nodeSelector=["a"]))
    api.create(isvc("d", loadBalancer={"enabled": "yes"}, tolerations=[{"tolerationSeconds": "5"}]))
    api.create(isvc("e", resources={"requests": {"cpu": 0.5, "memory": True}}))


@check("crd/invalid-replicas-out-of-range")
def replicas_range(api: Api) -> None:
    api.create(isvc("a", replicas=-1))
    api.create(isvc("b", replicas=1001))


@check("crd/invalid-port-out-of-range")
def port_range(api: Api) -> None:
    api.create(isvc("a", port=0))
    api.create(isvc("b", port=65536))
    api.create(isvc("c", port=65535), keep=["spec.port"])


@check("crd/invalid-gpu-and-progress-deadline-out-of-range")
def gpu_deadline_range(api: Api) -> None:
    api.create(isvc("a", gpu=17, progressDeadlineSeconds=9))
    api.create(isvc("b", gpu=-1, progressDeadlineSeconds=86401))


@check("crd/invalid-health-path-pattern")
def health_path(api: Api) -> None:
    api.create(isvc("a", healthPath="health"))
    api.create(isvc("b", healthPath=""))
    api.create(isvc("c", healthPath="/healthz?x=1"), keep=["spec.healthPath"])


@check("crd/invalid-label-value-and-config-key")
def label_value_and_config_key(api: Api) -> None:
    api.create(isvc("a", nodeSelector={"pool": "has space"}))
    api.create(isvc("b", nodeSelector={"pool": "-edge"}))
    api.create(isvc("c", env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "bad key!"}}}]))
    api.create(isvc("d", env=[{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "a/b"}}}]))
    api.create(
        isvc(
            "e",
            nodeSelector={"pool": "", "zone": "us-east_1.a"},
            env=[{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "-._Key9"}}}],
        ),
        keep=SPEC,
    )


@check("crd/invalid-string-lengths")
def string_lengths(api: Api) -> None:
    api.create(isvc("a", image="", model="m" * 513))
    api.create(isvc("b", nodeSelector={"pool": "x" * 64}, args=["a" * 4097]))


@check("crd/invalid-too-many-items")
def too_many(api: Api) -> None:
    api.create(isvc("a", args=[f"--flag{i}" for i in range(65)]))
    api.create(isvc("b", env=[{"name": f"V{i}", "value": "x"} for i in range(65)]))


@check("crd/invalid-enum-values-in-spec")
def spec_enums(api: Api) -> None:
    api.create(isvc("a", tolerations=[{"key": "k", "operator": "Matches", "effect": "NoEntry"}]))


@check("crd/invalid-env-items")
def env_items(api: Api) -> None:
    api.create(isvc("a", env=[{"value": "x"}, {"name": "1BAD"}, {"name": ""}]))
    api.create(isvc("b", env=[{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s"}}}]))


@check("crd/invalid-quantities")
def quantities(api: Api) -> None:
    api.create(isvc("a", resources={"requests": {"cpu": "lots"}, "limits": {"memory": "1Gb"}}))
    api.create(isvc("b", resources={"requests": {"cpu": "500m", "memory": 1024}}), keep=["spec.resources"])


@check("crd/invalid-status-phase-enum-through-status")
def status_enum(api: Api) -> None:
    first = api.create(isvc("a"))
    api.update({**first, "status": {"phase": "Exploded"}}, subresource="status")
    api.patch(
        KIND,
        "a",
        {"status": {"conditions": [{"type": "Ready", "status": "Maybe", "reason": "R"}]}},
        subresource="status",
    )
    api.get(KIND, "a", keep=["status"])


@check("crd/invalid-status-conditions-duplicate-type-and-missing-fields")
def status_conditions(api: Api) -> None:
    first = api.create(isvc("a"))
    ready = {"type": "Ready", "status": "True", "reason": "Ok"}
    api.update({**first, "status": {"conditions": [ready, dict(ready)]}}, subresource="status")
    api.update({**first, "status": {"conditions": [{"type": "Ready"}]}}, subresource="status")
    api.update({**first, "status": {"replicas": -1, "observedGeneration": "1"}}, subresource="status")


@check("crd/invalid-update-and-patch-leave-the-object-alone")
def invalid_update(api: Api) -> None:
    first = api.create(isvc("a"), keep=SPEC_AND_VERSION)
    api.update({**first, "spec": {**first["spec"], "replicas": -5, "image": ""}})
    api.patch(KIND, "a", {"spec": {"port": 0, "model": None}})
    api.apply(isvc("a", gpu=99), manager="applier")
    api.get(KIND, "a", keep=SPEC_AND_VERSION)


@check("crd/several-errors-are-reported-together")
def several_errors(api: Api) -> None:
    api.create(
        isvc(
            "a",
            image=None,
            replicas=-1,
            port=70000,
            gpu="many",
            healthPath="x",
            progressDeadlineSeconds=1,
            args=["x"] * 65,
            tolerations=[{"operator": "Sometimes"}],
            env=[{"name": "9"}],
        )
    )


@check("crd/valid-object-with-every-field-passes-untouched")
def valid_everything(api: Api) -> None:
    spec = {
        "image": "vllm/vllm-openai:v0.7.0",
        "model": "meta-llama/Llama-3-8B",
        "replicas": 2,
        "port": 8080,
        "gpu": 1,
        "healthPath": "/v1/health",
        "resources": {"requests": {"cpu": "4", "memory": "32Gi"}, "limits": {"cpu": 8, "ephemeral-storage": "10Gi"}},
        "args": ["--max-model-len=4096", "--dtype", "half"],
        "env": [
            {"name": "HF_HOME", "value": "/cache"},
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token", "optional": True}}},
            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}}},
            {"name": "EMPTY"},
        ],
        "nodeSelector": {"gpu": "a100"},
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "pool", "operator": "Equal", "value": "inference", "effect": "NoExecute", "tolerationSeconds": 60},
        ],
        "progressDeadlineSeconds": 600,
        "loadBalancer": {"enabled": False},
    }
    api.create(isvc("a", **spec), keep=SPEC)


@check("crd/apply-of-undeclared-or-mistyped-fields-is-refused")
def apply_unknown(api: Api) -> None:
    # Server-side apply prunes nothing: the typed patch cannot be built (500, no reason).
    api.apply(isvc("a", unknownField=1), manager="applier")
    top = isvc("a")
    top["junk"] = 1
    api.apply(top, manager="applier")
    api.apply(isvc("a", env=[{"name": "A", "extra": 1}]), manager="applier")
    api.apply(isvc("a", replicas="two"), manager="applier")
    api.apply(isvc("a", resources={"requests": {"cpu": "1", "memory": 1024}}), manager="applier", keep=SPEC)


@check("crd/defaulted-and-pruned-fields-in-managed-fields")
def defaults_managed_fields(api: Api) -> None:
    # The creating manager owns what defaulting added, and nothing of what pruning took away.
    api.create(isvc("a", unknown=1), keep=["metadata.managedFields"])
    api.patch(KIND, "a", {"spec": {"replicas": None, "gpu": 2, "extra": 1}}, keep=["metadata.managedFields", "spec"])
    api.apply(isvc("a", port=9000), manager="applier", keep=["metadata.managedFields", "spec"])


@check("crd/watch-and-list-see-the-defaulted-object")
def defaults_watch_list(api: Api) -> None:
    handle = api.watch(KIND)
    api.create(isvc("a", loadBalancer={}), keep=["spec"])
    api.patch(KIND, "a", {"spec": {"loadBalancer": {"enabled": None}, "junk": 1}}, keep=SPEC_AND_VERSION)
    api.patch(KIND, "a", {"spec": {"replicas": 4}}, keep=SPEC_AND_VERSION)
    api.events(handle, 2, keep=["spec", "metadata.generation"])
    api.list(KIND, keep=["items"])


@check("crd/numbers-with-a-fraction-are-not-integers")
def float_integers(api: Api) -> None:
    api.create(isvc("a", replicas=2.5))
    made = api.create(isvc("b", port=8080.0, gpu=1.0), keep=["spec.port", "spec.gpu"])
    api.note("types answered", {k: type(made.get("spec", {}).get(k)).__name__ for k in ("port", "gpu")})
    api.create(isvc("c", resources={"limits": {"cpu": 1.5}}))


@check("crd/each-endpoint-validates-what-it-writes-only")
def endpoint_scope(api: Api) -> None:
    # /status ignores the body's spec (even an invalid one), the main endpoint ignores its status.
    first = api.create(isvc("a"))
    body = {**first, "spec": {**first["spec"], "replicas": -1, "image": ""}, "status": {"phase": "Pending"}}
    second = api.update(body, subresource="status", keep=["spec", "status", "metadata.generation"])
    body = {**second, "spec": {**second["spec"], "replicas": 2}, "status": {"phase": "Exploded", "junk": 1}}
    api.update(body, keep=["spec.replicas", "status", "metadata.generation"])
    api.patch(KIND, "a", {"status": {"phase": "Exploded"}}, keep=["status"])
    api.patch(KIND, "a", {"spec": {"gpu": 99}}, subresource="status", keep=["spec.gpu"])


@check("crd/metadata-of-the-wrong-shape-is-refused")
def metadata_shape(api: Api) -> None:
    body = isvc("a")
    body["metadata"]["labels"] = ["x"]
    api.create(body)
    body = isvc("b")
    body["metadata"]["annotations"] = {"a": 1}
    api.create(body)
    body = isvc("c")
    body["metadata"]["finalizers"] = "x"
    api.create(body)
    body = isvc("d")
    body["metadata"]["ownerReferences"] = {"name": "x"}
    api.create(body)
