#!/usr/bin/env python3
"""Benchmark (not a test): a GPU rollout per strategy, on the simulator's GPU pool.

A 16-replica InferenceService of 1 GPU each fills two 8-GPU nodes; a third node adds 0, 2 or 8
spare GPUs. Its image changes; for each strategy (the default Surge, Replace, Auto) this
prints, in simulated seconds from the change: when it was Ready again ("never" if it was not
within --horizon), the lowest count of ready replicas meanwhile, and the GPU-seconds the pool
held idle while the rollout ran (GPUs no pod was bound to, summed over each second). Pods are
ready --ready-after seconds after they are bound and take --termination seconds to stop.

The same cases on the local control plane, beside these: bench/rollout_cluster.py.

Usage: python bench/rollout.py [--replicas 16] [--ready-after 5] [--termination 5] [--horizon 1800]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inference_operator.api.samples import make_inference_service
from inference_operator.sim.cluster.nodes import NodeShape
from inference_operator.sim.simulation import Simulation

STRATEGIES = ("Surge", "Replace", "Auto")
SPARES = (0, 2, 8)


@dataclass(frozen=True)
class Outcome:
    seconds: float | None
    lowest_ready: int
    idle_gpu_seconds: float
    plan: str


def service(image: str, replicas: int, strategy: str, *, namespace: str = "default", **spec: Any) -> dict[str, Any]:
    """The benchmark's InferenceService: ``replicas`` of 1 GPU, ``strategy`` (Surge: unset)."""
    obj = make_inference_service("llm", image=image, model="m", replicas=replicas, gpu=1, namespace=namespace, **spec)
    if strategy != "Surge":
        obj["spec"]["rollout"] = {"strategy": strategy}
    return obj


def readiness(obj: dict[str, Any] | None) -> tuple[bool, int]:
    """(Ready=True for the current generation, status.readyReplicas) of the InferenceService."""
    status = (obj or {}).get("status") or {}
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or [])
    current = status.get("observedGeneration") == ((obj or {}).get("metadata") or {}).get("generation")
    return ready and current, int(status.get("readyReplicas") or 0)


def plan_of(obj: dict[str, Any] | None, *, unset: str) -> str:
    """status.rollout.plan; ``unset`` when there is none (an unset strategy writes no plan)."""
    rollout = (((obj or {}).get("status") or {}).get("rollout")) or {}
    return str(rollout.get("plan") or unset)


def _idle(sim: Simulation, pool: int) -> int:
    bound = sum(1 for p in sim.api.list("Pod", "default") if (p.get("spec") or {}).get("nodeName"))
    return max(pool - bound, 0)


def run(*, strategy: str, spare: int, replicas: int, ready_after: float, termination: float, horizon: int) -> Outcome:
    nodes = [NodeShape("gpu-1", gpus=8), NodeShape("gpu-2", gpus=8)]
    if spare:
        nodes.append(NodeShape("gpu-3", gpus=spare))
    pool = 16 + spare
    sim = Simulation(node_layout=nodes, ready_after=ready_after, termination_seconds=termination)
    sim.apply(service("vllm:0.6.3", replicas, strategy))
    sim.run_until_quiescent(until=sim.now + 600)
    if not readiness(sim.get("InferenceService", "default", "llm"))[0]:
        raise SystemExit(f"the fleet did not become Ready before the change (strategy {strategy}, spare {spare})")
    sim.apply(service("vllm:0.7.0", replicas, strategy))
    start, lowest, idle = sim.now, replicas, 0
    for second in range(1, horizon + 1):
        sim.run_until_quiescent(until=start + second)
        obj = sim.get("InferenceService", "default", "llm")
        done, ready = readiness(obj)
        lowest = min(lowest, ready)
        if done:
            return Outcome(float(second), lowest, idle, plan_of(obj, unset="Surge"))
        idle += _idle(sim, pool)
    return Outcome(None, lowest, idle, plan_of(sim.get("InferenceService", "default", "llm"), unset="?"))


CASE_HEADER = f"{'spare':>5} {'strategy':<8}"
FIGURES_HEADER = f"{'plan':<18} {'Ready after':>12} {'lowest ready':>12} {'idle GPU-s':>10}"


def figures(o: Outcome, horizon: float, *, decimals: int = 0) -> str:
    """One case's figures, in the columns of :data:`FIGURES_HEADER`."""
    took = f"{o.seconds:.{decimals}f} s" if o.seconds is not None else f"never ({horizon:.0f} s)"
    return f"{o.plan:<18} {took:>12} {o.lowest_ready:>12} {o.idle_gpu_seconds:>10.{decimals}f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=16)
    parser.add_argument("--ready-after", type=float, default=5.0)
    parser.add_argument("--termination", type=float, default=5.0)
    parser.add_argument("--horizon", type=int, default=1800, help="simulated seconds to wait for Ready")
    args = parser.parse_args()
    print(f"{args.replicas} replicas x 1 nvidia.com/gpu on 2 full 8-GPU nodes + spare; image change to Ready")
    print(f"{CASE_HEADER} {FIGURES_HEADER}")
    for spare in SPARES:
        for strategy in STRATEGIES:
            o = run(
                strategy=strategy,
                spare=spare,
                replicas=args.replicas,
                ready_after=args.ready_after,
                termination=args.termination,
                horizon=args.horizon,
            )
            print(f"{spare:>5} {strategy:<8} {figures(o, args.horizon)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
