"""Never deaf: a CRD deleted and re-created under a running operator.

Covers: ``kubectl delete -f deploy/crds --wait && kubectl apply -f deploy/crds`` under the
suite's operator (cluster-wide; its streams list a kind again after a failure), ``ROUNDS`` times
(``E2E_CRD_ROUNDS``, 10 by default); each round, with objects being created at once (the load),
every new InferenceService is reconciled (status written for its generation, our finalizer on
it) within ``BOUND`` seconds of the CRD's re-creation: either the operator serves the kind again
by itself, or its liveness probe fails naming the kind and the test restarts it as the kubelet
would, and the restarted process reconciles them. Each round then deletes its objects (the
operator must finalize them: another proof it hears the kind) so the next CRD deletion is not
held up. The outcome of each round (served again, or restarted after which delay) is printed for
the closing note.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Any

from .conftest import CRD_DIR, Cluster
from .harness import FINALIZER, OperatorProcess, wait_until
from .workloads import llama

ROUNDS = int(os.environ.get("E2E_CRD_ROUNDS", "10"))
LOAD = 2  # InferenceServices created per round right after the CRD is back
BOUND = 45.0  # seconds: watch check period 5 + grace 10 + one more period, a restart, a pass
CRD_NAME = "crd/inferenceservices.serving.inference-operator.dev"
Obj = dict[str, Any]


def liveness_problem(proc: OperatorProcess) -> str | None:
    """What is wrong, once the liveness probe (Kopf's, the kubelet's) fails: Kopf answers a bare
    500, so the words come from the operator's own ``/healthz``, which names the kind."""
    try:
        with urllib.request.urlopen(proc.probe_url, timeout=2):
            return None
    except urllib.error.HTTPError:
        pass
    healthz = proc.metrics_url.replace("/metrics", "/healthz")
    try:
        with urllib.request.urlopen(healthz, timeout=2) as response:
            return f"liveness failed, /healthz: {response.read().decode(errors='replace')}"
    except urllib.error.HTTPError as err:
        return f"liveness failed, /healthz {err.code}: {err.read().decode(errors='replace')}"


def reconciled(obj: Obj | None) -> bool:
    if not obj:
        return False
    meta, status = obj["metadata"], obj.get("status") or {}
    return FINALIZER in (meta.get("finalizers") or []) and status.get("observedGeneration") == meta.get("generation")


def apply_when_served(cluster: Cluster, manifest: Obj, namespace: str) -> None:
    """``kubectl apply`` answers "no matches for kind" until discovery serves the new CRD."""
    wait_until(
        lambda: cluster.kubectl.apply(manifest, namespace, check=False).returncode == 0,
        timeout=30,
        what=f"the API server to serve InferenceService again ({manifest['metadata']['name']})",
    )


def served_or_deaf(cluster: Cluster, operator: OperatorProcess, namespace: str, names: list[str]) -> str | None:
    if all(reconciled(cluster.kubectl.get("infsvc", n, namespace)) for n in names):
        return "served"
    problem = liveness_problem(operator)
    return f"deaf: {problem}" if problem else None


def test_a_re_created_crd_is_served_again_or_liveness_names_the_kind(
    cluster: Cluster, namespace: str, operator: OperatorProcess
) -> None:
    outcomes: list[str] = []
    for i in range(ROUNDS):
        cluster.kubectl.run("delete", "-f", str(CRD_DIR), "--wait", "--timeout=60s")
        cluster.kubectl.run("apply", "-f", str(CRD_DIR))
        recreated = time.monotonic()
        cluster.kubectl.run("wait", "--for=condition=Established", "--timeout=60s", CRD_NAME)
        names = [f"deaf-{i}-{j}" for j in range(LOAD)]
        for name in names:
            apply_when_served(cluster, llama(name, replicas=1), namespace)

        outcome = wait_until(
            lambda names=names: served_or_deaf(cluster, operator, namespace, names),
            timeout=BOUND,
            what=f"round {i}: reconciled, or liveness failing",
        )
        if outcome != "served":
            assert "watch of InferenceService stopped delivering" in outcome, outcome
            detected = time.monotonic() - recreated
            operator.stop()  # what the kubelet does when liveness fails: SIGTERM, then start again
            operator.start()
            left = max(1.0, BOUND - (time.monotonic() - recreated))
            for name in names:
                cluster.kubectl.wait_for(
                    "infsvc", name, namespace, reconciled, what=f"{name} after a restart", timeout=left
                )
            outcome = f"liveness failed after {detected:.1f}s, restarted"
        took = time.monotonic() - recreated
        outcomes.append(f"{outcome} ({took:.1f}s)")
        assert took <= BOUND, f"round {i}: {took:.1f}s"
        for name in names:  # the operator finalizes them: the next CRD deletion is not held up
            cluster.kubectl.run("delete", "infsvc", name, "-n", namespace, "--wait=false")
        for name in names:
            cluster.kubectl.wait_gone("infsvc", name, namespace, what=f"{name} finalized by the operator", timeout=60)
    print("\nCRD re-created under a running operator: " + json.dumps(outcomes, indent=1))
