"""Two operator replicas on a real control plane: one leads, the other waits warm and takes over.

Covers (issue 11, high availability): with two processes on one Lease, the second is a standby
(its metrics say so) and sends no write; a storm of creates begins, the leader is killed (-9)
in the middle of it, the standby takes the Lease after the lease duration and converges every
object, each with one balancer record whose id the status names, and nothing released; in the
API server's audit log and in the balancer's call log (both by user agent, which names the
replica) the killed leader wrote nothing after its death and the standby nothing before it took
the Lease; a graceful stop hands the Lease
over within a few seconds. The figures (failover after kill -9, after a graceful stop) are
printed for the closing note; the bounds asserted are the design's (lease duration + retry).
"""

from __future__ import annotations

import datetime
import time
from pathlib import Path

from inference_operator.lb.registry import RegistryServer

from .conftest import OPERATOR_NAMESPACE, Cluster, suite_operator
from .harness import OperatorProcess, is_ready, wait_until
from .workloads import llama

STORM = 12
LEASE = "inference-operator"  # cluster-wide mode's default Lease name


def replica(cluster: Cluster, kubeconfig: Path, registry: RegistryServer, log: Path, name: str) -> OperatorProcess:
    return suite_operator(cluster, kubeconfig, registry, log, identity=name, standby=True)


def parse_time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_standby_takes_over_from_a_killed_leader_and_a_graceful_stop_hands_over(
    cluster: Cluster,
    namespace: str,
    operator: OperatorProcess,
    operator_kubeconfig: Path,
    registry: RegistryServer,
    tmp_path: Path,
) -> None:
    operator.stop()  # the session's operator holds the cluster-wide Lease: it hands it over
    a = replica(cluster, operator_kubeconfig, registry, tmp_path / "a.log", "ha-a")
    b = replica(cluster, operator_kubeconfig, registry, tmp_path / "b.log", "ha-b")
    try:
        a.start()
        wait_until(a.leading, timeout=30, what="replica a to lead")
        b.start()
        assert not b.leading(), "two leaders"
        mark = cluster.audit.mark() if cluster.audit else 0
        names = [f"storm-{i}" for i in range(STORM)]
        for name in names[: STORM // 2]:
            cluster.kubectl.apply(llama(name, replicas=1), namespace)
        a.kill()
        killed_at = datetime.datetime.now(datetime.UTC)
        killed = time.monotonic()
        for name in names[STORM // 2 :]:
            cluster.kubectl.apply(llama(name, replicas=1), namespace)
        wait_until(b.leading, timeout=40, what="the standby to take the lease")
        failover = time.monotonic() - killed
        lease = cluster.kubectl.json("get", "lease", LEASE, "-n", OPERATOR_NAMESPACE)["spec"]
        assert lease["holderIdentity"] == "ha-b"
        took_over = parse_time(lease["acquireTime"])
        for name in names:
            cluster.kubectl.wait_for("infsvc", name, namespace, is_ready, what=f"{name} Ready under the new leader")
        records = registry.registrations()
        for name in names:
            obj = cluster.kubectl.get("infsvc", name, namespace)
            assert obj is not None and obj["status"]["loadBalancer"]["id"] == records[f"{namespace}/{name}"].id
        assert not any(key.startswith(f"{namespace}/") for key in registry.stats()["release_calls"])
        # The balancer's own record of who called (the replica is in the User-Agent): the killed
        # leader made no call after its death, the standby none before it held the Lease.
        lb_calls = [c for c in registry.calls() if c.key.startswith(f"{namespace}/")]
        lb_by_a = [c.at for c in lb_calls if "(ha-a)" in c.caller]
        lb_by_b = [c.at for c in lb_calls if "(ha-b)" in c.caller]
        assert len(lb_by_a) + len(lb_by_b) == len(lb_calls), [c.caller for c in lb_calls]
        assert lb_by_b, "the new leader registered nothing"
        assert all(at <= killed_at.timestamp() for at in lb_by_a), "a killed replica called the balancer"
        assert min(lb_by_b) >= took_over.timestamp(), "the standby called the balancer before it held the lease"
        if cluster.audit is not None:
            writes = [
                e
                for e in cluster.audit.events_since(mark)
                if e.get("stage") == "ResponseComplete"
                and e.get("verb") in ("create", "update", "patch", "delete")
                and (e.get("objectRef") or {}).get("resource") not in ("leases", "events")
            ]
            by_a = [parse_time(e["requestReceivedTimestamp"]) for e in writes if "(ha-a)" in e.get("userAgent", "")]
            by_b = [parse_time(e["requestReceivedTimestamp"]) for e in writes if "(ha-b)" in e.get("userAgent", "")]
            assert by_b, "the new leader wrote nothing"
            assert all(t <= killed_at for t in by_a), "a killed replica wrote"
            assert min(by_b) >= took_over, "the standby wrote before it held the lease"

        a.start()  # back, as a standby now
        assert not a.leading()
        stopped = time.monotonic()
        b.stop()
        wait_until(a.leading, timeout=15, what="the graceful handover")
        handover = time.monotonic() - stopped
        print(f"\nfailover after kill -9: {failover:.1f}s; handover after a graceful stop: {handover:.1f}s")
        assert failover <= 15 + 2 + 3  # lease duration + retry period + polling slack
        assert handover <= 2 + 3  # one retry period + polling slack
    finally:
        for proc in (a, b):
            if proc.process is not None and proc.process.poll() is None:
                proc.stop()
        operator.start()
