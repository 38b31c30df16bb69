#!/usr/bin/env python3
"""Benchmark (not a test): N InferenceServices created at once in the simulator, run until Ready.

The simulator is its simulated cluster (nodes, scheduler, ReplicaSets, two pods per
InferenceService, kubelets), on enough nodes for the pods at 100 a node.

Prints, for each N given: reconciles, CPU seconds of the process (what the figures are about:
wall time on a shared machine is mostly other people's work), wall seconds, reconciles per CPU
second, writes, peak RSS, and CPU milliseconds per object. With ``--repeat R`` each N runs R
times in the one process and the median (by CPU) is shown. With ``--reference`` the fixed
workload of bench/reference.py runs too, and the cost per object is also given as a ratio to
it (``per-object/ref``): a figure that moves little with the machine's speed, which the CI guard
(tests/unit/test_bench_guard.py) bounds.
Usage: python bench/sim.py [N ...]   (default: 1000 10000)
       python bench/sim.py --repeat 3 --reference 1000
       python bench/sim.py --trace FILE 1000   (the same with the flight recorder on: FILE.N.jsonl per size)
       (--cluster, which once chose the simulated cluster, is still accepted and changes nothing)
       python bench/sim.py --json 1000   (one JSON object per line instead of the table)
       python bench/sim.py --repeat 3 --reference --readme 1000 10000   (and the same with
       --default-gc: the README's current figures, rewritten from these runs)
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference_operator.api.constants import KIND
from inference_operator.api.samples import make_inference_service, make_namespace
from inference_operator.core.errors import NotFound
from inference_operator.core.process import tune_gc
from inference_operator.sim import Simulation
from inference_operator.trace.recorder import Recorder
from inference_operator.trace.sink import FileSink

sys.path.insert(0, str(Path(__file__).resolve().parent))
import figures
from reference import reference_cpu_seconds


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _phase(sim: Simulation, namespace: str, name: str) -> str:
    """The InferenceService's phase as the API server stores it ("" if it is gone)."""
    try:
        obj = sim.api.get(KIND, namespace, name)
    except NotFound:
        return ""
    return str((obj.get("status") or {}).get("phase") or "")


def run(n: int, trace: str | None = None) -> dict[str, float]:
    sink = FileSink(f"{trace}.{n}.jsonl") if trace else None
    tracer = (lambda c: Recorder(sink, c, backend="simulator")) if sink else None
    # Enough nodes for the 2n pods within kubelet's 110 pods per node.
    sim = Simulation(ready_after=5.0, tracer=tracer, nodes=max(2, -(-2 * n // 100)))
    names = [(f"team-{i % 10}", f"svc-{i:05d}") for i in range(n)]
    for namespace in sorted({namespace for namespace, _ in names}):  # NamespaceLifecycle: they must exist
        sim.api.create(make_namespace(namespace))
    gc.collect()
    start = time.perf_counter()
    cpu_start = time.process_time()
    for namespace, name in names:
        sim.apply(make_inference_service(name, image="vllm:0.7.0", model="Llama-3", replicas=2, namespace=namespace))
    reconciles = sim.run_until_quiescent()
    sim.tracer.close()
    cpu = time.process_time() - cpu_start
    wall = time.perf_counter() - start
    peak = peak_rss_mib()  # the run's, not the check's below
    # One object at a time: a LIST of 10,000 InferenceServices is 250 MiB of copies, which the
    # peak RSS once counted as the simulator's.
    ready = sum(1 for namespace, name in names if _phase(sim, namespace, name) == "Ready")
    if ready != n:
        raise SystemExit(f"only {ready} of {n} InferenceServices became Ready")
    return {
        "n": n,
        "reconciles": reconciles,
        "cpu_s": cpu,
        "wall_s": wall,
        "reconciles_per_s": reconciles / cpu,
        "cpu_ms_per_object": 1000 * cpu / n,
        "writes": sim.api.writes,
        "peak_rss_mib": peak,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 10000])
    parser.add_argument(
        "--default-gc",
        action="store_true",
        help="keep CPython's default GC thresholds instead of the operator's (runtime.tune_gc)",
    )
    parser.add_argument("--trace", metavar="FILE", help="record a trace of each run to FILE.N.jsonl")
    parser.add_argument("--cluster", action="store_true", help=argparse.SUPPRESS)  # the default now
    parser.add_argument("--repeat", type=int, default=1, help="runs per N; the median by CPU is shown")
    parser.add_argument("--reference", action="store_true", help="also run bench/reference.py and give ratios to it")
    parser.add_argument("--json", action="store_true", help="one JSON object per N instead of the table")
    parser.add_argument(
        "--readme",
        action="store_true",
        help="rewrite these sizes' rows (for this GC setting) of the simulator's figures in README.md",
    )
    args = parser.parse_args()
    taken = figures.provenance()
    if not args.default_gc:
        tune_gc()
    reference = reference_cpu_seconds() if args.reference else None
    if not args.json:
        print(f"python {sys.version.split()[0]}, gc thresholds {gc.get_threshold()}")
        if reference is not None:
            print(f"reference workload (bench/reference.py): {reference:.3f} s CPU")
        print(
            f"{'N':>7} {'reconciles':>11} {'CPU s':>8} {'wall s':>8} {'rec/CPU s':>10} {'writes':>8} "
            f"{'peak RSS MiB':>13} {'CPU ms/obj':>11}" + (f" {'per-object/ref':>15}" if reference else "")
        )
    results = []
    for n in args.sizes:
        runs = sorted((run(n, args.trace) for _ in range(args.repeat)), key=lambda r: r["cpu_s"])
        r = dict(runs[len(runs) // 2])
        r["cpu_s_runs"] = [x["cpu_s"] for x in runs]
        r["wall_s_median"] = statistics.median(x["wall_s"] for x in runs)
        if reference is not None:
            after = reference_cpu_seconds()  # before and after: the least disturbed of both
            r["reference_cpu_s"] = min(reference, after)
            r["per_object_over_reference"] = r["cpu_s"] / n / r["reference_cpu_s"]
        results.append(r)
        if args.json:
            print(json.dumps(r), flush=True)
            continue
        print(
            f"{r['n']:>7} {r['reconciles']:>11} {r['cpu_s']:>8.2f} {r['wall_s']:>8.2f} {r['reconciles_per_s']:>10.0f} "
            f"{r['writes']:>8} {r['peak_rss_mib']:>13.0f} {r['cpu_ms_per_object']:>11.2f}"
            + (f" {r['per_object_over_reference']:>15.5f}" if reference is not None else ""),
            flush=True,
        )
        if args.repeat > 1:
            print(f"{'':>7} CPU s of the {args.repeat} runs: " + ", ".join(f"{c:.2f}" for c in r["cpu_s_runs"]))
    if len(results) >= 2 and not args.json:
        a, b = results[0], results[-1]
        ratio = (b["cpu_s"] / a["cpu_s"]) / (b["n"] / a["n"])
        print(f"CPU per object at N={b['n']} is {ratio:.2f}x that at N={a['n']} (1.00 = linear)")
    if args.readme:
        figures.record_sim(figures.README, results, gc="default" if args.default_gc else "operator", taken=taken)
        if not args.json:
            print("README.md: the simulator's figures rewritten from these runs", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
