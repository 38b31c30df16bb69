"""Sample manifests, like the YAML a user would ``kubectl apply``: for the demo, tests and docs."""

from __future__ import annotations

from typing import Any

from inference_operator.api.constants import API_VERSION, KIND


def make_namespace(name: str) -> dict[str, Any]:
    """A Namespace manifest: objects can only be created in a namespace that exists."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def make_inference_service(
    name: str,
    *,
    image: str,
    model: str,
    replicas: int = 1,
    namespace: str = "default",
    **spec: Any,
) -> dict[str, Any]:
    """An InferenceService manifest, like the YAML a user would ``kubectl apply``."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"image": image, "model": model, "replicas": replicas, **spec},
    }
