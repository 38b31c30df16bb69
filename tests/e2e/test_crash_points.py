"""The operator dying at every write, the API server restarting mid-storm, the registry going
away: on a real control plane, everything converges and nothing leaks.

Covers:
- crash points: a dry run lists the operator's mutating calls (API writes and load balancer
  register/release) along create → Ready → update (image, replicas, GPU removed) → delete of
  one InferenceService; then, for each of those calls, taken as the k-th call of its kind
  (``INFERENCE_OPERATOR_CRASH_ON``: "the 3rd status write" is the same point in every run), a
  fresh namespace runs the path with an operator that exits (137, as kill -9) right after it,
  is restarted, and the invariants are checked at each stop: exactly one Deployment and one
  Service controlled by the object and equal to its spec, a registry record iff the object
  exists (same id across the update), the finalizer gone only after the release (no record
  left once the object is), Ready with observedGeneration == generation, nothing left after
  the delete, nothing stuck (every stop has a deadline). The crash points, where each landed
  and the seconds per stop are printed. A rollout takes a different number of status writes
  from run to run (9 to 11 seen), so the last status writes of the dry run may not come
  again: only those may be missed.
- kube-apiserver killed and restarted (same port, certificates, flags) while 30
  InferenceServices converge: all Ready, no error left in any status, one record each with
  the id its status names, the operator alive throughout.
- the registry down (connections refused): objects created meanwhile say LoadBalancerFailed
  with the registry's error; deleted ones keep the finalizer and say so; the registry back
  (same port and records) → created ones Ready, deleted ones gone, no record leaked.

Why the session operator is paused here: it watches every namespace (ClusterRole, cluster-wide
mode), so it would reconcile these objects too, register them in the session registry and,
above all, add writes the crash points do not count. Each test here runs its own operator in
namespaced mode (``--namespace``, one per namespace it uses) against this module's registry;
the module stops the session operator first and starts it again after (as test_namespaced
does), and leaves no InferenceService behind for it.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Protocol

import pytest
import yaml

from .conftest import OPERATOR_NAMESPACE, RESYNC_SECONDS, Cluster
from .crashpaths import (
    CRASH_ENV,
    CRASH_ON_ENV,
    PathOutcome,
    RestartableRegistry,
    Supervised,
    children_and_record_gone,
    controlled_by,
    plans_from,
    run_path,
)
from .harness import FINALIZER, Obj, OperatorProcess, condition, is_ready, operator_env, wait_until

STORM = 30
TIMEOUT = 120.0


@pytest.fixture(scope="module")
def lb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestartableRegistry]:
    registry = RestartableRegistry(tmp_path_factory.mktemp("crash-lb") / "state.json")
    registry.start()
    try:
        yield registry
    finally:
        registry.stop()


@pytest.fixture(scope="module")
def session_operator_paused(operator: OperatorProcess) -> Iterator[None]:
    if operator.process is not None:
        operator.stop()
    try:
        yield
    finally:
        if operator.process is None:
            operator.start()


class OperatorFactory(Protocol):
    def __call__(
        self, namespace: str, crash_after: int, crash_on: str = "", *, workers: int = 1
    ) -> OperatorProcess: ...


@pytest.fixture()
def make_operator(
    cluster: Cluster,
    operator_kubeconfig: Path,
    lb: RestartableRegistry,
    session_operator_paused: None,
    tmp_path: Path,
) -> OperatorFactory:
    """``(namespace, crash_after, crash_on) -> OperatorProcess`` watching only that namespace;
    one log per namespace (a restarted process appends to it)."""

    def make(namespace: str, crash_after: int, crash_on: str = "", *, workers: int = 1) -> OperatorProcess:
        # Every operator of this module (the crash paths' restarts, the API server restart's and the
        # registry outage's) starts on a Lease it did not last write, and waits one renew deadline.
        env = operator_env(cluster.bin_dir, quick_lease=True)
        if crash_after:
            env[CRASH_ENV] = str(crash_after)
        if crash_on:
            env[CRASH_ON_ENV] = crash_on
        return OperatorProcess(
            operator_kubeconfig,
            env,
            tmp_path / f"operator-{namespace}.log",
            "--namespace",
            namespace,
            "--lb-provider",
            "http",
            "--lb-url",
            lb.url,
            "--lb-timeout",
            "2",
            "--resync-period",
            str(RESYNC_SECONDS / 2),
            "--requeue-period",
            "1",
            "--workers",
            str(workers),
            identity=f"crash-{namespace}",  # a restart takes its own Lease back at once, writes 5 s on
            lease_namespace=OPERATOR_NAMESPACE,
        )

    return make


def report(outcomes: list[PathOutcome], total: float) -> str:
    phases = ("start", "create", "update", "delete", "collect")
    head = f"{'#':>3}  {'crash after':<34} {'landed':>6} {'noticed in':<10} {'s':>5}  reg/rel  "
    lines = [
        f"crash points: {len(outcomes) - 1} tried after a dry run, {total:.0f}s in all",
        head + " ".join(f"{p:>7}" for p in phases),
    ]
    for o in outcomes:
        plan = o.plan
        label = str(plan.position) if plan else "dry"
        point = f"{plan.kind} #{plan.k}" if plan else "(dry run: no crash)"
        landed = "-" if o.crashed_at is None else str(o.crashed_at)
        if plan and o.crashed_after is None:
            landed = "missed"
        noticed = o.noticed_in or ("-" if o.crashed_after is None else "end")
        times = " ".join(f"{o.phase_seconds.get(p, 0.0):7.1f}" for p in phases)
        calls = f"{o.register_calls}/{o.release_calls}"
        lines.append(f"{label:>3}  {point:<34} {landed:>6} {noticed:<10} {o.seconds:5.1f}  {calls:<7}  {times}")
    return "\n".join(lines)


def test_every_crash_point_along_create_update_delete_converges_with_nothing_leaked(
    cluster: Cluster, lb: RestartableRegistry, make_operator: OperatorFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    dry = run_path(cluster.kubectl, lb, make_operator, plan=None, label="dry")
    assert dry.crashed_after is None and dry.writes, dry
    plans = plans_from(dry.writes)
    outcomes = [dry]
    try:
        for plan in plans:
            outcomes.append(run_path(cluster.kubectl, lb, make_operator, plan=plan, label=f"{plan.position:02d}"))
    finally:
        with capsys.disabled():
            print("\n" + report(outcomes, time.monotonic() - started))
            print(
                "dry run: "
                + "; ".join(f"{i}. {w.replace(f' {dry.namespace}/', ' ')}" for i, w in enumerate(dry.writes, 1))
            )
    # How many status writes a rollout takes depends on timing (how many replicas were ready
    # when a pass ran), so a run may make fewer status writes than the dry run and miss one of
    # them (not always the last: the next run may make more again); every other crash point is
    # always reached.
    status = "update_status InferenceService"
    missed = [o.plan for o in outcomes[1:] if o.plan and o.crashed_after is None]
    assert all(p.kind == status for p in missed), missed
    assert len(missed) <= 3, report(outcomes, time.monotonic() - started)


def storm_objects(count: int) -> list[Obj]:
    return [
        {
            "apiVersion": "serving.inference-operator.dev/v1",
            "kind": "InferenceService",
            "metadata": {"name": f"storm-{i:02d}"},
            "spec": {"image": "vllm/vllm-openai:v0.6.3", "model": "m", "replicas": 1},
        }
        for i in range(count)
    ]


HEALTHY = {"Ready": "True", "DeploymentReady": "True", "ServiceReady": "True", "LoadBalancerReady": "True"}


def status_problems(obj: Obj) -> list[str]:
    """Conditions that are not as a converged object's must be (Degraded, when present, False)."""
    name = obj["metadata"]["name"]
    problems = [
        f"{name} {type_}={c.get('status')} {c.get('reason')}: {c.get('message')}"
        for type_, want in HEALTHY.items()
        if (c := condition(obj, type_)).get("status") != want
    ]
    if (degraded := condition(obj, "Degraded")) and degraded.get("status") != "False":
        problems.append(f"{name} Degraded={degraded.get('status')} {degraded.get('reason')}")
    return problems


def test_an_api_server_restart_mid_storm_converges_with_no_duplicate_registration(
    cluster: Cluster, lb: RestartableRegistry, make_operator: OperatorFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    if cluster.plane is None:
        pytest.fail(
            "restarting kube-apiserver needs the local control plane; with E2E_KUBECONFIG pointing elsewhere, "
            "deselect this test explicitly (-k 'not api_server_restart')",
            pytrace=False,
        )
    kubectl = cluster.kubectl
    namespace = f"storm-{uuid.uuid4().hex[:6]}"
    kubectl.run("create", "namespace", namespace)
    sup = Supervised(lambda n: make_operator(namespace, n, workers=4))
    sup.start()
    try:
        started = time.monotonic()
        # kubectl applies the storm in the background; the API server is killed as soon as the
        # operator has written its first Deployment: creates, operator writes and watches are
        # all in flight. What kubectl did not get to create is applied again after.
        storm = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": storm_objects(STORM)})
        applying = subprocess.Popen(
            ["kubectl", "--kubeconfig", str(kubectl.kubeconfig), "apply", "-n", namespace, "-f", "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=kubectl.env,
            text=True,
        )
        assert applying.stdin is not None
        applying.stdin.write(storm)
        applying.stdin.close()
        api = cluster.plane.client()
        wait_until(
            lambda: (api.get_json(f"/apis/apps/v1/namespaces/{namespace}/deployments") or {}).get("items"),
            timeout=30,
            interval=0.02,
            what="the operator to write its first Deployment",
        )
        existed = (
            api.get_json(f"/apis/serving.inference-operator.dev/v1/namespaces/{namespace}/inferenceservices") or {}
        ).get("items") or []
        ready_before = sum(is_ready(o) for o in existed)
        away = cluster.plane.restart("kube-apiserver", hard=True)
        applying.wait(60)
        # A restarted kube-apiserver serves built-in kinds before it has loaded the CRDs again
        # ("Resource kind … not found", 503): the user's re-apply is retried until it is taken.
        wait_until(
            lambda: kubectl.run("apply", "-n", namespace, "-f", "-", stdin=storm, check=False).returncode == 0,
            timeout=60,
            what="the re-apply to be accepted once the restarted API server serves the CRD again",
        )
        items = sup.wait(
            lambda: (
                (found := kubectl.json("get", "infsvc", "-n", namespace)["items"])
                and len(found) == STORM
                and all(is_ready(o) for o in found)
                and found
            ),
            what=f"all {STORM} InferenceServices Ready after the API server restart",
            timeout=TIMEOUT,
        )
        converged = time.monotonic() - started
        assert sup.exits == [], "the operator died"
        assert sup.proc is not None and sup.proc.stats()["dead_threads"] == 0
        problems = [p for o in items for p in status_problems(o)]
        assert problems == [], problems
        records = lb.records(namespace)
        assert sorted(records) == sorted(o["metadata"]["name"] for o in items)
        ids = [r.id for r in records.values()]
        assert len(set(ids)) == len(ids) == STORM, f"duplicate registrations: {ids}"
        for obj in items:
            assert obj["status"]["loadBalancer"]["id"] == records[obj["metadata"]["name"]].id
        deployments = kubectl.json("get", "deployments", "-n", namespace)["items"]
        uids = {o["metadata"]["name"]: o["metadata"]["uid"] for o in items}
        assert sorted(d["metadata"]["name"] for d in deployments) == sorted(uids)
        assert all(controlled_by(d, uids[d["metadata"]["name"]]) for d in deployments)
        with capsys.disabled():
            print(
                f"\napi server restart mid-storm: kube-apiserver killed once the first Deployment existed, when "
                f"{len(existed)}/{STORM} InferenceServices existed and {ready_before} were Ready; back in "
                f"{away:.1f}s (kubectl apply exit {applying.returncode}); all {STORM} Ready "
                f"{converged:.1f}s after the apply started"
            )
        kubectl.run("delete", "infsvc", "--all", "-n", namespace, "--wait=false")
        sup.wait(lambda: children_and_record_gone(kubectl, lb, namespace), what="the storm deleted and released")
    finally:
        sup.stop()
        kubectl.run("delete", "namespace", namespace, "--wait=false", check=False)


def test_a_registry_outage_holds_finalizers_and_explains_then_everything_converges(
    cluster: Cluster, lb: RestartableRegistry, make_operator: OperatorFactory
) -> None:
    kubectl = cluster.kubectl
    namespace = f"outage-{uuid.uuid4().hex[:6]}"
    kubectl.run("create", "namespace", namespace)
    sup = Supervised(lambda n: make_operator(namespace, n, workers=2))
    sup.start()
    objects = {o["metadata"]["name"]: o for o in storm_objects(5)}
    kept, deleted, created = ["storm-00"], ["storm-01", "storm-02"], ["storm-03", "storm-04"]

    def get(name: str) -> Obj | None:
        return kubectl.get("infsvc", name, namespace)

    def ready(name: str) -> bool:
        return is_ready(get(name))

    def gone(name: str) -> bool:
        return get(name) is None

    def lb_failed(name: str) -> Obj | None:
        obj = get(name)
        return obj if condition(obj, "LoadBalancerReady").get("reason") == "LoadBalancerFailed" else None

    try:
        for name in kept + deleted:
            kubectl.apply(objects[name], namespace)
        for name in kept + deleted:
            sup.wait(partial(ready, name), what=f"{name} Ready before the outage")
        before = lb.records(namespace)
        assert sorted(before) == sorted(kept + deleted)

        lb.stop()
        for name in deleted:
            kubectl.run("delete", "infsvc", name, "-n", namespace, "--wait=false")
        for name in created:
            kubectl.apply(objects[name], namespace)
        for name in created:
            failed = sup.wait(partial(lb_failed, name), what=f"{name} to say the registry failed")
            message = condition(failed, "LoadBalancerReady")["message"]
            assert lb.url in message and "connection failed" in message, message
            assert condition(failed, "Ready")["status"] == "False"
            assert kubectl.get("deployment", name, namespace) is not None, "children do not wait for the registry"
        for name in deleted:
            stuck = sup.wait(partial(lb_failed, name), what=f"deleted {name} to say its release failed")
            assert stuck["metadata"].get("deletionTimestamp") and stuck["metadata"]["finalizers"] == [FINALIZER]
            message = condition(stuck, "LoadBalancerReady")["message"]
            assert "finalizer stays" in message and lb.url in message, message
            assert stuck["status"]["phase"] == "Terminating"

        lb.start()
        for name in deleted:
            sup.wait(partial(gone, name), what=f"{name} gone once the registry is back", timeout=TIMEOUT)
        for name in kept + created:
            sup.wait(partial(ready, name), what=f"{name} Ready once the registry is back", timeout=TIMEOUT)
        after = lb.records(namespace)
        assert sorted(after) == sorted(kept + created), f"records leaked or missing: {sorted(after)}"
        assert after["storm-00"].id == before["storm-00"].id, "the kept object's record was replaced"
        assert sup.exits == []
        kubectl.run("delete", "infsvc", "--all", "-n", namespace, "--wait=false")
        sup.wait(lambda: children_and_record_gone(kubectl, lb, namespace), what="everything deleted and released")
    finally:
        if lb.server is None:
            lb.start()
        sup.stop()
        kubectl.run("delete", "namespace", namespace, "--wait=false", check=False)
