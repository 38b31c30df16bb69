"""A fixed pure-Python workload: the yardstick the simulator's cost is measured against.

CI machines and this project's shared 2-core machine differ in speed from run to run by
more than any regression worth catching, so a benchmark guard cannot bound seconds. It
bounds a ratio instead: the simulator's CPU per object over the CPU of this workload, run in
the same process just before and after. Both are CPython doing the same kinds of work (nested
dicts and lists built and walked, strings formatted, trees copied with marshal and encoded
with json), so a slower or busier machine slows both alike and the ratio stays put; a change
that makes the simulator itself slower moves it.

The workload never changes: changing it moves every recorded ratio (README, the guard's bound).
"""

from __future__ import annotations

import json
import marshal
import time
from typing import Any

__all__ = ["reference_cpu_seconds", "workload"]

ROUNDS = 4000


def _manifest(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": f"svc-{i:05d}",
            "namespace": f"team-{i % 10}",
            "labels": {f"example.dev/key-{j}": f"value-{i}-{j}" for j in range(6)},
        },
        "spec": {
            "replicas": i % 7,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": f"c{j}",
                            "image": f"registry.example/image:{j}.{i % 13}",
                            "ports": [{"containerPort": 8000 + j, "protocol": "TCP"}],
                            "env": [{"name": f"ENV_{k}", "value": str(i * k)} for k in range(4)],
                        }
                        for j in range(3)
                    ]
                }
            },
        },
    }


def _paths(node: Any, prefix: tuple[str, ...], out: list[str]) -> None:
    if isinstance(node, dict):
        for key, value in sorted(node.items()):
            _paths(value, (*prefix, f"f:{key}"), out)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _paths(value, (*prefix, f"i:{index}"), out)
    else:
        out.append(".".join(prefix))


def workload(rounds: int = ROUNDS) -> int:
    """Build, copy, walk and encode ``rounds`` Deployment-shaped manifests; returns a checksum."""
    total = 0
    for i in range(rounds):
        obj = _manifest(i)
        copy = marshal.loads(marshal.dumps(obj, 2))
        paths: list[str] = []
        _paths(copy, (), paths)
        total += len(paths) + len(json.dumps(copy, sort_keys=True, separators=(",", ":")))
    return total


def reference_cpu_seconds(repeat: int = 3) -> float:
    """The least CPU time of ``repeat`` runs of :func:`workload` (the least is the least disturbed)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        workload()
        best = min(best, time.process_time() - start)
    return best
