"""A simulated Deployment controller: the part of kube-controller-manager (and the kubelets
behind it) that the operator depends on, reduced to what shows in ``Deployment.status``.

After a spec change, the ready replicas reach ``spec.replicas`` ``ready_after`` seconds later.
During a rollout or a scale-up the pods that were ready stay ready. Pods asking for more GPUs
than any simulated node has never become ready, and once ``progressDeadlineSeconds`` pass the
Deployment reports ``Progressing=False`` with reason ``ProgressDeadlineExceeded``, as the real
controller does. It is itself a small level-triggered controller on the shared fake clock.

:meth:`SimulatedDeploymentController.crash_pods` makes pods of a Deployment crash-loop after its
rollout completed: how tests and benchmarks make an InferenceService Degraded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from inference_operator.api.constants import GPU_RESOURCE
from inference_operator.api.quantity import parse_quantity
from inference_operator.core.clock import format_timestamp
from inference_operator.core.objects import Obj
from inference_operator.core.ports import Result
from inference_operator.sim.apiserver.managedfields import GC_FIELD_MANAGER as CONTROLLER_MANAGER
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.informer import SharedInformer
from inference_operator.trace.recorder import NULL_TRACER, Tracer


@dataclass
class _Rollout:
    generation: int
    template: str
    started_at: float


def _gpus_per_pod(dep: Obj) -> int:
    total = 0
    for c in dep["spec"]["template"]["spec"].get("containers") or []:
        q = parse_quantity(((c.get("resources") or {}).get("limits") or {}).get(GPU_RESOURCE))
        total += int(q) if q is not None else 0
    return total


def _condition(type_: str, status: str, reason: str, message: str, now: str) -> Obj:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
    }


class SimulatedDeploymentController:
    """Moves ``status.readyReplicas`` of Deployments towards ``spec.replicas`` over fake time."""

    def __init__(
        self,
        api: FakeApiServer,
        deployments: SharedInformer,
        clock: FakeClock,
        *,
        ready_after: float,
        gpus_per_node: int,
        nodes: int = 2,
    ) -> None:
        self.api = api
        self.deployments = deployments
        self.clock = clock
        self.ready_after = ready_after
        self.gpus_per_node = gpus_per_node
        self.nodes = nodes
        self._rollouts: dict[str, _Rollout] = {}
        self._crashing: dict[str, int] = {}  # namespace/name → pods that crash-loop
        self.tracer: Tracer = NULL_TRACER
        """Told each status this controller writes (pods becoming ready, a rollout's progress)."""

    def crash_pods(self, namespace: str, name: str, count: int) -> None:
        """Make ``count`` pods of Deployment ``namespace/name`` crash-loop (never ready, in
        ``CrashLoopBackOff``) until called again with 0; the rest stay as they are.

        Takes effect at once: the Deployment's status is rewritten now, as the real controller
        does when a pod's readiness changes. It lasts across rollouts, until the Deployment goes.
        """
        if count < 0:
            raise ValueError(f"crash_pods count must be at least 0, got {count!r}")
        key = f"{namespace}/{name}"
        if count:
            self._crashing[key] = count
        else:
            self._crashing.pop(key, None)
        self.reconcile(namespace, name)

    def reconcile(self, namespace: str, name: str) -> Result:
        dep = self.deployments.get(namespace, name)
        if dep is None:
            self._rollouts.pop(f"{namespace}/{name}", None)
            self._crashing.pop(f"{namespace}/{name}", None)
            return Result()
        key = f"{namespace}/{name}"
        now = self.clock.now()
        generation = int(dep["metadata"].get("generation") or 1)
        template = json.dumps(dep["spec"]["template"], sort_keys=True)
        desired = int(dep["spec"].get("replicas", 1))
        old = dep.get("status") or {}
        rollout = self._rollouts.get(key)
        template_changed = rollout is not None and rollout.template != template
        if rollout is None or rollout.generation != generation:
            rollout = _Rollout(generation, template, now)
            self._rollouts[key] = rollout
        schedulable = _gpus_per_pod(dep) <= self.gpus_per_node
        prev_ready = int(old.get("readyReplicas") or 0)
        done = schedulable and (
            now >= rollout.started_at + self.ready_after or (prev_ready >= desired and not template_changed)
        )
        deadline = rollout.started_at + int(dep["spec"].get("progressDeadlineSeconds", 600))
        ts = format_timestamp(self.clock.wall())
        if done:
            updated = total = desired
            ready = desired - min(self._crashing.get(key, 0), desired)
            progressing = _condition(
                "Progressing", "True", "NewReplicaSetAvailable", f'ReplicaSet "{name}" has successfully progressed.', ts
            )
        else:
            ready = min(prev_ready, desired) if not template_changed else prev_ready
            updated = 0 if template_changed or not schedulable else desired
            total = max(ready, desired if not template_changed else ready)
            if not schedulable and now >= deadline:
                progressing = _condition(
                    "Progressing",
                    "False",
                    "ProgressDeadlineExceeded",
                    f'ReplicaSet "{name}-sim" has timed out progressing.',
                    ts,
                )
            else:
                progressing = _condition(
                    "Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{name}" is progressing.', ts
                )
        available = ready >= desired
        status = {
            "observedGeneration": generation,
            "replicas": total,
            "updatedReplicas": updated,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "conditions": [
                _condition(
                    "Available",
                    "True" if available else "False",
                    "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
                    "Deployment has minimum availability."
                    if available
                    else "Deployment does not have minimum availability.",
                    ts,
                ),
                progressing,
            ],
        }
        if _status_differs(old, status):
            written = self.api.update_status({**dep, "status": status}, field_manager=CONTROLLER_MANAGER)
            if self.tracer.enabled:
                self._traced(key, old, written)
        if done:
            return Result()
        if not schedulable:
            return Result(requeue_after=deadline - now) if now < deadline else Result()
        return Result(requeue_after=rollout.started_at + self.ready_after - now)

    def _traced(self, key: str, old: Obj, written: Obj) -> None:
        """Tell the tracer what moved: pods becoming ready, a rollout progressing or stuck."""
        new = written.get("status") or {}
        numbers = ("replicas", "updatedReplicas", "readyReplicas", "observedGeneration")
        detail: Obj = {name: new.get(name) for name in numbers}
        detail["was"] = {name: old.get(name) for name in numbers if name in old}
        progressing = [c for c in new.get("conditions") or [] if c.get("type") == "Progressing"]
        if progressing:
            detail["progressing"] = progressing[0].get("reason")
        was_ready, ready = int(old.get("readyReplicas") or 0), int(new.get("readyReplicas") or 0)
        action = "pods-ready" if ready > was_ready else "pods-not-ready" if ready < was_ready else "status"
        rv = str(written["metadata"].get("resourceVersion") or "")
        self.tracer.platform("deployment-controller", action, "Deployment", key, rv=rv or None, detail=detail)

    def pods(self, namespace: str, selector: str) -> list[Obj]:
        """Synthetic Pods of the Deployments matching ``selector`` (``key=value,…``), enough to
        explain why they are not ready: unschedulable ones carry the scheduler's message."""
        wanted = dict(part.split("=", 1) for part in selector.split(",") if "=" in part)
        pods: list[Obj] = []
        for dep in self.deployments.list(namespace):
            labels = dep["spec"]["template"].get("metadata", {}).get("labels") or {}
            if any(labels.get(k) != v for k, v in wanted.items()):
                continue
            gpus = _gpus_per_pod(dep)
            status = dep.get("status") or {}
            desired = int(dep["spec"].get("replicas", 1))
            crashing = self._crashing.get(f"{namespace}/{dep['metadata']['name']}", 0)
            for i in range(desired):
                name = f"{dep['metadata']['name']}-sim-{i}"
                if gpus > self.gpus_per_node:
                    message = (
                        f"0/{self.nodes} nodes are available: {self.nodes} Insufficient {GPU_RESOURCE}. "
                        f"preemption: 0/{self.nodes} nodes are available: {self.nodes} No preemption "
                        "victims found for incoming pod."
                    )
                    pod_status: Obj = {
                        "phase": "Pending",
                        "conditions": [
                            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
                        ],
                    }
                else:
                    ready = i < int(status.get("readyReplicas") or 0)
                    pod_status = {
                        "phase": "Running",
                        "conditions": [
                            {"type": "PodScheduled", "status": "True"},
                            {"type": "Ready", "status": "True" if ready else "False"},
                        ],
                    }
                    if not ready and i >= desired - crashing:
                        pod_status["containerStatuses"] = [_crash_looping(dep)]
                pods.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
                        "status": pod_status,
                    }
                )
        return pods


def _crash_looping(dep: Obj) -> Obj:
    """The container status of a pod whose server exits with an error, as the kubelet shows it."""
    container = dep["spec"]["template"]["spec"]["containers"][0]
    return {
        "name": container["name"],
        "image": container.get("image", ""),
        "ready": False,
        "restartCount": 5,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
    }


def _status_differs(old: Obj, new: Obj) -> bool:
    """Compare ignoring condition timestamps (the real controller keeps them when nothing moved)."""

    def strip(st: Obj) -> Obj:
        return {
            **st,
            "conditions": [{k: v for k, v in c.items() if not k.endswith("Time")} for c in st.get("conditions") or []],
        }

    return strip(old) != strip(new)
