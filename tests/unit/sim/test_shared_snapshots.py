"""The simulator's informers share the API server's stored versions: nothing ever changes them.

An informer's cache holds the watch transform's result, which shares its subtrees with the
version the FakeApiServer stored (and with every other informer of the kind). That is sound
only while no write path changes a stored version in place and no consumer of a cache (the
reconciler, the simulated controllers) changes what it was handed. Covers:
- every object handed to any informer handler, over a rollout with pods, a scale, a spec
  change, a restart of the operator and a deletion, is unchanged when the run ends;
- after the run, each operator cache entry is the slimmed stored object, and the answers of
  reads are the caller's own (changing one changes neither the store nor the caches).
"""

from __future__ import annotations

import marshal
from typing import Any

from inference_operator.api.constants import KIND
from inference_operator.api.samples import make_inference_service
from inference_operator.sim import Simulation
from inference_operator.sim.informer import SharedInformer, slim

Obj = dict[str, Any]


class Snapshots:
    """Each object an informer delivered, with a frozen copy of it as delivered."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Obj, bytes]] = []

    def watch(self, name: str, informer: SharedInformer) -> None:
        informer.add_event_handler(
            on_add=lambda obj: self.record(name, obj),
            on_update=lambda old, new: (self.record(name, old), self.record(name, new)),
            on_delete=lambda obj: self.record(name, obj),
        )

    def record(self, name: str, obj: Obj) -> None:
        self.seen.append((name, obj, marshal.dumps(obj, 2)))

    def changed(self) -> list[str]:
        return [f"{name}: {obj['metadata'].get('name')}" for name, obj, blob in self.seen if marshal.loads(blob) != obj]


def all_informers(sim: Simulation) -> dict[str, SharedInformer]:
    found = {f"operator {kind}": informer for kind, informer in sim.informers.items()}
    found.update({f"capacity {kind}": informer for kind, informer in sim.capacity_informers.items()})
    found.update(
        {
            "cluster Deployment": sim.cluster_deployments,
            "cluster Node": sim.cluster.nodes,
            "cluster Pod": sim.cluster.pod_cache,
            "cluster ReplicaSet": sim.cluster.replicasets,
        }
    )
    return found


def isvc(name: str, *, image: str = "vllm:0.7.0", replicas: int = 2) -> Obj:
    return make_inference_service(name, image=image, model="Llama-3", replicas=replicas)


def test_nothing_an_informer_was_handed_ever_changes() -> None:
    sim = Simulation(ready_after=5.0, nodes=2)
    snapshots = Snapshots()
    for name, informer in all_informers(sim).items():
        snapshots.watch(name, informer)
    for name in ("a", "b", "c"):
        sim.apply(isvc(name))
    sim.run_until_quiescent()
    sim.apply(isvc("a", image="vllm:0.8.0"))  # a rollout: a new ReplicaSet, pods replaced
    sim.apply(isvc("b", replicas=3))
    sim.run_until_quiescent()
    sim.restart_operator()
    for name, informer in all_informers(sim).items():
        snapshots.watch(name, informer)  # the new process's caches
    sim.delete(KIND, "default", "c")
    sim.run_until_quiescent()
    assert len(snapshots.seen) > 100
    assert snapshots.changed() == []


def test_caches_agree_with_the_store_and_reads_are_the_callers_own() -> None:
    sim = Simulation(ready_after=5.0)
    sim.apply(isvc("a"))
    sim.run_until_quiescent()
    for kind, informer in sim.informers.items():
        for cached in informer.list():
            meta = cached["metadata"]
            stored = sim.api.get(kind, meta["namespace"], meta["name"])
            assert cached == slim(stored)
            stored["metadata"]["labels"] = {"changed": "by the reader"}
            stored.get("spec", {}).clear()
            assert cached == slim(sim.api.get(kind, meta["namespace"], meta["name"]))
            assert "changed" not in (cached["metadata"].get("labels") or {})
