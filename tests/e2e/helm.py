"""Helm on the e2e cluster, and what an installed release is: its Deployment rolled out, its
objects by name, nothing left of it after an uninstall.

Shared by test_install.py and test_in_cluster.py, so that no test module imports another.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .conftest import Cluster
from .harness import ROOT, WaitTimeout, condition, run_tool, wait_until

CHART = ROOT / "charts" / "inference-operator"
TIMEOUT = 90
# What a release could leave behind in its namespace (helm's own release records are Secrets).
NAMESPACED_KINDS = "deployments,replicasets,pods,services,serviceaccounts,roles,rolebindings,configmaps,secrets"
CLUSTER_RBAC_KINDS = "clusterroles,clusterrolebindings"
ADMISSION_KINDS = "mutatingadmissionpolicies,mutatingadmissionpolicybindings"
CLUSTER_KINDS = f"{CLUSTER_RBAC_KINDS},{ADMISSION_KINDS}"

Obj = dict[str, Any]


@dataclass
class Helm:
    binary: str
    kubeconfig: Path
    env: dict[str, str]

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_tool(self.binary, self.kubeconfig, args, env=self.env, timeout=120, check=check)


def helm_for(cluster: Cluster, home: Path) -> Helm:
    """Helm on the cluster, with its cache, config and data in ``home`` (no user repositories or plugins)."""
    env = dict(cluster.kubectl.env)
    binary = shutil.which("helm", path=env.get("PATH"))
    if binary is None:
        pytest.fail("helm is not on PATH nor in the control plane's bin dir (hack/build-controlplane.sh)")
    for name in ("CACHE", "CONFIG", "DATA"):
        env[f"HELM_{name}_HOME"] = str(home / f"helm-{name.lower()}")
    return Helm(binary, cluster.kubeconfig, env)


def wait_available(cluster: Cluster, name: str, namespace: str, *, env: dict[str, str] | None = None) -> Obj:
    """Until the Deployment has rolled out its current template (with this env, if given) and is Available."""

    def rolled_out() -> Obj | None:
        dep = cluster.kubectl.get("deployment", name, namespace)
        if dep is None:
            return None
        status = dep.get("status") or {}
        containers = dep["spec"]["template"]["spec"]["containers"]
        current = {e["name"]: e.get("value") for e in containers[0].get("env", [])}
        done = (
            status.get("observedGeneration") == dep["metadata"]["generation"]
            and status.get("updatedReplicas") == dep["spec"]["replicas"]
            and status.get("readyReplicas") == dep["spec"]["replicas"]
            and status.get("replicas") == dep["spec"]["replicas"]  # Recreate: no old pod left
            and condition(dep, "Available").get("status") == "True"
            and (env is None or env.items() <= current.items())
        )
        return dep if done else None

    try:
        return wait_until(rolled_out, timeout=TIMEOUT, what=f"Deployment {namespace}/{name} to be Available")
    except WaitTimeout as err:
        # Say why: a pod the restricted policy refused, no node for it, kwok not marking it Ready…
        details = [
            cluster.kubectl.run("get", "deployments,replicasets,pods", "-n", namespace, "-o", "wide", check=False),
            cluster.kubectl.run("get", "events", "-n", namespace, "--sort-by=.lastTimestamp", check=False),
        ]
        raise AssertionError(f"{err}\n" + "\n".join(d.stdout + d.stderr for d in details)) from None


def names(cluster: Cluster, kinds: str, *, namespace: str | None = None, selector: str | None = None) -> list[str]:
    args = ["get", kinds, "-o", "name"]
    args += ["-n", namespace] if namespace else []
    args += ["-l", selector] if selector else []
    return cluster.kubectl.run(*args).stdout.split()


def wait_release_gone(cluster: Cluster, release: str, namespaces: list[str]) -> None:
    """Nothing labelled with the release (nor its Helm records) in these namespaces or cluster-wide."""

    def leftovers() -> list[str]:
        found = names(cluster, CLUSTER_KINDS, selector=f"app.kubernetes.io/instance={release}")
        for ns in namespaces:
            found += names(cluster, NAMESPACED_KINDS, namespace=ns, selector=f"app.kubernetes.io/instance={release}")
            found += names(cluster, "secrets", namespace=ns, selector=f"owner=helm,name={release}")
        return found

    wait_until(lambda: not leftovers(), timeout=TIMEOUT, what=f"everything of release {release} to be deleted")
