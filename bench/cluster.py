#!/usr/bin/env python3
"""Benchmark (not a test): N InferenceServices applied at once on the local control plane.

Reports, in one run:
- the raw floor: the same Deployments and Services created directly, with the same client and
  concurrency, until every Deployment is ready;
- the operator: time from the first create until every InferenceService is Ready, mutating
  API requests per object to converge (from the API server's audit log, by the operator's
  user agent, Events excluded), mutating requests per object over two resync periods, and
  the operator's peak RSS;
- event-to-reconcile latency from the operator's histogram: during the burst (how long the
  queue got) and in steady state afterwards (a trickle of single spec changes on the
  converged objects: how fast one change is picked up).

The cluster gets what an install gives it (deploy/crds and the finalizer admission policy of
deploy/admission; `--no-admission-policy` leaves the policy out). The operator runs as installed:
leader election on (every write then asks the fence whether the term is still valid;
`--leader-election false` measures without it) and, in cluster mode, the cache of every Node and
unfinished Pod for the rollouts' GPU count (`--no-capacity-reads` measures without it). Both phases saturate the two
cores of a small machine, so a single ratio is noisy: `--repeat 5` runs on fresh control planes
and prints the median.

`--kopf-alone` runs one more process beside the operator, Kopf with the operator's streams,
settings and login and a sink that drops every event (bench/kopfalone.py): it sees the same
events, and its CPU and memory are the floor of the operator's. Its CPU slows the rest, so such
a run is not one of the README's figures.

`--memray FILE` runs the converging operator under memray (a PyPI package, installed apart):
``python -m memray summary FILE`` then shows what its heap held at its peak, by where it was
allocated. The profiler slows the operator and adds to its resident set: not the README's figures.

Usage: python bench/cluster.py [--count 200] [--workers 8] [--repeat 5] [--profile DIR]
                               [--leader-election true|false] [--no-capacity-reads] [--kopf-alone]
                               [--memray FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import urllib3

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "hack")]

import cluster as local  # noqa: E402 - hack/cluster.py
import figures  # noqa: E402 - bench/figures.py
import kopfalone  # noqa: E402 - bench/kopfalone.py
import promtext  # noqa: E402 - bench/promtext.py
from procstats import cpu_line, cpu_seconds, process_cpu, rss_mib  # noqa: E402 - bench/procstats.py

from inference_operator.api.constants import DEPLOYMENT, KIND  # noqa: E402
from inference_operator.api.models import InferenceService  # noqa: E402
from inference_operator.api.samples import make_inference_service  # noqa: E402
from inference_operator.kube.client import KubeClient, path_of  # noqa: E402
from inference_operator.lb.http import HttpLoadBalancer  # noqa: E402
from inference_operator.reconcile.builders import desired_deployment, desired_service  # noqa: E402
from tests.e2e.harness import (  # noqa: E402
    AuditLog,
    Kubectl,
    OperatorProcess,
    free_port,
    install_admission_policy,
    install_crds,
    is_ready,
    operator_env,
    wait_until,
)

RESYNC = 10.0
STEADY_CHANGES = 100
STEADY_INTERVAL = 0.2  # seconds between two spec changes in the steady-state phase
POLL = 0.1  # seconds between checks of the watch-fed counters
PROFILE_SECONDS = 30  # covers either phase at N=200


def manifests(n: int, namespace: str) -> list[dict[str, Any]]:
    return [
        make_inference_service(
            f"bench-{i:04d}", image="vllm/vllm-openai:v0.7.0", model="m", replicas=1, namespace=namespace
        )
        for i in range(n)
    ]


def deployment_ready(dep: dict[str, Any]) -> bool:
    """Every bench Deployment has one replica."""
    return bool((dep.get("status") or {}).get("readyReplicas") == 1)


def run_concurrently(fn: Callable[[Any], Any], items: list[Any], workers: int) -> None:
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(fn, items))


class ReadyWatch:
    """Counts objects of a kind that satisfy ``ready``, from one watch stream (cheaper for the
    API server than polling LISTs, so the measurement disturbs what it measures less)."""

    def __init__(self, client: KubeClient, kind: str, namespace: str, ready: Callable[[dict[str, Any]], bool]) -> None:
        self.ready = ready
        self.state: dict[str, bool] = {}
        transport = client.transport
        self.response = transport.pool.request(
            "GET",
            f"{transport.server}{path_of(kind, namespace)}?watch=true&timeoutSeconds=1800",
            headers={**transport.headers(), "Accept": "application/json"},
            timeout=urllib3.Timeout(connect=10, read=1900),
            preload_content=False,
        )
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # the stream is closed when the measurement ends
            for line in self.response:
                event = json.loads(line)
                obj = event["object"]
                self.state[obj["metadata"]["name"]] = event["type"] != "DELETED" and self.ready(obj)

    def count(self) -> int:
        return sum(self.state.values())

    def close(self) -> None:
        """Close the stream's own connection (never hand a half-read stream back to the pool)."""
        with contextlib.suppress(Exception):
            self.response.shutdown()
        self.response.close()
        self.thread.join(10)


def raw_floor(client: KubeClient, n: int, workers: int, namespace: str) -> float:
    children = []
    for obj in manifests(n, namespace):
        obj["metadata"]["uid"] = "bench"
        isvc = InferenceService.from_object(obj)
        for child in (desired_deployment(isvc), desired_service(isvc)):
            del child["metadata"]["ownerReferences"]
            children.append(child)
    watch = ReadyWatch(client, DEPLOYMENT, namespace, deployment_ready)
    start = time.monotonic()
    run_concurrently(client.create, children, workers)
    wait_until(lambda: watch.count() == n, timeout=600, what="raw Deployments to be ready", interval=POLL)
    elapsed = time.monotonic() - start
    watch.close()
    return elapsed


class Profiles:
    """CPU profiles of one phase, recorded in the background for ``PROFILE_SECONDS``: the API
    server's (its /debug/pprof endpoint; read with ``go tool pprof -top kube-apiserver FILE``)
    and, when ``py-spy`` is installed, the operator's Python threads holding the GIL
    (collapsed stacks, one per line)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.threads: list[threading.Thread] = []
        self.spies: list[subprocess.Popen[bytes]] = []

    def start(self, phase: str, client: KubeClient, operator_pid: int | None = None) -> None:
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        dest = self.folder / f"{phase}.apiserver.pprof"

        def fetch() -> None:
            answer = client.transport.request(
                "GET", "/debug/pprof/profile", query={"seconds": str(PROFILE_SECONDS)}, timeout=PROFILE_SECONDS + 30
            )
            dest.write_bytes(answer.data)

        self.threads.append(threading.Thread(target=fetch, daemon=True))
        self.threads[-1].start()
        py_spy = shutil.which("py-spy")
        if operator_pid is not None and py_spy:
            command = [py_spy, "record", "--pid", str(operator_pid), "--duration", str(PROFILE_SECONDS)]
            command += ["--rate", "400", "--gil", "--format", "raw"]
            command += ["--output", str(self.folder / f"{phase}.operator.txt")]
            self.spies.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def wait(self) -> None:
        for thread in self.threads:
            thread.join(PROFILE_SECONDS + 60)
        for spy in self.spies:
            spy.wait(PROFILE_SECONDS + 60)
        self.threads, self.spies = [], []


def print_kopf_alone(alone: list[kopfalone.KopfAlone], start: dict[str, float], operator_pid: int, n: int) -> None:
    """Kopf alone's CPU per object and peak memory, and the operator's CPU over the same span:
    from the first create until each has handled every event (Kopf alone may lag behind)."""
    for process in alone:
        process.wait_idle()
    operator_ms = (cpu_seconds(operator_pid) - start["operator"]) / n * 1000
    print(f"operator: CPU {operator_ms:.1f} ms per object from the first create until idle (its start excluded)")
    for process in alone:
        used = (cpu_seconds(process.pid) - start[process.name]) / n * 1000
        print(f"{process.name}: CPU {used:.1f} ms per object, peak RSS {rss_mib(process.pid):.1f} MiB (the same span)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1, help="fresh control plane per run; prints the median")
    parser.add_argument("--trace", action="store_true", help="print progress samples")
    parser.add_argument(
        "--no-admission-policy",
        action="store_true",
        help="leave out deploy/admission (the operator then adds its finalizer with a PATCH)",
    )
    parser.add_argument(
        "--leader-election",
        choices=("true", "false"),
        default="true",
        help="the operator's leader election, and so its write fence (default true, as installed)",
    )
    parser.add_argument(
        "--no-capacity-reads",
        action="store_true",
        help="INFERENCE_OPERATOR_READ_CAPACITY=false: no cache of Nodes and Pods (default: cached, as installed)",
    )
    parser.add_argument(
        "--kopf-alone",
        action="store_true",
        help="also run Kopf alone with the operator's streams, settings and login: "
        "the floor of its CPU and memory; not with --readme or --record",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep each run's work directory (control plane and operator logs, the audit log) instead of removing it",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help=f"save CPU profiles of both phases ({PROFILE_SECONDS} s each, which the phases then wait out) in DIR",
    )
    parser.add_argument(
        "--record", type=Path, metavar="FILE", help="append each run's figures to FILE, a JSON line each"
    )
    parser.add_argument(
        "--memray",
        type=Path,
        metavar="FILE",
        help="run the converging operator under memray (a PyPI package), its allocations in FILE: "
        "`python -m memray summary FILE` shows what was held at the peak; its figures are not the README's",
    )
    parser.add_argument(
        "--readme",
        action="store_true",
        help="rewrite the operator's figures in README.md from these runs (with their median and range)",
    )
    args = parser.parse_args(argv)
    if args.memray and (args.readme or args.record):
        parser.error("--memray: the profiler slows the operator and adds to its memory; not with --readme or --record")
    if args.kopf_alone and (args.readme or args.record):
        parser.error("--kopf-alone: its two extra processes slow the operator's run; not with --readme or --record")
    return args


def main() -> int:
    args = parse_args()
    taken = figures.provenance()
    runs = []
    for i in range(args.repeat):
        if args.repeat > 1:
            print(f"-- run {i + 1} of {args.repeat}", flush=True)
        runs.append(run_once(args))
        if args.record:
            with args.record.open("a") as out:
                out.write(json.dumps(runs[-1]) + "\n")
    if args.repeat > 1:
        floors, converges = [r["floor_s"] for r in runs], [r["converge_s"] for r in runs]
        ratios = [c / f for f, c in zip(floors, converges, strict=True)]
        print(
            f"convergence / raw floor over {args.repeat} runs: median {statistics.median(ratios):.2f}x, "
            f"range {min(ratios):.2f}x to {max(ratios):.2f}x; median convergence {statistics.median(converges):.1f}s "
            f"/ median floor {statistics.median(floors):.1f}s = "
            f"{statistics.median(converges) / statistics.median(floors):.2f}x"
        )
    if args.readme:
        figures.record_cluster(figures.README, runs, setup=setup_of(args), taken=taken)
        print("README.md: the operator's figures rewritten from these runs", flush=True)
    return 0


def setup_of(args: argparse.Namespace) -> str:
    """How the runs were made, in the README's words (only what differs from an install)."""
    parts = [f"{args.workers} workers"]
    if args.no_admission_policy:
        parts.append("no admission policy")
    if args.leader_election == "false":
        parts.append("no leader election")
    if args.no_capacity_reads:
        parts.append("no Node and Pod cache")
    return ", ".join(parts)


EVENT_LATENCY = "inference_operator_event_to_reconcile_seconds"
RECONCILE_TIME = "controller_runtime_reconcile_time_seconds"


def latency_buckets(operator: OperatorProcess, metric: str = EVENT_LATENCY) -> list[tuple[float, float]]:
    with urllib.request.urlopen(operator.metrics_url, timeout=5) as response:
        return promtext.buckets(response.read().decode(), metric)


def since(before: list[tuple[float, float]], after: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The observations between two scrapes of one histogram."""
    return [(bound, count - old) for (bound, count), (_, old) in zip(after, before, strict=True)]


def steady_state_latency(client: KubeClient, operator: OperatorProcess, n: int) -> tuple[float, float, float]:
    """Event-to-reconcile p50/p99 (ms) and the event count over a steady trickle of spec
    changes on the converged objects, one at a time, as on a cluster in daily use: the burst's
    figures measure how long the queue was, these how fast one change is picked up. Prints
    the reconcile time over the same changes: an event that arrives while its object is being
    reconciled waits for that pass to end (one worker per key), so the tail follows it."""
    before, passes_before = latency_buckets(operator), latency_buckets(operator, RECONCILE_TIME)
    for i in range(STEADY_CHANGES):
        name = f"bench-{i % n:04d}"
        client.patch(KIND, "bench", name, {"spec": {"args": ["--max-model-len", str(4096 + i)]}})
        time.sleep(STEADY_INTERVAL)  # paces the load; nothing waits on a result here
    wait_until(
        lambda: all(is_ready(o) for o in client.list_objects(KIND, "bench")),
        timeout=600,
        what="the changed InferenceServices to be Ready again",
        interval=1.0,
    )
    operator.wait_idle(reconciles_at_least=0)
    delta = since(before, latency_buckets(operator))
    passes = since(passes_before, latency_buckets(operator, RECONCILE_TIME))
    within = dict(delta).get(0.1, 0.0) / delta[-1][1] if delta and delta[-1][1] else float("nan")
    print(
        f"steady state: {within:.1%} of events reconciled within 100 ms; reconcile time p50 "
        f"{promtext.quantile(0.5, passes) * 1000:.1f} ms, p99 {promtext.quantile(0.99, passes) * 1000:.1f} ms "
        f"over {passes[-1][1] if passes else 0:.0f} passes"
    )
    p50, p99 = (promtext.quantile(q, delta) * 1000 for q in (0.5, 0.99))
    return p50, p99, delta[-1][1] if delta else 0.0


def run_once(args: argparse.Namespace) -> dict[str, float]:
    """One measurement on a fresh control plane; returns its figures (:func:`measure`).
    Its work directory (the control plane with its audit log, about 350 MB at 1,000, and the
    operator's logs) is removed afterwards unless ``--keep``."""
    work = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    try:
        return measure(args, work)
    finally:
        if args.keep:
            print(f"kept {work}: the control plane's logs and audit log, the operator's logs", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)


def measure(args: argparse.Namespace, work: Path) -> dict[str, float]:
    """The figures of one run: seconds of the raw floor and of the convergence, the operator's
    CPU, requests, latencies and memory (the keys ``bench/figures.py`` renders)."""
    n = args.count
    nodes = max(2, math.ceil(2 * n / 100) + 1)
    plane = local.start_control_plane(work / "plane", nodes=nodes)
    # The registry runs in its own process, as it would in real life (in this process its
    # threads would compete for the GIL with the progress polling below).
    lb_port = free_port()
    lb = HttpLoadBalancer(f"http://127.0.0.1:{lb_port}")
    registry: subprocess.Popen[bytes] | None = None
    operator: OperatorProcess | None = None
    alone: list[kopfalone.KopfAlone] = []
    try:
        registry = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "inference_operator.lb.registry",
                "serve",
                "--port",
                str(lb_port),
                "--state",
                str(work / "lb.json"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(lambda: lb.list_registrations() == {}, timeout=30, what="the load balancer registry to start")
        env = operator_env(plane.bin_dir)
        kubectl = Kubectl(plane.kubeconfig, env)
        install_crds(kubectl)
        for ns in ("floor", "bench"):
            kubectl.run("create", "namespace", ns)
        if not args.no_admission_policy:
            install_admission_policy(kubectl, "bench")
        client = KubeClient.from_kubeconfig(str(plane.kubeconfig))
        print(
            f"control plane: {plane.startup_seconds:.1f}s to ready, {nodes} nodes; N={n}, concurrency={args.workers}",
            flush=True,
        )

        profiles = Profiles(args.profile)
        profiles.start("floor", client)
        cpu0 = process_cpu(plane)
        floor = raw_floor(client, n, args.workers, "floor")
        print(f"CPU during the floor {cpu_line(cpu0, process_cpu(plane))}")
        print(f"raw floor: {2 * n} creates + pods ready in {floor:.1f}s", flush=True)
        profiles.wait()
        # Clean up before measuring the operator, so the two runs do not overlap.
        kubectl.run("delete", "namespace", "floor", "--timeout=300s")

        audit = AuditLog(plane.audit_log)
        flags = ["--lb-provider", "http", "--lb-url", f"http://127.0.0.1:{lb_port}", "--workers", str(args.workers)]
        flags += ["--leader-election", args.leader_election]
        if args.no_capacity_reads:
            env = {**env, "INFERENCE_OPERATOR_READ_CAPACITY": "false"}
        print(
            f"operator: leader election {args.leader_election}, "
            f"Node and Pod cache {'off' if args.no_capacity_reads else 'on'}",
            flush=True,
        )
        if args.kopf_alone:
            alone = [kopfalone.KopfAlone({**env, "KUBECONFIG": str(plane.kubeconfig)}, work / "kopf-alone.log")]
            for process in alone:
                process.start()
        # Converge with the default resync period (300 s): a resync in the middle of the
        # measurement would add passes a real operator would not make then.
        memray = ("-m", "memray", "run", "--force", "-q", "-o", str(args.memray)) if args.memray else ()
        operator = OperatorProcess(plane.kubeconfig, env, work / "operator.log", *flags, python_args=memray)
        operator.start()
        mark = audit.mark()
        watch = ReadyWatch(client, KIND, "bench", is_ready)
        others = {"registry": registry.pid, "operator": operator.process.pid if operator.process else 0}
        others.update({process.name: process.pid for process in alone})
        profiles.start("operator", client, others["operator"])
        cpu1 = process_cpu(plane, **others)
        start = time.monotonic()
        run_concurrently(client.create, manifests(n, "bench"), args.workers)

        milestones: dict[str, float] = {}

        trace = []

        def all_ready() -> bool:
            if not args.trace:
                return watch.count() == n
            objs = client.list_objects(KIND, "bench", from_cache=True)
            deps = client.list_objects(DEPLOYMENT, "bench", from_cache=True)
            now = time.monotonic() - start
            trace.append(
                (
                    round(now, 1),
                    len(objs),
                    sum(bool(o["metadata"].get("finalizers")) for o in objs),
                    len(deps),
                    sum(deployment_ready(d) for d in deps),
                    sum(is_ready(o) for o in objs),
                )
            )
            if len(deps) == n:
                milestones.setdefault("all Deployments created", now)
                if all(deployment_ready(d) for d in deps):
                    milestones.setdefault("all Deployments ready", now)
            return len(objs) == n and all(is_ready(o) for o in objs)

        wait_until(all_ready, timeout=1800, what=f"{n} InferenceServices to be Ready", interval=POLL)
        converge = time.monotonic() - start
        cpu2 = process_cpu(plane, **others)  # before waiting out a profile: convergence only
        cpu = cpu_seconds(operator.process.pid) if operator.process else float("nan")
        watch.close()
        profiles.wait()
        print(f"CPU during convergence {cpu_line(cpu1, cpu2)}")
        if args.trace:
            print("t, isvcs, finalized, deployments, deployments ready, isvcs ready")
            for row in trace[::5]:
                print(row)
        if milestones:
            print("milestones: " + ", ".join(f"{k} at {v:.1f}s" for k, v in milestones.items()))
        before = operator.stats()["reconcile_total"]
        operator.wait_idle(reconciles_at_least=before)
        if alone:
            print_kopf_alone(alone, cpu1, operator.process.pid if operator.process else 0, n)
        writes = audit.operator_writes_since(mark)
        by_verb: dict[str, int] = {}
        for w in writes:
            verb_resource = " ".join(w.split()[:2])
            by_verb[verb_resource] = by_verb.get(verb_resource, 0) + 1

        latency = latency_buckets(operator)
        p50, p99 = (promtext.quantile(q, latency) * 1000 for q in (0.5, 0.99))
        pid = operator.process.pid if operator.process else 0
        rss = rss_mib(pid)
        counters = operator.stats()
        steady50, steady99, steady_events = steady_state_latency(client, operator, n)
        # Then restart it with a short resync period: the restart pass and two resyncs over
        # converged objects must send no mutating request.
        operator.stop()
        for process in alone:  # restarted with it: each lists every object at once
            process.stop()
            process.start()
        mark = audit.mark()
        operator = OperatorProcess(
            plane.kubeconfig, env, work / "operator-restarted.log", *flags, "--resync-period", str(RESYNC)
        )
        operator.start()
        operator.wait_idle(reconciles_at_least=3 * n, timeout=RESYNC * 3 + 120)
        resync_writes = audit.operator_writes_since(mark)
        rss_now = rss_mib(operator.process.pid if operator.process else 0, "VmRSS")
        for process in alone:
            print(
                f"{process.name}, restarted with the operator: RSS {rss_mib(process.pid, 'VmRSS'):.1f} MiB "
                f"after the operator's restart and two resyncs, peak {rss_mib(process.pid):.1f} MiB"
            )
        records = len(lb.list_registrations())

        print(
            f"operator: all {n} Ready in {converge:.1f}s = {converge / floor:.2f}x the raw floor "
            f"(operator CPU {cpu:.1f}s = {cpu / n * 1000:.1f} ms per object, {before / n:.1f} reconciles per object)"
        )
        print(
            f"mutating requests per object to converge: {len(writes) / n:.2f} "
            f"({', '.join(f'{k}: {v}' for k, v in sorted(by_verb.items()))})"
        )
        print(f"mutating requests per object over a restart and two resyncs: {len(resync_writes) / n:.2f}")
        print(f"event to reconcile (operator's histogram) during the burst of {n}: p50 {p50:.0f} ms, p99 {p99:.0f} ms")
        print(
            f"event to reconcile in steady state ({STEADY_CHANGES} spec changes, one every "
            f"{STEADY_INTERVAL * 1000:.0f} ms, {steady_events:.0f} events): "
            f"p50 {steady50:.1f} ms, p99 {steady99:.1f} ms"
        )
        print(
            f"operator RSS: peak {rss:.0f} MiB while converging, {rss_now:.0f} MiB after a restart and two resyncs; "
            f"load balancer records: {records}{'' if records == n else ' (MISMATCH)'}; cached while converged: "
            f"{counters.get('cached_pods', 0):.0f} pods, {counters.get('cached_nodes', 0):.0f} nodes"
        )
        if records != n:  # not a measurement of a working operator: recorded nowhere
            raise SystemExit(f"the load balancer holds {records} records for {n} Ready InferenceServices")
        return {
            "n": n,
            "floor_s": floor,
            "converge_s": converge,
            "operator_cpu_ms_per_object": cpu / n * 1000,
            "writes_per_object": len(writes) / n,
            "restart_writes_per_object": len(resync_writes) / n,
            "burst_p99_ms": p99,
            "steady_p50_ms": steady50,
            "steady_p99_ms": steady99,
            "peak_rss_mib": rss,
            "restart_rss_mib": rss_now,
        }
    finally:
        if operator is not None and operator.process is not None:
            operator.stop()
        for process in alone:
            process.stop()
        if registry is not None:
            registry.terminate()
            registry.wait(10)
        plane.stop()


if __name__ == "__main__":
    sys.exit(main())
