"""The InferenceService most e2e tests run, and how they wait for it to be Ready.

Shared by the e2e test modules (test_lifecycle.py and the suites that create the same workload),
so that no test module imports another.
"""

from __future__ import annotations

from typing import Any

from .conftest import Cluster
from .harness import is_ready

TIMEOUT = 90


def llama(name: str, *, replicas: int = 2, image: str = "vllm/vllm-openai:v0.6.3", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": "InferenceService",
        "metadata": {"name": name},
        "spec": {"image": image, "model": "meta-llama/Llama-3.1-8B", "replicas": replicas, "gpu": 1, **spec},
    }


def wait_ready(cluster: Cluster, name: str, ns: str) -> dict[str, Any]:
    return cluster.kubectl.wait_for(
        "infsvc", name, ns, is_ready, what=f"InferenceService {ns}/{name} to be Ready", timeout=TIMEOUT
    )
