"""Namespaced mode: `inference-operator run --namespace NS` with only the shipped Role (no
cluster-level permission at all) serves InferenceServices in its namespace and ignores others.

Covers: converges an InferenceService to Ready in its namespace, releases it on deletion, and
leaves one in another namespace untouched (not written to at all: no children, no status). An
``Auto`` rollout there counts no GPUs (a Role cannot read Nodes): it completes, status says "Nodes
cannot be read", and the operator never asks for a Node or lists Pods cluster-wide (the audit log).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from inference_operator.kube.config import default_lease_name
from inference_operator.lb.registry import RegistryServer

from .conftest import RBAC_DIR, Cluster, leader_election_rbac, token_kubeconfig
from .harness import OperatorProcess, operator_env
from .workloads import TIMEOUT, llama, wait_ready

SA = "inference-operator-ns"
NEW_IMAGE = "vllm/vllm-openai:v0.7.0"


@pytest.fixture()
def other_namespace(cluster: Cluster, namespace: str) -> str:
    name = f"{namespace}-other"
    cluster.kubectl.run("create", "namespace", name)
    return name


def node_and_pod_requests(events: Iterable[dict[str, Any]], user_suffix: str) -> list[str]:
    """What the user asked of Nodes and Pods, as ``resource verb namespace``."""
    out = []
    for event in events:
        ref = event.get("objectRef") or {}
        if ref.get("resource") not in ("nodes", "pods"):
            continue
        if not str((event.get("user") or {}).get("username", "")).endswith(user_suffix):
            continue
        out.append(f"{ref['resource']} {event.get('verb')} {ref.get('namespace') or 'all namespaces'}")
    return out


def grant_role(cluster: Cluster, namespace: str) -> None:
    """deploy/rbac/namespaced as shipped, bound to a ServiceAccount in the watched namespace."""
    role = yaml.safe_load((RBAC_DIR / "namespaced" / "role.yaml").read_text())
    binding = yaml.safe_load((RBAC_DIR / "namespaced" / "role_binding.yaml").read_text())
    binding["subjects"][0].update(name=SA, namespace=namespace)
    role["metadata"]["namespace"] = binding["metadata"]["namespace"] = namespace  # kustomize's `namespace:`
    cluster.kubectl.run("create", "serviceaccount", SA, "-n", namespace)
    cluster.kubectl.apply(role, namespace)
    cluster.kubectl.apply(binding, namespace)
    # its Lease lives in its own namespace, named after the one namespace it watches
    for doc in leader_election_rbac(namespace, SA, namespace, lease_name=default_lease_name((namespace,))):
        cluster.kubectl.apply(doc)


def test_namespaced_mode_serves_only_its_namespace_with_a_role(
    cluster: Cluster,
    namespace: str,
    other_namespace: str,
    operator: OperatorProcess,
    registry: RegistryServer,
    tmp_path: Path,
) -> None:
    grant_role(cluster, namespace)
    kubeconfig = token_kubeconfig(cluster, SA, namespace, tmp_path / "kubeconfig")
    operator.stop()  # the cluster-wide operator would serve the namespace too
    scoped = OperatorProcess(
        kubeconfig,
        operator_env(cluster.bin_dir),
        tmp_path / "operator.log",
        "--namespace",
        namespace,
        "--lb-provider",
        "http",
        "--lb-url",
        registry.url,
        lease_namespace=namespace,
    )
    mark = cluster.audit.mark() if cluster.audit is not None else 0
    scoped.start()
    try:
        cluster.kubectl.apply(llama("inside", replicas=1, rollout={"strategy": "Auto"}), namespace)
        created = cluster.kubectl.json(
            "create", "-n", other_namespace, "-f", "-", stdin=yaml.safe_dump(llama("outside", replicas=1))
        )
        wait_ready(cluster, "inside", namespace)
        cluster.kubectl.apply(llama("inside", replicas=1, image=NEW_IMAGE, rollout={"strategy": "Auto"}), namespace)
        rolled = wait_ready(cluster, "inside", namespace)
        rollout = rolled["status"]["rollout"]
        assert rollout["plan"] == "Surge 1" and "Nodes cannot be read" in rollout["message"], rollout
        if cluster.audit is not None:
            asked = node_and_pod_requests(cluster.audit.events_since(mark), f":{namespace}:{SA}")
            assert not [a for a in asked if a.startswith("nodes") or a.endswith(" all namespaces")], asked
        outside = cluster.kubectl.get("infsvc", "outside", other_namespace)
        assert outside is not None and not outside.get("status")
        assert outside["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"], "nobody wrote to it"
        assert cluster.kubectl.get("deployment", "outside", other_namespace) is None
        cluster.kubectl.run("delete", "infsvc", "inside", "-n", namespace, "--wait=false")
        cluster.kubectl.wait_gone(
            "infsvc", "inside", namespace, timeout=TIMEOUT, what="the namespaced operator to finish the deletion"
        )
        assert registry.stats()["release_calls"].get(f"{namespace}/inside") == 1
        assert "Forbidden" not in scoped.log_tail(200), scoped.log_tail(200)
    finally:
        scoped.stop()
    operator.start()
    cluster.kubectl.run("delete", "infsvc", "outside", "-n", other_namespace, "--wait=false")
    cluster.kubectl.wait_gone(
        "infsvc",
        "outside",
        other_namespace,
        timeout=TIMEOUT,
        what="the cluster-wide operator to delete the other namespace's object",
    )
