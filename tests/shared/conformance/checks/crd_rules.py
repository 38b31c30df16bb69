"""The InferenceService CRD's CEL rules (``x-kubernetes-validations``) on every write: each rule
of the CRD broken and kept, through create, update, merge patch and apply; the name rule on
create and its ``optionalOldSelf`` behaviour on later writes; CEL not run after a blocking error.
"""

from __future__ import annotations

from typing import Any

from ..objects import isvc, widget_crd
from ..recorder import Api
from ..registry import check
from ..transports import Request

KIND = "InferenceService"
SPEC = ["spec"]


@check("crd/cel-env-names-unique")
def env_unique(api: Api) -> None:
    api.create(isvc("a", env=[{"name": "A", "value": "1"}, {"name": "B"}, {"name": "A", "value": "2"}]))
    api.create(isvc("b", env=[{"name": "A", "value": "1"}, {"name": "a", "value": "2"}]), keep=["spec.env"])


@check("crd/cel-env-value-xor-value-from")
def env_value_xor(api: Api) -> None:
    ref = {"secretKeyRef": {"name": "s", "key": "k"}}
    api.create(isvc("a", env=[{"name": "A", "value": "x", "valueFrom": ref}]))
    api.create(isvc("b", env=[{"name": "A", "value": "", "valueFrom": ref}]))
    api.create(isvc("c", env=[{"name": "A", "valueFrom": ref}, {"name": "B", "value": "x"}]), keep=["spec.env"])


@check("crd/cel-secret-key-ref-xor-config-map-key-ref")
def env_ref_xor(api: Api) -> None:
    both = {"secretKeyRef": {"name": "s", "key": "k"}, "configMapKeyRef": {"name": "c", "key": "k"}}
    api.create(isvc("a", env=[{"name": "A", "valueFrom": both}]))
    api.create(isvc("b", env=[{"name": "A", "valueFrom": {}}]))
    api.create(isvc("c", env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}]), keep=SPEC)


@check("crd/cel-args-must-not-set-model-or-port")
def args_rule(api: Api) -> None:
    for name, args in (("a", ["--model"]), ("b", ["--x", "--model=m"]), ("c", ["--port", "80"]), ("d", ["--port=8"])):
        api.create(isvc(name, args=args))
    api.create(isvc("e", args=["--models", "--portal", "-port", "x--model"]), keep=["spec.args"])


@check("crd/cel-toleration-exists-with-value")
def toleration_rule(api: Api) -> None:
    api.create(isvc("a", tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]))
    api.create(
        isvc("b", tolerations=[{"key": "k", "operator": "Exists", "value": ""}, {"key": "j", "value": "v"}]), keep=SPEC
    )


@check("crd/cel-toleration-key-and-seconds")
def toleration_key_and_seconds(api: Api) -> None:
    api.create(isvc("a", tolerations=[{"value": "v"}]))
    api.create(isvc("b", tolerations=[{"operator": "Equal", "effect": "NoSchedule"}]))
    api.create(isvc("c", tolerations=[{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 30}]))
    api.create(isvc("d", tolerations=[{"key": "k", "tolerationSeconds": 30}]))
    api.create(
        isvc("e", tolerations=[{"operator": "Exists"}, {"key": "k", "effect": "NoExecute", "tolerationSeconds": 30}]),
        keep=SPEC,
    )


@check("crd/cel-name-rule-on-create")
def name_rule_create(api: Api) -> None:
    api.create(isvc("with.dot"))
    api.create(isvc("a" * 64))
    api.create(isvc("a" * 63), keep=["metadata.name"])


@check("crd/cel-name-rule-does-not-block-writes-to-an-existing-object")
def name_rule_update(api: Api) -> None:
    first = api.create(isvc("a"))
    second = api.update({**first, "spec": {**first["spec"], "replicas": 2}}, keep=["metadata.generation"])
    api.update({**second, "status": {"phase": "Pending"}}, subresource="status", keep=["status"])
    api.patch(KIND, "a", {"metadata": {"labels": {"x": "y"}}}, keep=["metadata.labels"])


@check("crd/cel-rules-on-update-patch-and-apply")
def rules_on_every_verb(api: Api) -> None:
    first = api.create(isvc("a"))
    api.update({**first, "spec": {**first["spec"], "args": ["--port=1"]}})
    api.patch(KIND, "a", {"spec": {"env": [{"name": "A"}, {"name": "A"}]}})
    api.apply(isvc("a", tolerations=[{"operator": "Exists", "value": "x"}]), manager="applier")
    api.get(KIND, "a", keep=SPEC)


@check("crd/cel-not-run-after-a-blocking-error")
def cel_after_blocking(api: Api) -> None:
    api.create(isvc("a", image=None, env=[{"name": "A"}, {"name": "A"}]))
    api.create(isvc("b", model="m" * 600, args=["--model=x"]))
    api.create(isvc("c", replicas="x", tolerations=[{"operator": "Exists", "value": "v"}]))


@check("crd/cel-run-alongside-non-blocking-errors")
def cel_with_non_blocking(api: Api) -> None:
    api.create(isvc("a", replicas=-1, healthPath="x", env=[{"name": "A"}, {"name": "A"}], args=["--port"]))


@check("crd/cel-every-rule-broken-at-once")
def every_rule(api: Api) -> None:
    env = [
        {"name": "A", "value": "x", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        {"name": "A", "valueFrom": {}},
    ]
    api.create(isvc("x.y", args=["--model", "m"], env=env, tolerations=[{"operator": "Exists", "value": "v"}]))


@check("crd/a-bad-name-is-reported-with-the-schema-errors")
def bad_name_with_schema_errors(api: Api) -> None:
    api.create(isvc("Bad_Name", image=None))
    api.create(isvc("Bad_Name", env=[{"name": "A"}, {"name": "A"}]))
    api.create(isvc("bad_name", replicas=-1))


@check("crd/cel-rollout-rules")
def rollout_rules(api: Api) -> None:
    for name, rollout in (
        ("a", {"strategy": "Replace", "maxUnavailable": 0}),
        ("b", {"strategy": "Replace", "maxUnavailable": "0%"}),
        ("c", {"strategy": "Auto", "maxSurge": 1}),
        ("d", {"strategy": "Surge", "maxSurge": "0%", "maxUnavailable": 0}),
        ("e", {"strategy": "Surge", "maxUnavailable": "150%"}),
        ("f", {"strategy": "Surge", "maxSurge": "lots"}),
    ):
        api.create(isvc(name, rollout=rollout))
    api.create(isvc("g", rollout={"strategy": "Surge", "maxSurge": 2, "maxUnavailable": "100%"}), keep=SPEC)
    api.create(isvc("h", rollout={"strategy": "Auto", "maxUnavailable": 0}), keep=SPEC)
    api.create(isvc("i", rollout={}), keep=SPEC)


@check("crd/cel-requests-within-limits")
def requests_within_limits(api: Api) -> None:
    api.create(isvc("a", resources={"requests": {"cpu": "2"}, "limits": {"cpu": 1}}))
    api.create(isvc("b", resources={"requests": {"memory": "1025Mi"}, "limits": {"memory": "1Gi"}}))
    api.create(
        isvc("c", resources={"requests": {"cpu": "1500m", "memory": 3}, "limits": {"cpu": "1.5", "memory": "3"}}),
        keep=SPEC,
    )
    api.create(isvc("d", resources={"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}), keep=SPEC)
    # ``ephemeral-storage`` is ``ephemeral__dash__storage`` in CEL: the escaped property name.
    api.create(isvc("e", resources={"requests": {"ephemeral-storage": "2Gi"}, "limits": {"ephemeral-storage": "1Gi"}}))
    api.create(
        isvc("f", resources={"requests": {"ephemeral-storage": "1Gi"}, "limits": {"ephemeral-storage": "1Gi"}}),
        keep=SPEC,
    )


# --- the rules of a CRD being written ------------------------------------------------------------


def _widget_crd(group: str, *rules: str) -> dict[str, Any]:
    """A CRD of kind Widget in ``group``, its spec carrying ``rules`` (cluster-scoped: the group
    names the check's namespace, so runs never meet)."""
    spec_schema = {
        "type": "object",
        "properties": {"size": {"type": "integer"}, "name": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": rule} for rule in rules],
    }
    return widget_crd(group, spec_schema)


@check("crd/a-rule-that-does-not-compile-refuses-the-crd")
def rule_compiled_on_crd_write(api: Api) -> None:
    group = f"{api.ns}.example.com"
    api.create(_widget_crd(group, "self.size > 0", "self.size =="))  # a syntax error: refused, named
    api.create(_widget_crd(group, "  "))  # no rule at all: refused as a missing value
    # A missing rule is a schema error: the rules beside and above it are not compiled.
    api.create(_widget_crd(group, "  ", "self.size =="))
    nested = _widget_crd(group, "self.size ==")
    spec_schema = nested["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["properties"]["size"]["x-kubernetes-validations"] = [{"rule": ""}]
    api.create(nested)
    # Nesting past the parser's recursion limit does not compile.
    api.create(_widget_crd(group, "(" * 1000 + "true" + ")" * 1000))
    # A rule that does not compile is no schema error: the one above it is compiled too.
    spec_schema["properties"]["size"]["x-kubernetes-validations"] = [{"rule": "self >"}]
    api.create(nested)
    # Two versions with different schemas: the rule is named under its own version.
    two = _widget_crd(group, "self.size > 0")
    second = {**two["spec"]["versions"][0], "name": "v2", "storage": False}
    second["schema"] = _widget_crd(group, "self.size > 0", "self.name ==")["spec"]["versions"][0]["schema"]
    two["spec"]["versions"].append(second)
    api.create(two)
    api.create(_widget_crd(group, "self.size > 0", "self.name.startsWith('w')"), keep=())
    broken = _widget_crd(group, "self.size > 0", "self.name.startsWith(")
    # A merge patch (no resourceVersion: the CRD's controller writes its status meanwhile)
    # that breaks a rule: refused, and the stored CRD keeps its rules.
    api.patch("CustomResourceDefinition", f"widgets.{group}", {"spec": broken["spec"]}, keep=())
    api.get("CustomResourceDefinition", f"widgets.{group}", keep=["spec.versions"])
    # Clean-up, not compared: the real server answers a CRD's delete with the CRD (its clean-up
    # finalizer then removes the kind's objects), which the fake does not model.
    api.transport.request(Request("delete", "CustomResourceDefinition", name=f"widgets.{group}"))
