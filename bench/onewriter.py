#!/usr/bin/env python3
"""Benchmark (not a test): the figures of "at most one writer".

In-process, no cluster:
- the cost of the write check: ``Fence.term()`` against a real ``LeaderElector`` on the boot
  clock (what every child apply, status, finalizer, Event and balancer call now asks), and a
  ``KubeBackend.patch`` through the fence against one without it, on a client that answers at
  once (so the difference is the check and nothing else).

On the local control plane, two operator processes on one Lease, a fleet whose specs keep
changing (one kubectl apply after another), ``--rounds`` times each:
- takeover after a pause: SIGSTOP of the leader; seconds until the standby leads;
- writes refused on wake-up: the woken replica's ``writes_refused_not_leader`` counter, from
  SIGCONT until it stands by, and its mutating requests after the new leader's first write
  (audit log by user agent; must be 0);
- takeover after a Lease deletion (``kubectl delete lease``): seconds until a replica leads.

Usage: python bench/onewriter.py [--rounds 5] [--fleet 4] [--no-cluster]
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import threading
import time
import timeit
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "hack")]

from inference_operator.api.samples import make_inference_service  # noqa: E402
from inference_operator.kube.backend import KubeBackend  # noqa: E402
from inference_operator.kube.cache import ObjectCache  # noqa: E402
from inference_operator.kube.election import BootClock, ElectionSettings, LeaderElector  # noqa: E402
from inference_operator.kube.fence import Fence  # noqa: E402

NAMESPACE = "bench"
LEASE_NAMESPACE = "default"
Obj = dict[str, Any]


class _Leases:
    """One Lease in memory, for the in-process figures."""

    def __init__(self) -> None:
        self.lease: Obj | None = None

    def get_lease(self, namespace: str, name: str) -> Obj | None:
        return self.lease

    def create_lease(self, lease: Obj) -> Obj:
        self.lease = {**lease, "metadata": {**lease["metadata"], "resourceVersion": "1", "uid": "u"}}
        return self.lease

    def replace_lease(self, lease: Obj) -> Obj:
        self.lease = {**lease, "metadata": {**lease["metadata"], "resourceVersion": "2", "uid": "u"}}
        return self.lease


class _Instant:
    """A KubeClient whose writes answer at once."""

    def patch(self, kind: str, namespace: str, name: str, patch: Obj, **_: Any) -> Obj:
        return {"kind": kind, "metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"}}


def check_cost(n: int = 200_000) -> None:
    clock = BootClock()
    settings = ElectionSettings(namespace="ops", identity="bench", renew_deadline=10, lease_duration=15)
    elector = LeaderElector(settings, _Leases(), clock)
    elector.step()
    elector._write_from = 0.0
    elector.step()
    fence = Fence(elector)
    assert fence.term() is not None
    # The machine is shared: the least of several repeats is the cost, the rest is other work.
    per_check = min(timeit.repeat(fence.term, number=n // 10, repeat=9)) / (n // 10)
    plain = KubeBackend(_Instant(), ObjectCache(clock), clock)  # type: ignore[arg-type]
    fenced = KubeBackend(_Instant(), ObjectCache(clock), clock, fence=fence)  # type: ignore[arg-type]
    patch = {"metadata": {"finalizers": []}}

    def write(backend: KubeBackend) -> float:
        return timeit.timeit(lambda: backend.patch("InferenceService", "ns", "x", patch), number=n // 20) / (n // 20)

    runs = [(write(plain), write(fenced)) for _ in range(9)]  # interleaved, so load hits both alike
    base, with_fence = min(r[0] for r in runs), min(r[1] for r in runs)
    print(
        f"write check: Fence.term() {per_check * 1e9:.0f} ns per call; KubeBackend.patch on an instant client "
        f"{base * 1e6:.2f} us without the fence, {with_fence * 1e6:.2f} us with it "
        f"(+{(with_fence - base) * 1e9:.0f} ns per write, against a write's round trip of milliseconds)",
        flush=True,
    )


def summary(values: list[float]) -> str:
    if not values:
        return "n=0"
    return f"n={len(values)} min {min(values):.1f}s median {statistics.median(values):.1f}s max {max(values):.1f}s"


def cluster_figures(rounds: int, fleet: int) -> None:
    import cluster as local  # hack/cluster.py

    from inference_operator.lb.registry import RegistryServer
    from tests.e2e.harness import (
        AuditLog,
        Kubectl,
        OperatorProcess,
        install_admission_policy,
        install_crds,
        operator_env,
    )
    from tests.e2e.harness import wait_until as until

    work = Path(tempfile.mkdtemp(prefix="bench-onewriter-"))
    plane = local.start_control_plane(work / "plane")
    registry = RegistryServer(host="127.0.0.1", port=0, state_file=work / "lb.json")
    registry.start()
    procs: list[OperatorProcess] = []
    try:
        env = operator_env(plane.bin_dir)
        kubectl = Kubectl(plane.kubeconfig, env)
        install_crds(kubectl)
        kubectl.run("create", "namespace", NAMESPACE)
        install_admission_policy(kubectl, NAMESPACE)
        audit = AuditLog(plane.audit_log)
        flags = ["--lb-provider", "http", "--lb-url", registry.url, "--workers", "4", "--resync-period", "4"]
        for identity in ("bench-a", "bench-b"):
            proc = OperatorProcess(
                plane.kubeconfig, env, work / f"{identity}.log", *flags, identity=identity,
                lease_namespace=LEASE_NAMESPACE, standby=True,
            )  # fmt: skip
            proc.start()
            procs.append(proc)
        a, b = procs

        def leader() -> tuple[OperatorProcess, OperatorProcess] | None:
            for x, y in ((a, b), (b, a)):
                if x.process is not None and x.stats().get("leader_election_master_status") == 1.0:
                    return x, y
            return None

        stop = threading.Event()
        applied = [0]

        def storm() -> None:
            while not stop.is_set():
                i = applied[0]
                obj = make_inference_service(f"fleet-{i % fleet}", image="vllm/vllm-openai:v0.7.0", model="m")
                obj["spec"]["env"] = [{"name": "ROUND", "value": str(i)}]
                kubectl.apply(obj, NAMESPACE, check=False)
                applied[0] += 1

        thread = threading.Thread(target=storm, daemon=True)
        thread.start()
        pauses: list[float] = []
        deletions: list[float] = []
        stopped: list[float] = []
        refused: list[float] = []
        stale = 0
        for _ in range(rounds):
            old, new = until(leader, timeout=60, what="a leader")
            mark = audit.mark()
            before = old.stats().get("writes_refused_not_leader", 0.0)
            assert old.process is not None
            old.process.send_signal(signal.SIGSTOP)
            paused = time.monotonic()
            until(
                lambda new=new: new.stats().get("leader_election_master_status") == 1.0,
                timeout=60,
                what="takeover",
                interval=0.05,
            )
            pauses.append(time.monotonic() - paused)
            old.process.send_signal(signal.SIGCONT)
            until(lambda old=old: old.stats().get("leader_election_master_status") == 0.0, timeout=30, what="stand by")
            refused.append(old.stats().get("writes_refused_not_leader", 0.0) - before)
            stale += len(writes_after_first(audit, mark, old=old.identity, new=new.identity))
        for _ in range(rounds):
            until(leader, timeout=60, what="a leader")
            kubectl.run("delete", "lease", "inference-operator", "-n", LEASE_NAMESPACE)
            deleted = time.monotonic()
            until(lambda: leader() is None, timeout=10, what="the leader to stop", interval=0.05)
            stopped.append(time.monotonic() - deleted)
            until(leader, timeout=60, what="a leader after the deletion", interval=0.05)
            deletions.append(time.monotonic() - deleted)
        stop.set()
        thread.join(60)
        print(f"takeover after a pause past the lease duration: {summary(pauses)}", flush=True)
        print(
            f"writes refused by the woken replica, per wake-up: "
            f"{[int(r) for r in refused]}; its mutating requests after the new leader's first write: {stale}",
            flush=True,
        )
        print(f"leader stopped after a Lease deletion: {summary(stopped)}", flush=True)
        print(f"takeover after a Lease deletion: {summary(deletions)}; spec changes applied: {applied[0]}", flush=True)
    finally:
        for proc in procs:
            if proc.process is not None:
                proc.process.send_signal(signal.SIGCONT)
                proc.stop()
        registry.stop()
        plane.stop()


def writes_after_first(audit: Any, mark: int, *, old: str, new: str) -> list[str]:
    """Mutating requests (Lease excluded) by ``old`` received after ``new``'s first one."""
    events = [
        e
        for e in audit.events_since(mark)
        if e.get("stage") == "ResponseComplete"
        and e.get("verb") in ("create", "update", "patch", "delete")
        and (e.get("objectRef") or {}).get("resource") != "leases"
    ]
    first_new = min(
        (e["requestReceivedTimestamp"] for e in events if f"({new})" in e.get("userAgent", "")), default=None
    )
    if first_new is None:
        return []
    return [
        f"{e['verb']} {(e.get('objectRef') or {}).get('resource')}"
        for e in events
        if f"({old})" in e.get("userAgent", "") and e["requestReceivedTimestamp"] >= first_new
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--fleet", type=int, default=4)
    parser.add_argument("--no-cluster", action="store_true", help="only the in-process cost of the check")
    args = parser.parse_args()
    check_cost()
    if not args.no_cluster:
        cluster_figures(args.rounds, args.fleet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
