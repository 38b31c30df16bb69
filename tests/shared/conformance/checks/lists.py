"""Lists: label selectors in the API's syntax (equality, inequality, sets, existence, several
terms, malformed ones), field selectors, empty namespaces, order, and the shape of a list.

Most checks record only the names listed, in the order the server answers them: what a selector
selects is the point, and the shape of list items is checked once, on its own.
"""

from __future__ import annotations

from ..objects import configmap, isvc
from ..recorder import Api
from ..registry import check


def _labelled(api: Api) -> None:
    """Four ConfigMaps: app=a tier=web, app=b tier=db, app=c, and one without labels."""
    api.create(configmap("cm-a", labels={"app": "a", "tier": "web"}), keep=())
    api.create(configmap("cm-b", labels={"app": "b", "tier": "db"}), keep=())
    api.create(configmap("cm-c", labels={"app": "c"}), keep=())
    api.create(configmap("cm-none"), keep=())


@check("list/label-equality")
def list_equality(api: Api) -> None:
    _labelled(api)
    api.names("ConfigMap", selector="app=a")
    api.names("ConfigMap", selector="app==b")
    api.names("ConfigMap", selector="app=zzz")


@check("list/label-inequality-includes-unlabelled")
def list_inequality(api: Api) -> None:
    _labelled(api)
    api.names("ConfigMap", selector="app!=a")


@check("list/label-set-in")
def list_in(api: Api) -> None:
    _labelled(api)
    api.names("ConfigMap", selector="app in (a, c)")


@check("list/label-set-notin-includes-unlabelled")
def list_notin(api: Api) -> None:
    _labelled(api)
    api.names("ConfigMap", selector="app notin (a,b)")


@check("list/label-exists")
def list_exists(api: Api) -> None:
    _labelled(api)
    api.names("ConfigMap", selector="tier")


@check("list/label-does-not-exist")
def list_not_exists(api: Api) -> None:
    _labelled(api)
    api.names("ConfigMap", selector="!tier")


@check("list/label-several-terms-all-hold")
def list_several(api: Api) -> None:
    _labelled(api)
    api.names("ConfigMap", selector="app,tier!=db")
    api.names("ConfigMap", selector="app in (a,b,c),!tier")
    api.names("ConfigMap", selector="app=a,app=b")


@check("list/label-empty-value")
def list_empty_value(api: Api) -> None:
    api.create(configmap("blank", labels={"app": ""}), keep=())
    api.create(configmap("full", labels={"app": "x"}), keep=())
    api.names("ConfigMap", selector="app=")
    api.names("ConfigMap", selector="app!=")


@check("list/label-set-edge-cases")
def list_set_edges(api: Api) -> None:
    api.create(configmap("blank", labels={"app": ""}), keep=())
    api.create(configmap("a", labels={"app": "a", "example.com/team": "x"}), keep=())
    api.create(configmap("none"), keep=())
    for selector in ("app in ()", "app notin ()", "app in (a,)", "app in ( a , b )", "example.com/team=x", "!app,app"):
        api.names("ConfigMap", selector=selector)


@check("list/label-invalid-selectors-are-400")
def list_invalid(api: Api) -> None:
    for selector in ("app in (a", "app in ()", "a b", "=a", "app=a,", "!app=a", "app=-x", "bad key=1", "app>x"):
        api.names("ConfigMap", selector=selector)


@check("list/label-numeric-comparison")
def list_numeric(api: Api) -> None:
    for n in ("1", "5", "10"):
        api.create(configmap(f"n-{n}", labels={"n": n}), keep=())
    api.create(configmap("n-word", labels={"n": "many"}), keep=())
    api.names("ConfigMap", selector="n>4")
    api.names("ConfigMap", selector="n<5")


@check("list/field-selector-metadata-name")
def list_field_name(api: Api) -> None:
    _labelled(api)
    api.names("ConfigMap", fields="metadata.name=cm-b")
    api.names("ConfigMap", fields="metadata.name!=cm-b")
    api.names("ConfigMap", fields=f"metadata.namespace={api.ns},metadata.name==cm-c")


@check("list/field-selector-unknown-field-is-400")
def list_field_unknown(api: Api) -> None:
    api.names("ConfigMap", fields="data.k=v")
    api.names("ConfigMap", fields="metadata.labels=x")


@check("list/empty-namespace-has-no-items")
def list_empty(api: Api) -> None:
    api.list("Secret", keep=("kind", "apiVersion", "items"))


@check("list/order-is-by-name")
def list_order(api: Api) -> None:
    for name in ("c", "a", "b10", "b2", "B-not-valid"):
        api.create(configmap(name), keep=())
    api.names("ConfigMap")


@check("list/custom-resource-items-carry-kind-and-api-version")
def list_shape(api: Api) -> None:
    api.create(isvc("shape", finalizers=[]), keep=())
    listed = api.list("InferenceService", keep=("kind", "apiVersion"))
    api.note("items' kinds", [item.get("kind") for item in listed.get("items", [])])
    api.note("items' apiVersions", [item.get("apiVersion") for item in listed.get("items", [])])
    api.patch("InferenceService", "shape", {"metadata": {"finalizers": None}}, keep=())
    api.delete("InferenceService", "shape")
