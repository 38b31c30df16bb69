"""Namespaces: what a new one looks like, where objects may be created, and what deleting one does.

A real namespace is an object with server-set fields (``spec.finalizers``, ``status.phase``, the
``kubernetes.io/metadata.name`` label), guarded by the ``NamespaceLifecycle`` admission plugin (no
content in a namespace that is missing or terminating, the built-in ones cannot be deleted) and
emptied by the namespace controller when deleted. The real controller works asynchronously, so
the checks wait for its outcome (``wait_gone``) and record only what it does not race with.

Extra namespaces are named after the check's own (``<ns>-b``) and deleted before the check ends;
nothing here deletes a namespace it did not create: the built-in ones are only asked to be
deleted as a dry run.
"""

from __future__ import annotations

from ..objects import configmap, deployment, secret, service
from ..recorder import Api
from ..registry import check

Obj = dict[str, object]
NAMESPACE_FIELDS = ["metadata.name", "metadata.labels", "metadata.namespace", "spec", "status"]
CONTROLLER_TIMEOUT = 600.0
"""How long the real namespace controller gets: seconds usually, minutes on a cluster where many
namespaces are stuck terminating. Each check waits for it once, for the namespace to go; what was
in the namespace is then asked for plainly."""


def namespace(name: str, **metadata: object) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, **metadata}}


@check("namespaces/new-namespace-server-fields")
def new_namespace(api: Api) -> None:
    name = f"{api.ns}-b"
    api.create(namespace(name))
    api.get("Namespace", name, keep=NAMESPACE_FIELDS)
    api.delete("Namespace", name)


@check("namespaces/metadata-name-label-follows-the-name")
def name_label_on_create(api: Api) -> None:
    name = f"{api.ns}-b"
    api.create(namespace(name, labels={"kubernetes.io/metadata.name": "other", "team": "a"}), keep=NAMESPACE_FIELDS)
    api.delete("Namespace", name)


@check("namespaces/metadata-name-label-cannot-be-changed")
def name_label_on_update(api: Api) -> None:
    name = f"{api.ns}-b"
    made = api.create(namespace(name))
    labels = {"kubernetes.io/metadata.name": "changed", "team": "a"}
    api.update({**made, "metadata": {**made["metadata"], "labels": labels}}, keep=["metadata.labels"])
    api.patch("Namespace", name, {"metadata": {"labels": {"kubernetes.io/metadata.name": None}}}, keep=NAMESPACE_FIELDS)
    api.delete("Namespace", name)


@check("namespaces/spec-and-status-are-server-owned")
def server_owned(api: Api) -> None:
    name = f"{api.ns}-b"
    made = api.create(
        {**namespace(name), "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating"}},
        keep=NAMESPACE_FIELDS,
    )
    api.update({**made, "spec": {"finalizers": []}, "status": {"phase": "Terminating"}}, keep=NAMESPACE_FIELDS)
    api.patch("Namespace", name, {"spec": {"finalizers": None}}, keep=["spec", "status"])
    api.delete("Namespace", name)


@check("namespaces/generate-name-names-the-label-too")
def generated_namespace(api: Api) -> None:
    made = api.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": f"{api.ns}-g-"}},
        keep=[*NAMESPACE_FIELDS, "metadata.generateName"],
    )
    name = made["metadata"]["name"]
    api.note("the generated name has 5 more characters", len(name) - len(f"{api.ns}-g-"))
    api.delete("Namespace", name)


@check("namespaces/built-in-namespaces-exist")
def built_in(api: Api) -> None:
    for name in ("default", "kube-node-lease", "kube-public", "kube-system"):
        api.get("Namespace", name, keep=NAMESPACE_FIELDS)


@check("namespaces/built-in-namespaces-may-not-be-deleted")
def immortal(api: Api) -> None:
    for name in ("default", "kube-public", "kube-system"):
        api.delete("Namespace", name, dryRun="All")
    api.get("Namespace", "default", keep=["metadata.deletionTimestamp", "status"])


@check("namespaces/create-in-missing-namespace-is-404")
def create_missing(api: Api) -> None:
    missing = f"{api.ns}-missing"
    api.create(configmap("a", namespace=missing))
    api.create(service("web", namespace=missing))
    api.create(configmap("", namespace=missing, generateName="gen-"))
    api.get("Namespace", missing)


@check("namespaces/missing-namespace-comes-before-an-invalid-name")
def missing_before_invalid(api: Api) -> None:
    api.create(configmap("Bad_Name", namespace=f"{api.ns}-missing"))
    api.create(configmap("Bad_Name"))


@check("namespaces/apply-in-missing-namespace-is-404")
def apply_missing(api: Api) -> None:
    api.apply(configmap("a", {"k": "v"}, namespace=f"{api.ns}-missing"), manager="checker")


@check("namespaces/reads-in-missing-namespace")
def reads_missing(api: Api) -> None:
    missing = f"{api.ns}-missing"
    api.get("ConfigMap", "a", namespace=missing)
    api.list("ConfigMap", namespace=missing, keep=["items"])


@check("namespaces/delete-answers-the-namespace-terminating")
def delete_answer(api: Api) -> None:
    name = f"{api.ns}-b"
    api.create(namespace(name))
    api.delete("Namespace", name, keep=[*NAMESPACE_FIELDS, "metadata.deletionTimestamp"])


@check("namespaces/delete-removes-the-content")
def delete_content(api: Api) -> None:
    name = f"{api.ns}-b"
    api.create(namespace(name), keep=["metadata.name"])
    api.create(configmap("cm", {"k": "v"}, namespace=name), keep=["metadata.namespace"])
    api.create(secret("sec", {"k": "v"}, namespace=name), keep=["metadata.namespace"])
    api.create(service("svc", namespace=name), keep=["metadata.namespace"])
    api.create(deployment("web", namespace=name), keep=["metadata.namespace"])
    api.delete("Namespace", name)
    api.wait_gone("Namespace", name, timeout=CONTROLLER_TIMEOUT)
    for kind, obj in (("ConfigMap", "cm"), ("Secret", "sec"), ("Service", "svc"), ("Deployment", "web")):
        api.get(kind, obj, namespace=name)


@check("namespaces/terminating-namespace-refuses-new-content-until-empty")
def terminating(api: Api) -> None:
    name = f"{api.ns}-b"
    api.create(namespace(name), keep=["metadata.name"])
    api.create(configmap("held", {"k": "1"}, namespace=name, finalizers=["example.com/hold"]), keep=["data"])
    api.delete("Namespace", name, keep=["status"])
    api.create(configmap("new", namespace=name))
    api.create(configmap("", namespace=name, generateName="new-"))
    api.patch("ConfigMap", "held", {"data": {"k": "2"}}, keep=["data"], namespace=name)
    api.get("Namespace", name, keep=["status.phase", "spec"])
    api.delete("Namespace", name, keep=["status.phase"])
    api.patch("ConfigMap", "held", {"metadata": {"finalizers": None}}, keep=["data"], namespace=name)
    api.wait_gone("Namespace", name, timeout=CONTROLLER_TIMEOUT)
    api.get("ConfigMap", "held", namespace=name)


@check("namespaces/deleted-namespace-can-be-created-again")
def recreate(api: Api) -> None:
    name = f"{api.ns}-b"
    api.create(namespace(name), keep=["metadata.uid"])
    api.delete("Namespace", name)
    api.wait_gone("Namespace", name, timeout=CONTROLLER_TIMEOUT)
    api.create(namespace(name), keep=["metadata.uid", "status"])
    api.delete("Namespace", name)


@check("namespaces/missing-and-duplicate-namespace")
def missing_duplicate(api: Api) -> None:
    api.delete("Namespace", f"{api.ns}-missing")
    api.create(namespace(api.ns))
