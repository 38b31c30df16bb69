"""The kubelets of all simulated nodes in one: bound pods start, get ready, crash, and stop.

What the operator can see of a pod's life, on the fake clock: a pod bound to a node goes
``Running`` at once (its container started, not ready), and ``Ready`` ``start_seconds`` later
(the model loaded, the readiness probe passed) — unless it is one of the pods told to crash,
which then sit in ``CrashLoopBackOff`` with a restart count, never ready
(:meth:`~inference_operator.sim.cluster.cluster.SimulatedCluster.crash_pods`). A deleted pod keeps running, on
its node and holding its GPUs, until it has stopped: ``stop_seconds`` after the deletion (at most
its grace period; None: the whole grace period), then the kubelet deletes it with grace 0 and it
is gone. Not modelled yet: a node going NotReady does not stop its pods (the node lifecycle
controller's NoExecute taints are not added; a NoExecute taint someone adds does evict, see
:mod:`.tainteviction`).
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable

from inference_operator.core.clock import format_timestamp, parse_timestamp
from inference_operator.core.errors import NotFound
from inference_operator.core.objects import Obj
from inference_operator.core.ports import Result
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.cluster import podstate
from inference_operator.sim.informer import SharedInformer

__all__ = ["KUBELET", "Kubelet"]

KUBELET = "kubelet"


class Kubelet:
    """Moves one pod per key (``namespace/name``) along its life."""

    def __init__(
        self,
        *,
        api: FakeApiServer,
        clock: FakeClock,
        pods: SharedInformer,
        start_seconds: float,
        stop_seconds: float | None = None,
        crashing: Callable[[Obj], bool] = lambda _pod: False,
    ) -> None:
        self.api = api
        self.clock = clock
        self.pods = pods
        self.start_seconds = start_seconds
        self.stop_seconds = stop_seconds
        self.crashing = crashing
        """Whether a pod's server keeps exiting (asked each time the pod is looked at)."""
        self._started: dict[str, float] = {}  # pod uid → when its container started (clock time)

    def forget(self, uid: str) -> None:
        """A pod is gone: drop what was kept about it."""
        self._started.pop(uid, None)

    def reconcile(self, namespace: str, name: str) -> Result:
        pod = self.pods.get(namespace, name)
        if pod is None or not podstate.node_of(pod) or podstate.is_terminal(pod):
            return Result()
        if podstate.is_terminating(pod):
            return self._stop(pod)
        uid = pod["metadata"]["uid"]
        now = self.clock.now()
        started = self._started.setdefault(uid, now)
        crashing = self.crashing(pod)
        ready = not crashing and now >= started + self.start_seconds
        status = self._status(pod, ready=ready, crashing=crashing, started=started)
        if _differs(pod.get("status") or {}, status):
            meta = pod["metadata"]
            self.api.patch_status(
                "Pod", meta["namespace"], meta["name"], {"status": status}, field_manager=KUBELET, answer=False
            )
        if not ready and not crashing:
            return Result(requeue_after=started + self.start_seconds - now)
        return Result()

    def _stop(self, pod: Obj) -> Result:
        meta = pod["metadata"]
        grace = float(meta.get("deletionGracePeriodSeconds") or 0)
        deadline = parse_timestamp(str(meta["deletionTimestamp"])).timestamp()
        took = grace if self.stop_seconds is None else min(self.stop_seconds, grace)
        stop_at = deadline - grace + took
        now = self.clock.wall().timestamp()
        if now < stop_at:
            return Result(requeue_after=stop_at - now)
        self._started.pop(meta["uid"], None)
        with contextlib.suppress(NotFound):
            self.api.delete("Pod", meta["namespace"], meta["name"], grace_period_seconds=0)
        return Result()

    def _status(self, pod: Obj, *, ready: bool, crashing: bool, started: float) -> Obj:
        """The status the kubelet reports (condition times: when each last flipped)."""
        old = {c.get("type"): c for c in (pod.get("status") or {}).get("conditions") or ()}
        now = format_timestamp(self.clock.wall())

        def cond(type_: str, value: bool, reason: str = "") -> Obj:
            status = "True" if value else "False"
            previous = old.get(type_) or {}
            since = previous.get("lastTransitionTime") if previous.get("status") == status else now
            c: Obj = {"type": type_, "status": status, "lastTransitionTime": since or now}
            if reason and not value:
                c["reason"] = reason
            return c

        container = pod["spec"]["containers"][0]
        conditions = [
            cond("PodReadyToStartContainers", True),
            cond("Initialized", True),
            cond("Ready", ready, "ContainersNotReady"),
            cond("ContainersReady", ready, "ContainersNotReady"),
            old.get("PodScheduled") or cond("PodScheduled", True),
        ]
        state: Obj
        if crashing:
            state = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}}
        else:
            state = {"running": {"startedAt": format_timestamp(self.clock.epoch + datetime.timedelta(seconds=started))}}
        status: Obj = {
            "phase": "Running",
            "conditions": conditions,
            "startTime": (pod.get("status") or {}).get("startTime") or now,
            "containerStatuses": [
                {
                    "name": container["name"],
                    "image": container.get("image", ""),
                    "ready": ready,
                    "started": not crashing,
                    "restartCount": 5 if crashing else 0,
                    "state": state,
                    **({"lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}} if crashing else {}),
                }
            ],
        }
        return status


def _differs(old: Obj, new: Obj) -> bool:
    return any(old.get(k) != v for k, v in new.items())
