"""The failures of the generic verbs: missing objects (404), bodies that disagree with the URL
(400), malformed patches (400), changes to identity (400 or 422), writes to deleted objects.

Only the status code, the reason and (for 422) the fields named are compared: the wording of a
message is the server's own.
"""

from __future__ import annotations

from ..objects import configmap, isvc, owner_ref, secret
from ..recorder import Api
from ..registry import check


@check("errors/update-of-a-missing-object-is-404")
def update_missing(api: Api) -> None:
    api.update(configmap("missing", {"k": "v"}))


@check("errors/update-of-a-missing-object-with-resource-version-is-404")
def update_missing_rv(api: Api) -> None:
    api.update(configmap("missing", {"k": "v"}, resourceVersion="1"))


@check("errors/patch-of-a-missing-object-is-404")
def patch_missing(api: Api) -> None:
    api.patch("ConfigMap", "missing", {"data": {"k": "v"}})


@check("errors/delete-of-a-missing-object-is-404")
def delete_missing(api: Api) -> None:
    api.delete("ConfigMap", "missing")


@check("errors/status-write-of-a-missing-object-is-404")
def status_missing(api: Api) -> None:
    body = isvc("missing")
    api.update({**body, "status": {"observedGeneration": 1}}, subresource="status")
    api.patch("InferenceService", "missing", {"status": {"observedGeneration": 1}}, subresource="status")


@check("errors/create-of-another-kind-than-the-url-is-400")
def create_wrong_kind(api: Api) -> None:
    api.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}, url_kind="ConfigMap")
    api.create({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, url_kind="ConfigMap")
    api.create({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "x"}}, url_kind="ConfigMap")
    api.get("ConfigMap", "x")


@check("errors/create-without-kind-takes-the-url-kind")
def create_no_kind(api: Api) -> None:
    api.create({"metadata": {"name": "x"}, "data": {"k": "v"}}, url_kind="ConfigMap")


@check("errors/create-in-another-namespace-than-the-url-is-400")
def create_wrong_namespace(api: Api) -> None:
    api.create(configmap("x", namespace="default"), url_namespace=api.ns)


@check("errors/update-naming-another-object-than-the-url-is-400")
def update_wrong_name(api: Api) -> None:
    first = api.create(configmap("x", {"k": "1"}))
    api.update({**first, "metadata": {**first["metadata"], "name": "y"}}, url_name="x")
    api.update({**first, "metadata": {**first["metadata"], "namespace": "default"}}, url_namespace=api.ns)
    api.get("ConfigMap", "x", keep=("data", "metadata.resourceVersion"))


@check("errors/merge-patch-that-is-no-object-is-400")
def patch_malformed(api: Api) -> None:
    api.create(configmap("x", {"k": "1"}))
    api.patch("ConfigMap", "x", [{"op": "add", "path": "/data/k", "value": "2"}])
    api.patch("ConfigMap", "x", "data")
    api.patch("ConfigMap", "x", None)
    api.get("ConfigMap", "x", keep=("data", "metadata.resourceVersion"))


@check("errors/patch-of-name-or-namespace-is-400")
def patch_identity(api: Api) -> None:
    api.create(configmap("x"))
    api.patch("ConfigMap", "x", {"metadata": {"name": "y"}})
    api.patch("ConfigMap", "x", {"metadata": {"namespace": "default"}})


@check("errors/patch-of-uid-is-422")
def patch_uid(api: Api) -> None:
    api.create(configmap("x"))
    api.patch("ConfigMap", "x", {"metadata": {"uid": "3a1f5b2e-0000-4000-8000-000000000001"}})


@check("errors/patch-with-stale-resource-version-is-409")
def patch_stale(api: Api) -> None:
    first = api.create(configmap("x", {"k": "1"}))
    api.patch("ConfigMap", "x", {"data": {"k": "2"}})
    api.patch(
        "ConfigMap", "x", {"data": {"k": "3"}, "metadata": {"resourceVersion": first["metadata"]["resourceVersion"]}}
    )


@check("errors/update-of-a-deleted-object-is-404")
def update_deleted(api: Api) -> None:
    first = api.create(configmap("x", {"k": "1"}))
    api.delete("ConfigMap", "x")
    api.update({**first, "data": {"k": "2"}})
    api.patch("ConfigMap", "x", {"data": {"k": "2"}})


@check("errors/update-with-another-uid-is-409")
def update_other_uid(api: Api) -> None:
    first = api.create(configmap("x", {"k": "1"}))
    meta = {**first["metadata"], "uid": "3a1f5b2e-0000-4000-8000-000000000001"}
    api.update({**first, "metadata": meta, "data": {"k": "2"}})


@check("errors/recreated-object-refuses-the-old-uid")
def update_recreated(api: Api) -> None:
    first = api.create(configmap("x", {"k": "1"}))
    api.delete("ConfigMap", "x")
    api.create(configmap("x", {"k": "new"}))
    meta = {k: v for k, v in first["metadata"].items() if k != "resourceVersion"}
    api.update({**first, "metadata": meta, "data": {"k": "2"}})


@check("errors/delete-twice-is-404")
def delete_twice(api: Api) -> None:
    api.create(configmap("x"))
    api.delete("ConfigMap", "x")
    api.delete("ConfigMap", "x")


@check("errors/delete-with-unknown-propagation-is-422")
def delete_bad_propagation(api: Api) -> None:
    api.create(configmap("x"))
    api.delete("ConfigMap", "x", propagation="Sideways")
    api.get("ConfigMap", "x", keep=("metadata.name",))


@check("errors/update-without-kind-takes-the-url-kind")
def update_no_kind(api: Api) -> None:
    first = api.create(configmap("x", {"k": "1"}))
    body = {k: v for k, v in first.items() if k not in ("kind", "apiVersion")}
    api.update({**body, "kind": "ConfigMap", "data": {"k": "2"}}, keep=("data",))
    api.get("ConfigMap", "x", keep=("kind", "apiVersion", "data"))


@check("errors/get-and-list-in-a-missing-namespace")
def missing_namespace(api: Api) -> None:
    api.get("ConfigMap", "x", namespace=f"{api.ns}-missing")
    api.list("ConfigMap", namespace=f"{api.ns}-missing", keep=("items",))


@check("errors/two-controller-references-is-422")
def two_controllers(api: Api) -> None:
    first = api.create(configmap("first"))
    second = api.create(configmap("second"))
    refs = [owner_ref(first, controller=True), owner_ref(second, controller=True)]
    api.create(configmap("dependent", ownerReferences=refs))


@check("errors/owner-reference-without-uid-or-name-is-422")
def ref_incomplete(api: Api) -> None:
    owner = api.create(configmap("owner"))
    api.create(configmap("no-uid", ownerReferences=[{**owner_ref(owner), "uid": ""}]))
    api.create(configmap("no-name", ownerReferences=[{**owner_ref(owner), "name": ""}]))


@check("errors/create-with-values-of-the-wrong-type-is-400")
def create_wrong_types(api: Api) -> None:
    api.create({**configmap("a"), "data": "text"})
    api.create({**configmap("b"), "data": {"k": 1}})
    api.create({**configmap("c"), "data": {"k": True}})
    api.create({**configmap("d"), "metadata": {"name": "d", "labels": {"a": 1}}})
    api.create({**configmap("e"), "metadata": {"name": "e", "annotations": {"a": 1}}})
    api.create({**configmap("f"), "metadata": {"name": "f", "finalizers": "x"}})
    api.create({**configmap("g"), "metadata": {"name": "g", "finalizers": [1]}})
    api.create({**configmap("h"), "metadata": {"name": "h", "ownerReferences": ["x"]}})
    api.create({**secret("i"), "stringData": {"k": 1}})
    api.create({**configmap("j"), "data": None}, keep=("data",))


@check("errors/patch-to-values-of-the-wrong-type-is-422")
def patch_wrong_types(api: Api) -> None:
    api.create(configmap("x", {"k": "1"}))
    for patch in (
        {"metadata": "x"},
        {"data": "x"},
        {"data": {"k": 1}},
        {"binaryData": {"b": 3}},
        {"metadata": {"labels": "x"}},
        {"metadata": {"labels": {"a": 1}}},
        {"metadata": {"annotations": {"a": False}}},
        {"metadata": {"finalizers": "x"}},
    ):
        api.patch("ConfigMap", "x", patch)
    api.get("ConfigMap", "x", keep=("data", "metadata.resourceVersion"))


@check("errors/patch-of-kind-or-api-version-is-422")
def patch_kind(api: Api) -> None:
    api.create(configmap("x", {"k": "1"}))
    api.patch("ConfigMap", "x", {"kind": "Secret"})
    api.patch("ConfigMap", "x", {"apiVersion": "v2"})
    api.patch("ConfigMap", "x", {"kind": "ConfigMap", "apiVersion": "v1"}, keep=("metadata.resourceVersion",))


@check("errors/null-and-empty-values-in-string-maps")
def null_in_maps(api: Api) -> None:
    meta = {"name": "f", "labels": {"l": None}, "annotations": {"a": None}}
    api.create({**configmap("f"), "data": {"k": None, "j": "1", "e": ""}, "metadata": meta})
    first = api.create(configmap("g", {"k": "1"}), keep=())
    api.update({**first, "data": {"k": None}}, keep=("data",))
    api.create(configmap("empty", {}), keep=("data",))
    api.apply({**configmap("h"), "data": {"x": None, "y": "2"}}, manager="alice")
    api.apply({**configmap("h"), "data": {"y": "2"}}, manager="alice")


@check("errors/field-manager-longer-than-128-is-422")
def long_field_manager(api: Api) -> None:
    long = "m" * 129
    api.create(configmap("a"), fieldManager=long)
    first = api.create(configmap("b"), fieldManager="m" * 128, keep=("metadata.managedFields",))
    api.update({**first, "data": {"k": "1"}}, fieldManager=long)
    api.patch("ConfigMap", "b", {"data": {"k": "2"}}, fieldManager=long)
    api.apply(configmap("b", {"k": "3"}), manager=long)
