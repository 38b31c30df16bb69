#!/usr/bin/env python3
"""Benchmark (not a test): the CPU the real operator's cache spends storing watch events.

Every watch event the operator receives goes into its cache (``kube/cache.py``): the kind's
transform, then serialized. This replays, into a fresh cache, the events the operator
would receive while N InferenceServices (two replicas each) become Ready: the simulator's, each
sent through JSON as a watch event is (the parse is left out of the figure: Kopf does it), then
a LIST of every kind as a restart or the consistency check reads them. Prints microseconds per
event and per listed object.

Usage: python bench/cache_events.py [N] [--repeat R]   (default 500, best of 3)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference_operator.api.constants import DEPLOYMENT, KIND, SERVICE
from inference_operator.api.samples import make_inference_service, make_namespace
from inference_operator.kube.cache import ObjectCache
from inference_operator.kube.slimming import slim_node, slim_pod
from inference_operator.sim import Simulation

KINDS = (KIND, DEPLOYMENT, SERVICE, "Pod", "Node")


def recorded(n: int) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """The watch events of the operator's kinds while ``n`` InferenceServices become Ready, as
    (kind, type, JSON); then every object of those kinds, as (kind, JSON)."""
    sim = Simulation(ready_after=5.0, nodes=max(2, -(-2 * n // 100)))
    watches = {kind: sim.api.watch(kind) for kind in KINDS}
    for namespace in sorted({f"team-{i % 10}" for i in range(n)}):
        sim.api.create(make_namespace(namespace))
    for i in range(n):
        name, namespace = f"svc-{i:05d}", f"team-{i % 10}"
        sim.apply(make_inference_service(name, image="vllm:0.7.0", model="Llama-3", replicas=2, namespace=namespace))
    sim.run_until_quiescent()
    events = [(kind, e.type, json.dumps(e.object)) for kind, watch in watches.items() for e in watch.drain()]
    listed = [(kind, json.dumps(obj)) for kind in KINDS for obj in sim.api.list(kind)]
    return events, listed


def replay(events: list[tuple[str, str, dict]], listed: list[tuple[str, dict]]) -> tuple[float, float]:
    """CPU seconds to store ``events`` into a fresh cache, then to store ``listed`` over them."""
    cache = ObjectCache(transforms={"Pod": slim_pod, "Node": slim_node})
    start = time.process_time()
    for kind, event_type, obj in events:
        cache.apply_event(kind, event_type, obj)
    middle = time.process_time()
    for kind, obj in listed:
        cache.apply_event(kind, None, obj)
    return middle - start, time.process_time() - middle


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3, help="replays; the fastest is shown")
    args = parser.parse_args()
    events, listed = recorded(args.n)
    runs = []
    for _ in range(args.repeat):  # parsed afresh each time: a cache keeps what it is given
        parsed = [(kind, event_type, json.loads(text)) for kind, event_type, text in events]
        relisted = [(kind, json.loads(text)) for kind, text in listed]
        runs.append(replay(parsed, relisted))
    watch_s, list_s = min(runs)
    per_kind = {kind: sum(1 for k, _, _ in events if k == kind) for kind in KINDS}
    print(f"N={args.n}: {len(events)} watch events ({', '.join(f'{k} {v}' for k, v in per_kind.items())})")
    per_event, per_isvc = watch_s * 1e6 / len(events), watch_s * 1e3 / args.n
    print(f"stored: {per_event:.1f} µs per event, {per_isvc:.2f} ms per InferenceService")
    print(f"a LIST of all {len(listed)} objects over them: {list_s * 1e6 / len(listed):.1f} µs per object")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
