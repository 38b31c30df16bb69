#!/usr/bin/env python3
"""Benchmark (not a test): bench/rollout.py's 9 GPU rollouts on the local control plane, beside the simulator's.

The same cases as bench/rollout.py (16 replicas of 1 GPU on two full 8-GPU nodes plus a third
node of 0, 2 or 8 spare GPUs; an image change; the default Surge, Replace and Auto), run on
the simulator and then on one local control plane (hack/cluster.py: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kwok) with the operator as a process (cluster mode,
so it reads Nodes and Pods and ``Auto`` counts the free GPUs). Each case gets a namespace and
a pool of kwok Nodes of its own with exactly those GPUs, labelled and tainted for it alone
(tests/shared/scenarios/scheduling.py), deleted after the case. Per case, in wall seconds from
the image change: when the InferenceService was Ready for its new generation ("never" after
--cluster-horizon), the lowest status.readyReplicas seen, and the GPU-seconds of the pool not
held by a bound, unfinished pod (status and pods polled every --poll seconds).

What the real figures measure: kwok's pod stages (hack/controlplane/kwok-stages.yaml, kwok's
"fast" set) make a bound pod Running and Ready in one step, with no delay, and delete a pod the
moment it has a deletionTimestamp (no grace period waited out). There is no image pull, no
model load, no probe run and no shutdown: the real seconds are control-plane latency
(the operator's passes, the Deployment and ReplicaSet controllers, kube-scheduler, kwok and
the API server round trips), where the simulator charges --ready-after and --termination per
pod. Compare the plans, the lowest ready counts and the strategies' order; not the seconds.

Usage: python bench/rollout_cluster.py [--replicas 16] [--cluster-horizon 180] [--poll 0.2]
       python bench/rollout_cluster.py --dry-run   (prints each case's Nodes and InferenceService)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "hack")]

import rollout  # noqa: E402 - bench/rollout.py

from inference_operator.api.constants import GPU_RESOURCE, KIND  # noqa: E402
from inference_operator.sim.cluster.nodes import NodeShape  # noqa: E402
from tests.e2e.clusterworld import POOL_ADDRESS, kwok_node  # noqa: E402
from tests.e2e.harness import Kubectl, OperatorProcess, install_crds, operator_env, wait_until  # noqa: E402
from tests.shared.scenarios.scheduling import placement, pool_node  # noqa: E402

Obj = dict[str, Any]
SETUP_TIMEOUT = 180.0  # seconds for a pool to be Ready, the fleet before the change, a pool to go


def case_namespace(spare: int, strategy: str) -> str:
    return f"rollout-{spare}-{strategy.lower()}"


def pool_nodes(namespace: str, spare: int, *, first_address: int) -> list[Obj]:
    """The case's kwok Nodes: two of 8 GPUs, and one of ``spare`` if any, for its pool alone."""
    shapes = [NodeShape("gpu-1", gpus=8), NodeShape("gpu-2", gpus=8)]
    if spare:
        shapes.append(NodeShape("gpu-3", gpus=spare))
    return [
        kwok_node(
            pool_node(shape, pool=namespace, name=f"{namespace}-{shape.name}"),
            address=POOL_ADDRESS.format(first_address + index),
        )
        for index, shape in enumerate(shapes)
    ]


def case_service(namespace: str, image: str, replicas: int, strategy: str) -> Obj:
    return rollout.service(image, replicas, strategy, namespace=namespace, **placement(namespace))


def gpus_held(pods: list[Obj]) -> int:
    """GPUs requested by pods bound to a node and not finished (a terminating pod still holds its own)."""
    held = 0
    for pod in pods:
        if not (pod.get("spec") or {}).get("nodeName") or (pod.get("status") or {}).get("phase") in (
            "Succeeded",
            "Failed",
        ):
            continue
        for container in pod["spec"].get("containers") or []:
            resources = container.get("resources") or {}
            held += max(int((resources.get(kind) or {}).get(GPU_RESOURCE, 0)) for kind in ("requests", "limits"))
    return held


def node_ready(node: Obj | None) -> bool:
    conditions = ((node or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class LocalRollouts:
    """One control plane and one operator process for every case; :meth:`run` measures one."""

    def __init__(self, kubectl: Kubectl, client: Any, *, poll: float) -> None:
        self.kubectl = kubectl
        self.client = client  # inference_operator.kube.client.KubeClient
        self.poll = poll
        self.next_address = 100  # POOL_ADDRESS's host numbers: unique across the run's pools

    def run(self, *, strategy: str, spare: int, replicas: int, horizon: float) -> rollout.Outcome:
        namespace = case_namespace(spare, strategy)
        nodes = pool_nodes(namespace, spare, first_address=self.next_address)
        self.next_address += len(nodes)
        self.kubectl.run("create", "namespace", namespace)
        self.kubectl.run("create", "-f", "-", stdin=yaml.safe_dump_all(nodes))
        try:
            for node in nodes:
                name = node["metadata"]["name"]
                wait_until(
                    lambda name=name: node_ready(self.client.get("Node", "", name)),
                    timeout=SETUP_TIMEOUT,
                    what=f"the kwok node {name} to be Ready",
                )
            self.kubectl.apply(case_service(namespace, "vllm:0.6.3", replicas, strategy))
            wait_until(
                lambda: rollout.readiness(self.client.get(KIND, namespace, "llm"))[0],
                timeout=SETUP_TIMEOUT,
                what=f"the fleet in {namespace} to be Ready before the change",
            )
            return self._measure(namespace, 16 + spare, replicas, horizon)
        finally:
            self._clean_up(namespace, nodes)

    def _measure(self, namespace: str, pool: int, replicas: int, horizon: float) -> rollout.Outcome:
        start = time.monotonic()
        self.client.patch(KIND, namespace, "llm", {"spec": {"image": "vllm:0.7.0"}})
        lowest, idle, last = replicas, 0.0, start
        obj: Obj | None = None
        while (now := time.monotonic()) - start < horizon:
            obj = self.client.get(KIND, namespace, "llm")
            done, ready = rollout.readiness(obj)
            lowest = min(lowest, ready)
            if done:
                return rollout.Outcome(now - start, lowest, idle, rollout.plan_of(obj, unset="Surge"))
            free = max(pool - gpus_held(self.client.list_objects("Pod", namespace)), 0)
            sampled = time.monotonic()
            idle += free * (sampled - last)  # the pool as this sample saw it, until the next one
            last = sampled
            time.sleep(self.poll)  # the sampling period of a measurement, not a wait for a condition
        return rollout.Outcome(None, lowest, idle, rollout.plan_of(obj, unset="?"))

    def _clean_up(self, namespace: str, nodes: list[Obj]) -> None:
        """The namespace goes (the operator releases its InferenceService), its pods with it,
        then the pool's Nodes; the namespace's own deletion is not waited for."""
        self.kubectl.run("delete", "namespace", namespace, "--wait=false")
        wait_until(
            lambda: not self.client.list_objects("Pod", namespace),
            timeout=SETUP_TIMEOUT,
            what=f"the pods of {namespace} to be gone before their nodes",
        )
        self.kubectl.run("delete", "node", *(n["metadata"]["name"] for n in nodes), "--wait=true", "--timeout=60s")


@contextmanager
def local_rollouts(work: Path, *, poll: float) -> Iterator[LocalRollouts]:
    """A fresh control plane (one kwok node of its own, no GPUs), the CRDs, the operator."""
    import cluster as local  # hack/cluster.py

    from inference_operator.kube.client import KubeClient

    plane = local.start_control_plane(work / "plane", nodes=1, gpus_per_node=0)
    operator: OperatorProcess | None = None
    try:
        env = operator_env(plane.bin_dir)
        kubectl = Kubectl(plane.kubeconfig, env)
        install_crds(kubectl)
        operator = OperatorProcess(plane.kubeconfig, env, work / "operator.log")
        operator.start()
        print(
            f"control plane: {plane.startup_seconds:.1f}s to ready; operator log: {work / 'operator.log'}", flush=True
        )
        yield LocalRollouts(kubectl, KubeClient.from_kubeconfig(str(plane.kubeconfig)), poll=poll)
    finally:
        if operator is not None and operator.process is not None:
            operator.stop()
        plane.stop()


def dry_run(replicas: int) -> None:
    """Each case's namespace, pool Nodes and InferenceService (before the change), as YAML."""
    address = 100
    docs: list[Obj] = []
    for spare in rollout.SPARES:
        for strategy in rollout.STRATEGIES:
            namespace = case_namespace(spare, strategy)
            nodes = pool_nodes(namespace, spare, first_address=address)
            address += len(nodes)
            docs += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, *nodes]
            docs.append(case_service(namespace, "vllm:0.6.3", replicas, strategy))
    print(yaml.safe_dump_all(docs), end="")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=16)
    parser.add_argument("--ready-after", type=float, default=5.0, help="the simulator's, as bench/rollout.py's")
    parser.add_argument("--termination", type=float, default=5.0, help="the simulator's, as bench/rollout.py's")
    parser.add_argument("--horizon", type=int, default=1800, help="simulated seconds to wait for Ready")
    parser.add_argument("--cluster-horizon", type=float, default=180.0, help="wall seconds to wait for Ready")
    parser.add_argument("--poll", type=float, default=0.2, help="seconds between two reads of status and pods")
    parser.add_argument("--dry-run", action="store_true", help="print what each case creates; start nothing")
    args = parser.parse_args()
    if args.dry_run:
        dry_run(args.replicas)
        return 0
    began = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="bench-rollout-"))
    with local_rollouts(work, poll=args.poll) as real:
        print(f"{args.replicas} replicas x 1 nvidia.com/gpu on 2 full 8-GPU nodes + spare; image change to Ready")
        simulated_title = f"simulated (--ready-after {args.ready_after:g} s, --termination {args.termination:g} s)"
        print(f"{'':<{len(rollout.CASE_HEADER)}} {simulated_title:<{len(rollout.FIGURES_HEADER)}} | real (kwok)")
        print(f"{rollout.CASE_HEADER} {rollout.FIGURES_HEADER} | {rollout.FIGURES_HEADER}", flush=True)
        for spare in rollout.SPARES:
            for strategy in rollout.STRATEGIES:
                simulated = rollout.run(
                    strategy=strategy,
                    spare=spare,
                    replicas=args.replicas,
                    ready_after=args.ready_after,
                    termination=args.termination,
                    horizon=args.horizon,
                )
                measured = real.run(
                    strategy=strategy, spare=spare, replicas=args.replicas, horizon=args.cluster_horizon
                )
                print(
                    f"{spare:>5} {strategy:<8} {rollout.figures(simulated, args.horizon)} | "
                    f"{rollout.figures(measured, args.cluster_horizon, decimals=1)}",
                    flush=True,
                )
    print(f"the whole run took {time.monotonic() - began:.0f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
