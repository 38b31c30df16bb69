"""Server-side apply: creation, managedFields, fields a manager stops applying, shared fields,
conflicts and force, preconditions, list-map items, atomic lists and maps, malformed applies.

The recorder keeps an apply conflict's message (it names the fields and their managers: that is
what a client reads), and the whole answer otherwise, managedFields included.
"""

from __future__ import annotations

from typing import Any

from ..objects import configmap, deployment, isvc, service
from ..recorder import Api
from ..registry import check

Obj = dict[str, Any]
SERVICE_KEEP = ("spec.ports", "spec.selector", "metadata.managedFields")


def _svc(name: str, *, ports: list[int] | None = None, selector: dict[str, str] | None = None) -> Obj:
    spec: Obj = {}
    if ports is not None:
        spec["ports"] = [{"name": f"p{port}", "port": port} for port in ports]
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


@check("apply/create-is-201-with-an-apply-entry")
def apply_create(api: Api) -> None:
    api.apply(configmap("a", {"x": "1"}, labels={"app": "a"}), manager="alice")
    api.get("ConfigMap", "a")


@check("apply/two-managers-two-entries")
def apply_two_managers(api: Api) -> None:
    api.apply(configmap("a", {"x": "1"}), manager="alice")
    api.apply(configmap("a", {"y": "2"}), manager="bob")


@check("apply/field-no-longer-applied-is-removed")
def apply_prune(api: Api) -> None:
    api.apply(configmap("a", {"x": "1", "y": "2"}, labels={"keep": "1", "drop": "1"}), manager="alice")
    api.apply(configmap("a", {"x": "1"}, labels={"keep": "1"}), manager="alice")


@check("apply/field-shared-with-another-manager-stays")
def apply_shared(api: Api) -> None:
    api.apply(configmap("a", {"x": "1", "y": "2"}), manager="alice")
    api.apply(configmap("a", {"x": "1"}), manager="bob")
    api.apply(configmap("a", {"y": "2"}), manager="alice")


@check("apply/conflict-is-409-naming-the-fields")
def apply_conflict(api: Api) -> None:
    api.apply(configmap("a", {"x": "1", "y": "1"}, labels={"app": "a"}), manager="alice")
    api.apply(configmap("a", {"x": "2"}), manager="bob")
    api.apply(configmap("a", {"x": "2", "y": "2"}, labels={"app": "b"}), manager="bob")
    api.get("ConfigMap", "a", keep=("data", "metadata.labels"))


@check("apply/force-takes-ownership")
def apply_force(api: Api) -> None:
    api.apply(configmap("a", {"x": "1", "y": "1"}), manager="alice")
    api.apply(configmap("a", {"x": "2"}), manager="bob", force=True)
    api.apply(configmap("a", {"y": "1"}), manager="alice")


@check("apply/conflict-with-an-update-manager")
def apply_conflict_update(api: Api) -> None:
    api.create(configmap("a", {"x": "1"}))
    api.apply(configmap("a", {"x": "2"}), manager="alice")
    api.apply(configmap("a", {"x": "1", "y": "1"}), manager="alice")


@check("apply/same-value-as-an-update-manager-is-shared")
def apply_same_as_update(api: Api) -> None:
    api.create(configmap("a", {"x": "1"}))
    api.apply(configmap("a", {"x": "1"}), manager="alice")
    api.update({**api.get("ConfigMap", "a", keep=()), "data": {"x": "1", "z": "3"}})


@check("apply/stale-resource-version-is-409")
def apply_stale(api: Api) -> None:
    first = api.apply(configmap("a", {"x": "1"}), manager="alice")
    api.apply(configmap("a", {"x": "2"}), manager="alice")
    stale = configmap("a", {"x": "3"}, resourceVersion=first["metadata"]["resourceVersion"])
    api.apply(stale, manager="alice")


@check("apply/current-resource-version-is-accepted")
def apply_current_rv(api: Api) -> None:
    first = api.apply(configmap("a", {"x": "1"}), manager="alice")
    api.apply(configmap("a", {"x": "2"}, resourceVersion=first["metadata"]["resourceVersion"]), manager="alice")


@check("apply/resource-version-on-a-missing-object-creates-it")
def apply_rv_missing(api: Api) -> None:
    api.apply(configmap("a", {"x": "1"}, resourceVersion="12345"), manager="alice")


@check("apply/without-field-manager-is-422")
def apply_no_manager(api: Api) -> None:
    api.apply(configmap("a", {"x": "1"}), manager="")


@check("apply/without-kind-or-api-version-is-400")
def apply_no_kind(api: Api) -> None:
    body = configmap("a", {"x": "1"})
    api.apply({k: v for k, v in body.items() if k != "kind"}, manager="alice", url_kind="ConfigMap")
    api.apply({k: v for k, v in body.items() if k != "apiVersion"}, manager="alice")
    api.apply({**body, "kind": "Secret"}, manager="alice", url_kind="ConfigMap")
    api.get("ConfigMap", "a")


@check("apply/name-disagreeing-with-url-is-400")
def apply_name_mismatch(api: Api) -> None:
    api.apply(configmap("a", {"x": "1"}), manager="alice", url_name="b")
    api.apply(configmap("", {"x": "1"}), manager="alice", url_name="c")


@check("apply/that-changes-nothing-keeps-resource-version")
def apply_noop(api: Api) -> None:
    api.apply(configmap("a", {"x": "1"}), manager="alice")
    api.apply(configmap("a", {"x": "1"}), manager="alice")
    api.apply(configmap("a", {"x": "1"}), manager="bob")


@check("apply/with-managed-fields-is-400")
def apply_managed_fields(api: Api) -> None:
    api.apply(configmap("a", {"x": "1"}, managedFields=[]), manager="alice")


@check("apply/list-map-items-merged-by-key")
def apply_list_map(api: Api) -> None:
    api.apply(_svc("s", ports=[80], selector={"app": "s"}), manager="alice", keep=SERVICE_KEEP)
    api.apply(_svc("s", ports=[81]), manager="bob", keep=SERVICE_KEEP)
    api.apply(_svc("s", ports=[80, 82], selector={"app": "s"}), manager="alice", keep=SERVICE_KEEP)
    api.apply(_svc("s", selector={"app": "s"}), manager="alice", keep=SERVICE_KEEP)


@check("apply/atomic-map-replaced-whole")
def apply_atomic(api: Api) -> None:
    api.apply(_svc("s", ports=[80], selector={"app": "s", "tier": "web"}), manager="alice", keep=SERVICE_KEEP)
    api.apply(_svc("s", selector={"app": "t"}), manager="bob", keep=SERVICE_KEEP)
    api.apply(_svc("s", selector={"app": "t"}), manager="bob", force=True, keep=SERVICE_KEEP)


@check("apply/granular-labels-merged-across-managers")
def apply_labels(api: Api) -> None:
    api.apply(configmap("a", labels={"one": "1"}), manager="alice")
    api.apply(configmap("a", labels={"two": "2"}), manager="bob")
    api.apply(configmap("a"), manager="alice")


@check("apply/after-an-update-keeps-the-update-entry")
def apply_after_update(api: Api) -> None:
    api.create(configmap("a", {"x": "1"}, labels={"made": "by-create"}))
    api.apply(configmap("a", {"y": "2"}), manager="alice")
    api.apply(configmap("a", {"z": "3"}), manager="alice")


@check("apply/an-update-takes-a-field-from-its-applier")
def apply_then_update(api: Api) -> None:
    applied = api.apply(configmap("a", {"x": "1", "y": "1"}), manager="alice")
    api.update({**applied, "data": {"x": "2", "y": "1"}}, keep=("metadata.managedFields",))
    api.apply(configmap("a", {"x": "1", "y": "1"}), manager="alice")
    api.apply(configmap("a", {"y": "1"}), manager="alice")


@check("apply/list-map-item-shared-by-two-appliers")
def apply_list_item_shared(api: Api) -> None:
    api.apply(_svc("s", ports=[80, 81], selector={"app": "s"}), manager="alice", keep=SERVICE_KEEP)
    api.apply(_svc("s", ports=[81]), manager="bob", keep=SERVICE_KEEP)
    api.apply(_svc("s", ports=[80], selector={"app": "s"}), manager="alice", keep=SERVICE_KEEP)
    api.apply(_svc("s", ports=[]), manager="bob", keep=SERVICE_KEEP)


@check("apply/to-a-terminating-object")
def apply_terminating(api: Api) -> None:
    api.apply(configmap("a", {"x": "1"}, finalizers=["conformance.example/hold"]), manager="alice")
    api.delete("ConfigMap", "a")
    api.apply(configmap("a", {"x": "2"}, finalizers=["conformance.example/hold"]), manager="alice")
    api.apply(configmap("a", {"x": "2"}), manager="alice", keep=("data",))
    api.wait_gone("ConfigMap", "a")


@check("apply/metadata-labels-and-annotations-removed-when-no-longer-applied")
def apply_metadata_prune(api: Api) -> None:
    api.apply(configmap("a", labels={"l": "1"}, annotations={"n": "1"}), manager="alice")
    api.apply(configmap("a"), manager="alice")


@check("apply/custom-resource-atomic-list-and-granular-map")
def apply_custom_resource(api: Api) -> None:
    keep = ("spec.args", "spec.nodeSelector", "metadata.managedFields")
    api.apply(isvc("m", args=["--a", "--b"], nodeSelector={"pool": "gpu"}), manager="alice", keep=keep)
    api.apply(isvc("m", args=["--c"], nodeSelector={"zone": "z1"}), manager="bob", keep=keep)
    api.apply(isvc("m", args=["--c"], nodeSelector={"zone": "z1"}), manager="bob", force=True, keep=keep)
    api.apply(isvc("m"), manager="alice", keep=keep)
    api.patch("InferenceService", "m", {"metadata": {"finalizers": None}}, keep=())
    api.delete("InferenceService", "m")


@check("apply/duplicate-list-map-keys-is-500")
def apply_duplicate_keys(api: Api) -> None:
    api.apply(_svc("s", ports=[80, 80]), manager="alice")
    api.get("Service", "s", keep=("metadata.name",))


@check("apply/deployment-replicas-handed-over-to-an-updater")
def apply_replicas_handover(api: Api) -> None:
    keep = ("spec.replicas", "metadata.managedFields")
    api.apply(deployment("d", replicas=2), manager="alice", keep=keep)
    api.patch("Deployment", "d", {"spec": {"replicas": 3}}, keep=keep)
    without = deployment("d")
    del without["spec"]["replicas"]
    api.apply(without, manager="alice", keep=keep)
    api.apply(deployment("d", replicas=5), manager="alice", keep=keep)


@check("apply/deployment-container-env-items-by-name")
def apply_env(api: Api) -> None:
    keep = ("spec.template.spec.containers", "metadata.managedFields")
    first = deployment("d")
    first["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
    ]
    api.apply(first, manager="alice", keep=keep)
    second = deployment("d")
    second["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "B", "value": "3"}]
    api.apply(second, manager="bob", keep=keep)
    api.apply(second, manager="bob", force=True, keep=keep)


@check("apply/service-ports-changed-in-place")
def apply_service(api: Api) -> None:
    api.apply(service("s"), manager="alice")
    changed = {"selector": {"app": "s"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
    api.apply({**service("s"), "spec": changed}, manager="alice")


@check("apply/after-managed-fields-are-reset-before-first-apply-owns-everything")
def apply_after_reset(api: Api) -> None:
    api.apply(configmap("a", {"x": "1"}), manager="alice")
    current = api.get("ConfigMap", "a", keep=())
    reset = {**current, "metadata": {**current["metadata"], "managedFields": [{}]}}
    api.update(reset, keep=("metadata.managedFields", "metadata.resourceVersion"))
    api.apply(configmap("a", {"x": "2"}), manager="alice")
    api.apply(configmap("a", {"x": "2"}), manager="alice", force=True, keep=("metadata.managedFields",))
