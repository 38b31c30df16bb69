#!/usr/bin/env python3
"""Benchmark (not a test): what a warm standby costs, at N InferenceServices (default 1,000).

Two operator processes elect a leader on the local control plane, as the chart's two replicas
do. The leader converges N InferenceServices; the standby keeps its watches and cache primed
and never writes. Reports:
- the standby's memory (peak and current RSS) once its cache holds every object, next to the
  leader's;
- the standby's mutating requests over the whole run, from the API server's audit log by its
  identity in the user agent (must be 0; Lease reads and its Lease attempts excluded);
- the failover: kill -9 of the leader, then how long until the standby leads and has
  reconciled every object once.

Usage: python bench/standby.py [--count 1000] [--workers 4]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "hack")]

import cluster as local  # noqa: E402 - hack/cluster.py
from procstats import rss_mib  # noqa: E402 - bench/procstats.py

from inference_operator.api.constants import GROUP, KIND, PLURAL  # noqa: E402
from inference_operator.api.samples import make_inference_service  # noqa: E402
from inference_operator.kube.client import KubeClient  # noqa: E402
from inference_operator.lb.registry import RegistryServer  # noqa: E402
from tests.e2e.harness import (  # noqa: E402
    AuditLog,
    Kubectl,
    OperatorProcess,
    install_admission_policy,
    is_ready,
    operator_env,
    wait_until,
)

NAMESPACE = "bench"
LEASE_NAMESPACE = "default"
MUTATING = ("create", "update", "patch", "delete")


def writes_by(audit: AuditLog, offset: int, identity: str) -> list[str]:
    """Mutating requests whose user agent names ``identity``, but its Lease (a standby tries to
    take the Lease when it expires; that is the election, not a write to the cluster)."""
    out = []
    for event in audit.events_since(offset):
        if event.get("stage") != "ResponseComplete" or f"({identity})" not in str(event.get("userAgent", "")):
            continue
        ref = event.get("objectRef") or {}
        if event.get("verb") in MUTATING and ref.get("resource") != "leases":
            out.append(f"{event['verb']} {ref.get('resource')} {ref.get('namespace')}/{ref.get('name')}")
    return out


def leading(operator: OperatorProcess) -> bool:
    try:
        return operator.stats().get("leader_election_master_status", 0) == 1
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    n = args.count
    work = Path(tempfile.mkdtemp(prefix="bench-standby-"))
    plane = local.start_control_plane(work / "plane", nodes=max(2, math.ceil(n / 100) + 1))
    registry = RegistryServer(host="127.0.0.1", port=0, state_file=work / "lb.json")
    registry.start()
    operators: list[OperatorProcess] = []
    try:
        env = operator_env(plane.bin_dir)
        kubectl = Kubectl(plane.kubeconfig, env)
        kubectl.run("apply", "-f", str(ROOT / "deploy" / "crds"))
        kubectl.run("wait", "--for=condition=Established", "--timeout=60s", f"crd/{PLURAL}.{GROUP}")
        kubectl.run("create", "namespace", NAMESPACE)
        install_admission_policy(kubectl, NAMESPACE)
        client = KubeClient.from_kubeconfig(str(plane.kubeconfig))
        audit = AuditLog(plane.audit_log)
        mark = audit.mark()
        flags = ["--lb-provider", "http", "--lb-url", registry.url, "--workers", str(args.workers)]

        def operator(identity: str, *, standby: bool) -> OperatorProcess:
            process = OperatorProcess(
                plane.kubeconfig,
                env,
                work / f"{identity}.log",
                *flags,
                identity=identity,
                lease_namespace=LEASE_NAMESPACE,
                standby=standby,
            )
            process.start()
            operators.append(process)
            return process

        leader = operator("bench-leader", standby=False)
        standby = operator("bench-standby", standby=True)
        print(f"control plane ready in {plane.startup_seconds:.1f}s; leader and standby started; N={n}", flush=True)

        start = time.monotonic()
        objects = [
            make_inference_service(f"isvc-{i:04d}", image="vllm/vllm-openai:v0.7.0", model="m", namespace=NAMESPACE)
            for i in range(n)
        ]
        with ThreadPoolExecutor(args.workers) as pool:
            list(pool.map(client.create, objects))

        def ready_count() -> int:
            return sum(is_ready(o) for o in client.list_objects(KIND, NAMESPACE, from_cache=True))

        wait_until(lambda: ready_count() == n, timeout=3600, what=f"{n} InferenceServices to be Ready", interval=1.0)
        print(f"all {n} Ready in {time.monotonic() - start:.1f}s (leader: {leader.identity})", flush=True)
        leader.wait_idle(reconciles_at_least=n, timeout=600)

        # The standby's cache is primed when its informers saw every object; its RSS then
        # stops growing. Take the figure once it has been flat for ten samples.
        samples: list[float] = []

        def standby_settled() -> bool:
            samples.append(rss_mib(pid_of(standby), "VmRSS"))
            return len(samples) >= 10 and max(samples[-10:]) - min(samples[-10:]) < 1.0

        wait_until(standby_settled, timeout=300, what="the standby's memory to settle", interval=1.0)
        print(
            f"memory at {n} objects: standby RSS {samples[-1]:.0f} MiB now, {rss_mib(pid_of(standby)):.0f} MiB peak; "
            f"leader {rss_mib(pid_of(leader), 'VmRSS'):.0f} MiB now, {rss_mib(pid_of(leader)):.0f} MiB peak",
            flush=True,
        )
        standby_writes = writes_by(audit, mark, standby.identity)
        print(f"mutating requests by the standby while it followed: {len(standby_writes)} {standby_writes[:5]}")

        before = standby.stats().get("reconcile_total", 0)
        leader.kill()
        killed = time.monotonic()
        wait_until(lambda: leading(standby), timeout=120, what="the standby to take the lease", interval=0.1)
        took_over = time.monotonic() - killed
        standby.wait_idle(reconciles_at_least=before + n, timeout=600)
        print(
            f"failover after kill -9 of the leader: standby leads after {took_over:.1f}s, "
            f"has reconciled all {n} after {time.monotonic() - killed:.1f}s; "
            f"load balancer records: {len(registry.registrations())}",
            flush=True,
        )
        return 0
    finally:
        for process in operators:
            process.stop()
        registry.stop()
        plane.stop()


def pid_of(operator: OperatorProcess) -> int:
    if operator.process is None:
        raise RuntimeError(f"operator {operator.identity} is not running")
    return operator.process.pid


if __name__ == "__main__":
    sys.exit(main())
