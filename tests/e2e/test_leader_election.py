"""Two operator replicas on a real control plane: one leads, the other waits warm and takes over.

Covers high availability: with two processes on one Lease, the second is a standby
(its metrics say so) and sends no write; a storm of creates begins, the leader is killed (-9)
in the middle of it, the standby takes the Lease after the lease duration and converges every
object, each with one balancer record whose id the status names, and nothing released; in the
API server's audit log and in the balancer's call log (both by user agent, which names the
replica) the killed leader wrote nothing after its death and the standby nothing before it took
the Lease; a graceful stop hands the Lease
over within a few seconds. The figures (failover after kill -9, after a graceful stop) are
printed for the closing note; the bounds asserted are the design's (lease duration + retry).

At most one writer, ``ROUNDS`` times each (``E2E_HA_ROUNDS``, 10 by default), while the specs of a
fleet keep changing: the leader is frozen (SIGSTOP) at a varying point of its work until the
standby has taken over and converged the changes, then resumed (SIGCONT); the Lease is deleted by
hand; its holder is changed by hand. After each, in the API server's audit log and the balancer's
call log (by user agent), no replica wrote (a mutating request the API server accepted, Events
included, or a balancer call) after the other replica's first write; the takeover times are
printed. These rounds run with the harness's shorter election timings (``QUICK_LEASE``: 8, 5 and
1 s), which the rules do not depend on. The rules are in ``onewriter.py`` (unit-tested on
hand-written audit events): a late request is tolerated only if the API server refused it on its
precondition, a status PUT or a finalizer patch refused with 409 (they carry the resourceVersion
they read), the one window the fence cannot close (a request that passed the last check at the
socket in the instant before the process froze, ``kube/fence.py``); any other late request fails
the test, refused or not, and so does a mutating request by the operator's ServiceAccount whose
user agent names neither replica. The woken replica's ``writes_refused_not_leader`` metric, summed
over the pause rounds, must be above zero: at least one pause landed inside its work.
"""

from __future__ import annotations

import datetime
import os
import signal
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from inference_operator.lb.registry import RegistryServer

from .conftest import OPERATOR_NAMESPACE, OPERATOR_SA, Cluster, suite_operator
from .harness import OperatorProcess, is_ready, wait_until
from .onewriter import attribute, check_one_writer, parse_time
from .workloads import llama

STORM = 12
LEASE = "inference-operator"  # cluster-wide mode's default Lease name


def replica(
    cluster: Cluster, kubeconfig: Path, registry: RegistryServer, log: Path, name: str, *, quick_lease: bool = False
) -> OperatorProcess:
    return suite_operator(cluster, kubeconfig, registry, log, identity=name, standby=True, quick_lease=quick_lease)


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


# -- at most one writer: a paused leader, a deleted Lease, a hand-edited holder --------

ROUNDS = int(os.environ.get("E2E_HA_ROUNDS", "10"))
"""Rounds per disruption; the issue asks for 10 (lower it for a quick CI run)."""
FLEET = 4  # InferenceServices whose specs keep changing while the leader is disrupted
IDENTITIES = ("ha-a", "ha-b")
OPERATOR_USER = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_SA}"


class Storm:
    """Spec changes to the fleet, one kubectl apply after another, on a thread, until stopped."""

    def __init__(self, cluster: Cluster, namespace: str, tag: str) -> None:
        self.cluster, self.namespace, self.tag = cluster, namespace, tag
        self.applied = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            name = f"fleet-{self.applied % FLEET}"
            env = [{"name": "ROUND", "value": f"{self.tag}-{self.applied}"}]
            self.cluster.kubectl.apply(llama(name, replicas=1, env=env), self.namespace, check=False)
            self.applied += 1

    def __enter__(self) -> Storm:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(60)


def converged(cluster: Cluster, namespace: str) -> bool:
    return all(is_ready(cluster.kubectl.get("infsvc", f"fleet-{i}", namespace)) for i in range(FLEET))


def leader_of(a: OperatorProcess, b: OperatorProcess) -> tuple[OperatorProcess, OperatorProcess] | None:
    if a.leading():
        return a, b
    return (b, a) if b.leading() else None


def signal_process(proc: OperatorProcess, sig: signal.Signals) -> None:
    assert proc.process is not None
    proc.process.send_signal(sig)


@dataclass
class Pair:
    """Two replicas, the cluster and the balancer: one disruption round at a time."""

    cluster: Cluster
    namespace: str
    registry: RegistryServer
    a: OperatorProcess
    b: OperatorProcess
    figures: dict[str, list[float]]

    def leader(self) -> tuple[OperatorProcess, OperatorProcess]:
        return wait_until(lambda: leader_of(self.a, self.b), timeout=40, what="a leader")

    def converge(self, what: str) -> None:
        wait_until(lambda: converged(self.cluster, self.namespace), timeout=120, what=f"{what}: the fleet converged")

    def storm(self, tag: str, *, after: int) -> Storm:
        """A storm of spec changes, returned once ``after`` of them were applied (the point of
        the leader's work at which the disruption lands varies with it)."""
        storm = Storm(self.cluster, self.namespace, tag).__enter__()
        wait_until(lambda: storm.applied > after, timeout=30, what="the storm to start", interval=0.05)
        return storm

    def check(self, mark: int, since: float, what: str, *, new_leader: str = "") -> None:
        assert self.cluster.audit is not None
        attributed = attribute(
            self.cluster.audit.events_since(mark),
            self.registry.calls(),
            identities=IDENTITIES,
            operator_user=OPERATOR_USER,
            since=since,
        )
        writes = attributed.writes
        assert writes, f"{what}: nobody wrote, the check would prove nothing"
        assert not new_leader or any(w.by == new_leader for w in writes), f"{what}: the new leader wrote nothing"
        tolerated = check_one_writer(attributed, what)
        self.figures["late requests the API server refused"].append(len(tolerated))
        for late in tolerated:
            print(f"{what}: a late request from {late.by} was refused by the API server ({late.code}): {late.what}")

    def mark(self) -> tuple[int, float]:
        assert self.cluster.audit is not None
        return self.cluster.audit.mark(), time.time()

    def pause_round(self, i: int) -> None:
        """The leader frozen past the lease duration; the standby converges; the leader resumes."""
        leader, standby = self.leader()
        mark, since = self.mark()
        storm = self.storm(f"pause{i}", after=i % 4)
        try:
            # Counted from the instant of the pause: a refusal before it (a slow renewal) proves
            # nothing about a paused writer.
            refused_before = leader.stats()["writes_refused_not_leader"]
            signal_process(leader, signal.SIGSTOP)
            paused = time.monotonic()
            wait_until(standby.leading, timeout=40, what=f"pause round {i}: the standby to take over")
            self.figures["a pause (SIGSTOP)"].append(time.monotonic() - paused)
        finally:
            storm.__exit__()
        self.converge(f"pause round {i}")
        signal_process(leader, signal.SIGCONT)
        wait_until(lambda: not leader.leading(), timeout=20, what=f"pause round {i}: the woken replica to stand by")
        self.storm(f"after{i}", after=FLEET).__exit__()  # the new leader keeps writing after the wake-up
        self.converge(f"pause round {i}, after the wake-up")
        refused = leader.stats()["writes_refused_not_leader"] - refused_before
        self.figures["writes the woken replica's fence refused"].append(refused)
        print(f"pause round {i}: the woken replica's fence refused {refused:.0f} writes")
        self.check(mark, since, f"pause round {i}", new_leader=standby.identity)

    def delete_round(self, i: int) -> None:
        """``kubectl delete lease`` by hand, during a storm."""
        self.leader()
        mark, since = self.mark()
        storm = self.storm(f"delete{i}", after=i % 4)
        try:
            self.cluster.kubectl.run("delete", "lease", LEASE, "-n", OPERATOR_NAMESPACE)
            deleted = time.monotonic()
            wait_until(lambda: leader_of(self.a, self.b) is None, timeout=10, what="the leader to stop at once")
            self.figures["stop leading after a Lease deletion"].append(time.monotonic() - deleted)
            self.leader()
            self.figures["a Lease deletion"].append(time.monotonic() - deleted)
        finally:
            storm.__exit__()
        self.converge(f"lease deletion round {i}")
        self.check(mark, since, f"lease deletion round {i}")

    def edit_round(self, i: int) -> None:
        """The holder changed by hand: both stop at once, and lead again once that record expired."""
        self.leader()
        mark, since = self.mark()
        storm = self.storm(f"edit{i}", after=i % 4)
        try:
            patch = '{"spec":{"holderIdentity":"someone-else"}}'
            self.cluster.kubectl.run("patch", "lease", LEASE, "-n", OPERATOR_NAMESPACE, "--type=merge", "-p", patch)
            edited = time.monotonic()
            wait_until(lambda: leader_of(self.a, self.b) is None, timeout=10, what="both to stop leading at once")
            self.figures["stop leading after a holder edit"].append(time.monotonic() - edited)
            self.leader()
            self.figures["a holder edit"].append(time.monotonic() - edited)
        finally:
            storm.__exit__()
        self.converge(f"holder edit round {i}")
        self.check(mark, since, f"holder edit round {i}")


def test_no_replica_writes_after_another_replicas_first_write_when_paused_or_its_lease_deleted_or_edited(
    cluster: Cluster,
    namespace: str,
    operator: OperatorProcess,
    operator_kubeconfig: Path,
    registry: RegistryServer,
    tmp_path: Path,
) -> None:
    if cluster.audit is None:  # E2E_KUBECONFIG: a cluster whose audit log the suite cannot read
        pytest.fail(
            "this test proves 'no write after the other replica's first write' from the API server's audit "
            "log by user agent; the cluster under test has none the suite can read: run it on the local "
            "control plane (make e2e without E2E_KUBECONFIG)",
            pytrace=False,
        )
    operator.stop()  # the session's operator holds the cluster-wide Lease: it hands it over
    # The rules checked here do not depend on the timings; the harness's shorter ones make each
    # takeover wait 8 s for an expiry (5 s after a deletion) instead of 15 (10).
    a = replica(cluster, operator_kubeconfig, registry, tmp_path / "a.log", "ha-a", quick_lease=True)
    b = replica(cluster, operator_kubeconfig, registry, tmp_path / "b.log", "ha-b", quick_lease=True)
    figures: dict[str, list[float]] = defaultdict(list)
    pair = Pair(cluster, namespace, registry, a, b, figures)
    try:
        a.start()
        b.start()
        for i in range(FLEET):
            cluster.kubectl.apply(llama(f"fleet-{i}", replicas=1), namespace)
        pair.converge("the start")
        for i in range(ROUNDS):
            pair.pause_round(i)
        refused = figures["writes the woken replica's fence refused"]
        assert sum(refused) > 0, (
            f"in none of {ROUNDS} pause rounds did the woken replica's fence refuse a write: no pause landed "
            "inside its work, so these rounds proved nothing about a paused writer"
        )
        for i in range(ROUNDS):
            pair.delete_round(i)
        for i in range(max(1, ROUNDS // 5)):
            pair.edit_round(i)
    finally:
        for proc in (a, b):
            if proc.process is not None and proc.process.poll() is None:
                signal_process(proc, signal.SIGCONT)
                proc.stop()
        print(f"\nrounds: {ROUNDS} pauses, {ROUNDS} Lease deletions, {max(1, ROUNDS // 5)} holder edits")
        for name, values in figures.items():
            if name.startswith(("writes", "late")):
                print(f"{name}: {sum(values):.0f} in total, by round {[int(v) for v in values]}")
                continue
            label = name if name.startswith("stop") else f"takeover after {name}"
            print(f"{label}: n={len(values)} min {min(values):.1f}s max {max(values):.1f}s")
        operator.start()
