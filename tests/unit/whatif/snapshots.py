"""Snapshots for the what-if tests, built as ``kubectl get … -A -o yaml`` prints them (a v1 List)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from inference_operator.api.models import InferenceService
from inference_operator.reconcile.builders import desired_deployment

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


def pod(
    name: str,
    *,
    namespace: str = "default",
    node: str | None = None,
    gpus: int = 0,
    owner: str = "",
    template: str = "",
) -> Obj:
    """A pod; ``owner``: of that InferenceService (``template``: its ReplicaSet's pod-template-hash)."""
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "9"}
    if owner:
        meta["labels"] = {OWNER_LABEL: owner, **({"pod-template-hash": template} if template else {})}
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


def replicaset(service_obj: Obj, *, template: str, revision: int, replicas: int) -> Obj:
    """A ReplicaSet of ``service_obj``'s Deployment as the cluster holds it: the operator's pod
    template for that spec (its own builder), labelled with ``template`` as its hash."""
    isvc = InferenceService.from_object({**service_obj, "metadata": {**service_obj["metadata"], "uid": "u1"}})
    pod_template = desired_deployment(isvc)["spec"]["template"]
    labels = {**pod_template["metadata"]["labels"], "pod-template-hash": template}
    pod_template["metadata"]["labels"] = labels
    name = service_obj["metadata"]["name"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{name}-{template}",
            "namespace": "default",
            "uid": f"uid-rs-{template}",
            "resourceVersion": "11",
            "labels": labels,
            "annotations": {"deployment.kubernetes.io/revision": str(revision), "other": "dropped"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": "uid-dep", "controller": True}
            ],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update"}],
        },
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": pod_template},
        "status": {"replicas": replicas, "readyReplicas": replicas},
    }


def write_list(path: Path, *items: Obj) -> str:
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(items)}))
    return str(path)


def write_change(path: Path, obj: Obj) -> str:
    change = {k: v for k, v in obj.items() if k != "status"}
    change["metadata"] = {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"]}
    path.write_text(yaml.safe_dump(change))
    return str(path)


def mid_rollout(path: Path) -> str:
    """A full pool caught in a stalled rollout: ``big``'s two 8-GPU replicas of vllm:1 on n1 and n2
    (revision 1), its image changed to vllm:2 with the default rolling update, whose one new pod
    (revision 2) is Pending, no node having 8 GPUs free; ``small``'s two 2-GPU pods on n3."""
    old, new = service("big", image="vllm:1", gpu=8), service("big", image="vllm:2", gpu=8)
    small = service("small", image="vllm:1", gpu=2)
    return write_list(
        path,
        node("n1"),
        node("n2"),
        node("n3"),
        new,
        small,
        replicaset(old, template="oldhash", revision=1, replicas=2),
        replicaset(new, template="newhash", revision=2, replicas=1),
        replicaset(small, template="smallhash", revision=1, replicas=2),
        pod("big-old-1", node="n1", owner="big", template="oldhash"),
        pod("big-old-2", node="n2", owner="big", template="oldhash"),
        pod("big-new-1", owner="big", template="newhash"),
        pod("small-1", node="n3", owner="small", template="smallhash"),
        pod("small-2", node="n3", owner="small", template="smallhash"),
    )
