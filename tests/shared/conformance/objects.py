"""Small manifests for the checks: plain dicts, the least each kind needs.

InferenceServices carry the operator's finalizer from the start: the e2e session may install the
finalizer admission policy (deploy/admission), which adds it on create wherever it is missing,
and a check must not depend on whether another test installed it first.
"""

from __future__ import annotations

from typing import Any

from inference_operator.api.constants import FINALIZER

Obj = dict[str, Any]


def meta(name: str, *, labels: dict[str, str] | None = None, **extra: Any) -> Obj:
    out: Obj = {"name": name} if name else {}
    if labels:
        out["labels"] = labels
    out.update(extra)
    return out


def configmap(name: str, data: dict[str, str] | None = None, **metadata: Any) -> Obj:
    obj: Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(name, **metadata)}
    if data is not None:
        obj["data"] = data
    return obj


def secret(name: str, string_data: dict[str, str] | None = None, **metadata: Any) -> Obj:
    obj: Obj = {"apiVersion": "v1", "kind": "Secret", "metadata": meta(name, **metadata)}
    if string_data is not None:
        obj["stringData"] = string_data
    return obj


def service(name: str, port: int = 80, **metadata: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(name, **metadata),
        "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": port, "targetPort": port}]},
    }


def deployment(name: str, replicas: int = 0, image: str = "registry.local/server:1", **metadata: Any) -> Obj:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(name, **metadata),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "server", "image": image}]}},
        },
    }


def isvc(name: str, *, finalizers: list[str] | None = None, **spec: Any) -> Obj:
    """An InferenceService; ``spec`` adds to (or, with None values, removes from) image and model."""
    body: Obj = {"image": "vllm/vllm-openai:v0.7.0", "model": "meta-llama/Llama-3-8B"}
    for key, value in spec.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": "InferenceService",
        "metadata": meta(name, finalizers=[FINALIZER] if finalizers is None else finalizers),
        "spec": body,
    }


def owner_ref(owner: Obj, *, controller: bool = False, block: bool = False) -> Obj:
    """An ownerReference to ``owner`` (an object as the API server answered it)."""
    ref: Obj = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    if controller:
        ref["controller"] = True
    if block:
        ref["blockOwnerDeletion"] = True
    return ref


def widget_crd(group: str, spec_schema: Obj) -> Obj:
    """A CustomResourceDefinition of kind Widget in ``group`` (one version, ``v1``), whose
    objects' ``spec`` has ``spec_schema``."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}},
                }
            ],
        },
    }
