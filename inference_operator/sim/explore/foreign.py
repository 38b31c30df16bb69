"""What other actors create in the explorer's world: a same-named child nobody asked for."""

from __future__ import annotations

from inference_operator.api.constants import DEPLOYMENT
from inference_operator.core.objects import Obj

__all__ = ["foreign_child_manifest"]


def foreign_child_manifest(kind: str, name: str, namespace: str) -> Obj:
    """Someone else's Deployment or Service called ``name``: no owner, its own labels."""
    labels = {"app": name}
    if kind == DEPLOYMENT:
        spec: Obj = {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        }
        api_version = "apps/v1"
    else:
        spec = {"selector": labels, "ports": [{"port": 80}]}
        api_version = "v1"
    manifest = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }
    return manifest
