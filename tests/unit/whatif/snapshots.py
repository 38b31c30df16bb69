"""Snapshots for the what-if tests, built as ``kubectl get … -A -o yaml`` prints them (a v1 List)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]
OWNER_LABEL = "serving.inference-operator.dev/inferenceservice"
ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "deploy" / "samples" / "simulator"


def node(name: str, *, gpus: int = 8, **extra: Any) -> Obj:
    resources = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "7", **extra},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
        },
    }


def service(name: str, *, image: str = "vllm:1", replicas: int = 2, gpu: int = 4, **spec: Any) -> Obj:
    return {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": "default", "uid": "u1", "generation": 4, "managedFields": [{}]},
        "spec": {"image": image, "model": "m", "replicas": replicas, "gpu": gpu, **spec},
        "status": {"phase": "Ready", "readyReplicas": replicas},
    }


def pod(name: str, *, namespace: str = "default", node: str | None = None, gpus: int = 0, owner: str = "") -> Obj:
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "9"}
    if owner:
        meta["labels"] = {OWNER_LABEL: owner}
    else:
        meta["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "x", "controller": True}
        ]
    container: Obj = {"name": "c", "image": "x", "volumeMounts": [{"name": "token", "mountPath": "/var/run"}]}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    spec: Obj = {"containers": [container], "volumes": [{"name": "token", "projected": {"sources": []}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Running"}}


def write_list(path: Path, *items: Obj) -> str:
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(items)}))
    return str(path)


def write_change(path: Path, obj: Obj) -> str:
    change = {k: v for k, v in obj.items() if k != "status"}
    change["metadata"] = {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"]}
    path.write_text(yaml.safe_dump(change))
    return str(path)
