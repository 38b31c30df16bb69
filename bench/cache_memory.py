#!/usr/bin/env python3
"""Benchmark (not a test): what the real operator's cache keeps per object, in KiB, per kind.

The objects are the simulator's, as its API server serves them (defaults, managedFields, status)
once N InferenceServices are Ready, each sent through JSON as a watch event is. They go into the
operator's cache (``kube/cache.py``: each kind's transform, then serialized; Pods also into
its index by owner label, serialized and compressed), and
tracemalloc measures what the cache holds, kind by kind; ``--raw`` also measures the parsed
objects as they came, for comparison. The figures leave out the interpreter, Kopf and the imports
(about 58 MiB of the operator's resident set), which do not grow with N.

Usage: python bench/cache_memory.py [N] [--raw]   (default 1000)
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference_operator.api.constants import DEPLOYMENT, KIND, SERVICE
from inference_operator.api.samples import make_inference_service, make_namespace
from inference_operator.kube.cache import ObjectCache
from inference_operator.kube.slimming import slim_node, slim_pod
from inference_operator.reconcile.watches import CAPACITY_READS
from inference_operator.sim import Simulation

KINDS = (KIND, DEPLOYMENT, SERVICE, "Pod", "Node")


def served(n: int) -> dict[str, list[str]]:
    """Each kind's objects as JSON, once ``n`` InferenceServices (two replicas each) are Ready."""
    sim = Simulation(ready_after=5.0, nodes=max(2, -(-2 * n // 100)))
    for namespace in sorted({f"team-{i % 10}" for i in range(n)}):
        sim.api.create(make_namespace(namespace))
    for i in range(n):
        isvc = make_inference_service(
            f"svc-{i:05d}", image="vllm:0.7.0", model="Llama-3", replicas=2, namespace=f"team-{i % 10}"
        )
        sim.apply(isvc)
    sim.run_until_quiescent()
    return {kind: [json.dumps(obj) for obj in sim.api.list(kind)] for kind in KINDS}


def kib_per_object(texts: list[str], keep: object) -> float:
    """What ``keep`` (a callable storing one parsed object) retains per object, in KiB."""
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    kept = [keep(json.loads(text)) for text in texts]  # type: ignore[operator]
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - before
    del kept
    return used / 1024 / max(1, len(texts))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=1000)
    parser.add_argument("--raw", action="store_true", help="also measure the parsed objects as they came")
    args = parser.parse_args()
    texts = served(args.n)
    gc.collect()
    tracemalloc.start()
    # As the operator's: Pods and Nodes slimmed, Pods also indexed by owner label (CAPACITY_READS).
    indexes = {read.kind: read.index_label for read in CAPACITY_READS if read.index_label is not None}
    cache = ObjectCache(transforms={"Pod": slim_pod, "Node": slim_node}, indexes=indexes)
    print(f"N={args.n}: KiB per object the operator's cache keeps" + (" (and as parsed)" if args.raw else ""))
    total = 0.0
    for kind in KINDS:
        if not texts[kind]:
            continue
        # What the cache itself retains: the event's objects are dropped, as Kopf drops them.
        cached = kib_per_object(texts[kind], lambda obj, kind=kind: cache.apply_event(kind, "ADDED", obj) and None)
        total += cached * len(texts[kind])
        raw = f", parsed {kib_per_object(texts[kind], lambda obj: obj):6.1f}" if args.raw else ""
        size = sum(map(len, texts[kind])) / len(texts[kind])
        print(f"{kind:>16}: {len(texts[kind]):6d} objects, JSON {size / 1024:5.1f} KiB, cached {cached:6.1f}{raw}")
    print(f"cache: {total / 1024:.1f} MiB in all, {total / args.n:.1f} KiB per InferenceService with its children")
    return 0


if __name__ == "__main__":
    sys.exit(main())
