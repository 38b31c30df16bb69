"""What the real-node e2e modules share about the in-cluster install (test_in_cluster.py):
names of the release and its namespaces, the stand-in sample, and small readers of what the
operator's pods and the API server's audit log show.

Kept apart from the tests so that module stays one story (install, serve, hand over, pods on
the kubelet, roll, uninstall) at a readable length. ``real_node_cluster`` starts and stops the
cluster with the real node; only that module's fixture calls it (one real node at a time).
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import re
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import Cluster
from .harness import ROOT, AuditLog, Kubectl, condition, operator_env, wait_until
from .images import BASE, OPERATOR, ImageSet

sys.path.insert(0, str(ROOT / "hack"))

import cluster as local

Obj = dict[str, Any]
SAMPLES = ROOT / "deploy" / "samples"
STANDIN = yaml.safe_load((SAMPLES / "standin.yaml").read_text())
STANDIN_RESTRICTED = yaml.safe_load((SAMPLES / "standin-restricted.yaml").read_text())
STANDIN_IMAGE = STANDIN["spec"]["image"]
RELEASE = "iop"
FULLNAME = f"{RELEASE}-inference-operator"
OPERATOR_NS = "iop-system"
APPS_NS = "apps"
TIMEOUT = 180
MUTATING = ("create", "update", "patch", "delete")


@contextlib.contextmanager
def real_node_cluster(workdir: Path, image_set: ImageSet, restricted_ns: str) -> Iterator[Cluster]:
    """The local cluster with its real node, the images imported, the CRD applied and the
    namespaces: the operator's and ``restricted_ns`` enforce the restricted standard, the apps'
    the baseline one. Stopped on exit; a start failure fails the test, never a skip."""
    try:
        plane = local.start_control_plane(workdir, real_node=True)
    except local.ControlPlaneError as error:
        pytest.fail(f"the cluster with a real node did not start: {error}", pytrace=False)
    try:
        for ref in (OPERATOR, STANDIN_IMAGE, BASE):  # BASE runs as root: the runAsNonRoot refusal
            plane.import_image(image_set.images[ref].archive)
        kubectl = Kubectl(plane.kubeconfig, operator_env(plane.bin_dir))
        kubectl.run("apply", "-f", str(ROOT / "deploy" / "crds"))
        kubectl.apply(namespace_enforcing(OPERATOR_NS, "restricted"))
        # Inference servers run in a baseline namespace: the stand-in's pod template promises no
        # non-root user (vLLM's image runs as root); a restricted one refuses it (PodsRefused)
        # unless the InferenceService asks for podSecurity: Restricted.
        kubectl.apply(namespace_enforcing(APPS_NS, "baseline"))
        kubectl.apply(namespace_enforcing(restricted_ns, "restricted"))
        yield Cluster(
            kubeconfig=plane.kubeconfig,
            bin_dir=plane.bin_dir,
            audit=AuditLog(plane.audit_log),
            kubectl=kubectl,
            nodes=len(plane.node_names()),
            gpus_per_node=0,
            plane=plane,
        )
    finally:
        plane.stop()


def standin(name: str, *, env: dict[str, str] | None = None, base: Obj = STANDIN, **spec: Any) -> Obj:
    """A stand-in InferenceService named ``name``: the sample with ``env`` added (or replacing
    a variable of the same name) and ``spec`` fields set."""
    obj = copy.deepcopy(base)
    obj["metadata"] = {"name": name}
    variables = {e["name"]: e["value"] for e in obj["spec"].get("env") or []} | (env or {})
    obj["spec"]["env"] = [{"name": k, "value": v} for k, v in variables.items()]
    obj["spec"].update(spec)
    return obj


def server_pods(real: Cluster, name: str, namespace: str) -> list[Obj]:
    """The pods of an InferenceService (not those being deleted)."""
    pods: list[Obj] = real.kubectl.json("get", "pods", "-n", namespace, "-l", f"app.kubernetes.io/name={name}")["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def delete_and_wait(real: Cluster, name: str, namespace: str) -> None:
    """Delete an InferenceService, which the operator releases, and wait for its pods to go."""
    real.kubectl.run("delete", "infsvc", name, "-n", namespace, "--timeout=120s")
    wait_until(lambda: not server_pods(real, name, namespace), timeout=TIMEOUT, what=f"the pods of {name} to go")


def explained(real: Cluster, name: str, namespace: str, reason: str, what: str) -> tuple[Obj, Obj]:
    """Once the object's Ready condition gives ``reason``: the object and that condition,
    printed (the closing notes quote them)."""
    obj = real.kubectl.wait_for(
        "infsvc",
        name,
        namespace,
        lambda o: condition(o, "Ready").get("reason") == reason,
        what=f"{name}'s status to explain {what}",
        timeout=TIMEOUT,
    )
    said = condition(obj, "Ready")
    print(f"\nstatus: phase={obj['status']['phase']} reason={said['reason']} {said['message']!r}")
    return obj, said


def namespace_enforcing(name: str, level: str) -> Obj:
    labels = {"pod-security.kubernetes.io/enforce": level, "pod-security.kubernetes.io/enforce-version": "latest"}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def operator_pods(real: Cluster, selector: str, namespace: str) -> list[Obj]:
    pods: list[Obj] = real.kubectl.json("get", "pods", "-n", namespace, "-l", selector)["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def ready_pods(real: Cluster, selector: str, namespace: str, count: int) -> list[Obj]:
    def ready() -> list[Obj] | None:
        pods = operator_pods(real, selector, namespace)
        good = [p for p in pods if condition(p, "Ready").get("status") == "True"]
        return good if len(good) == count == len(pods) else None

    try:
        return wait_until(ready, timeout=TIMEOUT, what=f"{count} Ready pods {selector} in {namespace}")
    except AssertionError as err:
        details = real.kubectl.run("get", "pods,events", "-n", namespace, "-o", "wide", check=False)
        raise AssertionError(f"{err}\n{details.stdout}{details.stderr}") from None


def http_get(url: str) -> tuple[int, str]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # pod addresses: never a proxy
    with opener.open(url, timeout=5) as response:
        return response.status, response.read().decode()


def metric(pod: Obj, name: str) -> float:
    """The sum of a metric's samples (over its labels), scraped from the pod's address."""
    _, text = http_get(f"http://{pod['status']['podIP']}:9090/metrics")
    sample = re.compile(rf"^{re.escape(name)}(\{{[^}}]*\}})? (\S+)$")
    return sum(float(m[2]) for line in text.splitlines() if (m := sample.match(line)))


def parse_time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def leader(real: Cluster, pods: list[Obj]) -> Obj:
    def find() -> Obj | None:
        leading = [p for p in pods if metric(p, "leader_election_master_status") == 1]
        return leading[0] if len(leading) == 1 else None

    return wait_until(find, timeout=60, what="one operator pod to lead")


def writes_by_operator(real: Cluster, offset: int, namespace: str) -> list[Obj]:
    """Mutating requests by the operator's ServiceAccount since ``offset`` (Leases and Events aside)."""
    assert real.audit is not None
    user = f"system:serviceaccount:{namespace}:"
    return [
        e
        for e in real.audit.events_since(offset)
        if e.get("stage") == "ResponseComplete"
        and str((e.get("user") or {}).get("username", "")).startswith(user)
        and e.get("verb") in MUTATING
        and (e.get("objectRef") or {}).get("resource") not in ("leases", "events")
    ]
