"""A rollout on a full GPU pool, recorded: the trace the capacity tests and the screenshot share.

Two nodes of 8 GPUs and an InferenceService of 4 replicas of 4 GPUs fill the pool; then a new
image starts a rolling update (25 % surge and unavailability: one new pod at a time) in which
every new pod waits Pending, with kube-scheduler's message, until an old pod has terminated
and freed its GPUs. Used by tests/unit/sim/cluster/test_capacity.py (the records) and
tests/integration/test_viewer_capacity.py (the page, docs/viewer-capacity.png).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inference_operator.api.samples import make_inference_service
from inference_operator.sim.cluster.nodes import NodeShape
from inference_operator.sim.simulation import Simulation
from inference_operator.trace.recorder import Recorder, Sink
from inference_operator.trace.sink import FileSink, ListSink, read_trace

GPU = "nvidia.com/gpu"
NODES = (NodeShape("gpu-node-1", gpus=8), NodeShape("gpu-node-2", gpus=8))
REPLICAS, GPUS = 4, 4
OLD_IMAGE, NEW_IMAGE = "vllm/vllm-openai:v0.6.3", "vllm/vllm-openai:v0.7.0"
CHANGE_NOTE = f"kubectl apply: image {OLD_IMAGE} -> {NEW_IMAGE} (a template change on a full pool)"


def llama(image: str, **spec: Any) -> dict[str, Any]:
    return make_inference_service(
        "llama", image=image, model="meta-llama/Llama-3.1-8B", replicas=REPLICAS, gpu=GPUS, **spec
    )


def run_rollout(sink: Sink, **spec: Any) -> Simulation:
    """The whole story into ``sink``: fill the pool, then change the template and let it roll."""
    sim = Simulation(node_layout=NODES, tracer=lambda clock: Recorder(sink, clock, backend="simulator"))
    sim.note(f"kubectl apply: {REPLICAS} replicas of {GPUS} GPUs on {len(NODES)} nodes of 8")
    sim.apply(llama(OLD_IMAGE, **spec))
    sim.run_until_quiescent()
    sim.note(CHANGE_NOTE)
    sim.apply(llama(NEW_IMAGE, **spec))
    sim.run_until_quiescent()
    sim.tracer.close()
    return sim


def rollout_records(**spec: Any) -> tuple[list[dict[str, Any]], Simulation]:
    sink = ListSink()
    sim = run_rollout(sink, **spec)
    return sink.records, sim


def write_rollout_trace(path: Path) -> list[dict[str, Any]]:
    """The trace as a file (what ``trace view`` reads); its records."""
    run_rollout(FileSink(path))
    return read_trace(path)


def replay(records: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """After each ``node``/``pod`` record: (the record, nodes by name, pods by key), folded in
    order as docs/trace-format.md says a viewer should (written apart from the page's own code)."""
    nodes: dict[str, Any] = {}
    pods: dict[str, Any] = {}
    out = []
    for r in records:
        if r["type"] not in ("node", "pod"):
            continue
        table = nodes if r["type"] == "node" else pods
        if r["change"] == "deleted":
            table.pop(r[r["type"]])
        else:
            table[r[r["type"]]] = r
        out.append((r, dict(nodes), dict(pods)))
    return out


def used(pods: dict[str, Any], node: str, resource: str = GPU) -> int:
    """What the pods bound to ``node`` hold of ``resource``: finished ones nothing, terminating ones theirs."""
    return sum(
        p["requests"].get(resource, 0)
        for p in pods.values()
        if p.get("nodeName") == node and p["phase"] not in ("Succeeded", "Failed")
    )
