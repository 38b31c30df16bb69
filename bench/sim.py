#!/usr/bin/env python3
"""Benchmark (not a test): N InferenceServices created at once in the simulator, run until Ready.

Prints N, reconciles, wall seconds, reconciles per second and peak RSS for each N given.
Usage: python bench/sim.py [N ...]   (default: 1000 10000)
       python bench/sim.py --trace FILE 1000   (the same with the flight recorder on: FILE.N.jsonl per size)
       python bench/sim.py --cluster 1000   (pods modelled: the simulated cluster with nodes, scheduler, ReplicaSets)
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference_operator.api.constants import KIND
from inference_operator.api.samples import make_inference_service, make_namespace
from inference_operator.core.process import tune_gc
from inference_operator.sim import Simulation
from inference_operator.trace.recorder import Recorder
from inference_operator.trace.sink import FileSink


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(n: int, trace: str | None = None, *, cluster: bool = False) -> dict[str, float]:
    sink = FileSink(f"{trace}.{n}.jsonl") if trace else None
    tracer = (lambda c: Recorder(sink, c, backend="simulator")) if sink else None
    # With pods modelled: enough nodes for the 2n pods at kubelet's 110 pods per node.
    nodes = {"cluster": True, "nodes": max(2, -(-2 * n // 100))} if cluster else {}
    sim = Simulation(ready_after=5.0, tracer=tracer, **nodes)
    for namespace in sorted({f"team-{i % 10}" for i in range(n)}):  # NamespaceLifecycle: they must exist
        sim.api.create(make_namespace(namespace))
    gc.collect()
    start = time.perf_counter()
    for i in range(n):
        sim.apply(
            make_inference_service(
                f"svc-{i:05d}", image="vllm:0.7.0", model="Llama-3", replicas=2, namespace=f"team-{i % 10}"
            )
        )
    reconciles = sim.run_until_quiescent()
    sim.tracer.close()
    wall = time.perf_counter() - start
    ready = sum(1 for obj in sim.api.list(KIND) if (obj.get("status") or {}).get("phase") == "Ready")
    if ready != n:
        raise SystemExit(f"only {ready} of {n} InferenceServices became Ready")
    return {
        "n": n,
        "reconciles": reconciles,
        "wall_s": wall,
        "reconciles_per_s": reconciles / wall,
        "writes": sim.api.writes,
        "peak_rss_mib": peak_rss_mib(),
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
    parser.add_argument(
        "--cluster", action="store_true", help="model pods: nodes, scheduler, ReplicaSets and kubelets (sim/cluster)"
    )
    args = parser.parse_args()
    if not args.default_gc:
        tune_gc()
    print(f"python {sys.version.split()[0]}, gc thresholds {gc.get_threshold()}")
    print(f"{'N':>7} {'reconciles':>11} {'wall s':>8} {'rec/s':>9} {'writes':>8} {'peak RSS MiB':>13}")
    results = []
    for n in args.sizes:
        r = run(n, args.trace, cluster=args.cluster)
        results.append(r)
        print(
            f"{r['n']:>7} {r['reconciles']:>11} {r['wall_s']:>8.2f} {r['reconciles_per_s']:>9.0f} "
            f"{r['writes']:>8} {r['peak_rss_mib']:>13.0f}",
            flush=True,
        )
    if len(results) >= 2:
        a, b = results[0], results[-1]
        ratio = (b["wall_s"] / a["wall_s"]) / (b["n"] / a["n"])
        print(f"time per object at N={b['n']} is {ratio:.2f}x that at N={a['n']} (1.00 = linear)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
