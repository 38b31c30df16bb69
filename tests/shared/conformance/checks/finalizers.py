"""Finalizers and deletion: what a DELETE answers per kind, how an object with finalizers is marked
(deletionTimestamp, grace period, generation), what a second delete does, which writes a
terminating object still takes, what the write removing the last finalizer answers, and which
finalizer names are valid."""

from __future__ import annotations

from inference_operator.api.constants import FINALIZER

from ..objects import configmap, deployment, service
from ..recorder import Api
from ..registry import check
from .common import full_isvc

_MARK = [
    "metadata.deletionTimestamp",
    "metadata.deletionGracePeriodSeconds",
    "metadata.generation",
    "metadata.finalizers",
]
_F = "example.com/hold"


@check("finalizers/delete-answers-per-kind")
def delete_answers(api: Api) -> None:
    api.create(configmap("c"))
    api.create(service("s"))
    api.create(deployment("d"))
    for kind, name in (("ConfigMap", "c"), ("Service", "s"), ("Deployment", "d")):
        api.delete(kind, name, keep=None)


@check("finalizers/delete-answers-for-a-custom-resource")
def delete_answers_isvc(api: Api) -> None:
    api.create(full_isvc("a"))
    api.patch("InferenceService", "a", {"metadata": {"finalizers": None}}, keep=["metadata.finalizers"])
    api.delete("InferenceService", "a", keep=None)
    api.get("InferenceService", "a")


@check("finalizers/delete-marks-a-configmap-with-finalizers")
def delete_marks_configmap(api: Api) -> None:
    api.create(configmap("c", {"k": "1"}, finalizers=[_F]))
    api.delete("ConfigMap", "c", keep=None)
    api.get("ConfigMap", "c")


@check("finalizers/delete-marks-a-custom-resource-and-bumps-generation")
def delete_marks_isvc(api: Api) -> None:
    api.create(full_isvc("a"))
    api.delete("InferenceService", "a", keep=None)
    api.get("InferenceService", "a", keep=[*_MARK, "metadata.resourceVersion"])
    api.patch("InferenceService", "a", {"metadata": {"finalizers": None}}, keep=None)
    api.get("InferenceService", "a")


@check("finalizers/delete-marks-a-deployment-and-bumps-generation")
def delete_marks_deployment(api: Api) -> None:
    api.create(deployment("d", finalizers=[_F]))
    api.delete("Deployment", "d", keep=_MARK)
    api.patch("Deployment", "d", {"metadata": {"finalizers": None}}, keep=_MARK)


@check("finalizers/delete-marks-a-service")
def delete_marks_service(api: Api) -> None:
    api.create(service("s", finalizers=[_F]))
    api.delete("Service", "s", keep=[*_MARK, "metadata.resourceVersion"])
    api.patch("Service", "s", {"metadata": {"finalizers": None}}, keep=None)


@check("finalizers/deleting-twice-changes-nothing")
def delete_twice(api: Api) -> None:
    api.create(configmap("c", finalizers=[_F]))
    api.delete("ConfigMap", "c", keep=[*_MARK, "metadata.resourceVersion"])
    api.delete("ConfigMap", "c", keep=[*_MARK, "metadata.resourceVersion"])
    api.get("ConfigMap", "c", keep=[*_MARK, "metadata.resourceVersion"])
    api.patch("ConfigMap", "c", {"metadata": {"finalizers": None}}, keep=())


@check("finalizers/no-new-finalizer-on-a-terminating-object")
def add_to_terminating(api: Api) -> None:
    api.create(configmap("c", finalizers=[_F]))
    api.delete("ConfigMap", "c")
    api.patch("ConfigMap", "c", {"metadata": {"finalizers": [_F, "example.com/late"]}})
    api.patch("ConfigMap", "c", {"metadata": {"finalizers": None}}, keep=())


@check("finalizers/terminating-object-still-takes-updates")
def update_terminating(api: Api) -> None:
    api.create(full_isvc("a"))
    api.delete("InferenceService", "a")
    keep = ["spec.replicas", "metadata.generation", "metadata.labels"]
    api.patch("InferenceService", "a", {"spec": {"replicas": 3}, "metadata": {"labels": {"x": "y"}}}, keep=keep)
    api.patch("InferenceService", "a", {"status": {"phase": "Terminating"}}, subresource="status", keep=["status"])
    api.patch("InferenceService", "a", {"metadata": {"finalizers": None}}, keep=None)


@check("finalizers/removing-the-last-finalizer-by-update-answers-the-object-without-it")
def remove_last_by_update(api: Api) -> None:
    api.create(configmap("c", {"k": "1"}, finalizers=[_F]))
    marked = api.delete("ConfigMap", "c", keep=None)
    body = {**marked, "metadata": {k: v for k, v in marked["metadata"].items() if k != "finalizers"}}
    api.update(body)
    api.get("ConfigMap", "c")


@check("finalizers/removing-the-last-finalizer-by-patch-answers-the-object-without-it")
def remove_last_by_patch(api: Api) -> None:
    api.create(full_isvc("a"))
    api.delete("InferenceService", "a")
    api.patch("InferenceService", "a", {"metadata": {"finalizers": []}})
    api.get("InferenceService", "a")


@check("finalizers/removing-one-of-two-keeps-the-object-terminating")
def remove_one_of_two(api: Api) -> None:
    api.create(configmap("c", finalizers=[_F, "example.com/second"]))
    api.delete("ConfigMap", "c")
    api.patch("ConfigMap", "c", {"metadata": {"finalizers": ["example.com/second"]}}, keep=_MARK)
    api.patch("ConfigMap", "c", {"metadata": {"finalizers": None}}, keep=_MARK)
    api.get("ConfigMap", "c")


@check("finalizers/watch-sees-the-mark-then-the-removal")
def watch_terminating(api: Api) -> None:
    api.create(configmap("c", finalizers=[_F]))
    handle = api.watch("ConfigMap")
    api.delete("ConfigMap", "c")
    api.patch("ConfigMap", "c", {"metadata": {"finalizers": None}}, keep=())
    api.events(handle, 2, keep=[*_MARK, "metadata.resourceVersion"])


@check("finalizers/finalizer-names-are-validated")
def finalizer_names(api: Api) -> None:
    api.create(configmap("a", finalizers=["no-domain"]), keep=["metadata.finalizers"])
    api.create(configmap("b", finalizers=["Not A Name!"]))
    api.create(configmap("c", finalizers=["a/b/c"]))
    api.create(configmap("d", finalizers=["kubernetes"]), keep=["metadata.finalizers"])
    api.create(configmap("e", finalizers=[_F, _F]), keep=["metadata.finalizers"])
    api.patch("ConfigMap", "a", {"metadata": {"finalizers": None}}, keep=())
    api.patch("ConfigMap", "d", {"metadata": {"finalizers": None}}, keep=())
    api.patch("ConfigMap", "e", {"metadata": {"finalizers": None}}, keep=())


@check("finalizers/custom-resource-finalizer-names-are-validated")
def isvc_finalizer_names(api: Api) -> None:
    api.create(full_isvc("a", finalizers=["Not A Name!"]))
    api.create(full_isvc("b", finalizers=["no-domain", FINALIZER]), keep=["metadata.finalizers"])
    api.patch("InferenceService", "b", {"metadata": {"finalizers": None}}, keep=())


@check("finalizers/delete-of-a-missing-object-is-404")
def delete_missing(api: Api) -> None:
    api.delete("ConfigMap", "nothing", keep=None)
    api.delete("InferenceService", "nothing", keep=None)


@check("finalizers/update-cannot-set-a-deletion-timestamp")
def set_deletion_timestamp(api: Api) -> None:
    first = api.create(configmap("c"))
    body = {**first, "metadata": {**first["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    api.update(body, keep=["metadata.deletionTimestamp"])
    api.patch("ConfigMap", "c", {"metadata": {"deletionGracePeriodSeconds": 5}})
    api.patch("ConfigMap", "c", {"metadata": {"creationTimestamp": "2020-01-01T00:00:00Z"}}, keep=["metadata"])


@check("finalizers/deleting-a-terminating-deployment-again-keeps-its-generation")
def delete_deployment_twice(api: Api) -> None:
    api.create(deployment("d", finalizers=[_F]))
    api.delete("Deployment", "d", keep=_MARK)
    api.delete("Deployment", "d", keep=_MARK)
    api.patch("Deployment", "d", {"spec": {"replicas": 3}}, keep=["metadata.generation", "spec.replicas"])
    api.patch("Deployment", "d", {"metadata": {"finalizers": None}}, keep=["metadata.generation"])
